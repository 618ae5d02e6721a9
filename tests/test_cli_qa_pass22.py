"""A new-user walk of the CLI over the planning questions: a step sweep given ``--price`` for
some of its GPUs says which rows got no dollars (it wrote a cost column half NaN and said
nothing, where a row that does not fit is warned of); the one-link step's missing compute names
the whole second way (``--tokens-per-gpu`` with ``--peak-flops``), not half of it."""

from __future__ import annotations

import csv
import json
import math

from tests._cli import one_line_error, run

# --- a step sweep priced for some of its GPUs -------------------------------------------------
PLAN = ("sweep", "--kind", "step", "--set", "preset=dgx-h100,dgx-b200", "--set",
        "arch=llama-3.1-8b", "--set", "strategy=zero1", "--set", "nodes=4", "--tokens", "2T",
        "--no-progress")  # fmt: skip


def _warnings(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith("costmodel: warning: ")]


def test_a_sweep_priced_for_one_gpu_of_two_warns_of_the_rows_without_dollars(tmp_path):
    out = tmp_path / "plan.csv"
    r = run(*PLAN, "--price", "aws-p5-on-demand", "-o", str(out))
    assert r.exit_code == 0, r.stderr
    rows = list(csv.DictReader(out.open()))
    unpriced = [x for x in rows if math.isnan(float(x["cost_usd"]))]
    assert [x["preset"] for x in unpriced] == ["dgx-b200"]  # the file as it was
    [line] = [w for w in _warnings(r.stderr) if "no dollars" in w]
    assert line.startswith("costmodel: warning: 1 of 2 rows has no dollars: "), line
    # the GPU and its preset, why, and the two ways out
    for part in ("b200 (dgx-b200)", "never priced at another GPU's rate", "cost_note",
                 "--price", "--usd-per-gpu-hour"):  # fmt: skip
        assert part in line, line
    assert "h100" not in line  # the priced rows are not named


def test_the_summary_counts_the_rows_without_dollars(tmp_path):
    r = run(*PLAN, "--price", "aws-p5-on-demand", "-o", str(tmp_path / "p.csv"), "--json")
    assert r.exit_code == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["unpriced_rows"] == 1 and summary["unpriced_presets"] == ["dgx-b200"]
    assert summary["warnings"] == [w.removeprefix("costmodel: warning: ")
                                   for w in _warnings(r.stderr)]  # fmt: skip


def test_every_row_priced_or_no_price_asked_gives_no_such_warning(tmp_path):
    both = run(*PLAN, "--price", "aws-p5-on-demand,lambda-b200-on-demand", "-o",
               str(tmp_path / "a.csv"))  # fmt: skip
    typed = run(*PLAN, "--usd-per-gpu-hour", "3", "-o", str(tmp_path / "b.csv"))
    none = run(*PLAN, "-o", str(tmp_path / "c.csv"))  # no dollars asked: cost_note says so
    for r in (both, typed, none):
        assert r.exit_code == 0, r.stderr
        assert not any("no dollars" in w for w in _warnings(r.stderr)), r.stderr


def test_the_streamed_sweep_warns_too():
    r = run(*PLAN, "--price", "aws-p5-on-demand")  # CSV on stdout
    assert r.exit_code == 0, r.stderr
    assert any("1 of 2 rows has no dollars" in w for w in _warnings(r.stderr)), r.stderr


# --- the one-link step without a compute ------------------------------------------------------
def test_the_one_link_step_without_compute_names_both_options_of_the_second_way():
    """``step --params 7B --ranks 64 --bandwidth 50GB/s --mfu 0.4`` said "needs --compute-time,
    or --tokens-per-gpu with --mfu"; given --tokens-per-gpu it was then refused for want of
    --peak-flops. The line names --peak-flops, and what it names runs."""
    link = ("step", "--params", "7B", "--ranks", "64", "--bandwidth", "50GB/s")
    line = one_line_error(run(*link, "--mfu", "0.4"), "--compute-time", "--tokens-per-gpu",
                          "--peak-flops")  # fmt: skip
    assert "e.g. --tokens-per-gpu 4096 --peak-flops 989T" in line, line
    ok = run(*link, "--tokens-per-gpu", "4096", "--peak-flops", "989T")
    assert ok.exit_code == 0, ok.stderr
    assert "step time" in ok.stdout


def test_the_dask_dataset_counts_the_rows_without_dollars_as_the_local_file(tmp_path):
    """The Dask engine's summary carries the same count and presets (threads in this process,
    as tests/test_distributed.py runs it)."""
    from dask import distributed as dd

    import costmodel as cm
    from costmodel import distributed

    grid = cm.sweep.make_grid(
        {"preset": "dgx-h100,dgx-b200,dgx-a100", "arch": "llama-3.1-8b", "strategy": "zero1",
         "nodes": "4", "tokens": "2T", "price": "aws-p5-on-demand"},
        kind="step",
    )  # fmt: skip
    local = cm.sweep.sweep_to_file(tmp_path / "local.csv", grid)
    with (
        dd.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                        dashboard_address=None) as cluster,
        dd.Client(cluster),
    ):  # fmt: skip
        summary = distributed.sweep_dask(tmp_path / "ds", grid, scheduler=cluster.scheduler_address)
    assert local.unpriced_rows == summary.unpriced_rows == 2
    assert local.unpriced_presets == summary.unpriced_presets == ["dgx-b200", "dgx-a100"]


# --- scenario's time and cost of a configuration that does not fit ----------------------------
def _cost_table(stdout: str) -> list[str]:
    lines = stdout.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("time and cost to train"))
    end = next(
        i for i in range(start, len(lines)) if lines[i].startswith(("price:", "price A:", "note"))
    )
    return lines[start:end]


def test_scenario_cost_of_a_configuration_that_does_not_fit_says_so_beside_the_dollars():
    """Llama-3.1-70B under ZeRO-3 on 64 H100s (140 GB > 85.5 GB): the DOES NOT FIT line is the
    output's first, some 30 lines above the dollars; the cost table itself said nothing."""
    r = run("scenario", "--arch", "llama-3.1-70b", "--nodes", "8", "--zero", "3", "--tokens",
            "2T", "--price", "aws-p5-on-demand")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("DOES NOT FIT")
    table = _cost_table(r.stdout)
    assert table[-1].split() == ["fits", "in", "memory", "NO:", "for", "a", "configuration",
                                 "that", "cannot", "run"]  # fmt: skip
    # under the dollars it qualifies
    assert [ln.split()[0] for ln in table[-3:-1]] == ["cost", "cost"]


def test_scenario_vs_marks_the_side_that_does_not_fit_and_only_it():
    r = run("scenario", "--arch", "llama-2-7b", "--nodes", "8", "--tokens", "2T", "--price",
            "aws-p5-on-demand", "--vs", "cluster=dgx-b200")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    row = _cost_table(r.stdout)[-1]
    assert row.startswith("fits in memory") and row.endswith("yes"), row  # A: 143 GB on H100
    assert "NO: for a configuration that cannot run" in row


def test_scenario_cost_of_configurations_that_fit_has_no_such_row():
    r = run("scenario", "--arch", "llama-2-7b", "--nodes", "8", "--zero", "1", "--tokens", "2T",
            "--price", "aws-p5-on-demand", "--vs", "cluster=dgx-b200", "--price-b",
            "lambda-b200-on-demand")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert not any(ln.startswith("fits in memory") for ln in r.stdout.splitlines())
