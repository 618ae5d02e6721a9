"""Tests for costmodel.validation.compare with stand-in predictor callables, a real published
log, and the cluster predictor through the real costmodel.predict (06a, 2x8 H100)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from costmodel.ddp import bucket_sizes
from costmodel.validation.compare import (
    cluster_predictor,
    compare,
    compare_cluster,
    exceeds,
    predict_ddp,
    side_by_side,
    size_band,
    summarize,
    write_report,
)
from costmodel.validation.nccl_tests import read_nccl_tests
from tests._paths import NCCL_TESTS as DATA  # noqa: E402


def test_exact_predictor_has_zero_error_on_real_log():
    df = read_nccl_tests(DATA / "13a_waynehacking8_1x4xH100-slice_auto_allreduce.txt")
    truth = dict(zip(zip(df.size_bytes, df.placement, strict=True), df.time_s, strict=True))

    def oracle(op, m, n, nodes, **kw):  # returns the out-of-place measurement itself
        return np.array([truth[(int(x), "out_of_place")] for x in m])

    out = compare(df, oracle)
    oop = out[out.placement == "out_of_place"]
    assert (oop.rel_error.abs() < 1e-12).all()
    # busbw from our factor agrees with what nccl-tests printed (2 decimals)
    big = out[out.size_bytes >= 2**20]
    assert np.allclose(big.measured_busbw_bytes_per_s, big.busbw_bytes_per_s, rtol=2e-3)


def test_errors_sign_bands_and_tolerance():
    rows = pd.DataFrame(
        {
            "op": "all_reduce",
            "size_bytes": [1e3, 1e5, 2e6, 3e8],
            "ranks": 2,
            "time_s": [1e-3, 1e-3, 1e-3, 1e-3],
        }
    )
    out = compare(rows, lambda op, m, n, nodes, **kw: np.full(len(m), 1.3e-3), model="toy")
    # rel_error is the busbw error busbw_pred / busbw_meas - 1 (was the time error,
    # (t_pred - t_meas) / t_meas = 0.3 here, kept as time_rel_error)
    assert out.rel_error.tolist() == pytest.approx([1 / 1.3 - 1] * 4)
    assert out.busbw_rel_error.tolist() == pytest.approx([1 / 1.3 - 1] * 4)
    assert out.time_rel_error.round(6).tolist() == [0.3] * 4
    assert out.abs_log_ratio.tolist() == pytest.approx([math.log(1.3)] * 4)
    assert out.size_band.tolist() == ["< 64 KiB", "64 KiB - 1 MiB", "1 - 16 MiB", ">= 256 MiB"]
    assert len(exceeds(out, 0.2)) == 4 and exceeds(out, 0.25).empty
    table = summarize(out)
    assert table.points.sum() == 4 and table.max_abs_rel_error.max() == pytest.approx(0.3 / 1.3)
    assert table.median_abs_log_ratio.max() == pytest.approx(math.log(1.3))
    with pytest.raises(ValueError, match="tolerance"):
        exceeds(out, 0)


def test_unpredictable_groups_get_a_note_not_a_traceback():
    rows = pd.DataFrame(
        {
            "op": ["all_reduce", "sendrecv"],
            "size_bytes": [1e6, 1e6],
            "ranks": [2, 2],
            "time_s": [1e-3, 1e-3],
        }
    )

    def picky(op, m, n, nodes, **kw):
        if op != "all_reduce":
            raise ValueError(f"op={op!r} is not supported")
        return m / 1e9

    out = compare(rows, picky)
    assert out.rel_error.isna().tolist() == [False, True]
    assert "not supported" in out.note.iloc[1]


def test_passes_measured_algorithm_and_writes_report(tmp_path):
    seen = []
    rows = pd.DataFrame(
        {
            "op": "all_reduce",
            "size_bytes": [1e6, 2e6],
            "ranks": 4,
            "time_s": [1e-3, 2e-3],
            "algo_env": "Ring",
            "proto_env": None,
        }
    )

    def spy(op, m, n, nodes, **kw):
        seen.append(kw)
        return m / 1e9

    out = compare(rows, spy)
    assert seen == [{"algorithm": "Ring"}]
    path = write_report(out, tmp_path / "r" / "report.html")
    html = path.read_text()
    assert "plotly" in html and "1 - 16 MiB" in html


def test_size_band_edges():
    assert size_band([2**16 - 1, 2**16]).tolist() == ["< 64 KiB", "64 KiB - 1 MiB"]


# --- through the real predictor (costmodel.predict) ---------------------------------------------
def test_cluster_models_side_by_side_on_06a(tmp_path):
    # 06a: 2x8 H100 (Dell XE9680, 8x NDR400 per node), NCCL auto; presets/README.md table
    df = read_nccl_tests(DATA / "06a_nccl-tests-309_2x8xH100-XE9680-8xNDR400_allreduce.txt")
    assert (df.nodes == 2).all() and (df.ranks == 16).all()
    long = compare_cluster(df, "dell-xe9680-h100", models=("nccl", "textbook", "lesson"))
    assert list(dict.fromkeys(long.model)) == ["nccl", "textbook", "lesson"]
    assert long.rel_error.notna().all() and long.note.isna().all()  # every row predicted
    wide = side_by_side(long)
    assert len(wide) == len(df)
    big = wide[wide.size_bytes >= 2**28]
    # NCCL-faithful: NVLSTree over 8 NICs per node, about 3% off from 256 MiB up (measured when
    # written: max 4.2%); 10% leaves room for correction refits by the fidelity work
    assert big["rel_error[nccl]"].abs().max() < 0.10
    assert set(big["predicted_algorithm[nccl]"]) == {"nvls_tree"}
    # the lesson's flat ring over one NIC share per GPU is about 9x too slow there (DESIGN 3.2:
    # 390 GB/s busbw measured, not the 50 GB/s of a per-GPU-NIC ring). This model was
    # called "textbook" here; the topology-aware textbook (a ring on all 8 NICs) is 8-22% slow
    # (measured when written), no in-switch reduction in its ring. rel_error is now the
    # busbw error (pred/meas - 1): 9x too slow reads < -80 % (was a time error > 5), 0-30% slow
    # reads -23 %..0 (was 0..0.3)
    assert (big["rel_error[lesson]"] < -0.8).all()
    assert big["rel_error[textbook]"].between(1 / 1.3 - 1, 0.0).all()
    table = summarize(long)
    assert set(table.model) == {"nccl", "textbook", "lesson"}
    html = write_report(long, tmp_path / "r.html").read_text()
    assert "textbook" in html and "nvls_tree" in html


def test_predict_ddp_timeline_and_contention():
    rows = pd.DataFrame(
        {
            "kind": "ddp_step",
            "op": "ddp_step",
            "ranks": 2,
            "nodes": 1,
            "params": 8 * 256 * 257,
            "layers": 8,
            "width": 256,
            "gradient_bytes": 4 * 8 * 256 * 257,
            "bucket_cap_mb": 0.25,
            "accumulation": [1, 2],
            "no_sync": [False, True],
            "time_s": [0.02, 0.03],
            "compute_time_s": [0.01, 0.02],
            "backend": ["gloo", "nccl"],
        }
    )

    def predictor(op, m, n, nodes, **kw):  # 1 ms + 1 GB/s per bucket
        assert op == "all_reduce" and n == 2
        return 1e-3 + np.asarray(m) / 1e9

    out = predict_ddp(rows, predictor)
    assert out.note.isna().all()
    assert out.predicted_compute_s.tolist() == pytest.approx([0.01, 0.02])
    # the MLP's tensors in registration order (weight, bias per layer), float32, bucketed as
    # PyTorch does with an explicit bucket_cap_mb (torch_bench passes one): the first bucket is
    # capped at 0.25 MiB too (was 1 MiB, torch's cap only for bucket_cap_mb=None)
    tensors = np.array([256 * 256, 256] * 8, dtype=float) * 4
    buckets = bucket_sizes(tensors, 0.25 * 2**20, 0.25 * 2**20)
    assert len(buckets) >= 3
    assert out.predicted_comm_s[0] == pytest.approx(np.sum(1e-3 + buckets / 1e9))
    comm = [
        sum(iv["end_s"] - iv["start_s"] for iv in tl if iv["kind"] == "allreduce")
        for tl in out.timeline
    ]
    assert comm == pytest.approx(out.predicted_comm_s.tolist())
    # gloo: no overlap (backward stalls while buckets reduce) -> compute + comm
    assert out.predicted_step_s[0] == pytest.approx(0.01 + out.predicted_comm_s[0])
    # nccl: overlapped, shorter than serial
    assert out.predicted_step_s[1] < 0.02 + out.predicted_comm_s[1]
    assert out.step_time_rel_error.tolist() == pytest.approx(
        ((out.predicted_step_s - out.time_s) / out.time_s).tolist()
    )
    with pytest.raises(ValueError, match="compute_time_s"):
        predict_ddp(rows.drop(columns="compute_time_s"), predictor)


def test_launch_floor_follows_the_logs_gpus_per_thread():
    """13a ran `all_reduce_perf -g 4`: one thread drives 4 GPUs, so its small-message floor is
    higher than 4 processes' would be (the fitted launch-floor term grows per GPU a thread drives).
    The parser reads nGpus from the header and compare passes it on; ignoring it predicts the
    < 64 KiB rows about 2x too fast (median |error| ~57%)."""
    df = read_nccl_tests(DATA / "13a_waynehacking8_1x4xH100-slice_auto_allreduce.txt")
    df = df[df.placement == "out_of_place"]
    assert set(df.gpus_per_process) == {4}
    small = df[df.size_bytes < 64 * 1024]
    with_g = compare(small, cluster_predictor("dgx-h100"))
    without = compare(small.drop(columns="gpus_per_process"), cluster_predictor("dgx-h100"))
    assert with_g.rel_error.abs().median() < 0.25  # 12% measured; fidelity table: 16%
    assert without.rel_error.abs().median() > 2 * with_g.rel_error.abs().median()


def test_log_without_node_count_fills_the_presets_nodes():
    # 02 is 16 nodes x 8 A100 but prints no per-rank device lines, so nodes is unknown; it was
    # taken as 1 node of 128 GPUs, which predict_collective refuses on an 8-GPU-per-node preset
    # (every row "could not be predicted": the Validate page's default reference run).
    df = read_nccl_tests(DATA / "02_coreweave-16x8xA100-IB_allreduce.txt")
    assert df["nodes"].isna().all() and (df["ranks"] == 128).all()
    out = compare(df, cluster_predictor("dgx-a100"))
    assert (out["nodes"] == 16).all()  # 128 ranks / 8 GPUs per node
    assert out["rel_error"].notna().all(), out["note"].dropna().unique()[:3]
    # a stated node count is kept (06a says 2 nodes), and a plain callable still defaults to 1
    stated = read_nccl_tests(DATA / "06a_nccl-tests-309_2x8xH100-XE9680-8xNDR400_allreduce.txt")
    assert (compare(stated, cluster_predictor("dgx-h100"))["nodes"] == 2).all()
    seen = []
    compare(df, lambda op, m, n, nodes, **kw: seen.append(nodes) or np.ones_like(m))
    assert seen == [1]


def test_busbw_error_is_uncapped_where_the_time_error_saturates():
    """350 GB/s predicted against 45 measured read as -87 % (time error, capped at
    -100 %); the busbw error says +678 % and |ln ratio| 2.05."""
    rows = pd.DataFrame({"op": ["all_reduce"], "size_bytes": [1e9], "ranks": [16], "time_s": [1.0]})
    factor = 2 * 15 / 16
    t_pred = 1e9 * factor / 350e9  # predicted time for 350 GB/s busbw
    rows["time_s"] = 1e9 * factor / 45e9
    out = compare(rows, lambda op, m, n, nodes, **kw: np.full(len(m), t_pred))
    assert out.rel_error.iloc[0] == pytest.approx(350 / 45 - 1)
    assert out.abs_log_ratio.iloc[0] == pytest.approx(math.log(350 / 45))
    assert out.time_rel_error.iloc[0] == pytest.approx(45 / 350 - 1)


def test_preset_detected_from_the_log_and_mismatch_warned():
    from costmodel.validation.compare import detect_cluster, preset_mismatch
    from costmodel.validation.nccl_tests import read_nccl_tests
    from tests._paths import NCCL_TESTS

    a100 = read_nccl_tests(NCCL_TESTS / "02_coreweave-16x8xA100-IB_allreduce.txt")
    assert "A100" in preset_mismatch(a100, "dgx-h100")
    assert detect_cluster(a100, "02_coreweave-16x8xA100-IB_allreduce.txt") == "coreweave-hgx-a100"
    assert preset_mismatch(a100, "coreweave-hgx-a100") is None
    h100 = read_nccl_tests(NCCL_TESTS / "06a_nccl-tests-309_2x8xH100-XE9680-8xNDR400_allreduce.txt")
    assert preset_mismatch(h100, "dgx-h100") is None
    assert "8 GPUs per node" in preset_mismatch(h100, "pcie3-2x-rtx2080ti-nop2p")


def test_fidelity_goal_passes_the_showcase_run_and_fails_the_textbook():
    from costmodel.validation.compare import cluster_predictor, fidelity_check
    from costmodel.validation.nccl_tests import read_nccl_tests
    from tests._paths import NCCL_TESTS

    log = read_nccl_tests(NCCL_TESTS / "06a_nccl-tests-309_2x8xH100-XE9680-8xNDR400_allreduce.txt")
    full = compare(log, cluster_predictor("dell-xe9680-h100"))
    assert fidelity_check(full)[0]
    textbook = compare(log, cluster_predictor("dell-xe9680-h100", model="textbook"))
    passed, lines = fidelity_check(textbook)
    assert not passed and "goal 8%" in lines[0]


def test_first_bucket_follows_torch():
    from costmodel.validation.compare import torch_first_bucket_bytes

    assert torch_first_bucket_bytes(None) == 2**20  # dist._DEFAULT_FIRST_BUCKET_BYTES
    assert torch_first_bucket_bytes(25) == 25 * 2**20  # explicit cap: the first bucket too
    assert torch_first_bucket_bytes(0.5) == 2**19
    with pytest.raises(ValueError, match="bucket_cap_mb"):
        torch_first_bucket_bytes(0)


def test_rows_of_one_rank_are_refused_naming_ranks():
    """One rank communicates nothing (busbw = algbw x 0): comparing it gave infinite errors
    and a NaN predicted peak on the Validate page; it is refused with the rule instead."""
    rows = pd.DataFrame(
        {"op": "all_reduce", "size_bytes": [1e6, 1e8], "ranks": 1, "time_s": [1e-4, 1e-3]}
    )
    toy = lambda op, m, n, nodes, **kw: np.full(len(m), 1e-3)  # noqa: E731
    with pytest.raises(ValueError, match=r"^ranks: .*allowed: 2 ranks or more"):
        compare(rows, toy, model="toy")
    two = compare(rows.assign(ranks=2), toy, model="toy")
    assert np.isfinite(two.rel_error).all()
