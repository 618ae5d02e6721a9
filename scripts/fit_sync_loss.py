"""Fit the synchronisation loss per doubling of the ranks (costmodel.compute.sync_loss_s).

Data: the scaling series of the published pure data-parallel runs (``costmodel.steps_data``;
one series = source, campaign (commit, mixed-precision mode), table, model, sequence,
precision, settings, GPU type): from the published
throughput at the smallest GPU count, the step engine predicts the larger counts
(``costmodel.step_fidelity.scaling_predictions``). Without the term the engine, its
communication overlapped, predicts almost no loss of tokens/s per GPU where the tables lose
2-10 %. Model: the step adds ``k log2 N`` of its compute (the ranks wait for the slowest).

For each ``k`` on a grid the whole scaling path is recomputed through the engine (the base
count's calibration includes the term too). ``k`` is the grid value with the least mean
|error| (L1: smoother in ``k`` than the median). Grouped cross-validation leaves out one
(source, GPU type) group at a time, chooses ``k`` on the other groups and scores the group.
The term is kept only if it lowers the grouped-CV median |error| below the engine's without it
(``k = 0``); the constant is then the choice on all groups.

Writes costmodel/data/fitted_sync_loss.toml. Run (a few minutes):
    PYTHONPATH=. .venv/bin/python scripts/fit_sync_loss.py
"""

from __future__ import annotations

import datetime
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from costmodel.atomic import write_text_atomic  # noqa: E402
from costmodel.step_fidelity import scaling_predictions, summary  # noqa: E402
from costmodel.steps_data import pure_dp_rows  # noqa: E402

OUT = ROOT / "costmodel" / "data" / "fitted_sync_loss.toml"
GRID = tuple(round(0.0025 * i, 4) for i in range(17))  # 0 to 0.04


def main() -> None:
    from scripts._argv import check_argv

    check_argv(__doc__, ())  # no options: --help prints the docstring, a typo stops here
    df = pure_dp_rows()
    obs = df.tokens_per_s_per_gpu
    errors: dict[float, dict[int, float]] = {}
    for k in GRID:
        errors[k] = {i: p / obs[i] - 1 for i, _, p in scaling_predictions(df, sync_loss=k)}
        e = np.abs(list(errors[k].values()))
        print(f"k={k}: in-sample median {np.median(e):.4f} mean {np.mean(e):.4f}")
    groups = df.source + "/" + df.gpu_type
    idx = list(errors[0.0])
    held: list[float] = []
    chosen: dict[str, float] = {}
    for g in sorted(set(groups[idx])):
        train = [i for i in idx if groups[i] != g]
        test = [i for i in idx if groups[i] == g]
        best = min(GRID, key=lambda k: float(np.mean(np.abs([errors[k][i] for i in train]))))
        chosen[g] = best
        held += [errors[best][i] for i in test]
    cv = summary(held)
    none = summary(list(errors[0.0].values()))
    k_in = min(GRID, key=lambda k: float(np.mean(np.abs(list(errors[k].values())))))
    keep = cv["median"] < none["median"]
    k = k_in if keep else 0.0
    lines = [
        "# Synchronisation loss per doubling of the ranks, fitted by scripts/fit_sync_loss.py",
        "# (generated; do not edit). Step += k log2(N) x compute (costmodel.compute.sync_loss_s).",
        "# Grouped CV: one (source, GPU type) group of the scaling rows left out at a time.",
        f'fitted_on = "{datetime.date.today().isoformat()}"',
        f"kept = {'true' if keep else 'false'}",
        f"per_doubling = {k!r}",
        f"rows = {len(idx)}",
        "",
        "[cv.none]",
        *(f"{m} = {none[m]!r}" for m in ("median", "p90", "max")),
        "",
        "[cv.fitted]",
        *(f"{m} = {cv[m]!r}" for m in ("median", "p90", "max")),
        "",
        "# k chosen without each group",
        "[cv.chosen]",
        *(f'"{g}" = {v!r}' for g, v in chosen.items()),
        "",
        "# in-sample median |error| by k",
        "[in_sample]",
        *(f'"{kk}" = {float(np.median(np.abs(list(e.values()))))!r}' for kk, e in errors.items()),
    ]
    write_text_atomic(OUT, "\n".join(lines) + "\n")
    print(f"none {none}; grouped CV {cv}; chosen {chosen}; kept={keep} k={k}; wrote {OUT}")


if __name__ == "__main__":
    main()
