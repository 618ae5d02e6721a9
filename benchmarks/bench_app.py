"""How fast the app answers: server-side rerun per page and input (AppTest), the work before
each page's first chart, and first paint in chromium.

    .venv/bin/python benchmarks/bench_app.py            # every part
    .venv/bin/python benchmarks/bench_app.py --no-browser
    .venv/bin/python benchmarks/bench_app.py --no-rerun     # first view and first paint only
    .venv/bin/python benchmarks/bench_app.py --no-rerun --before /tmp/old   # before and after
    .venv/bin/python benchmarks/bench_app.py --no-rerun --before /tmp/old --also B=/tmp/variant

Rerun: each page is opened headless with streamlit.testing.v1.AppTest, then each of several of
its inputs is moved, one at a time, through values never seen before (each a cache miss: the
library really recomputes) and back through the same values (cache hits). Reported per page
and input: the median and the max CPU time of the page script per rerun, and the median wall
time. Target: <= 150 ms CPU per rerun after one input change, judged on the
median CPU time of the new values (wall time on a shared machine measures the neighbours too;
the max is printed beside it).

Work before the first chart (tests/_first_view.py): per page, the charts and tables its first
view sends, the elements and bytes sent before (and with) its first chart, and the script's
CPU time until then. Counts, not times: tests/test_first_view.py bounds them.

First paint: the app and a bare Streamlit + plotly page (benchmarks/bare_page.py: one number,
one chart, nothing else) are served side by side (with ``--before``, an older checkout of the
app too); Debian's chromium (Playwright) loads them in turn and the times from navigation to the
first number (an ``st.metric`` value, or a page's headline sentence ending with its main number)
and to the first plotly chart drawn are taken in the page as each
enters the DOM, in wall-clock seconds and in CPU seconds of the page's renderer main thread
(from a Chrome trace: the work the page gave the browser, which a loaded machine does not
inflate). Goal: the app's first
number and first chart within 1.3x the bare page's, on every page (ratios, so the machine's load
cancels). ``--split`` also splits each first chart's main-thread CPU at the task that drew it:
the work before that task (every element of the first view, plotly's chunk) and the task itself
(plotly's draw of every chart revealed with the first), each beside the bare page's.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WEB = ROOT / "costmodel" / "web"
TARGET_RERUN_S = 0.150
sys.path.insert(0, str(ROOT))  # tests/_browser.py: the served app and chromium flags
from tests._browser import CHROMIUM, CHROMIUM_ARGS, served_app  # noqa: E402

_VALIDATE_QUERY = {
    "val_source": "A reference run",
    "val_reference": "13a_waynehacking8_1x4xH100-slice_auto_allreduce.txt",
}
# label -> (page file, query to open it with, [(widget kind, key, values to step through)])
# Each value differs from the page's default and from the one before, so every step is one
# input change; the second pass over the same values hits the caches. After its values an input
# is set back to its default, so each input is measured from the page as it opens.
INTERACTIONS: dict[str, tuple[str, dict | None, list[tuple[str, str, list]]]] = {
    "collectives (link)": (
        "page_collectives.py",
        None,
        [
            ("number_input", "ranks", [16, 32, 64, 128, 256, 512]),
            ("selectbox", "size", [2**20, 2**24, 2**30, 2**12]),
            ("selectbox", "op", ["all_gather", "broadcast", "reduce_scatter", "all_reduce"]),
        ],
    ),
    "collectives (cluster)": (
        "page_collectives.py",
        None,
        [
            ("radio", "view", ["cluster"]),  # opens the cluster view (timed like any change)
            ("number_input", "nccl_nodes", [2, 4, 8, 16, 32]),
            ("radio", "coll_model", ["textbook", "lesson", "nccl"]),
        ],
    ),
    "cluster": (
        "page_cluster.py",
        None,
        [
            ("number_input", "cl_nodes", [2, 8, 16, 32, 64, 128]),
            ("radio", "cl_model", ["textbook", "lesson", "nccl"]),
            ("checkbox", "cl_sharp", [True, False]),
            ("selectbox", "cl_size", [2**20, 2**24, 2**32]),
        ],
    ),
    "memory": (
        "page_memory.py",
        None,
        [
            ("text_input", "params", ["1B", "3B", "13B", "30B", "70B", "175B"]),
            ("number_input", "dp_ranks", [16, 32, 64, 128]),
            ("radio", "zero_stage", [1, 2, 3, 0]),
        ],
    ),
    "batch": (
        "page_batch.py",
        None,
        [
            ("number_input", "batch_ranks", [8, 16, 32, 128, 256, 512]),
            ("number_input", "seq_len", [1024, 4096, 8192]),
            ("radio", "rule", ["sqrt", "linear"]),
        ],
    ),
    "ddp": (
        "page_ddp.py",
        None,
        [
            ("number_input", "ddp_nodes", [2, 8, 16, 32, 64, 128]),
            ("text_input", "ddp_params", ["1B", "13B", "70B"]),
            ("number_input", "ddp_mfu", [0.3, 0.5, 0.6]),
            ("text_input", "ddp_bucket", ["50MiB", "100MiB", "10MiB"]),
        ],
    ),
    "validate": (
        "page_validate.py",
        _VALIDATE_QUERY,
        [
            ("radio", "val_model", ["textbook", "nccl"]),
            ("checkbox", "val_in_place", [True, False]),
        ],
    ),
}


_WRAPPER = """
import time
import streamlit as st
from costmodel.web import {module} as page
wall, cpu = time.perf_counter(), time.thread_time()
page.render()
st.session_state["_bench"] = (time.perf_counter() - wall, time.thread_time() - cpu)
"""


def bench_reruns() -> dict[tuple[str, str], dict[str, float]]:
    """Per (page, input): wall and CPU time of the page script per rerun [s].

    The page runs inside a tiny wrapper script that times ``render()`` on the script thread:
    wall time (what a user waits for, inflated when other processes share the cores) and the
    thread's CPU time (the work itself, robust to a busy machine). An input a page no longer
    has (renamed on another branch) is reported as missing, not failed.
    """
    from streamlit.testing.v1 import AppTest

    out = {}
    for label, (page, query, widgets) in INTERACTIONS.items():
        at = AppTest.from_string(
            _WRAPPER.format(module=page.removesuffix(".py")), default_timeout=120
        )
        if query:
            at.query_params.update(query)
        at.run()
        if at.exception:
            raise RuntimeError(f"{page}: {at.exception[0].value}")
        first = at.session_state["_bench"][0]
        for kind, key, values in widgets:
            try:
                getattr(at, kind)(key=key)
            except KeyError:
                out[(label, key)] = {"missing": 1.0, "first_run_s": first}
                continue
            initial = getattr(at, kind)(key=key).value
            cold, warm = [], []
            for times, seq in ((cold, values), (warm, values)):
                for v in seq:
                    getattr(at, kind)(key=key).set_value(v)
                    at.run()
                    if at.exception:
                        raise RuntimeError(f"{page} {key}={v!r}: {at.exception[0].value}")
                    times.append(at.session_state["_bench"])
            if key != "view":  # back to the page's default: the next input starts from there
                getattr(at, kind)(key=key).set_value(initial)
                at.run()
            out[(label, key)] = {
                "first_run_s": first,
                "cold_wall_s": statistics.median(t[0] for t in cold),
                "cold_cpu_s": statistics.median(t[1] for t in cold),
                "cold_cpu_max_s": max(t[1] for t in cold),
                "warm_wall_s": statistics.median(t[0] for t in warm),
                "warm_cpu_s": statistics.median(t[1] for t in warm),
            }
            first = float("nan")  # the page's first run is printed once
    return out


#: chart on screen: plotly has drawn the figure's SVG inside Streamlit's chart element
_CHART = "[data-testid='stPlotlyChart'] .main-svg"
#: the first number on screen: a metric's value, or a page's headline sentence that ends with its
#: main number (costmodel.web.common.headline_text, a subheader anchored "answer")
_NUMBER = "[data-testid='stMetricValue'], [data-testid='stHeading'] #answer"
#: goals: the app's first number and first chart within 1.3x a bare Streamlit + plotly page
TARGET_RATIO = 1.3
PAINT_REPEATS = 3
#: run in the page before its own scripts: the first moment a visible metric value and a drawn
#: chart are in the DOM (a MutationObserver runs in the task that inserted them), kept as
#: milliseconds from navigation and as a User Timing mark, which the trace stamps with the main
#: thread's CPU time
_OBSERVE = """
window.__fp = {};
new MutationObserver(() => {
  const seen = (key, selector) => {
    if (key in window.__fp) return;
    const el = document.querySelector(selector);
    if (el && el.checkVisibility()) {
      window.__fp[key] = performance.now();
      performance.mark('fp-' + key);
    }
  };
  seen('number', "@NUMBER@");
  seen('chart', "@CHART@");
}).observe(document, {subtree: true, childList: true});
""".replace("@CHART@", _CHART).replace("@NUMBER@", _NUMBER)


#: Chrome's names for one task of a thread's run loop (trace category ``toplevel``)
_TASKS = ("ThreadControllerImpl::RunTask", "RunTask")


def _thread_cpu_at_marks(trace: bytes) -> dict[str, float]:
    """CPU time of the renderer main thread [s] at each ``fp-*`` mark of a Chrome trace.

    Chrome stamps each trace event with the thread's CPU time (``tts``, microseconds since the
    thread started): the work the page made the browser do until then, which the machine's load
    does not inflate (the wall times do). Where the trace has the ``toplevel`` category
    (``--split``), also ``chart_task``: the CPU time of the one task in which the first chart
    was drawn (plotly's draw of every chart revealed with it, and the commit around it) and
    ``before_chart_task``: the CPU time when that task began (the first view's elements, plotly's
    chunk evaluated; all that comes before the draw)."""
    import json

    data = json.loads(trace)
    events = data["traceEvents"] if isinstance(data, dict) else data
    marks = {
        e["name"].removeprefix("fp-"): e
        for e in events
        if str(e.get("name", "")).startswith("fp-") and "tts" in e
    }
    out = {k: e["tts"] / 1e6 for k, e in marks.items()}
    if "chart" in marks:
        m = marks["chart"]
        tasks = [
            e
            for e in events
            if e.get("name") in _TASKS
            and e.get("ph") == "X"
            and (e.get("pid"), e.get("tid")) == (m["pid"], m["tid"])
            and "tts" in e
            and e["ts"] <= m["ts"] <= e["ts"] + e.get("dur", 0)
        ]
        if tasks:  # the outermost task holding the mark
            task = max(tasks, key=lambda e: e.get("dur", 0))
            out["before_chart_task"] = task["tts"] / 1e6
            out["chart_task"] = task.get("tdur", 0) / 1e6
    return out


def _paint(
    browser: Any, url: str, context: Any | None, *, chart: bool = True, split: bool = False
) -> tuple[float, float, float, float, float, float]:
    """One page load: (first number, first chart) from navigation [s], wall clock, then the
    renderer main thread's CPU time [s] at the same two moments; with ``split``, then the
    CPU time when the task that drew the first chart began and that task's own CPU time [s]
    (:func:`_thread_cpu_at_marks`; NaN without ``split``).

    Both moments are taken in the page, when the element enters the DOM (:data:`_OBSERVE`),
    not by polling from outside: Playwright's waits poll every 500 ms and their answer waits
    for the page's main thread, which plotly's chunk can hold for seconds, so a number drawn
    before that chunk was seen after it. The CPU times come from a Chrome trace of the load
    (:func:`_thread_cpu_at_marks`)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    # a tall window: plotly draws a chart once it is on screen, and every page's first chart
    # is within 3000 px of the top
    size = {"width": 1440, "height": 3000}
    page = browser.new_page(viewport=size) if context is None else context.new_page()
    if context is not None:
        page.set_viewport_size(size)
    page.add_init_script(_OBSERVE)
    categories = ["blink.user_timing", *(["toplevel"] if split else [])]
    browser.start_tracing(page=page, categories=categories)
    page.goto(url)
    page.wait_for_function("() => 'number' in window.__fp", polling=100, timeout=120_000)
    if chart:
        with contextlib.suppress(PlaywrightTimeoutError):
            page.wait_for_function("() => 'chart' in window.__fp", polling=100, timeout=120_000)
    cpu = _thread_cpu_at_marks(browser.stop_tracing())
    wall = page.evaluate("window.__fp")
    page.close()
    nan = float("nan")  # a page whose first view has no chart (or not drawn in time)
    return (
        wall["number"] / 1e3,
        wall["chart"] / 1e3 if "chart" in wall else nan,
        cpu["number"],
        cpu.get("chart", nan),
        cpu.get("before_chart_task", nan),
        cpu.get("chart_task", nan),
    )


#: pages whose first view has no chart (the first-paint loop does not wait for one)
NO_CHART = frozenset({"batch"})
#: the app's pages as a first visit opens them (url path and query)
PAINT_PATHS = {
    "collectives": "",
    "cluster": "cluster",
    "memory": "memory",
    "batch": "batch",
    "ddp": "ddp",
    "validate": "validate?val_source=A+reference+run&val_reference="
    "13a_waynehacking8_1x4xH100-slice_auto_allreduce.txt",
}


def _served_tree(tree: Path) -> contextlib.AbstractContextManager[str]:
    """``streamlit run <tree>/app.py`` with that checkout's own code (``PYTHONPATH=tree``) on a
    free loopback port: another commit served beside this one (``--before``)."""
    return served_app(
        script=str(tree / "app.py"), cwd=tree, env={"PYTHONPATH": str(tree)}, timeout_s=120
    )


Load = tuple[float, float, float, float, float, float]


def bench_first_paint(
    pages: list[str] | None = None,
    repeats: int = PAINT_REPEATS,
    visits: tuple[str, ...] = ("first visit", "cached"),
    before: Path | None = None,
    also: dict[str, Path] | None = None,
    split: bool = False,
) -> dict[tuple[str, str], dict[str, list[Load]]]:
    """Per (page, visit): every load of the bare page, the app, the ``before`` checkout and each
    of ``also`` (label -> another checkout: variants measured in the same run).

    The app, the bare page (benchmarks/bare_page.py) and, with ``before``, an older checkout of
    the app are served at the same time and loaded in turn, ``repeats`` times each, so all see
    the same machine load; each load gives :func:`_paint`'s (number, chart, number CPU, chart
    CPU). "first visit": a new browser context (nothing cached); "cached": a returning visitor
    (Streamlit's and plotly's JavaScript in the browser cache). ``split``: each load's trace
    also splits the first chart's CPU time at the task that drew it (:func:`_paint`).
    """
    from playwright.sync_api import sync_playwright

    out: dict[tuple[str, str], dict[str, list[Load]]] = {}
    with contextlib.ExitStack() as stack:
        urls = {
            "bare": stack.enter_context(served_app(script="benchmarks/bare_page.py")),
            "app": stack.enter_context(served_app()),
        }
        if before is not None:
            urls["before"] = stack.enter_context(_served_tree(before))
        for label, tree in (also or {}).items():
            urls[label] = stack.enter_context(_served_tree(tree))
        pw = stack.enter_context(sync_playwright())
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        # one warm-up load each: the servers' first session imports plotly/pandas
        for url in urls.values():
            _paint(browser, f"{url}/", None)
        context = browser.new_context()  # a returning visitor: the JS is in the cache
        for name, path in PAINT_PATHS.items():
            if pages and name not in pages:
                continue
            for visit, ctx in (("first visit", None), ("cached", context)):
                if visit not in visits:
                    continue
                loads: dict[str, list[Load]] = {k: [] for k in urls}
                for _ in range(repeats):
                    for kind, url in urls.items():
                        if kind == "bare":
                            loads[kind].append(_paint(browser, f"{url}/", ctx, split=split))
                        else:
                            loads[kind].append(
                                _paint(
                                    browser,
                                    f"{url}/{path}",
                                    ctx,
                                    chart=name not in NO_CHART,
                                    split=split,
                                )
                            )
                out[(name, visit)] = loads
                print(
                    f"  measured {name}, {visit} (load average {os.getloadavg()[0]:.1f})",
                    flush=True,
                )
        browser.close()
    return out


def _ratios(app: list[Load], bare: list[Load]) -> list[float]:
    """Median over the repeats of app / bare, load by load (the bare load just before): first
    number, first chart (wall), then the same two in main-thread CPU."""
    return [
        statistics.median(a[k] / b[k] for a, b in zip(app, bare, strict=True)) for k in range(4)
    ]


def _report_first_view() -> None:
    """Print what each page's first view sends (tests/_first_view.py): deterministic counts
    beside the timings, bounded by tests/test_first_view.py."""
    from tests._first_view import PAGES, first_view

    print(
        "\nwork before the first chart (AppTest, the page's second run: warm caches as a new "
        "session of a served app; script CPU is not exact)"
    )
    print(
        f"{'page':<13}{'charts':>7}{'tables':>7}{'elements':>10}{'bytes':>9}{'chart':>8}"
        f"{'view bytes':>12}{'cpu to chart':>14}{'cpu':>7}"
    )
    print(f"{'':<13}{'':>7}{'':>7}{'(before the first chart)':>27}")
    for name in PAGES:
        v = first_view(name)
        print(
            f"{name:<13}{v.charts:>7}{v.tables:>7}{v.elements_before_chart:>10}"
            f"{v.bytes_before_chart:>9,}{v.chart_bytes[0] if v.charts else 0:>8,}"
            f"{v.total_bytes:>12,}{v.cpu_to_chart_s * 1e3:>12.0f}ms{v.cpu_s * 1e3:>5.0f}ms"
        )


def _report_first_paint(args: argparse.Namespace) -> bool:
    """Print the first-paint table; True when every ratio is within :data:`TARGET_RATIO`."""
    print(
        "\nfirst paint in chromium, side by side with a bare Streamlit + plotly page "
        f"(benchmarks/bare_page.py; {args.repeats} loads of each in turn, medians; goal: app / "
        f"bare <= {TARGET_RATIO} for the first number and the first chart). wall: seconds from "
        "navigation; cpu: the renderer main thread's CPU seconds by then (what the page made "
        "the browser do, robust to a loaded machine); ratios: median of app / the bare load "
        "just before it"
    )
    head = f"{'page':<13}{'visit':<13}{'':<8}{'number':>8}{'cpu':>7}{'chart':>8}{'cpu':>7}"
    print(head + f"{'number':>9}{'cpu':>7}{'chart':>8}{'cpu':>7}  (app / bare)")
    paint = bench_first_paint(
        args.pages.split(",") if args.pages else None,
        args.repeats,
        ("cached",) if args.cached_only else ("first visit", "cached"),
        args.before.resolve() if args.before else None,
        {label: Path(path).resolve() for label, _, path in (a.partition("=") for a in args.also)},
        split=args.split,
    )
    ok = True
    worst: dict[str, list[float]] = {}
    for (name, visit), loads in paint.items():
        for kind in ["bare", *sorted(k for k in loads if k not in ("bare", "app")), "app"]:
            # columns: number, its CPU, chart, its CPU (_paint gives number, chart, CPUs)
            med = [statistics.median(x[k] for x in loads[kind]) for k in (0, 2, 1, 3)]
            line = f"{name:<13}{visit:<13}{kind:<8}" + "".join(
                f"{v:>7.2f}s" if i % 2 == 0 else f"{v:>6.2f}s" for i, v in enumerate(med)
            )
            if kind != "bare":
                r = _ratios(loads[kind], loads["bare"])
                line += "".join(
                    f"{v:>8.2f}x" if i % 2 == 0 else f"{v:>6.2f}x"
                    for i, v in enumerate((r[0], r[2], r[1], r[3]))
                )
                prev = worst.setdefault(kind, [0.0] * 4)
                worst[kind] = [max(p, v) if v == v else p for p, v in zip(prev, r, strict=True)]
                if kind == "app":
                    ok &= r[0] <= TARGET_RATIO and not r[1] > TARGET_RATIO
                # every load, not only the median: number / chart ratio per load, wall then
                # main-thread CPU
                line += "  each (wall; cpu): " + ", ".join(
                    f"{a[0] / b[0]:.2f}/{a[1] / b[1]:.2f}; {a[2] / b[2]:.2f}/{a[3] / b[3]:.2f}"
                    for a, b in zip(loads[kind], loads["bare"], strict=True)
                )
            print(line)
    if args.split:
        _report_split(paint)
    for kind, w in worst.items():
        print(
            f"worst ratio, {kind}: first number {w[0]:.2f}x (cpu {w[2]:.2f}x), first chart "
            f"{w[1]:.2f}x (cpu {w[3]:.2f}x); goal <= {TARGET_RATIO}x"
        )
    return ok


def _report_split(paint: dict[tuple[str, str], dict[str, list[Load]]]) -> None:
    """Print where each first chart's main-thread CPU goes (``--split``): the work before the
    task that drew it, and that task (the draw of every chart revealed with it), medians over
    the loads, and each beside the bare page's (app - bare: the gap, in seconds of CPU)."""
    print(
        "\nfirst chart's main-thread CPU split at the task that drew it (medians; s): before "
        "that task, the task itself (plotly's draw of every chart revealed with the first), "
        "and each minus the bare page's"
    )
    print(f"{'page':<13}{'visit':<13}{'':<8}{'before':>8}{'draw':>7}{'- bare':>9}{'- bare':>8}")
    for (name, visit), loads in paint.items():
        bare = [statistics.median(x[k] for x in loads["bare"]) for k in (4, 5)]
        for kind in [k for k in loads if k != "bare"]:
            med = [statistics.median(x[k] for x in loads[kind]) for k in (4, 5)]
            if med[0] != med[0]:  # no chart on this page's first view
                continue
            print(
                f"{name:<13}{visit:<13}{kind:<8}{med[0]:>7.2f}s{med[1]:>6.2f}s"
                f"{med[0] - bare[0]:>+8.2f}s{med[1] - bare[1]:>+7.2f}s"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-browser", action="store_true", help="skip the first-paint part")
    parser.add_argument("--no-rerun", action="store_true", help="skip the AppTest rerun part")
    parser.add_argument("--pages", help="first paint of these pages only: collectives,validate")
    parser.add_argument(
        "--repeats", type=int, default=PAINT_REPEATS, help="alternating loads per page and visit"
    )
    parser.add_argument(
        "--cached-only", action="store_true", help="returning visitor only (JS in the cache)"
    )
    parser.add_argument(
        "--before",
        type=Path,
        help="an older checkout of the app (git worktree add /tmp/old <commit>) served and "
        "loaded beside this one: before and after in one run",
    )
    parser.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="LABEL=PATH",
        help="another checkout served and loaded beside the others under LABEL (a variant "
        "tried against the same run's app, before and bare page); repeatable",
    )
    parser.add_argument(
        "--no-work", action="store_true", help="skip the work-before-the-first-chart table"
    )
    parser.add_argument(
        "--split",
        action="store_true",
        help="also split each first chart's main-thread CPU at the task that drew it: the "
        "work before it and the draw (traces each load's tasks too)",
    )
    args = parser.parse_args()
    for flag, least in (("--repeats", 1),):
        value = getattr(args, flag[2:].replace("-", "_"))
        if not value >= least:  # NaN too
            parser.error(f"{flag} must be at least {least} (got {value:g})")
    os.chdir(ROOT)
    ok = True
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores "
        "(wall times grow with it; CPU time does not)"
    )
    if not args.no_rerun:
        print(
            f"server-side rerun per input change (AppTest; target <= "
            f"{TARGET_RERUN_S * 1e3:.0f} ms CPU)"
        )
        print(
            f"{'page':<23}{'input':<14}{'first':>7}{'new value: cpu':>16}{'max':>7}{'wall':>7}"
            f"{'cached: cpu':>13}{'wall':>7}"
        )
    worst = 0.0
    for (label, key), r in ({} if args.no_rerun else bench_reruns()).items():
        if "missing" in r:
            print(f"{label:<23}{key:<14}  (no such input on this page: skipped)")
            continue
        ok &= r["cold_cpu_s"] <= TARGET_RERUN_S
        worst = max(worst, r["cold_cpu_s"])
        ms = {k: "" if v != v else f"{v * 1e3:.0f}ms" for k, v in r.items()}
        print(
            f"{label:<23}{key:<14}{ms['first_run_s']:>7}{ms['cold_cpu_s']:>16}"
            f"{ms['cold_cpu_max_s']:>7}{ms['cold_wall_s']:>7}{ms['warm_cpu_s']:>13}"
            f"{ms['warm_wall_s']:>7}"
        )
    if not args.no_rerun:
        print(f"slowest input (median CPU of new values): {worst * 1e3:.0f} ms")
    if not args.no_work:
        _report_first_view()
    if not args.no_browser:
        if not Path(CHROMIUM).exists():
            print(f"first paint: skipped, {CHROMIUM} is missing (apt-get install chromium)")
        else:
            ok &= _report_first_paint(args)
    print("\nall within target" if ok else "\nSOME FIGURES ARE OVER TARGET")
    return 0


if __name__ == "__main__":
    sys.exit(main())
