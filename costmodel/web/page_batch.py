"""Batch: local batch x ranks x accumulation = global batch; solve for any one, scale the LR."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from costmodel import batch
from costmodel.units import format_count
from costmodel.web.common import QP, headline, page_header, section, table

FIELDS = {
    "local_batch": ("Local batch per GPU [samples]", 4),
    "ranks": ("Data-parallel ranks N [GPUs]", 64),
    "accumulation": ("Accumulation steps A [-]", 32),
    "global_batch": ("Global batch [samples]", 8192),
}


def _inputs() -> dict:
    unknown = st.radio(
        "Solve for",
        tuple(FIELDS),
        index=2,
        format_func=lambda f: FIELDS[f][0].split(" [")[0],
        horizontal=True,
        key="solve",
        bind=QP,
    )
    cols = st.columns(3)
    known = {}
    for col, name in zip(cols, [f for f in FIELDS if f != unknown], strict=True):
        label, default = FIELDS[name]
        known[name] = col.number_input(label, value=default, step=1, key=f"batch_{name}", bind=QP)
    seq = st.number_input(
        "Sequence length [tokens per sample]", value=2048, step=1, key="seq_len", bind=QP
    )
    st.subheader("Learning-rate scaling")
    c = st.columns(4)
    base_lr = c[0].number_input(
        "Base learning rate [-]", value=0.1, format="%.6g", key="base_lr", bind=QP
    )
    base_batch = c[1].number_input(
        "Batch it was tuned at [samples]", value=256, step=1, key="base_batch", bind=QP
    )
    rule = c[2].radio(
        "Rule",
        tuple(batch.LR_RULES),
        horizontal=True,
        key="rule",
        bind=QP,
        help="linear: Goyal et al. 2017; sqrt: Krizhevsky 2014, Hoffer et al. 2017",
    )
    warmup = c[3].number_input("Warmup steps [-]", value=500, step=1, key="warmup", bind=QP)
    return {
        "unknown": unknown,
        "known": known,
        "seq": seq,
        "base_lr": base_lr,
        "base_batch": base_batch,
        "rule": rule,
        "warmup": warmup,
    }


def render() -> None:
    """Draw the Batch page."""
    page_header(
        "Batch",
        "Global batch = local batch x ranks x accumulation steps: give three, get the fourth; "
        "then scale the learning rate to the new global batch.",
    )
    inp = _inputs()
    solution = None
    with section(FIELDS[inp["unknown"]][0]):
        solution = batch.solve_batch(**inp["known"])
    if solution is None:
        return
    m = headline(5)
    for col, name in zip(m, FIELDS, strict=False):
        col.metric(
            FIELDS[name][0] + (" (solved)" if name == inp["unknown"] else ""),
            f"{getattr(solution, name):,}",
        )
    with section("Sequence length"):
        tokens = solution.tokens_per_step(inp["seq"])
        m[4].metric("Tokens per step", f"{format_count(tokens)} tokens")
    with section("Learning rate"):
        scaled = batch.scale_learning_rate(
            inp["base_lr"], inp["base_batch"], solution.global_batch, rule=inp["rule"]
        )
        steps = [0, inp["warmup"] // 4, inp["warmup"] // 2, inp["warmup"]]
        schedule = batch.warmup_learning_rate(steps, scaled, inp["warmup"], start_lr=inp["base_lr"])
        st.metric(
            f"Learning rate at global batch {solution.global_batch:,} ({inp['rule']} rule)",
            f"{scaled:.4g}",
        )
        rules = pd.DataFrame(
            {
                "rule": list(batch.LR_RULES),
                "global batch [samples]": solution.global_batch,
                "learning rate [-]": [
                    batch.scale_learning_rate(
                        inp["base_lr"], inp["base_batch"], solution.global_batch, rule=r
                    )
                    for r in batch.LR_RULES
                ],
            }
        )
        table(rules, "learning_rate.csv", key="lr", caption="Learning rate under each rule")
        table(
            pd.DataFrame({"step [-]": steps, "learning rate [-]": schedule}),
            "warmup.csv",
            key="warmup",
            caption="Linear warmup from the base rate (Goyal et al. 2017, section 2.2)",
        )
    split = pd.DataFrame([solution.as_dict()]).rename(
        columns={name: label for name, (label, _) in FIELDS.items()}
    )
    table(split, "batch_split.csv", key="split", caption="The split")


if __name__ == "__main__":
    render()
