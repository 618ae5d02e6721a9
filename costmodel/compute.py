r"""Compute time of a training micro-batch: FLOPs at a fitted achievable efficiency.

A token costs the architecture's training FLOPs, split in two kinds that run at different
efficiencies: the dense matmuls (``6 N``, Kaplan et al. 2020, arXiv:2001.08361, section 2.1) and
the attention core (``12 L H Q s``, PaLM, Chowdhery et al. 2022, arXiv:2204.02311, appendix B).
Activation recomputation adds forward work (:func:`recompute_extra`). The time of one token on
one GPU is

.. math::
    t = \frac{F_{lin}\,(1 + r_{lin})}{P_{lin}}\; u\left(1 + \frac{h_0}{h} + \frac{T_0}{T}\right)
      + \frac{F_{att}\,(1 + r_{att})}{P_{att}}\; w

``P`` the datasheet dense peak of the compute precision (fp8 for the matmuls of an fp8 run, the
attention stays bf16: FlashAttention-2 kernels), ``h`` the hidden size, ``T`` the tokens of a
micro-batch. ``1/u`` is the largest matmul efficiency; ``1 + h_0/h`` the classic saturation of a
GEMM's arithmetic intensity with its inner dimension (a ``k``-wide matmul reaches
``k / (k + k_0)`` of the roofline, Williams et al. 2009, "Roofline", CACM 52(4)); ``1/w`` the
attention kernel's efficiency (``w = u rho``). The scale follows the GPU's power budget per peak
FLOP, ``u = s (W / P_{bf16})^{-alpha}`` (:func:`energy_per_flop_pj`: a power-capped chip
sustains less of its boost clock; ``W`` from :func:`gpu_power_w`, the GPU's ``power_limit_w``
when set, else its datasheet power), one ``s`` per precision for every GPU; an fp8 run that the
fit has no fp8 row for is the bf16 time with its matmul arithmetic at the fp8 peak (Amdahl:
``u_8 = 1 - k + k u``, ``k = P_{fp8} / P_{bf16}``). Fitted by relative least squares on the
single-node (8-GPU) rows of the published runs (``scripts/fit_compute.py``, constants in
``costmodel/data/fitted_compute.toml`` with the grouped cross-validation that chose the form).
Those runs are FSDP on one node: their intra-node communication, kernel launch and data-loading
overheads are inside the fitted efficiency, which is therefore a single-node *step* efficiency,
the quantity a user measures.

Recommended path ("measure one node, predict the cluster"): measure the tokens/s of one node
with your model and settings and give it (:func:`micro_batch_compute_s` ``measured_...``); the
fitted efficiency is the fallback when nothing is measured, with its own error band.

>>> from costmodel.architecture import load_arch
>>> a = load_arch("llama-3.1-8b")
>>> lin, att = flops_split(a, 8192)
>>> round(lin / 1e9, 1), round(att / 1e9, 1)
(45.0, 12.9)
"""

from __future__ import annotations

import functools
import math
import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

__all__ = [
    "CHECKPOINTING",
    "GPU_MIN_POWER_W",
    "GPU_POWER_W",
    "ComputeFit",
    "achievable_efficiency",
    "compute_band",
    "compute_fit",
    "datasheet_power_w",
    "ddp_step_overhead_s",
    "energy_per_flop_pj",
    "fit_has_gpu",
    "fitted_gpu_types",
    "flops_split",
    "gpu_family",
    "gpu_power_w",
    "head_flops",
    "micro_batch_compute_s",
    "min_power_limit_w",
    "optimizer_bytes_per_param",
    "optimizer_step_s",
    "precision_peak_flops",
    "recompute_extra",
    "sync_loss_per_doubling",
    "sync_loss_s",
    "token_time_s",
]

#: Activation checkpointing modes (``costmodel.memory`` sizes each; here the extra forward work).
CHECKPOINTING: tuple[str, ...] = ("none", "selective", "selective-op", "selective-layer", "full")

#: Every k-th block checkpointed by "selective-layer" by default: torchtitan's
#: ``selective_ac_option = "2"`` (torchtitan/parallelisms/parallelize_llama.py, 2024).
DEFAULT_AC_EVERY = 2


def flops_split(arch: Any, sequence_length: int) -> tuple[float, float]:
    r"""Training FLOPs per token ``(F_lin, F_att)`` [FLOP]: matmuls and attention core.

    .. math:: F_{lin} = 6 N,\qquad F_{att} = 12\, L\, H\, Q\, s

    ``N`` the active non-embedding parameters, as in
    :meth:`~costmodel.architecture.Architecture.training_flops_per_token` (their sum).
    """
    total = float(arch.training_flops_per_token(sequence_length))
    lin = 6.0 * float(arch.active_params - arch.embedding_params)
    return lin, total - lin


def head_flops(arch: Any) -> float:
    r"""Matmul FLOPs per token outside every transformer block [FLOP]: the output projection
    (and final norm), forward + backward, the part of ``F_lin`` that activation checkpointing
    does not rerun (:func:`recompute_extra`'s ``head_flops``).

    .. math:: F_{head} = 6\, P_{head}

    ``P_head`` :attr:`~costmodel.architecture.Architecture.head_params` (``V h`` of the LM
    head, tied or untied, plus the final norm). Kaplan et al. 2020's ``6N`` per parameter.

    >>> from costmodel.architecture import load_arch
    >>> a = load_arch("llama-3.1-8b")
    >>> round(head_flops(a) / flops_split(a, 8192)[0], 3)
    0.07
    """
    return 6.0 * float(arch.head_params)


def recompute_extra(
    mode: str,
    linear_flops: float,
    attention_flops: float,
    every: int = DEFAULT_AC_EVERY,
    head_flops: float = 0.0,
) -> tuple[float, float]:
    r"""Extra fraction of the matmul and attention work that recomputation adds ``(r_lin, r_att)``.

    The forward is a third of forward + backward (``2N`` of ``6N``; Kaplan et al. 2020). With
    ``b = (F_lin - F_head) / F_lin`` the share of the matmul FLOPs that is rerun [-]:

    * ``none``, ``selective`` (Korthikanti et al. 2022, arXiv:2205.05198, section 5: recompute
      the attention core; FlashAttention's backward recomputes it anyway, Dao et al. 2022, so it
      is no extra beyond the kernel): ``(0, 0)``;
    * ``full`` (every block's forward rerun in backward): ``(b/3, 1/3)``;
    * ``selective-layer`` (every ``every``-th block checkpointed, torchtitan's layer SAC):
      ``(b/3, 1/3) / every``;
    * ``selective-op`` (torchtitan's op SAC policy: keep every matmul output except every second
      ``mm``, keep the attention output, recompute the element-wise ops): half the forward
      matmuls, ``(b/6, 0)``.

    ``head_flops`` [FLOP/token] the matmul work outside every checkpointed block
    (:func:`head_flops`): ``torch.utils.checkpoint`` is applied per layer, FSDP's
    ``apply_activation_checkpointing`` wraps the modules its ``check_fn`` picks (the blocks),
    torchtitan's ``apply_ac`` wraps each ``TransformerBlock``, so the LM head, the embedding and
    the loss are not rerun. **The shipped price and the compute fit use the default 0** (every
    matmul rerun, the head included): the fit's efficiency was fitted with it, and pricing only
    the blocks, refitted, raised the fit's grouped-CV error (``scripts/fit_compute.py``'s
    ``head-not-recomputed`` form, scored on every refit, not kept; docs/step-fidelity.md). One
    H200 measured full recomputation at 0.65-0.75 of this price (docs/gpu-checks.md).

    >>> recompute_extra("full", 1.0, 1.0)
    (0.3333333333333333, 0.3333333333333333)
    >>> recompute_extra("full", 1.0, 1.0, head_flops=0.25)
    (0.25, 0.3333333333333333)
    """
    if mode not in CHECKPOINTING:
        raise ValueError(f"recompute: unknown {mode!r}; allowed: {', '.join(CHECKPOINTING)}")
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
        raise ValueError(f"every: must be a whole number >= 1 (blocks), got {every!r}")
    lin, head = float(linear_flops), float(head_flops)
    if not (math.isfinite(head) and 0.0 <= head <= lin):
        raise ValueError(
            f"head_flops: must be in [0, linear_flops = {lin:g}] FLOP, got {head_flops!r}"
        )
    third = 1.0 / 3.0
    b = (lin - head) / lin if lin > 0 else 1.0
    if mode == "full":
        return third * b, third
    if mode == "selective-layer":
        return third * b / every, third / every
    if mode == "selective-op":
        return third * b / 2.0, 0.0
    return 0.0, 0.0


def gpu_family(gpu: Any) -> str:
    """The efficiency family of a GPU: its architecture (``ampere``, ``hopper``, ...)."""
    return str(getattr(gpu, "architecture", gpu))


#: Board power a GPU may draw [W]: the datasheet's maximum TDP of the SXM part.
GPU_POWER_W: dict[str, float] = {
    "a100-sxm-40gb": 400.0,  # A100 datasheet: Max TDP Power 400W (40GB and 80GB SXM)
    "a100-sxm-80gb": 400.0,  # A100 datasheet: Max TDP Power 400W
    "h100-sxm": 700.0,  # H100 datasheet: Max thermal design power up to 700W (H100 SXM)
    "h200-sxm": 700.0,  # H200 datasheet: Max thermal design power up to 700W (H200 SXM)
}

#: Least board power limit the driver accepts [W] (``nvidia-smi -q -d POWER`` "Min Power Limit";
#: ``nvidia-smi -pl`` refuses a lower value), the lower end of a GPU's ``power_limit_w``. NVIDIA's
#: datasheets print only the maximum ("up to 700W (configurable)"); these are the values the
#: driver and the DGX BMC publish for the SXM parts.
GPU_MIN_POWER_W: dict[str, float] = {
    # nvidia-smi -q of an A100-SXM4-40GB: Min Power Limit 100.00 W, Max 400.00 W
    # (github.com/NVIDIA/nvidia-docker/issues/1648)
    "a100-sxm-40gb": 100.0,
    # nvidia-smi -q of an A100-SXM4-80GB: Min Power Limit 100.00 W, Max 400.00 W
    # (github.com/NVIDIA/DCGM/issues/152)
    "a100-sxm-80gb": 100.0,
    # nvidia-smi -pl 50 on a 700 W GPU refused "should be between 200.00 W and 700.00 W"
    # (github.com/stackhpc/ansible-slurm-appliance/pull/975; the log does not print the model:
    # 700 W max is the H100/H200 SXM TDP). NVIDIA's DGX user guides' "Managing Power Capping"
    # show the GPU's Redfish PowerLimitWatts AllowableMin 200 (the copy found was DGX B200's).
    # No nvidia-smi reading naming an H100 or H200 was found: a documented estimate.
    "h100-sxm": 200.0,
    # H200 SXM: the H100 SXM's board and 700 W envelope, so the same 200 W (an assumption)
    "h200-sxm": 200.0,
}

#: A GPU of a fitted family without its own entry above gets its family's SXM part's power
#: (both ends of the range: GH200's GPU is capped as an H100 SXM, 200..700 W). No Blackwell
#: entry: the compute fit has no Blackwell runs, so a limit there is refused as not modelled
#: (:func:`costmodel.hardware.check_power_limit_w`). No B200 range is quoted there: the DGX
#: B200 user guide's "Managing Power Capping" example prints AllowableMin 200, AllowableMax
#: 700 W, the H100 SXM's range, so it is not taken as a B200 reading.
_FAMILY_POWER_OF = {"ampere": "a100-sxm-80gb", "hopper": "h100-sxm"}


def datasheet_power_w(gpu: Any) -> float:
    """Datasheet power of a GPU preset [W] (:data:`GPU_POWER_W`; else its family's SXM part).

    The most a board may draw, and so the upper end of a GPU's ``power_limit_w``.

    >>> from costmodel import presets
    >>> datasheet_power_w(presets.load("h100-sxm"))
    700.0
    """
    return _power_of(GPU_POWER_W, gpu, "datasheet power")


def min_power_limit_w(gpu: Any) -> float:
    """Least board power limit of a GPU preset [W] (:data:`GPU_MIN_POWER_W`; else its family's
    SXM part), the lower end of its ``power_limit_w``.

    >>> from costmodel import presets
    >>> min_power_limit_w(presets.load("h100-sxm")), min_power_limit_w(presets.load("a100-sxm-40gb"))
    (200.0, 100.0)
    """
    return _power_of(GPU_MIN_POWER_W, gpu, "minimum power limit")


def _power_of(table: dict[str, float], gpu: Any, what: str) -> float:
    """``table``'s entry for ``gpu`` [W]: its own, else its family's SXM part's."""
    name = str(getattr(gpu, "name", ""))
    if name in table:
        return table[name]
    fam = gpu_family(gpu)
    if fam in _FAMILY_POWER_OF:
        return table[_FAMILY_POWER_OF[fam]]
    raise ValueError(f"gpu: no {what} for {name or fam!r}")


def gpu_power_w(gpu: Any) -> float:
    """Power a GPU runs at [W]: its ``power_limit_w`` when set, else :func:`datasheet_power_w`.

    The power of the compute fit's ``(W / P_bf16)^-alpha`` law (:func:`energy_per_flop_pj`):
    an H100 capped at 500 W (``nvidia-smi -pl 500``; torchtitan's Grand Teton default) is
    predicted slower than one at its datasheet 700 W.

    >>> from costmodel import presets
    >>> h100 = presets.load("h100-sxm")
    >>> gpu_power_w(h100), gpu_power_w(h100.with_power_limit_w(500.0))
    (700.0, 500.0)
    """
    limit = getattr(gpu, "power_limit_w", None)
    if limit is not None:
        return float(limit)
    return datasheet_power_w(gpu)


def energy_per_flop_pj(power_w: Any, bf16_peak_flops: Any) -> Any:
    r"""Power budget per peak FLOP [pJ/FLOP]: :math:`W / P_{bf16}`.

    A tensor-core GEMM is power-bound below its boost clock (the clock falls until the board
    power fits the limit: NVIDIA H100 datasheet, "configurable" TDP; torchtitan's note that
    raising its H100s from 500 W to 700 W "can potentially provide further speedups"), so the
    fraction of the datasheet peak a chip sustains grows with the energy it may spend per
    peak FLOP. A100 SXM: 400 W / 312 TFLOP/s = 1.28 pJ; H100 SXM: 700 W / 989.5 = 0.71.

    >>> round(energy_per_flop_pj(400.0, 312e12), 2)
    1.28
    """
    pj = np.asarray(power_w, float) / np.asarray(bf16_peak_flops, float) * 1e12
    return float(pj) if np.ndim(pj) == 0 else pj


@dataclass(frozen=True)
class ComputeFit:
    """Fitted coefficients of one GPU and precision (module docstring).

    ``u`` = 1 / largest matmul efficiency, ``v`` = ``u h0`` [hidden units], ``w`` = 1 / attention
    efficiency; ``band`` = (low, high) multipliers of the predicted time that held 80% of the
    grouped cross-validation errors, pooled over GPU families and precisions.
    """

    family: str
    precision: str
    u: float
    v: float
    w: float
    rows: int
    band: tuple[float, float]
    m: float = 0.0  # u * m0 [tokens]: micro-batch saturation (0 when grouped CV dropped it)

    @property
    def e_max(self) -> float:
        """Largest matmul efficiency (``h -> inf``) [-]."""
        return 1.0 / self.u

    @property
    def h0(self) -> float:
        """Hidden size at which matmuls reach half of ``e_max`` [-]."""
        return self.v / self.u


def _toml() -> dict[str, Any]:
    text = (resources.files("costmodel.data") / "fitted_compute.toml").read_text("utf-8")
    return tomllib.loads(text)


@functools.lru_cache(maxsize=1)
def _doc() -> dict[str, Any]:
    return _toml()


@functools.lru_cache(maxsize=256)
def _coefficients(
    held_out: str | None, watts: float, fam: str, p16: float, p8: float | None, precision: str
) -> tuple[float, float, float, float]:
    """``(u, v, w, m)`` of a GPU (power it runs at [W], family, bf16 and fp8 peaks) and
    precision from one fit's shape and scales (cached: the step surfaces ask it for every
    step)."""
    doc = _doc()
    params = doc
    if held_out is not None:
        params = doc.get("cv_fit", {}).get(held_out, doc)  # a group not in the fit: full fit
    scales: dict[str, float] = params["scale"]
    if doc.get("power"):
        key = "all" if doc.get("fp8") else precision
    else:
        key = fam if doc.get("fp8") else f"{fam}-{precision}"
    amdahl = precision == "fp8" and bool(doc.get("fp8"))
    if key not in scales and precision == "fp8" and doc.get("fp8_from_bf16"):
        key, amdahl = key.replace("fp8", "bf16"), True  # no fp8 row fitted: from bf16
    s = scales.get(key, float(np.mean(list(scales.values()))))  # unseen key: the mean scale
    alpha = float(params.get("alpha", 0.0))
    if alpha:
        s *= energy_per_flop_pj(watts, p16) ** (-alpha)
    u, v, m, w = s, s * params["h0"], s * params["t0"], s * params["rho"]
    if amdahl and p8 is not None:
        # Amdahl: the matmul arithmetic at the fp8 peak, the rest of the bf16 time unchanged
        k = p8 / p16
        u, v, m = 1.0 - k + k * u, k * v, k * m
    return u, v, w, m


def compute_fit(gpu: Any, precision: str = "bf16", held_out: str | None = None) -> ComputeFit:
    """The fitted coefficients of a GPU preset and precision.

    ``held_out`` (a data group, ``"llm-foundry/a100-80gb"``) gives the coefficients fitted
    without that group, as the grouped cross-validation scored them, and the band that fit
    would ship (the grouped CV without the group; the fidelity report uses them so that no row
    is predicted or banded by a fit that saw it). Raises ``ValueError`` naming the
    fitted families when the data has none for this one (no published single-node run on that
    GPU family: measure one node instead).
    """
    fam = gpu_family(gpu)
    if precision not in ("bf16", "fp8"):
        raise ValueError(f"precision: must be bf16 or fp8, got {precision!r}")
    doc = _doc()
    fitted = doc.get("fit", {})
    key = f"{fam}-{precision}"
    if key not in fitted:
        have = ", ".join(k.replace("-", "/", 1) for k in sorted(fitted))
        raise ValueError(
            f"gpu: no fitted compute efficiency for {fam}/{precision} (fitted: {have}); "
            "give a measured single-node throughput or compute time instead"
        )
    if precision == "fp8" and gpu.fp8_dense_flops is None:
        raise ValueError(
            f"precision: {getattr(gpu, 'name', fam)} has no fp8 tensor cores; use bf16"
        )
    t = fitted[key]
    p16 = float(gpu.bf16_dense_flops or gpu.fp16_dense_flops)
    p8 = None if gpu.fp8_dense_flops is None else float(gpu.fp8_dense_flops)
    watts = gpu_power_w(gpu)  # its power limit, else datasheet (a clear error without one)
    u, v, w, m = _coefficients(held_out, watts, fam, p16, p8, precision)
    return ComputeFit(fam, precision, u, v, w, int(t["rows"]), compute_band(held_out), m)


def fitted_gpu_types(held_out: str | None = None) -> tuple[str, ...]:
    """The data GPU types (keys of :data:`costmodel.steps_data.GPU_TYPES`) the fit has rows of:
    those of its (source/GPU type) groups, ``[cv_groups]`` of ``fitted_compute.toml`` (written by
    ``scripts/fit_compute.py`` from the rows it fitted), less the group ``held_out``.

    >>> fitted_gpu_types()
    ('a100-40gb', 'a100-80gb', 'h100-80gb', 'h100-96gb')
    """
    groups = _doc().get("cv_groups", {})
    return tuple(sorted({str(g).split("/", 1)[1] for g in groups if g != held_out}))


def fit_has_gpu(gpu: Any, held_out: str | None = None) -> bool:
    """Whether the fit has rows of this GPU's own card (:func:`costmodel.steps_data.same_gpu`
    against :func:`fitted_gpu_types`, the map :func:`costmodel.steps_data.row_gpu` prices rows
    with). False: the GPU is priced from its family's rows at its own peaks and power budget
    (module docstring), not from rows of its own.

    >>> from costmodel import presets
    >>> fit_has_gpu(presets.load("h100-sxm")), fit_has_gpu(presets.load("h200-sxm"))
    (True, False)
    """
    from .steps_data import same_gpu

    return any(same_gpu(gpu, t) for t in fitted_gpu_types(held_out))


def compute_band(held_out: str | None = None) -> tuple[float, float]:
    """The fitted efficiency's band: (low, high) multipliers of the predicted compute time that
    held the 10th-90th percentile of the grouped cross-validation errors, one band for every
    GPU family and precision (``scripts/fit_compute.py``: pooled, because a new cluster is a
    new (source, GPU type) group and a family has one or two). ``held_out`` (a data group)
    gives the band the fit without that group would ship (its grouped CV run without it); a
    group not in the fit gets the shipped band."""
    doc = _doc()
    b = doc.get("cv_fit", {}).get(held_out, doc) if held_out is not None else doc
    return float(b["band_low"]), float(b["band_high"])


def token_time_s(
    linear_flops: Any,
    attention_flops: Any,
    hidden: Any,
    linear_peak_flops: Any,
    attention_peak_flops: Any,
    u: float,
    v: float,
    w: float,
    r_lin: Any = 0.0,
    r_att: Any = 0.0,
    tokens_per_micro_batch: Any = math.inf,
    m: float = 0.0,
) -> Any:
    r"""Compute time of one token on one GPU [s] (module docstring).

    .. math:: t = \frac{F_{lin}(1 + r_{lin})}{P_{lin}}\left(u + \frac{v}{h} + \frac{m}{T}\right)
              + \frac{F_{att}(1 + r_{att})}{P_{att}}\, w

    ``T`` the tokens of one micro-batch (the matmuls' row count), ``m = u T_0`` its saturation.

    >>> token_time_s(6e9, 0.0, 4096, 1e15, 1e15, 2.0, 0.0, 2.0) * 1e6      # 6 GFLOP at 50 %
    12.0
    """
    lin = np.asarray(linear_flops, float) * (1.0 + np.asarray(r_lin, float))
    att = np.asarray(attention_flops, float) * (1.0 + np.asarray(r_att, float))
    sat = u + v / np.asarray(hidden, float) + m / np.asarray(tokens_per_micro_batch, float)
    t = lin / np.asarray(linear_peak_flops, float) * sat
    t = t + att / np.asarray(attention_peak_flops, float) * w
    return float(t) if np.ndim(t) == 0 else t


#: The shipped GPU presets that run fp8 matmuls (an ``fp8_dense_flops`` peak) and those that
#: refuse fp8 (none), by the name a precision input's help gives them; tests check both against
#: the presets, so the help of every surface (CLI --precision, Scenario.precision, the step
#: page's "Compute precision") names the GPUs the model takes fp8 on.
FP8_GPUS: dict[str, str] = {
    "h100-sxm": "H100",
    "h200-sxm": "H200",
    "gh200": "GH200",
    "l40s": "L40S",
    "b200": "B200",
    "gb200": "GB200",
    "rtx-pro-6000-blackwell": "RTX PRO 6000 Blackwell",
}
NO_FP8_GPUS: dict[str, str] = {
    "a100-sxm-40gb": "A100",
    "a100-sxm-80gb": "A100",
    "v100-sxm2": "V100",
    "rtx-2080ti": "RTX 2080 Ti",
}
#: "H100, H200, ...; refused on A100, V100, RTX 2080 Ti": the help's list (from the two above).
FP8_GPUS_TEXT = (
    f"{', '.join(dict.fromkeys(FP8_GPUS.values()))}; refused on "
    f"{', '.join(dict.fromkeys(NO_FP8_GPUS.values()))}"
)


def precision_peak_flops(gpu: Any, precision: str = "bf16") -> float:
    """Datasheet dense peak of the matmuls in ``precision`` (bf16 or fp8) [FLOP/s]."""
    return _peaks(gpu, precision)[0]


def _peaks(gpu: Any, precision: str) -> tuple[float, float]:
    bf16 = float(gpu.bf16_dense_flops or gpu.fp16_dense_flops)
    if precision == "fp8":
        if gpu.fp8_dense_flops is None:
            raise ValueError(f"precision: {gpu.name} has no fp8 tensor cores; use bf16")
        return float(gpu.fp8_dense_flops), bf16
    return bf16, bf16


def achievable_efficiency(
    arch: Any,
    gpu: Any,
    sequence_length: int,
    micro_batch: int = 1,
    *,
    precision: str = "bf16",
    recompute: str = "none",
) -> float:
    """Model FLOP utilisation the fit predicts on one node [-]: model FLOPs / (time x peak).

    The peak is the precision's dense peak (fp8 for fp8 runs, as llm-foundry's MFU). Model
    FLOPs exclude recomputation (PaLM's MFU), so recomputation lowers it.

    >>> from costmodel import presets
    >>> e = achievable_efficiency("mpt-7b", presets.load("a100-sxm-80gb"), 2048, 6)
    >>> 0.45 < e < 0.75
    True
    """
    from .architecture import load_arch

    a = load_arch(arch)
    t = micro_batch_compute_s(
        a, gpu, sequence_length, micro_batch, precision=precision, recompute=recompute
    )
    peak = _peaks(gpu, precision)[0]
    tokens = float(sequence_length) * micro_batch
    return float(a.training_flops_per_token(sequence_length)) * tokens / (t * peak)


def micro_batch_compute_s(
    arch: Any,
    gpu: Any,
    sequence_length: int,
    micro_batch: int = 1,
    *,
    precision: str = "bf16",
    recompute: str = "none",
    ac_every: int = DEFAULT_AC_EVERY,
    compute_time_s: float | None = None,
    measured_tokens_per_s_per_gpu: float | None = None,
    held_out: str | None = None,
) -> float:
    """Forward + backward (+ recomputation) of one micro-batch on one GPU [s].

    In order of precedence: a measured ``compute_time_s`` of this micro-batch; a measured
    single-node throughput ``measured_tokens_per_s_per_gpu`` (tokens/s per GPU of one node at
    these settings: its per-token time times the micro-batch's tokens); the fitted efficiency
    (:func:`compute_fit`, ``held_out`` as there) with the architecture's FLOPs (:func:`flops_split`) and the
    recomputation's extra work (:func:`recompute_extra`).

    >>> from costmodel import presets
    >>> h100 = presets.load("h100-sxm")
    >>> micro_batch_compute_s("llama-3.1-8b", h100, 8192, 2, measured_tokens_per_s_per_gpu=8192)
    2.0
    """
    from ._checks import whole_count

    sequence_length = whole_count("sequence_length", sequence_length)
    micro_batch = whole_count("micro_batch", micro_batch)
    if compute_time_s is not None:
        t = float(compute_time_s)
        if not (math.isfinite(t) and t > 0):
            raise ValueError(f"compute_time_s: must be a finite time > 0 s, got {compute_time_s!r}")
        return t
    tokens = float(sequence_length) * micro_batch
    if measured_tokens_per_s_per_gpu is not None:
        x = float(measured_tokens_per_s_per_gpu)
        if not (math.isfinite(x) and x > 0):
            raise ValueError(
                "measured_tokens_per_s_per_gpu: must be a finite rate > 0 tokens/s, "
                f"got {measured_tokens_per_s_per_gpu!r}"
            )
        return tokens / x
    from .architecture import load_arch

    a = load_arch(arch)
    p_lin, p_att = _peaks(gpu, precision)
    fit = compute_fit(gpu, precision, held_out)
    lin, att = flops_split(a, sequence_length)
    r_lin, r_att = recompute_extra(recompute, lin, att, ac_every)
    per = token_time_s(
        lin, att, a.hidden, p_lin, p_att, fit.u, fit.v, fit.w, r_lin, r_att, tokens, fit.m
    )
    return float(per) * tokens


#: Fraction of the datasheet HBM bandwidth a streaming kernel achieves: 750 GB/s measured of the
#: V100's 900 GB/s (Jia et al. 2018, "Dissecting the NVIDIA Volta GPU Architecture via
#: Microbenchmarking", arXiv:1804.06826, global memory throughput). Taken for every HBM GPU.
HBM_ACHIEVABLE_FRACTION = 750.0 / 900.0


def optimizer_bytes_per_param(
    weight_bytes: float, master_bytes: float, optimizer_bytes: float, grad_bytes: float
) -> float:
    r"""HBM bytes an element-wise optimizer step reads and writes per local parameter [B].

    .. math:: b = 2\,b_{param} + 2\,b_{state} + b_{grad}

    The updated copy of the weights (the fp32 master when there is one, else the weights) and the
    optimizer states are read and written, the gradient is read. AdamW, fused or foreach
    (PyTorch ``torch/optim/adamw.py`` ``_fused_adamw`` / ``_multi_tensor_adamw``; DeepSpeed
    ``csrc/adam/multi_tensor_adam.cu``, tensor lists g, p, m, v): reads ``p, g, m, v``, writes
    ``p, m, v``: with fp32 parameters, gradients and states ``4 + 4 + 8`` read-and-written plus
    ``4`` = 28 B per parameter (26 B with bf16 gradients).

    >>> optimizer_bytes_per_param(2.0, 4.0, 8.0, 4.0)
    28.0
    """
    param = float(master_bytes) if master_bytes > 0 else float(weight_bytes)
    return 2.0 * param + 2.0 * float(optimizer_bytes) + float(grad_bytes)


def optimizer_step_s(
    local_params: Any,
    bytes_per_param: Any,
    hbm_bytes_per_s: Any,
    fraction: float = HBM_ACHIEVABLE_FRACTION,
) -> Any:
    r"""Time of the optimizer step on one GPU [s]: HBM-bandwidth bound.

    .. math:: t = \frac{P_{local}\, b}{f\, B_{HBM}}

    ``P_local`` the parameters this rank updates (its shard under ZeRO/FSDP), ``b`` from
    :func:`optimizer_bytes_per_param`, ``B_HBM`` the datasheet HBM bandwidth [B/s], ``f``
    :data:`HBM_ACHIEVABLE_FRACTION`. An element-wise update does about one FLOP per byte, far
    below any GPU's ridge point (Williams et al. 2009, "Roofline"), so bandwidth bounds it.

    >>> round(optimizer_step_s(7e9 / 64, 28.0, 3.35e12) * 1e3, 2)    # 7B sharded over 64 H100s
    1.1
    """
    t = (
        np.asarray(local_params, float)
        * np.asarray(bytes_per_param, float)
        / (float(fraction) * np.asarray(hbm_bytes_per_s, float))
    )
    return float(t) if np.ndim(t) == 0 else t


@functools.lru_cache(maxsize=1)
def _sync_loss() -> float:
    text = (resources.files("costmodel.data") / "fitted_sync_loss.toml").read_text("utf-8")
    return float(tomllib.loads(text)["per_doubling"])


def sync_loss_per_doubling() -> float:
    """The fitted synchronisation loss per doubling of the ranks [-] (:func:`sync_loss_s`)."""
    return _sync_loss()


def sync_loss_s(compute_s: Any, ranks: Any, per_doubling: float | None = None) -> Any:
    r"""Time the ranks of a data-parallel step lose waiting for the slowest one [s].

    .. math:: t = k\, \log_2 N \; t_{compute}

    Every collective is a barrier: the step of ``N`` ranks lasts as long as its slowest rank's,
    and the expected maximum of ``N`` jittered step times grows with ``log N`` (extreme values of
    ``N`` draws; Dean and Barroso 2013, "The Tail at Scale", CACM 56(2)). ``k`` (the loss per
    doubling, a fraction of the compute) is fitted on the published runs' scaling series by
    ``scripts/fit_sync_loss.py`` and kept because it lowers the grouped cross-validation median
    (``costmodel/data/fitted_sync_loss.toml``). One rank loses nothing.

    >>> sync_loss_s(1.0, 1, 0.015), round(sync_loss_s(1.0, 64, 0.015), 3)
    (0.0, 0.09)
    """
    k = _sync_loss() if per_doubling is None else float(per_doubling)
    n = np.maximum(np.asarray(ranks, float), 1.0)
    t = k * np.log2(n) * np.asarray(compute_s, float)
    return float(t) if np.ndim(t) == 0 else t


@functools.lru_cache(maxsize=1)
def _ddp_overhead() -> tuple[str, float]:
    text = (resources.files("costmodel.data") / "fitted_ddp_overhead.toml").read_text("utf-8")
    doc = tomllib.loads(text)
    return str(doc["form"]), float(doc["overhead_s"])


def ddp_step_overhead_s(tensors: int) -> float:
    """DDP's host-side time per step that no collective explains [s] (fitted, kept by CV).

    Fitted by ``scripts/fit_ddp_overhead.py`` on PyTorch's own DDP benchmark (ResNet/ResNeXt on
    DGX-1 V100, 1-16 GPUs; one model left out at a time): a time per parameter tensor (DDP's
    autograd hook and bucket copy per tensor, PyTorch's Reducer), about 35 us, lowers the
    held-out median step error from 4.7 % to 1.4 % (a fixed time per step: 3.2 %). The step
    engine adds it to a DDP step.

    >>> round(ddp_step_overhead_s(161) * 1e3, 1)                      # ResNet-50's tensors
    5.6
    """
    if isinstance(tensors, bool) or not isinstance(tensors, int) or tensors < 0:
        raise ValueError(f"tensors: must be a whole number >= 0, got {tensors!r}")
    form, k = _ddp_overhead()
    if form == "per-tensor":
        return k * tensors
    return k if form == "fixed" else 0.0
