"""The ``costmodel`` command line: every question from the shell, grids to CSV and Parquet.

A thin face over the library: each subcommand parses units through :mod:`costmodel.units`, calls
one library function and prints its answer, with units for people by default and as JSON with
``--json``. Bad input (an unknown name, a unit that does not parse, an inconsistent grid, an
unwritable output path) exits with code 2 and one line on stderr; nothing prints a traceback.

Examples::

    costmodel collective all_reduce --size 14GB --ranks 64 --bandwidth 50GB/s
    costmodel predict --op all_reduce --cluster dgx-h100 --nodes 2 --sizes 8B:16GB --json
    costmodel sweep --set preset=dgx-h100,dgx-a100 --set nodes=1..16x2 --set size=8B..16GB x2 -o out.parquet

The package follows the subcommand groups: :mod:`._common` (apps, exit-2 error handling,
output helpers), :mod:`.comm` (collective, predict, sweep), :mod:`.training` (memory, batch,
step, scenario, train), :mod:`.catalog` (presets, archs), :mod:`.measure` (validate,
calibrate) and :mod:`.serve` (app). The commands are registered below, in the order ``--help``
lists them.
"""

import functools
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import typer

from . import _common, catalog, comm, measure, serve, training
from ._common import EXIT_USAGE, JsonOpt, app, nccl_tests_app, presets_app, validate_app
from .catalog import archs, fabrics, presets_list, presets_schema, presets_show
from .comm import collective, predict, sweep
from .measure import (
    calibrate,
    nccl_tests_run,
    validate_compare,
    validate_compute,
    validate_torch,
)
from .serve import APP_SCRIPT, app_
from .training import batch, memory, scenario, step, train

__all__ = [
    "APP_SCRIPT",
    "EXIT_USAGE",
    "JsonOpt",
    "app",
    "app_",
    "archs",
    "fabrics",
    "batch",
    "calibrate",
    "collective",
    "main",
    "memory",
    "nccl_tests_app",
    "nccl_tests_run",
    "predict",
    "presets_app",
    "presets_list",
    "presets_schema",
    "presets_show",
    "scenario",
    "step",
    "sweep",
    "train",
    "validate_app",
    "validate_compare",
    "validate_compute",
    "validate_torch",
]


# --- the command table (registration order = the order --help lists) ---
# every command's options are checked against the one table of limits (_limits.LIMITS) first
_limited = _common.limited
app.callback()(_common._root)
app.command()(_limited(comm.collective))
app.command()(_limited(training.memory))
app.command()(_limited(training.batch))
app.command()(_limited(training.step))
app.command()(_limited(training.scenario))
app.command()(_limited(training.train))
app.command()(_limited(catalog.archs))
app.command()(_limited(catalog.fabrics))
presets_app.command("list")(_limited(catalog.presets_list))
presets_app.command("show")(_limited(catalog.presets_show))
presets_app.command("schema")(_limited(catalog.presets_schema))
app.command()(_limited(comm.predict))
app.command()(_limited(comm.sweep))
nccl_tests_app.command("run")(_limited(measure.nccl_tests_run))
validate_app.command("torch")(_limited(measure.validate_torch))
validate_app.command("compare")(_limited(measure.validate_compare))
validate_app.command("compute")(_limited(measure.validate_compute))
app.command()(_limited(measure.calibrate))
app.command("app")(_limited(serve.app_))


@functools.cache
def command() -> Any:
    """The click command of :data:`app`, built once per process: typer rebuilds it from every
    command's signature at each call of ``typer.main.get_command`` (about 34 ms here, each
    ``CliRunner.invoke`` of the tests too), and the app's commands are all registered when this
    module is imported. Click commands keep no state between invocations (a context per call)."""
    return typer.main.get_command(app)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``costmodel`` script; returns the exit code (2 for bad input).
    Warnings (a calibration that does not apply, ...) are printed once each, one line each."""
    import warnings

    cli = command()
    said: set[str] = set()

    def once(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        # Python's own "once per place" forgets what it showed whenever a catch_warnings block
        # inside the command changes the filters: a scenario on a calibrated cluster said the
        # same calibration warning two to six times
        # one line on stderr, ``costmodel: warning: ...``: Python's default names the source
        # file and prints the calling line, noise for a command-line user
        if str(message) not in said:
            said.add(str(message))
            _common.said_warning(str(message))  # --json's "warnings" carry it too
            # the library's marked names (`usd_per_gpu_hour`) as the command's options
            print(f"costmodel: warning: {_common.cli_words(str(message))}", file=file or sys.stderr)

    with warnings.catch_warnings():
        warnings.showwarning = once
        return int(
            cli.main(
                args=list(argv) if argv is not None else None,
                prog_name="costmodel",
                standalone_mode=False,
            )
            or 0
        )
