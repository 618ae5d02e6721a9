"""Tenth QA pass: the API, the CLI and the sweep. Each test failed before its fix."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import costmodel as cm
from costmodel import units
from tests._cli import one_line_error, run

LLAMA = ("--arch", "llama-2-7b")


# --- a number without its unit: the API warns as the CLI does, and so does --latency ---------------
@pytest.mark.parametrize(
    ("change", "text"),
    [
        ("compute_time=400",
         "compute_time=400 is 400 s (a number without a unit is seconds); for 400 ms write 400ms"),
        ("nodes=2,bucket=50",
         "bucket=50 is 50 bytes (a number without a unit is bytes); for 50 MiB write 50MiB"),
    ],
)  # fmt: skip
def test_with_changes_warns_a_bare_number_in_the_clis_words(change, text):
    """``Scenario.with_changes("compute_time=400")`` took 400 s without a word while ``--vs
    compute_time=400`` warned; the API now warns with the same text (without the option)."""
    a = cm.Scenario(arch="llama-2-7b")
    with pytest.warns(units.BareNumberWarning) as caught:
        b = a.with_changes(change)
    assert [str(w.message) for w in caught] == [text]
    assert b.compute_time_s == (400.0 if "compute_time" in change else None)  # answered as typed
    res = run("scenario", *LLAMA, "--vs", change)
    assert res.exit_code == 0, res.stderr
    lines = [x for x in res.stderr.splitlines() if x]
    assert lines == [f"costmodel: warning: --vs {text}"]  # said once, in one line


@pytest.mark.parametrize("change", ["compute_time=400ms", "compute_time_s=400", "nodes=16"])
def test_with_changes_with_units_or_unit_named_keys_is_quiet(change):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cm.Scenario(arch="llama-2-7b").with_changes(change)


@pytest.mark.parametrize(
    "argv",
    [
        ("collective", "all_reduce", "--size", "14GB", "--ranks", "64", "--bandwidth", "50GB/s"),
        ("step", "--params", "7B", "--compute-time", "0.4s", "--ranks", "64", "--bandwidth",
         "50GB/s"),
    ],
)  # fmt: skip
def test_a_bare_latency_is_warned_as_seconds(argv):
    """``--latency 0.005`` is 5 ms of latency per message (a bare number is seconds), more
    likely meant as 5 us; it was answered without a word."""
    res = run(*argv, "--latency", "0.005")
    assert res.exit_code == 0, res.stderr
    assert res.stderr.splitlines() == [
        "costmodel: warning: --latency 0.005 is 0.005 s (a number without a unit is seconds); "
        "for 5 µs (0.005 ms) write 5us"  # was "for 0.005 µs write 0.005us": 5 ns
    ]
    for quiet in ("5us", "0.000005"):  # a unit, or a bare number a link's latency can be
        res = run(*argv, "--latency", quiet)
        assert res.exit_code == 0 and "warning" not in res.stderr, res.stderr
    res = run("sweep", "--set", "ranks=8", "--set", "bandwidth=50GB/s", "--set", "size=1GB",
              "--set", "latency=0.005")  # fmt: skip
    assert "costmodel: warning: --set latency=0.005 is 0.005 s" in res.stderr


def test_the_api_sweep_warns_a_bare_number_as_set_does(tmp_path):
    """``cm.sweep(compute_time="400")``, the API of ``--set compute_time=400``, said nothing;
    a grid file's ``bucket_cap = "25"`` neither, on either surface. Python numbers are SI."""
    kw = dict(kind="step", preset="dgx-h100", arch="llama-2-7b")
    with pytest.warns(units.BareNumberWarning) as caught:
        cm.sweep(**kw, bucket_cap="25")
    assert [str(w.message) for w in caught] == [
        "bucket_cap=25 is 25 bytes (a number without a unit is bytes); for 25 MiB write 25MiB"
    ]
    assert caught[0].filename == __file__  # the user's line, not the package's
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cm.sweep(**kw, bucket_cap=25 * 2**20)  # a number: bytes, as every API number is SI
    grid = tmp_path / "g.toml"
    grid.write_text('kind = "step"\n[grid]\npreset = "dgx-h100"\narch = "llama-2-7b"\n'
                    'bucket_cap = "25"\n')  # fmt: skip
    res = run("sweep", str(grid), "--set", "compute_time=400", "--json")
    assert res.exit_code == 0, res.stderr
    assert res.stderr.splitlines() == [
        f"costmodel: warning: {grid}: bucket_cap=25 is 25 bytes (a number without a unit is "
        "bytes); for 25 MiB write 25MiB",
        "costmodel: warning: --set compute_time=400 is 400 s (a number without a unit is "
        "seconds); for 400 ms write 400ms",
        # ddp of a 7B model on one node (112 GB of state per GPU): the step sweep says so
        "costmodel: warning: 1 of 1 row does not fit its GPU's memory (fits = false): its "
        "step, days and cost are for a configuration that cannot run",
    ]


def test_the_cli_and_the_api_take_their_words_from_one_helper():
    """One text for each surface: the CLI's option form is the API's with the option before."""
    api = units.bare_key_messages("", "compute_time", "400")
    cli = units.bare_key_messages("--vs", "compute_time", "400")
    assert cli == [f"--vs {api[0]}"]
    assert units.bare_number_message("--compute-time", "400", "seconds", "ms") == (
        "--compute-time 400 is 400 s (a number without a unit is seconds); for 400 ms write 400ms"
    )


# --- a bucket not applied: no bucket in the sweep row -------------------------------------------------
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_sweep_row_of_fsdp_or_hsdp_has_no_bucket(tmp_path, suffix):
    """``sweep --kind step --set strategy=ddp,fsdp,hsdp --set bucket_cap=50MB`` wrote
    50000000 in the fsdp and hsdp rows, whose step applies no bucket (only ``notes`` said so);
    ``step --json`` gives null there, and so does the sweep now, in CSV and Parquet alike."""
    out = tmp_path / f"s{suffix}"
    res = run("sweep", "--kind", "step", "--set", "arch=llama-2-7b", "--set", "preset=dgx-h100",
              "--set", "nodes=2", "--set", "strategy=ddp,fsdp,hsdp", "--set", "bucket_cap=50MB",
              "--no-progress", "-o", str(out))  # fmt: skip
    assert res.exit_code == 0, res.stderr
    df = pd.read_csv(out) if suffix == ".csv" else pd.read_parquet(out)
    names = df["strategy"].astype(str).str.split().str[0]
    caps = dict(zip(names, df["bucket_cap_bytes"], strict=True))
    assert caps["ddp"] == 50_000_000
    assert np.isnan(caps["fsdp"]) and np.isnan(caps["hsdp"]), caps
    notes = dict(zip(names, df["notes"], strict=True))
    assert str(notes["fsdp"]).startswith("bucket_cap_bytes: not applied to fsdp")
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        assert str(pq.read_schema(out).field("bucket_cap_bytes").type) == "int64"  # nulls, not 0


def test_the_api_sweep_gives_na_where_the_bucket_is_not_applied():
    """Empty where not applied: <NA> in the integer column (pandas Int64), the others whole."""
    df = cm.sweep(kind="step", preset="dgx-h100", arch="llama-2-7b", nodes=2,
                  strategy="zero2,fsdp", bucket_cap="50MB")  # fmt: skip
    by = dict(zip(df["strategy"].astype(str), df["bucket_cap_bytes"], strict=True))
    assert by["zero2"] == 50_000_000 and pd.isna(by["fsdp"])
    assert df["bucket_cap_bytes"].dtype == "Int64"


# --- the scaling table's rows: the compute share beside the scaling efficiency -----------------------
def test_scaling_rows_carry_the_compute_share():
    """``ScalingRow`` had the scaling efficiency (T_1 / T_N) but not the compute's share of the
    step, which the scenario's own result and the step give."""
    r = cm.Scenario(arch="llama-2-7b", nodes=2).evaluate(flips=False)
    own = next(row for row in r.scaling if row.nodes == 2)
    assert own.compute_share == pytest.approx(r.compute_share, rel=1e-12)
    assert own.compute_share == pytest.approx(r.compute_s / r.step_time_s, rel=1e-12)
    for row in r.scaling:
        assert 0 < row.compute_share <= 1
    assert "compute_share" in r.scaling_frame().columns
    doc = json.loads(run("scenario", *LLAMA, "--nodes", "2", "--json").stdout)
    assert all("compute_share" in row for row in doc["scaling"])
    text = run("scenario", *LLAMA, "--nodes", "2").stdout
    header = next(x for x in text.splitlines() if x.startswith("scaling:"))
    assert "efficiency  compute share" in header


def test_the_step_pages_scaling_table_shows_the_compute_share():
    from tests.test_app import assert_clean, open_page, open_tables

    at = open_tables(open_page("page_ddp.py"))
    assert_clean(at)
    table = next(
        d.value for d in at.dataframe if "scaling efficiency [fraction]" in d.value.columns
    )
    share = table["compute share of the step [fraction]"].astype(float)
    assert ((share > 0) & (share <= 1)).all() and len(share) == len(table)


# --- --seq: a one-line refusal naming --seq, from one declaration -------------------------------------
@pytest.mark.parametrize(
    "argv",
    [
        ("step", *LLAMA),
        ("memory", *LLAMA),
        ("scenario", *LLAMA),
        ("train", *LLAMA, "--tokens", "1T"),
        ("batch", "--local", "1", "--ranks", "8", "--global-tokens", "4Mi"),
    ],
)
def test_a_seq_that_does_not_parse_is_refused_naming_seq(argv):
    """``--seq 8x`` said "Invalid value for '--seq' / '--sequence-length': ..." (typer's
    wording); every other option says "--OPTION: must be RULE, got VALUE (why)", under the
    spelling typed."""
    for spelling in ("--seq", "--sequence-length"):
        line = one_line_error(run(*argv, spelling, "8x"), f"costmodel: error: {spelling}: must be "
                              "a whole number in 1..100,000,000 tokens, got '8x'", "'8Ki'")  # fmt: skip
        assert "Invalid value" not in line
    one_line_error(run(*argv, "--seq", "0"), "costmodel: error: --seq: must be", "got '0'")


@pytest.mark.parametrize("command", ["scenario", "train"])
def test_seq_keeps_its_default_and_both_spellings(command):
    """One declaration of --seq for every command: the default (4096) and --sequence-length
    answer as before."""
    extra = ("--tokens", "1T") if command == "train" else ()
    plain = json.loads(run(command, *LLAMA, *extra, "--json").stdout)
    for spelling, value in (("--seq", "4096"), ("--sequence-length", "4Ki")):
        same = json.loads(run(command, *LLAMA, *extra, spelling, value, "--json").stdout)
        assert same == plain


# --- a sweep with an impossible row: that row fails, the others answer ------------------------------------
def test_an_impossible_row_fails_alone_in_the_api_sweep():
    """A compute time faster than the GPU's dense peak in one row stopped the whole sweep."""
    df = cm.sweep(kind="step", preset="dgx-h100", arch="llama-2-7b", compute_time="1ms,400ms")
    assert len(df) == 2 and "error" in df
    bad, good = df.iloc[0], df.iloc[1]
    assert bad["error"].startswith("compute_time_s: a measured compute time of 0.001 s")
    assert np.isnan(bad["step_time_s"]) and bad["ranks"] == 8 and bad["sequence_length"] == 4096
    assert good["error"] == ""
    alone = cm.sweep(kind="step", preset="dgx-h100", arch="llama-2-7b", compute_time="400ms")
    assert good["step_time_s"] == alone["step_time_s"].iloc[0]
    assert (alone["error"] == "").all()


@pytest.mark.parametrize("out", [None, "s.csv", "s.parquet"])
def test_the_cli_sweep_keeps_going_and_says_why_rows_failed(tmp_path, out):
    argv = ["sweep", "--kind", "step", "--set", "arch=llama-2-7b", "--set", "preset=dgx-h100",
            "--set", "compute_time=1ms,400ms", "--no-progress"]  # fmt: skip
    if out is not None:
        argv += ["-o", str(tmp_path / out)]
    res = run(*argv)
    assert res.exit_code == 0, res.stderr
    # the answered row (ddp of 7B on one node) does not fit, and the sweep says so too
    (line, unfit) = res.stderr.splitlines()
    assert unfit.startswith("costmodel: warning: 1 of 2 rows does not fit its GPU's memory")
    assert line.startswith("costmodel: warning: 1 of 2 rows failed")
    assert "--set compute_time: a measured compute time of 0.001 s" in line
    if out is not None:
        from costmodel.sweep import read_table

        df = read_table(tmp_path / out)
        assert df["error"].tolist()[1] == "" and df["error"].tolist()[0].startswith(
            "compute_time_s:"
        )
        assert np.isnan(df["step_time_s"].iloc[0]) and df["step_time_s"].iloc[1] > 0


def test_the_failed_rows_reasons_are_capped():
    from costmodel.cli.comm import MAX_FAILED_LINES

    times = ",".join(f"{k}ms" for k in range(1, MAX_FAILED_LINES + 3))
    res = run("sweep", "--kind", "step", "--set", "arch=llama-2-7b", "--set", "preset=dgx-h100",
              "--set", f"compute_time={times},400ms", "--json")  # fmt: skip
    assert res.exit_code == 0, res.stderr
    rows = json.loads(res.stdout)
    assert len(rows) == MAX_FAILED_LINES + 3 and rows[-1]["error"] == ""
    # the failed rows' lines (the one answered row, ddp of 7B on one node, also does not fit)
    lines = [x for x in res.stderr.splitlines() if "(fits = false)" not in x]
    # the total once (tests/test_qa_pass33.py), a line per reason, then how many more
    assert len(lines) == 1 + MAX_FAILED_LINES + 1
    assert lines[0].startswith(f"costmodel: warning: {len(rows) - 1} of {len(rows)} rows failed")
    assert lines[-1] == (
        "costmodel: warning: 2 more rows for 2 other reasons: see the output's error column"
    )


# --- fp8: one peak for every measured time ---------------------------------------------------------------
def test_the_peak_a_measured_time_is_held_to_is_the_compute_precisions():
    from costmodel import presets
    from costmodel.strategy.step import measured_peak_flops

    g = presets.load("h100-sxm")
    assert measured_peak_flops(g, "fp8") == g.fp8_dense_flops
    assert measured_peak_flops(g, "bf16") == g.bf16_dense_flops
    # a scenario's measured step and measured compute are refused at the one peak
    with pytest.raises(ValueError, match=r"of the 989.5 TFLOP/s dense peak") as compute:
        cm.Scenario(arch="llama-2-7b", compute_time_s=0.15).evaluate(scaling=False, flips=False)
    r = cm.Scenario(arch="llama-2-7b").evaluate(scaling=False, flips=False)
    with pytest.raises(ValueError, match=r"of the 989.5 TFLOP/s dense peak") as step:
        r.training_cost(1e9, measured_step_time_s=0.15, usd_per_gpu_hour=2.0)
    assert "MFU of 1.27" in str(compute.value) and "MFU of 1.27" in str(step.value)


def test_an_fp8_step_is_calibrated_at_the_fp8_peak():
    """The one-node calibration of an fp8 step re-ran the step with a measured compute time
    held to the bf16 peak, while the step itself is held to fp8's: on a card whose bf16 peak is
    under the fp8 compute's pace the calibration stopped at its first try, and the one-node
    step was no longer the fitted one-node step. Here the bf16 peak is lowered to 150 TFLOP/s
    (the fp8 fitted compute of llama-2-7b runs at 1.89e14 FLOP / 0.287 s = 659 TFLOP/s)."""
    from costmodel import architecture, presets
    from costmodel.strategy import strategy_step
    from costmodel.strategy.compute import step_compute
    from costmodel.strategy.layout import DEFAULT_COMM_CONTENTION

    c = presets.cluster("dgx-h100", nodes=1)
    gpu = c.gpu.model_copy(update={"bf16_dense_flops": 150e12})
    one = c.model_copy(update={"node": c.node.model_copy(update={"gpu": gpu})})
    a = architecture.load_arch("llama-2-7b")
    fitted = step_compute(a, gpu, 4096, 1, flops_per_token=float(a.training_flops_per_token(4096)),
                          peak_flops=gpu.peak_flops, precision="fp8")  # fmt: skip
    flops = float(a.training_flops_per_token(4096)) * 4096
    assert fitted.one_node_step and fitted.micro_s * 150e12 < flops  # faster than bf16 allows
    s = strategy_step(arch="llama-2-7b", cluster=one, strategy="fsdp", precision="fp8",
                      band=False, timeline=False,
                      comm_contention=DEFAULT_COMM_CONTENTION)  # fmt: skip
    # the fixed point's own tolerance (1e-4): the engine's one-node step is the fitted one
    assert s.step_time_s == pytest.approx(fitted.micro_s, rel=1e-4)


def test_a_layout_that_does_not_fit_one_node_count_fails_alone():
    """An hsdp group of 16 GPUs divides 2 nodes' 16 ranks, not one node's 8: that row fails,
    the others answer (it stopped the sweep)."""
    df = cm.sweep(kind="step", preset="dgx-h100", arch="llama-2-7b", strategy="hsdp",
                  group_size="8,16", nodes="1,2")  # fmt: skip
    failed = df[df["error"] != ""]
    assert failed[["group_size", "nodes"]].values.tolist() == [[16, 1]]
    assert failed["error"].iloc[0].startswith("group_size: 16 does not divide the 8 ranks")
    assert (df.loc[df["error"] == "", "step_time_s"] > 0).all() and len(df) == 4


@pytest.mark.parametrize("out", [None, "s.parquet"])
def test_a_sweep_whose_every_row_fails_is_refused_as_before(tmp_path, out):
    """Nothing answered: one line naming the --set, nothing written (JSON wrote its "[" first)."""
    argv = ["sweep", "--kind", "step", "--set", "arch=llama-2-7b", "--set", "preset=dgx-h100",
            "--set", "compute_time=1ms,2ms", "--json"]  # fmt: skip
    if out is not None:
        argv += ["-o", str(tmp_path / out)]
    one_line_error(run(*argv), "--set compute_time: a measured compute time of 0.001 s")
    assert not list(tmp_path.iterdir())
    with pytest.raises(ValueError, match="compute_time_s: a measured compute time of 0.001 s"):
        cm.sweep(kind="step", preset="dgx-h100", arch="llama-2-7b", compute_time="1ms,2ms")


def test_the_dask_engine_counts_failed_rows_and_refuses_an_all_failed_frame(tmp_path):
    """The same per-row errors on the Dask engine: the dataset's summary counts them (the CLI
    says them from it), and a gathered frame whose every row failed is refused as locally."""
    from dask import distributed

    from costmodel import distributed as dist

    kw = dict(kind="step", preset="dgx-h100", arch="llama-2-7b")
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        s = dist.sweep_dask(tmp_path / "d", None, scheduler=client, partition_rows=1,
                            compute_time="1ms,400ms", **kw)  # fmt: skip
        assert (s.rows, s.failed_rows) == (2, 1)
        ((reason, count),) = s.errors.items()
        assert count == 1 and reason.startswith("compute_time_s: a measured compute time of")
        df = dist.read_dataset(tmp_path / "d")
        assert df["error"].tolist()[1] == "" and df["step_time_s"].iloc[1] > 0
        with pytest.raises(ValueError, match="compute_time_s: a measured compute time"):
            dist.sweep_dask_frame(None, scheduler=client, compute_time="1ms,2ms", **kw)
