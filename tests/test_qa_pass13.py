"""QA walk of the CLI (pass 13): enumerated choices in any case on every surface, readable
wall-clock durations, ``step --global-tokens``, what --precision means beside a measured compute
time, and the buffer-memory note on the sweep's rows. Each defect pinned with the surface typed."""

from __future__ import annotations

import json

import pytest

import costmodel as cm

from ._cli import run

# --- one rule for enumerated choices: any case in, the canonical lower-case name out ------------
# (command, option, typed, the --json field that echoes it or None, its canonical value)
CHOICE_TABLE = [
    ("step", "--precision", "FP8", "precision", "fp8"),
    ("step", "--recompute", "FULL", None, "full"),
    ("step", "--strategy", "FSDP", "strategy", "fsdp"),
    ("step", "--recipe", "MIXED-ADAM", None, "mixed-adam"),
    ("step", "--model", "NCCL", None, "nccl"),
    ("step", "--param-dtype", "BF16", None, "bf16"),
    ("step", "--grad-dtype", "FP32", None, "fp32"),
    ("step", "--loss", "Fused", None, "fused"),
    ("memory", "--recipe", "Mixed-Adam", None, "mixed-adam"),
    ("scenario", "--recompute", "Selective", None, "selective"),
    ("train", "--precision", "Fp8", None, "fp8"),
]


@pytest.mark.parametrize(("command", "option", "typed", "field", "canonical"), CHOICE_TABLE)
def test_every_enumerated_option_reads_any_case_as_its_lower_case_name(
    command, option, typed, field, canonical
):
    """``--algorithm RING`` and ``--strategy FSDP`` were taken while ``--precision FP8`` and
    ``--recompute FULL`` were refused: one rule now, the same answer as the lower-case name."""
    base = {
        "step": ["step", "--params", "7B"],
        "memory": ["memory", "--params", "7B"],
        "scenario": ["scenario", "--params", "7B"],
        "train": ["train", "--params", "7B", "--tokens", "1B"],
    }[command]
    if option == "--loss":  # sizes activations: refused beside a bare count (as memory refuses)
        base = [base[0], "--arch", "llama-2-7b", *base[3:]]
    upper = run(*base, option, typed, "--json")
    lower = run(*base, option, canonical, "--json")
    assert upper.exit_code == 0, upper.stderr
    assert lower.exit_code == 0, lower.stderr
    assert json.loads(upper.stdout) == json.loads(lower.stdout)
    if field is not None:
        assert json.loads(upper.stdout)[field] == canonical


def test_the_api_reads_choices_in_any_case_and_keeps_the_canonical_name():
    s = cm.Scenario(params=7e9, precision="FP8", recompute="Full", strategy="FSDP",
                    model="NCCL", loss="FUSED", param_dtype="BF16", recipe="Mixed-Adam")  # fmt: skip
    assert (s.precision, s.recompute, s.strategy, s.model, s.loss, s.param_dtype, s.recipe) == (
        "fp8",
        "full",
        "fsdp",
        "nccl",
        "fused",
        "bf16",
        "mixed-adam",
    )
    p = cm.predict_collective("all_reduce", 1e9, "dgx-h100", model="NCCL", algorithm="RING")
    q = cm.predict_collective("all_reduce", 1e9, "dgx-h100", model="nccl", algorithm="ring")
    assert p.algorithm == q.algorithm == "ring" and float(p.time_s) == float(q.time_s)
    a = cm.strategy_step(7e9, cluster="dgx-h100", strategy="FSDP", precision="FP8")
    b = cm.strategy_step(7e9, cluster="dgx-h100", strategy="fsdp", precision="fp8")
    assert a.step_time_s == b.step_time_s


def test_sweep_axes_and_grid_files_read_choices_in_any_case(tmp_path):
    df = cm.sweep(kind="step", preset="dgx-h100", params=7e9, precision="FP8,fp8",
                  recompute="FULL", strategy="FSDP")  # fmt: skip
    assert df[["precision", "recompute", "strategy"]].drop_duplicates().values.tolist() == [
        ["fp8", "full", "fsdp"]
    ]
    grid = tmp_path / "g.toml"
    grid.write_text('kind = "step"\n[grid]\npreset = "dgx-h100"\nparams = 7e9\nloss = "FUSED"\n')
    out = tmp_path / "rows.csv"
    r = run("sweep", str(grid), "-o", str(out), "--no-progress")
    assert r.exit_code == 0, r.stderr
    assert set(cm.sweep.read_table(out)["loss"]) == {"fused"}


# --- a wall clock in a unit people read ----------------------------------------------------------
@pytest.mark.parametrize(
    ("tokens", "unit"), [("1000", "ms"), ("2B", "h"), ("2T", "days")]
)  # fmt: skip
def test_train_shows_the_wall_clock_in_a_unit_chosen_by_its_size(tokens, unit):
    """``train --tokens 1000`` printed "wall clock 0.00000597 days"; the text now picks ms, s,
    min, h or days, the band in the same unit, and ``--json`` keeps ``wall_days`` numeric."""
    base = ("train", "--params", "7B", "--nodes", "8", "--tokens", tokens)
    r = run(*base)
    assert r.exit_code == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("wall clock"))
    days = json.loads(run(*base, "--json").stdout)["wall_days"]
    assert isinstance(days, float)
    value = float(line.split()[2])
    per = {"ms": 1e-3, "h": 3600.0, "days": 86400.0}[unit]
    assert line.split()[3] == unit, line
    assert value * per == pytest.approx(days * 86400, rel=0.01)
    lo, hi = (float(x) for x in line.split("(band ")[1].rstrip(")").split("-"))
    assert lo < value < hi


# --- step --global-tokens, split as train and scenario split it ---------------------------------
def test_step_takes_global_tokens_split_as_train_splits_it_and_shows_the_global_batch():
    """``train`` and ``scenario`` took ``--global-tokens``; ``step`` said "No such option"."""
    base = ("--params", "7B", "--nodes", "8", "--strategy", "fsdp", "--seq", "4096")
    step = json.loads(run("step", *base, "--global-tokens", "4Mi", "--json").stdout)
    assert (step["micro_batch"], step["accumulation"], step["tokens_per_step"]) == (1, 16, 4 << 20)
    train = json.loads(run("train", *base, "--tokens", "1T", "--global-tokens", "4Mi",
                           "--json").stdout)  # fmt: skip
    assert train["step_time_s"] == pytest.approx(step["step_time_s"])
    text = run("step", *base, "--global-tokens", "4Mi", "--micro-batch", "2").stdout
    line = next(x for x in text.splitlines() if x.startswith("global batch"))
    assert "4.19 M tokens per step" in line and "micro-batch 2 x accumulation 8 x 64 GPUs" in line


@pytest.mark.parametrize(
    "extra",
    [("--global-tokens", "3M"),
     ("--global-tokens", "4Mi", "--micro-batch", "2", "--accumulation", "3")],
)  # fmt: skip
def test_step_refuses_a_global_batch_as_train_refuses_it(extra):
    base = ("--params", "7B", "--nodes", "8")
    s = run("step", *base, *extra)
    t = run("train", *base, "--tokens", "1T", *extra)
    assert s.exit_code == t.exit_code == 2
    assert s.stderr.strip().splitlines()[-1] == t.stderr.strip().splitlines()[-1]


def test_the_one_link_step_refuses_global_tokens_naming_the_option():
    r = run("step", "--params", "7B", "--ranks", "8", "--bandwidth", "50GB/s",
            "--compute-time", "1s", "--global-tokens", "4Mi")  # fmt: skip
    assert r.exit_code == 2 and r.stderr.startswith("costmodel: error: --global-tokens:")


# --- --precision beside a measured compute time ---------------------------------------------------
def test_precision_beside_a_measured_compute_time_says_it_only_bounds_it():
    """``--precision fp8 --compute-time 400ms`` showed "compute precision fp8" as if it sped the
    step up; the measured time decides the compute (the same seconds at bf16), and fp8 only sets
    the peak it may not beat: the compute source says so, on the CLI and the API alike."""
    said = "measured compute time (precision fp8 only bounds it by the fp8 peak)"
    base = ("step", "--params", "7B", "--compute-time", "400ms", "--json")
    fp8 = json.loads(run(*base, "--precision", "fp8").stdout)
    bf16 = json.loads(run(*base, "--precision", "bf16").stdout)
    assert fp8["compute_s"] == bf16["compute_s"]
    assert fp8["compute_label"] == said and bf16["compute_label"] == "measured compute time"
    text = run("train", "--params", "7B", "--tokens", "1T", "--compute-time", "400ms",
               "--precision", "fp8").stdout  # fmt: skip
    assert f"compute source         {said}" in text
    s = cm.Scenario(params=7e9, compute_time_s=0.4, precision="fp8").evaluate()
    assert s.compute_label == said


# --- the buffer-memory note on the sweep's rows and the Cluster page ------------------------------
def test_sweep_rows_carry_the_buffer_memory_note_collective_prints():
    """``collective --cluster`` and ``predict`` said when a per-rank buffer is larger than the
    GPU's memory; the sweep priced the same 200 GB buffer silently."""
    from costmodel.predict import buffer_memory_note

    df = cm.sweep(preset="dgx-h100,dgx-a100", size="1GB,200GB")
    for preset, size, note in df[["preset", "size_bytes", "memory_note"]].values.tolist():
        assert note == buffer_memory_note([size], preset)
    assert (df["memory_note"] != "").tolist() == [False, True, False, True]
    r = run("collective", "all_reduce", "--size", "200GB", "--cluster", "dgx-h100", "--json")
    assert json.loads(r.stdout)["memory_note"] == df["memory_note"].iloc[1]
    s = run("sweep", "--set", "preset=dgx-h100", "--set", "size=1GB,200GB", "--no-progress")
    assert s.exit_code == 0, s.stderr
    assert "1 of 2 rows has a per-rank buffer larger than its GPU's memory" in s.stderr
    quiet = run("sweep", "--set", "preset=dgx-h100", "--set", "size=1GB", "--no-progress")
    assert "per-rank buffer" not in quiet.stderr


def test_cluster_page_shows_the_buffer_memory_note():
    from costmodel.predict import buffer_memory_note
    from tests.test_app import assert_clean, open_page

    at = open_page("page_cluster.py", {"cl_nodes": "2", "cl_size_text": "200GB"})
    assert_clean(at)
    note = buffer_memory_note([200e9], "dgx-h100", 2)
    assert note and [w.value for w in at.warning if note in w.value]
    at = open_page("page_cluster.py", {"cl_nodes": "2", "cl_size_text": "1GB"})
    assert not [w.value for w in at.warning if "GPU memory" in w.value]
