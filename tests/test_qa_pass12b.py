"""A new user's walk through the README (pass 12b): the questions an engineer asks first (a 14 GB
all-reduce on 64 H100s, Llama-3.1-70B under ZeRO-3/FSDP/HSDP, days and dollars on 15T tokens,
a sweep read back), each defect found pinned here with the surface the user typed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import costmodel as cm
from costmodel import batch

from ._cli import one_line_error, run
from ._paths import ROOT

ARCH = "llama-3.1-70b"


# --- cm.sweep.read_table, as the README writes it, in a fresh interpreter ----------------------
def test_read_table_as_the_readme_spells_it_works_in_a_fresh_interpreter(tmp_path):
    """README: "read a file back with ``costmodel.sweep.read_table(path)``". ``cm.sweep`` used to
    resolve to the bare function on a fresh ``import costmodel``, so the README's call failed
    with AttributeError unless something had imported the submodule first."""
    out = tmp_path / "grid.parquet"
    r = run("sweep", "--set", "preset=dgx-h100", "--set", "nodes=1,8", "--set",
            "size=1MiB,1GiB", "-o", str(out), "--no-progress")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    code = (
        "import costmodel as cm\n"
        f"back = cm.sweep.read_table({str(out)!r})\n"
        "assert back.time_s.tolist() == cm.sweep(preset='dgx-h100', nodes='1,8', "
        "size='1MiB,1GiB').time_s.tolist()\n"
        "print(len(back))\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "4"


def test_cm_sweep_is_one_object_whichever_import_came_first():
    import inspect

    import costmodel.sweep as mod

    assert cm.sweep is mod and callable(cm.sweep)
    # help() and inspect show the function's parameters, not (*args, **kwargs)
    params = inspect.signature(cm.sweep).parameters
    assert "kind" in params and "chunk_rows" in params


# --- --global-tokens: the nearest valid counts must split over the GPUs too ---------------------
def _offered(line: str) -> list[int]:
    """The token counts a refusal offers as 'global_tokens=N' (the CLI: '--global-tokens=N')."""
    import re

    return [int(x.replace(",", "")) for x in re.findall(r"global[_-]tokens=([\d,]+)", line)]


@pytest.mark.parametrize("command", ["train", "scenario"])
def test_global_tokens_refusal_offers_counts_that_split_over_the_gpus(command):
    """100Ki tokens at seq 8192 on 64 GPUs: 12.5 sequences. The refusal used to offer 98,304 and
    106,496 tokens (12 or 13 sequences), which the next check refuses again (not a multiple of
    64 GPUs). Every count offered must now be accepted as typed."""
    extra = ["--tokens", "15T"] if command == "train" else []
    base = [command, "--arch", ARCH, "--nodes", "8", "--seq", "8192", "--zero", "3", *extra]
    line = one_line_error(run(*base, "--global-tokens", "100Ki"), "--global-tokens", "64 GPUs")
    offered = _offered(line)
    assert offered == [524_288]  # 64 sequences x 8192 tokens: accumulation 1
    for tokens in offered:
        ok = run(*base, "--global-tokens", str(tokens), "--json")
        assert ok.exit_code == 0, ok.stderr


def test_batch_global_tokens_refusal_names_the_split_and_offers_valid_counts():
    line = one_line_error(
        run("batch", "--local", "1", "--ranks", "64", "--global-tokens", "4M", "--seq", "8192"),
        "--global-tokens",
        "accumulation=8",
        "4,194,304",
    )
    for tokens in _offered(line):
        ok = run("batch", "--local", "1", "--ranks", "64", "--global-tokens", str(tokens),
                 "--seq", "8192")  # fmt: skip
        assert ok.exit_code == 0, ok.stderr


def test_solve_batch_offers_token_counts_that_split():
    with pytest.raises(ValueError, match=r"global_tokens=524,288, global_batch=64") as err:
        batch.solve_batch(local_batch=1, ranks=64, global_tokens=100 * 1024, sequence_length=8192)
    assert "98,304" not in str(err.value)
    # a count that splits is unchanged
    sol = batch.solve_batch(local_batch=1, ranks=64, global_tokens=4 * 2**20, sequence_length=8192)
    assert (sol.accumulation, sol.global_batch) == (8, 512)


# --- scenario --vs recompute=none: 'none' is one of recompute's own choices ---------------------
def test_vs_recompute_none_is_the_choice_none_not_a_cleared_field():
    """``--vs recompute=none`` was refused with "Input should be 'none', 'selective', ..." (the
    word read as Python None): the one way to ask "and without recomputation?"."""
    a = cm.Scenario(arch=ARCH, cluster="dgx-h100", nodes=8, recompute="full")
    assert a.with_changes("recompute=none").recompute == "none"
    r = run("scenario", "--arch", ARCH, "--nodes", "8", "--zero", "3", "--recompute", "full",
            "--vs", "recompute=none", "--json")  # fmt: skip
    assert r.exit_code == 0, r.stderr

    out = json.loads(r.stdout)
    assert out["b"]["scenario"]["recompute"] == "none"
    assert out["b"]["memory_total_bytes"] > out["a"]["memory_total_bytes"]
    # an optional field is still cleared by none
    assert (
        cm.Scenario(arch=ARCH, cluster="dgx-h100", precision="fp8")
        .with_changes("precision=none")
        .precision
        is None
    )


# --- a collective whose buffer no GPU of the preset can hold -----------------------------------
@pytest.mark.parametrize(
    "args",
    [
        ["collective", "all_reduce", "--size", "14GB,1TB", "--cluster", "dgx-h100", "--nodes", "8"],
        ["collective", "all_reduce", "--size", "1TB", "--cluster", "dgx-h100", "--nodes", "8",
         "--algorithm", "all"],
        ["predict", "--op", "all_reduce", "--cluster", "dgx-h100", "--nodes", "2", "--sizes",
         "8B:256GB"],
    ],
)  # fmt: skip
def test_a_buffer_larger_than_the_gpu_is_flagged_beside_its_time(args):
    """A 1 TB per-rank all-reduce on 80 GB H100s was priced (5.19 s) with no word that no GPU
    can hold the buffer: the time of a run that cannot exist, shown as any other."""
    r = run(*args)
    assert r.exit_code == 0, r.stderr
    notes = [x for x in r.stdout.splitlines() if x.startswith("note: size ")]
    assert len(notes) == 1 and "h100-sxm GPU memory (85.5 GB)" in notes[0], r.stdout
    js = run(*args, "--json")
    assert "85.5 GB" in json.loads(js.stdout)["memory_note"]


def test_a_buffer_the_gpu_holds_has_no_memory_note():
    r = run("collective", "all_reduce", "--size", "14GB", "--cluster", "dgx-h100", "--nodes", "8")
    assert r.exit_code == 0 and "GPU memory" not in r.stdout
    js = json.loads(run("collective", "all_reduce", "--size", "14GB", "--cluster", "dgx-h100",
                        "--json").stdout)  # fmt: skip
    assert "memory_note" not in js


# --- NCCL_ALGO-style names: one row per algorithm, named as the row's algorithm_used -----------
def test_algorithm_and_protocol_names_in_any_case_are_one_canonical_row():
    """``--algorithm Ring`` (as NCCL_ALGO is written) was priced but echoed as ``Ring`` beside
    ``algorithm_used`` ``ring``; ``ring,Ring`` gave two identical rows; and over a raw link the
    same ``Ring`` was refused while the cluster road took it."""
    df = cm.sweep(preset="dgx-h100", nodes=8, size="1GB", algorithm="ring,Ring", protocol="Simple")
    assert df[["algorithm", "protocol_requested"]].values.tolist() == [["ring", "simple"]]
    link = cm.sweep(ranks=8, bandwidth="50GB/s", size="1GB", algorithm="Ring")
    ref = cm.sweep(ranks=8, bandwidth="50GB/s", size="1GB", algorithm="ring")
    assert link.algorithm.tolist() == ["ring"] and link.time_s.tolist() == ref.time_s.tolist()
    r = run("collective", "all_reduce", "--size", "1GB", "--cluster", "dgx-h100", "--algorithm",
            "RING", "--json")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["results"][0]["algorithm"] == "ring"


# --- train under fp8: whose peak the MFU is of ---------------------------------------------------
def test_train_says_an_fp8_mfu_is_of_the_fp8_peak_and_its_json_names_the_precision():
    """``train --precision fp8`` printed "MFU at this step 26.8%" beside bf16's "41.0%" with no
    word that the first is of the fp8 peak (twice bf16's): fp8 read as the slower run, though
    its step is faster. Its --json had no precision at all (``step --json`` has it)."""
    base = ["train", "--arch", "llama-3.1-8b", "--nodes", "2", "--tokens", "1T",
            "--strategy", "fsdp"]  # fmt: skip
    fp8, bf16 = run(*base, "--precision", "fp8"), run(*base)
    assert fp8.exit_code == 0 and bf16.exit_code == 0, fp8.stderr + bf16.stderr
    line = next(x for x in fp8.stdout.splitlines() if x.startswith("MFU at this step"))
    assert "of the fp8 dense peak" in line
    assert "peak" not in next(x for x in bf16.stdout.splitlines() if x.startswith("MFU at"))
    j8 = json.loads(run(*base, "--precision", "fp8", "--json").stdout)
    j16 = json.loads(run(*base, "--json").stdout)
    assert (j8["precision"], j16["precision"]) == ("fp8", "bf16")
    assert j8["step_time_s"] < j16["step_time_s"] and j8["mfu"] < j16["mfu"]
    step = json.loads(run("step", "--arch", "llama-3.1-8b", "--nodes", "2", "--strategy", "fsdp",
                          "--precision", "fp8", "--json").stdout)  # fmt: skip
    assert step["precision"] == j8["precision"] and step["step_time_s"] == j8["step_time_s"]


# --- scenario --vs: a side that does not fit keeps its setup line --------------------------------
def test_vs_header_keeps_each_sides_setup_above_its_does_not_fit_warning():
    """When a side did not fit, its header line was the DOES NOT FIT warning alone: which model,
    cluster and strategy A was were nowhere on the screen."""
    r = run("scenario", "--arch", "llama-3.1-8b", "--nodes", "2", "--vs", "precision=fp8")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("A: llama-3.1-8b: ") and "dgx-h100 x 2 nodes" in lines[0]
    assert lines[1].strip().startswith("DOES NOT FIT: 173 GB per GPU")
    assert lines[2].startswith("B: llama-3.1-8b: ") and lines[2].endswith("(A with precision=fp8)")
    assert lines[3].strip().startswith("DOES NOT FIT")
    ok = run("scenario", "--arch", "llama-3.1-8b", "--nodes", "2", "--zero", "3", "--vs", "nodes=4")
    head = ok.stdout.splitlines()[:3]
    assert head[0].startswith("A: llama-3.1-8b") and head[1].startswith("B: llama-3.1-8b")
    assert "DOES NOT FIT" not in ok.stdout.split("answer:")[0]


# --- step --help: --peak-flops had a default it does not have ------------------------------------
def test_step_help_peak_flops_names_where_it_applies_and_mfu_its_one_link_default():
    """``--peak-flops`` said "(default: the preset's bf16 figure)": on one link there is no preset
    and the step refuses --tokens-per-gpu without it; with --cluster the flag is refused."""
    from costmodel.strategy.compute import DEFAULT_MFU

    text = " ".join(run("step", "--help").stdout.split())
    assert "default: the preset's bf16 figure" not in text
    assert "which needs it" in text and "With --cluster the preset's GPU gives it" in text
    assert f"on one link, of --peak-flops, default {DEFAULT_MFU:g})" in text
    one_line_error(
        run("step", "--params", "7B", "--ranks", "64", "--bandwidth", "50GB/s",
            "--tokens-per-gpu", "4096"),
        "--peak-flops",
    )  # fmt: skip
    ok = run("step", "--params", "7B", "--ranks", "64", "--bandwidth", "50GB/s",
             "--tokens-per-gpu", "4096", "--peak-flops", "989T", "--json")  # fmt: skip
    given = run("step", "--params", "7B", "--ranks", "64", "--bandwidth", "50GB/s",
                "--tokens-per-gpu", "4096", "--peak-flops", "989T", "--mfu", str(DEFAULT_MFU),
                "--json")  # fmt: skip
    assert json.loads(ok.stdout)["step_time_s"] == json.loads(given.stdout)["step_time_s"]


# --- a step sweep whose rows do not fit says so, as step and train do ----------------------------
def test_step_sweep_warns_how_many_rows_do_not_fit(tmp_path):
    """``sweep --kind step`` of Llama-3.1-70B at seq 8192 on 64 H100s wrote 5 priced rows, none of
    which fits, with no word outside the ``fits`` column; ``step`` and ``train`` put DOES NOT
    FIT above the same answers."""
    out = tmp_path / "all.csv"
    r = run("sweep", "--kind", "step", "--set", "preset=dgx-h100", "--set", f"arch={ARCH}",
            "--set", "strategy=ddp,fsdp", "--set", "nodes=8", "--set", "sequence_length=8192",
            "--set", "recompute=none,full", "-o", str(out), "--no-progress")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    df = cm.sweep.read_table(out)
    unfit = int((~df.fits.astype(bool)).sum())
    assert unfit == 3  # ddp twice and fsdp without recomputation; fsdp + full fits
    warning = [x for x in r.stderr.splitlines() if "not fit their GPU" in x]
    assert warning == [
        f"costmodel: warning: {unfit} of 4 rows do not fit their GPU's memory (fits = false): "
        "their step, days and cost are for a configuration that cannot run"
    ]
    js = run("sweep", "--kind", "step", "--set", "preset=dgx-h100", "--set", f"arch={ARCH}",
             "--set", "strategy=ddp", "--set", "nodes=8", "-o", str(tmp_path / "x.csv"),
             "--json", "--no-progress")  # fmt: skip
    assert json.loads(js.stdout)["unfit_rows"] == 1
    fits = run("sweep", "--kind", "step", "--set", "preset=dgx-h100", "--set", f"arch={ARCH}",
               "--set", "strategy=fsdp", "--set", "recompute=full", "--set", "nodes=8",
               "--no-progress")  # fmt: skip
    assert fits.exit_code == 0 and "(fits = false)" not in fits.stderr
    mem = run("sweep", "--kind", "memory", "--set", f"arch={ARCH}", "--set", "zero_stage=0",
              "--set", "ranks=64", "--set", "preset=dgx-h100", "--no-progress")  # fmt: skip
    assert mem.exit_code == 0 and "(fits = false)" not in mem.stderr  # there fits is the answer


def test_dask_step_dataset_counts_its_unfit_rows_as_the_local_sweep(tmp_path):
    """The Dask engine's summary carries ``unfit_rows`` too (threads in this process, as
    tests/test_distributed.py runs it), the same count as the local file's."""
    pytest.importorskip("dask.distributed")
    from dask import distributed as dd

    from costmodel import distributed

    grid = cm.sweep.make_grid(
        {"preset": "dgx-h100", "arch": ARCH, "strategy": "ddp,fsdp", "nodes": "8",
         "sequence_length": "8192", "recompute": "none,full"},
        kind="step",
    )  # fmt: skip
    local = cm.sweep.sweep_to_file(tmp_path / "local.csv", grid)
    with (
        dd.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                        dashboard_address=None) as cluster,
        dd.Client(cluster),
    ):  # fmt: skip
        summary = distributed.sweep_dask(tmp_path / "ds", grid, scheduler=cluster.scheduler_address)
    assert local.unfit_rows == summary.unfit_rows == 3


# --- a partial recomputation mode on a setup that does not fit -----------------------------------
@pytest.mark.parametrize("mode", ["selective-op", "selective-layer"])
@pytest.mark.parametrize("command", [["step"], ["train", "--tokens", "1T"], ["scenario", "--fit"]])
def test_partial_recompute_modes_get_fit_suggestions_not_an_internal_error(command, mode):
    """``step --arch llama-3.1-8b --recompute selective-op`` (ddp, which does not fit one node)
    answered ``costmodel: error: tuple.index(x): x not in tuple``: the fit suggestions looked the
    mode up in a list of three (none, selective, full). Only full recomputation is after it."""
    r = run(*command, "--arch", "llama-3.1-8b", "--nodes", "1", "--recompute", mode)
    assert r.exit_code == 0, r.stderr
    assert "tuple" not in r.stdout + r.stderr
    # fsdp alone fits, so "fsdp and recompute full" (a dominated change) is not listed
    assert "DOES NOT FIT" in r.stdout and "\n  fsdp: " in r.stdout
    assert "and recompute full" not in r.stdout
    assert "recompute selective:" not in r.stdout  # nothing before full after a partial mode
    fa = cm.fit_suggestions(arch="llama-3.1-8b", cluster="dgx-h100", nodes=1, recompute=mode)
    assert "recompute full" in str(fa.as_dict())


# --- a given MFU under recomputation: PaLM's MFU, as the fitted label's -------------------------
def test_given_mfu_under_recompute_is_palms_mfu_of_the_model_flops():
    """The fitted label reads "MFU 0.36" (model FLOPs, recomputation excluded, PaLM's MFU), yet
    ``--mfu 0.36`` with ``--recompute full`` priced the compute a third slower (the rate was
    applied to the FLOPs run). A given MFU is now PaLM's too: the same compute as without
    recomputation, the step's own model-FLOP MFU is the given one, and the label says so."""
    base = ["step", "--arch", ARCH, "--nodes", "8", "--seq", "8192", "--zero", "3", "--json"]
    full = json.loads(run(*base, "--recompute", "full", "--mfu", "0.36").stdout)
    assert full["compute_label"] == (
        "given MFU 0.36 (PaLM's MFU, of model FLOPs: recompute full's 33% extra work is inside it)"
    )
    none = json.loads(run(*base, "--mfu", "0.36").stdout)
    assert none["compute_label"] == "given MFU 0.36"  # no recomputation: as ever
    assert full["compute_s"] == pytest.approx(none["compute_s"], rel=1e-12)
    # the label's figure is the compute's own model-FLOP MFU
    flops = cm.load_arch(ARCH).training_flops_per_token(8192) * 8192  # one micro-batch
    assert round(flops / (full["compute_s"] * 989.5e12), 2) == 0.36  # H100 SXM bf16 dense
