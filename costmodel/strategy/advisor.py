r"""Which strategy, and what makes it fit: every data-parallel layout of one job, ranked.

:func:`advise` evaluates every strategy (``ddp``, ``zero1``, ``zero2``, ``fsdp`` with and
without ``reshard_after_forward``, ``hsdp`` at each group size that divides the ranks) with
:func:`~.step.strategy_step` (memory per GPU, fit, step time with its band from the collective
predictions' error bands, tokens/s) and ranks them by step time among those that fit, then the
rest by memory.

:func:`advise_nodes` is the same at several node counts of one cluster, sharing its
predictions.

:func:`fit_suggestions` answers "what makes it fit" for a configuration that does not: the
changes a user can make (recomputation, DDP's ``gradient_as_bucket_view``, a ZeRO stage or
FSDP, a larger HSDP group, a smaller micro-batch with more accumulation, more GPUs, a larger
card, alone, with full recomputation or with each of those sharding changes, and, where none
of those fits, with each sharding change and full recomputation together), each evaluated
the same way, those that fit ranked by cost: GPU-seconds per token (``ranks x step / tokens per
step``, what a run costs at one price per GPU-hour), then by memory. The bucket view is offered
where the strategy is ddp, the view is off and it drops a bucket copy (two ranks or more); its
step time is the base's, so its cost change is 0.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..hardware import DEFAULT_NODES
from ..verdict import (
    GAP_RESOLUTION,
    WITHIN,
    Verdict,
    decide,
    pair_half_width,
    pct_pair,
    shared_compute_half_width,
    within_expected_error,
)
from .comm import CollectiveTimer, PredictionCache
from .layout import STRATEGIES, make_layout, wrap_units
from .step import (
    StrategyStep,
    check_cluster_argument,
    check_step_keywords,
    named_params,
    strategy_step,
    strategy_steps,
)


def candidate_layouts(ranks: int, gpus_per_node: int, **options: Any) -> list[dict[str, Any]]:
    """Every layout the advisor tries (keyword sets for :class:`~.layout.Layout`).

    >>> from costmodel.strategy import Layout
    >>> [Layout(ranks=16, gpus_per_node=8, **k).name for k in candidate_layouts(16, 8)]
    ['ddp', 'zero1', 'zero2', 'fsdp', 'fsdp (no reshard)', 'hsdp g=2', 'hsdp g=4', 'hsdp g=8']
    """
    out: list[dict[str, Any]] = [dict(o) for o in _FIXED_LAYOUTS]
    out += [{"strategy": "hsdp", "group_size": g} for g in hsdp_group_sizes(ranks, gpus_per_node)]
    return [{**options, **o} for o in out]


#: the layouts :func:`candidate_layouts` tries at every rank count, before hsdp's groups
_FIXED_LAYOUTS: tuple[dict[str, Any], ...] = (
    {"strategy": "ddp"},
    {"strategy": "zero1"},
    {"strategy": "zero2"},
    {"strategy": "fsdp"},
    {"strategy": "fsdp", "reshard_after_forward": False},
)


def hsdp_group_sizes(ranks: int, gpus_per_node: int) -> list[int]:
    """The hsdp sharding groups :func:`candidate_layouts` tries, ascending: every ``g`` with
    ``1 < g < ranks``, ``g | ranks``, and ``g | gpus_per_node`` or ``gpus_per_node | g`` (a
    group inside a node or of whole nodes). Found among the divisors of ``ranks``, pairs
    ``(d, ranks / d)`` for ``d <= sqrt(ranks)``: O(sqrt(ranks)) steps, not O(ranks).

    >>> hsdp_group_sizes(16, 8)
    [2, 4, 8]
    """
    small = [d for d in range(1, math.isqrt(ranks) + 1) if ranks % d == 0]
    divisors = sorted({*small, *(ranks // d for d in small)})
    return [
        g for g in divisors if 1 < g < ranks and (gpus_per_node % g == 0 or g % gpus_per_node == 0)
    ]


def candidate_count(ranks: int, gpus_per_node: int) -> int:
    """How many layouts :func:`candidate_layouts` tries on ``ranks`` ranks of nodes of
    ``gpus_per_node`` GPUs, counted without building them: the fixed five (ddp, zero1, zero2,
    fsdp with and without resharding) plus one per hsdp group (:func:`hsdp_group_sizes`).

    >>> candidate_count(16, 8) == len(candidate_layouts(16, 8))
    True
    """
    return len(_FIXED_LAYOUTS) + len(hsdp_group_sizes(ranks, gpus_per_node))


def collective_half_width(s: StrategyStep) -> float:
    """A step's communication half-width ``m`` [-]: how far its time moves, as a fraction,
    with every collective at an end of its own error band (``collective_band_s``; the
    strategy engine's counterpart of :func:`costmodel.verdict.comm_half_width`). NaN when
    the band was not computed (``band=False``) or a collective's band is unknown."""
    lo, hi = s.collective_band_s
    t = float(s.step_time_s)
    if not (math.isfinite(lo) and math.isfinite(hi) and t > 0):
        return math.nan
    return max(t - lo, hi - t, 0.0) / t


def pair_step_half_width(a: StrategyStep, b: StrategyStep) -> float:
    """Expected error of ``t_b / t_a`` for two strategies of one job (a fraction).

    The rule of :func:`costmodel.verdict.decide_scenarios`: one compute estimate on one GPU
    (every strategy of :func:`advise`: the same cluster, job and compute source) shares the
    compute error, so only the difference of the compute shares counts
    (:func:`costmodel.verdict.shared_compute_half_width`); the two run on the same GPU count,
    so the scaling band does not enter. Two steps whose compute estimates differ (a list of
    layouts with other options): the errors add (:func:`costmodel.verdict.pair_half_width`).
    NaN when a band is unknown (no band computed, or the compute is the default MFU of a GPU
    family with no fitted efficiency).
    """

    def compute_half(s: StrategyStep) -> float:
        if s.compute_source == "default-mfu":
            return math.nan
        lo, hi = (float(x) for x in s.compute_band)
        return max(1.0 - lo, hi - 1.0, 0.0)

    ma, mb = collective_half_width(a), collective_half_width(b)
    fa, fb = a.compute_s / a.step_time_s, b.compute_s / b.step_time_s
    if (a.compute_source, tuple(a.compute_band)) == (b.compute_source, tuple(b.compute_band)):
        return shared_compute_half_width(ma, mb, fa, fb, compute_half(a))
    return pair_half_width(ma + compute_half(a) * fa, mb + compute_half(b) * fb, same_error=False)


@dataclass(frozen=True)
class Advice:
    """:func:`advise`'s answer: every strategy's step, ranked (fits first, by step time).

    A winner only when it wins: the strategies that fit and are within the expected error of
    the fastest (:func:`pair_step_half_width`, the rule of :mod:`costmodel.verdict`) are a tie
    (:attr:`tied`), and :attr:`decisive` is False; :meth:`summary` says so in words.
    """

    steps: tuple[StrategyStep, ...]

    @property
    def best(self) -> StrategyStep | None:
        """The nominally fastest strategy that fits, or None when none does (a strategy that
        does not fit is never named). It is the winner only when :attr:`decisive` is True;
        otherwise the strategies in :attr:`tied` are within the expected error of it."""
        return self.steps[0] if self.steps and self.steps[0].fits else None

    @functools.cached_property
    def _against_best(self) -> tuple[tuple[float, float], ...]:
        """Per step, (gap to the best, the pair's half-width); NaN for the best itself and
        for a step that does not fit."""
        b = self.best
        nan = (math.nan, math.nan)
        if b is None:
            return tuple(nan for _ in self.steps)
        return (nan,) + tuple(
            (s.step_time_s / b.step_time_s - 1.0, pair_step_half_width(b, s)) if s.fits else nan
            for s in self.steps[1:]
        )

    @functools.cached_property
    def verdict(self) -> Verdict | None:
        """The decision between the best and its closest rival (the one with the least margin
        between its gap and the pair's expected error): a :class:`costmodel.verdict.Verdict`
        (``winner`` None: within the expected error, or unknown); None when nothing fits."""
        b = self.best
        if b is None:
            return None
        rivals = [
            (gap - half if half == half else -math.inf, i)
            for i, (gap, half) in enumerate(self._against_best)
            if i > 0 and self.steps[i].fits
        ]
        if not rivals:
            return decide({b.layout.name: b.step_time_s}, math.nan)
        i = min(rivals)[1]
        s, half = self.steps[i], self._against_best[i][1]
        why = (
            f"the compute is the {b.compute_label or 'default MFU'}"
            if b.compute_source == "default-mfu"
            else "the step band was not computed, or a collective's band is unknown"
        )
        return decide(
            {b.layout.name: b.step_time_s, s.layout.name: s.step_time_s}, half, why_unknown=why
        )

    @property
    def decisive(self) -> bool:
        """Whether :attr:`best` is the winner: it fits and every other strategy that fits is
        slower by more than the pair's expected error (or none other fits)."""
        v = self.verdict
        return v is not None and v.decided

    @property
    def tied(self) -> tuple[StrategyStep, ...]:
        """The strategies that fit and are within the expected error of the fastest, the
        fastest first; empty when :attr:`decisive` (or nothing fits). With an unknown band,
        every strategy that fits (none is told apart)."""
        if self.best is None or self.decisive:
            return ()
        return tuple(s for s, w in zip(self.steps, self._within, strict=True) if w is not False)

    @functools.cached_property
    def _within(self) -> tuple[bool | None, ...]:
        """Per step: in the tie with the fastest (True), told apart (False), unknown (None)."""
        v = self.verdict
        out: list[bool | None] = []
        for i, (s, (gap, half)) in enumerate(zip(self.steps, self._against_best, strict=True)):
            if not s.fits or v is None:
                out.append(False)
            elif i == 0:
                out.append(None if not v.known and v.runner_up is not None else not v.decided)
            else:
                out.append(None if half != half else within_expected_error(gap, half))
        if out and out[0] is None and any(w is True for w in out[1:]):
            # a tie is mutual: the fastest ties with a strategy whose pair's error is known,
            # though another's is unknown (B200: fsdp and fsdp without resharding share one
            # compute share; hsdp's differ and their compute error is unknown)
            out[0] = True
        return tuple(out)

    @property
    def notes(self) -> tuple[str, ...]:
        """What the ranking leaves out, once each in the order the steps give it: every
        step's :attr:`~.step.StrategyStep.notes` (a 70B-class model's tensor and pipeline
        parallelism, a mixture of experts' expert parallelism, activations not sized for a
        bare count) but a layout's own bucket note (said under ``--bucket``) and its tight
        fit's (:func:`~.memory.headroom_note`: one layout's, each step says it)."""
        from .memory import HEADROOM_NOTE_START

        seen: dict[str, None] = {}
        for s in self.steps:
            for n in s.notes:
                if n != s.layout.bucket_note and not n.startswith(HEADROOM_NOTE_START):
                    seen.setdefault(n, None)
        return tuple(seen)

    def summary(self) -> str:
        """One sentence: the winner with the figures behind it, or which strategies are
        within the expected error of each other (no winner), or why none is named."""
        v, b = self.verdict, self.best
        if v is None or b is None:
            return self._none_fits()
        if v.runner_up is None:
            return f"{b.layout.name}: the only strategy that fits"
        if not v.known:
            return v.text()
        if v.decided:
            shown_gap, shown_half = _pct_pair(v.gap, v.half_width)
            return (
                f"winner: {v.best} (the closest that fits, {v.runner_up}, is {shown_gap} "
                f"slower, beyond the expected error ±{shown_half})"
            )
        tied = self.tied
        names = [s.layout.name for s in tied]
        listed = ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]
        pairs = [self._against_best[self.steps.index(s)] for s in tied[1:]]
        gap = max(g for g, _ in pairs)
        half = max(h for _, h in pairs)
        if gap < GAP_RESOLUTION:  # no gap to weigh against the error: the same step time
            same = "" if gap <= 0 else f" (to within {_pct(GAP_RESOLUTION)})"
            return f"{listed} are tied: the same step time as {b.layout.name}{same}: no winner"
        slower = f"up to {_pct(gap)} slower than {b.layout.name}"
        return f"{listed} are {WITHIN} of each other ({slower}, under ±{_pct(half)}): no winner"

    def _none_fits(self) -> str:
        """What does not fit and by how much, where no strategy fits: the leanest strategy's
        memory per GPU against the GPU's (``"no strategy fits: the leanest, fsdp, needs 4.1 TB
        per GPU of the 85.5 GB there (47.9x)"``), not a bare "none is named"."""
        from ..units import format_bytes

        if not self.steps:
            return "no strategy fits: none was ranked"
        lean = min(self.steps, key=lambda s: s.memory_bytes)
        need, have = lean.memory_bytes, lean.gpu_memory_bytes
        return (
            f"no strategy fits: the leanest, {lean.layout.name}, needs {format_bytes(need)} per "
            f"GPU of the {format_bytes(have)} there ({need / have:.3g}x)"
        )

    def rows(self) -> list[dict[str, Any]]:
        """One JSON-ready row per strategy, in rank order. ``within_expected_error``: in the
        tie with the fastest (None: the expected error is unknown); ``gap_to_best`` and
        ``half_width_vs_best``: ``t / t_best - 1`` and the pair's expected error (None for
        the best itself and for a strategy that does not fit); ``winner``: the decisive
        fastest. Each row names its layout by :meth:`~.layout.Layout.identity`'s keys
        (``strategy`` the plain strategy, ``layout`` its name, ``hsdp g=8``, ``group_size``,
        ``reshard_after_forward``), as every sweep row and ``--json`` names it."""
        out = []
        within = self._within
        decisive = self.decisive
        for rank, (s, (gap, half), w) in enumerate(
            zip(self.steps, self._against_best, within, strict=True), 1
        ):
            lo, hi = s.step_time_band_s
            out.append(
                {
                    "rank": rank,
                    **s.layout.identity(),
                    "memory_bytes": s.memory_bytes,
                    "gpu_memory_bytes": s.gpu_memory_bytes,
                    "fits": s.fits,
                    "step_time_s": s.step_time_s,
                    "step_time_lo_s": lo,
                    "step_time_hi_s": hi,
                    "exposed_comm_s": s.exposed_comm_s,
                    "bound": s.bound,
                    "tokens_per_s": s.tokens_per_s,
                    "comm_contention": s.comm_contention,
                    "within_expected_error": w,
                    "gap_to_best": None if gap != gap else gap,
                    "half_width_vs_best": None if half != half else half,
                    "winner": rank == 1 and decisive and s.fits,
                }
            )
        return out

    def as_dict(self) -> dict[str, Any]:
        """The ranking and the decision, JSON-ready (``step --strategy all --json``):
        ``best`` the nominal fastest that fits, ``winner`` it only when decisive, ``tied``
        the strategies within the expected error of it (each a layout's name, a row's
        ``layout``: ``hsdp g=8``), ``verdict`` the sentence, ``notes`` what the ranking
        leaves out (:attr:`notes`; each row's ``notes`` hold its own step's)."""
        b = self.best
        return {
            "strategies": self.rows(),
            "best": b.layout.name if b else None,
            "winner": b.layout.name if b and self.decisive else None,
            "decisive": self.decisive,
            "tied": [s.layout.name for s in self.tied],
            "verdict": self.summary(),
            "notes": list(self.notes),
        }


def _pct(fraction: float) -> str:
    """A percentage with two significant digits below 10 % (``8.4%``, ``0.34%``), whole above
    (``12%``): the gap and the band beside it must not round to the same figure; ``<0.01%``
    below that, as :func:`costmodel.verdict._pct` (two layouts whose steps differ by rounding
    noise read "6.4e-07% slower")."""
    x = 100 * float(fraction)
    if 0 < x < 0.01:
        return "<0.01%"
    return f"{x:.0f}%" if abs(x) >= 10 or x == 0 else f"{x:.2g}%"


def _pct_pair(gap: float, half_width: float) -> tuple[str, str]:
    """``(gap, half_width)`` as :func:`_pct` writes them, with more digits where the two would
    read the same though they differ (:func:`costmodel.verdict.pct_pair`'s rule: "+0.11%
    (beyond ±0.11%)" said nothing)."""
    a, b = _pct(gap), _pct(half_width)
    if a == b and gap != half_width:
        return pct_pair(gap, half_width)
    return a, b


def rank_labels(rows: list[dict[str, Any]]) -> list[str]:
    """The rank column of :meth:`Advice.rows` (the CLI's table and the app's): ``"1="`` for
    the strategies in the tie with the fastest, read down the ranking until the first one told
    apart; every row from there on its own rank. A tie is judged per pair under that pair's
    expected error (:func:`pair_step_half_width`), so a slower strategy with a wide band can
    be within its error of the fastest while a faster one with a narrow band is told apart:
    labelled by its own flag it read "1=" below "7" (70B on 512 nodes: fsdp under hsdp g=32).
    Its "vs fastest" column (:func:`vs_fastest`) still says it is within its error.

    >>> rank_labels([{"rank": 1, "within_expected_error": True},
    ...              {"rank": 2, "within_expected_error": True},
    ...              {"rank": 3, "within_expected_error": False},
    ...              {"rank": 4, "within_expected_error": True}])
    ['1=', '1=', '3', '4']
    """
    out: list[str] = []
    tie = True
    for r in rows:
        tie = tie and bool(r["within_expected_error"])
        out.append("1=" if tie else str(r["rank"]))
    return out


def vs_fastest(row: dict[str, Any]) -> str:
    """One row's place against the fastest, in words (the CLI's and the app's column), from
    :meth:`Advice.rows`: ``winner``, ``fastest (a tie)``, ``tied`` (the same step time, to
    :data:`~costmodel.verdict.GAP_RESOLUTION`), ``+1.2% (within ±2%)``, ``+8% (beyond
    ±7.7%)``, ``... (error unknown)`` or ``does not fit``.

    >>> vs_fastest({"fits": True, "rank": 2, "within_expected_error": True,
    ...             "gap_to_best": 0.012, "half_width_vs_best": 0.02, "winner": False})
    '+1.2% (within ±2%)'
    """
    if not row["fits"]:
        return "does not fit"
    w = row["within_expected_error"]
    if row["winner"]:
        return "winner"
    if row["gap_to_best"] is None:  # the fastest, not a winner
        return "fastest (a tie)" if w else "fastest (error unknown)"
    if w and row["gap_to_best"] < GAP_RESOLUTION:  # a gap no run could measure
        return "tied"
    if w is None:
        return f"+{_pct(row['gap_to_best'])} (error unknown)"
    gap, half = _pct_pair(row["gap_to_best"], row["half_width_vs_best"])
    return f"+{gap} ({'within' if w else 'beyond'} ±{half})"


def rank_steps(steps: list[StrategyStep]) -> tuple[StrategyStep, ...]:
    """Fits first by step time (ties: less memory), then the rest by memory."""
    return tuple(
        sorted(
            steps,
            key=lambda s: (
                not s.fits,
                s.step_time_s if s.fits else s.memory_bytes,
                s.memory_bytes,
            ),
        )
    )


def advise(
    params: float | str | None = None,
    *,
    cluster: Any = "dgx-h100",
    nodes: int = DEFAULT_NODES,
    strategies: list[str | dict[str, Any]] | None = None,
    model: str = "nccl",
    band: bool = True,
    predictions: PredictionCache | None = None,
    **step_kwargs: Any,
) -> Advice:
    """Every strategy of one job ranked (module docstring).

    ``step_kwargs`` go to :func:`~.step.strategy_step` (``arch``, ``recipe``,
    ``micro_batch``, ``sequence_length``, ``accumulation``, ``mfu``, ``compute_time_s``,
    ``recompute``, ``comm_contention``, ``param_dtype``, ``grad_dtype``, the memory's
    ``cuda_context_bytes`` and ``fragmentation``, ...): every strategy's memory and fit are
    ``strategy_memory`` of its layout with them. The collective
    predictions are shared by every strategy: one :class:`~.comm.CollectiveTimer` per group
    size over one :class:`~.comm.PredictionCache`, with the sizes of every wrapped unit hinted
    before the first step, so that each op on each cluster is one ``predict_collective`` call.
    ``predictions`` (optional) shares them with other calls: pass one cache to every node count
    of a table and the spans they have in common (one node, an HSDP group) are predicted once.

    >>> a = advise(arch="llama-3.1-8b", cluster="dgx-h100", nodes=2, model="lesson")
    >>> a.best.layout.name in ("fsdp", "fsdp (no reshard)", "zero1", "zero2", "hsdp g=8")
    True
    """
    check_step_keywords(step_kwargs, "advise_strategy")
    check_ranked_keywords(step_kwargs, "advise_strategy")
    params = named_params(params, step_kwargs)  # a name: as strategy_step reads it
    from ..hardware import Cluster

    if isinstance(cluster, Cluster) and nodes == DEFAULT_NODES:
        # a Cluster object's own node count unless another is given, as strategy_step reads
        # it: advise(cluster=cm.cluster("dgx-h100", nodes=4)) ranked one node of it, where the
        # step of that cluster prices its 32 GPUs
        nodes = int(cluster.nodes)
    calls = layout_calls(
        params,
        cluster=cluster,
        nodes=nodes,
        strategies=strategies,
        model=model,
        band=band,
        predictions=predictions,
        **step_kwargs,
    )
    return Advice(rank_steps(strategy_steps(calls)))


def check_ranked_keywords(step_kwargs: dict[str, Any], where: str = "advise_strategy") -> None:
    """ValueError naming the keyword when ``step_kwargs`` give what the advisor itself chooses
    for each layout it ranks: ``layout``, ``strategy``, ``group_size``,
    ``reshard_after_forward``, ``gradient_as_bucket_view`` (it ranks every layout, ddp at
    PyTorch's default; ``layout=`` replaced each one, ranking
    seven copies of it, and the others were dropped without a word) and ``timer`` (one per
    group size, over ``predictions``), as ``costmodel step --strategy all`` refuses
    ``--group-size``.

    >>> check_ranked_keywords({"strategy": "fsdp"})
    Traceback (most recent call last):
    ...
    ValueError: strategy: advise_strategy ranks every layout it makes; name those to rank in `strategies` (e.g. ['fsdp', {'strategy': 'hsdp', 'group_size': 4}]), or price one layout with `strategy_step`
    """
    for k in (
        "layout",
        "strategy",
        "group_size",
        "reshard_after_forward",
        "gradient_as_bucket_view",
    ):
        if step_kwargs.get(k) is not None:
            raise ValueError(
                f"{k}: {where} ranks every layout it makes; name those to rank in "
                "`strategies` (e.g. ['fsdp', {'strategy': 'hsdp', 'group_size': 4}]), or "
                "price one layout with `strategy_step`"
            )
    if step_kwargs.get("timer") is not None:
        raise ValueError(
            f"timer: {where} makes one per group size; share its predictions with "
            "`predictions` (a PredictionCache) instead"
        )


def layout_keywords(strategies: Any) -> list[dict[str, Any]] | None:
    """``strategies`` as layout keyword sets: a strategy name is ``{"strategy": name}``
    (``["ddp", "fsdp"]``, as a notebook user writes it), a dict passes as it is, one name or one
    dict alone is a list of one; None stays None (every candidate layout). Anything else is a
    ValueError naming ``strategies`` (a list of names was refused as "'str' object is not a
    mapping").

    >>> layout_keywords(["ddp", {"strategy": "hsdp", "group_size": 16}])
    [{'strategy': 'ddp'}, {'strategy': 'hsdp', 'group_size': 16}]
    >>> layout_keywords("fsdp")
    [{'strategy': 'fsdp'}]
    """
    if strategies is None:
        return None
    if isinstance(strategies, str | dict):
        strategies = [strategies]
    rule = (
        f"each entry a strategy name ({', '.join(STRATEGIES)}) or a dict of layout keywords "
        "({'strategy': 'hsdp', 'group_size': 16})"
    )
    try:
        entries = list(strategies)
    except TypeError:
        raise ValueError(f"strategies: expected a list, {rule}; got {strategies!r}") from None
    if not entries:  # it ranked every candidate, as None does
        raise ValueError(f"strategies: an empty list; {rule}, or None for every layout")
    out: list[dict[str, Any]] = []
    for entry in entries:
        if isinstance(entry, str):
            out.append({"strategy": entry})
        elif isinstance(entry, dict):
            for k in ("ranks", "gpus_per_node"):  # make_layout's "multiple values" TypeError
                if k in entry:
                    raise ValueError(
                        f"strategies: {k!r} in {entry!r} is the cluster's, not an entry's "
                        "(`nodes`, `gpus_per_node`)"
                    )
            out.append(dict(entry))
        else:
            raise ValueError(f"strategies: {rule}; got {entry!r}")
    return out


def layout_calls(
    params: float | None = None,
    *,
    cluster: Any = "dgx-h100",
    nodes: int = DEFAULT_NODES,
    strategies: list[str | dict[str, Any]] | None = None,
    model: str = "nccl",
    band: bool = True,
    predictions: PredictionCache | None = None,
    **step_kwargs: Any,
) -> list[dict[str, Any]]:
    """:func:`advise`'s steps as :func:`~.step.strategy_step` keyword sets, for
    :func:`~.step.strategy_steps` (the batched road): one :class:`~.layout.Layout` per entry of
    ``strategies`` (layout keywords; None: :func:`candidate_layouts`) on ``nodes`` nodes of
    ``cluster``, with one :class:`~.comm.CollectiveTimer` per group size over ``predictions``
    and the sizes of every wrapped unit hinted. The road of :func:`advise`,
    :func:`advise_nodes` and a step sweep (:mod:`costmodel.sweep.evaluate`), whose rows are
    the steps of these calls; the numbers of one :func:`~.step.strategy_step` per layout
    (tests/test_advisor_fast_path.py, tests/test_sweep_batched.py)."""
    from .. import presets
    from .._checks import flag, whole_count

    band = flag("band", band)
    nodes = whole_count("nodes", nodes)  # inf raised OverflowError, None int()'s TypeError
    check_cluster_argument(cluster)  # cluster=None or 2 read `.nodes` of it (AttributeError)
    cache = predictions if predictions is not None else PredictionCache()
    if isinstance(cluster, str):
        c = cache.cluster(cluster, nodes)
    else:
        c = cluster if cluster.nodes == nodes else presets.cluster(cluster, nodes=nodes)
    gpn = step_kwargs.get("gpus_per_node")
    if gpn is not None and whole_count("gpus_per_node", gpn) != c.gpus_per_node:
        # the slice the steps run on, before the layouts are made: their ranks and hsdp groups
        # are the slice's (the unsliced node's were re-ranked by the step, listing an "hsdp g=8"
        # of 8 ranks, fsdp again, on a 4-GPU slice of 2 nodes)
        c = c.with_gpus_per_node(whole_count("gpus_per_node", gpn))
    layout_opts: dict[str, Any] = {
        k: step_kwargs.pop(k)
        for k in ("param_dtype", "grad_dtype", "bucket_cap_bytes", "comm_contention")
        if k in step_kwargs and step_kwargs[k] is not None
    }
    for k in ("param_dtype", "grad_dtype", "bucket_cap_bytes", "comm_contention"):
        step_kwargs.pop(k, None)
    cands = layout_keywords(strategies) or candidate_layouts(int(c.ranks), int(c.gpus_per_node))
    layouts = [
        make_layout(ranks=int(c.ranks), gpus_per_node=int(c.gpus_per_node), **{**layout_opts, **kw})
        for kw in cands
    ]
    timers: dict[int, CollectiveTimer] = {}
    for lay in layouts:
        g = lay.shard_group
        if g not in timers:
            timers[g] = CollectiveTimer(c, model=model, group_size=g, cache=cache)
    _hint_unit_sizes(params, layouts, timers, step_kwargs)
    return [
        {
            "params": params,
            "cluster": c,
            "nodes": int(c.nodes),
            "layout": lay,
            "model": model,
            "timer": timers[lay.shard_group],
            "timeline": False,
            "band": band,
            **step_kwargs,
        }
        for lay in layouts
    ]


def advise_nodes(
    params: float | str | None = None,
    *,
    cluster: Any = "dgx-h100",
    nodes: Any = (1, 2, 4, 8),
    strategies: Any = None,
    model: str = "nccl",
    band: bool = True,
    predictions: PredictionCache | None = None,
    **step_kwargs: Any,
) -> dict[int, Advice]:
    """:func:`advise` at several node counts of one cluster: ``{nodes: Advice}``.

    The same numbers as one :func:`advise` per node count (tested); faster, because one
    :class:`~.comm.PredictionCache` that knows every node count predicts each op and span once
    for all of them. ``strategies`` is a list of layout keyword sets for every node count, or a
    function of the node count that returns one (None: :func:`candidate_layouts`).
    ``predictions``: a cache to share (its ``calls`` count the predictions), by default a new
    one that knows ``nodes``.

    >>> t = advise_nodes(arch="llama-3.1-8b", cluster="dgx-h100", nodes=(1, 2), model="lesson")
    >>> sorted(t), t[2].best.layout.ranks
    ([1, 2], 16)
    """
    check_step_keywords(step_kwargs, "advise_strategy_nodes")
    check_ranked_keywords(step_kwargs, "advise_strategy_nodes")
    params = named_params(params, step_kwargs)  # a name: as strategy_step reads it
    from .._checks import must_be, whole_count

    # a bare count, or NaN/inf in the list, raised Python's TypeError/OverflowError
    if isinstance(nodes, str | bytes | dict) or np.ndim(nodes) != 1 or not len(nodes):
        raise must_be("nodes", "one or more node counts >= 1, e.g. (1, 2, 4)", nodes)
    counts = [whole_count("nodes", n) for n in nodes]
    cache = predictions if predictions is not None else PredictionCache(nodes=counts)
    calls: dict[int, list[dict[str, Any]]] = {}
    for n in counts:
        cands = strategies(n) if callable(strategies) else strategies
        calls[n] = layout_calls(
            params,
            cluster=cluster,
            nodes=n,
            strategies=cands,
            model=model,
            band=band,
            predictions=cache,
            **step_kwargs,
        )
    # every node count's steps at once: one strategy's steps share a schedule pass
    steps = iter(strategy_steps([kw for n in calls for kw in calls[n]]))
    return {n: Advice(rank_steps([next(steps) for _ in calls[n]])) for n in calls}


def _hint_unit_sizes(
    params: float | None,
    layouts: list[Any],
    timers: dict[int, CollectiveTimer],
    step_kwargs: dict[str, Any],
) -> None:
    """Hint the per-unit gathers and reductions of the sharded layouts (:mod:`.fsdp`'s sizes),
    so that the bucketed strategies' request of the same op predicts them in the same call. A
    hint that no step asks for costs a size in a call, never a number."""
    sharded = [lay for lay in layouts if lay.strategy in ("fsdp", "hsdp")]
    if not sharded:
        return
    from ..architecture import architecture_for_params, load_arch
    from ..memory import get_recipe

    try:
        arch = step_kwargs.get("arch")
        a = load_arch(arch) if arch is not None else None
        p = float(a.params) if a is not None else float(params)  # type: ignore[arg-type]
        if a is None:
            architecture_for_params(p)  # a count outside its range: no hints (bounded work)
        units = wrap_units(p, a)
        grad_bytes = get_recipe(step_kwargs.get("recipe", "mixed-adam")).gradient_bytes
    except (TypeError, ValueError, KeyError, OverflowError):
        return  # the step itself reports the bad input
    done: set[tuple[Any, ...]] = set()
    for lay in sharded:
        hybrid = lay.strategy == "hsdp"
        span = "group" if hybrid else "job"
        timer = timers[lay.shard_group]
        pb, gb = lay.param_bytes, lay.grad_bytes(grad_bytes)
        key = (id(timer), hybrid, pb, gb)  # fsdp with and without resharding: the same sizes
        if key in done:
            continue
        done.add(key)
        rs = [u.params * gb for u in units]
        timer.hint("all_gather", span, [u.params * pb for u in units])
        timer.hint("reduce_scatter", span, rs)
        if hybrid:
            g = lay.shard_group
            timer.hint("all_reduce", "across", [b / g for b in rs])


# --- what makes it fit -------------------------------------------------------------------------
GIVEN_COMPUTE = ("mfu", "measured")
"""Compute sources that are the user's own measurement (a given MFU, a measured time)."""

RECOMPUTE_INSIDE: dict[str, str] = {
    "mfu": "recompute cost inside the given MFU, not priced on top",
    "measured": "recompute cost inside the measured compute time, not priced on top",
}
"""What a fit change that recomputes says of its step where the compute is given
(:meth:`FitChange.compute_note`): the step prices no recomputation on top of a measurement that
holds it, so its "+0%" is the measurement's, not a free recomputation. The one text of
``costmodel step``'s suggestions, ``fit_suggestions`` ``--json`` (``compute_note``) and the
step page's "What makes it fit"."""


@dataclass(frozen=True)
class FitChange:
    """One change to a configuration, evaluated: what it is, its memory and its step."""

    change: str  # human words: "recompute full", "fsdp", "micro-batch 1 x 4 accumulation", ...
    kind: str  # recompute | bucket_view | strategy | micro_batch | more_gpus | larger_card
    updates: dict[str, Any]  # the keyword changes (strategy_step's names)
    step: StrategyStep

    @property
    def fits(self) -> bool:
        return self.step.fits

    @property
    def gpu_seconds_per_token(self) -> float:
        return self.step.ranks * self.step.step_time_s / self.step.tokens_per_step

    def compute_note(self, base: StrategyStep | None = None) -> str | None:
        """What the step of this change would say of its compute that ``base``'s does not:
        on a card whose compute has no fitted efficiency (a B200: the default MFU) its band is
        unknown, :data:`~.band.UNKNOWN_COMPUTE`, the words of ``costmodel step`` on that card,
        so a step time against a fitted base is not read as a measured gain. A larger card
        beside a measured compute time has its own compute predicted (the time was measured on
        the base's GPU, not the card's) and says so. A change that
        recomputes, where the compute is a given MFU or a measured time, says that the
        recomputation's cost is inside that measurement (:data:`RECOMPUTE_INSIDE`: a PaLM MFU
        holds it), not a bare 0 %. None otherwise."""
        from .band import UNKNOWN_COMPUTE

        card = self.updates.get("cluster") if self.kind == "larger_card" else None
        if card is not None and "compute_time_s" in self.updates:
            gpu = getattr(getattr(card, "gpu", None), "name", "this card")
            said = (
                f"its compute predicted on {gpu} (the compute time given was measured on "
                "another GPU)"
            )
            if self.step.compute_source == "default-mfu":
                said += f"; {UNKNOWN_COMPUTE}"
            return said
        if (
            self.step.compute_source in GIVEN_COMPUTE
            and self.updates.get("recompute", "none") != "none"
        ):
            return RECOMPUTE_INSIDE[self.step.compute_source]
        if self.step.compute_source != "default-mfu":
            return None
        if base is not None and base.compute_source == "default-mfu":
            return None  # the base's own answer says it already
        return UNKNOWN_COMPUTE

    def cost(
        self,
        base: StrategyStep,
        price: str | None = None,
        usd_per_gpu_hour: float | None = None,
    ) -> tuple[float, str, str | None]:
        """The change's cost against ``base``'s, per token trained: ``(change, unit, preset)``.

        Without a price (``price``, a preset name, or ``usd_per_gpu_hour`` [USD/GPU-h]) it is
        the change in GPU-time per token, unit ``"gpu_hours"``: ``(R' t' / T') / (R t / T) - 1``
        (R GPUs, t the step [s], T tokens per step). With one, unit ``"usd"``: the same hardware
        is billed at the base's price, so its dollars change as its GPU-time; a larger card is
        billed at its own GPU's price, the preset every surface picks for another GPU
        (:func:`costmodel.training.default_price`, like ``price``: the one ``scenario --vs``
        prices B's GPU at), ``preset`` its name: ``(R' t' p' / T') / (R t p / T) - 1``. A card
        whose GPU has no preset stays in GPU-time (unit ``"gpu_hours"``, ``preset`` None): a
        card's GPU-hour is not the base's, so its GPU-time is no cost."""
        base_s = base.ranks * base.step_time_s / base.tokens_per_step
        gpu_time = self.gpu_seconds_per_token / base_s - 1.0
        if price is None and usd_per_gpu_hour is None:
            return gpu_time, "gpu_hours", None
        card = self.updates.get("cluster") if self.kind == "larger_card" else None
        if card is None:
            return gpu_time, "usd", price
        from ..training import default_price, load_price

        chosen = default_price(str(card.gpu.name), like=price)
        if chosen is None:
            return gpu_time, "gpu_hours", None
        # a preset's rate, else the rate given (one of the two: the no-price case returned)
        usd = load_price(price).usd_per_gpu_hour if price is not None else usd_per_gpu_hour or 0.0
        ratio = self.gpu_seconds_per_token * chosen[0].usd_per_gpu_hour / (base_s * usd)
        return ratio - 1.0, "usd", chosen[0].name

    def as_dict(
        self,
        base: StrategyStep | None = None,
        price: str | None = None,
        usd_per_gpu_hour: float | None = None,
    ) -> dict[str, Any]:
        """Every figure by name (JSON). ``updates`` are the keywords that reproduce the change
        (a larger card's ``cluster`` by its preset name, with its ``nodes`` and
        ``gpus_per_node``); against ``base``, ``cost_change`` in ``cost_unit`` (``"usd"`` with
        a price, ``"gpu_hours"`` without one) at ``cost_price`` (:meth:`cost`)."""
        d = {
            "change": self.change,
            "kind": self.kind,
            "updates": {
                k: (v if k != "cluster" or isinstance(v, str) else str(v.name))
                for k, v in self.updates.items()
            },
            "fits": self.fits,
            "memory_bytes": self.step.memory_bytes,
            "gpu_memory_bytes": self.step.gpu_memory_bytes,
            "step_time_s": self.step.step_time_s,
            "gpu_seconds_per_token": self.gpu_seconds_per_token,
            "compute_note": self.compute_note(base),
        }
        if base is not None:
            d["memory_change_bytes"] = self.step.memory_bytes - base.memory_bytes
            d["step_time_change"] = self.step.step_time_s / base.step_time_s - 1.0
            d["cost_change"], d["cost_unit"], d["cost_price"] = self.cost(
                base, price, usd_per_gpu_hour
            )
        return d


@dataclass(frozen=True)
class FitAdvice:
    """:func:`fit_suggestions`' answer: the base configuration and the changes, ranked."""

    base: StrategyStep
    changes: tuple[FitChange, ...]  # those that fit, cheapest first, then the rest

    @property
    def fits(self) -> bool:
        return self.base.fits

    def summary(
        self, top: int = 5, price: str | None = None, usd_per_gpu_hour: float | None = None
    ) -> str:
        """The warning first, then the cheapest changes that fit (plain text); with a price,
        each change's cost in dollars (a larger card's at its own GPU's preset,
        :meth:`FitChange.cost`), else in GPU-time."""
        from ..units import format_bytes_pair, format_change, format_duration

        b = self.base
        shown, card = format_bytes_pair(b.memory_bytes, b.gpu_memory_bytes)
        if b.fits:
            return f"fits: {shown} of {card} per GPU"
        lines = [
            f"DOES NOT FIT: {shown} per GPU > {card} ({b.layout.name}); any step or cost shown for "
            "it is for a configuration that cannot run. Changes that make it fit, cheapest "
            "first ("
            + (
                "cost per token: this hardware at the price given; a larger card last, at its "
                "own GPU's price):"
                if price is not None or usd_per_gpu_hour is not None
                else "GPU-time per token on this hardware; a larger card last, in GPU-time too: "
                "no price given, and its GPU-hour costs its own price):"
            )
        ]
        ok = [c for c in self.changes if c.fits][:top]
        if not ok:
            lines.append(
                "  none of the changes tried fits (recompute, bucket view, sharding, micro-batch, "
                "GPUs, cards)"
            )
        for c in ok:
            d = c.as_dict(b, price, usd_per_gpu_hour)
            note = f" ({d['compute_note']})" if d["compute_note"] else ""
            what = "cost" if d["cost_unit"] == "usd" else "GPU-time"
            at = f" at {d['cost_price']}" if c.kind == "larger_card" and d["cost_price"] else ""
            lines.append(
                f"  {c.change}: "
                f"{format_bytes_pair(c.step.memory_bytes, c.step.gpu_memory_bytes)[0]} per GPU, step "
                f"{format_duration(c.step.step_time_s)} ({format_change(d['step_time_change'])}), "
                f"{what} per token {format_change(d['cost_change'])}{at}{note}"
            )
        return "\n".join(lines)

    def as_dict(
        self, price: str | None = None, usd_per_gpu_hour: float | None = None
    ) -> dict[str, Any]:
        """Every figure by name (JSON); each change's cost in dollars with a price, else in
        GPU-time (:meth:`FitChange.cost`)."""
        return {
            "fits": self.fits,
            "memory_bytes": self.base.memory_bytes,
            "gpu_memory_bytes": self.base.gpu_memory_bytes,
            # the base's predicted step, each change's step_time_change is against it
            "step_time_s": self.base.step_time_s,
            "changes": [c.as_dict(self.base, price, usd_per_gpu_hour) for c in self.changes],
        }


_SHARDING_ORDER = ("ddp", "zero1", "zero2", "fsdp", "hsdp")

BUCKET_VIEW_CHANGE = "gradient_as_bucket_view (no bucket copy)"
"""The words of :func:`fit_suggestions`' ddp change that turns on PyTorch's
``gradient_as_bucket_view`` (the gradients are views into DDP's all-reduce buckets, so the
bucket copy, ``P g`` bytes per GPU, is not held; :func:`.memory._ddp_buckets_bytes`): the same
step time (:attr:`FitChange.kind` ``bucket_view``)."""


def more_sharded_zero3(
    strategy: str, group_size: int | None, reshard_after_forward: bool, ranks: int
) -> list[tuple[str, dict[str, Any]]]:
    """The ZeRO-3 layouts that hold less per GPU than an fsdp or hsdp one, least change first,
    as ``(words, the step keywords that change)``: resharding after forward when it does not,
    then hsdp in larger groups (each dividing ``ranks``), then fsdp over every rank. The CLI's
    advisor (:func:`fit_suggestions`) and the Memory page try these, in this order and words.

    >>> [w for w, _ in more_sharded_zero3("hsdp", 8, True, 64)]
    ['hsdp g=16', 'hsdp g=32', 'fsdp']
    >>> more_sharded_zero3("fsdp", None, False, 64)
    [('reshard after forward (FULL_SHARD)', {'reshard_after_forward': True})]
    >>> more_sharded_zero3("fsdp", None, True, 64)
    []
    """
    out: list[tuple[str, dict[str, Any]]] = []
    if not reshard_after_forward:
        out.append(("reshard after forward (FULL_SHARD)", {"reshard_after_forward": True}))
    if strategy == "hsdp" and group_size is not None and group_size < ranks:
        g = group_size  # hsdp's next sharding is a larger group, up to fsdp (every GPU)
        while (g := 2 * g) < ranks:
            if ranks % g == 0:
                out.append((f"hsdp g={g}", {"group_size": g}))
        out.append(("fsdp", {"strategy": "fsdp"}))
    return out


def fit_suggestions(
    params: float | str | None = None,
    *,
    cluster: Any = "dgx-h100",
    nodes: int = DEFAULT_NODES,
    strategy: str = "ddp",
    micro_batch: int = 1,
    accumulation: int = 1,
    recompute: str = "none",
    max_nodes: int = 4096,
    **step_kwargs: Any,
) -> FitAdvice:
    """What makes a configuration fit (module docstring); every change evaluated.

    ``step_kwargs`` go to :func:`~.step.strategy_step` for the base and every change alike (the
    memory's ``cuda_context_bytes`` and ``fragmentation`` too, so a change said to fit fits
    with them).

    >>> fa = fit_suggestions(arch="llama-2-7b", cluster="dgx-h100", nodes=1, model="lesson")
    >>> fa.fits, fa.changes[0].fits
    (False, True)
    """
    from .. import presets
    from .._checks import whole_count

    check_step_keywords(step_kwargs, "fit_suggestions")
    if step_kwargs.get("layout") is not None:
        # a layout wins over each change's strategy in the step: the sharding changes were
        # priced as the layout given, or dropped, without a word
        raise ValueError(
            "layout: fit_suggestions changes the layout (more sharding, an hsdp group); give its "
            "`strategy` (with `group_size`, `reshard_after_forward`) instead"
        )
    params = named_params(params, step_kwargs)  # a name: as strategy_step reads it
    max_nodes = whole_count("max_nodes", max_nodes)  # a string raised "'<=' not supported"
    base_kw = dict(
        cluster=cluster,
        nodes=nodes,
        strategy=strategy,
        micro_batch=micro_batch,
        accumulation=accumulation,
        recompute=recompute,
        **step_kwargs,
    )
    base_kw.setdefault("timeline", False)

    def ev(**upd: Any) -> StrategyStep:
        kw = {**base_kw, **upd}
        if kw.get("strategy") != "hsdp":
            kw.pop("group_size", None)
        if kw.get("strategy") not in ("fsdp", "hsdp"):
            kw.pop("reshard_after_forward", None)
        if kw.get("strategy") != "ddp":
            kw.pop("gradient_as_bucket_view", None)
        return strategy_step(params, **kw)

    base = ev()
    # the node count the base step ran on: a Cluster object's own (nodes left at its default,
    # as strategy_step reads it) or nodes=None; the more-GPUs and larger-card candidates
    # counted from the argument, so cm.cluster("dgx-h100", nodes=4) was offered "2 nodes" and
    # larger cards priced on 8 GPUs, not the job's 32
    nodes = int(base.layout.ranks) // int(base.layout.gpus_per_node)
    cands: list[tuple[str, str, dict[str, Any]]] = []
    if step_kwargs.get("arch") is not None:
        # the modes after this one, from the one list of them (a partial mode, selective-op or
        # selective-layer, has only full after it: it raised tuple.index's "x not in tuple");
        # (selective is still tried with FlashAttention here, as before)
        for r in recompute_choices(recompute, flash_attention=False):
            cands.append((f"recompute {r}", "recompute", {"recompute": r}))
    # DDP's gradient_as_bucket_view, where it is off and drops a bucket copy (two ranks up):
    # the same step, less memory (evaluated here, once, to know it saves something)
    done: dict[str, StrategyStep] = {}
    if strategy == "ddp" and step_kwargs.get("gradient_as_bucket_view") is not True:
        try:
            view = ev(gradient_as_bucket_view=True)
        except ValueError:
            view = None
        if view is not None and view.memory_bytes < base.memory_bytes:
            done[BUCKET_VIEW_CHANGE] = view
            cands.append((BUCKET_VIEW_CHANGE, "bucket_view", {"gradient_as_bucket_view": True}))
    i = _SHARDING_ORDER.index(strategy) if strategy in _SHARDING_ORDER else 0
    for s in _SHARDING_ORDER[i + 1 : 4]:
        cands.append((s, "strategy", {"strategy": s}))
    if strategy in ("fsdp", "hsdp"):
        reshard = step_kwargs.get("reshard_after_forward") is not False
        group = int(base.layout.shard_group) if strategy == "hsdp" else None
        for words, upd in more_sharded_zero3(strategy, group, reshard, int(base.ranks)):
            cands.append((words, "strategy", upd))
    if step_kwargs.get("arch") is not None and recompute != "full":
        cands += [
            (f"{w} and recompute full", k, {**u, "recompute": "full"})
            for w, k, u in list(cands)
            if k in ("strategy", "bucket_view")
        ]
    if micro_batch > 1:
        mb, acc = micro_batch, accumulation
        while mb > 1:
            mb, acc = max(1, mb // 2), acc * 2
            cands.append(
                (
                    f"micro-batch {mb} x {acc} accumulation",
                    "micro_batch",
                    {"micro_batch": mb, "accumulation": acc},
                )
            )
    c0 = (
        cluster
        if not isinstance(cluster, str)
        else presets.cluster(cluster, nodes=nodes, field="cluster")
    )
    gpn = step_kwargs.get("gpus_per_node")
    if gpn is not None and gpn != c0.gpus_per_node:  # a slice of each node, as the step has it
        c0 = c0.with_gpus_per_node(gpn)
    full: dict[str, Any] = {"recompute": "full"} if step_kwargs.get("arch") is not None else {}
    n = nodes * 2
    while n <= max_nodes and n <= nodes * 64:
        gpus = f"{n} nodes ({n * int(c0.gpus_per_node)} GPUs)"
        cands.append((gpus, "more_gpus", {"nodes": n}))
        if strategy == "ddp":
            cands.append((f"{gpus} with fsdp", "more_gpus", {"nodes": n, "strategy": "fsdp"}))
        if full and recompute != "full":
            shard = {"strategy": "fsdp"} if strategy == "ddp" else {}
            what = " with fsdp" if shard else ""
            cands.append(
                (f"{gpus}{what} and recompute full", "more_gpus", {"nodes": n, **full, **shard})
            )
        n *= 2
    mem0 = float(c0.gpu.memory_bytes)
    job_gpus = nodes * int(c0.gpus_per_node)  # the job's GPU count: a larger card keeps it
    # the same-hardware sharding changes (a ZeRO stage up, resharding after forward, a larger
    # hsdp group, fsdp), each tried on a larger card too: on 64 H100s Llama-3.1-70B under fsdp
    # without resharding was offered "dgx-b200 and recompute full" (174 GB, 3.04 s) but not
    # dgx-b200 with resharding (140 GB, 2.29 s), which is cheaper; ranked among the larger
    # cards by their cost as every other change is
    sharding = [(w, u) for w, k, u in cands if k == "strategy" and "recompute" not in u]
    cards: list[tuple[str, dict[str, Any]]] = []  # (words, the step's keywords) per larger card
    for name in presets.names("cluster"):
        try:
            other = _same_gpus(name, job_gpus)
        except (ValueError, KeyError):
            continue
        if other is None:
            continue
        if float(other.gpu.memory_bytes) > mem0 * 1.01 and other.gpu.name != c0.gpu.name:
            card = f"a larger card: {name} ({other.gpu.name})"
            shape = {
                "cluster": other,
                "nodes": int(other.nodes),
                "gpus_per_node": int(other.gpus_per_node),
            }
            if base.compute_source == "measured":
                # a compute time measured on the base's GPU is not the card's: the card's own
                # compute is predicted, as `scenario --vs` refuses to carry it to another GPU
                # (scenario.measured_on_another_gpu) and the app's side B predicts it
                shape["compute_time_s"] = None
            cands.append((card, "larger_card", shape))
            cards.append((card, shape))
            if full and recompute != "full":
                cands.append((f"{card} and recompute full", "larger_card", {**shape, **full}))
            for words, upd in sharding:
                cands.append((f"{card} and {words}", "larger_card", {**shape, **upd}))
    changes = []
    for words, kind, upd in cands:
        try:
            changes.append(FitChange(words, kind, upd, done.get(words) or ev(**upd)))
        except ValueError:
            continue
    # no larger card fits alone, with recompute full or with one sharding change: each with a
    # sharding change and recompute full together (tried only then, so that a setup a card
    # makes fit costs no more steps)
    if full and recompute != "full" and not any(c.fits for c in changes if c.kind == "larger_card"):
        for card, shape in cards:
            for words, upd in sharding:
                both = {**shape, **upd, **full}
                try:
                    step = ev(**both)
                except ValueError:
                    continue
                changes.append(
                    FitChange(f"{card} and {words} and recompute full", "larger_card", both, step)
                )
    # more GPUs: only the fewest nodes that fit, per variant (same strategy, or with fsdp);
    # the doublings bracket it, a bisection between them finds it
    changes = _fewest_nodes(changes, nodes, int(c0.gpus_per_node), ev)
    seen: set[str] = set()
    kept = []
    for ch in changes:
        if ch.kind == "more_gpus":
            variant = str(ch.updates.get("strategy", strategy))
            if not ch.fits or variant in seen:
                continue
            seen.add(variant)
        kept.append(ch)
    # a combined change whose part alone already fits is dominated ("gb200 and recompute full"
    # next to "gb200", "2 nodes with fsdp" next to "fsdp"): only the part is listed
    kept = [c for c in kept if not any(_part_of(d, c) for d in kept if d.fits)]
    # same hardware first (its cost is GPU-time), a larger card after (its cost is its price)
    ok = sorted(
        (c for c in kept if c.fits),
        key=lambda c: (c.kind == "larger_card", c.gpu_seconds_per_token, c.step.memory_bytes),
    )
    rest = sorted((c for c in kept if not c.fits), key=lambda c: c.step.memory_bytes)
    return FitAdvice(base, tuple(ok + rest))


def _fewest_nodes(
    changes: list[FitChange], nodes: int, gpus_per_node: int, ev: Callable[..., StrategyStep]
) -> list[FitChange]:
    """``changes`` with each more-GPUs variant's first fitting doubling replaced by the fewest
    nodes that fit: the doublings ``2n, 4n, ...`` bracket it (``2^k n`` fits, ``2^(k-1) n``
    does not), and a bisection over the node counts between finds the fewest, since the memory
    per GPU falls with the ranks it is sharded over. Llama-3.1-70B under fsdp with recompute
    full on one DGX H100 node was offered "4 nodes (32 GPUs)" where 3 fit (66.5 GB), and
    Llama-3.1-405B on 16 nodes "32 nodes" where 24 fit. A node count the step refuses (an hsdp
    group that does not divide it) counts as not fitting, so no suggestion is a count that
    cannot run."""
    out = list(changes)
    firsts: dict[tuple[tuple[str, Any], ...], int] = {}
    for i, ch in enumerate(out):
        if ch.kind != "more_gpus" or not ch.fits:
            continue
        variant = tuple(sorted((k, v) for k, v in ch.updates.items() if k != "nodes"))
        firsts.setdefault(variant, i)
    for i in firsts.values():
        ch = out[i]
        hi = int(ch.updates["nodes"])
        lo = max(nodes, hi // 2)  # the doubling below did not fit (or is the base)
        best = ch
        while hi - lo > 1:
            mid = (lo + hi) // 2
            try:
                step = ev(**{**ch.updates, "nodes": mid})
            except ValueError:
                step = None
            if step is not None and step.fits:
                old = f"{hi} nodes ({hi * gpus_per_node} GPUs)"
                words = f"{mid} nodes ({mid * gpus_per_node} GPUs)" + best.change.removeprefix(old)
                best, hi = FitChange(words, "more_gpus", {**ch.updates, "nodes": mid}, step), mid
            else:
                lo = mid
        out[i] = best
    return out


def _part_of(part: FitChange, whole: FitChange) -> bool:
    """Whether ``part``'s changes are a strict subset of ``whole``'s (the same keywords set to
    the same values, and ``whole`` changes more): ``whole`` then combines ``part`` with more."""
    p, w = part.updates, whole.updates
    return len(p) < len(w) and all(k in w and w[k] == v for k, v in p.items())


def _same_gpus(name: str, gpus: int) -> Any:
    """Cluster preset ``name`` with ``gpus`` GPUs in all: whole nodes when they divide it, one
    node's slice when it holds fewer, else None (that card cannot hold this job's GPU count, so
    "a larger card" would also change the GPUs the state is sharded over)."""
    from .. import presets

    one = presets.cluster(name, nodes=1, field="cluster")
    gpn = int(one.gpus_per_node)
    if gpus < gpn:
        return one.with_gpus_per_node(gpus)
    if gpus % gpn == 0:
        return presets.cluster(name, nodes=gpus // gpn)
    return None


def recompute_choices(current: str, flash_attention: bool) -> tuple[str, ...]:
    """Recomputation modes to try, cheapest first, when a setup does not fit at ``current``.

    Selective recomputation (Korthikanti et al. 2022) drops the attention-score term that
    FlashAttention already drops, so with FlashAttention it saves nothing more and is skipped;
    full recomputation keeps only each layer's input. The CLI's ``memory`` and the Memory page
    both ask in this order, so both name the same mode.

    >>> recompute_choices("none", True)
    ('full',)
    >>> recompute_choices("none", False)
    ('selective', 'full')
    >>> recompute_choices("full", False)
    ()
    >>> recompute_choices("selective-layer", False)
    ('full',)
    """
    order = ("none", "selective", "full")
    # a partial mode (selective-op, selective-layer) already keeps less than none: only full is left
    later = order[order.index(current) + 1 :] if current in order else ("full",)
    return tuple(rc for rc in later if not (rc == "selective" and flash_attention))


def nothing_fits_note(
    gpu_memory_bytes: float, fixed_bytes: float, activations_bytes: float, what: str = ""
) -> str:
    """Why even one parameter does not fit: what it would sit beside (never "0 params").
    Where the fixed part leaves room, it is one parameter's own state that does not fit in it
    (a card of a few bytes: 16 B a parameter under mixed-precision Adam).

    >>> nothing_fits_note(80e9, 95e9, 93e9, "4096 tokens x micro-batch 1")
    'even one parameter does not fit: 95 GB per GPU are taken before any weight (activations 93 GB at 4096 tokens x micro-batch 1, and 2 GB of CUDA context, fragmentation and buffers) on a GPU with 80 GB'
    >>> nothing_fits_note(80e9, 95e9, 95e9, "4096 tokens x micro-batch 1")
    'even one parameter does not fit: 95 GB per GPU are taken before any weight (activations 95 GB at 4096 tokens x micro-batch 1) on a GPU with 80 GB'
    >>> nothing_fits_note(10.0, 0.0, 0.0)
    'even one parameter does not fit: its training state is larger than the 10 B left on a GPU with 10 B (0 B taken before any weight)'
    """
    from ..units import format_bytes

    at = f" at {what}" if what else ""
    if fixed_bytes < gpu_memory_bytes:
        return (
            "even one parameter does not fit: its training state is larger than the "
            f"{format_bytes(gpu_memory_bytes - fixed_bytes)} left on a GPU with "
            f"{format_bytes(gpu_memory_bytes)} ({format_bytes(fixed_bytes)} taken before any "
            "weight)"
        )
    # the rest of the fixed part (a CUDA context, its fragmentation, buffers) said too: "108 GB
    # taken (activations 28.4 GB)" left 80 GB of a typed CUDA context unnamed
    rest = fixed_bytes - activations_bytes
    other = (
        f", and {format_bytes(rest)} of CUDA context, fragmentation and buffers"
        if rest >= 0.01 * fixed_bytes
        else ""
    )
    return (
        f"even one parameter does not fit: {format_bytes(fixed_bytes)} per GPU are taken before "
        f"any weight (activations {format_bytes(activations_bytes)}{at}{other}) on a GPU with "
        f"{format_bytes(gpu_memory_bytes)}"
    )


def _finite(x: float) -> bool:
    return math.isfinite(x)
