"""``costmodel app``: serve the Streamlit app (costmodel.web.launch; python -m costmodel.web)."""

from __future__ import annotations

from typing import Annotated

import typer

from costmodel.web import launch

APP_SCRIPT = launch.APP_SCRIPT
"""The Streamlit entry point `costmodel app` serves (costmodel/web/app.py, in the wheel)."""


# --- app --------------------------------------------------------------------------------------
def app_(
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to serve on.")] = 8501,
    address: Annotated[
        str | None,
        typer.Option(help="Address to listen on (0.0.0.0: every interface, as in the image)."),
    ] = None,
    headless: Annotated[bool, typer.Option(help="Do not open a browser.")] = True,
) -> None:
    """Start the Streamlit app packaged in costmodel (costmodel/web/app.py).

    The server options the app depends on (5 MiB upload limit, no file watcher, no usage
    statistics) are passed from code, whatever folder it starts in. SIGTERM, SIGINT and SIGHUP
    are forwarded to the server, and the command returns when the server has stopped.

    Example: costmodel app --port 8501
    """
    script = APP_SCRIPT
    if not script.is_file():
        raise ValueError(f"app: {script} not found (the package is incomplete: reinstall it)")
    cmd = launch.streamlit_command(port=port, address=address, headless=headless, script=script)
    launch.check_port(port, address)  # a port in use: one line naming --port, exit 2
    raise typer.Exit(launch.serve(cmd))
