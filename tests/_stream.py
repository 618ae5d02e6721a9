"""A headless Streamlit client: opens sessions over ``/_stcore/stream`` as a browser does.

Streamlit's browser side talks to the server over one websocket per tab: it sends protobuf
``BackMsg`` frames (``rerun_script`` with the page, the URL query and the widget states) and
receives ``ForwardMsg`` frames (``new_session``, the page's elements as ``delta``, then
``script_finished``). This module speaks that protocol with the message classes of the
installed streamlit package, so a test or a benchmark can drive many sessions without a
browser: the server does the same work per rerun (script run, element marshalling, sending)
as for a browser; only the drawing is left out.

Used by tests/test_serve.py (a session id for a raw upload) and benchmarks/bench_load.py.
"""

from __future__ import annotations

import asyncio
import time
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.asyncio.client import connect

#: The cookie Streamlit's XSRF protection checks (set on GET /_stcore/health).
XSRF_COOKIE = "_streamlit_xsrf"


def xsrf_token(base_url: str) -> str:
    """The XSRF cookie the server hands a browser on its first request (its value)."""
    with urllib.request.urlopen(f"{base_url}/_stcore/health", timeout=10) as response:
        for header in response.headers.get_all("Set-Cookie") or []:
            name, _, rest = header.partition("=")
            if name.strip() == XSRF_COOKIE:
                return rest.split(";", 1)[0]
    raise RuntimeError("the server set no XSRF cookie")


@dataclass
class RunResult:
    """One script run of a session, as the client saw it."""

    wall_s: float
    status: str  # "ok", "compile_error", "early", "timeout", "closed"
    exceptions: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # red messages (st.error)
    metrics: dict[str, str] = field(default_factory=dict)  # st.metric label -> value shown
    elements: int = 0
    message_bytes: int = 0

    @property
    def ok(self) -> bool:
        return self.status == "ok" and not self.exceptions


class Session:
    """One browser tab: a websocket to ``/_stcore/stream`` and the widgets it has seen."""

    def __init__(self, base_url: str, page: str, query: str = "") -> None:
        self.base_url = base_url
        self.page = page
        self.query = query
        self.session_id = ""
        self.widgets: dict[str, tuple[str, Any]] = {}  # user key -> (widget id, element)
        self._ws: Any = None
        self._token = ""

    async def open(self, timeout_s: float = 60.0) -> RunResult:
        """Connect and run the page once (a browser opening ``/<page>?<query>``)."""
        self._token = await asyncio.to_thread(xsrf_token, self.base_url)
        ws_url = self.base_url.replace("http://", "ws://", 1) + "/_stcore/stream"
        self._ws = await connect(
            ws_url,
            subprotocols=["streamlit", self._token],  # type: ignore[list-item]
            additional_headers={
                "Origin": self.base_url,
                "Cookie": f"{XSRF_COOKIE}={self._token}",
            },
            max_size=None,
            open_timeout=timeout_s,
        )
        return await self.rerun(timeout_s=timeout_s)

    @property
    def cookie(self) -> str:
        return f"{XSRF_COOKIE}={self._token}"

    @property
    def token(self) -> str:
        return self._token

    async def rerun(
        self, changes: dict[str, Any] | None = None, timeout_s: float = 60.0
    ) -> RunResult:
        """Rerun the script with the widgets named in ``changes`` (user key -> new value) set,
        as a browser does when an input changes; wait for ``script_finished``."""
        msg = BackMsg()
        state = msg.rerun_script
        state.query_string = self.query
        state.page_name = self.page
        for key, value in (changes or {}).items():
            widget_id, kind = self.widgets[key]
            w = state.widget_states.widgets.add()
            w.id = widget_id
            if kind == "int":
                w.int_value = int(value)
            elif kind == "double":
                w.double_value = float(value)
            else:
                w.string_value = str(value)
        start = time.perf_counter()
        await self._ws.send(msg.SerializeToString())
        result = RunResult(wall_s=0.0, status="timeout")
        try:
            async with asyncio.timeout(timeout_s):
                while True:
                    raw = await self._ws.recv()
                    result.message_bytes += len(raw)
                    if self._read(raw, result):
                        break
        except TimeoutError:
            result.status = "timeout"
        except Exception as exc:  # noqa: BLE001  (a dropped connection is a result, not a crash)
            result.status = "closed"
            result.exceptions.append(repr(exc))
        result.wall_s = time.perf_counter() - start
        return result

    def _read(self, raw: bytes, result: RunResult) -> bool:
        """Take one ForwardMsg into ``result``; True when the script run has finished."""
        fm = ForwardMsg()
        fm.ParseFromString(raw)
        kind = fm.WhichOneof("type")
        if kind == "new_session":
            if fm.new_session.initialize.session_id:
                self.session_id = fm.new_session.initialize.session_id
        elif kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
            element = fm.delta.new_element
            etype = element.WhichOneof("type")
            result.elements += 1
            if etype == "exception":
                result.exceptions.append(f"{element.exception.type}: {element.exception.message}")
            elif etype == "alert" and element.alert.format == 1:  # Alert.ERROR
                result.errors.append(element.alert.body)
            elif etype == "metric":
                result.metrics[element.metric.label] = element.metric.body
            elif etype is not None:
                self._remember(etype, getattr(element, etype))
        elif kind == "script_finished":
            result.status = {0: "ok", 1: "compile_error", 2: "early", 3: "ok"}.get(
                fm.script_finished, "ok"
            )
            return fm.script_finished != 2  # an interrupted run is followed by the new one
        return False

    def _remember(self, etype: str, proto: Any) -> None:
        widget_id = getattr(proto, "id", "")
        if not isinstance(widget_id, str) or not widget_id.startswith("$$ID"):
            return
        parts = widget_id.split("-", 2)  # "$$ID-<hash>-<user key>"
        key = parts[2] if len(parts) == 3 else widget_id
        if etype == "number_input":
            kind = "int" if proto.data_type == 0 else "double"
        elif etype == "text_input":
            kind = "string"
        else:
            kind = etype
        self.widgets[key] = (widget_id, kind)

    async def close(self) -> None:
        if self._ws is not None:
            await self._ws.close()
            self._ws = None
