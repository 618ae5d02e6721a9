"""The fit and report scripts' command line: ``-h``/``--help`` and unknown options.

Shared by every script that fits or reports and writes a shipped file
(``scripts/fit_corrections.py``, ``calibration_holdout.py``, ``fit_compute.py``,
``fit_sync_loss.py``, ``fit_ddp_overhead.py``, ``scaling_terms.py``, ``step_fidelity.py``), which
take a few flags or none and would otherwise run a long job (and rewrite shipped files) on
``--help`` or a typo.
"""

from __future__ import annotations

import sys


def check_argv(usage: str | None, flags: tuple[str, ...], with_value: tuple[str, ...] = ()) -> None:
    """``-h``/``--help`` prints ``usage`` (the script's docstring); an option the script does
    not know stops it, exit 2, before it computes or writes anything (``--help`` or a typo used
    to run the whole job and rewrite the shipped files)."""
    args = sys.argv[1:]
    if "-h" in args or "--help" in args:
        print(usage)
        raise SystemExit(0)
    i = 0
    while i < len(args):
        if args[i] in with_value and i + 1 < len(args):
            i += 2
        elif args[i] in flags:
            i += 1
        else:
            allowed = ", ".join([*flags, *(f"{v} VALUE" for v in with_value)]) or "no option"
            print(f"{sys.argv[0]}: unknown option {args[i]!r}; allowed: {allowed}", file=sys.stderr)
            raise SystemExit(2)
