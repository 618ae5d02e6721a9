"""What one input kind costs a page's first paint: the bare page of benchmarks/bench_app.py with
16 inputs of one kind above its number and chart, loaded in chromium beside the bare page.

    .venv/bin/python benchmarks/bench_input_kinds.py              # every kind, 3 loads each
    .venv/bin/python benchmarks/bench_input_kinds.py --kinds selectbox,radio --repeats 5
    .venv/bin/python benchmarks/bench_input_kinds.py --kinds metric,metric_columns,markdown_columns

Every Streamlit input kind is a JavaScript chunk loaded on first use, so a page with fewer
kinds loads fewer chunks; this measures whether that is what costs the first chart, or the
elements themselves. Each test page is benchmarks/bare_page.py (title, one metric, one plotly
chart) with 16 inputs of one kind (or 16 Markdown lines, which load no chunk, or four each of
four kinds: "mixed") between the
title and the metric, where the app's pages put their inputs; or 16 of another element the
pages draw before their charts (metrics, alone or in rows of four columns as the headlines
are, Markdown in the same columns, long captions). Printed per kind: the renderer
main thread's CPU seconds at the first number and at the first chart (medians) and their
ratios to the bare page loaded just before (bench_app's method: both moments taken in the
page; CPU time, which the machine's load inflates far less than wall time).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_app import _paint  # noqa: E402

from tests._browser import CHROMIUM, CHROMIUM_ARGS, served_app  # noqa: E402

#: kind -> one input of that kind, as the app's pages draw it (``{i}``: its index)
INPUTS: dict[str, str] = {
    "selectbox": 'st.selectbox("Choice {i}", ["a", "b", "c"], key="s{i}")',
    "radio": 'st.radio("Choice {i}", ["a", "b", "c"], horizontal=True, key="r{i}")',
    "number_input": 'st.number_input("Count {i}", value=4, step=1, key="n{i}")',
    "text_input": 'st.text_input("Size {i}", value="1GB", key="t{i}")',
    "checkbox": 'st.checkbox("Flag {i}", value=True, key="c{i}")',
    "markdown": 'st.markdown("Choice {i}: **a**")',
}
#: the other elements the app's pages draw before their charts, 16 of one at a time: metrics,
#: alone or in rows of four columns (the pages' headlines, with or without a help tooltip),
#: Markdown in the same columns, long captions
ELEMENTS: dict[str, str] = {
    "metric": 'st.metric("Label {i}", "{i}.5 ms")',
    "metric_columns": '_c = st.columns(4) if {i} % 4 == 0 else _c; _c[{i} % 4].metric("Label {i}", "{i}.5 ms")',
    "metric_help": '_c = st.columns(4) if {i} % 4 == 0 else _c; _c[{i} % 4].metric("Label {i}", "{i}.5 ms", help="Help {i}")',
    "markdown_columns": '_c = st.columns(4) if {i} % 4 == 0 else _c; _c[{i} % 4].markdown("Label {i}: **{i}.5 ms**")',
    "caption_long": 'st.caption("Step band (compute, scaling beyond one node, collectives; checked on published runs): 1.2 s to 1.5 s. " * 5 + "{i}")',
}
#: four kinds, four of each in turn (select box, number, text, checkbox): four chunks, not one
MIXED = ("selectbox", "number_input", "text_input", "checkbox")
COUNT = 16

_PAGE = """import plotly.graph_objects as go
import streamlit as st

st.title("Bare page")
{inputs}
st.metric("A number", "42 ms")
x = [2.0**k for k in range(3, 35)]
figure = go.Figure(go.Scatter(x=x, y=[v / 1e9 for v in x], mode="lines", name="line"))
figure.update_xaxes(type="log")
st.plotly_chart(figure, key="bare_chart")
"""


def page_source(kind: str) -> str:
    """The bare page with :data:`COUNT` inputs of ``kind`` (or ``"mixed"``: :data:`MIXED` in
    turn) above its number and chart."""
    kinds = [MIXED[i % len(MIXED)] if kind == "mixed" else kind for i in range(COUNT)]
    lines = INPUTS | ELEMENTS
    return _PAGE.format(inputs="\n".join(lines[k].format(i=i) for i, k in enumerate(kinds)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--kinds", help="comma-separated subset of: " + ", ".join([*INPUTS, "mixed", *ELEMENTS])
    )
    parser.add_argument("--repeats", type=int, default=3, help="loads of each page in turn")
    args = parser.parse_args()
    for flag, least in (("--repeats", 1),):
        value = getattr(args, flag[2:].replace("-", "_"))
        if not value >= least:  # NaN too
            parser.error(f"{flag} must be at least {least} (got {value:g})")
    kinds = args.kinds.split(",") if args.kinds else [*INPUTS, "mixed"]
    if not Path(CHROMIUM).exists():
        print(f"skipped: {CHROMIUM} is missing (apt-get install chromium)")
        return 0
    from playwright.sync_api import sync_playwright

    os.chdir(ROOT)
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        scripts = {"bare": str(ROOT / "benchmarks" / "bare_page.py")}
        for kind in kinds:
            path = Path(tmp) / f"kind_{kind}.py"
            path.write_text(page_source(kind))
            scripts[kind] = str(path)
        urls = {k: stack.enter_context(served_app(script=s)) for k, s in scripts.items()}
        pw = stack.enter_context(sync_playwright())
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        for url in urls.values():  # warm-up: the server's first session imports plotly
            _paint(browser, f"{url}/", None)
        context = browser.new_context()  # a returning visitor: the JS is in the cache
        for url in urls.values():
            _paint(browser, f"{url}/", context)
        loads: dict[str, list[tuple[float, float, float, float]]] = {k: [] for k in urls}
        for _ in range(args.repeats):
            for kind, url in urls.items():
                loads[kind].append(_paint(browser, f"{url}/", context))
        browser.close()
    print(
        f"{COUNT} inputs of one kind above the bare page's number and chart; chromium, cached, "
        f"{args.repeats} loads each in turn; load average {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} cores. Renderer main-thread CPU, medians; ratios: median of page / "
        "the bare load just before it"
    )
    print(f"{'inputs':<14}{'number':>8}{'chart':>8}{'number':>9}{'chart':>8}  each chart's CPU")
    for kind, rows in loads.items():
        ratio = [
            statistics.median(a[k] / b[k] for a, b in zip(rows, loads["bare"], strict=True))
            for k in (2, 3)
        ]
        print(
            f"{kind:<14}{statistics.median(r[2] for r in rows):>7.2f}s"
            f"{statistics.median(r[3] for r in rows):>7.2f}s{ratio[0]:>8.2f}x{ratio[1]:>7.2f}x  "
            + ", ".join(f"{r[3]:.2f}" for r in rows)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
