"""The parser lists duplicated runs and rows that break nccl-tests' own identities.

``algbw = size / time`` and ``busbw = algbw x factor(op, ranks)`` hold in every row nccl-tests
prints, up to the rounding of the printed numbers; a row that breaks them is listed (a finding:
the row is kept), and a log pasted several times is reported instead of read as several sweeps.
"""

from __future__ import annotations

from costmodel.validation.nccl_tests import parse_nccl_tests

HEAD = """# Collective test starting: all_reduce_perf
# nThread 1 nGpus 2 minBytes 8 maxBytes 1048576 step: 2(factor) warmup iters: 1 iters: 20
#  Rank  0 Group  0 Pid   1000 on  node01 device  0 [0x01] SYNTHETIC GPU
#  Rank  1 Group  0 Pid   1000 on  node01 device  1 [0x02] SYNTHETIC GPU
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
"""
# 2 ranks, all-reduce: busbw = algbw x 2 (2-1)/2 = algbw; algbw = size / time
ROWS = (
    "      524288        131072     float     sum      -1    55.00    9.53    9.53       0    55.10    9.52    9.52       0\n"
    "     1048576        262144     float     sum      -1   100.00   10.49   10.49       0   100.00   10.49   10.49       0\n"
)
FOOT = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 10.0\n"


def _findings(text: str) -> list[str]:
    df = parse_nccl_tests(text, strict=False)
    return [w["message"] for w in df.attrs["warnings"]]


def test_a_consistent_log_has_no_identity_finding() -> None:
    assert not [m for m in _findings(HEAD + ROWS + FOOT) if "does not hold" in m]


def test_a_row_whose_algbw_is_not_size_over_time_is_listed() -> None:
    bad = ROWS.replace("    9.53    9.53       0    55.10", "   19.53   19.53       0    55.10")
    found = [m for m in _findings(HEAD + bad + FOOT) if "algbw = size / time" in m]
    assert len(found) == 1 and "524288 B in 55.00 us" in found[0] and "19.53" in found[0]


def test_a_row_whose_busbw_is_not_algbw_times_the_factor_is_listed() -> None:
    bad = ROWS.replace("10.49   10.49       0   100.00", "10.49   12.00       0   100.00")
    found = [m for m in _findings(HEAD + bad + FOOT) if "busbw = algbw" in m]
    assert len(found) == 1 and "12.00" in found[0] and "2 ranks" in found[0]


def test_rounding_of_the_printed_numbers_is_not_a_finding() -> None:
    # 1048576 B / 99.95 us = 10.491 GB/s, printed 10.49: within the last digit
    rows = ROWS.replace(
        "   100.00   10.49   10.49       0   100.00", "    99.95   10.49   10.49       0   100.00"
    )
    assert not [m for m in _findings(HEAD + rows + FOOT) if "does not hold" in m]


def test_a_log_pasted_three_times_is_reported() -> None:
    once = HEAD + ROWS + FOOT
    found = [m for m in _findings(once * 3) if m.startswith("duplicate run")]
    assert len(found) == 2
    assert "repeats the run at line 1" in found[0]
    assert not [m for m in _findings(once) if m.startswith("duplicate run")]
