"""How long ``import costmodel`` plus the first call takes, against ``import numpy, pydantic``.

Each case runs in a fresh interpreter (``python -c``), which times itself from before its first
import to after its first call: CPU time of the process (``time.process_time``; wall time on a
shared machine measures the neighbours too; interpreter start-up excluded, it is the same for
every case). Cases are interleaved and the minimum of ``--repeat`` runs is kept, so a
burst of load on a shared machine hits no case alone. Reported: each case's time and its ratio to
the baseline ``import numpy, pydantic``. Target: <= 1.2x for the notebook
formulas.

    .venv/bin/python benchmarks/bench_import.py [--repeat 9]

``-X importtime`` on a case names the modules to blame, e.g.::

    .venv/bin/python -X importtime -c "import costmodel as cm; cm.parse_bytes('1GB')"
"""

from __future__ import annotations

import argparse
import subprocess
import sys

TARGET_RATIO = 1.2
BASELINE = "import numpy, pydantic"

# name -> (statement timed in a fresh interpreter, held to the target?)
CASES: dict[str, tuple[str, bool]] = {
    "import numpy, pydantic": (BASELINE, True),
    "import costmodel": ("import costmodel as cm", True),
    "+ allreduce_time(numbers)": (
        "import costmodel as cm; cm.allreduce_time(14e9, 64, 50e9)",
        True,
    ),
    "+ training_memory": ("import costmodel as cm; cm.training_memory(7e9)", True),
    "+ hierarchical_allreduce_time": (
        "import costmodel as cm; cm.hierarchical_allreduce_time(1e9, 2, 8, 450e9, 50e9)",
        True,
    ),
    "+ global_batch": ("import costmodel as cm; cm.global_batch(4, 8, 64)", True),
    "+ parse_rate": ("import costmodel as cm; cm.parse_rate('400Gb/s')", True),
    "+ parse_bytes": ("import costmodel as cm; cm.parse_bytes('25MB')", True),
    # informational: a Cluster is a validated pydantic model read from a TOML preset
    "+ allreduce_time(cluster)": (
        "import costmodel as cm; cm.allreduce_time(1e9, cm.cluster('dgx-h100', nodes=2))",
        False,
    ),
}

_TIMER = "import time; _t = time.process_time()\n{stmt}\nprint(time.process_time() - _t)"


def _once(stmt: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", _TIMER.format(stmt=stmt)],
        check=True,
        capture_output=True,
        text=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def main(repeat: int = 9) -> dict[str, float]:
    best = dict.fromkeys(CASES, float("inf"))
    for _ in range(repeat):  # interleaved: one run of every case per round
        for name, (stmt, _held) in CASES.items():
            best[name] = min(best[name], _once(stmt))
    base = best["import numpy, pydantic"]
    print(f"fresh interpreter per run, min of {repeat}; target <= {TARGET_RATIO}x the baseline")
    print(f"{'case':<32}{'time':>10}{'ratio':>8}  verdict")
    ok = True
    for name, (_stmt, held) in CASES.items():
        ratio = best[name] / base
        verdict = ("met" if ratio <= TARGET_RATIO else "NOT met") if held else "(not held)"
        ok &= ratio <= TARGET_RATIO or not held
        print(f"{name:<32}{best[name] * 1e3:>8.0f}ms{ratio:>7.2f}x  {verdict}")
    print("\nall held cases within target" if ok else "\nSOME CASES ARE OVER TARGET")
    return best


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    for flag, least in (("--repeat", 1),):
        value = getattr(args, flag[2:].replace("-", "_"))
        if not value >= least:  # NaN too
            parser.error(f"{flag} must be at least {least} (got {value:g})")
    main(repeat=args.repeat)
