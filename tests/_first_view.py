"""What a page sends before its first chart: the deterministic side of the first-paint goal.

A browser paints a page's first number and first chart after it has received, laid out and
drawn everything the script sent before them (and, when the script is quick, everything it sent
in the same burst). :func:`first_view` runs a page once headless (Streamlit's AppTest) and
records every message the script sends, in order: how many elements and bytes come before the
first ``st.plotly_chart``, how large each figure is, and how many charts and tables the first
view holds. These counts do not depend on the machine's load, so a test can bound them
(tests/test_first_view.py) where a timed test could not; benchmarks/bench_app.py prints them
beside the browser's timings.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Every page, as the first-paint benchmark opens it: (module in costmodel.web, URL query).
PAGES: dict[str, tuple[str, dict[str, str]]] = {
    "collectives": ("page_collectives", {}),
    "cluster": ("page_cluster", {}),
    "memory": ("page_memory", {}),
    "batch": ("page_batch", {}),
    "ddp": ("page_ddp", {}),
    "validate": (
        "page_validate",
        {
            "val_source": "A reference run",
            "val_reference": "13a_waynehacking8_1x4xH100-slice_auto_allreduce.txt",
        },
    ),
}

# The page runs inside this script; every message it sends is recorded (kind, bytes, the
# script thread's CPU time then, the element's label or "") on its way to Streamlit's queue.
_RECORDER = """
import time
import streamlit as st
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
from costmodel.web import {module} as page

ctx = get_script_run_ctx()
sent = []
send = ctx._enqueue
cpu0 = time.thread_time()


def record(msg):
    kind, label = None, ""
    if msg.WhichOneof("type") == "delta":
        which = msg.delta.WhichOneof("type")
        if which == "new_element":
            kind = msg.delta.new_element.WhichOneof("type")
            label = getattr(getattr(msg.delta.new_element, kind), "label", "")
            if kind == "heading" and msg.delta.new_element.heading.anchor == "answer":
                kind = "answer"  # common.headline_text: the sentence with the main number
    sent.append((kind, msg.ByteSize(), time.thread_time() - cpu0, label))
    send(msg)


ctx._enqueue = record
try:
    page.render()
finally:
    ctx._enqueue = send
st.session_state["_first_view"] = sent
"""

#: element kinds that are tables on screen (the grid is the heaviest element after a chart)
TABLE_KINDS = ("arrow_data_frame", "arrow_table", "dataframe")

#: element kinds whose React component Streamlit 1.67's frontend loads on first use, one
#: JavaScript chunk each (``lazy(() => import("./Metric....js"))`` in its index bundle; slider
#: and select_slider share one, checkbox and toggle one). Text (title, subheader, markdown,
#: caption, alerts) and layout blocks (columns, expanders, tabs) are drawn by the bundle itself.
#: A chunk that arrives before plotly's is evaluated before the first chart can be drawn:
#: st.dataframe's (1.65 MB with its dependencies) cost about 0.5 s of the browser's main thread
#: wherever it stood on the page, five input kinds about 0.3 s (chromium beside a bare page,
#: 2026-12-02).
LAZY_KINDS = frozenset(
    {
        "arrow_data_frame",
        "arrow_table",
        "dataframe",
        "table",
        "button",
        "button_group",
        "checkbox",
        "color_picker",
        "date_input",
        "download_button",
        "file_uploader",
        "html",
        "json",
        "metric",
        "multiselect",
        "number_input",
        "plotly_chart",
        "progress",
        "radio",
        "selectbox",
        "slider",
        "text_area",
        "text_input",
        "time_input",
    }
)


@dataclass(frozen=True)
class FirstView:
    """What one page's first view sends (:func:`first_view`)."""

    elements_before_chart: int  #: elements (widgets, metrics, text, tables) before the chart
    bytes_before_chart: int  #: every message before the first chart, and the chart itself [B]
    chart_bytes: tuple[int, ...]  #: each plotly chart's message, in order [B]
    tables: int  #: st.dataframe elements in the first view
    total_bytes: int  #: every message of the first view [B]
    cpu_to_chart_s: float  #: script thread CPU until the first chart was sent [s] (not exact)
    cpu_s: float  #: script thread CPU of the whole run [s] (not exact)
    #: distinct element kinds sent before the first chart, in order of first use
    kinds_before_chart: tuple[str, ...]
    #: distinct lazily loaded kinds (:data:`LAZY_KINDS`, one JavaScript chunk each) in the
    #: whole first view, the chart's included
    chunks: frozenset[str]
    #: the headline sentence with the page's main number (common.headline_text) is sent before
    #: the first metric: the browser draws it at once, a metric only after the chunks of the
    #: elements sent with it
    answer_first: bool

    @property
    def charts(self) -> int:
        return len(self.chart_bytes)


def sent_messages(
    module: str, query: dict[str, str], *, runs: int = 1
) -> list[tuple[str | None, int, float, str]]:
    """Every message the page ``module`` (in costmodel.web) sends, in order, in the last of
    ``runs`` runs of one AppTest session opened at the URL ``query``: (element kind or None,
    bytes, script thread CPU then [s], the element's label or "")."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_string(_RECORDER.format(module=module), default_timeout=120)
    at.query_params.update(query)
    for _ in range(runs):
        at.run()
        if at.exception:
            raise RuntimeError(f"{module}: {at.exception[0].value}")
    return at.session_state["_first_view"]


def first_view(page: str, *, runs: int = 2) -> FirstView:
    """Run ``page`` (a key of :data:`PAGES`) ``runs`` times in one AppTest session and describe
    the last run's messages (the runs after the first see warm caches, as a new session of a
    served app does)."""
    module, query = PAGES[page]
    sent = sent_messages(module, query, runs=runs)
    first = next((i for i, s in enumerate(sent) if s[0] == "plotly_chart"), len(sent) - 1)
    kinds = [s[0] for s in sent]
    return FirstView(
        elements_before_chart=sum(1 for s in sent[:first] if s[0] is not None),
        bytes_before_chart=sum(s[1] for s in sent[: first + 1]),
        chart_bytes=tuple(s[1] for s in sent if s[0] == "plotly_chart"),
        tables=sum(1 for s in sent if s[0] in TABLE_KINDS),
        total_bytes=sum(s[1] for s in sent),
        cpu_to_chart_s=sent[first][2] if sent else 0.0,
        cpu_s=sent[-1][2] if sent else 0.0,
        answer_first=_before(kinds, "answer", "metric"),
        kinds_before_chart=tuple(
            dict.fromkeys("heading" if k == "answer" else k for k in kinds[:first] if k)
        ),
        chunks=frozenset(k for k in kinds if k in LAZY_KINDS),
    )


def _before(kinds: list[str | None], first: str, then: str) -> bool:
    """``first`` is among ``kinds`` and comes before any ``then``."""
    if first not in kinds:
        return False
    return then not in kinds or kinds.index(first) < kinds.index(then)
