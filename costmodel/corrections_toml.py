"""Write correction parameters as TOML (the small subset they need: numbers and tables)."""

from __future__ import annotations

import math
from collections.abc import Mapping


def _num(v: object) -> str:
    x = float(v)  # type: ignore[arg-type]
    if not math.isfinite(x):
        raise ValueError(f"correction parameter {v!r} must be finite")
    return repr(x)


def _table(name: str, params: Mapping[str, object]) -> list[str]:
    lines = [f"[{name}]"]
    subs = []
    for k in sorted(params):
        v = params[k]
        if isinstance(v, Mapping):
            subs.append((k, v))
        else:
            lines.append(f"{k} = {_num(v)}")
    for k, v in subs:
        inner = ", ".join(f'"{kk}" = {_num(vv)}' for kk, vv in sorted(v.items()))
        lines.append(f"{k} = {{ {inner} }}")
    return lines


def dumps(
    fitted_on: str,
    nccl_version: str,
    all_params: Mapping[str, object],
    cv: Mapping[str, Mapping[str, object]],
    *,
    groups: Mapping[str, str] | None = None,
    bands: Mapping[str, Mapping[str, Mapping[str, Mapping[str, float]]]] | None = None,
    measured_fabrics: list[str] | tuple[str, ...] = (),
    dropped_terms: list[str] | tuple[str, ...] = (),
    coverage: Mapping[str, Mapping[str, Mapping[str, float]]] | None = None,
    folds: Mapping[str, Mapping[str, Mapping[str, object]]] | None = None,
) -> str:
    """The fitted_corrections.toml text: header, [all], one [cv."run"] table per run (the
    parameters fitted without the run's source), then [groups] (run -> source) and
    [band."model"."regime"."size class"] (grouped-CV error bands, costmodel.uncertainty), and
    [coverage."regime"."size class"] (the nccl band's nominal and leave-one-source-out measured
    coverage; ``measured`` absent where a cell rests on one source), and per harder fold kind
    (``family``, ``op``) [fold."kind"."run"]: the parameters fitted without the run's fabric
    family or op class, from which the bands are recomputed.

    >>> print(dumps("2026-12-01", "2.30.7", {"a": 1, "t": {"x": 2}}, {"01": {"a": 0.5}}))
    ... # doctest: +NORMALIZE_WHITESPACE
    # Correction parameters fitted by scripts/fit_corrections.py (generated; do not edit).
    fitted_on = "2026-12-01"
    nccl_version = "2.30.7"
    <BLANKLINE>
    [all]
    a = 1.0
    t = { "x" = 2.0 }
    <BLANKLINE>
    [cv."01"]
    a = 0.5
    <BLANKLINE>
    """
    out = [
        "# Correction parameters fitted by scripts/fit_corrections.py (generated; do not edit).",
        f'fitted_on = "{fitted_on}"',
        f'nccl_version = "{nccl_version}"',
    ]
    if measured_fabrics:
        out.append("measured_fabrics = [" + ", ".join(f'"{f}"' for f in measured_fabrics) + "]")
    if dropped_terms:
        out.append("dropped_terms = [" + ", ".join(f'"{t}"' for t in dropped_terms) + "]")
    out += ["", *_table("all", all_params), ""]
    for run in cv:
        out += [*_table(f'cv."{run}"', cv[run]), ""]
    for kind, per_run in (folds or {}).items():  # the harder folds the bands come from
        for run in per_run:
            out += [*_table(f'fold."{kind}"."{run}"', per_run[run]), ""]
    if groups:
        out += ["[groups]", *(f'"{k}" = "{v}"' for k, v in groups.items()), ""]
    for model, regs in (bands or {}).items():
        for reg, classes in regs.items():
            for sc, vals in classes.items():
                out += [*_table(f'band."{model}"."{reg}"."{sc}"', vals), ""]
    for reg, classes in (coverage or {}).items():  # measured coverage of the nccl band
        for sc, vals in classes.items():
            finite = {k: v for k, v in vals.items() if math.isfinite(float(v))}
            out += [*_table(f'coverage."{reg}"."{sc}"', finite), ""]
    return "\n".join(out)
