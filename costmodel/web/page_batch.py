"""Batch: local batch x ranks x accumulation = global batch (in samples or tokens); solve for
any one, scale the LR (square root for Adam/AdamW, linear for SGD on ResNet)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from costmodel import batch
from costmodel.memory import DEFAULT_SEQUENCE_LENGTH
from costmodel.units import format_count, format_token_count
from costmodel.web.common import (
    bound_choice,
    bound_number,
    check_boxes,
    headline,
    headline_text,
    hidden_choice,
    page_header,
    section,
    table,
)

#: Each field's label (`costmodel batch`'s words, batch.FIELD_LABELS, capitalised) and default
FIELDS = {
    name: (batch.FIELD_LABELS[name][:1].upper() + batch.FIELD_LABELS[name][1:], default)
    for name, default in {
        "local_batch": 4,
        "ranks": 64,
        "accumulation": 32,
        "global_batch": 8192,
    }.items()
}

#: How the page gets each field when it is the one solved for: global = local x N x A, as an
#: equation of the other three, in the metric's label (a bare "(solved)" said nothing of how);
#: `costmodel batch` says the same beside the value it solved.
SOLVED_AS = batch.SOLVED_AS

UNITS = ("samples", "tokens")


#: The batch split's boxes by the library's argument names: a refusal names the box typed in,
#: not the argument ("local_batch: ...").
BATCH_BOXES = {name: label for name, (label, _) in FIELDS.items()} | {
    "global_tokens": "Global batch [tokens per step]",
    "sequence_length": "Sequence length [tokens per sample]",
}


def _name(field: str) -> str:
    """A field's name in a sentence, without its unit: ``"accumulation steps A"``."""
    label = FIELDS[field][0].split(" [")[0]
    return label[0].lower() + label[1:]


def _with_unit(field: str, value: int) -> str:
    """``"64 GPUs"``, ``"8,192 samples"``, ``"32"`` (a count of steps has no unit)."""
    unit = FIELDS[field][0].partition(" [")[2].rstrip("]")
    return f"{value:,}" if unit in ("", "-") else f"{value:,} {unit}"


def _inputs() -> dict:
    c = st.columns(2)
    unknown = bound_choice(
        c[0],
        "radio",
        "Solve for",
        tuple(FIELDS),
        index=2,
        format_func=lambda f: FIELDS[f][0].split(" [")[0],
        horizontal=True,
        key="solve",
    )
    unit = bound_choice(
        c[1],
        "radio",
        "Global batch in",
        UNITS,
        horizontal=True,
        key="batch_unit",
        help="LLM runs plan in tokens per step (e.g. 4M tokens at sequence length 4096): the "
        "global batch in samples is tokens / sequence length",
    )
    # 4096, as every other surface's default (`--seq`, the step and Memory pages)
    seq = bound_number(
        st,
        "Sequence length [tokens per sample]",
        value=DEFAULT_SEQUENCE_LENGTH,
        step=1,
        key="seq_len",
        tokens=True,
    )
    cols = st.columns(3)
    known = {}
    for col, name in zip(cols, [f for f in FIELDS if f != unknown], strict=True):
        label, default = FIELDS[name]
        if name == "global_batch" and unit == "tokens":
            known["global_tokens"] = bound_number(
                col,
                "Global batch [tokens per step]",
                value=4 * 2**20,
                step=2**20,
                key="batch_global_tokens",
                tokens=True,
                help="e.g. 4194304 = 4 x 2^20 tokens; must be a whole number of sequences",
            )
            continue
        known[name] = bound_number(col, label, value=default, step=1, key=f"batch_{name}")
    # solved here, under its boxes: solved after the learning-rate boxes, a refused split's red
    # line stood under "Learning-rate scaling" and its boxes, as if theirs, on a 390 px phone
    # about 700 px below the box it names (chromium, 2026-12-05)
    solution = None
    with section("Batch", BATCH_BOXES):
        try:
            solution = batch.solve_batch(**known, sequence_length=seq)
        except batch.BatchSplitError as exc:  # the ways out in the boxes' words, as the CLI's
            raise ValueError(batch.split_refusal(exc, BATCH_BOXES)) from None
    st.subheader("Learning-rate scaling")
    llm = unit == "tokens"  # tokens first: the LLM defaults (AdamW, 3e-4 tuned at 1 Mi tokens)
    rule = bound_choice(
        st,
        "radio",
        "Optimizer and rule",
        tuple(batch.LR_RULES),
        index=tuple(batch.LR_RULES).index(batch.LR_RULE_DEFAULT[unit]),
        format_func=lambda r: batch.LR_RULE_INFO[r][0],
        horizontal=True,
        key="rule_tokens" if llm else "rule",
        help="; ".join(
            f"{batch.LR_RULE_INFO[r][0]}: {batch.LR_RULE_INFO[r][1]}" for r in batch.LR_RULES
        ),
    )
    hidden_choice("rule" if llm else "rule_tokens")  # the rule of the other unit: not drawn
    c4 = st.columns(4)
    base_lr = bound_number(
        c4[0],
        "Base learning rate [-]",
        value=3e-4 if llm else 0.1,
        format="%.6g",
        key="base_lr_tokens" if llm else "base_lr",
    )
    if llm:
        base_batch = bound_number(
            c4[1],
            "Batch it was tuned at [tokens]",
            value=2**20,
            step=2**18,
            key="base_tokens",
            tokens=True,
        )
    else:
        base_batch = bound_number(
            c4[1], "Batch it was tuned at [samples]", value=256, step=1, key="base_batch"
        )
    critical = bound_number(
        c4[2],
        f"Critical batch size [{unit}] (0: none)",
        value=0,
        step=1,
        key=f"critical_{unit}",
        tokens=llm,
        help="The learning rate is not scaled past it: " + batch.CRITICAL_BATCH_CITATION,
    )
    warmup = bound_number(c4[3], "Warmup steps [-]", value=500, step=1, key="warmup")
    return {
        "unknown": unknown,
        "unit": unit,
        "known": known,
        "solution": solution,
        "seq": seq,
        "base_lr": base_lr,
        "base_batch": base_batch,
        "critical": critical or None,
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
    unit = inp["unit"]
    solution = inp["solution"]
    if solution is None:
        return
    unknown = inp["unknown"]
    # one header style on the page: a sentence, as "Learning-rate scaling" below (the box's
    # label with its "[-]" and a "(solved)" read as neither)
    headline_text(f"Solved for {_name(unknown)}", _with_unit(unknown, getattr(solution, unknown)))
    in_tokens = inp["unit"] == "tokens"
    m = headline(5)
    for col, name in zip(m, FIELDS, strict=False):
        derived = ""
        if name == unknown:
            derived = f" = {SOLVED_AS[name]}"
        elif name == "global_batch" and in_tokens:  # typed in tokens, shown in samples
            derived = " = tokens / sequence length"
        col.metric(FIELDS[name][0] + derived, f"{getattr(solution, name):,}")
    tokens = int(solution.tokens_per_step(inp["seq"]))
    m[4].metric(
        "Global batch [tokens per step]"
        + ("" if in_tokens and unknown != "global_batch" else " = samples x sequence length"),
        f"{format_token_count(tokens)} tokens",
        help=f"{tokens:,} = {solution.global_batch:,} samples x {solution.sequence_length:,}",
    )
    new = tokens if inp["unit"] == "tokens" else solution.global_batch
    lr_boxes = {
        "base_lr": "Base learning rate [-]",
        "base_batch": f"Batch it was tuned at [{unit}]",
        "critical_batch": f"Critical batch size [{unit}] (0: none)",
        "warmup_steps": "Warmup steps [-]",
    }
    with section("Learning rate", lr_boxes):
        # the CLI's ranges: --base-lr (0, 100], --base-batch 1..1e12 samples, --base-tokens
        # 1..1e16 tokens (costmodel._limits.LIMITS), in the same words
        base_key = "base_tokens" if in_tokens else "base_batch"
        check_boxes(
            {"base_lr": inp["base_lr"], base_key: inp["base_batch"], "warmup_steps": inp["warmup"]},
            lr_boxes | {"base_tokens": lr_boxes["base_batch"]},
        )
        crit = inp["critical"]
        if crit is not None:  # 0 is the box's "none"; else --critical-batch's range, its words
            from costmodel._limits import LIMITS

            try:
                LIMITS["critical_batch"].check("critical_batch", crit)
            except ValueError:
                rule = LIMITS["critical_batch"].rule
                raise ValueError(
                    f"critical_batch: must be 0 (none) or {rule}, got {crit:g}"
                ) from None
        scaled = batch.scale_learning_rate(
            inp["base_lr"], inp["base_batch"], new, rule=inp["rule"], critical_batch=inp["critical"]
        )
        # the warmup at its quarters, each step once: warmup 0 (none) listed step 0 four times,
        # warmup 1 step 0 three times, and the quarters left 3/4 out
        w = inp["warmup"]
        steps = sorted({0, w // 4, w // 2, 3 * w // 4, w})
        schedule = batch.warmup_learning_rate(steps, scaled, inp["warmup"], start_lr=inp["base_lr"])
        st.metric(
            f"Learning rate at global batch {new:,} {inp['unit']} ({inp['rule']} rule)",
            f"{scaled:.4g}",
        )
        who, cite = batch.LR_RULE_INFO[inp["rule"]]
        st.caption(f"{who}: {cite}.")
        if inp["critical"] and new > max(inp["critical"], inp["base_batch"]):
            st.caption(
                f"Capped at the critical batch size {format_count(inp['critical'])} "
                f"{inp['unit']}: {batch.CRITICAL_BATCH_CITATION}."
            )
        rules = pd.DataFrame(
            {
                "rule": [batch.LR_RULE_INFO[r][0] for r in batch.LR_RULES],
                f"global batch [{inp['unit']}]": new,
                "learning rate [-]": [
                    batch.scale_learning_rate(
                        inp["base_lr"],
                        inp["base_batch"],
                        new,
                        rule=r,
                        critical_batch=inp["critical"],
                    )
                    for r in batch.LR_RULES
                ],
                "source": [batch.LR_RULE_INFO[r][1] for r in batch.LR_RULES],
            }
        )
        # cards on a phone: the long "source" took one word per line in a 4-column table;
        # the batch with separators ("4,194,304", as the metric above), the CSV's raw
        table(
            rules,
            "learning_rate.csv",
            key="lr",
            caption="Learning rate under each rule",
            on_demand=True,
            cards=True,
            shown=rules.assign(**{f"global batch [{inp['unit']}]": f"{new:,}"}),
        )
        table(
            pd.DataFrame({"step [-]": steps, "learning rate [-]": schedule}),
            "warmup.csv",
            key="warmup",
            caption="Linear warmup from the base rate (Goyal et al. 2017, section 2.2)",
        )
    # every column in the page's words with its unit, as the boxes above ("sequence_length"
    # and "global_tokens", the library's keys, were two bare numbers beside labelled ones)
    split = (
        pd.DataFrame([solution.as_dict()])
        .assign(solved=lambda f: f["solved"].map(_name))
        .rename(
            columns={name: label for name, (label, _) in FIELDS.items()}
            | {
                "solved": "Solved for",
                "sequence_length": "Sequence length [tokens per sample]",
                "global_tokens": "Global batch [tokens per step]",
            }
        )
    )
    # as text, cards on a phone (the one-row grid scrolled sideways: 987 px in 356), each count
    # with separators as the metrics above; the grid and its CSV (bare numbers) in the expander
    counts = [c for c in split.columns if pd.api.types.is_integer_dtype(split[c])]
    table(
        split,
        "batch_split.csv",
        key="split",
        caption="The split",
        on_demand=True,
        cards=True,
        shown=split.assign(**{c: split[c].map("{:,}".format) for c in counts}),
    )


if __name__ == "__main__":
    render()
