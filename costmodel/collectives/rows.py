"""The table: one affine cost row per (op, algorithm), its equation, and the lookup
of a row by name (aliases included). The coefficients are in the package docstring's table."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..tables import canonical_op
from ..units import choice_name

Algorithm = Literal[
    "ring",
    "tree",
    "binomial_tree",
    "recursive_doubling",
    "halving_doubling",
    "nvls",
    "naive_root",
    "naive_all_to_all",
    "halving",
    "chain",
    "pairwise",
]


# A coefficient of a row, called as f(N, L). It is duck-typed on purpose: the scalar fast path of
# collective_time calls it with floats, the array path with float arrays, and L is None for a row
# whose equation has no L (such a row never reads it). So it is typed Any -> Any: mypy does not
# check the table's lambdas (their equations are checked by the tests against the papers' values).
_Coef = Callable[[Any, Any], Any]


@dataclass(frozen=True)
class _Row:
    """Coefficients of one affine cost row, each a function of (N, L=ceil(log2 N)) arrays."""

    latency_steps: _Coef
    bandwidth_factor: _Coef
    reduction_factor: _Coef
    equation: str

    @property
    def uses_log(self) -> bool:
        """Whether the row needs L = ceil(log2 N) (computed only then: it costs a pass)."""
        return "L" in self.equation

    def log(self, n: np.ndarray) -> np.ndarray | None:
        return _ceil_log2(n) if self.uses_log else None


def _zero(n: np.ndarray, L: np.ndarray) -> np.ndarray:  # noqa: N803
    return 0.0 * n


def _one(n: np.ndarray, L: np.ndarray) -> np.ndarray:  # noqa: N803
    return 0.0 * n + 1.0


def _n_minus_1(n: np.ndarray, L: np.ndarray) -> np.ndarray:  # noqa: N803
    return n - 1.0


def _frac(n: np.ndarray, L: np.ndarray) -> np.ndarray:  # noqa: N803
    return (n - 1.0) / n


def _log(n: np.ndarray, L: np.ndarray) -> np.ndarray:  # noqa: N803
    return L


_ROWS: dict[str, dict[str, _Row]] = {
    "all_reduce": {
        # Patarasuk & Yuan 2009: reduce-scatter + all-gather on a ring
        "ring": _Row(
            lambda n, L: 2.0 * (n - 1.0),
            lambda n, L: 2.0 * (n - 1.0) / n,
            _frac,
            "2(N-1) a + 2(N-1)/N M b + (N-1)/N M g",
        ),
        # Sanders, Speck & Traff 2009: pipelined double binary tree (NCCL "Tree")
        "tree": _Row(
            lambda n, L: 2.0 * L, lambda n, L: 2.0 + 0.0 * n, _frac, "2L a + 2 M b + (N-1)/N M g"
        ),
        # Thakur et al. 2005: binomial-tree reduce then binomial-tree broadcast
        "binomial_tree": _Row(
            lambda n, L: 2.0 * L, lambda n, L: 2.0 * L, _log, "2L (a + M b) + L M g"
        ),
        # Thakur et al. 2005: recursive doubling, the full vector each round
        "recursive_doubling": _Row(_log, _log, _log, "L (a + M b + M g)"),
        # Thakur et al. 2005 (Rabenseifner): recursive-halving reduce-scatter + doubling all-gather
        "halving_doubling": _Row(
            lambda n, L: 2.0 * L,
            lambda n, L: 2.0 * (n - 1.0) / n,
            _frac,
            "2L a + 2(N-1)/N M b + (N-1)/N M g",
        ),
        # NVLink SHARP: each GPU sends and receives M(1+1/N); the switch reduces (nccl-tests #239)
        "nvls": _Row(_one, lambda n, L: (n + 1.0) / n, _zero, "a + (N+1)/N M b"),
        # reduce to a root, then broadcast from it: the root's link is the bottleneck
        "naive_root": _Row(
            lambda n, L: 2.0 * (n - 1.0),
            lambda n, L: 2.0 * (n - 1.0),
            _n_minus_1,
            "2(N-1)(a + M b) + (N-1) M g",
        ),
        # every rank sends its whole buffer to every other rank and reduces locally
        "naive_all_to_all": _Row(_n_minus_1, _n_minus_1, _n_minus_1, "(N-1)(a + M b) + (N-1) M g"),
    },
    "reduce_scatter": {
        "ring": _Row(_n_minus_1, _frac, _frac, "(N-1) a + (N-1)/N M (b + g)"),
        "halving": _Row(_log, _frac, _frac, "L a + (N-1)/N M (b + g)"),
    },
    "all_gather": {
        "ring": _Row(_n_minus_1, _frac, _zero, "(N-1) a + (N-1)/N M b"),
        "recursive_doubling": _Row(_log, _frac, _zero, "L a + (N-1)/N M b"),
    },
    "broadcast": {
        "chain": _Row(_n_minus_1, _one, _zero, "(N-1) a + M b"),
        "binomial_tree": _Row(_log, _log, _zero, "L (a + M b)"),
    },
    "reduce": {
        "chain": _Row(_n_minus_1, _one, _one, "(N-1) a + M (b + g)"),
        "binomial_tree": _Row(_log, _log, _log, "L (a + M b + M g)"),
    },
    "all_to_all": {
        "pairwise": _Row(_n_minus_1, _frac, _zero, "(N-1) a + (N-1)/N M b"),
    },
}

ALGORITHMS: dict[str, tuple[str, ...]] = {op: tuple(rows) for op, rows in _ROWS.items()}

#: What a row's formula assumes of the hardware beyond a link: the one note every surface that
#: runs the formulas over one link (``collective --ranks --bandwidth``, the Collectives page's
#: one-link view) shows next to that row and its "fastest" line. NVLS's a + (N+1)/N M b is the
#: traffic of a reduction done in the switch; a link between GPUs, PCIe or a NIC has none.
LINK_HARDWARE_NOTES: dict[str, str] = {
    "nvls": "nvls needs in-switch reduction (NVLink SHARP: an NVSwitch with NVLS, as in "
    "H100/H200/B200 NVLink systems); a plain link, PCIe or a NIC cannot run it, so its row is "
    "what such a switch would give",
}


def link_hardware_note(algorithm: str) -> str:
    """The note :data:`LINK_HARDWARE_NOTES` keeps for ``algorithm`` over one link, "" for a row
    any link runs.

    >>> link_hardware_note("nvls")[:36]
    'nvls needs in-switch reduction (NVLi'
    >>> link_hardware_note("ring")
    ''
    """
    return LINK_HARDWARE_NOTES.get(str(algorithm).strip().lower(), "")


#: accepted alternative names -> canonical name, per op: ``"ring"`` for the ring-like row of the
#: ops whose row has another name (broadcast's and reduce's chain, all-to-all's pairwise
#: exchange), ``"pairwise"`` for the reduce-scatter ring (each rank sends one block to each
#: other rank in turn: the same volume and steps). Answered by the canonical name everywhere
#: (:func:`costmodel.models.algorithm_aliases` lists them per model).
ALIASES: dict[str, dict[str, str]] = {
    "all_reduce": {},
    "reduce_scatter": {"pairwise": "ring"},
    "all_gather": {},
    "broadcast": {"ring": "chain"},
    "reduce": {"ring": "chain"},
    "all_to_all": {"ring": "pairwise"},
}

EQUATIONS: dict[tuple[str, str], str] = {
    (op, name): row.equation for op, rows in _ROWS.items() for name, row in rows.items()
}
"""Human-readable equation of every (op, algorithm) row, for docs, the CLI and the app."""


def _ceil_log2(n: np.ndarray) -> np.ndarray:
    """ceil(log2 n) for whole n >= 1, exactly (frexp gives the binary exponent of n - 1)."""
    return np.frexp(n - 1.0)[1].astype(float)


def _op(op: str) -> str:
    """The op as :data:`OPS` spells it (``"all-reduce"``, ``"AllReduce"`` as the CLI reads
    them: :func:`costmodel.tables.canonical_op`), else ValueError naming the allowed ones."""
    if isinstance(op, str) and op in _ROWS:
        return op
    return canonical_op(op)


def canonical_algorithm(op: str, algorithm: str) -> str:
    """The row ``algorithm`` names under ``op``: an alias resolved (all-to-all's "ring" is
    its pairwise exchange, broadcast's "ring" the pipelined chain), any case; ValueError
    naming the allowed ones for an unknown name.

    >>> canonical_algorithm("all_to_all", "ring"), canonical_algorithm("broadcast", "RING")
    ('pairwise', 'chain')
    """
    op = _op(op)
    rows = _ROWS[op]
    if not isinstance(algorithm, str):  # a list or an array: one algorithm per call
        raise ValueError(
            f"algorithm: one name per call, got {algorithm!r}; allowed: {', '.join(rows)}"
        )
    name = ALIASES[op].get(algorithm, algorithm)
    if name not in rows:  # "RING" is ring, as every surface reads it (off the fast path)
        key = choice_name(algorithm)
        name = ALIASES[op].get(key, key)
    if name not in rows:
        valid = ", ".join(rows) + "".join(f"; {a} (alias of {c})" for a, c in ALIASES[op].items())
        raise ValueError(f"algorithm: unknown algorithm {algorithm!r} for {op}; allowed: {valid}")
    return name


def _row(op: str, algorithm: str) -> _Row:
    return _ROWS[_op(op)][canonical_algorithm(op, algorithm)]


def _scalar_log2(n: float) -> float:
    """ceil(log2 n) of a whole float n >= 1, exactly (the scalar twin of :func:`_ceil_log2`)."""
    return float((int(n) - 1).bit_length())


def _row_time_scalar(row: _Row, m: float, n: float, bw: float, a: float, g: float = 0.0) -> float:
    """One row's time for checked Python floats: :func:`collective_time`'s scalar path (0 s
    for one rank or an empty message, as the array path)."""
    if n == 1.0 or m == 0.0:
        return 0.0
    L = _scalar_log2(n)  # noqa: N806
    return float(
        row.latency_steps(n, L) * a
        + row.bandwidth_factor(n, L) * (m / bw)
        + row.reduction_factor(n, L) * m * g
    )
