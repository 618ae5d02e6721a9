"""``python -m costmodel.web``: serve the app, the same command as ``costmodel app``."""

from __future__ import annotations

import sys


def main() -> None:
    """``costmodel app`` with these arguments, through the CLI's entry point: the same options
    (``--port``/``--address``/``--headless``) and the same refusals, one line and exit 2 (a port
    in use, an address of no interface), where ``typer.run`` printed a traceback."""
    from costmodel.cli import main as cli_main

    sys.exit(cli_main(["app", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
