"""A long log read in time linear in its runs: the parser's findings are shared by the frames
pandas derives from a log's frame, not deep-copied into each (``nccl_tests._common.Findings``).

A QA pass uploaded a 4.8 MB nccl-tests log (one real 2 x 8 H100 run repeated, about 820 runs,
under the 5 MB upload limit): `validate compare` gave no answer in 300 s and the Validate page
kept its server busy after the tab closed. pandas deep-copies a frame's ``attrs`` into every
slice and column it returns, the findings grow with the runs, and the op checks slice the frame
run by run. Speed itself is measured in benchmarks/bench_parse.py (``--runs``); these tests pin
the cause, which a timing would only sample.
"""

from __future__ import annotations

import copy

from costmodel.reference import reference_path
from costmodel.validation.logread import read_log
from costmodel.validation.nccl_tests import parse_nccl_tests

LOG = "16b_aws-2x-p5-8xH100-EFA3200G_allreduce"


def _runs(n: int) -> str:
    return reference_path(LOG).read_text() * n


def test_a_slice_and_a_column_share_the_logs_findings_rather_than_copy_them() -> None:
    rows = parse_nccl_tests(_runs(3))
    assert len(rows.attrs["runs"]) == 3 and rows.attrs["warnings"]
    for derived in (rows.iloc[:5], rows[rows["run"] == 1], rows["size_bytes"].to_frame()):
        for key in ("runs", "warnings", "problems"):
            assert derived.attrs[key] is rows.attrs[key], key
    # still lists to every reader: equal, serialisable, and a deep copy of the frame keeps them
    assert copy.deepcopy(rows).attrs["warnings"] == list(rows.attrs["warnings"])
    assert isinstance(rows.attrs["runs"], list)


def test_a_log_of_many_runs_is_read_with_every_runs_findings() -> None:
    """The reading itself is unchanged: every run found, each repeat said as a duplicate."""
    got = read_log(_runs(12), "many.txt", nodes=2, cluster="aws-p5")
    assert got.rows["run"].nunique() == 12
    # per run: a missing footer (12), a repeated header and a duplicate (11 each): 34 findings,
    # the first 20 said and the rest counted
    assert sum("duplicate run" in f for f in got.findings) == 6
    assert got.findings[-1] == "and 14 more findings in the log"


def test_a_log_cut_before_its_rank_count_is_refused_for_that_not_as_one_rank(tmp_path) -> None:
    """A 16-rank log cut off in its device list and first rows (8-32 B, busbw and algbw printed
    as 0.00) says nothing of its rank count: the refusal says so and asks for the nodes, where
    it said "every measured row ran on 1 rank" (NaN < 2 is false, but pandas' all() skipped
    the missing counts), beside a page line saying the ranks were unknown."""
    from tests._cli import one_line_error, run

    cut = tmp_path / "cut.txt"
    cut.write_bytes(reference_path(LOG).read_bytes()[:2500])
    line = one_line_error(
        run("validate", "compare", str(cut), "--cluster", "dgx-h100"),
        "does not say how many ranks ran",
        "nodes",
    )
    assert "1 rank" not in line
    # given the nodes, the same rows are compared (16 ranks: 2 nodes of the preset's 8)
    ok = run("validate", "compare", str(cut), "--cluster", "dgx-h100", "--nodes", "2")
    assert ok.exit_code in (0, 1), ok.stderr
    assert "median |busbw error|" in ok.stdout


def test_a_calibration_fits_the_rows_nccl_never_runs_on_nvls_without_nvls(tmp_path) -> None:
    """Calibrating on 23b (2 x 8 H200 over RoCE, all-reduce of 11 types) fits its int8, uint8
    and fp8 rows with NVLS off, as `validate compare` predicts them (``nvls_off_rows``): the
    fabric fit then describes the run (rms 4 %) and identifies the NIC efficiency; fitted with
    NVLS on for those rows it measured no term at 13 % rms."""
    import tomllib

    from tests._cli import run

    out = tmp_path / "cal.toml"
    got = run(
        "calibrate",
        str(reference_path("23b_spectrumx-2x8xH200-8x400G-RoCE_allreduce_dtypes")),
        "-o",
        str(out),
        "--cluster",
        "dell-xe9680-h200-roce",
    )
    assert got.exit_code == 0, got.stderr
    (fabric,) = tomllib.loads(out.read_text())["fabric"]
    assert fabric["measured"] == ["nic_efficiency"]
    assert fabric["rms_rel_error"] < 0.08


def test_each_calibration_segment_says_whether_nccl_runs_its_reduction_on_nvls() -> None:
    import pandas as pd

    from costmodel.presets import cluster
    from costmodel.validation.calibrate import _segments

    rows = pd.DataFrame(
        {
            "level": ["intra"] * 4,
            "op": ["all_reduce"] * 4,
            "nodes": [1] * 4,
            "gpus_per_node": [8] * 4,
            "gpus_per_process": [1] * 4,
            "dtype": ["float", "float", "int8", "int8"],
            "redop": ["sum"] * 4,
            "size_bytes": [2**20, 2**24] * 2,
            "time_s": [1e-4, 1e-3] * 2,
        }
    )
    segments = _segments(rows, cluster("dgx-h100"), [])["intra"]
    assert sorted((s.nvls_off, s.size.tolist()) for _, s in segments) == [
        (False, [2**20, 2**24]),
        (True, [2**20, 2**24]),
    ]


def test_a_larger_card_beside_a_measured_compute_time_predicts_the_cards_own_compute() -> None:
    """The fit advisor's "a larger card" beside a compute time measured on the base's GPU
    prices the card's own predicted compute, as `scenario --vs` refuses to carry a measured
    time to another GPU: it priced a B200 at the H100's measured 430 ms (its step differing
    "by the communication alone"). The updates carry ``compute_time_s`` None, so applying them
    gives the step shown, and the note says so."""
    import costmodel as cm

    s = cm.Scenario(arch="llama-2-7b", cluster="dgx-h100", nodes=8, compute_time_s=0.43)
    advice = s.fit_suggestions()
    cards = [c for c in advice.changes if c.kind == "larger_card"]
    assert cards
    for c in cards:
        assert c.updates["compute_time_s"] is None
        assert c.step.compute_source != "measured"
        assert "its compute predicted on" in c.compute_note(advice.base)
    same = [c for c in advice.changes if c.kind != "larger_card"]
    assert same and all(c.step.compute_source == "measured" for c in same)
