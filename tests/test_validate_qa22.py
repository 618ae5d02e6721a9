"""nccl-tests output formats of current releases (2.17.6-2.19.6) that the log reader must read:
``-S 1`` timestamps after each row, and the ``-J`` file's real layout (the device list inside
``config``, ``version`` the file format's), ``-N`` cycles and the ``# error:`` line after a run.
Read through the library parse function and ``costmodel validate compare FILE``.

Every log and JSON document here is a FORMAT FIXTURE, not a measurement: the numbers are
invented (self-consistent: algbw = size / time); the layout is the one nccl-tests' own printf
and JSON writers give (src/util.cu at v2.19.6: writeResultHeader, writeBenchmarkLinePreamble,
writeBenchmarkLineBody, writePerIterReport, writeTimestamp, writeDeviceReport, jsonOutputInit).
"""

from __future__ import annotations

import json
import math

import pytest

from costmodel.validation.nccl_tests import parse_nccl_tests, read_nccl_tests
from tests._cli import one_line_error, run

# nccl-tests -S 1 (--report_timestamps): "timestamp" closes the column header, strftime's
# format its units line, and each row ends in "%21s" of "%Y-%m-%d %H:%M:%S" (two fields)
TIMESTAMPED = (
    "# nccl-tests version 2.19.6 nccl-headers=22807 nccl-library=22807\n"
    "# Collective test starting: all_reduce_perf\n"
    "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 4194304 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0\n"
    "#\n"
    "# Using devices\n"
    "#  Rank  0 Group  0 Pid   1000 on     node01 device  0 [0000:01:00] SYNTHETIC GPU\n"
    "#  Rank  1 Group  0 Pid   1001 on     node01 device  1 [0000:02:00] SYNTHETIC GPU\n"
    "#\n"
    "#                                                              out-of-place                       in-place          \n"
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong           timestamp\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)           %Y-%m-%d %H:%M:%S\n"
    "     1048576        262144     float     sum      -1   100.00   10.49   10.49       0   101.00   10.38   10.38       0  2026-12-05 02:00:13\n"
    "     2097152        524288     float     sum      -1   100.00   20.97   20.97       0   101.00   20.76   20.76       0  2026-12-05 02:00:13\n"
    "# Out of bounds values : 0 OK\n"
    "# Avg bus bandwidth    : 15.65 \n"
    "#\n"
    "# Collective test concluded: all_reduce_perf\n"
)

# -S 1 with -I 1 (per-iteration columns): the timestamp follows the in-place i_cv% column
TIMESTAMPED_PER_ITER = (
    "#                                                                 out-of-place (+ per-iteration)                                in-place (+ per-iteration)\n"
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%           timestamp\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%)     (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%)   %Y-%m-%d %H:%M:%S\n"
    "     1048576        262144     float     sum      -1   100.00   10.49   10.49       0    95.00   120.00   119.00     3.20   101.00   10.38   10.38       0    95.00   120.00   119.00     3.20  2026-12-05 02:00:13\n"
    "     2097152        524288     float     sum      -1   100.00   20.97   20.97       0    95.00   120.00   119.00     3.20   101.00   20.76   20.76       0    95.00   120.00   119.00     3.20  2026-12-05 02:00:13\n"
)


# nccl-tests -N 2 (--run_cycles): the size loop printed twice under one header and one footer
# (src/common.cu: "do { for (size ...) ... } while (--repeat)"); the second cycle measured again
CYCLES = (
    "# nccl-tests version 2.19.6 nccl-headers=22807 nccl-library=22807\n"
    "# Collective test starting: all_reduce_perf\n"
    "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0\n"
    "#\n"
    "# Using devices\n"
    "#  Rank  0 Group  0 Pid   1000 on     node01 device  0 [0000:01:00] SYNTHETIC GPU\n"
    "#  Rank  1 Group  0 Pid   1001 on     node01 device  1 [0000:02:00] SYNTHETIC GPU\n"
    "#\n"
    "#                                                              out-of-place                       in-place          \n"
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong \n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         \n"
    "     1048576        262144     float     sum      -1   100.00   10.49   10.49       0   101.00   10.38   10.38       0\n"
    "     2097152        524288     float     sum      -1   100.00   20.97   20.97       0   101.00   20.76   20.76       0\n"
    "     1048576        262144     float     sum      -1   104.00   10.08   10.08       0   105.00    9.99    9.99       0\n"
    "     2097152        524288     float     sum      -1   104.00   20.16   20.16       0   105.00   19.97   19.97       0\n"
    "# Out of bounds values : 0 OK\n"
    "# Avg bus bandwidth    : 15.35 \n"
    "#\n"
    "# Collective test concluded: all_reduce_perf\n"
)


def test_run_cycles_said_once_as_cycles_not_duplicates():
    df = parse_nccl_tests(CYCLES)
    assert len(df) == 8  # every cycle's rows are read
    assert df.time_s.tolist()[4:] == pytest.approx([104e-6, 105e-6, 104e-6, 105e-6])
    messages = [w["message"] for w in df.attrs["warnings"]]
    assert not any("duplicate" in m for m in messages), messages
    (said,) = [w for w in df.attrs["warnings"] if "nccl-tests -N" in w["message"]]
    assert said["line"] == 14 and "sweep 2 times" in said["message"]


def test_a_cycle_copied_field_for_field_is_still_a_duplicate():
    # the first cycle pasted again (same times): no re-measurement, the duplicate finding stays
    lines = CYCLES.splitlines(keepends=True)
    pasted = "".join(lines[:13] + lines[11:13] + lines[15:])
    messages = [w["message"] for w in parse_nccl_tests(pasted).attrs["warnings"]]
    assert any("duplicate row" in m for m in messages)
    assert not any("nccl-tests -N" in m for m in messages)


def test_run_cycles_through_the_cli(tmp_path):
    path = tmp_path / "all_reduce_perf.log"
    path.write_text(CYCLES)
    result = run("validate", "compare", str(path), "--cluster", "dgx-h100")
    assert result.exit_code in (0, 1), result.stderr
    assert "over 8 rows" in result.stdout
    assert "line 14: the sizes start again here" in result.stderr
    assert "duplicate" not in result.stderr


def _compare(path) -> str:
    """``validate compare FILE`` on one cluster preset; the summary line it prints."""
    result = run("validate", "compare", str(path), "--cluster", "dgx-h100")
    assert result.exit_code in (0, 1), (result.exit_code, result.stderr)
    assert "error" not in result.stderr, result.stderr
    return result.stdout


def test_timestamped_rows_read_with_their_numbers():
    df = parse_nccl_tests(TIMESTAMPED)
    assert len(df) == 4 and set(df.op) == {"all_reduce"}
    assert df.size_bytes.tolist() == [1048576, 1048576, 2097152, 2097152]
    assert df.time_s.tolist() == pytest.approx([100e-6, 101e-6, 100e-6, 101e-6])
    assert df.busbw_bytes_per_s.tolist() == pytest.approx([10.49e9, 10.38e9, 20.97e9, 20.76e9])
    assert (df.ranks == 2).all() and (df.wrong == 0).all()
    # the timestamp column is nccl-tests' own: no unknown column, no finding
    assert not any("timestamp" in w["message"] for w in df.attrs["warnings"])


@pytest.mark.parametrize(
    ("prefix", "end"),
    [
        ("0: ", "\n"),  # srun --label
        ("[1,0]<stdout>:", "\n"),  # mpirun --tag-output
        ("2026-12-05T02:00:13.123456789Z ", "\n"),  # kubectl logs --timestamps
        ("", "\r\n"),  # a log saved with Windows line endings
    ],
)
def test_timestamped_rows_under_launcher_prefixes_and_crlf(prefix, end):
    text = "".join(prefix + line + end for line in TIMESTAMPED.splitlines())
    df = parse_nccl_tests(text)
    assert df.time_s.tolist() == pytest.approx([100e-6, 101e-6, 100e-6, 101e-6])
    assert (df.ranks == 2).all()


def test_timestamped_rows_read_without_their_column_header():
    # a log cut to its rows (a paste of the table): the trailing date and clock are still read past
    rows = "\n".join(line for line in TIMESTAMPED.splitlines() if not line.startswith("#"))
    df = parse_nccl_tests(rows, op="all_reduce")
    assert df.time_s.tolist() == pytest.approx([100e-6, 101e-6, 100e-6, 101e-6])


def test_timestamped_per_iteration_rows():
    df = parse_nccl_tests(TIMESTAMPED_PER_ITER, op="all_reduce")
    assert len(df) == 4
    assert df.time_s.tolist() == pytest.approx([100e-6, 101e-6, 100e-6, 101e-6])
    assert df.iter_max_s.tolist() == pytest.approx([120e-6] * 4)
    assert df.iter_cv_pct.tolist() == pytest.approx([3.2] * 4)


def test_timestamped_log_through_the_cli(tmp_path):
    path = tmp_path / "all_reduce_perf.log"
    path.write_text(TIMESTAMPED)
    assert "over 4 rows" in _compare(path)


def test_a_timestamp_that_is_not_one_still_names_its_line():
    # a row whose two last fields are not a date and a clock is no -S row: refused, its line named
    bad = TIMESTAMPED.replace("2026-12-05 02:00:13\n", "x 02:00:13\n", 1)
    with pytest.raises(Exception, match="line 12"):
        parse_nccl_tests(bad)


def _json_document(devices_in_config: bool = True) -> str:
    """A -J file as nccl-tests 2.19 writes it: "version" is JSON_FILE_VERSION (an int, 3),
    "devices" sits inside "config", "root" is the "%6i" string the text row prints, "nwrong"
    a double (FORMAT FIXTURE: invented numbers)."""
    devices = [
        {
            "rank": rank,
            "group": 0,
            "pid": 1000 + rank,
            "hostname": "node01",
            "device": rank,
            "device_hex": f"0000:0{rank + 1}:00",
            "device_info": "SYNTHETIC GPU",
        }
        for rank in range(2)
    ]
    config = {
        "nthreads": 1,
        "ngpus": 1,
        "minimum_bytes": 1048576,
        "maximum_bytes": 2097152,
        "step_factor": 2,
        "warmup_iters": 1,
        "iterations": 20,
        "aggregated_iterations": 1,
        "validation": 1,
        "graph": 0,
        "blocking_collectives": False,
        "per_iter_timing": False,
        "per_iter_skip": 0,
        "parallel_init": False,
    }
    if devices_in_config:
        config["devices"] = devices
    results = [
        {
            "size": size,
            "count": size // 4,
            "type": "float",
            "redop": "sum",
            "root": "    -1",
            "out_of_place": {"time": 100.0, "alg_bw": bw, "bus_bw": bw, "nwrong": 0.0},
            "in_place": {"time": 101.0, "alg_bw": bw2, "bus_bw": bw2, "nwrong": 0.0},
            "actual_iterations": 20,
            "experiment_name": "",
        }
        for size, bw, bw2 in ((1048576, 10.49, 10.38), (2097152, 20.97, 20.76))
    ]
    document = {
        "version": 3,
        "start_time": "2026-12-05 02:00:00",
        "args": ["./build/all_reduce_perf", "-b", "1M", "-e", "2M", "-J", "out.json"],
        "env": ["NCCL_ALGO=Ring"],
        "nccl_version": 22807,
        "config": config,
    }
    if not devices_in_config:
        document["devices"] = devices
    document |= {
        "results": results,
        "out_of_bounds": {"count": 0, "okay": True},
        "average_bus_bandwidth": {"bandwidth": 15.65, "okay": "unchecked"},
        "errors": [],
        "end_time": "2026-12-05 02:00:01",
    }
    return json.dumps(document, indent=1)


def test_json_devices_inside_config_give_ranks_nodes_and_device():
    df = parse_nccl_tests(_json_document())
    assert len(df) == 4 and set(df.op) == {"all_reduce"}
    assert (df.ranks == 2).all() and (df.nodes == 1).all() and (df.gpus_per_node == 2).all()
    assert set(df.ranks_source) == {"devices"} and set(df.device) == {"SYNTHETIC GPU"}
    assert df.root.tolist() == [-1] * 4 and (df.wrong == 0).all()
    # the same rows as the text form of the same run
    text = parse_nccl_tests(TIMESTAMPED)
    for column in ("size_bytes", "placement", "time_s", "busbw_bytes_per_s", "ranks"):
        assert df[column].tolist() == text[column].tolist(), column


def test_json_version_is_the_file_format_not_nccl_tests_version():
    df = parse_nccl_tests(_json_document())
    assert df.nccl_tests_version.isna().all()
    assert df.nccl_version.iloc[0] == "2.28.7"
    assert df.attrs["runs"][0]["nccl_tests_version"] is None


def test_json_with_a_top_level_device_list_still_read():
    df = parse_nccl_tests(_json_document(devices_in_config=False))
    assert (df.ranks == 2).all() and set(df.device) == {"SYNTHETIC GPU"}


def test_json_through_read_and_the_cli(tmp_path):
    path = tmp_path / "out.json"
    path.write_text(_json_document())
    df = read_nccl_tests(path)
    assert (df.ranks == 2).all() and not math.isnan(df.time_s.iloc[0])
    assert "over 4 rows" in _compare(path)


# src/util.cu writeErrors: after the footer nccl-tests prints "# error: " and NCCL's last error
# string (ncclGetLastError) when NCCL kept one; the text here is a FORMAT FIXTURE
WITH_ERROR = CYCLES + "#\n# error: Call to ibv_modify_qp failed with 110 Connection timed out\n"


def test_nccls_last_error_is_said_once():
    df = parse_nccl_tests(WITH_ERROR)
    assert len(df) == 8
    (said,) = [w for w in df.attrs["warnings"] if "last error" in w["message"]]
    assert said["line"] == 21 and "ibv_modify_qp" in said["message"]


def test_nccls_last_error_through_the_cli(tmp_path):
    path = tmp_path / "all_reduce_perf.log"
    path.write_text(WITH_ERROR)
    result = run("validate", "compare", str(path), "--cluster", "dgx-h100")
    assert result.exit_code in (0, 1), result.stderr
    assert "line 21: nccl-tests printed NCCL's last error after the run" in result.stderr


def _stopped_json(at: str) -> str:
    """The -J file of a run an error stopped, as nccl-tests 2.18.5+ closes it (src/util.cu
    jsonOutputFinalize: every open list and object closed where it was, no footer, no
    end_time): ``at="setup"`` before the results list, ``at="sweep"`` after the first size."""
    document = json.loads(_json_document())
    for key in ("out_of_bounds", "average_bus_bandwidth", "errors", "end_time"):
        del document[key]
    if at == "setup":
        del document["results"]
    else:
        document["results"] = document["results"][:1]
    return json.dumps(document)


def test_json_of_a_run_stopped_mid_sweep_keeps_its_rows_and_says_so(tmp_path):
    df = parse_nccl_tests(_stopped_json("sweep"))
    assert df.size_bytes.tolist() == [1048576, 1048576]
    (said,) = df.attrs["warnings"]
    assert "ends without nccl-tests' footer" in said["message"]
    path = tmp_path / "out.json"
    path.write_text(_stopped_json("sweep"))
    result = run("validate", "compare", str(path), "--cluster", "dgx-h100")
    assert result.exit_code in (0, 1), result.stderr
    assert "ends without nccl-tests' footer" in result.stderr


def test_json_of_a_run_stopped_before_its_first_size_is_one_clear_line(tmp_path):
    with pytest.raises(Exception, match="stopped before its first size"):
        parse_nccl_tests(_stopped_json("setup"))
    path = tmp_path / "out.json"
    path.write_text(_stopped_json("setup"))
    one_line_error(
        run("validate", "compare", str(path), "--cluster", "dgx-h100"),
        "without a 'results' list",
        "stopped before its first size",
    )


# A size that wrapped negative: nccl-tests prints size_t sizes and counts with "%12li"
# (src/util.cu writeBenchmarkLinePreamble), a long of 32 bits under MSVC (its Windows build,
# 2.19.1+): 2 GiB prints as -2147483648. FORMAT FIXTURE: the row's numbers are invented.
WRAPPED_ROW = (
    " -2147483648    -536870912     float     sum      -1   100000   21.47   21.47       0"
    "   100000   21.47   21.47       0\n"
)


def test_a_negative_size_is_refused_naming_its_line(tmp_path):
    lines = TIMESTAMPED.splitlines(keepends=True)
    with_wrapped = "".join(lines[:13] + [WRAPPED_ROW] + lines[13:])
    with pytest.raises(Exception, match=r"line 14: size and count must be >= 0"):
        parse_nccl_tests(with_wrapped)
    lenient = parse_nccl_tests(with_wrapped, strict=False)
    assert (lenient.size_bytes > 0).all() and len(lenient) == 4
    path = tmp_path / "all_reduce_perf.log"
    path.write_text(with_wrapped)
    result = run("validate", "compare", str(path), "--cluster", "dgx-h100")
    assert result.exit_code in (0, 1), result.stderr
    assert "over 4 rows" in result.stdout
    assert "line 14: size and count must be >= 0" in result.stderr


def test_a_log_of_negative_sizes_only_is_one_clear_line(tmp_path):
    lines = TIMESTAMPED.splitlines(keepends=True)
    only = "".join(lines[:11] + [WRAPPED_ROW] + lines[13:])
    path = tmp_path / "all_reduce_perf.log"
    path.write_text(only)
    one_line_error(
        run("validate", "compare", str(path), "--cluster", "dgx-h100"),
        "no nccl-tests result rows",
        "line 12: size and count must be >= 0",
    )
