"""``costmodel app``: serve the Streamlit app."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer

APP_SCRIPT = Path(__file__).resolve().parent.parent.parent / "app.py"
"""The Streamlit entry point `costmodel app` serves (top level of the source tree)."""


# --- app --------------------------------------------------------------------------------------
def app_(
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to serve on.")] = 8501,
    headless: Annotated[bool, typer.Option(help="Do not open a browser.")] = True,
) -> None:
    """Start the Streamlit app (streamlit run app.py).

    Example: costmodel app --port 8501
    """
    script = APP_SCRIPT
    if not script.is_file():
        raise ValueError(f"app: {script} not found (the app ships with the source tree)")
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(script),
        "--server.port",
        str(port),
        "--server.headless",
        str(headless).lower(),
        "--browser.gatherUsageStats",
        "false",
    ]
    raise typer.Exit(subprocess.call(cmd))
