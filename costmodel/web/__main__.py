"""``python -m costmodel.web``: serve the app, the same command as ``costmodel app``."""

from __future__ import annotations

import typer

from costmodel.cli.serve import app_


def main() -> None:
    """Parse ``--port``/``--address``/``--headless`` as ``costmodel app`` does, then serve."""
    typer.run(app_)


if __name__ == "__main__":
    main()
