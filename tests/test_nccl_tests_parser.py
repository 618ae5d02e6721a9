"""Tests for costmodel.validation.nccl_tests: every published log bundled in
costmodel/data/reference parses, with the row counts read off the files, and the synthetic format
fixtures in tests/data exercise the layouts no published log shows (-C, -I, -c 0, JSON, split rows, several runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from costmodel.validation.nccl_tests import (
    NcclTestsParseError,
    parse_busbw_table,
    parse_nccl_tests,
    read_busbw_table,
    read_nccl_tests,
)
from tests._paths import NCCL_TESTS as DATA  # noqa: E402

FIXTURES = Path(__file__).parent / "data"

# Result rows per file, counted by reading each file (lines "<size> <count> float ..."; in 13f a
# row is split over three physical lines and counted once). The frame has 2 rows per result row
# (out-of-place and in-place).
ROWS = {
    "02_coreweave-16x8xA100-IB_allreduce.txt": 30,
    "03_coreweave-8x8xH100-NDR-SHARP-collnet_allreduce.txt": 5,
    "04a_coreweave-GB200-NVL72-1rack-72gpu_allreduce.txt": 5,
    "04b_coreweave-GB200-NVL72-2rack-144gpu_allreduce.txt": 6,
    "04c_coreweave-GB200-NVL72-20rack-1440gpu_allreduce.txt": 6,
    "06a_nccl-tests-309_2x8xH100-XE9680-8xNDR400_allreduce.txt": 32,
    "09a_autodl-1x2x2080Ti-PCIe3-noP2P_allreduce.txt": 28,
    "09b_autodl-1x2x2080Ti-PCIe3-noP2P_allgather.txt": 28,
    "09c_autodl-1x2x2080Ti-PCIe3-noP2P_broadcast.txt": 28,
    "09d_autodl-1x2x2080Ti-PCIe3-noP2P_reduce.txt": 28,
    "09e_autodl-1x2x2080Ti-PCIe3-noP2P_alltoall.txt": 28,
    "12a_blog-thanos_1x8xA100-SXM4-80GB_allreduce_g8.txt": 30,
    "13a_waynehacking8_1x4xH100-slice_auto_allreduce.txt": 31,
    "13b_waynehacking8_1x4xH100-slice_auto_allgather.txt": 31,
    "13c_waynehacking8_1x4xH100-slice_auto_reducescatter.txt": 31,
    "13d_waynehacking8_1x4xH100-slice_algo-proto-pinned_allreduce.txt": 12,
    "13e_waynehacking8_1x2-4-6xH100_GPUcount-scaling_allreduce.txt": 18,
    "13f_waynehacking8_1x2-4-6xH100_auto-vs-Ring-vs-NVLS_allreduce_rawlog-extract.txt": 54,
    "15_cscs-alps-GH200-4perNode-Slingshot11_allreduce_1-to-512nodes.txt": 300,
    "16a_aws-2x-p4de-8xA100-EFA400G_allreduce.txt": 29,
    "16b_aws-2x-p5-8xH100-EFA3200G_allreduce.txt": 32,
    "16c_aws-2x-p5-EKS-NCCL2.18.5_allreduce_partial.txt": 7,
    "20_gcp-a3high-2x8xH100-TCPX-4x200G_allreduce.txt": 14,
    "22_k8s-mpi-operator_2x8xH100-8xNDR400_ring_allreduce.txt": 5,
    "23a_spectrumx-2x8xH200-8x400G-RoCE_allreduce.txt": 25,
    "23b_spectrumx-2x8xH200-8x400G-RoCE_allreduce_dtypes.txt": 36,  # 12 dtypes x 3 sizes
    "24a_vultr-1x8xB200-NVLink5_allreduce.txt": 32,
    "24b_vultr-1x8xB200-NVLink5_allgather.txt": 32,
    "24c_vultr-1x8xB200-NVLink5_reducescatter.txt": 32,
    "24d_vultr-1x8xB200-NVLink5_alltoall.txt": 32,
    "25a_alcf-polaris-2x4xA100-Slingshot11-awsofi_allreduce.txt": 29,
    "25b_alcf-polaris-8x4xA100-Slingshot11-awsofi_allreduce.txt": 29,
    "25c_alcf-polaris-8x4xA100-Slingshot11-awsofi_allgather.txt": 29,
    "25d_alcf-polaris-8x4xA100-Slingshot11-awsofi_alltoall.txt": 29,
    "25e_alcf-polaris-8x4xA100-Slingshot11-default-socket_allreduce.txt": 29,
}

# Busbw-only markdown tables (in-place busbw per rounded size label, no times): table rows per
# file, counted by reading each file (1K ... 8G, 24 labels), with (ranks, peak busbw GB/s at 8G)
# as its header and last row state them.
BUSBW_ROWS = {
    "21a_azure-NDH100v5-1x8xH100_allreduce_busbw-only.txt": (24, 8, 478.87),
    "21b_azure-NDH200v5-1x8xH200_allreduce_busbw-only.txt": (24, 8, 479.98),
    "21c_azure-NDA100v4-1x8xA100_allreduce_busbw-only.txt": (24, 8, 231.58),
    "21d_azure-NDGB200v6-1x4xGB200_allreduce_busbw-only.txt": (24, 4, 679.61),
}


# Bundled files that are neither nccl-tests logs nor busbw-only tables (a PyTorch-timed markdown
# write-up, two headline numbers): both readers refuse them (reference/README.md).
NOT_LOGS = (
    "26_rtxpro6000-1x8-PCIe5-switch-P2P_torch-ring-allreduce.txt",
    "27_lixueduan-GB200-NVL72-2x4-MNNVL-vs-IB_allreduce_points.txt",
)


def test_every_data_file_is_listed():
    assert sorted(p.name for p in DATA.glob("*.txt") if p.name != "README.md") == sorted(
        {**ROWS, **BUSBW_ROWS, **dict.fromkeys(NOT_LOGS)}
    )


@pytest.mark.parametrize("name", NOT_LOGS)
def test_files_that_are_not_logs_are_refused_by_both_readers(name):
    with pytest.raises(NcclTestsParseError, match="no nccl-tests result rows"):
        read_nccl_tests(DATA / name)
    with pytest.raises(NcclTestsParseError, match="no busbw table rows"):
        read_busbw_table(DATA / name)


@pytest.mark.parametrize("name", sorted(BUSBW_ROWS))
def test_busbw_only_tables(name):
    rows, ranks, peak = BUSBW_ROWS[name]
    df = read_busbw_table(DATA / name)
    assert len(df) == rows
    assert (df.op == "all_reduce").all() and (df.ranks == ranks).all()
    assert (df.placement == "in_place").all()
    # the rounded labels decode to the -f 2 sweep 1 KiB ... 8 GiB, one power of two per row
    assert df.size_bytes.tolist() == [2**k for k in range(10, 34)]
    assert df.busbw_bytes_per_s.iloc[-1] == pytest.approx(peak * 1e9)
    assert df.busbw_bytes_per_s.max() == pytest.approx(peak * 1e9)
    # the nccl-tests parser refuses them, and says which reader to use
    with pytest.raises(NcclTestsParseError, match="read_busbw_table"):
        read_nccl_tests(DATA / name)


@pytest.mark.parametrize(
    ("label", "size"),
    [("| 65K | 1.0 |", 65536), ("| 132K | 1.0 |", 131072), ("| 536M | 1.0 |", 2**29)],
)
def test_busbw_labels_decode_to_powers_of_two(label, size):
    df = parse_busbw_table(f"{label}\n{label}\n", op="all_reduce")
    assert df.size_bytes.tolist() == [size, size]


@pytest.mark.parametrize("label", ["| 48K | 1.0 |", "| 0K | 1.0 |"])
def test_busbw_label_far_from_a_power_of_two_is_refused(label):
    with pytest.raises(NcclTestsParseError, match="size label"):
        parse_busbw_table(label, op="all_reduce")


@pytest.mark.parametrize("name", sorted(ROWS))
def test_data_file_row_count_and_units(name):
    df = read_nccl_tests(DATA / name)
    assert len(df) == 2 * ROWS[name]
    assert set(df.placement) == {"out_of_place", "in_place"}
    # SI units: algbw = size / time holds to the 2-decimal rounding nccl-tests prints (0.005 GB/s
    # absolute, or 0.1% relative for times printed with 4-5 significant digits).
    big = df[df.algbw_bytes_per_s > 1e9]
    implied = big.size_bytes / big.time_s
    assert ((implied - big.algbw_bytes_per_s).abs() <= 0.006e9 + 2e-3 * implied).all()
    assert (df.op != "unknown").all()
    # the collector's header names the source: "# SOURCE:" (read into meta) in the older files,
    # "# source:" in the runs 20-24 (the meta block reads capitalised keys only, so check the text)
    if name[:2] < "20" or name[:2] >= "25":
        assert df.attrs["meta"]["SOURCE"]
    else:
        assert (DATA / name).read_text().startswith("# source: ")


def test_ops_ranks_nodes_from_headers():
    facts = {
        "09b_autodl-1x2x2080Ti-PCIe3-noP2P_allgather.txt": ("all_gather", 2, 1),
        "09c_autodl-1x2x2080Ti-PCIe3-noP2P_broadcast.txt": ("broadcast", 2, 1),
        "09e_autodl-1x2x2080Ti-PCIe3-noP2P_alltoall.txt": ("all_to_all", 2, 1),
        "13c_waynehacking8_1x4xH100-slice_auto_reducescatter.txt": ("reduce_scatter", 4, 1),
        "06a_nccl-tests-309_2x8xH100-XE9680-8xNDR400_allreduce.txt": ("all_reduce", 16, 2),
    }
    for name, (op, ranks, nodes) in facts.items():
        df = read_nccl_tests(DATA / name)
        assert (df.op == op).all(), name
        assert (df.ranks == ranks).all(), name
        assert (df.nodes == nodes).all(), name


def test_versions_and_root_columns():
    df = read_nccl_tests(DATA / "13a_waynehacking8_1x4xH100-slice_auto_allreduce.txt")
    assert set(df.nccl_version) == {"2.29.2"}  # nccl-library=22902
    assert set(df.nccl_tests_version) == {"2.18.3"}
    assert set(df.root) == {-1}
    df = read_nccl_tests(DATA / "06a_nccl-tests-309_2x8xH100-XE9680-8xNDR400_allreduce.txt")
    assert set(df.nccl_version) == {"2.26.2"}  # plain "NCCL version 2.26.2+cuda12.8" line
    old = read_nccl_tests(DATA / "02_coreweave-16x8xA100-IB_allreduce.txt")
    assert old.root.isna().all() and old.wrong.isna().all()  # v2.9 era: no root, "error" column
    assert old.max_error.max() == pytest.approx(2e-6)


def test_first_and_last_values_converted():
    df = read_nccl_tests(DATA / "06a_nccl-tests-309_2x8xH100-XE9680-8xNDR400_allreduce.txt")
    last = df.iloc[-2]  # 17179869184 B, out-of-place: 68652 us, 250.24 GB/s, 469.21 GB/s
    assert last.size_bytes == 17179869184
    assert last.time_s == pytest.approx(68652e-6, rel=1e-12)
    assert last.busbw_bytes_per_s == pytest.approx(469.21e9, rel=1e-12)
    assert last.line == 82  # grep -n: the 16 GiB row is line 82


def test_rank_count_sources():
    ranks = {}
    for name in (
        "02_coreweave-16x8xA100-IB_allreduce.txt",
        "03_coreweave-8x8xH100-NDR-SHARP-collnet_allreduce.txt",
        "04a_coreweave-GB200-NVL72-1rack-72gpu_allreduce.txt",
        "16a_aws-2x-p4de-8xA100-EFA400G_allreduce.txt",
    ):
        df = read_nccl_tests(DATA / name)
        ranks[name[:3]] = (int(df.ranks.iloc[0]), df.ranks_source.iloc[0])
    assert ranks["02_"] == (128, "launch line")  # device list elided, mpirun -np 128
    assert ranks["03_"] == (96, "busbw/algbw")  # the collector's check: 2(n-1)/n = 1.9792
    assert ranks["04a"] == (72, "devices (highest rank)")  # only "Rank 71" shown
    assert ranks["16a"] == (16, "busbw/algbw")  # no device list at all


def test_multi_run_srun_and_out_of_bounds_failed():
    df = read_nccl_tests(
        DATA / "15_cscs-alps-GH200-4perNode-Slingshot11_allreduce_1-to-512nodes.txt"
    )
    per_run = df.groupby("run").agg(
        ranks=("ranks", "first"),
        nodes=("nodes", "first"),
        flagged=("flagged", "all"),
        n=("size_bytes", "size"),
    )
    assert per_run.ranks.tolist() == [4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048]
    assert (per_run.nodes * 4 == per_run.ranks).all()
    # header: 8, 16, 256, 512 nodes = "Out of bounds values: N FAILED" -> every row kept, flagged
    assert per_run.flagged.tolist() == [
        False,
        False,
        False,
        True,
        True,
        False,
        False,
        False,
        True,
        True,
    ]
    assert (per_run.n == 60).all()
    assert df[df.flagged].flag_reason.str.contains("FAILED").all()


def test_split_rows_with_debug_text_13f():
    df = read_nccl_tests(
        DATA / "13f_waynehacking8_1x2-4-6xH100_auto-vs-Ring-vs-NVLS_allreduce_rawlog-extract.txt"
    )
    assert df.run.nunique() == 9
    first = df.iloc[0]  # '268435456 67108864 float sum -1' + debug, '893.63 300.39 300.39 0'
    assert (first.size_bytes, first.root, first.wrong) == (268435456, -1, 0)
    assert first.time_s == pytest.approx(893.63e-6)
    assert df.iloc[1].time_s == pytest.approx(896.61e-6)
    labels = df.groupby("run").run_label.first().tolist()
    algos = df.groupby("run").nccl_algo.first().tolist()
    assert labels[2].endswith("g2_NVLS.log") and algos[2] == "NVLS"
    assert labels[6].endswith("g6_auto.log") and algos[6] == "NVLS"  # author: auto = NVLS at 6
    assert algos[3] == "RING"


def test_markers_set_env_and_ranks():
    df = read_nccl_tests(DATA / "13d_waynehacking8_1x4xH100-slice_algo-proto-pinned_allreduce.txt")
    runs = df.groupby("run").agg(algo=("algo_env", "first"), proto=("proto_env", "first"))
    assert runs.algo.tolist()[:9] == ["Ring"] * 3 + ["Tree"] * 3 + ["NVLS"] * 3
    assert runs.proto.tolist()[9:] == ["Simple", "LL", "LL128"]
    assert runs.algo.iloc[9:].isna().all()  # the empty CollnetChain markers do not leak
    assert (df.ranks == 4).all()
    scaling = read_nccl_tests(
        DATA / "13e_waynehacking8_1x2-4-6xH100_GPUcount-scaling_allreduce.txt"
    )
    assert scaling.groupby("run").ranks.first().tolist() == [2, 4, 6]


def test_meta_env_from_command_line():
    df = read_nccl_tests(DATA / "03_coreweave-8x8xH100-NDR-SHARP-collnet_allreduce.txt")
    assert set(df.algo_env) == {"COLLNETCHAIN"}
    assert "H100" in df.attrs["meta"]["HARDWARE"]


def test_mpirun_tag_output_and_elided_rows():
    df = read_nccl_tests(DATA / "16c_aws-2x-p5-EKS-NCCL2.18.5_allreduce_partial.txt")
    assert df.size_bytes.iloc[0] == 0 and df.size_bytes.iloc[-1] == 2147483648


def test_synthetic_cputime_per_iteration_and_failed():
    df = read_nccl_tests(FIXTURES / "nccl_tests_synthetic_cputime_iter.txt")
    assert len(df) == 6 and set(df.timer) == {"cpu"}
    assert df.iter_p99_s.iloc[0] == pytest.approx(22e-6)
    assert df.iter_cv_pct.iloc[0] == pytest.approx(2.5)
    assert df.wrong.tolist() == [0, 0, 0, 0, 3, 0]
    assert df.flagged.all()  # the footer says FAILED
    assert "#wrong=3" in df.flag_reason.iloc[4]
    assert (df.ranks == 4).all() and (df.nodes == 2).all() and (df.gpus_per_node == 2).all()
    assert df.attrs["runs"][0]["avg_busbw_bytes_per_s"] == pytest.approx(12.3456e9)


def test_synthetic_srun_debug_two_runs():
    df = read_nccl_tests(FIXTURES / "nccl_tests_synthetic_srun_debug_multirun.txt")
    assert df.groupby("run").op.first().tolist() == ["all_gather", "broadcast"]
    assert df.wrong.isna().all()  # -c 0 prints N/A
    assert not df.flagged.any()
    assert df.proto_env.iloc[0] == "Simple"  # "NCCL_PROTO set by environment to Simple"
    row = df[(df.size_bytes == 1048576) & (df.placement == "in_place")].iloc[0]
    assert row.time_s == pytest.approx(104.86e-6) and row.nccl_algo == "RING"
    assert df[df.op == "broadcast"].root.tolist() == [0, 0]


def test_synthetic_json():
    df = read_nccl_tests(FIXTURES / "nccl_tests_synthetic_v3.json")
    assert len(df) == 4 and set(df.op) == {"reduce_scatter"}
    assert df.flagged.tolist() == [False, False, False, True]
    assert (df.ranks == 2).all() and set(df.algo_env) == {"Ring"}
    assert df.nccl_version.iloc[0] == "2.28.7"
    assert df.busbw_bytes_per_s.iloc[2] == pytest.approx(5e9)


def test_explicit_op_and_old_format_inline():
    text = (
        "#       size         count      type   redop     time   algbw   busbw  error     time"
        "   algbw   busbw  error\n"
        "        1024           256     float     sum    73.64    0.01    0.03  1e-06    72.76"
        "    0.01    0.03  1e-06\n"
    )
    df = parse_nccl_tests(text, op="all_reduce")
    assert df.op.tolist() == ["all_reduce"] * 2
    with pytest.raises(
        ValueError,
        match="op: 'allreduce' is not an nccl-tests op; allowed: all_gather, all_reduce, ",
    ):
        parse_nccl_tests(text, op="allreduce")


@pytest.mark.parametrize(
    ("text", "line", "match"),
    [
        ("", 0, "empty"),
        ("hello\nworld\n", 0, "no nccl-tests result rows"),
        (
            "#       size         count      type   redop    root     time   algbw   busbw  #wrong"
            "     time   algbw   busbw  #wrong\n"
            "        1024           256     float     sum      -1    10.0    0.10    0.15       0\n"
            "# Out of bounds values : 0 OK\n",
            2,
            "has 9 fields, expected 13",
        ),
        (
            "        1024           256     float     sum      -1    10.0    0.10    abc       0"
            "    10.0    0.10    0.15       0\n",
            1,
            "not a number",
        ),
        ('{"results": [{"count": 1}]}', 0, "no 'size'"),
        ('{"results": [', 1, "invalid JSON"),
    ],
)
def test_malformed_input_names_the_line(text, line, match):
    with pytest.raises(NcclTestsParseError, match=match) as info:
        parse_nccl_tests(text, source="bad.log")
    assert info.value.line == line
    assert "bad.log" in str(info.value)


def test_truncated_log_keeps_complete_rows_strict_or_not():
    """A row the end of the file cuts off is skipped and said, strict or not (the CLI refused
    the file while the Validate page read it); the same row inside the log is an error."""
    good = (DATA / "09a_autodl-1x2x2080Ti-PCIe3-noP2P_allreduce.txt").read_text()
    cut = (
        good[: good.index("   16777216")]
        + "   16777216       4194304     float     sum      -1  42"
    )
    for strict in (True, False):
        df = parse_nccl_tests(cut, strict=strict)
        assert len(df) == 2 * 21  # 2**3 .. 2**23 B complete, the cut 16 MiB row dropped
        assert df.attrs["cut_row"]["line"] == cut.count("\n") + 1
        assert df.attrs["problems"] == []
    with pytest.raises(NcclTestsParseError, match="line"):
        parse_nccl_tests(cut + "\n# Out of bounds values : 0 OK\n")


def test_missing_file_is_a_parse_error(tmp_path):
    with pytest.raises(NcclTestsParseError, match="cannot read"):
        read_nccl_tests(tmp_path / "nope.log")


# ---------------------------------------------------------------------------- strictness
_HEADER = (
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong"
    "     time   algbw   busbw  #wrong\n"
)


def _row(size: int) -> str:
    # algbw = size / time (10 us), busbw = 1.5 algbw (4 ranks): nccl-tests' identities hold
    a, b = f"{size / 1e4:.2f}", f"{1.5 * size / 1e4:.2f}"
    return f"  {size:>10}  {size // 4:>10}  float  sum  -1  10.0  {a}  {b}  0  10.0  {a}  {b}  0\n"


_FOOTER = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.15\n"


def _messages(df) -> list[tuple[int, str]]:
    return [(w["line"], w["message"]) for w in df.attrs["warnings"]]


def test_clean_synthetic_log_has_no_warnings():
    df = parse_nccl_tests(_HEADER + _row(1024) + _row(2048) + _FOOTER, op="all_reduce")
    assert len(df) == 4 and _messages(df) == []


def test_duplicated_header_is_reported_with_its_line():
    text = _HEADER + _row(1024) + _HEADER + _row(2048) + _FOOTER
    df = parse_nccl_tests(text, op="all_reduce")
    assert len(df) == 4
    assert any(line == 3 and "header repeated" in msg for line, msg in _messages(df))


def test_duplicate_and_out_of_order_rows_are_reported_with_their_lines():
    text = _HEADER + _row(1024) + _row(4096) + _row(2048) + _row(4096) + _FOOTER
    messages = _messages(parse_nccl_tests(text, op="all_reduce"))
    assert any(line == 4 and "out of order" in msg for line, msg in messages)
    assert any(line == 5 and "duplicate row" in msg and "line 3" in msg for line, msg in messages)


def test_missing_footer_and_missing_step_are_reported():
    text = "# nThread 1 nGpus 2 minBytes 1024 maxBytes 8192 step: 2(factor)\n" + _HEADER
    df = parse_nccl_tests(text + _row(1024) + _row(8192), op="all_reduce")
    messages = _messages(df)
    assert any(line == 4 and "rows are missing" in msg for line, msg in messages)
    assert any("footer" in msg for _, msg in messages)


def test_cut_off_row_names_its_line():
    text = _HEADER + _row(1024) + "     2048\n" + _FOOTER
    with pytest.raises(NcclTestsParseError, match="cut-off") as info:
        parse_nccl_tests(text, op="all_reduce")
    assert info.value.line == 3


def test_huge_log_of_duplicates_is_summarised():
    text = _HEADER + _row(1024) * 5000 + _FOOTER
    messages = _messages(parse_nccl_tests(text, op="all_reduce"))
    assert any("4999 duplicate rows" in msg for _, msg in messages)
    assert len(messages) <= 25  # listed one by one up to a cap, then counted


def test_bom_is_ignored_and_bad_bytes_are_named(tmp_path):
    from costmodel.validation.nccl_tests import decode_log

    text = _HEADER + _row(1024) + _FOOTER
    plain = parse_nccl_tests(text, op="all_reduce")
    path = tmp_path / "bom.log"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert read_nccl_tests(path, op="all_reduce").time_s.tolist() == plain.time_s.tolist()
    assert len(parse_nccl_tests("\ufeff" + text, op="all_reduce")) == 2
    # a byte that is not UTF-8 in a result row is refused naming it (one outside the rows is
    # read replaced, with a warning: tests/test_validate_qa12.py)
    with pytest.raises(NcclTestsParseError, match=r"not UTF-8.*0xff at offset 3"):
        decode_log(b"  1\xff24  256  float  sum  -1  5.0  0.2  0.4  0  5.0  0.2  0.4  0")
    path.write_bytes(text.encode("utf-16"))  # UTF-16 with its BOM (PowerShell 5): decoded
    assert read_nccl_tests(path, op="all_reduce").time_s.tolist() == plain.time_s.tolist()
    path.write_bytes(text.replace("float", "flo\xe9t").encode("latin-1"))
    with pytest.raises(NcclTestsParseError, match="not UTF-8"):
        read_nccl_tests(path)


def test_long_line_is_refused_fast():
    """A 1 MB line without spaces hung the app for > 15 min; the bound here is a hang
    guard, the speed itself is measured in benchmarks/."""
    import subprocess
    import sys

    code = (
        "from costmodel.validation.nccl_tests import parse_nccl_tests as p\n"
        "for s in ('a' * 2**20, ('x:' * 9000 + '\\n') * 60, ('1 2 ' * 4000 + '\\n') * 60):\n"
        "    try: p(s)\n"
        "    except ValueError as e: print(str(e)[:90])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert "limit is 16,384" in out.stdout


@pytest.mark.parametrize(
    "doc",
    [
        "[]",
        '{"results": 5}',
        '{"results": [{"size": "x", "out_of_place": {"time": 1}}]}',
        '{"results": [{"size": 8, "out_of_place": [1, 2]}]}',
        '{"results": [{"size": 8, "out_of_place": {"time": "fast"}}]}',
        '{"results": [], "devices": "gpu0"}',
        '{"results": [{"size": 8, "out_of_place": {"time": 1}}], "devices": [1, 2]}',
        '{"results": [{"size": 1e999, "out_of_place": {"time": 1}}]}',
        '{"results": [{"size": 8, "out_of_place": {"time": 1}, "out_of_place_per_iter": 3}]}',
        '{"results": [{"size": 8, "out_of_place": {"time": 1}}], "out_of_bounds": [1]}',
        "[" * 100000,
    ],
)
def test_malformed_json_of_any_shape_is_a_clear_error(doc):
    with pytest.raises(NcclTestsParseError, match="JSON"):
        parse_nccl_tests(doc, source="bad.json")


def test_a_device_list_cut_to_rank_0_does_not_make_a_one_rank_run():
    """23a (Spectrum-X, 2 x 8 H200) keeps rank 0's device line only (the curator omitted the
    other 15 in a note the parser does not read): the list looked complete, so the run read as
    1 rank on 1 node, whose busbw factor is 0 (the Validate page showed "inf %" and "nan B/s").
    busbw/algbw = 1.875 on every row says 16 ranks: that wins, nodes and GPUs per node unknown."""
    from costmodel.validation.logread import read_log

    name = "23a_spectrumx-2x8xH200-8x400G-RoCE_allreduce.txt"
    df = parse_nccl_tests((DATA / name).read_text(), source=name)
    assert set(df["ranks"]) == {16}
    assert df["nodes"].isna().all() and df["gpus_per_node"].isna().all()
    r = read_log((DATA / name).read_bytes(), name)
    assert set(r.rows["nodes"]) == {2}  # 16 ranks / the detected preset's 8 GPUs per node
    # a complete device list still decides: one node of two GPUs stays 1 x 2
    two = "\n".join(
        [
            "# nThread 1 nGpus 2 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20",
            "#  Rank  0 Group  0 Pid  1 on host1 device  0 [0x1b] NVIDIA H100",
            "#  Rank  1 Group  0 Pid  1 on host1 device  1 [0x1c] NVIDIA H100",
            "#       size         count      type   redop    root     time   algbw   busbw "
            "#wrong     time   algbw   busbw #wrong",
            "     1048576        262144     float     sum      -1    10.00  104.86  104.86"
            "      0    10.00  104.86  104.86      0",
        ]
    )
    got = parse_nccl_tests(two, source="all_reduce_two.txt", op="all_reduce")
    assert set(got["ranks"]) == {2} and set(got["nodes"]) == {1}
