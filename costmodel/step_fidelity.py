"""Predicted vs published training throughput of every pure data-parallel published run.

Two questions, each answered through the one step engine
(:func:`costmodel.strategy.step.strategy_step`: FSDP / SHARD_GRAD_OP collectives per unit on the
ranks they span, overlapped with compute at contention ``c``):

* **scaling** ("measure one node, predict the cluster"): from the published throughput at the
  smallest GPU count of a series (source, table, model, sequence, precision, settings), predict
  the larger counts. The compute time per micro-batch is set so that the engine reproduces the
  measured step at the base count; at the larger count the compute per token changes only with
  the micro-batch (:mod:`costmodel.compute`'s micro-batch term), the communication is the
  engine's;
* **absolute** (nothing measured): the fitted one-node efficiency (:mod:`costmodel.compute`)
  gives the one-node step, which calibrates the compute the same way, and the engine carries it
  to the row's GPU count. The step band is the compute fit's grouped-CV band (pooled over GPU
  families and precisions) and, beyond one node, the scaling band.

The cluster of each GPU type is the preset closest to what the source states
(:data:`CLUSTER_OF`); llm-foundry's A100 tables state 1600 Gb/s RoCE per node (8 x 200 Gb/s,
as ``dgx-a100``), its H100 tables state nothing (``dgx-h100``, 8 x 400 Gb/s assumed), torchtitan
states 400 Gb/s per GPU for Grand Teton and WhiteFiber. Its GPUs run at the power limit the
source states (the rows' ``power_limit_w``, :data:`costmodel.steps_data.POWER_LIMIT_W`:
torchtitan's Grand Teton H100s at 500 W), given to ``strategy_step`` as ``power_limit_w`` as a
user would.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from . import presets
from .compute import compute_band, compute_fit, gpu_family, micro_batch_compute_s
from .steps_data import pure_dp_rows, row_gpu, row_power_limit_w
from .strategy.band import step_time_band

__all__ = [
    "CLUSTER_OF",
    "COMPUTE_BAND_HOW",
    "SERIES_KEY",
    "MIN_FAMILY_BAND_ROWS",
    "SPLITS",
    "FidelityRow",
    "absolute_predictions",
    "band_coverage",
    "held_out_compute_bands",
    "held_out_scaling_bands",
    "measured_range",
    "measured_sources",
    "rebanded",
    "scaling_band",
    "scaling_parts",
    "scaling_predictions",
    "split_of",
    "summary",
]

#: GPU type of the data -> cluster preset whose network its runs used (module docstring).
CLUSTER_OF: dict[str, str] = {
    "a100-40gb": "dgx-a100",
    "a100-80gb": "dgx-a100",
    "h100-80gb": "dgx-h100",
    "h100-96gb": "dgx-h100",
    "h200": "hgx-h200",
}

#: FSDP sharding of the data -> (strategy, reshard_after_forward) of the step engine.
#: SHARD_GRAD_OP gathers each unit before its forward and keeps it gathered for its backward
#: (PyTorch FSDP docs, ShardingStrategy): ``fsdp`` without resharding, not DeepSpeed's ``zero2``
#: order (all-gather of every parameter after the optimizer step).
SHARDING: dict[str, tuple[str, bool | None]] = {
    "FULL_SHARD": ("fsdp", None),
    "SHARD_GRAD_OP": ("fsdp", False),
    "FSDP2": ("fsdp", None),
}


def row_layout(sharding: str, gpus: int) -> Any:
    """The :class:`~costmodel.strategy.layout.Layout` of a published run's FSDP ``sharding`` on
    ``gpus`` GPUs (8 per node): :data:`SHARDING`'s strategy and resharding, the layout its step
    prices, so its memory is the same layout's (tests/test_step_memory.py and the memory table
    of docs/step-fidelity.md). SHARD_GRAD_OP is ``fsdp`` without resharding: ZeRO-3's sharded
    state, every unit's parameters kept gathered from forward to backward (PyTorch's FSDP,
    torch/distributed/fsdp/_runtime_utils.py ``_post_forward_reshard``: SHARD_GRAD_OP is not
    among ``RESHARD_AFTER_FORWARD_HANDLE_STRATEGIES``, _flat_param.py) and the units'
    gradients in flight; not DeepSpeed's ``zero2``, whose ipg buffers
    (:func:`costmodel.strategy.memory._zero_buffers_bytes`, 2 GB at DeepSpeed's default
    bucket) FSDP does not allocate.

    >>> row_layout("SHARD_GRAD_OP", 128).name, row_layout("FULL_SHARD", 16).name
    ('fsdp (no reshard)', 'fsdp')
    """
    from .strategy.layout import Layout

    strategy, reshard = SHARDING[str(sharding)]
    return Layout(
        strategy=strategy,
        ranks=int(gpus),
        gpus_per_node=8,
        **({} if reshard is None else {"reshard_after_forward": reshard}),
    )


#: What makes a scaling series: every setting but the GPU count (and the batch that follows it),
#: measured in one campaign. ``version`` (the source's commit) and ``mp_mode`` keep a base from
#: another campaign out: llm-foundry's A100 80GB table of 2024-04 (amp_bf16 / DEFAULT) has
#: 8-GPU rows of the models its 2023-07 table (bf16 / PURE) ran at 8-64 GPUs under the same
#: title; MPT-30B's 8-GPU step differs by 16 % between the two (916 vs 788 tokens/s per GPU).
SERIES_KEY = [
    "source",
    "version",
    "mp_mode",
    "table",
    "model",
    "seq",
    "precision",
    "activation_checkpointing",
    "compile",
    "gpu_type",
    "sharding",
]


#: The splits the step band is checked on (:func:`split_of`): the compute fit's and the
#: synchronisation loss's cross-validation groups (source and GPU type), whole sources, and
#: GPU families.
SPLITS = ("group", "source", "family")


@dataclass(frozen=True)
class FidelityRow:
    """One prediction: the published and predicted tokens/s per GPU, and the band."""

    index: int
    predicted_tokens_per_s_per_gpu: float
    low: float  # band of the prediction [tokens/s per GPU]
    high: float
    step_s: float = math.nan  # the predicted step [s]
    compute_band: tuple[float, float] = (1.0, 1.0)  # the compute fit's band [-]
    multi_node: bool = False  # beyond one node: the scaling band applies


class _Engine:
    """Clusters and collective timers reused across the rows of one report."""

    def __init__(
        self, contention: float, overhead_s: float = 0.0, sync_loss: float | None = None
    ) -> None:
        self.contention = float(contention)
        self.overhead_s = float(overhead_s)
        self.sync_loss = sync_loss
        self._c: dict[tuple[str, int, float | None], Any] = {}
        self._t: dict[tuple[str, int, str, float | None], Any] = {}

    def step_s(self, r: Any, micro_s: float, gpus: int | None = None) -> float:
        return float(self.detail(r, micro_s, gpus).step_time_s) + self.overhead_s

    def detail(self, r: Any, micro_s: float, gpus: int | None = None) -> Any:
        """The engine's step of row ``r`` with ``micro_s`` of compute per full micro-batch."""
        from .strategy.step import strategy_step

        kw, acc = self._row_kwargs(r, gpus)
        # the row's cluster is capped already (_setup); a power limit beside a measured
        # compute time is refused (strategy_step): it sets only the predicted compute's speed
        kw.pop("power_limit_w", None)
        per_gpu = r.global_batch / r.gpus
        return strategy_step(
            **kw,
            comm_contention=self.contention,
            compute_time_s=micro_s * per_gpu / (acc * r.micro_batch),
            precision=str(r.precision),  # held to the row's own peak (fp8's for an fp8 row)
        )

    def _row_kwargs(self, r: Any, gpus: int | None = None) -> tuple[dict[str, Any], int]:
        """The ``strategy_step`` arguments every road of a row shares, and its accumulation."""
        c, nodes, strategy, timer, acc, reshard = self._setup(r, gpus)
        kw = dict(
            arch=r.model,
            cluster=c,
            nodes=nodes,
            strategy=strategy,
            reshard_after_forward=reshard,
            grad_dtype="bf16" if "PURE" in str(r.mp_mode) else "fp32",
            micro_batch=int(r.micro_batch),
            sequence_length=int(r.seq),
            accumulation=acc,
            timeline=False,
            band=False,
            timer=timer,
            sync_loss=self.sync_loss,
            power_limit_w=row_power_limit_w(r),
        )
        return kw, acc

    def _setup(self, r: Any, gpus: int | None = None) -> tuple[Any, int, str, Any, int, Any]:
        """The row's cluster, nodes, strategy, collective timer and accumulation."""
        from .strategy.comm import CollectiveTimer

        n = int(gpus if gpus is not None else r.gpus)
        preset = CLUSTER_OF[r.gpu_type]
        nodes = max(1, n // 8)
        watts = row_power_limit_w(r)
        key = (preset, n, watts)
        if key not in self._c:
            self._c[key] = presets.cluster(
                preset,
                nodes=nodes,
                gpus_per_node=min(8, n),
                power_limit_w=watts,
            )
        c = self._c[key]
        strategy, reshard = SHARDING[str(r.sharding)]
        tkey = (preset, n, strategy, watts)
        if tkey not in self._t:
            self._t[tkey] = CollectiveTimer(c, model="nccl", group_size=n)
        per_gpu = r.global_batch / r.gpus  # samples per GPU per step (n-independent per row)
        acc = max(1, math.ceil(per_gpu / r.micro_batch - 1e-9))
        return c, nodes, strategy, self._t[tkey], acc, reshard

    def user_step_s(self, r: Any, contention: float | None = None) -> float:
        """The row's step through ``strategy_step`` at its defaults (nothing measured), the
        compute fit held out from the row's (source, GPU type) group."""
        from .strategy.step import strategy_step

        kw, _ = self._row_kwargs(r)
        if contention is not None:
            kw["comm_contention"] = contention
        s = strategy_step(
            **kw,
            recompute=str(r.activation_checkpointing),
            precision=str(r.precision),
            held_out=f"{r.source}/{r.gpu_type}",
        )
        return float(s.step_time_s) + self.overhead_s

    def calibrate(self, r: Any, target_step_s: float, gpus: int) -> float:
        """Compute time of one full micro-batch that makes the engine's step at ``gpus``
        equal ``target_step_s`` (fixed point; the step is increasing in the compute)."""
        per_gpu = r.global_batch / r.gpus
        micro = target_step_s * r.micro_batch / per_gpu
        for _ in range(6):
            got = self.step_s(r, micro, gpus)
            if abs(got / target_step_s - 1) < 1e-4:
                break
            micro *= target_step_s / got
        return micro


def _fitted_micro_s(r: Any, held_out: bool = False) -> float:
    g = row_gpu(r)  # at the power limit the source states
    return micro_batch_compute_s(
        r.model,
        g,
        int(r.seq),
        int(r.micro_batch),
        precision=str(r.precision),
        recompute=str(r.activation_checkpointing),
        held_out=f"{r.source}/{r.gpu_type}" if held_out else None,
    )


def _step_tokens(r: Any) -> float:
    return float(r.global_batch * r.seq / r.gpus)  # tokens per GPU per step


def scaling_predictions(
    df: pd.DataFrame | None = None,
    contention: float = 0.0,
    overhead_s: float = 0.0,
    sync_loss: float | None = None,
    microbatch: str = "fit",
    term: Callable[[Any, Any], float] | None = None,
) -> list[tuple[int, int, float]]:
    """(row index, base row index, predicted tokens/s per GPU) for every non-base series row.

    ``sync_loss`` the synchronisation loss per doubling (None: the fitted default);
    ``microbatch`` how the base's compute per token is carried to a row with another
    micro-batch: ``"fit"`` by the compute fit's ratio between the two micro-batches,
    ``"held-out"`` the same with the fit that left out the series' group, ``"equal"`` the same
    time per token (the ablations of the report); ``term(row, base)`` a candidate term's
    factor on that ratio (``scripts/scaling_terms.py`` scores the terms it tries with it)."""
    if microbatch not in ("fit", "held-out", "equal"):
        raise ValueError(f"microbatch: must be fit, held-out or equal, got {microbatch!r}")
    if df is None:
        df = pure_dp_rows()
    eng = _Engine(contention, overhead_s, sync_loss)
    out = []
    for _, g in df.groupby(SERIES_KEY, sort=False):
        if g.gpus.nunique() < 2:
            continue
        g = g.sort_values("gpus", kind="stable")
        base = g.iloc[0]
        n0 = int(base.gpus)
        measured_step = _step_tokens(base) / float(base.tokens_per_s_per_gpu)
        micro0 = eng.calibrate(base, measured_step, n0)
        held = microbatch == "held-out"
        fit0 = _fitted_micro_s(base, held)
        for i, r in g.iloc[1:].iterrows():
            if int(r.gpus) == n0:
                continue
            # per-token compute of the base, changed only by the micro-batch term of the fit
            per_tok = micro0 / (base.micro_batch * base.seq)
            ratio = (_fitted_micro_s(r, held) / (r.micro_batch * r.seq)) / (
                fit0 / (base.micro_batch * base.seq)
            )
            if microbatch == "equal":
                ratio = 1.0
            if term is not None:
                ratio *= float(term(r, base))
            micro = per_tok * ratio * r.micro_batch * r.seq
            step = eng.step_s(r, micro)
            out.append((int(i), int(base.name), _step_tokens(r) / step))  # type: ignore[call-overload]
    return out


def scaling_parts(df: pd.DataFrame, pairs: list[tuple[int, int]]) -> list[dict[str, float]]:
    """What the scaling path's step is made of, for (row index, base index) pairs: the compute
    fit's per-token ratio row / base (``fit_ratio``) against the published one
    (``published_ratio``, time per token), and at the base and the row (``base_``/``row_``
    prefixes) the shares of the step that are all collectives (``comm``), collectives not under
    compute (``exposed``) and the synchronisation loss (``sync``) [-]."""
    eng = _Engine(0.0)
    obs = df.tokens_per_s_per_gpu
    out: list[dict[str, float]] = []
    for i, b in pairs:
        r: Any = df.loc[i]
        r0: Any = df.loc[b]
        micro0 = eng.calibrate(r0, _step_tokens(r0) / float(obs[b]), int(r0.gpus))
        tok, tok0 = float(r.micro_batch * r.seq), float(r0.micro_batch * r0.seq)
        ratio = (_fitted_micro_s(r) / tok) / (_fitted_micro_s(r0) / tok0)
        d = {"fit_ratio": ratio, "published_ratio": float(obs[b] / obs[i])}
        for tag, row, micro in (("base", r0, micro0), ("row", r, micro0 / tok0 * ratio * tok)):
            s = eng.detail(row, micro)
            d[f"{tag}_comm"] = float(s.comm_s / s.step_time_s)
            d[f"{tag}_exposed"] = float(s.exposed_comm_s / s.step_time_s)
            d[f"{tag}_sync"] = float(s.sync_s / s.step_time_s)
        out.append(d)
    return out


def absolute_predictions(
    df: pd.DataFrame | None = None,
    contention: float | None = None,
    overhead_s: float = 0.0,
    scaling_band: tuple[float, float] = (1.0, 1.0),
) -> list[FidelityRow]:
    """Nothing measured: the step a user gets from
    :func:`~costmodel.strategy.step.strategy_step` at its defaults (fitted compute efficiency,
    its one-node calibration, the default contention unless ``contention`` is given) with the
    row's model, cluster, strategy, micro-batch, accumulation, recomputation and precision.

    The one departure from the defaults: the compute fit used for a row is the one fitted
    without the row's (source, GPU type) group (``held_out``, grouped cross-validation), so
    the errors are held-out errors.

    The band is the compute fit's (one-node grouped CV) and, beyond one node, also
    ``scaling_band``: the (low, high) multipliers of the predicted step time that held the 10th
    to 90th percentile of the scaling path's errors (:func:`scaling_band`).
    """
    if df is None:
        df = pure_dp_rows()
    eng = _Engine(0.0 if contention is None else contention, overhead_s)
    out = []
    for i, r in df.iterrows():
        fit = compute_fit(row_gpu(r), str(r.precision))
        step = eng.user_step_s(r, None if contention is None else float(contention))
        out.append(_banded(r, int(i), step, fit.band, int(r.gpus) > 8, scaling_band))  # type: ignore[call-overload]
    return out


def _banded(
    r: Any,
    index: int,
    step_s: float,
    compute: tuple[float, float],
    multi_node: bool,
    scaling: tuple[float, float],
) -> FidelityRow:
    """A row's prediction with the band the tool shows (:mod:`costmodel.strategy.band`),
    without the collectives' own (an outer envelope there: the product is what is checked)."""
    lo_s, hi_s = step_time_band(step_s, (step_s, step_s), "fitted", compute, multi_node, scaling)
    tok = _step_tokens(r)
    return FidelityRow(index, tok / step_s, tok / hi_s, tok / lo_s, step_s, compute, multi_node)


def split_of(df: pd.DataFrame, by: str = "group") -> pd.Series:
    """Each row's key under a split of :data:`SPLITS`: ``"group"`` its (source, GPU type)
    group (``"llm-foundry/a100-80gb"``, the compute fit's and the synchronisation loss's
    cross-validation groups), ``"source"`` its source, ``"family"`` its GPU family."""
    if by == "group":
        return df.source.astype(str) + "/" + df.gpu_type.astype(str)
    if by == "source":
        return df.source.astype(str)
    if by == "family":
        fam = {p: gpu_family(presets.load(str(p), "gpu")) for p in df.gpu_preset.unique()}
        return df.gpu_preset.map(fam).astype(str)
    raise ValueError(f"by: must be one of {', '.join(SPLITS)}, got {by!r}")


def held_out_scaling_bands(
    df: pd.DataFrame, predictions: list[tuple[int, int, float]], by: str = "group"
) -> dict[str, tuple[float, float]]:
    """The scaling band (:func:`scaling_band`) fitted without each key of a split
    (:func:`split_of`): key -> the 10th-90th percentile band of the scaling rows of the other
    keys, what a cluster of that key would be shown had it not been in the data."""
    keys = split_of(df, by)
    out = {}
    for k in sorted(set(keys)):
        rest = [p for p in predictions if keys[p[0]] != k]
        if not rest:
            raise ValueError(f"by: every scaling row is in {k!r}; nothing to fit without it")
        out[k] = scaling_band(df, rest)
    return out


#: Fewest one-node rows a per-family compute band without a group is taken from
#: (:func:`held_out_compute_bands` ``how="step, per family"``); below it, the band pooled over
#: families.
MIN_FAMILY_BAND_ROWS = 5

#: How :func:`held_out_compute_bands` makes a compute band without a key: the shipped
#: construction, and the two built from the absolute path's one-node step errors that were
#: measured against it.
COMPUTE_BAND_HOW = ("shipped", "step, pooled", "step, per family")


def held_out_compute_bands(
    df: pd.DataFrame, rows: list[FidelityRow], by: str = "group", how: str = "shipped"
) -> dict[str, tuple[float, float]]:
    """A compute band fitted without each key of a split: key -> (low, high) multipliers of
    the predicted step time [-].

    - ``"shipped"`` (``by="group"`` only: the compute fit leaves out groups): the band the
      compute fit without the group ships (:func:`costmodel.compute.compute_band`: the
      shipped rule, the 10th-90th percentile of the grouped-CV errors pooled over GPU families
      and precisions, on the grouped CV run again without the group, so that no error in it
      comes from a fit that saw the group). What a cluster not in the data is shown.
    - ``"step, pooled"``: the 10th and 90th percentile of observed / predicted step time over
      the one-node rows of the other keys, pooled over families and precisions. ``rows`` are
      :func:`absolute_predictions`, whose compute fit already left out each row's group.
    - ``"step, per family"`` (``by="group"`` only): the same from the other groups of the
      key's GPU family alone, pooled over families where those have fewer than
      :data:`MIN_FAMILY_BAND_ROWS` one-node rows (the hopper rows are one group but for four
      rows): the construction of the per-family band shipped before, rejected.
    """
    if how not in COMPUTE_BAND_HOW:
        raise ValueError(f"how: must be one of {', '.join(COMPUTE_BAND_HOW)}, got {how!r}")
    if how != "step, pooled" and by != "group":
        raise ValueError(f"by: `how` {how!r} needs 'group', got {by!r}")
    keys = split_of(df, by)
    if how == "shipped":
        return {k: compute_band(k) for k in sorted(set(keys))}
    fams = split_of(df, "family")
    obs = df.tokens_per_s_per_gpu
    one = [x for x in rows if not x.multi_node]

    def band(r: list[float]) -> tuple[float, float]:
        lo, hi = np.quantile(r, [0.1, 0.9])
        return (float(min(lo, 1.0)), float(max(hi, 1.0)))

    out = {}
    for k in sorted(set(keys)):
        rest = [x for x in one if keys[x.index] != k]
        r = [x.predicted_tokens_per_s_per_gpu / obs[x.index] for x in rest]
        if how == "step, per family":
            fam = fams[keys == k].iloc[0]
            same = [x for x in rest if fams[x.index] == fam]
            if len(same) >= MIN_FAMILY_BAND_ROWS:
                r = [x.predicted_tokens_per_s_per_gpu / obs[x.index] for x in same]
        out[k] = band(r)
    return out


def rebanded(
    df: pd.DataFrame,
    rows: list[FidelityRow],
    scaling: tuple[float, float] | Mapping[str, tuple[float, float]],
    compute: Mapping[str, tuple[float, float]] | None = None,
    by: str = "group",
    compute_of: Mapping[int, tuple[float, float]] | None = None,
) -> list[FidelityRow]:
    """The same predictions with another band: ``scaling`` one band, or one per key of the
    split ``by`` (:func:`held_out_scaling_bands`); ``compute`` one compute band per key
    (:func:`held_out_compute_bands`), or ``compute_of`` one per row index (None: each row's
    own, the shipped one)."""
    keys = split_of(df, by)
    out = []
    for x in rows:
        k = keys[x.index]
        s = scaling[k] if isinstance(scaling, Mapping) else scaling
        c = x.compute_band
        if compute is not None:
            c = compute[k]
        elif compute_of is not None:
            c = compute_of[x.index]
        out.append(_banded(df.loc[x.index], x.index, x.step_s, c, x.multi_node, s))
    return out


def band_coverage(
    df: pd.DataFrame, rows: list[FidelityRow], predictions: list[tuple[int, int, float]]
) -> dict[str, np.ndarray]:
    """Whether the step band holds each published row (bool per row, in the order of
    ``rows``) under each way of fitting it:

    - ``"in-sample"``: both bands fitted on every row (the shipped bands as they are);
    - ``"group"``: the scaling band and the compute band fitted without the row's (source, GPU
      type) group (the compute band as shipped, :func:`held_out_compute_bands`; the compute
      fit is already held out): the measured coverage, what a new cluster sees;
    - ``"source"`` / ``"family"``: the scaling band fitted without the row's whole source /
      GPU family, the compute band without its group (the compute fit leaves out groups);
    - ``"group, scaling only"``: the scaling band without the row's group, the compute band
      fitted on every row;
    - ``"group, step, pooled"`` / ``"group, step, per family"``: the scaling band without the
      row's group and the compute band from the other groups' one-node step errors, pooled
      over families / from the row's family (:func:`held_out_compute_bands`; the latter is
      the per-family band's construction, rejected).

    ``rows`` are :func:`absolute_predictions`, ``predictions`` :func:`scaling_predictions`.
    """
    obs = df.tokens_per_s_per_gpu
    grp = split_of(df, "group")

    def hit(rs: list[FidelityRow]) -> np.ndarray:
        return np.array([x.low <= obs[x.index] <= x.high for x in rs])

    shipped = held_out_compute_bands(df, rows)
    by_row = {x.index: shipped[grp[x.index]] for x in rows}
    lgo = held_out_scaling_bands(df, predictions)
    out = {"in-sample": hit(rebanded(df, rows, scaling_band(df, predictions)))}
    out["group"] = hit(rebanded(df, rows, lgo, shipped))
    for by in SPLITS[1:]:
        bands = held_out_scaling_bands(df, predictions, by)
        out[by] = hit(rebanded(df, rows, bands, by=by, compute_of=by_row))
    out["group, scaling only"] = hit(rebanded(df, rows, lgo))
    for how in COMPUTE_BAND_HOW[1:]:
        out[f"group, {how}"] = hit(
            rebanded(df, rows, lgo, held_out_compute_bands(df, rows, how=how))
        )
    return out


def scaling_band(
    df: pd.DataFrame, predictions: list[tuple[int, int, float]]
) -> tuple[float, float]:
    """10th and 90th percentile of observed / predicted step time on the scaling path [-]."""
    obs = df.tokens_per_s_per_gpu.to_numpy()
    pos = {k: n for n, k in enumerate(df.index)}
    ratio = [p / float(obs[pos[i]]) for i, _, p in predictions]
    lo, hi = np.quantile(ratio, [0.1, 0.9])
    return float(min(lo, 1.0)), float(max(hi, 1.0))


def measured_range(df: pd.DataFrame) -> tuple[int, int]:
    """(nodes, GPUs) of the largest published run among ``df``'s rows: the range the step band
    was checked on (``max_nodes``, ``max_gpus`` of ``costmodel/data/fitted_step_band.toml``;
    beyond it :func:`costmodel.strategy.band.band_extrapolation` says the band is
    extrapolated). Nodes as the engine places the rows, 8 GPUs each (:class:`_Engine`)."""
    gpus = int(df.gpus.max())
    return max(1, gpus // 8), gpus


def measured_sources(df: pd.DataFrame) -> tuple[int, int]:
    """(runs, sources) of ``df``'s rows: how many published runs the step band was checked on
    and how many sources published them (``n_runs``, ``n_sources`` of
    ``costmodel/data/fitted_step_band.toml``; :func:`measured_range` is the largest of those
    runs). A run is a row (one configuration's published throughput); a source is its
    ``source`` (llm-foundry's tables, torchtitan's), not a (source, GPU type) group."""
    return len(df), int(df.source.nunique())


def summary(errors: Any) -> dict[str, float]:
    """Median, 90th percentile and maximum of |errors| (fractions)."""
    e = np.abs(np.asarray(errors, dtype=float))
    return {
        "rows": float(len(e)),
        "median": float(np.median(e)),
        "p90": float(np.quantile(e, 0.9)),
        "max": float(e.max()),
    }
