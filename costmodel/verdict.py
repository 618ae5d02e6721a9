r"""A winner only when it wins: the one decision every surface makes between two predictions.

Two predicted times (the best two algorithms at a size, or two configurations side by side)
are told apart only when their gap is larger than the prediction's expected error:

.. math::

    \text{gap} = t_2 / t_1 - 1 \quad (t_1 \le t_2), \qquad
    \text{winner} = \begin{cases} \text{the faster} & \text{gap} > h \\
    \text{none ("within the expected error")} & \text{gap} \le h \end{cases}

where :math:`h` is the half-width of the expected-error band (a fraction; e.g. 0.41 for ±41 %):
the 80th percentile of :math:`|t_\text{meas} / t_\text{pred} - 1|` on clusters the model was not
fitted on (grouped cross-validation, :mod:`costmodel.uncertainty`, ``FITTED.bands``). A measured
time can sit anywhere in :math:`t (1 \pm h)` for four runs in five, so a gap inside :math:`h`
does not say which one a run would measure faster. Decision: the comparison uses the band of
the faster prediction's regime (one band for both: the same model, cluster and size), and an
unknown band (a regime no bundled run measured) never names a winner either: it names the
model's ranking and says the error is unknown.

Every surface calls :func:`decide` (one pair or a ranking) or :func:`decide_sizes` (per size):
the Collectives and Cluster pages, :func:`costmodel.predict.predict_all_algorithms` (the API and
``collective --algorithm all``) and ``scenario --vs`` (:func:`decide_scenarios`, whose band is
each side's step band with its compute band folded in, see there).

>>> v = decide({"ring": 1.00, "tree": 1.03}, 0.41)
>>> v.winner is None, v.text()
(True, 'within the expected error: ring 3% faster than tree, under ±41%')
>>> decide({"ring": 1.0, "tree": 2.0}, 0.41).text()
'ring (tree is 2x slower; expected error ±41%)'
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: What every surface says when the best two are closer than the expected error.
WITHIN = "within the expected error"

#: The smallest gap ``t_2 / t_1 - 1`` a verdict tells apart [-]: 1e-4, the finest gap the
#: surfaces print (``_pct`` writes anything under it as ``<0.01%``). Below it two steps differ
#: by rounding (a strategy's gather of a one-GPU "shard" costs nothing), by far less than any
#: run could measure (the spread of repeated steps is of the order of 1 %), so even where the
#: expected error is 0 (one GPU: no communication, the same compute) they are a tie.
GAP_RESOLUTION = 1e-4

__all__ = [
    "GAP_RESOLUTION",
    "WITHIN",
    "Verdict",
    "comm_half_width",
    "compute_half_width",
    "decide",
    "decide_scenarios",
    "decide_sizes",
    "pair_half_width",
    "pct_pair",
    "shared_compute_half_width",
    "step_half_width",
    "within_expected_error",
]


@dataclass(frozen=True)
class Verdict:
    """The decision between the best two predictions (see the module docstring).

    ``best`` and ``runner_up``: names, fastest first (``runner_up`` None: only one candidate);
    ``gap``: ``t_runner_up / t_best - 1``; ``half_width``: the band used (NaN: unknown).
    """

    best: str
    runner_up: str | None
    gap: float
    half_width: float
    why_unknown: str = "no bundled run measured this regime"

    @property
    def known(self) -> bool:
        """Whether the expected error is known (a measured regime)."""
        return not math.isnan(self.half_width)

    @property
    def decided(self) -> bool:
        """A winner: one candidate only, or a gap larger than a known band."""
        return self.runner_up is None or (
            self.known and not within_expected_error(self.gap, self.half_width)
        )

    @property
    def winner(self) -> str | None:
        """The faster name when it wins, else None."""
        return self.best if self.decided else None

    def label(self) -> str:
        """Short: the winner's name, or :data:`WITHIN` (``"... (error unknown)"`` unknown)."""
        if self.decided:
            return self.best
        return WITHIN if self.known else f"{self.best} (expected error unknown)"

    def text(self) -> str:
        """One sentence with the figures behind the decision."""
        if self.runner_up is None:
            return f"{self.best} (the only candidate)"
        # the gap and the band with digits enough to tell them apart (a NaN band: the gap's own)
        pct, half = pct_pair(self.gap, self.half_width)
        if math.isfinite(self.gap) and self.gap >= 1:
            # twice as long or more as a ratio: "B 4.93x slower" (as the side-by-side tables
            # write B / A), where "393% faster" read as a share of something
            pct = f"{1 + self.gap:.3g}x"
        # an exact tie (the same configuration twice) is said so, not "A 0% faster than B"
        ahead = (
            f"{self.best} and {self.runner_up} take the same time"
            if self.gap == 0
            else f"{self.best} and {self.runner_up} take the same time (to within {_pct(GAP_RESOLUTION)})"
            if self.gap < GAP_RESOLUTION
            else f"{self.best} {pct} faster than {self.runner_up}"
        )
        if not self.known:
            # the reason follows a colon, not in brackets: it may carry its own (a compute
            # label's "(no fitted efficiency ...)"), and brackets in brackets read badly
            return (
                f"{ahead} by the model alone; the expected error here is unknown: "
                f"{self.why_unknown}"
            )
        band = f"±{half}"
        if self.decided:
            return f"{self.best} ({self.runner_up} is {pct} slower; expected error {band})"
        return f"{WITHIN}: {ahead}, under {band}"

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "best": self.best,
            "runner_up": self.runner_up,
            # no runner-up, no gap: null, not the inf the comparison holds (JSON has no inf;
            # the CLI wrote the string "inf" where a script reads a number)
            "gap": None if self.runner_up is None else self.gap,
            "half_width": None if not self.known else self.half_width,
            "winner": self.winner,
            "verdict": self.label(),
            "text": self.text(),
        }


def within_expected_error(gap: float, half_width: float) -> bool:
    """Whether a gap ``t / t_best - 1`` [-] is a tie under the expected error ``half_width``
    (a fraction, known): ``gap <= max(h, GAP_RESOLUTION)``. The one tie rule of every surface:
    :class:`Verdict`, the strategy advisor's ranking, ``collective --algorithm all``'s rows
    and ``scenario --vs``'s tokens per GPU; a gap under :data:`GAP_RESOLUTION` (one no run could
    measure, printed ``<0.01%``) is a tie even where the expected error is 0.

    >>> within_expected_error(0.03, 0.41), within_expected_error(0.5, 0.41)
    (True, False)
    >>> within_expected_error(4e-7, 0.0), within_expected_error(0.07, 0.0)
    (True, False)
    """
    return float(gap) <= max(float(half_width), GAP_RESOLUTION)


def _pct(fraction: float) -> str:
    """``41%``, ``3%``, two significant digits below 1 % (``0.12%``), ``<0.01%`` below that
    (a gap of rounding noise, e.g. 1.8e-13 %, is not a figure to print)."""
    x = 100 * fraction
    if 0 < x < 0.01:
        return "<0.01%"
    return f"{x:.0f}%" if x >= 1 or x == 0 else f"{x:.2g}%"


def pct_pair(gap: float, half_width: float) -> tuple[str, str]:
    """``(gap, half_width)`` as :func:`_pct` writes them, with more digits where the two would
    read the same though they differ: a gap just beyond the band read "A is 0.11% slower;
    expected error ±0.11%", a winner named for no visible reason.

    >>> pct_pair(0.001114, 0.0011), pct_pair(0.03, 0.41)
    (('0.111%', '0.11%'), ('3%', '41%'))
    """
    a, b = _pct(gap), _pct(half_width)
    if a != b or gap == half_width or not (math.isfinite(gap) and math.isfinite(half_width)):
        return a, b
    for digits in range(3, 8):
        a, b = (f"{100 * gap:.{digits}g}%", f"{100 * half_width:.{digits}g}%")
        if a != b:
            break
    return a, b


def _half_width(value: float | None) -> float:
    if value is None:
        return math.nan
    v = float(value)
    return v if math.isfinite(v) and v >= 0 else math.nan


def decide(
    times_s: Mapping[str, float],
    half_width: float | None,
    *,
    why_unknown: str = "no bundled run measured this regime",
) -> Verdict:
    """The verdict between the two fastest of ``times_s`` (name -> time [s], > 0).

    ``half_width``: the expected error's half-width (a fraction); None or NaN: unknown
    (``why_unknown`` says why, in the verdict's text).
    Raises ValueError for no candidate or a time that is not a finite number > 0.
    """
    if not times_s:
        raise ValueError("times_s: no candidate to decide between")
    for name, t in times_s.items():
        if not (isinstance(t, int | float) and math.isfinite(t) and t > 0):
            raise ValueError(f"times_s[{name!r}]: must be a finite time > 0 s, got {t!r}")
    ranked = sorted(times_s.items(), key=lambda kv: kv[1])
    (best, t1), rest = ranked[0], ranked[1:]
    if not rest:
        return Verdict(best, None, math.inf, _half_width(half_width), why_unknown)
    name2, t2 = rest[0]
    gap = float(t2) / float(t1) - 1.0
    return Verdict(best, name2, gap, _half_width(half_width), why_unknown)


def pair_half_width(a_half: float, b_half: float, *, same_error: bool) -> float:
    """Expected error of the ratio of two predictions, as a fraction, from each one's band.

    ``h = max(h_A, h_B)`` when both rest on one error (the same cluster preset, model and
    band regime: a fabric that is off is off for both, and the ratio keeps most of it out);
    ``h = h_A + h_B`` otherwise (other hardware or another regime: the two errors are not
    shared, so they do not cancel in the ratio; the bound of the sum of two relative errors).
    The same rule as :func:`decide_scenarios` for two steps. NaN when either band is unknown.

    >>> pair_half_width(0.1, 0.2, same_error=True), round(pair_half_width(0.1, 0.2, same_error=False), 3)
    (0.2, 0.3)
    """
    a, b = float(a_half), float(b_half)
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return max(a, b) if same_error else a + b


def shared_compute_half_width(
    comm_a: float,
    comm_b: float,
    compute_share_a: float,
    compute_share_b: float,
    compute_half: float,
    scaling_half: float = 0.0,
) -> float:
    r"""Expected error of the ratio of two steps whose compute is one estimate on one GPU.

    .. math::

        h = \max(m_A, m_B) + b\,|C_B / t_B - C_A / t_A| + s

    ``comm_a``, ``comm_b``: each step's communication half-width ``m`` (a fraction of its
    step); ``compute_share_*``: ``C / t``, the step's compute over its time [-];
    ``compute_half``: ``b``, the compute band's half-width (a fraction; NaN unknown);
    ``scaling_half``: ``s``, the scaling band's half-width when the two run on different GPU
    counts (else 0). A fitted efficiency that is off is off by the same factor ``1 + e`` on
    both: with ``t = C (1 + e) + X`` the ratio ``t_B / t_A`` moves by
    ``e (C_B / t_B - C_A / t_A)`` to first order, so only the difference of the compute
    shares counts (it cancels for equal shares, even when ``b`` is unknown). The rule of
    :func:`decide_scenarios` (8 vs 64 H100s) and of the strategy advisor
    (:meth:`costmodel.strategy.advisor.Advice.verdict`). NaN when a band it needs is unknown.

    >>> round(shared_compute_half_width(0.01, 0.02, 0.9, 0.8, 0.15), 6)
    0.035
    >>> shared_compute_half_width(0.01, 0.02, 0.9, 0.9, float("nan"))
    0.02
    """
    ma, mb = float(comm_a), float(comm_b)
    if math.isnan(ma) or math.isnan(mb):
        return math.nan
    d = abs(float(compute_share_b) - float(compute_share_a))
    if math.isclose(d, 0.0, abs_tol=1e-12):
        return max(ma, mb) + float(scaling_half)  # one compute error, the same share: cancels
    b = float(compute_half)
    if math.isnan(b):
        return math.nan
    return max(ma, mb) + b * d + float(scaling_half)


def decide_sizes(
    names: Sequence[str],
    times_s: Any,
    half_width: Any,
    *,
    why_unknown: str = "no bundled run measured this regime",
) -> list[Verdict]:
    """:func:`decide` per size: ``times_s[i, j]`` is candidate ``names[i]`` at size ``j`` [s];
    ``half_width``: a scalar or one per size (NaN: unknown, ``why_unknown`` says why).
    Candidates without a finite time > 0 at a size are left out there.

    >>> [v.label() for v in decide_sizes(["ring", "tree"], [[1.0, 1.0], [1.1, 3.0]], 0.2)]
    ['within the expected error', 'ring']
    """
    t = np.atleast_2d(np.asarray(times_s, dtype=float))
    if t.shape[0] != len(names):
        raise ValueError(f"times_s: {t.shape[0]} rows for {len(names)} names")
    hw = np.broadcast_to(np.asarray(half_width, dtype=float), (t.shape[1],))
    out = []
    for j in range(t.shape[1]):
        col = {
            n: float(t[i, j]) for i, n in enumerate(names) if np.isfinite(t[i, j]) and t[i, j] > 0
        }
        out.append(
            decide(col, float(hw[j]), why_unknown=why_unknown)
            if col
            else Verdict("-", None, math.inf, math.nan)
        )
    return out


def comm_half_width(result: Any) -> float:
    """Expected error of a training step's time from its communication, as a fraction.

    ``h_comm = h_allreduce * exposed_comm_s / step_time_s``: the all-reduce's band
    (:attr:`costmodel.predict.Prediction.error_band` at the bucket size on the scenario's
    cluster and model) applied to the communication the step does not hide.
    ``result``: a :class:`costmodel.scenario.ScenarioResult`. NaN when the band is unknown.
    """
    from .predict import predict_collective

    step = float(result.step_time_s)
    exposed = float(result.exposed_comm_s)
    if not (step > 0) or exposed <= 0:
        return 0.0
    sc = result.scenario
    band = predict_collective(
        "all_reduce",
        float(sc.effective_bucket_cap_bytes),
        sc.cluster,
        nodes=int(result.nodes),
        gpus_per_node=int(result.gpus_per_node),
        model=sc.model,
    ).error_band
    if band is None or not band.measured:
        return math.nan
    return float(np.max(band.half_width)) * exposed / step


def compute_half_width(result: Any) -> float:
    """Expected error of a training step's time from its compute, as a fraction.

    ``h_compute = max(1 - b_lo, b_hi - 1) * compute_s / step_time_s``: the fitted efficiency's
    compute band (``ScenarioResult.compute_band``, the multipliers that held 80 % of its
    grouped-CV errors, :func:`costmodel.compute.compute_fit`) applied to the step's compute.
    A measured compute time or a given MFU is the user's own input: no model band (0).
    A GPU family with no fitted efficiency (source ``"default-mfu"``, e.g. Blackwell: its
    compute is the default MFU, extrapolated from no measured run) has an unknown error: NaN.
    """
    step = float(result.step_time_s)
    if getattr(result, "compute_source", "fitted") == "default-mfu":
        return math.nan
    lo, hi = (float(x) for x in getattr(result, "compute_band", (1.0, 1.0)))
    if not (step > 0 and math.isfinite(lo) and math.isfinite(hi)):
        return math.nan
    return max(1.0 - lo, hi - 1.0, 0.0) * float(result.compute_s) / step


def step_half_width(result: Any) -> float:
    """Expected error of a training step's time, as a fraction: the communication's band
    (:func:`comm_half_width`) plus the compute's (:func:`compute_half_width`), added (the two
    may err the same way). NaN when either is unknown."""
    return comm_half_width(result) + compute_half_width(result)


def _same_compute(a: Any, b: Any) -> bool:
    """Whether both sides' compute comes from the same estimate on the same GPU (their compute
    errors are then one error, shared)."""
    ka = (getattr(a, "gpu_name", ""), a.compute_source, tuple(a.compute_band))
    kb = (getattr(b, "gpu_name", ""), b.compute_source, tuple(b.compute_band))
    return ka == kb and bool(ka[0])


def _scaling_half_width(a: Any, b: Any) -> float:
    """Half-width of the scaling path's band [-] when the two sides run on different GPU
    counts (and one of them beyond one node, where that band applies); else 0."""
    if int(a.ranks) == int(b.ranks) or max(int(a.nodes), int(b.nodes)) <= 1:
        return 0.0
    from .strategy.band import scaling_band

    lo, hi = scaling_band()
    return max(1.0 - lo, hi - 1.0, 0.0)


def decide_scenarios(a: Any, b: Any) -> Verdict:
    """``scenario --vs`` (and the API's and the app's side-by-side, through
    :func:`costmodel.scenario.compare_summary`): A or B by step time, under the comparison's
    expected error.

    Each side's band is its step band with its compute band folded in (:func:`step_half_width`:
    communication ``m`` plus compute ``c``). Rule for the two sides:

    - different GPUs or compute estimates (H100 vs A100): their compute errors are not shared,
      so they do not cancel in the ratio of the step times: ``h = m_A + c_A + m_B + c_B``;
    - the same GPU and estimate (e.g. 8 vs 64 H100s): a fitted efficiency that is off is off by
      the same factor ``1 + e`` on both. With ``t = C (1 + e) + X`` the ratio ``t_B / t_A``
      moves by ``e (C_B / t_B - C_A / t_A)`` to first order, so
      ``h = max(m_A, m_B) + b |C_B / t_B - C_A / t_A|`` (``b`` the compute band's half-width);
    - a side whose compute has no fitted efficiency (a B200: the default MFU, extrapolated
      from no measured run): the error is unknown and no winner is named (the text says why).

    On the same GPU and estimate at two GPU counts (8 vs 16 H100 nodes), the ratio of the two
    steps is what the scaling path predicts, and its error was measured: the half-width of the
    scaling band (:func:`costmodel.strategy.band.scaling_band`, the 10th-90th percentile of
    observed / predicted when a series' smallest count is carried to the larger ones) is added
    (without it, 8 vs 16 nodes named A "2 % faster" under +/-0.89 %, inside that band).
    """
    times = {"A": float(a.step_time_s), "B": float(b.step_time_s)}
    ma, mb = comm_half_width(a), comm_half_width(b)
    if math.isnan(ma) or math.isnan(mb):
        return decide(times, math.nan)
    fa, fb = float(a.compute_s) / times["A"], float(b.compute_s) / times["B"]
    same = _same_compute(a, b)
    scale = _scaling_half_width(a, b) if same else 0.0
    if same and math.isclose(fa, fb, rel_tol=1e-9, abs_tol=1e-12):
        # one compute error, the same share: it cancels
        return decide(times, shared_compute_half_width(ma, mb, fa, fa, math.nan, scale))
    ca, cb = compute_half_width(a), compute_half_width(b)
    if math.isnan(ca) or math.isnan(cb):
        why = "; ".join(
            f"{side}'s compute is the {r.compute_label or 'default MFU'}"
            for side, r in (("A", a), ("B", b))
            if r.compute_source == "default-mfu"
        )
        return decide(times, math.nan, why_unknown=why)
    if same:
        # t = C (1 + e) + X with one e for both: the ratio moves by e (C_B/t_B - C_A/t_A)
        lo, hi = (float(x) for x in a.compute_band)
        half = shared_compute_half_width(ma, mb, fa, fb, max(1.0 - lo, hi - 1.0, 0.0), scale)
    else:
        half = ma + ca + mb + cb
    return decide(times, half)
