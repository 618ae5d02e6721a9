r"""Compute time of one micro-batch: the single place the step engine gets it.

In order of precedence (:func:`step_compute`):

1. a measured ``compute_time_s`` of one micro-batch (source ``"measured"``);
2. a given model FLOP utilisation ``mfu``: the model's training FLOPs over the GPU's peak times
   it (source ``"mfu"``),

   .. math:: t = \frac{F_{token}\, T}{\text{peak} \times \text{MFU}}

   [s] (``F_token`` [FLOP/token] forward + backward, ``T`` [tokens] of the micro-batch, peak
   [FLOP/s]; Kaplan et al. 2020, arXiv:2001.08361, ``C = 6 N D``; PaLM's MFU, Chowdhery et al.
   2022, arXiv:2204.02311, appendix B), *whatever the recomputation*;
3. otherwise the fitted achievable efficiency of :mod:`costmodel.compute` (source
   ``"fitted"``, with its grouped-CV band), for the GPU family and precision it was fitted on;
   a GPU family with no fit falls back to :data:`DEFAULT_MFU` and says so (source
   ``"default-mfu"``).

The peak of an MFU is the dense peak of the step's compute precision
(:func:`costmodel.compute.precision_peak_flops`): bf16's, or fp8's for an fp8 step (H100 SXM
989 and 1979 TFLOP/s). That is how the published fp8 runs quote it: llm-foundry's H100
``amp_fp8`` rows (benchmarking README, 2024-04) give an MFU that, with their tokens/s, implies a
peak of 1950-1978 TFLOP/s, and torchtitan's Llama 3.1 405B ``Float8`` rows (docs/performance.md,
2024) an MFU at half the bf16 row's per token/s, i.e. over a peak twice bf16's. So an MFU of
0.3 under fp8 is 0.3 of the fp8 peak, twice the throughput of 0.3 under bf16; the fp8 runs
published reach lower MFUs than bf16 runs (llm-foundry's H100: 0.14-0.30 under fp8, 0.26-0.46
under bf16), which the fitted fp8 efficiency carries. :data:`DEFAULT_MFU` is a bf16 figure: an
fp8 step on a GPU family with no fitted fp8 efficiency takes it of the bf16 peak (half that MFU
of the fp8 peak on H100), assuming no fp8 speed-up the data does not show. A measured time is
used as it is, held to the fp8 peak (faster is refused).

**An MFU is PaLM's MFU on every road** (``--mfu``, ``Scenario(mfu=)``, ``strategy_step(mfu=)``,
the sweeps' ``mfu``, the step page's MFU box, the fitted compute's label and the step's
reported MFU): model FLOPs over time x peak, recomputation's FLOPs *not*
counted. Recomputation adds work, but an MFU measured on a run that recomputes already holds
that work's cost in its time: PaLM's appendix B excludes rematerialisation from MFU (it is the
hardware FLOP utilisation, HFU, that counts it), and so do the published tables the fit reads:
llm-foundry's MFU "does not account for the additional compute required for ... activation
checkpointing" (its HFU column does), torchtitan's MFU is its model FLOPs per token x tokens/s
over the peak, full-AC rows included. So ``--mfu 0.36 --recompute full`` prices the compute as
``--mfu 0.36`` alone, and as the fitted road whose label reads "MFU 0.36" for that setup (the
fit, :mod:`costmodel.compute`, prices the recomputation's FLOPs at its own efficiency and
reports PaLM's MFU of the result). An HFU ``h`` is the MFU ``h / (1 + r)``, ``r`` the
recomputation's extra work below; no separate HFU input is offered.

**The default MFU is not a measurement** (decision): :data:`DEFAULT_MFU`, the fallback for a
GPU family with no fitted efficiency (Blackwell), describes a run *without* recomputation. A
given MFU was measured on the user's run, recomputation and all; the default was measured on
no run, and reading it as PaLM's MFU of a recomputing run made recomputation free on exactly
the GPUs with no fit (``scenario --recompute full --vs cluster=dgx-b200`` charged the fitted
H100 side about a third more and the B200 side nothing). So under the default the
recomputation's FLOPs run at the same hardware utilisation: the step's MFU is
``DEFAULT_MFU / (1 + r)`` (0.30 under full recomputation), and the label says so.

**The default MFU is the MFU a user types** (decision): otherwise it prices exactly what
``mfu=DEFAULT_MFU`` prices, through the same :func:`micro_batch_compute_s` and of the same
FLOPs (:func:`costmodel.strategy.step.model_flops_per_token`): an architecture's 6N +
attention, a bare count's 6N (Kaplan's ``C = 6 N D``, the FLOPs a given MFU of a count is of),
so the label "default MFU 0.40" is the ``--mfu`` of its compute. A bare count was priced at
0.40 of the FLOPs of the transformer it stands for (6N of its non-embedding parameters +
attention), which no ``--mfu`` gave back (7B at 4096 tokens on a DGX B200 node: 223 ms by
default, 191 ms typed). That transformer's FLOPs are the fitted road's, whose fit reads its
hidden size and attention; :func:`fitted_efficiency` decides the road for both.

Recomputation's extra work is :func:`costmodel.compute.recompute_extra` (matmuls and attention
separately; ``full`` reruns the forward, a third more, Korthikanti et al. 2022,
arXiv:2205.05198, section 5; ``selective-op`` / ``selective-layer`` as torchtitan's policies).

The fitted efficiency is a one-node *step* efficiency: the published single-node FSDP runs it
was fitted on include their intra-node communication. The engine then prices that
communication again; to count it once, :func:`strategy_step` calibrates the fitted compute so
that the engine's own one-node FSDP step of one micro-batch equals the fitted one-node step
(the fidelity report's calibration, ``costmodel.step_fidelity``); see docs/design.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

DEFAULT_MFU = 0.4
"""MFU when nothing is measured and the GPU family has no fitted efficiency (the tool's
long-standing default), of a run *without* recomputation: it is no measurement of a run that
recomputes, so recomputation's extra work ``r`` (:func:`recompute_extra`) runs at the same
hardware utilisation and the step's MFU is ``DEFAULT_MFU / (1 + r)`` (0.30 under full
recomputation); a given MFU stays PaLM's, recomputation inside it (module docstring). Of the
FLOPs a given MFU is of (6N of a bare count): without recomputation the default is
``mfu=DEFAULT_MFU`` typed, the same compute (module docstring)."""

# Forward 2PT, backward 4PT FLOPs (Kaplan et al. 2020, section 2.1).
FORWARD_FRACTION = 1.0 / 3.0

SOURCES = ("fitted", "mfu", "measured", "default-mfu")
"""Where a step's compute time came from (:attr:`ComputeTime.source`)."""

MEASURED_LABEL = "measured compute time"
""":attr:`ComputeTime.label` of a measured compute time (it overrides a given MFU)."""


def measured_label(precision: str = "bf16") -> str:
    """:attr:`ComputeTime.label` of a measured compute time at ``precision``: the measurement
    decides the compute, so an fp8 precision beside it only sets the peak it may not beat
    (:func:`costmodel._checks.refuse_faster_than_peak`), and the label says so rather
    than let "compute precision fp8" read as having sped the step up. bf16, the default,
    keeps the plain label.

    >>> measured_label(), measured_label("fp8")
    ('measured compute time', 'measured compute time (precision fp8 only bounds it by the fp8 peak)')
    """
    if precision == "bf16":
        return MEASURED_LABEL
    return f"{MEASURED_LABEL} (precision {precision} only bounds it by the {precision} peak)"


def speed_beside_measured(
    power: str = "power_limit_w", compute: str = "compute_time_s", then: str = "give one of them"
) -> str:
    """The one refusal of a power limit (or an MFU: ``power="mfu"``) beside a measured compute
    time, on every surface (the
    API's ``strategy_step`` and ``Scenario``, the CLI, the step sweep; the step page drops the
    limit and says so, as it does an MFU): the power limit sets only the speed of the
    predicted compute (:func:`costmodel.compute.gpu_power_w`), which a measurement replaces,
    so beside one it would be silently ignored. ``power`` and ``compute`` name the two fields
    in the surface's words, ``then`` what to do.

    >>> speed_beside_measured()
    'power_limit_w: not with compute_time_s (it sets the speed of the predicted compute, which a measured compute time replaces); give one of them'
    """
    return (
        f"{power}: not with {compute} (it sets the speed of the predicted compute, which a "
        f"measured compute time replaces); {then}"
    )


def micro_batch_compute_s(
    flops_per_token: float,
    tokens: float,
    peak_flops: float,
    mfu: float | None = None,
    compute_time_s: float | None = None,
) -> float:
    """Forward + backward of one micro-batch on one GPU at a given MFU [s] (module docstring).

    ``compute_time_s`` (measured) wins over ``mfu``; ``mfu`` defaults to :data:`DEFAULT_MFU`.
    The step engine's default is the fitted efficiency (:func:`step_compute`); this is the
    MFU road it takes when an MFU is given.

    >>> round(micro_batch_compute_s(6 * 7e9, 4096, 989e12), 3)
    0.435
    >>> micro_batch_compute_s(6 * 7e9, 4096, 989e12, compute_time_s=0.4)
    0.4
    """
    from .._checks import refuse_unreal, said

    # float(np.timedelta64(5, "ns")) is 5.0 (5 s of compute); a complex MFU loses a part
    refuse_unreal("compute_time_s", compute_time_s)
    refuse_unreal("mfu", mfu)
    # the work's own numbers: a NaN or negative one gave a NaN or negative time, an array
    # Python's "only 0-dimensional arrays can be converted" (one micro-batch per call)
    for name, value, unit in (
        ("flops_per_token", flops_per_token, " FLOP"),
        ("tokens", tokens, ""),
        ("peak_flops", peak_flops, " FLOP/s"),
    ):
        refuse_unreal(name, value)
        x = _number(value)
        if not (math.isfinite(x) and x > 0):
            raise ValueError(f"{name}: must be a finite number > 0{unit}, got {said(value)}")
    if compute_time_s is not None:
        t = _number(compute_time_s)
        from .._limits import LIMITS

        # Scenario's, the CLI's --compute-time and the sweep's one range, (0, 1e6] s: 1e9 s
        # was priced here while Scenario refused it
        if not LIMITS["compute_time"].holds(t):
            hint = (
                " (text such as '400ms': cm.parse_duration)"
                if isinstance(compute_time_s, str)
                else ""
            )
            raise ValueError(
                # the range without the CLI's text examples: the API takes seconds
                f"compute_time_s: must be {LIMITS['compute_time'].rule.split(', e.g.')[0]}"
                f"{hint}, got {said(compute_time_s)}"
            )
        return t
    u = DEFAULT_MFU if mfu is None else _number(mfu)
    from .._limits import LIMITS

    if not LIMITS["mfu"].holds(u):  # NaN too: the one range of every surface, in its words
        raise ValueError(f"mfu: must be {LIMITS['mfu'].rule}, got {said(mfu)}")
    return float(flops_per_token) * float(tokens) / (float(peak_flops) * u)


def micro_batch_of_tokens(
    tokens_per_gpu: float,
    sequence_length: int,
    *,
    names: tuple[str, str, str] = ("tokens_per_gpu", "sequence_length", "micro_batch"),
) -> int:
    """Micro-batch [samples] of ``tokens_per_gpu`` tokens per GPU and micro-batch at
    ``sequence_length`` tokens per sample: ``b = T / s``, which must be a whole number.

    Tokens are priced as micro-batch x sequence, on the step's own compute road (the fitted
    efficiency reads both, or a given MFU), never as a time computed apart: ``costmodel step
    --cluster --tokens-per-gpu`` and the step sweep's ``tokens_per_gpu`` axis both come here.
    ``names`` words the refusal: the tokens', the sequence's and the micro-batch's fields
    (the CLI's options, or the sweep's axes).

    >>> micro_batch_of_tokens(8192, 4096)
    2
    >>> micro_batch_of_tokens(5000, 4096)
    Traceback (most recent call last):
    ...
    ValueError: tokens_per_gpu: 5000 is not a whole number of sequences of sequence_length 4096; allowed: a multiple of sequence_length (or give micro_batch)
    """
    tok, seq, micro = names
    t = _number(tokens_per_gpu)
    s = int(sequence_length)
    if not (t.is_integer() and t >= 1 and int(t) % s == 0):
        raise ValueError(
            f"{tok}: {t:.15g} is not a whole number of sequences of {seq} {s}; "
            f"allowed: a multiple of {seq} (or give {micro})"
        )
    return int(t) // s


def _number(value: object) -> float:
    """``float(value)``, or NaN where it is not a number (the caller's range check then names
    the field), never Python's own "could not convert string to float"."""
    if isinstance(value, bool):
        return math.nan
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan


def recompute_extra(recompute: str, arch: Any = None, sequence_length: int = 4096) -> float:
    """Extra compute of a recomputation mode, a fraction of forward + backward [-].

    :func:`costmodel.compute.recompute_extra` weighted by the architecture's matmul and
    attention FLOPs (a bare count: matmuls only).

    >>> round(recompute_extra("full"), 4), recompute_extra("selective")
    (0.3333, 0.0)
    """
    from .. import compute as _c

    if arch is None:
        lin, att = 1.0, 0.0
    else:
        lin, att = _c.flops_split(arch, sequence_length)
    r_lin, r_att = _c.recompute_extra(recompute, lin, att)
    return (lin * r_lin + att * r_att) / (lin + att)


#: How close [-, relative] an MFU a label writes is to the MFU the step uses: the step's times
#: are shown to three significant digits (:func:`costmodel.units.format_duration`, rounding by
#: up to 0.5 %), so an MFU written within 0.05 % of the one used, typed back as the MFU, prices
#: a compute that reads the same.
MFU_LABEL_REL = 5e-4


def _mfu_text(mfu: float) -> str:
    """An MFU as the labels write it: the value the step uses, to the fewest decimals (two at
    least, four at most) that keep it within :data:`MFU_LABEL_REL` of that value (``0.40``; an
    L40S's default under fp8, 0.4 x 362.05 / 733 = 0.19757 of the fp8 peak, ``0.1976``, where
    two decimals said 0.20, 1.2 % off); four significant digits below 0.01, where two decimals
    said "given MFU 0.00" of an MFU of 1e-9.

    >>> _mfu_text(0.4), _mfu_text(0.19757), _mfu_text(0.4 / (1 + 1 / 6)), _mfu_text(1e-9)
    ('0.40', '0.1976', '0.343', '1e-09')
    """
    if mfu < 0.01:
        return f"{mfu:.4g}"
    for decimals in (2, 3):
        if abs(round(mfu, decimals) - mfu) <= MFU_LABEL_REL * mfu:
            return f"{mfu:.{decimals}f}"
    return f"{mfu:.4f}"


def _palm(recompute: str, extra: float) -> str:
    """What a given (or default) MFU's label adds under recomputation: the MFU is PaLM's, of
    the model's FLOPs, so the recomputation's extra work is inside the time it implies, not
    priced on top (module docstring). Nothing without recomputation.

    >>> _palm("none", 0.0), _palm("full", 1 / 3)
    ('', " (PaLM's MFU, of model FLOPs: recompute full's 33% extra work is inside it)")
    """
    if extra <= 0:
        return ""
    return f" (PaLM's MFU, of model FLOPs: recompute {recompute}'s {extra:.0%} extra work is inside it)"


def _default_recompute(recompute: str, extra: float) -> str:
    """What the default MFU's label adds under recomputation: :data:`DEFAULT_MFU` describes a
    run without recomputation (not a measurement of a recomputing run, which a given MFU is),
    so the recomputation's extra work ``r`` runs at the same hardware utilisation and the
    step's MFU is ``DEFAULT_MFU / (1 + r)`` (module docstring). Nothing without recomputation.

    >>> _default_recompute("none", 0.0), _default_recompute("full", 1 / 3)
    ('', ' of a run without recomputation; recompute full adds its 33% extra work at the same utilisation: MFU 0.30')
    """
    if extra <= 0:
        return ""
    return (
        f" of a run without recomputation; recompute {recompute} adds its {extra:.0%} extra "
        f"work at the same utilisation: MFU {_mfu_text(DEFAULT_MFU / (1 + extra))}"
    )


def check_mfu_recompute(mfu: float, recompute: str, extra: float) -> None:
    r"""Refuse a given MFU the GPUs cannot reach under recomputation: the MFU is PaLM's, of the
    model's FLOPs (module docstring), but the GPUs also execute the recomputation's extra work
    ``r`` (:func:`recompute_extra`), so the hardware FLOP utilisation it implies is

    .. math:: \mathrm{HFU} = \mathrm{MFU}\,(1 + r) \le 1 \;\Rightarrow\;
              \mathrm{MFU} \le \frac{1}{1 + r}

    [-] (PaLM, Chowdhery et al. 2022, arXiv:2204.02311, appendix B: HFU counts the
    rematerialisation, MFU does not; ``r`` = 1/3 for ``full``, Korthikanti et al. 2022,
    arXiv:2205.05198). ``--mfu 1 --recompute full`` priced the compute of ``--mfu 1`` alone,
    133 % of the dense peak in the FLOPs actually run. The bound is the one a measured compute
    time is held to (:func:`costmodel.strategy.step.peak_floor_s` times ``1 + r``); without
    recomputation it is the MFU's own range, checked by :func:`micro_batch_compute_s`.

    >>> check_mfu_recompute(0.75, "full", 1 / 3)
    >>> check_mfu_recompute(0.9, "full", 1 / 3)
    Traceback (most recent call last):
    ...
    ValueError: mfu: must be at most 0.75 under `recompute` full (PaLM's MFU, of model FLOPs: the GPUs also run its 33% extra work, a hardware FLOP utilisation of `mfu` x 1.33, which the dense peak caps at 1), got 0.9
    """
    if extra <= 0:
        return
    bound = 1.0 / (1.0 + extra)
    # a relative tolerance: the bound typed back from its message (0.75) is the bound itself
    if mfu > bound * (1 + 1e-12):
        raise ValueError(
            f"mfu: must be at most {bound:.3g} under `recompute` {recompute} (PaLM's MFU, of "
            f"model FLOPs: the GPUs also run its {extra:.0%} extra work, a hardware FLOP "
            f"utilisation of `mfu` x {1 + extra:.3g}, which the dense peak caps at 1), got {mfu:g}"
        )


def fitted_efficiency(gpu: Any, precision: str = "bf16", held_out: str | None = None) -> Any:
    """The fitted efficiency (:func:`costmodel.compute.compute_fit`) of ``gpu``'s family at
    ``precision``, or None where there is none (Blackwell, Ada, Volta, Turing; fp8 on a family
    fitted in bf16 only; a family whose rows ``held_out`` leaves none of): the one test of
    which road a step without a given MFU or a measured time takes, the fitted one or
    :data:`DEFAULT_MFU`. :func:`step_compute` prices by it and
    :func:`costmodel.strategy.step.model_flops_per_token` picks the FLOPs by it, so a bare
    parameter count's default MFU is of the FLOPs a given MFU is of (6N).

    >>> from costmodel import presets
    >>> fitted_efficiency(presets.load("h100-sxm")) is not None
    True
    >>> fitted_efficiency(presets.load("b200")) is None
    True
    """
    from .. import compute as _c

    try:
        return _c.compute_fit(gpu, precision, held_out)
    except ValueError:
        return None


@dataclass(frozen=True)
class ComputeTime:
    """One micro-batch's compute on one GPU and where it came from."""

    micro_s: float  # forward + backward + recomputation [s]
    recompute_fraction: float  # recomputation's share of the work over forward + backward [-]
    source: str  # one of SOURCES
    label: str  # what to show next to a number derived from it
    band: tuple[float, float] = (1.0, 1.0)  # (low, high) multipliers of micro_s
    one_node_step: bool = False  # a one-node step time (fitted): calibrate the engine to it


def step_compute(
    arch: Any,
    gpu: Any,
    sequence_length: int,
    micro_batch: int,
    *,
    flops_per_token: float,
    peak_flops: float,
    mfu: float | None = None,
    compute_time_s: float | None = None,
    recompute: str = "none",
    precision: str = "bf16",
    held_out: str | None = None,
) -> ComputeTime:
    """The compute of one micro-batch by the precedence of the module docstring.

    ``arch`` an :class:`~costmodel.architecture.Architecture` (or None: MFU road only);
    ``peak_flops`` [FLOP/s] the dense peak of ``precision`` on ``gpu``, which a given ``mfu``
    is a fraction of (module docstring: fp8's for an fp8 step); ``precision`` the matmuls'
    compute precision (``bf16``/``fp8``); ``held_out`` a data group whose rows the fitted
    efficiency leaves out (:func:`costmodel.compute.compute_fit`).

    >>> from costmodel import presets
    >>> h100 = presets.load("h100-sxm")
    >>> f = 6 * 7e9                                  # 7B, 4096 tokens, MFU 0.4
    >>> bf16 = step_compute(None, h100, 4096, 1, flops_per_token=f, peak_flops=989e12, mfu=0.4)
    >>> fp8 = step_compute(None, h100, 4096, 1, flops_per_token=f, peak_flops=1979e12, mfu=0.4,
    ...                    precision="fp8")
    >>> round(bf16.micro_s, 3), round(fp8.micro_s, 3)   # 1.72e14 FLOP / (peak x 0.4)
    (0.435, 0.217)
    """
    from .. import compute as _c

    extra = recompute_extra(recompute, arch, sequence_length)
    tokens = float(micro_batch) * sequence_length
    if compute_time_s is not None:
        t = micro_batch_compute_s(flops_per_token, tokens, peak_flops, None, compute_time_s)
        return ComputeTime(t, extra / (1 + extra), "measured", measured_label(precision))
    if mfu is not None:
        # PaLM's MFU (module docstring): of the model's FLOPs, the recomputation's work inside
        # the time it implies, so the same time with or without recompute, and the same as the
        # fitted road whose label reads that MFU; the label says so where it could be misread
        t = micro_batch_compute_s(flops_per_token, tokens, peak_flops, mfu)
        check_mfu_recompute(float(mfu), recompute, extra)
        of = " of the fp8 peak" if precision == "fp8" else ""  # bf16's: the label as ever
        return ComputeTime(
            t,
            extra / (1 + extra),
            "mfu",
            f"given MFU {_mfu_text(float(mfu))}{of}{_palm(recompute, extra)}",
        )
    fam = _c.gpu_family(gpu)
    fit = None if arch is None else fitted_efficiency(gpu, precision, held_out)
    if fit is None:
        # the default describes a run without recomputation (DEFAULT_MFU): the recomputation's
        # FLOPs run at the same utilisation, so its time is (1 + r) times the default's
        if precision == "fp8":  # a bf16 figure: no fp8 speed-up without data that shows one
            peak16 = _c.precision_peak_flops(gpu, "bf16")
            t = micro_batch_compute_s(flops_per_token, tokens, peak16, DEFAULT_MFU) * (1 + extra)
            why = "no architecture" if arch is None else f"no fitted efficiency for {fam}/fp8"
            return ComputeTime(
                t,
                extra / (1 + extra),
                "default-mfu",
                f"default MFU {_mfu_text(DEFAULT_MFU)} of the bf16 peak, "
                f"{_mfu_text(DEFAULT_MFU * peak16 / peak_flops)} of the fp8 peak ({why}: no fp8 speed-up assumed){_default_recompute(recompute, extra)}",
            )
        t = micro_batch_compute_s(flops_per_token, tokens, peak_flops, DEFAULT_MFU) * (1 + extra)
        why = "no architecture" if arch is None else f"no fitted efficiency for {fam}/{precision}"
        if precision == "bf16" and getattr(gpu, "bf16_dense_flops", 0) is None:
            # a V100: no bf16 tensor cores; peak_flops is its fp16 peak, so say so, not "bf16"
            why = (
                f"{why.replace('/bf16', '/fp16')}; {getattr(gpu, 'name', fam)} has no bf16: "
                "priced at its fp16 peak"
            )
        return ComputeTime(
            t,
            extra / (1 + extra),
            "default-mfu",
            f"default MFU {_mfu_text(DEFAULT_MFU)} ({why}){_default_recompute(recompute, extra)}",
        )
    t = _c.micro_batch_compute_s(
        arch,
        gpu,
        int(sequence_length),
        int(micro_batch),
        precision=precision,
        recompute=recompute,
        held_out=held_out,
    )
    peak = _c.precision_peak_flops(gpu, precision)
    e = float(arch.training_flops_per_token(sequence_length)) * tokens / (t * peak)
    lo, hi = fit.band
    limit = getattr(gpu, "power_limit_w", None)
    at = f" at a {float(limit):g} W power limit" if limit is not None else ""
    # a GPU the fit has no row of (an H200, a GH200) is priced from its family's rows through
    # the power-per-peak-FLOP term: said, so that the label does not read as fitted on it
    own = (
        ""
        if _c.fit_has_gpu(gpu, held_out)
        else f"; no {getattr(gpu, 'name', 'such GPU')} row in the fit: its {fam} rows at this "
        "GPU's peak and power"
    )
    return ComputeTime(
        t,
        extra / (1 + extra),
        "fitted",
        f"fitted efficiency {fam}/{precision}{at}: MFU {e:.2f} on one node "
        f"(compute band x{lo:.2f}-x{hi:.2f}){own}",
        (lo, hi),
        True,
    )
