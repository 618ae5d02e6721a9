"""``costmodel memory`` and the memory sweep take the step's ``--param-dtype``, ``--grad-dtype``
and ``--bucket``, so "memory is the step's" holds off the defaults too.

A new user's walk: Llama-3.1-8B on 16 H100s (dgx-h100, 2 nodes), ``step`` with
``--grad-dtype fp32`` under ddp said 189 GB per GPU while ``memory`` (which had no such option)
said 173 GB; ``--bucket 100MiB`` under zero1, ``--param-dtype fp8`` and fp32 under fsdp gave
other pairs that disagreed. Each test compares the memory road with the step's own answer for
the same options (no number is written down here), and failed before ``memory`` and the memory
sweep took the options.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import costmodel as cm
from costmodel.strategy.layout import Layout
from costmodel.strategy.memory import stage_memory
from tests._cli import one_line_error, run

ARCH, PRESET, NODES, RANKS = "llama-3.1-8b", "dgx-h100", 2, 16
WHERE = ("--arch", ARCH, "--nodes", str(NODES), "--cluster", PRESET)

# (strategy, CLI options, the same as Layout fields / memory sweep axes)
ROWS = [
    ("ddp", ("--grad-dtype", "fp32"), {"grad_dtype": "fp32"}),
    ("zero1", ("--bucket", "100MiB"), {"bucket_cap_bytes": 100 * 2**20}),
    ("fsdp", ("--param-dtype", "fp8"), {"param_dtype": "fp8"}),
    ("fsdp", ("--param-dtype", "fp32"), {"param_dtype": "fp32"}),
    ("fsdp", ("--grad-dtype", "fp32"), {"grad_dtype": "fp32"}),
    ("fsdp", ("--param-dtype", "fp32", "--grad-dtype", "fp32"), {"param_dtype": "fp32",
                                                                 "grad_dtype": "fp32"}),
]  # fmt: skip
IDS = [f"{st}{''.join(opts)}" for st, opts, _ in ROWS]


def _json(*args: str) -> dict:
    r = run(*args, "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def _step_memory(strategy: str, opts: tuple[str, ...]) -> float:
    return float(_json("step", *WHERE, "--strategy", strategy, *opts)["memory_bytes"])


@pytest.mark.parametrize(("strategy", "opts", "fields"), ROWS, ids=IDS)
def test_memory_cli_and_api_are_the_steps_memory_off_the_defaults(
    strategy: str, opts: tuple[str, ...], fields: dict
) -> None:
    step = _step_memory(strategy, opts)
    default = _step_memory(strategy, ())
    assert step != default  # each option changes what the step sizes: a real test
    mem = _json("memory", *WHERE, "--strategy", strategy, *opts)
    assert mem["memory_bytes"] == step
    # the layout fields given are in the answer, as step --json's layout has them
    for key, value in fields.items():
        assert mem[key] == value
    # the API road the README shows for memory, and stage_memory (the CLI's function)
    lay = Layout(strategy=strategy, ranks=RANKS, **fields)
    assert cm.strategy_memory(lay, arch=ARCH).total_bytes == step
    zero = {"ddp": 0, "zero1": 1, "zero2": 2, "fsdp": 3}[strategy]
    assert stage_memory(zero, RANKS, strategy=strategy, arch=ARCH, **fields).total_bytes == step


@pytest.mark.parametrize(("strategy", "opts", "fields"), ROWS[:3], ids=IDS[:3])
def test_memory_sweep_takes_the_same_axes_and_gives_the_same_number(
    strategy: str, opts: tuple[str, ...], fields: dict, tmp_path: Path
) -> None:
    step = _step_memory(strategy, opts)
    axes = {("bucket_cap" if k == "bucket_cap_bytes" else k): v for k, v in fields.items()}
    df = cm.sweep(kind="memory", arch=ARCH, strategy=strategy, preset=PRESET, nodes=NODES, **axes)
    assert float(df["memory_GB"].iloc[0]) * 1e9 == pytest.approx(step, rel=1e-12)
    # the step sweep's column names for them
    for key, value in fields.items():
        assert df[key].iloc[0] == value
    # the CLI sweep, with the step sweep's axis names
    sets = [f"arch={ARCH}", f"strategy={strategy}", f"preset={PRESET}", f"nodes={NODES}",
            *(f"{k}={'104857600B' if k == 'bucket_cap' else v}" for k, v in axes.items())]  # fmt: skip
    out = tmp_path / "m.csv"
    r = run("sweep", "--kind", "memory", *(x for s in sets for x in ("--set", s)), "-o", str(out))
    assert r.exit_code == 0, r.stdout + r.stderr
    assert float(pd.read_csv(out)["memory_GB"].iloc[0]) * 1e9 == pytest.approx(step, rel=1e-9)


def test_a_bare_count_sweep_sizes_the_same_buffers_as_stage_memory() -> None:
    df = cm.sweep(kind="memory", params=7e9, strategy="ddp", ranks=16, grad_dtype="fp32")
    want = stage_memory(0, 16, 7e9, grad_dtype="fp32").total_bytes
    assert float(df["memory_GB"].iloc[0]) * 1e9 == pytest.approx(want, rel=1e-12)
    assert want != stage_memory(0, 16, 7e9).total_bytes


def test_memory_strategy_all_takes_them_row_by_row() -> None:
    out = _json("memory", *WHERE, "--strategy", "all", "--grad-dtype", "fp32")
    rows = {r["layout"]: r["memory_GB"] for r in out["layouts"]}
    assert rows["ddp"] * 1e9 == pytest.approx(_step_memory("ddp", ("--grad-dtype", "fp32")))
    assert rows["fsdp"] * 1e9 == pytest.approx(_step_memory("fsdp", ("--grad-dtype", "fp32")))


def test_fit_suggestions_of_memory_are_priced_with_the_same_dtypes() -> None:
    # Llama-3.1-70B under ddp does not fit: the fit suggestions' base is the step's memory
    # with the same --grad-dtype (each change priced by the step with it)
    args = ("--arch", "llama-3.1-70b", "--nodes", "8", "--cluster", PRESET, "--strategy", "ddp")
    mem = _json("memory", *args, "--grad-dtype", "fp32")
    step = _json("step", *args, "--grad-dtype", "fp32")
    assert mem["fits"] is False
    assert mem["memory_bytes"] == step["memory_bytes"]
    plain = _json("memory", *args)
    assert mem["fit_suggestions"] != plain["fit_suggestions"]


def test_bad_values_are_refused_in_the_steps_words() -> None:
    for opts in (("--param-dtype", "fp64"), ("--grad-dtype", "fp8"), ("--bucket", "0B")):
        r = run("memory", *WHERE, "--strategy", "zero1", *opts)
        assert r.exit_code == 2
        line = one_line_error(r)
        assert opts[0] in line or opts[0].lstrip("-").replace("-", "_") in line
        assert "Traceback" not in r.stdout + r.stderr
    # fp8 all-gathers need fp8 tensor cores, as the step says on the same cluster
    r = run("memory", "--arch", ARCH, "--cluster", "dgx-a100", "--strategy", "fsdp",
            "--param-dtype", "fp8")  # fmt: skip
    assert r.exit_code == 2
    assert "fp8" in one_line_error(r)


def test_a_bucket_on_fsdp_is_said_not_applied_as_the_step_says_it() -> None:
    r = run("memory", *WHERE, "--strategy", "fsdp", "--bucket", "100MiB")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "--bucket: not applied to fsdp" in r.stderr


def test_a_larger_card_is_also_tried_with_the_same_cards_sharding_changes() -> None:
    # Llama-3.1-70B under fsdp without resharding on 64 H100s: resharding alone does not fit
    # the H100 (it needs recompute too), but fits a larger card; that card with resharding
    # must be offered and ranked by its cost beside the same card with recompute full
    from costmodel.strategy import strategy_step
    from costmodel.strategy.advisor import fit_suggestions

    kw = dict(arch="llama-3.1-70b", cluster=PRESET, nodes=8, strategy="fsdp")
    fa = fit_suggestions(**kw, reshard_after_forward=False)
    ok = [c for c in fa.changes if c.fits]
    cards = [c for c in ok if c.kind == "larger_card"]
    assert [c.gpu_seconds_per_token for c in cards] == sorted(
        c.gpu_seconds_per_token for c in cards
    )
    full = [c for c in cards if c.updates.get("recompute") == "full"]
    assert full  # the walk's "dgx-b200 and recompute full"
    for c in full:
        name = c.change.split(" and ")[0]
        resharded = [
            d
            for d in cards
            if d.change.split(" and ")[0] == name and d.updates.get("reshard_after_forward")
        ]
        assert len(resharded) == 1, (name, [d.change for d in cards])
        d = resharded[0]
        # the step on that card with resharding, priced alone: the same memory and time
        card = d.updates["cluster"]
        alone = strategy_step(arch="llama-3.1-70b", cluster=card, strategy="fsdp",
                              nodes=d.updates["nodes"], timeline=False)  # fmt: skip
        assert d.step.memory_bytes == alone.memory_bytes
        assert d.step.step_time_s == alone.step_time_s
        # cheaper than recompute full on the same card (no forward recomputed), so first
        assert d.gpu_seconds_per_token < c.gpu_seconds_per_token
        assert cards.index(d) < cards.index(c)
    # a change that fits the same card alone is not repeated on a larger one
    fa2 = fit_suggestions(arch="llama-3.1-8b", cluster=PRESET, nodes=1, strategy="ddp")
    same = {c.change for c in fa2.changes if c.fits and c.kind == "strategy"}
    assert same
    for c in fa2.changes:
        if c.kind == "larger_card":
            assert not any(c.change.endswith(f" and {w}") for w in same), c.change


def test_a_param_dtype_ddp_does_not_gather_in_is_said_as_the_step_says_it() -> None:
    opts = ("--strategy", "ddp", "--param-dtype", "fp8")
    step = [n for n in _json("step", *WHERE, *opts)["notes"] if n.startswith("param_dtype")]
    mem = [n for n in _json("memory", *WHERE, *opts)["notes"] if n.startswith("param_dtype")]
    assert step and mem == step
    # and nothing where it is the default
    plain = _json("memory", *WHERE, "--strategy", "ddp")["notes"]
    assert not [n for n in plain if n.startswith("param_dtype")]
