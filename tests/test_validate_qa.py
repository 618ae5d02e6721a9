"""QA of the validation harness as an engineer on a cluster node uses it: each test names the
defect it guards against (found by running the documented commands and feeding odd logs)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from costmodel.reference import reference_path
from costmodel.validation.compare import compare
from tests._cli import run


# --- 0-byte and untimed rows ------------------------------------------------------------------
def test_zero_byte_and_untimed_rows_are_not_compared():
    """nccl-tests prints 0-byte rows (busbw 0: NCCL returns at once); they were compared by time
    against a launch, about -99.7 % each, and pulled the medians (25c: 100 % vs 52 % without)."""
    rows = pd.DataFrame(
        {
            "op": ["all_reduce"] * 4,
            "size_bytes": [0, 2**20, 2**21, 2**22],
            "ranks": [8] * 4,
            "time_s": [1e-6, 1e-3, float("nan"), -1e-6],
        }
    )
    out = compare(rows, lambda op, m, n, nodes, **kw: m / 1e9 + 1e-5)
    assert math.isnan(out.rel_error[0]) and "0 B" in out.note[0]
    assert out.rel_error[1] == pytest.approx(1e-3 / (2**20 / 1e9 + 1e-5) - 1)
    assert out.rel_error[2:].isna().all() and out.note[3] == "time not > 0 (not compared)"


def test_validate_compare_bundled_log_leaves_out_its_zero_byte_rows():
    """The CLI's median over a bundled log with 0-byte rows is the median over its sized rows."""
    import json

    from costmodel.validation.compare import cluster_predictor
    from costmodel.validation.logread import read_log

    path = reference_path("25c")
    result = run("validate", "compare", "--reference", "25c", "--json")
    assert result.exit_code in (0, 1), result.output
    out = json.loads(result.stdout)
    read = read_log(path.read_bytes(), path.name)
    sized = read.rows[read.rows.size_bytes > 0]
    assert len(sized) < len(read.rows)  # the log has 0-byte rows
    assert out["predicted"] == len(sized)
    alone = compare(sized, cluster_predictor(read.cluster))  # only sized rows given
    assert out["median_abs_rel_error"] == pytest.approx(alone.rel_error.abs().median())
