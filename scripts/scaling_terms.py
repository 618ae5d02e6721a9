"""Score candidate terms of the scaling path by grouped cross-validation; none is shipped.

The scaling path (``costmodel.step_fidelity.scaling_predictions``) carries the compute per token
of a series' smallest GPU count to a larger count by the compute fit's ratio between the two
micro-batches. Its largest errors (docs/step-fidelity.md, "What the gap is") are series whose
micro-batch changes with the count. Each candidate below multiplies that ratio by a factor of
the row and its base, with one constant (or one per GPU family) on a grid:

* ``microbatch-t0``: the micro-batch saturation ``T0`` of the compute fit's shape
  ``1 + h0/h + T0/T`` (costmodel/compute.py) chosen on the scaling rows instead of the
  one-node rows (a saturating efficiency curve in the tokens of a micro-batch);
* ``microbatch-t0-per-family``: the same, one ``T0`` per GPU family (ampere, hopper);
* ``state-share``: memory pressure, the time per token times ``1 + beta S`` with ``S`` the
  sharded model states' share of the HBM (``costmodel.strategy.memory``): less room for the
  caching allocator where the states fill the GPU;
* ``state-share-per-family``: the same, one ``beta`` per GPU family;
* ``memory-above-80``: memory pressure near the limit, ``1 + beta max(0, M / HBM - 0.8)``
  with ``M`` the predicted memory per GPU (the row's checkpointing, no allocator reserve).

Every grid point is a full pass of the scaling path through the step engine. Grouped CV leaves
out one (source, GPU type) group at a time, chooses the value with the least mean |error| on
the others (as ``scripts/fit_sync_loss.py``) and scores the group. A term would be kept only if
its held-out median, 90th percentile and maximum are all below the path's without it.

Writes costmodel/data/scaling_terms.toml (read by scripts/step_fidelity.py). Run (minutes):
    PYTHONPATH=. .venv/bin/python scripts/scaling_terms.py
"""

from __future__ import annotations

import datetime
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from costmodel._checks import FasterThanPeakError  # noqa: E402
from costmodel.architecture import load_arch  # noqa: E402
from costmodel.atomic import write_text_atomic  # noqa: E402
from costmodel.compute import _doc, flops_split, gpu_family, recompute_extra  # noqa: E402
from costmodel.step_fidelity import scaling_predictions, summary  # noqa: E402
from costmodel.steps_data import pure_dp_rows, row_gpu  # noqa: E402
from costmodel.strategy.layout import Layout  # noqa: E402
from costmodel.strategy.memory import strategy_memory  # noqa: E402

OUT = ROOT / "costmodel" / "data" / "scaling_terms.toml"
T0_GRID = (0.0, 256.0, 512.0, 1024.0, 2048.0, 3072.0, 4096.0, 6144.0, 8192.0, 16384.0)
BETA_GRID = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0)
ABOVE_GRID = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)
NEAR_LIMIT = 0.8  # share of the HBM above which ``memory-above-80`` adds time


class Features:
    """Per row: GPU family, the compute fit's shape pieces, memory shares (cached by row)."""

    def __init__(self) -> None:
        self._c: dict[int, dict[str, float | str]] = {}
        doc = _doc()
        self.h0, self.t0, self.rho = float(doc["h0"]), float(doc["t0"]), float(doc["rho"])

    def __call__(self, r: Any) -> dict[str, float | str]:
        key = int(r.name)
        if key not in self._c:
            a, g = load_arch(r.model), row_gpu(r)
            lin, att = flops_split(a, int(r.seq))
            rl, ra = recompute_extra(str(r.activation_checkpointing), lin, att)
            peak = float(g.bf16_dense_flops)
            k = float(g.fp8_dense_flops) / peak if r.precision == "fp8" else 1.0
            n = int(r.gpus)
            m = strategy_memory(
                Layout(strategy="fsdp", ranks=n, gpus_per_node=min(8, n)),
                arch=r.model,
                sequence_length=int(r.seq),
                micro_batch=int(r.micro_batch),
                recompute=str(r.activation_checkpointing),
            )
            hbm = float(r.gpu_memory_bytes)
            self._c[key] = {
                "family": gpu_family(g),
                "lin": lin * (1 + rl) / k,
                "att": att * (1 + ra),
                "h": float(a.hidden),
                "tokens": float(r.seq * r.micro_batch),
                "state": float(m.base.model_state_bytes) / hbm,
                "total": float(m.total_bytes) / hbm,
            }
        return self._c[key]

    def shape(self, r: Any, t0: float) -> float:
        """Time per token of the compute fit's shape at saturation ``t0`` [arbitrary units]."""
        f = self(r)
        lin, att, h, tok = (float(f[x]) for x in ("lin", "att", "h", "tokens"))
        return lin * (1 + self.h0 / h + t0 / tok) + self.rho * att


def candidates(feat: Features) -> dict[str, dict[float, Callable[[Any, Any], float]]]:
    """Form -> grid value -> factor(row, base) on the carried per-token compute."""

    def t0_term(x: float) -> Callable[[Any, Any], float]:
        def f(r: Any, b: Any) -> float:
            new = feat.shape(r, x) / feat.shape(b, x)
            return new / (feat.shape(r, feat.t0) / feat.shape(b, feat.t0))

        return f

    def pressure(name: str, beta: float, floor: float) -> Callable[[Any, Any], float]:
        def f(r: Any, b: Any) -> float:
            sr, sb = float(feat(r)[name]), float(feat(b)[name])
            return (1 + beta * max(0.0, sr - floor)) / (1 + beta * max(0.0, sb - floor))

        return f

    return {
        "microbatch-t0": {x: t0_term(x) for x in T0_GRID},
        "state-share": {x: pressure("state", x, 0.0) for x in BETA_GRID},
        "memory-above-80": {x: pressure("total", x, NEAR_LIMIT) for x in ABOVE_GRID},
    }


def grid_errors(
    form: str, grid: dict[float, Callable[[Any, Any], float]], df: Any, obs: Any
) -> dict[float, dict[int, float]]:
    """Grid value -> row index -> relative error of the scaling path with that term. A value
    that carries some row's compute past its GPU's dense peak is no candidate (the step
    refuses such a compute, ``FasterThanPeakError``): it is said and left unscored, where it
    stopped the whole script with a traceback."""
    errors: dict[float, dict[int, float]] = {}
    for x, f in grid.items():
        try:
            errors[x] = {i: p / obs[i] - 1 for i, _, p in scaling_predictions(df, term=f)}
        except FasterThanPeakError as err:
            print(f"{form} = {x!r}: not scored, {err}")
    return errors


def grouped_cv(
    errors: dict[float, dict[int, float]], groups: Any, family: dict[int, str], per_family: bool
) -> tuple[dict[str, float], dict[str, float]]:
    """Held-out summary and the value chosen without each group (per family: the family of
    the group's rows; mean |error| on the training rows of that family)."""
    idx = list(next(iter(errors.values())))
    held: list[float] = []
    chosen: dict[str, float] = {}
    for g in sorted(set(groups[idx])):
        test = [i for i in idx if groups[i] == g]
        for fam in sorted({family[i] for i in test}) if per_family else [None]:
            train = [i for i in idx if groups[i] != g and (fam is None or family[i] == fam)]
            rows = [i for i in test if fam is None or family[i] == fam]
            best = min(errors, key=lambda x: float(np.mean(np.abs([errors[x][i] for i in train]))))
            chosen[g if fam is None else f"{g} ({fam})"] = best
            held += [errors[best][i] for i in rows]
    return summary(held), chosen


def main() -> None:
    from scripts._argv import check_argv

    check_argv(__doc__, ())  # no options: --help prints the docstring, a typo stops here
    df = pure_dp_rows()
    obs = df.tokens_per_s_per_gpu
    groups = df.source + "/" + df.gpu_type
    feat = Features()
    none = {i: p / obs[i] - 1 for i, _, p in scaling_predictions(df)}
    family = {i: str(feat(df.loc[i])["family"]) for i in none}
    base = summary(list(none.values()))
    lines = [
        "# Candidate terms of the scaling path scored by scripts/scaling_terms.py (generated;",
        "# do not edit). Grouped CV: one (source, GPU type) group of the scaling rows left out,",
        "# the grid value with the least mean |error| on the rest. None is shipped unless kept.",
        f'fitted_on = "{datetime.date.today().isoformat()}"',
        f"rows = {len(none)}",
        "",
        "[none]",
        *(f"{m} = {base[m]!r}" for m in ("median", "p90", "max")),
        "",
    ]
    for form, grid in candidates(feat).items():
        errors = grid_errors(form, grid, df, obs)
        for per_family in (False, True):
            name = form + ("-per-family" if per_family else "")
            cv, chosen = grouped_cv(errors, groups, family, per_family)
            keep = all(cv[m] < base[m] for m in ("median", "p90", "max"))
            print(f"{name}: grouped CV {cv} vs none {base}; chosen {chosen}; kept={keep}")
            lines += [
                f'["{name}"]',
                f"kept = {'true' if keep else 'false'}",
                *(f"{m} = {cv[m]!r}" for m in ("median", "p90", "max")),
                "chosen = { " + ", ".join(f'"{g}" = {v!r}' for g, v in chosen.items()) + " }",
                "",
            ]
    write_text_atomic(OUT, "\n".join(lines))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
