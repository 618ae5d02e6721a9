"""benchmarks/bench_app.py --split: the first chart's main-thread CPU split at the task that drew
it, read from a Chrome trace (a synthetic one here: the reading, not a timing)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_app", ROOT / "benchmarks" / "bench_app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _trace(events: list[dict]) -> bytes:
    return json.dumps({"traceEvents": events}).encode()


MAIN = {"pid": 1, "tid": 7}
MARKS = [
    {**MAIN, "name": "fp-number", "ph": "R", "ts": 1_000, "tts": 300_000},
    {**MAIN, "name": "fp-chart", "ph": "R", "ts": 5_000, "tts": 1_800_000},
]


def test_the_task_holding_the_chart_mark_splits_its_cpu():
    tasks = [
        # earlier task, another thread's task over the mark, then the one that drew the chart
        {**MAIN, "name": "ThreadControllerImpl::RunTask", "ph": "X", "ts": 100, "dur": 500,
         "tts": 200_000, "tdur": 90_000},
        {"pid": 1, "tid": 9, "name": "ThreadControllerImpl::RunTask", "ph": "X", "ts": 4_000,
         "dur": 9_000, "tts": 50_000, "tdur": 900_000},
        {**MAIN, "name": "ThreadControllerImpl::RunTask", "ph": "X", "ts": 4_800, "dur": 300,
         "tts": 1_520_000, "tdur": 280_000},
    ]  # fmt: skip
    cpu = _bench()._thread_cpu_at_marks(_trace(MARKS + tasks))
    assert cpu["number"] == 0.3 and cpu["chart"] == 1.8
    assert cpu["before_chart_task"] == 1.52
    assert cpu["chart_task"] == 0.28


def test_without_the_toplevel_category_there_is_no_split():
    cpu = _bench()._thread_cpu_at_marks(_trace(MARKS))
    assert cpu == {"number": 0.3, "chart": 1.8}
