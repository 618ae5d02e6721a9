r"""One training setup in, every answer out: the thin object layer the app and the CLI share.

A :class:`Scenario` is a validated description of a data-parallel run (model size, precision
recipe, ZeRO stage, cluster preset and size, batch, bucket size, ...). :meth:`Scenario.evaluate`
gathers the fields and calls the formula modules, nothing more:

- memory per GPU: :func:`costmodel.memory.training_memory` (and what fits);
- batch: :func:`costmodel.batch.global_batch` and tokens per step;
- the step under the scenario's data-parallel strategy (ddp, zero1, zero2, fsdp, hsdp):
  :func:`costmodel.strategy.strategy_step`, every collective through
  :func:`costmodel.predict.predict_collective` (so the step and the collective pages agree), the
  memory from the same layout; for ddp the flips, the bucket advisor and the scaling table go
  through :func:`costmodel.ddp.ddp_step` (the same engine and numbers);
- the verdict (compute- or comms-bound) and the smallest changes that flip it, each checked by
  re-evaluating the step with one input changed (see :meth:`Scenario._flips`);
- scaling efficiency against the number of nodes.

Speed (the app reruns this on every input change): within one :meth:`Scenario.evaluate` the
cluster is loaded once and resized for the scaling table, and each cluster's all-reduce time is
predicted once per distinct bucket size (:class:`_Clusters`); the flip thresholds come from one
step in closed form and are confirmed by two re-evaluations each, not found by bisection.

The lesson's practice problem 1 on a preset (7B, bf16 gradients, 64 H100s, 400 ms compute),
with the lesson's flat ring at one 400G NIC per GPU (``model="lesson"``): comms-bound, and fp8
gradients are the smallest change that flips it (as the lesson says):

>>> s = Scenario(params="7B", cluster="dgx-h100", nodes=8, compute_time_s="400ms",
...              model="lesson")
>>> r = s.evaluate(scaling=False)
>>> r.ranks, r.bound, r.flip.parameter
(64, 'comms', 'gradient_bytes_per_param')
>>> r.memory_total_bytes / 1e9, r.fits          # 16 B/param + DDP's 2 B/param bucket copy
(126.0, False)
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import warnings
import weakref
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Literal, get_args

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_serializer,
    field_validator,
    model_validator,
)

from . import units
from ._limits import LIMITS, MAX_NODES, MIN_MFU
from .compute import FP8_GPUS_TEXT
from .hardware import DEFAULT_NODES, Flag, FlagOrNone, OneLineModel, OneLineValidationError
from .strategy.layout import DEFAULT_COMM_CONTENTION

MAX_SEARCH_FACTOR = 1024.0
"""Flip searches stop at this factor of change (beyond it the suggestion is 'not reachable')."""

FLIP_REL_TOL = 1e-9
"""Relative resolution of a flip factor: the value reported flips the verdict and lies at most
this far above the exact threshold (confirmed by a step just below it that does not flip)."""


SCALING_MAX_NODES = 1024
"""Largest node count in the scaling table."""


def _interval(i: Any) -> dict[str, Any]:
    """One timeline interval (costmodel.strategy.Interval) as a plain dict (the ScenarioResult
    timeline rows): kind (forward, backward, all_gather, reduce_scatter, all_reduce), stream,
    times [s], label, message [B], the ranks the collective spans and its span."""
    return {
        "kind": str(i.kind),
        "stream": str(getattr(i, "stream", "")),
        "start_s": float(i.start_s),
        "end_s": float(i.end_s),
        "label": str(i.label),
        "message_bytes": float(i.message_bytes),
        "span_ranks": int(getattr(i, "span_ranks", 0)),
        "span": str(getattr(i, "span", "")),
        "micro_batch": int(i.micro_batch),
    }


def _memoized(fn: Callable[[Any], Any]) -> Callable[[Any], np.ndarray]:
    """``fn`` (bytes -> seconds, elementwise) called once per distinct size, remembered.

    DDP's buckets are mostly the same size (every full ``bucket_cap``), and a flip search or a
    scaling table asks again for the same sizes: each distinct size is predicted once, in one
    vectorized call for all the new ones.
    """
    known: dict[float, float] = {}

    def time_fn(message_bytes: Any) -> np.ndarray:
        m = np.asarray(message_bytes, dtype=float)
        # the distinct sizes (a model of 45,395 tensors has that many buckets, a few hundred
        # sizes), each looked up once and spread back over the buckets
        uniq, inverse = np.unique(m.reshape(-1), return_inverse=True)
        sizes = uniq.tolist()
        new = [x for x in sizes if x not in known]
        if new:
            t = np.asarray(fn(np.array(new)), dtype=float).reshape(-1)
            known.update(zip(new, t.tolist(), strict=True))
        times = np.array([known[x] for x in sizes], dtype=float)
        return times[inverse.reshape(-1)].reshape(m.shape)

    return time_fn


class _Clusters:
    """One scenario's cluster at each node count, each with a memoized all-reduce time.

    The base is the cluster loaded when the scenario was validated, resized with
    ``presets.cluster(base, nodes=n)`` (what ``build_cluster(n)`` returns); the all-reduce time
    of each cluster is ``predict.allreduce_time_fn`` behind :func:`_memoized`. The predictions
    live for one :meth:`Scenario.evaluate` (a changed correction is seen by the next one).
    """

    def __init__(self, scenario: Scenario) -> None:
        self.model = scenario.model
        self.base = scenario._validated_cluster()
        self._clusters: dict[int, Any] = {int(self.base.nodes): self.base}
        self._fns: dict[int, Callable[[Any], np.ndarray]] = {}

    def cluster(self, nodes: int) -> Any:
        if nodes not in self._clusters:
            from . import presets

            self._clusters[nodes] = presets.cluster(self.base, nodes=nodes)
        return self._clusters[nodes]

    def allreduce_fn(self, nodes: int) -> Callable[[Any], np.ndarray]:
        if nodes not in self._fns:
            from . import predict

            c = self.cluster(nodes)
            self._fns[nodes] = _memoized(
                predict.allreduce_time_fn(c, nodes=c.nodes, model=self.model)
            )
        return self._fns[nodes]


class ScenarioError(OneLineValidationError):
    """A refused Scenario: pydantic's ``ValidationError`` (``errors()``, ``title``, caught as
    ``ValidationError`` or ``ValueError``) whose text is one line naming each field and its
    allowed range, the project's rule for bad input, with no pydantic URL or input dump:

    ``nodes: must be a whole number in 1..1,000,000, got 0``

    The CLI's one line and the app's red message are built from the same parts
    (:func:`costmodel._limits.validation_parts`), with the option or box the user typed.
    """


class Scenario(OneLineModel):
    """A data-parallel training setup, validated on construction (frozen).

    Sizes, counts and durations accept unit strings (``params="7B"``,
    ``bucket_cap_bytes="25MiB"``, ``compute_time_s="400ms"``); everything is stored in SI.
    A refused field raises :class:`ScenarioError`, a ``pydantic.ValidationError`` whose message
    is one line naming the field and its allowed range.

    >>> Scenario(params="7B", nodes=0)
    Traceback (most recent call last):
    ...
    costmodel.scenario.ScenarioError: nodes: must be a whole number in 1..1,000,000, got 0
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    # every road in (the constructor, ``model_validate``, ``model_validate_json``,
    # ``model_validate_strings``) refuses with the one-line ScenarioError (still a
    # ValidationError): :class:`costmodel.hardware.OneLineModel`
    one_line_error: ClassVar[type[OneLineValidationError]] = ScenarioError

    params: float = Field(ge=1, le=1e15, description="model parameters [-], e.g. 7e9 or '7B'")
    recipe: str = Field("mixed-adam", description="precision/optimizer recipe (memory.RECIPES)")
    zero_stage: int = Field(
        0, ge=0, le=3, description="ZeRO stage 0-3 (0 = plain DDP); set by strategy when given"
    )
    strategy: Literal["ddp", "zero1", "zero2", "fsdp", "hsdp"] | None = Field(
        None,
        description="data-parallel strategy (costmodel.strategy): ddp, zero1, zero2, fsdp, hsdp; "
        "default: the zero_stage's (0 ddp, 1 zero1, 2 zero2, 3 fsdp)",
    )
    group_size: int | None = Field(
        None,
        ge=1,
        le=1_000_000_000,  # LIMITS["group_size"], step --group-size's range
        description="hsdp: ranks sharding one replica (default one node)",
    )
    reshard_after_forward: FlagOrNone = Field(
        None, description="fsdp/hsdp: free gathered parameters after forward (default True)"
    )
    gradient_as_bucket_view: FlagOrNone = Field(
        None,
        description="ddp: gradients are views into DDP's buckets, no bucket copy held "
        "(default False, PyTorch's)",
    )
    param_dtype: Literal["bf16", "fp16", "fp8", "fp32"] = Field(
        "bf16", description="dtype parameters are all-gathered in (zero1/2, fsdp, hsdp)"
    )
    grad_dtype: Literal["fp32", "bf16", "fp16"] | None = Field(
        None, description="dtype gradients are reduced in (default: the recipe's)"
    )
    cluster: str = Field("dgx-h100", description="cluster preset name")
    # the one node limit of every command, the sweep and the API (a Cluster holds as many)
    nodes: int = Field(
        DEFAULT_NODES,
        ge=1,
        le=MAX_NODES,
        description="nodes of the preset (default one node: hardware.DEFAULT_NODES)",
    )
    # the one bound of every surface (--gpus-per-node, the sweep, a cluster's node): 1..1,024
    gpus_per_node: int | None = Field(
        None,
        ge=1,
        le=int(LIMITS["gpus_per_node"].hi),
        description="GPUs per node (default: the preset's)",
    )
    power_limit_w: float | None = Field(
        None,
        allow_inf_nan=True,  # a NaN is refused by check_power_limit_w, with the GPU's range
        description="board power limit of the cluster's GPUs [W] in [minimum, datasheet maximum] "
        "(H100/H200 SXM 200..700 W, A100 SXM 100..400 W), "
        "e.g. 500 for H100s capped at 500 W (default: the preset's datasheet power); the fitted "
        "compute efficiency follows it (costmodel.compute.gpu_power_w); not with compute_time_s, "
        "which replaces that compute",
    )
    local_batch: int = Field(1, ge=1, le=10**6, description="micro-batch per GPU [samples]")
    accumulation: int = Field(1, ge=1, le=10**6, description="micro-batches per step")
    sequence_length: int = Field(4096, ge=1, le=10**8, description="tokens per sample")
    mfu: float | None = Field(
        None,
        ge=MIN_MFU,  # LIMITS["mfu"]: 0.1%, below it a typo (the bound's reason: MIN_MFU)
        le=1,
        description="model FLOP utilisation [0.001, 1] of the dense peak of the compute precision "
        "(fp8's under precision fp8), PaLM's: of the model's FLOPs, recomputation's not "
        "counted, so the same compute under any recompute, at most 1 / (1 + r) under its extra "
        "work r (0.75 under full: the GPUs run the recomputed forward too); default: the fitted "
        "achievable efficiency "
        "(costmodel.compute), or 0.4 of the bf16 peak on a GPU family it has no fit for",
    )
    compute_time_s: float | None = Field(
        None,
        gt=0,
        le=1e6,
        description="measured compute per micro-batch [s] (not with mfu or power_limit_w, whose predicted compute it replaces)",
    )
    precision: Literal["bf16", "fp8"] | None = Field(
        None,
        description="compute precision of the matmuls: bf16, or fp8 on a GPU with fp8 tensor "
        f"cores ({FP8_GPUS_TEXT}); mfu is a fraction of this "
        "precision's dense peak (fp8: H100 SXM 1979 TFLOP/s); default: the recipe's, fp8 for "
        "fp8-mixed, else bf16 (costmodel.strategy.step.compute_precision)",
    )
    bucket_cap_bytes: int | None = Field(
        None,
        ge=1,
        le=10**13,
        description="bucket size [B] of ddp/zero1/zero2 (default: the strategy's own, "
        "ddp 25 MiB, zero1/zero2 5e8 elements; effective_bucket_cap_bytes)",
    )
    no_sync: Flag = Field(True, description="skip the all-reduce on non-final micro-batches")
    # the reference baseline nccl-table too, as strategy_step and the step sweep take it (one
    # road: a step sweep's row is a scenario's, and `train --help` lists it)
    model: Literal["nccl", "lesson", "textbook", "calibrated", "nccl-table"] = Field(
        "nccl",
        description="collective model (costmodel.models): nccl, lesson, textbook or calibrated; "
        "reference baseline: nccl-table (NCCL's tuning table alone, no corrections)",
    )
    arch: str | None = Field(
        None,
        description="architecture preset (costmodel.architecture.arch_names()): gives params, "
        "the real tensor list for DDP's buckets, activations and FLOPs per token",
    )
    flash_attention: Flag = Field(True, description="FlashAttention (activations, with arch)")
    recompute: Literal["none", "selective", "selective-op", "selective-layer", "full"] = Field(
        "none", description="activation recomputation (with arch; architecture.RECOMPUTE_MODES)"
    )
    loss: Literal["fp32", "fp32-held", "fused"] = Field(
        "fp32",
        description="how the loss is computed, which sizes its logits (with arch; "
        "architecture.LOSS_MODES: fp32 = cross_entropy(logits.float()), fused = a fused or "
        "compiled loss)",
    )
    comm_contention: float = Field(
        DEFAULT_COMM_CONTENTION,
        ge=0.0,
        le=1.0,
        description="compute slows to 1 - c while a collective runs; the one default of every "
        "surface is costmodel.strategy.DEFAULT_COMM_CONTENTION (0 = no contention, 1 = no overlap)",
    )
    # the memory's overheads, strategy_memory's (costmodel memory --cuda-context/--fragmentation)
    cuda_context_bytes: float = Field(
        0.0,
        description="CUDA context and library workspaces per GPU [B], not held by the allocator, "
        "e.g. 2147483648 or '2GiB' (default 0; measure it with nvidia-smi): added to the memory "
        "per GPU and so to fits (costmodel.strategy.memory.strategy_memory)",
    )
    fragmentation: float = Field(
        0.0,
        description="allocator fragmentation allowance, a fraction in [0, 1) of everything the "
        "allocator holds (state, activations, buffers; default 0)",
    )

    @model_validator(mode="before")
    @classmethod
    def _choice_names(cls, data: Any) -> Any:
        """Enumerated fields (precision, recompute, strategy, ...) in any case, kept in their
        canonical lower-case form (:data:`costmodel._limits.CHOICES`), as the CLI reads them."""
        from ._limits import choice_names

        return choice_names(data) if isinstance(data, dict) else data

    @model_validator(mode="before")
    @classmethod
    def _no_bool_numbers(cls, data: Any) -> Any:
        """A bool given for a number is refused naming the field, as every other API input is:
        pydantic's lax mode read ``True`` as 1 (``nodes=True`` one node, ``mfu=True`` an MFU of
        1, ``params=True`` one parameter)."""
        if isinstance(data, dict):
            for name, value in data.items():
                field = cls.model_fields.get(name)
                if field is None or not isinstance(value, bool):
                    continue
                annotation = field.annotation
                if annotation is not bool and bool not in get_args(annotation):
                    raise ValueError(f"{name}: expected a number, got a bool ({value!r})")
        return data

    @model_validator(mode="before")
    @classmethod
    def _strategy_stage(cls, data: Any) -> Any:
        """``strategy`` sets ``zero_stage``; a bare ``zero_stage`` names its strategy."""
        if not isinstance(data, dict) or data.get("strategy") is None:
            return data
        from .strategy.layout import STRATEGIES, ZERO_STAGE, stage_agrees, unknown_strategy

        st = str(data["strategy"]).lower()
        if st not in STRATEGIES:
            raise ValueError(unknown_strategy(data["strategy"]))
        stage = data.get("zero_stage")
        if not stage_agrees(st, stage):
            raise ValueError(
                f"zero_stage: {stage!r} contradicts strategy {st!r} (ZeRO-{ZERO_STAGE[st]}); "
                "give one of them"
            )
        return {**data, "strategy": st, "zero_stage": ZERO_STAGE[st]}

    @model_validator(mode="before")
    @classmethod
    def _step_names(cls, data: Any) -> Any:
        """The step's names for Scenario's fields are refused naming Scenario's (pydantic said
        only "Extra inputs are not permitted")."""
        other = {"micro_batch": "local_batch", "seq": "sequence_length"}
        if isinstance(data, dict):
            for k, ours in other.items():
                if k in data:
                    raise ValueError(
                        f"{k}: Scenario calls it {ours} (strategy_step's {k} is Scenario's {ours})"
                    )
        return data

    @model_validator(mode="before")
    @classmethod
    def _arch_params(cls, data: Any) -> Any:
        """``arch`` fills ``params`` (a different ``params`` given with it is an error)."""
        if isinstance(data, dict) and data.get("arch") is not None:
            from .architecture import load_arch

            a = load_arch(data["arch"])
            given = typed = data.get("params")
            if isinstance(given, str):
                given = units.parse_count(given, name="params")
            if given is not None and not math.isclose(float(given), a.params, rel_tol=1e-9):
                from .architecture import params_differ  # the count as typed (7B)

                raise ValueError(params_differ(typed, a))
            data = {**data, "params": float(a.params)}
        return data

    @model_validator(mode="before")
    @classmethod
    def _objects_as_names(cls, data: Any) -> Any:
        """A ``cm.Architecture`` or ``cm.Cluster`` given for ``arch`` or ``cluster`` (what the
        step functions take) is taken as the name it was loaded from, or refused in one line
        saying what to give: pydantic said "Input should be a valid string" of them, and
        ``load_arch``'s refusal names ``cm.Architecture`` among what ``arch`` takes. Runs
        first (pydantic runs a model's "before" validators last-defined first)."""
        if not isinstance(data, dict):
            return data
        from .architecture import Architecture
        from .hardware import Cluster

        a = data.get("arch")
        if isinstance(a, Architecture):
            data = {**data, "arch": _arch_name(a)}
        c = data.get("cluster")
        if isinstance(c, Cluster):
            data = {**data, **_cluster_fields(c, data)}
        elif c is None and "cluster" in data:
            raise ValueError(
                "cluster: a cluster preset name (`cm.presets.names('cluster')`), got None"
            )
        return data

    def architecture(self) -> Any:
        """The :class:`costmodel.architecture.Architecture` of ``arch``, or None."""
        if self.arch is None:
            return None
        from .architecture import load_arch

        return load_arch(self.arch)

    def flops_per_token(self) -> float:
        """Model FLOPs per token [FLOP] of this setup's MFU: the ones its step is priced with
        (:func:`costmodel.strategy.step.model_flops_per_token`: the architecture's 6N +
        attention; a bare count's transformer on the fitted road; else 6P, the default MFU's
        road included)."""
        return self._model_flops()[0]

    def flops_definition(self) -> str:
        """:meth:`flops_per_token` in words, as the step page and ``costmodel train`` state the
        MFU (e.g. ``"6N + attention of the architecture, PaLM appendix B"``)."""
        return self._model_flops()[1]

    def _model_flops(self) -> tuple[float, str]:
        from .strategy.step import model_flops_per_token

        # the step's own rule: a measured compute time overrides the MFU (strategy_step_kwargs)
        mfu = None if self.compute_time_s is not None else self.mfu
        return model_flops_per_token(
            float(self.params),
            self.architecture(),
            self.sequence_length,
            mfu=mfu,
            compute_time_s=self.compute_time_s,
            gpu=self._validated_cluster().gpu,  # its road: fitted, or the default MFU's 6N
            precision=self.compute_precision,
        )

    @field_validator(
        "nodes", "gpus_per_node", "local_batch", "accumulation", "zero_stage", "group_size",
        mode="before",
    )  # fmt: skip
    @classmethod
    def _counts(cls, v: Any, info: Any) -> Any:
        """A count given as text (``with_changes("nodes=1e1")``, ``--vs nodes=2k``) in the one
        count grammar of every surface (:func:`costmodel.units.read_count`); a fraction or a
        sign is left to the field's range to refuse, naming it."""
        if not isinstance(v, str):
            _check_count_limit(info.field_name, v)
            return v
        _check_count_limit(info.field_name, v)  # the limit's words, the grammar's reason
        try:
            n = units.read_count(v, name=info.field_name)
        except ValueError as exc:  # text in no form of a count: the grammar and the range
            from ._limits import field_range

            raise ValueError(
                f"{exc}; allowed: {field_range('Scenario', info.field_name)}"
            ) from None
        return n

    @field_validator("params", mode="before")
    @classmethod
    def _params(cls, v: Any) -> float:
        _check_count_limit("params", v)  # strategy_step's and --params' 1..1e15, in its words
        return units.parse_count(v, name="params") if isinstance(v, str) else v

    @field_validator("bucket_cap_bytes", mode="before")
    @classmethod
    def _bucket(cls, v: Any) -> int:
        _check_count_limit("bucket_cap_bytes", v)  # --bucket's 1 B..10 TB, in its words
        return units.parse_bytes(v, name="bucket_cap_bytes") if isinstance(v, str) else v

    @field_validator("mfu", "comm_contention", mode="before")
    @classmethod
    def _fractions(cls, v: Any, info: Any) -> Any:
        """The MFU and the overlap contention within --mfu's and --contention's one range, in
        its words; text that is no number is left to pydantic, which says so."""
        if isinstance(v, str):
            try:
                float(v)
            except ValueError:
                return v
        _check_count_limit(info.field_name, v)
        return v

    @field_validator("cuda_context_bytes", "fragmentation", mode="before")
    @classmethod
    def _overheads(cls, v: Any, info: Any) -> float:
        """strategy_memory's check of the two, on the value as given
        (:func:`costmodel.strategy.memory.check_overheads`: the same ranges and messages as
        the step and ``training_memory``); the context also as a size with its unit (``2GiB``)."""
        from .strategy.memory import check_overheads

        if info.field_name == "cuda_context_bytes" and isinstance(v, str):
            v = units.parse_bytes(v, name="cuda_context_bytes")
        ctx, frag = check_overheads(**{info.field_name: v})
        return ctx if info.field_name == "cuda_context_bytes" else frag

    @field_validator("compute_time_s", mode="before")
    @classmethod
    def _compute(cls, v: Any) -> Any:
        _check_count_limit("compute_time_s", v)  # --compute-time's (0, 1e6] s, in its words
        return units.parse_duration(v, name="compute_time_s") if isinstance(v, str) else v

    @field_validator("sequence_length", mode="before")
    @classmethod
    def _sequence_length(cls, v: Any) -> Any:
        # a token count in the grammar of --seq (8Ki = 8192, 8k = 8000): with_changes("seq=8Ki");
        # text is checked against --seq's own limit, so "4.5" or "0" gets --seq's range, not
        # the token grammar's ">= 0"
        if not isinstance(v, str):
            _check_count_limit("sequence_length", v)
            return v
        try:
            n = units.parse_tokens(v, name="sequence_length")
        except ValueError as exc:
            if "cannot parse" in str(exc):  # not a token count at all: the grammar's message
                raise
        LIMITS["sequence_length"].check("sequence_length", v)  # a fraction, a sign, a bound
        return n

    @field_validator("recipe")
    @classmethod
    def _recipe(cls, v: str) -> str:
        from .memory import RECIPES

        if v not in RECIPES:
            raise ValueError(f"unknown recipe {v!r}; allowed: {', '.join(RECIPES)}")
        return v

    @model_validator(mode="after")
    def _cluster_exists(self) -> Scenario:
        c = self._validated_cluster()  # raises a ValueError naming the preset and the valid ones
        self.layout()  # raises a ValueError naming the layout field (group_size, reshard, ...)
        if self.precision == "fp8" and c.gpu.fp8_dense_flops is None:  # the step's own words
            from .strategy.step import check_precision_support

            check_precision_support(c.gpu, self.precision)
        return self

    @model_validator(mode="after")
    def _power_not_beside_measured(self) -> Scenario:
        # the power limit sets only the predicted compute's speed: beside a measured compute
        # time it was silently ignored (strategy_step, the CLI and the step sweep refuse it)
        from .strategy.compute import speed_beside_measured

        if self.mfu is not None and self.compute_time_s is not None:  # as the CLI and sweep
            raise ValueError(speed_beside_measured("mfu"))
        if self.power_limit_w is not None and self.compute_time_s is not None:
            raise ValueError(speed_beside_measured())
        return self

    @property
    def compute_precision(self) -> str:
        """The matmuls' compute precision of the step: ``precision``, else the recipe's (fp8
        for ``fp8-mixed``; :func:`costmodel.strategy.step.compute_precision`)."""
        from .strategy.step import compute_precision

        return compute_precision(self.precision, self.recipe)

    @property
    def strategy_name(self) -> str:
        """The strategy: ``strategy``, else the ZeRO stage's (0 ddp, 1 zero1, 2 zero2, 3 fsdp)."""
        from .strategy.layout import STRATEGY_OF_STAGE

        return self.strategy or STRATEGY_OF_STAGE[self.zero_stage]

    @property
    def effective_bucket_cap_bytes(self) -> float:
        """The gradient bucket size [B] this scenario's strategy uses: ``bucket_cap_bytes`` if
        given, else the strategy's default (ddp 25 MiB; zero1/zero2 DeepSpeed's 5e8 elements of
        the gradient dtype; :func:`costmodel.strategy.layout.bucket_cap_bytes_for`)."""
        from .memory import get_recipe
        from .strategy.layout import DTYPE_BYTES, bucket_cap_bytes_for

        grad = (
            DTYPE_BYTES[self.grad_dtype]
            if self.grad_dtype
            else float(get_recipe(self.recipe).gradient_bytes)
        )
        return bucket_cap_bytes_for(self.strategy_name, self.bucket_cap_bytes, grad)

    @property
    def ddp_bucket_cap_bytes(self) -> float:
        """DDP's bucket_cap [B] (the lesson's DDP step and the bucket_cap advisor):
        ``bucket_cap_bytes`` if given, else PyTorch's 25 MiB."""
        from .strategy.layout import bucket_cap_bytes_for

        return bucket_cap_bytes_for("ddp", self.bucket_cap_bytes, 1.0)

    def layout(self, nodes: int | None = None) -> Any:
        """The :class:`costmodel.strategy.Layout` this scenario runs (memory, step and cost)."""
        c = self._validated_cluster() if nodes is None else self.build_cluster(nodes)
        return self._layout_on(c)

    def _layout_on(self, c: Any) -> Any:
        """The layout of this scenario on cluster ``c`` (its ranks and GPUs per node)."""
        from .strategy.layout import make_layout

        return make_layout(
            strategy=self.strategy_name,
            ranks=int(c.ranks),
            gpus_per_node=int(c.gpus_per_node),
            group_size=self.group_size,
            reshard_after_forward=self.reshard_after_forward,
            gradient_as_bucket_view=self.gradient_as_bucket_view,
            param_dtype=self.param_dtype,
            grad_dtype=self.grad_dtype,
            bucket_cap_bytes=self.bucket_cap_bytes,
            comm_contention=self.comm_contention,
        )

    def strategy_step(
        self,
        cluster: Any = None,
        *,
        timeline: bool = True,
        band: bool = True,
        timer: Any = None,
    ) -> Any:
        """This scenario's step under its strategy: :func:`costmodel.strategy.strategy_step`
        (memory from the same layout)."""
        from ._checks import flag
        from .strategy import strategy_step

        timeline, band = flag("timeline", timeline), flag("band", band)
        c = self._validated_cluster() if cluster is None else cluster
        return strategy_step(
            None if self.arch else self.params,
            arch=self.arch,
            cluster=c,
            nodes=int(c.nodes),
            layout=self.layout() if cluster is None else None,
            **self._step_options(),
            timeline=timeline,
            band=band,
            timer=timer,
        )

    def _step_options(self) -> dict[str, Any]:
        """The strategy, layout, batch and compute fields every strategy call of this scenario
        passes (:func:`costmodel.strategy.strategy_step`, ``fit_suggestions``): one list."""
        return {
            "strategy": self.strategy_name,
            "group_size": self.group_size,
            "reshard_after_forward": self.reshard_after_forward,
            "gradient_as_bucket_view": self.gradient_as_bucket_view,
            "param_dtype": self.param_dtype,
            "grad_dtype": self.grad_dtype,
            "bucket_cap_bytes": self.bucket_cap_bytes,
            "comm_contention": self.comm_contention,
            "recipe": self.recipe,
            "micro_batch": self.local_batch,
            "sequence_length": self.sequence_length,
            "accumulation": self.accumulation,
            "no_sync": self.no_sync,
            "mfu": None if self.compute_time_s is not None else self.mfu,
            "compute_time_s": self.compute_time_s,
            "precision": self.precision,
            "recompute": self.recompute,
            "flash_attention": self.flash_attention,
            "loss": self.loss,
            "model": self.model,
            "cuda_context_bytes": self.cuda_context_bytes,
            "fragmentation": self.fragmentation,
        }

    def _micro_compute_s(self) -> float:
        """Compute per micro-batch of :meth:`strategy_step` [s] (the one compute road: the
        fitted efficiency, calibrated to one node, or the given MFU); node-count independent."""
        t = _MICRO_S.get(self)
        if t is None:
            st = self.strategy_step(timeline=False, band=False)
            t = _MICRO_S[self] = float(st.compute_s) / self.accumulation
        return t

    def _validated_cluster(self) -> Any:
        """:meth:`build_cluster`, built once while this scenario (or an equal one) lives.

        Pydantic reruns after-validators on an instance passed to ScenarioResult, and
        evaluate() needs the cluster again: the preset is loaded once, not three times.
        """
        c = _VALIDATED.get(self)
        if c is None:
            c = _VALIDATED[self] = self.build_cluster()
        return c

    # --- wiring ------------------------------------------------------------------------------
    def build_cluster(self, nodes: int | None = None) -> Any:
        """The :class:`costmodel.hardware.Cluster` of this scenario (optionally resized)."""
        from . import presets

        n = self.nodes if nodes is None else nodes
        c = presets.cluster(
            self.cluster, nodes=n, power_limit_w=self.power_limit_w, field="cluster"
        )
        if self.gpus_per_node is not None and self.gpus_per_node != c.gpus_per_node:
            c = c.with_gpus_per_node(self.gpus_per_node)
        return c

    def _step(
        self,
        cluster: Any,
        *,
        compute_scale: float = 1.0,
        accumulation: int | None = None,
        gradient_bytes: float | None = None,
        comm_speedup: float = 1.0,
        allreduce_fn: Callable[[Any], Any] | None = None,
        timeline: bool = True,
        micro_compute_s: float | None = None,
    ) -> Any:
        """Call ddp.ddp_step with this scenario's fields, one of them optionally changed.

        ``compute_scale`` multiplies the compute per micro-batch (the measured time, or the
        tokens per GPU when compute comes from the MFU): what a larger batch or longer sequences
        do. ``comm_speedup`` divides every bucket's all-reduce time. ``allreduce_fn`` (bytes ->
        s) defaults to ``predict.allreduce_time_fn`` of ``cluster``; ``timeline=False`` skips
        the timeline (searches and the scaling table read only the totals).
        ``micro_compute_s``: the compute per micro-batch [s] when the caller has it (the
        bucket_cap sweep passes the scenario's own to every cap: the compute does not depend
        on the buckets), else :meth:`_micro_compute_s`.
        """
        from . import ddp, predict
        from .memory import get_recipe

        acc = self.accumulation if accumulation is None else accumulation
        fn = allreduce_fn or predict.allreduce_time_fn(
            cluster, nodes=cluster.nodes, model=self.model
        )
        if comm_speedup != 1.0:
            base_fn = fn

            def fn(message_bytes: Any, _f: Callable[[Any], Any] = base_fn) -> Any:
                return _f(message_bytes) / comm_speedup

        kwargs: dict[str, Any] = {}
        arch = self.architecture()
        if arch is not None:
            kwargs["layer_param_counts"] = _tensor_counts(arch)
        else:  # a bare count: the tensors of a transformer of that size (the engine's too)
            shape = _shape_of(float(self.params))
            if shape is not None:
                k = float(self.params) / float(shape.params)
                kwargs["layer_param_counts"] = _tensor_counts(shape, k)
        if self.compute_time_s is not None:
            kwargs["compute_time_s"] = self.compute_time_s * compute_scale
        else:  # the engine's compute per micro-batch (fitted efficiency or the given MFU)
            micro = self._micro_compute_s() if micro_compute_s is None else micro_compute_s
            kwargs["compute_time_s"] = micro * compute_scale
        bw = (
            cluster.inter_bandwidth_bytes_per_s
            if cluster.nodes > 1
            else cluster.intra_bandwidth_bytes_per_s
        )
        grad = get_recipe(self.recipe).gradient_bytes if gradient_bytes is None else gradient_bytes
        if "layer_param_counts" in kwargs and int(cluster.ranks) > 1:
            # the engine's DDP host overhead, per tensor; one rank is plain training, no DDP
            # wrapper, none (costmodel.strategy.step._ddp_overhead_s)
            from .compute import ddp_step_overhead_s

            kwargs["step_overhead_s"] = ddp_step_overhead_s(len(kwargs["layer_param_counts"]))
        # the optimizer step and the synchronisation loss after the last all-reduce, as the
        # engine adds them
        from .strategy.layout import make_layout
        from .strategy.step import step_tail_s

        lay = make_layout(strategy="ddp", ranks=int(cluster.ranks))
        tail = step_tail_s(
            float(self.params), lay, self.recipe, cluster.gpu, acc * kwargs["compute_time_s"]
        )
        return ddp.ddp_step(
            self.params,
            cluster.ranks,
            bandwidth_bytes_per_s=float(bw),
            gradient_bytes_per_param=grad,
            bucket_cap_bytes=self.ddp_bucket_cap_bytes,
            accumulation=acc,
            no_sync=self.no_sync,
            allreduce_time_fn=fn,
            timeline=timeline,
            comm_contention=self.comm_contention,
            tail_s=tail,
            **kwargs,
        )

    def fit_suggestions(self) -> Any:
        """What makes this scenario fit: :func:`costmodel.strategy.advisor.fit_suggestions`
        with every field of this scenario (the CLI and the step page call this)."""
        from .strategy.advisor import fit_suggestions

        return fit_suggestions(
            None if self.arch else self.params,
            arch=self.arch,
            cluster=self._validated_cluster(),
            nodes=self.nodes,
            **self._step_options(),
            band=False,
        )

    # --- side by side and the bucket_cap advisor ----------------------------------------------
    def with_changes(
        self, changes: str | Mapping[str, Any] | None = None, /, **fields: Any
    ) -> Scenario:
        """This scenario with some fields changed: the second configuration of a comparison.

        ``changes`` is a dict of fields or the CLI's text form ``"nodes=16,zero_stage=3"``
        (``key=value`` pairs, comma-separated; keys are field names, ``-`` read as ``_``, plus
        the CLI's short names ``zero``, ``seq``, ``bucket``, ``compute_time``; values in the
        fields' own unit grammar: ``params=70B``, ``bucket_cap_bytes=50MiB``; booleans only
        ``true``/``false``; ``none`` clears an optional field). The fields may also be given
        as keyword arguments, as to the constructor and ``model_copy``'s habit in a notebook:
        ``s.with_changes(nodes=2)`` is ``s.with_changes({"nodes": 2})`` (a keyword is a dict's
        entry: field names only, values as the constructor reads them); with a dict or text
        too, a field in both is refused rather than one silently chosen. Changing ``arch`` drops this
        scenario's ``params`` (the architecture gives them; ``arch=none`` keeps the count as a
        bare parameter count), and changing ``params`` drops ``arch``. Changing ``cluster``
        drops ``power_limit_w`` and ``gpus_per_node`` (A's cap is of A's GPUs and A's slice of
        A's node; B runs at its datasheet power on its whole nodes unless given them). A
        ``cm.Cluster`` for ``cluster`` sets its nodes, slice and power cap too (as the
        constructor reads one). The result is validated as any Scenario.
        """
        if changes is None:
            kw: dict[str, Any] = {}
        elif isinstance(changes, str):
            kw = _parse_changes(changes)
        elif isinstance(changes, Mapping):
            kw = dict(changes)
        else:
            raise TypeError(
                f"changes: expected a dict of fields or text such as 'nodes=16,zero_stage=3' "
                f"(or keyword arguments: with_changes(nodes=16)), got {changes!r}"
            )
        if twice := sorted(set(kw) & set(fields)):
            raise ValueError(
                f"changes: {', '.join(twice)} given both in `changes` and as a keyword; give "
                "each field once"
            )
        kw.update(fields)
        from .hardware import Cluster

        if isinstance(kw.get("cluster"), Cluster):  # B's whole cluster: its nodes, slice, cap
            kw = {
                **kw,
                "gpus_per_node": None,
                "power_limit_w": None,
                **_cluster_fields(kw["cluster"], kw),
            }
        unknown = sorted(set(kw) - set(type(self).model_fields))
        if unknown:
            raise ValueError(
                f"changes: unknown {units.noun_for(len(unknown), 'field')} {', '.join(unknown)}; allowed: "
                f"{', '.join(type(self).model_fields)}"
            )
        data = self.model_dump()
        if "strategy" in kw and "zero_stage" not in kw:
            data.pop("zero_stage")  # the strategy sets it
        elif "zero_stage" in kw and "strategy" not in kw:
            data["strategy"] = None  # a bare stage names its strategy
        if kw.get("strategy") not in (None, "hsdp") and "group_size" not in kw:
            data["group_size"] = None
        if kw.get("strategy") not in (None, "fsdp", "hsdp") and "reshard_after_forward" not in kw:
            data["reshard_after_forward"] = None
        stage_off_ddp = "strategy" not in kw and str(kw.get("zero_stage", 0)) != "0"
        off_ddp = kw.get("strategy") not in (None, "ddp") or stage_off_ddp
        if off_ddp and "gradient_as_bucket_view" not in kw:
            data["gradient_as_bucket_view"] = None
        if kw.get("arch") is not None and "params" not in kw:
            data.pop("params")  # arch=none keeps A's parameter count as a bare count
        if "params" in kw and "arch" not in kw:
            data["arch"] = None
        if kw.get("cluster", self.cluster) != self.cluster:
            # A's cap is of A's GPUs and A's slice of A's node: B's other cluster runs at its
            # datasheet power on its whole nodes, as the step page's B (--vs kept a 4-of-8
            # slice, so B ran on half the GPUs the page's B did, for the same change)
            for mine in ("power_limit_w", "gpus_per_node"):
                if mine not in kw:
                    data[mine] = None
        data.update(kw)
        b = Scenario(**data)
        t = self.compute_time_s
        if (
            t is not None
            and "compute_time_s" not in kw
            and (gpus := measured_on_another_gpu(self, b))
        ):
            # a time measured on A's GPU is not B's: B was priced at A's speed and B's price
            raise ValueError(
                measured_on_another_gpu_refusal(*gpus, units.format_duration(float(t)))
            )
        return b

    def changes_from(self, base: Scenario) -> dict[str, Any]:
        """This scenario's value of every field in which it differs from ``base``, JSON-ready,
        in field order: what a comparison's B is beside A, whatever set it (the ``--vs``
        changes as validated, what they carry along, such as the ZeRO stage of a strategy or
        the parameters of an architecture, and what was solved for B, such as its micro-batch
        and accumulation at A's global batch). ``scenario --vs --json`` writes it as
        ``b_changes``.

        >>> a = Scenario(params=7e9, nodes=2)
        >>> a.with_changes("nodes=4,strategy=fsdp").changes_from(a)
        {'zero_stage': 3, 'strategy': 'fsdp', 'nodes': 4}
        """
        mine, theirs = self.model_dump(mode="json"), base.model_dump(mode="json")
        return {k: v for k, v in mine.items() if theirs.get(k) != v}

    def bucket_advice(self, caps_bytes: Any = None) -> Any:
        """The bucket_cap that minimises the exposed communication of this scenario's step.

        Sweeps ``bucket_cap`` over ``caps_bytes`` (default 1 to 200 MiB in 1 MiB steps,
        :data:`costmodel.ddp.ADVICE_CAPS_BYTES`, plus this scenario's own cap,
        :attr:`ddp_bucket_cap_bytes`, where it is off that grid: 25.5 MiB or 300 MiB is
        priced exactly, so "exposed at the current cap" is always there to compare with the
        best; a tie keeps it) with every other input of this scenario
        (cluster, collective model, tensor list, compute, contention) through
        :func:`costmodel.ddp.bucket_cap_sweep`; the all-reduce time of each distinct bucket
        size is predicted once (:func:`_memoized`). Returns a
        :class:`costmodel.ddp.BucketCapSweep` (``best_cap_bytes``, the curve per cap).

        DDP only: the sweep re-runs DDP's bucketed all-reduce, so for another strategy it would
        describe a different step (a ValueError says so, :func:`bucket_advice_refusal`).
        """
        from . import ddp

        why = bucket_advice_refusal(self.strategy_name)
        if why is not None:
            raise ValueError(why)
        clusters = _Clusters(self)
        base = clusters.base
        fn = clusters.allreduce_fn(int(base.nodes))
        now = float(self.ddp_bucket_cap_bytes)
        if caps_bytes is None and now not in ddp.ADVICE_CAPS_BYTES:
            caps_bytes = sorted((*ddp.ADVICE_CAPS_BYTES, now))
        caps = ddp.advice_caps(caps_bytes)
        # one compute for every cap: forward and backward do not depend on the buckets (the
        # engine's own figure differs from cap to cap only in its last bits, by how the
        # backward is cut at the buckets' ready points); computing it per cap ran the engine's
        # whole step once more for each of the 200 caps
        micro = None if self.compute_time_s is not None else self._micro_compute_s()
        steps = [
            self.model_copy(update={"bucket_cap_bytes": cap})._step(
                base, allreduce_fn=fn, timeline=False, micro_compute_s=micro
            )
            for cap in caps.tolist()
        ]
        return ddp.BucketCapSweep.from_steps(
            caps, steps, prefer_cap_bytes=self.ddp_bucket_cap_bytes
        )

    # --- evaluation --------------------------------------------------------------------------
    def evaluate(
        self, scaling: bool = True, flips: bool = True, timeline: bool = True
    ) -> ScenarioResult:
        """Every figure the app, the CLI and the reports show for this scenario.

        ``timeline=False`` leaves ``ScenarioResult.timeline`` empty (every total is the same):
        for callers that read only the flips or the scaling table, since a large model's step
        has thousands of bucket intervals.
        """
        from . import batch
        from ._checks import flag
        from .strategy.advisor import nothing_fits_note
        from .strategy.memory import layout_max_params, strategy_memory
        from .strategy.step import scaling_efficiency

        scaling, flips = flag("scaling", scaling), flag("flips", flips)
        timeline = flag("timeline", timeline)
        clusters = _Clusters(self)
        c = clusters.base
        ranks = int(c.ranks)
        lay = self.layout()
        st = self.strategy_step(timeline=timeline)
        mem = st.memory
        gpu_bytes = float(c.gpu.memory_bytes)
        total = float(mem.total_bytes)
        gb = int(batch.global_batch(self.local_batch, ranks, self.accumulation))
        tokens = gb * self.sequence_length
        # a bare count's note as the step words it (with the transformer it priced)
        sized = next((n for n in st.notes if n.startswith("activations:")), None)
        notes = [  # the step's notes carry the model's size (training.scale_notes)
            sized or mem.base.activations_note,
            f"compute per micro-batch: {st.compute_label}",
            *(n for n in st.notes if n not in (mem.base.activations_note, sized)),
        ]
        fits = total <= gpu_bytes
        if not fits:
            shown, card = units.format_bytes_pair(total, gpu_bytes)
            notes.insert(
                0,
                f"DOES NOT FIT: {shown} per GPU > {card} ({lay.name}); the step and any cost below are "
                "for a configuration that cannot run (`fit_suggestions` lists the changes that "
                "make it fit)",
            )
        is_ddp = lay.strategy == "ddp"
        if is_ddp:
            # the bucket search, flips and scaling table reuse DDP's own road (same numbers)
            step = self._step(c, allreduce_fn=clusters.allreduce_fn(int(c.nodes)), timeline=False)
            # the flips test the lesson's balance (communication vs compute totals)
            flip_list = self._flips(clusters, step) if flips else []
        else:
            step = st
            flip_list = []
        reachable = [f for f in flip_list if f.flips]
        best = min(reachable, key=lambda f: f.relative_change) if reachable else None
        if flip_list and balance(st.comm_s, st.compute_s) != str(st.bound):
            # the verdict set by the exposed share (comms-bound, the all-reduce shorter than the
            # compute): the flips move the balance, so none is "the smallest change that flips
            # the verdict" (it read "1.08x less compute makes it comms-bound" of a comms-bound
            # step); `scenario` and the step page say so, the list stays
            best = None
        # the largest bare count beside these activations, with the layout's buffers and
        # gathered units: `costmodel memory`'s figure (the lesson's affine state alone said
        # 228B for llama-3.1-8b's activations under fsdp on 64 H100s where memory said 169B)
        over: dict[str, Any] = {
            "cuda_context_bytes": self.cuda_context_bytes,
            "fragmentation": self.fragmentation,
        }
        mp = layout_max_params(
            gpu_bytes, lay, recipe=self.recipe, activations_bytes=mem.activations_bytes, **over
        )
        if mp <= 0.0:
            # what sits beside a model of no parameters: the activations, the CUDA context and
            # their fragmentation (costmodel memory's figure: the total at P = 0)
            fixed = strategy_memory(
                lay, 0.0, recipe=self.recipe, activations_bytes=mem.activations_bytes, **over
            ).total_bytes
            notes.append(
                nothing_fits_note(
                    gpu_bytes,
                    float(fixed),
                    mem.activations_bytes,
                    units.format_tokens_by_micro_batch(self.sequence_length, self.local_batch),
                )
            )
        lo, hi = st.step_time_band_s
        from .strategy.step import comm_calls_by_kind

        return ScenarioResult(
            scenario=self,
            cluster_name=self.cluster,
            nodes=int(c.nodes),
            gpus_per_node=int(c.gpus_per_node),
            ranks=ranks,
            **lay.identity(),
            memory_parts_bytes={k: float(v) for k, v in mem.parts().items()},
            memory_total_bytes=total,
            gpu_memory_bytes=gpu_bytes,
            fits=fits,
            max_params=mp,
            global_batch=gb,
            tokens_per_step=tokens,
            compute_s=float(st.compute_s),
            comm_s=float(st.comm_s),
            comm_by_kind_s={k: float(v) for k, v in st.comm_by_kind_s.items()},
            comm_calls_notes={
                k: v["note"] for k, v in comm_calls_by_kind(st, c, self.model).items() if v["note"]
            },
            exposed_comm_s=float(st.exposed_comm_s),
            optimizer_s=float(getattr(st, "optimizer_s", 0.0)),
            sync_s=float(getattr(st, "sync_s", 0.0)),
            host_overhead_s=float(st.host_overhead_s),
            step_time_s=float(st.step_time_s),
            step_time_lo_s=float(lo),
            step_time_hi_s=float(hi),
            band_extrapolated=bool(st.band_extrapolated),
            band_extrapolation=str(st.band_extrapolation),
            band_extrapolated_beyond=str(st.band_extrapolated_beyond),
            bound=str(st.bound),
            efficiency=float(st.efficiency),
            one_gpu_step_s=float(st.one_gpu_step_s),
            compute_share=float(st.compute_share),
            # every collective hidden under the compute: max(compute, comm) plus what overlap
            # cannot hide (the optimizer step, the wait for the slowest rank, DDP's host time)
            perfect_overlap_efficiency=scaling_efficiency(
                st.one_gpu_step_s,
                max(st.compute_s, st.comm_s) + st.optimizer_s + st.sync_s + st.host_overhead_s,
            ),
            comm_contention=float(lay.comm_contention),
            tokens_per_s=tokens / float(st.step_time_s),
            timeline=[_interval(i) for i in st.timeline],
            flips=flip_list,
            flip=best,
            scaling=self._scaling(clusters, step if is_ddp else None) if scaling else [],
            notes=notes,
            compute_source=st.compute_source,
            compute_label=st.compute_label,
            compute_band=(float(st.compute_band[0]), float(st.compute_band[1])),
            gpu_name=str(c.gpu.name),
        )

    def _flips(self, clusters: _Clusters, step: Any) -> list[Flip]:  # noqa: C901
        """The smallest change of each kind that flips the comm-vs-compute balance, the lesson's
        verdict (re-evaluating the step); the headline verdict also counts the exposed share.

        The verdict is ``comm_s > compute_s`` (``ddp.DDPStep.bound``). Compute is linear in the
        compute per micro-batch and independent of the network; the all-reduce sum is linear in
        ``1 / comm_speedup`` and independent of compute; with ``no_sync`` compute is linear in
        the accumulation ``A`` and the all-reduce (once per step) does not depend on it. So every
        threshold follows from this one step: ``comm_s / compute_s`` (comms-bound: that much
        more compute or a that much faster all-reduce flips it), ``compute_s / comm_s``
        (compute-bound: that much less compute or a that much slower all-reduce), and
        ``A = ceil(comm_s / (compute_s / A0))``. Each is then confirmed by re-running
        ddp.ddp_step just above and just below it (:func:`_solve_factor`, :func:`_solve_int`),
        with a bisection if the step ever stops being linear. Only the fp8-gradient flip needs a
        new all-reduce prediction (other bucket sizes).
        """
        bound = str(step.bound)
        target = "compute" if bound == "comms" else "comms"
        cluster = clusters.base
        fn = clusters.allreduce_fn(int(cluster.nodes))

        def flips_at(**kw: Any) -> bool:
            return str(self._step(cluster, allreduce_fn=fn, timeline=False, **kw).bound) == target

        out: list[Flip] = []
        grow = bound == "comms"  # comms-bound: more compute or faster network flips it
        comm, compute = float(step.comm_s), float(step.compute_s)
        if grow:
            ratio = comm / compute
        else:
            ratio = compute / comm if comm > 0 else math.inf
        # 1. compute per micro-batch (a larger per-GPU batch, longer sequences)
        k = _solve_factor(lambda f: flips_at(compute_scale=f if grow else 1 / f), ratio)
        if k is None:
            out.append(
                Flip(
                    parameter="compute_scale",
                    current=1.0,
                    value=None,
                    flips=False,
                    relative_change=math.inf,
                    description=f"no change of compute within {MAX_SEARCH_FACTOR:g}x flips it",
                )
            )
        elif grow:
            lb = math.ceil(self.local_batch * k - 1e-9)
            out.append(
                Flip(
                    parameter="compute_scale",
                    current=1.0,
                    value=k,
                    flips=True,
                    relative_change=k - 1,
                    description=f"{k:.3g}x more compute per step: e.g. per-GPU batch "
                    f"{self.local_batch} -> {lb}, or longer sequences",
                )
            )
        else:
            lb = math.floor(self.local_batch / k + 1e-9)
            hint = (
                f"per-GPU batch {self.local_batch} -> {lb}"
                if lb >= 1
                else "a faster GPU or a smaller model"
            )
            out.append(
                Flip(
                    parameter="compute_scale",
                    current=1.0,
                    value=1 / k,
                    flips=True,
                    relative_change=1 - 1 / k,
                    description=f"{k:.3g}x less compute per step makes it comms-bound "
                    f"(e.g. {hint})",
                )
            )
        # 2. network speed (all-reduce k times faster or slower)
        k = _solve_factor(lambda f: flips_at(comm_speedup=f if grow else 1 / f), ratio)
        if k is not None:
            if grow:
                desc = (
                    f"an all-reduce {k:.3g}x faster (bandwidth ~{k:.3g}x, or in-network reduction)"
                )
            else:
                desc = f"an all-reduce {k:.3g}x slower makes it comms-bound"
            out.append(
                Flip(
                    parameter="comm_speedup" if grow else "comm_slowdown",
                    current=1.0,
                    value=k,
                    flips=True,
                    relative_change=k - 1,  # |value/current - 1|: the factor k, either way
                    description=desc,
                )
            )
        # 3. fp8 gradients (half of bf16's bytes on the wire) (1 B per gradient element all-reduced)
        if grow:
            from .memory import get_recipe

            current = float(get_recipe(self.recipe).gradient_bytes)
            ok = current > 1.0 and flips_at(gradient_bytes=1.0)
            out.append(
                Flip(
                    parameter="gradient_bytes_per_param",
                    current=current,
                    value=1.0,
                    flips=ok,
                    relative_change=1 - 1 / current if ok else math.inf,
                    description="fp8 gradients (1 B/param) "
                    + ("flip it" if ok else "are not enough"),
                )
            )
        # 4. gradient accumulation with no_sync
        micro_s = compute / int(step.accumulation)
        ratio = comm / int(step.syncs) / micro_s if micro_s > 0 else math.inf
        if grow and self.no_sync and ratio < 1e15:  # else no accumulation count can flip it
            guess = math.ceil(ratio)
            acc = _solve_int(lambda v: flips_at(accumulation=v), self.accumulation, guess)
            if acc is not None:
                out.append(
                    Flip(
                        parameter="accumulation",
                        current=self.accumulation,
                        value=acc,
                        flips=True,
                        relative_change=abs(acc / self.accumulation - 1),
                        description=f"accumulate {acc} micro-batches per step with no_sync",
                    )
                )
        return out

    def _scaling(self, clusters: _Clusters | None = None, step: Any = None) -> list[ScalingRow]:
        """Step time and efficiency at 1, 2, 4, ... nodes (and this scenario's node count),
        each a node count the cluster can have (a box with no network: one node only).

        ``step`` (this scenario's own step) is reused for its node count. ddp goes through
        ``ddp.ddp_step`` (the same engine and numbers, with the memoized all-reduce), the
        sharded strategies through :meth:`strategy_step`.
        """
        from .predict import CalibrationWarning

        clusters = clusters or _Clusters(self)
        counts = sorted({2**k for k in range(11) if 2**k <= max(16, 2 * self.nodes)} | {self.nodes})
        rows: list[ScalingRow] = []
        # a calibration's word on the other node counts' rows (fitted across nodes only: the
        # 1-node row is the uncalibrated model's), said once naming those rows: alone it read
        # as about the scenario's own prediction, which it is not
        other_rows: dict[tuple[str, type[Warning]], dict[int, None]] = {}
        for n in counts:
            if n == self.nodes:
                self._scaling_row(n, clusters, step, rows)
                continue
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                self._scaling_row(n, clusters, step, rows)
            for w in caught:
                if issubclass(w.category, CalibrationWarning):
                    other_rows.setdefault((str(w.message), w.category), {})[n] = None
                else:  # any other warning as it was raised
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        for (text, category), at in other_rows.items():
            ns = list(at)  # a row warned once per collective of its step: named once
            counted = (
                units.format_counted(ns[0], "node")
                if len(ns) == 1
                else (f"{', '.join(str(k) for k in ns)} nodes")
            )
            row = "row" if len(ns) == 1 else "rows"
            warnings.warn(f"the scaling table's {row} at {counted}: {text}", category, stacklevel=3)
        return rows

    def _scaling_row(self, n: int, clusters: _Clusters, step: Any, rows: list[ScalingRow]) -> None:
        """The scaling row at ``n`` nodes appended to ``rows`` (:meth:`_scaling`); none where
        the cluster cannot have ``n`` nodes or the layout cannot be built there."""
        from .strategy.step import verdict

        if n > SCALING_MAX_NODES:
            return
        try:
            c = clusters.cluster(n)
        except ValueError:  # a node count this cluster cannot have (a box with no network)
            return
        if self.strategy_name != "ddp":
            try:
                s = self.strategy_step(c, timeline=False, band=False)
            except ValueError:  # e.g. an hsdp group that does not divide this node count
                return
        else:
            s = (
                step
                if step is not None and n == self.nodes
                else self._step(c, allreduce_fn=clusters.allreduce_fn(n), timeline=False)
            )
        tokens = int(c.ranks) * self.local_batch * self.accumulation * self.sequence_length
        # memory from the layout at this node count (sharding changes with it): a step of
        # a node count that does not fit is said so, as the scenario's own step is
        mem = float(s.memory_bytes) if hasattr(s, "memory_bytes") else self._memory_at(c)
        rows.append(
            ScalingRow(
                nodes=n,
                ranks=int(c.ranks),
                step_time_s=float(s.step_time_s),
                comm_s=float(s.comm_s),
                exposed_comm_s=float(s.exposed_comm_s),
                efficiency=float(s.efficiency),
                compute_share=float(s.compute_share),
                bound=verdict(
                    float(s.compute_s),
                    float(s.comm_s),
                    float(s.exposed_comm_s),
                    float(s.step_time_s),
                ),
                tokens_per_s=tokens / float(s.step_time_s),
                memory_bytes=mem,
                fits=mem <= float(c.gpu.memory_bytes),
            )
        )

    def _memory_at(self, c: Any) -> float:
        """Memory per GPU [B] of this scenario's layout on cluster ``c`` (its node count):
        :func:`costmodel.strategy.memory.strategy_memory`, as the step's own."""
        from .strategy.memory import strategy_memory

        lay = self._layout_on(c)
        return float(
            strategy_memory(
                lay,
                None if self.arch else float(self.params),
                arch=self.arch,
                recipe=self.recipe,
                sequence_length=self.sequence_length,
                micro_batch=self.local_batch,
                flash_attention=self.flash_attention,
                recompute=self.recompute,
                loss=self.loss,
                cuda_context_bytes=self.cuda_context_bytes,
                fragmentation=self.fragmentation,
            ).total_bytes
        )


def bucket_advice_refusal(strategy: str) -> str | None:
    """Why the bucket_cap advisor has no answer for ``strategy`` (None for ddp, the one it
    models: it sweeps DDP's bucketed all-reduce)."""
    if strategy == "ddp":
        return None
    what = (
        "gathers and reduces per wrapped unit (a transformer block), not in buckets"
        if strategy in ("fsdp", "hsdp")
        else "reduce-scatters and all-gathers in DeepSpeed's buckets, which it does not sweep"
    )
    return (
        f"bucket_advice: the bucket_cap advisor sweeps DDP's bucketed all-reduce; {strategy} "
        f"{what}; allowed: strategy ddp"
    )


def _solve_factor(
    flips: Callable[[float], bool], guess: float, rel_tol: float = FLIP_REL_TOL
) -> float | None:
    """Smallest factor >= 1 for which flips(factor), to rel_tol, or None beyond the cap.

    ``guess`` is the closed-form threshold; it is accepted when flips() holds just above it and
    fails just below it (two evaluations), otherwise the answer comes from a bisection.
    """
    if math.isfinite(guess) and guess >= 1.0:
        hi, lo = guess * (1 + rel_tol), guess * (1 - rel_tol)
        if hi > MAX_SEARCH_FACTOR:
            if not flips(MAX_SEARCH_FACTOR):
                return None
        elif flips(hi) and (lo <= 1.0 or not flips(lo)):
            return hi
    elif guess == math.inf and not flips(MAX_SEARCH_FACTOR):
        return None
    return _search_factor(flips, rel_tol)


def _solve_int(flips: Callable[[int], bool], start: int, guess: int) -> int | None:
    """Smallest integer >= start for which flips() (monotone), or None beyond the cap.

    ``guess`` is the closed-form answer; it (or a neighbour, for rounding) is accepted when
    flips() holds there and fails one below, otherwise :func:`_search_int` decides.
    """
    cap = int(start * MAX_SEARCH_FACTOR)
    a = max(start, guess)
    if a > cap:
        if not flips(cap):
            return None
    else:
        for v in (a, a - 1, a + 1):
            if start <= v <= cap and flips(v) and (v == start or not flips(v - 1)):
                return v
    return _search_int(flips, start)


def _search_int(flips: Callable[[int], bool], start: int) -> int | None:
    """Smallest integer >= start for which flips() (monotone), or None beyond the cap."""
    hi = start
    while not flips(hi):
        if hi >= start * MAX_SEARCH_FACTOR:
            return None
        hi *= 2
    lo = max(start, hi // 2)
    if lo == hi:
        return hi
    while hi - lo > 1:  # flips(hi) is True; flips(lo) is False
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if flips(mid) else (mid, hi)
    return hi


def _search_factor(flips: Callable[[float], bool], rel_tol: float = 0.01) -> float | None:
    """Smallest factor >= 1 for which flips(factor), to rel_tol, or None below the cap."""
    if not flips(MAX_SEARCH_FACTOR):
        return None
    lo, hi = 1.0, MAX_SEARCH_FACTOR
    while hi / lo > 1 + rel_tol:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if flips(mid) else (mid, hi)
    return hi


_VALIDATED: weakref.WeakKeyDictionary[Scenario, Any] = weakref.WeakKeyDictionary()
"""Scenario -> its Cluster (:meth:`Scenario._validated_cluster`); entries die with the scenario."""


_COUNT_LIMITS = (
    "nodes", "local_batch", "accumulation", "sequence_length", "params", "group_size"
)  # fmt: skip
"""Scenario's counts with a limit in :data:`costmodel._limits.LIMITS` of the same range: a
number out of it is refused in that limit's words (``nodes: must be a whole number in
1..1,000,000, got 0``), the CLI's and the step page's, not pydantic's one bound."""

_FIELD_LIMITS: dict[str, str] = {
    **{f: f for f in _COUNT_LIMITS},
    "zero_stage": "zero",
    "gpus_per_node": "gpus_per_node",
    "mfu": "mfu",
    "compute_time_s": "compute_time",
    "bucket_cap_bytes": "bucket",
    "comm_contention": "contention",
}
"""Every numeric field of Scenario with a bound -> its limit in :data:`costmodel._limits.LIMITS`
(the CLI option's of the same range: ``--zero``, ``--compute-time``, ``--bucket``,
``--contention``): a number out of it is refused in that limit's words, never pydantic's one
bound (``mfu: must be a model FLOP utilisation in ..., got 1.5``). The field's own ``ge``/``le``
stay the same range, for its JSON schema. ``power_limit_w``, ``cuda_context_bytes`` and
``fragmentation`` are checked by their own validators, in their own ranges."""


def _arch_name(a: Any) -> str:
    """The ``arch`` a Scenario stores for the Architecture ``a``: the preset it is, or the
    config.json it was read from (``a.source``), else ValueError saying what to give (one
    setup is data: an Architecture built in code has no name to keep).

    >>> from costmodel.architecture import load_arch
    >>> _arch_name(load_arch("llama-3.1-8b"))
    'llama-3.1-8b'
    """
    from .architecture import arch_names, load_arch

    if a.name in arch_names() and load_arch(a.name) == a:
        return str(a.name)
    source = str(a.source)
    if source.endswith(".json") and os.path.isfile(source):
        try:
            same = load_arch(source) == a
        except ValueError:
            same = False
        if same:
            return source
    raise ValueError(
        f"arch: an architecture name (`cm.arch_names()`) or a config.json path; the "
        f"Architecture {a.name!r} given is neither a preset nor a config.json as read (a "
        "Scenario keeps a name or a path): write it as a Hugging Face config.json and give "
        "its path"
    )


def _cluster_fields(c: Any, data: dict[str, Any]) -> dict[str, Any]:
    """Scenario's fields (``cluster``, ``nodes``, ``gpus_per_node``, ``power_limit_w``) of the
    Cluster ``c``, when the preset of its name built with them is ``c``; else ValueError
    saying what to give. A field also given must agree with ``c``.

    >>> from costmodel.presets import cluster
    >>> _cluster_fields(cluster("dgx-h100", nodes=2), {})
    {'cluster': 'dgx-h100', 'nodes': 2}
    """
    from . import presets

    fields: dict[str, Any] = {"cluster": str(c.name), "nodes": int(c.nodes)}
    if c.node.whole_node_gpus is not None:  # a slice of each node
        fields["gpus_per_node"] = int(c.gpus_per_node)
    if c.gpu.power_limit_w is not None:
        fields["power_limit_w"] = float(c.gpu.power_limit_w)
    try:
        same = (
            presets.cluster(
                fields["cluster"],
                nodes=fields["nodes"],
                gpus_per_node=fields.get("gpus_per_node"),
                power_limit_w=fields.get("power_limit_w"),
            )
            == c
        )
    except ValueError:
        same = False
    if not same:
        raise ValueError(
            f"cluster: a cluster preset name (`cm.presets.names('cluster')`); the Cluster "
            f"{c.name!r} given is not a preset as `cm.cluster` builds it (a Scenario keeps a "
            "name): save it as a preset file in a presets folder (`COSTMODEL_PRESETS`) and "
            "give its name"
        )
    for k, v in fields.items():
        if k != "cluster" and data.get(k) is not None and data[k] != v:
            raise ValueError(
                f"{k}: {data[k]!r} contradicts the Cluster given ({k} {v!r}); give one of them"
            )
    return fields


def _check_count_limit(field: str, value: Any) -> None:
    """``value`` of Scenario's ``field`` within its one limit (:data:`_FIELD_LIMITS`); a value
    no limit reads (None, a list, an array, text that is no number) is left to pydantic, which
    says what it got."""
    name = _FIELD_LIMITS.get(field)
    if name is None or isinstance(value, bool):
        return
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:
        value = value.item()
    if isinstance(value, int | float | str):
        LIMITS[name].check(field, value)


@functools.lru_cache(maxsize=64)
def _tensor_counts(arch: Any, scale: float = 1.0) -> np.ndarray:
    """An architecture's tensor sizes x ``scale`` as a read-only float array [-], made once per
    (architecture, scale): the DDP step read the list of Python ints (45,395 of them for
    deepseek-v3) into an array twice per step, and the bucket_cap advisor prices 100 caps.
    The same numbers as ``[float(x) * scale for x in arch.tensor_sizes]``."""
    counts = np.asarray(arch.tensor_sizes, dtype=float) * scale
    counts.flags.writeable = False
    return counts


def _shape_of(params: float) -> Any:
    from .strategy.step import _shape_of as shape_of

    return shape_of(params)


_MICRO_S: weakref.WeakKeyDictionary[Scenario, float] = weakref.WeakKeyDictionary()
"""Scenario -> its compute per micro-batch (:meth:`Scenario._micro_compute_s`)."""


class Flip(BaseModel):
    """One change that flips (or fails to flip) the compute/comms verdict."""

    model_config = ConfigDict(frozen=True)

    parameter: str = Field(description="the input changed")
    current: float | None = Field(description="its current value")
    value: float | None = Field(
        description="the value that flips the comm-vs-compute balance (None: none found)"
    )
    flips: bool = Field(description="whether this change flips the comm-vs-compute balance")
    relative_change: float = Field(
        description="|value/current - 1|, to rank the changes (inf: not reachable; null in JSON)"
    )
    description: str = Field(description="the change in words")

    @field_validator("relative_change", mode="before")
    @classmethod
    def _read_change(cls, value: Any) -> Any:
        """The JSON's null read back as the ``inf`` it stands for."""
        return math.inf if value is None else value

    @field_serializer("relative_change", when_used="json")
    def _json_change(self, value: float) -> float | None:
        """JSON has no inf: a change that does not flip the verdict (``inf`` here, ranked
        last) is null there (``scenario --fit --json`` wrote the string "inf")."""
        return value if math.isfinite(value) else None


class ScalingRow(BaseModel):
    """Step time, scaling efficiency and compute share at one node count."""

    model_config = ConfigDict(frozen=True)

    nodes: int
    ranks: int
    step_time_s: float
    comm_s: float
    exposed_comm_s: float
    efficiency: float = Field(
        description="scaling efficiency, one GPU's step over this step, T_1 / T_N [-]"
    )
    compute_share: float = Field(
        description="the compute's share of the step, compute_s / step_time_s [-] (not the "
        "scaling efficiency: a step on one GPU spends part of its time outside the compute)"
    )
    bound: str
    tokens_per_s: float
    memory_bytes: float = Field(description="memory per GPU at this node count [B]")
    fits: bool = Field(
        description="whether that memory fits the GPU: a step that does not is "
        "for a configuration that cannot run"
    )


class ScenarioResult(BaseModel):
    """Every figure of an evaluated :class:`Scenario` (all SI; JSON via ``model_dump``)."""

    model_config = ConfigDict(frozen=True)

    scenario: Scenario
    cluster_name: str
    nodes: int
    gpus_per_node: int
    ranks: int
    # the layout, named as every sweep row and --json name it (Layout.identity)
    strategy: str = Field("ddp", description="the strategy: ddp, zero1, zero2, fsdp or hsdp")
    layout: str = Field(
        "ddp", description="the layout's name: ddp, zero1, fsdp (no reshard), hsdp g=8, ..."
    )
    group_size: int | None = Field(
        None, description="hsdp's sharding group [GPUs] (the g of its name); None off hsdp"
    )
    reshard_after_forward: bool | None = Field(
        None,
        description="whether fsdp/hsdp free the gathered parameters after forward; None for "
        "a strategy without the option",
    )
    gradient_as_bucket_view: bool | None = Field(
        None,
        description="whether ddp's gradients are views into its buckets (no bucket copy); "
        "None for a strategy without the option",
    )
    memory_parts_bytes: dict[str, float] = Field(description="per part, per GPU [B]")
    memory_total_bytes: float = Field(description="per GPU [B]")
    gpu_memory_bytes: float = Field(description="the preset GPU's memory [B]")
    fits: bool
    max_params: float = Field(
        description="largest whole parameter count that fits beside these activations, with the "
        "layout's buffers and gathered units (as `costmodel memory`) [-]"
    )
    global_batch: int
    tokens_per_step: int
    compute_s: float = Field(description="compute per optimizer step [s]")
    comm_s: float = Field(description="communication time, sum over every collective [s]")
    comm_by_kind_s: dict[str, float] = Field(
        default_factory=dict, description="communication per collective kind [s]"
    )
    comm_calls_notes: dict[str, str] = Field(
        default_factory=dict,
        description="per collective kind, the calls its sum adds and one call of the same "
        "bytes (costmodel.strategy.step.comm_calls_note), where a micro-batch runs several",
    )
    exposed_comm_s: float = Field(description="communication not hidden under compute [s]")
    optimizer_s: float = Field(0.0, description="the optimizer step (on its shard) [s]")
    sync_s: float = Field(0.0, description="waiting for the slowest rank (fitted) [s]")
    host_overhead_s: float = Field(
        0.0, description="DDP's host time: hooks, bucket copies (fitted; not communication) [s]"
    )
    step_time_s: float
    step_time_lo_s: float = Field(
        float("nan"),
        description="fast end of the step's expected-error band (compute, scaling beyond one "
        "node, collectives: costmodel.strategy.band) [s]; NaN when unknown",
    )
    step_time_hi_s: float = Field(
        float("nan"), description="slow end of the step's expected-error band [s]"
    )
    band_extrapolated: bool = Field(
        False,
        description="whether the step's nodes or GPUs lie beyond the largest published run "
        "its band was checked on, or a collective of its schedule beyond the largest bundled "
        "run its own band was fitted on (costmodel.strategy.band.band_extrapolation): the band "
        "keeps its numbers, extrapolated; false where the band is unknown",
    )
    band_extrapolation: str = Field(
        "", description="the band_extrapolated note in words; empty within the measured range"
    )
    band_extrapolated_beyond: str = Field(
        "",
        description="the measured counts the step exceeds, '64 nodes', '512 GPUs', "
        "\"the collective band's 20 nodes\" (several joined by '; '); empty within the range",
    )
    comm_contention: float = Field(
        DEFAULT_COMM_CONTENTION, description="the overlap contention the step used"
    )
    bound: str = Field(description="'compute' or 'comms'")
    efficiency: float = Field(
        description="scaling efficiency: throughput on N GPUs / (N x throughput on one GPU) = "
        "one_gpu_step_s / step_time_s (costmodel.strategy.step.scaling_efficiency); 1 on one "
        "GPU, above 1 where sharding saves more per-GPU work than it costs"
    )
    one_gpu_step_s: float = Field(
        float("nan"),
        description="the same per-GPU micro-batches on one GPU: compute, the unsharded optimizer "
        "step and DDP's host time, no communication [s] (a throughput reference, not a claim "
        "that the setup fits one GPU)",
    )
    compute_share: float = Field(
        float("nan"),
        description="compute_s / step_time_s: the compute's share of the step (not the "
        "scaling efficiency; below 1 on one GPU by the optimizer step)",
    )
    perfect_overlap_efficiency: float = Field(
        1.0,
        description="scaling efficiency if every collective hid under compute (c = 0, no "
        "order): one_gpu_step_s / (max(compute, comm) + optimizer + sync + host)",
    )
    tokens_per_s: float
    timeline: list[dict[str, Any]] = Field(description="compute and comm intervals of the step")
    flips: list[Flip] = Field(description="each kind of change tried, and whether it flips")
    flip: Flip | None = Field(
        description="the smallest change that flips the comm-vs-compute balance, the lesson's "
        "verdict (None where none flips it, or "
        "where the verdict is comms-bound by the exposed share while the all-reduce is shorter "
        "than the compute: the flips move that balance, not the verdict)"
    )
    scaling: list[ScalingRow] = Field(description="step and efficiency vs node count")
    notes: list[str]
    compute_source: str = Field(
        "fitted", description="where the compute came from: fitted, mfu, measured, default-mfu"
    )
    compute_label: str = Field("", description="the compute source in words (with its band)")
    compute_band: tuple[float, float] = Field(
        (1.0, 1.0),
        description="(low, high) multipliers of the compute time that held 80% of the fitted "
        "efficiency's grouped-CV errors; (1, 1) for a measured or given compute",
    )
    gpu_name: str = Field("", description="the cluster preset's GPU (whose compute this is)")

    def scaling_frame(self) -> Any:
        """The scaling table as a pandas DataFrame."""
        import pandas as pd

        return pd.DataFrame([r.model_dump() for r in self.scaling])

    def training_cost(
        self,
        tokens: float | None = None,
        *,
        steps: float | None = None,
        usd_per_gpu_hour: float | None = None,
        price: str | None = None,
        measured_step_time_s: float | None = None,
        today: Any = None,
        usd_source: str = "user",
    ) -> Any:
        """Days, GPU-hours, cost and MFU of training ``tokens`` (or ``steps``) on this setup.

        At the predicted step time, or at ``measured_step_time_s`` (then the MFU is the one the
        measurement implies). ``usd_source``: whether ``usd_per_gpu_hour`` is the user's
        (``"user"``) or an interface's untouched placeholder (``"default"``), for the price
        note. See :func:`costmodel.training.training_cost`.
        """
        from .strategy.compute import recompute_extra
        from .strategy.step import measured_peak_flops
        from .training import training_cost

        s = self.scenario
        measured = measured_step_time_s is not None
        if not measured:  # the limit of a step time is refused as what the user set, not as
            from ._limits import LIMITS  # step_time_s, which they did not type

            hi = LIMITS["step_time"].hi
            if not self.step_time_s <= hi:
                # what the user set that makes the step long: the batch, and a given MFU or
                # compute time (an MFU of 1e-300 was told to shorten its sequence)
                given = ""
                if s.compute_time_s is not None:
                    given = (
                        f", or the given compute time ({units.format_duration(s.compute_time_s)})"
                    )
                elif s.mfu is not None:
                    given = f", or raise the given MFU ({s.mfu:.2g})"
                raise ValueError(
                    f"step time: the predicted step of "
                    f"{units.format_days(self.step_time_s / 86400)} days "
                    f"(sequence length {s.sequence_length:,} x micro-batch {s.local_batch:,} x "
                    f"accumulation {s.accumulation:,} per GPU) is past the {hi:,.0f} s "
                    f"({hi / 86400:.1f} days) a training run is costed for; shorten the "
                    f"sequence, the micro-batch or the accumulation{given}"
                )
        cost = training_cost(
            tokens,
            steps=steps,
            tokens_per_step=float(self.tokens_per_step),
            step_time_s=(
                measured_step_time_s if measured_step_time_s is not None else self.step_time_s
            ),
            ranks=self.ranks,
            usd_per_gpu_hour=usd_per_gpu_hour,
            price=price,
            flops_per_token=s.flops_per_token(),
            # the peak the step's measured compute time is held to: one rule for both
            peak_flops=measured_peak_flops(s._validated_cluster().gpu, s.compute_precision),
            measured=measured,
            gpu=s._validated_cluster().gpu.name,  # a price is for one GPU: never another's
            today=today,
            params=float(s.params),
            step_time_band_s=(
                None if measured else (float(self.step_time_lo_s), float(self.step_time_hi_s))
            ),
            usd_source=usd_source,
            node=s._validated_cluster().node,  # a node slice is billed whole
            # a refused measurement is named as the argument typed, not training_cost's own
            step_time_name="measured_step_time_s" if measured else "step_time_s",
            # the GPUs also run the recomputation: a measured step is held to that work too
            recompute_extra=recompute_extra(s.recompute, s.architecture(), s.sequence_length),
        )
        # what the answer leaves out travels with the cost: a "fits" from memory without
        # activations (a bare parameter count), a mixture of experts priced without its
        # expert parallelism, a sequence past the model's trained context, a fit with little
        # to spare (the step's, strategy.memory.fit_notes)
        from .architecture import architecture_notes
        from .strategy.memory import HEADROOM_NOTE_START

        unsized = tuple(n for n in self.notes if n.startswith("activations: not included"))
        tight = tuple(n for n in self.notes if n.startswith(HEADROOM_NOTE_START))
        extra = (*unsized, *architecture_notes(s.architecture(), s.sequence_length), *tight)
        if extra:
            cost = dataclasses.replace(cost, notes=(*cost.notes, *extra))
        if self.fits:
            return cost
        # a cost of a setup that cannot run is never handed out without saying so
        warning = next((n for n in self.notes if n.startswith("DOES NOT FIT")), "DOES NOT FIT")
        return dataclasses.replace(cost, fit_warning=warning)

    def compare(self, other: ScenarioResult | Scenario) -> list[dict[str, Any]]:
        """This result (A) and ``other`` (B, a result or a Scenario, evaluated with
        :meth:`Scenario.evaluate`'s defaults) side by side, see :func:`compare`."""
        return compare(self, _evaluated("other", other))

    def summary(self) -> str:
        """A few lines for people, with units."""
        from .strategy.memory import overheads_text
        from .strategy.step import ABOVE_ONE_GPU, above_one_gpu

        fu = units
        s = self.scenario
        lines = [
            f"{s.arch + ': ' if s.arch else ''}{fu.format_count(s.params)} params on {self.cluster_name} x {units.format_counted(self.nodes, 'node')} "
            f"({units.format_counted(self.ranks, 'GPU')}), {s.recipe}, {self.layout}, model={s.model}",
            "memory per GPU      "
            + " of ".join(units.format_bytes_pair(self.memory_total_bytes, self.gpu_memory_bytes))
            + f" ({'fits' if self.fits else 'does NOT fit'}"
            + (
                f"; {over})"
                if (over := overheads_text(s.cuda_context_bytes, s.fragmentation))
                else ")"
            ),
            f"global batch        {self.global_batch:,} ({fu.format_count(self.tokens_per_step)} "
            "tokens/step)",
            f"compute             {fu.format_duration(self.compute_s)}",
            f"{'all-reduce' if self.strategy == 'ddp' else 'communication':<20}"
            f"{fu.format_duration(self.comm_s)} "
            f"(exposed {fu.format_duration(self.exposed_comm_s)})"
            + (
                # a sum of separate calls: what it adds (comm_calls_note), as `step` says it
                "".join(f": {n}" for n in self.comm_calls_notes.values())
                if self.strategy == "ddp"
                else " = "
                + ", ".join(
                    f"{k.replace('_', '-')} {fu.format_duration(v)}"
                    + (f" ({self.comm_calls_notes[k]})" if k in self.comm_calls_notes else "")
                    for k, v in self.comm_by_kind_s.items()
                )
            ),
            *(
                [
                    f"optimizer, sync     {fu.format_duration(self.optimizer_s)} optimizer step, "
                    f"{fu.format_duration(self.sync_s)} waiting for the slowest rank"
                    + (
                        f", {fu.format_duration(self.host_overhead_s)} DDP host overhead"
                        if self.host_overhead_s > 0
                        else ""
                    )
                ]
                if self.optimizer_s > 0 or self.sync_s > 0 or self.host_overhead_s > 0
                else []
            ),
            f"step time           {fu.format_duration(self.step_time_s)} "
            f"({fu.format_count(self.tokens_per_s)} tokens/s)"
            + (
                f", band {fu.format_duration(self.step_time_lo_s)}-"
                f"{fu.format_duration(self.step_time_hi_s)}"
                + (
                    f", extrapolated beyond {self.band_extrapolated_beyond}"
                    if self.band_extrapolated
                    else ""
                )
                if math.isfinite(self.step_time_lo_s) and math.isfinite(self.step_time_hi_s)
                else ""
            ),
            f"verdict             {self.bound}-bound, scaling efficiency "
            f"{100 * self.efficiency:.1f}% vs one GPU"
            + (f" ({ABOVE_ONE_GPU})" if above_one_gpu(self.efficiency) else "")
            + ", compute share of the step "
            f"{100 * self.compute_share:.1f}% (overlap contention c = {self.comm_contention:g})",
        ]
        if not self.fits:
            lines.insert(0, self.notes[0] if self.notes else "DOES NOT FIT")
        if self.flip is not None and balance(self.comm_s, self.compute_s) == self.bound:
            # of the lesson's balance (comm vs compute totals, Scenario._flips), which the
            # verdict above also counts exposed communication beside
            lines.append(
                f"smallest flip       {self.flip.description} (of the comm-vs-compute balance, "
                "the lesson's verdict)"
            )
            for f in self.flips:
                if f is not self.flip:
                    lines.append(f"  also              {f.description}")
        if self.scaling:
            lines.append(
                "scaling: nodes  GPUs  step        efficiency  compute share  bound    memory/GPU"
            )
            for r in self.scaling:
                lines.append(
                    f"         {r.nodes:<6} {r.ranks:<5} "
                    f"{fu.format_duration(r.step_time_s):<11} "
                    f"{100 * r.efficiency:5.1f}%      {100 * r.compute_share:5.1f}%         "
                    f"{r.bound:<8} "
                    f"{fu.format_bytes(r.memory_bytes)}" + ("" if r.fits else " (does NOT fit)")
                )
        if self.band_extrapolated:  # the band's line, as `costmodel step` writes it
            lines.append(f"band: {self.band_extrapolation}")
        # the DOES NOT FIT warning heads the summary: said once, not again as a note
        lines.extend(f"note: {n}" for n in self.notes if self.fits or n != lines[0])
        return "\n".join(lines)


# --- side by side ------------------------------------------------------------------------------
_CHANGE_ALIASES = {
    "zero": "zero_stage",
    "seq": "sequence_length",
    "bucket": "bucket_cap_bytes",
    "bucket_cap": "bucket_cap_bytes",
    "compute_time": "compute_time_s",
    "flash": "flash_attention",
    "contention": "comm_contention",
    "micro_batch": "local_batch",
    "cuda_context": "cuda_context_bytes",
}


def _names_none(annotation: Any) -> bool:
    """Whether a field's type takes the text ``"none"`` as one of its own choices (``recompute``'s
    ``Literal["none", ...]``): there ``none`` is that choice, not "clear the field".

    >>> _names_none(Literal["none", "full"]), _names_none(Literal["fp32", "fused"] | None)
    (True, False)
    """
    return annotation == "none" or any(_names_none(a) for a in get_args(annotation))


def _parse_changes(text: str) -> dict[str, Any]:
    """``"nodes=16,zero_stage=3"`` -> ``{"nodes": "16", "zero_stage": "3"}`` (strings, validated
    by the Scenario; ``true``/``false`` -> bool, ``none`` -> None unless ``none`` is one of the
    field's own choices, as ``recompute=none``). A short key whose unit its
    name does not say, given a bare number (``compute_time=400`` is 400 s, ``bucket=50`` 50 B),
    warns (:class:`units.BareNumberWarning`), as the CLI's ``--vs`` does."""
    out: dict[str, Any] = {}
    parts = text.split(",") if text.strip() else []
    if any(not p.strip() for p in parts):  # "nodes=16,,zero=3": a typo, never dropped silently
        raise ValueError(
            f"changes: empty item in the list {text.strip()!r}; e.g. nodes=16,zero_stage=3"
        )
    for i, part in enumerate(parts):
        key, sep, value = part.partition("=")
        typed = key.strip()
        key = typed.replace("-", "_")
        key = _CHANGE_ALIASES.get(key, key)
        value = value.strip()
        units.warn_bare_numbers(typed, value)  # a bare number where a unit was meant, as --vs
        if not sep or not key or not value:
            # 'nodes=1,000': the comma split a number written with comma thousands
            name, _, number = parts[i - 1].partition("=") if i else ("", "", "")
            if hint := units.comma_thousands(f"{number.strip()},{typed}"):
                spellings = " or ".join(
                    f"{name.strip()}={v}" for v in hint.removeprefix("write ").split(" or ")
                )
                raise ValueError(
                    f"changes: {name.strip()}={number.strip()},{typed} reads as two changes (a "
                    f"comma separates them) and {typed!r} is not key=value; for one number "
                    f"write {spellings}"
                )
            raise ValueError(f"changes: {part.strip()!r} is not key=value (e.g. nodes=16)")
        if key in out:
            raise ValueError(f"changes: {key} given twice")
        field = Scenario.model_fields.get(key)
        if field is not None and field.annotation is bool:
            if value.lower() not in ("true", "false"):
                raise ValueError(f"{key}: must be true or false, got {value!r}")
            out[key] = value.lower() == "true"
        elif value.lower() == "none" and not (field and _names_none(field.annotation)):
            out[key] = None
        else:
            out[key] = value
    if not out:
        raise ValueError("changes: give at least one key=value, e.g. nodes=16,zero_stage=3")
    return out


#: (field of ScenarioResult, label, unit) of the comparison rows; unit "" is a count, "%" a
#: fraction shown in percent, "bool"/"text" are compared for equality only.
COMPARE_ROWS: tuple[tuple[str, str, str], ...] = (
    ("ranks", "GPUs", ""),
    ("memory_total_bytes", "memory per GPU", "B"),
    ("gpu_memory_bytes", "GPU memory", "B"),
    ("fits", "fits", "bool"),
    ("global_batch", "global batch [samples]", ""),
    ("compute_s", "compute per step", "s"),
    ("comm_s", "communication (sum)", "s"),
    ("exposed_comm_s", "exposed communication", "s"),
    ("step_time_s", "step time", "s"),
    ("step_time_lo_s", "step band, fast end", "s"),
    ("step_time_hi_s", "step band, slow end", "s"),
    ("bound", "verdict", "text"),
    ("efficiency", "scaling efficiency", "%"),
    ("compute_share", "compute share of the step", "%"),
    ("tokens_per_s", "throughput [tokens/s]", ""),
    ("tokens_per_gpu_s", "throughput per GPU [tokens/s]", ""),
)


def _evaluated(name: str, value: Any) -> ScenarioResult:
    """``value`` as a result to compare: a :class:`ScenarioResult` as it is, a
    :class:`Scenario` evaluated with :meth:`Scenario.evaluate`'s defaults (as ``.evaluate()``
    on it answers); anything else a TypeError naming the argument (a Scenario passed where its
    result was meant failed inside with "'Scenario' object has no attribute 'ranks'")."""
    if isinstance(value, ScenarioResult):
        return value
    if isinstance(value, Scenario):
        return value.evaluate()
    from ._checks import said

    raise TypeError(
        f"{name}: expected a ScenarioResult or a Scenario (call .evaluate() on a Scenario), "
        f"got {type(value).__name__} {said(value)}"
    )


def compare(a: ScenarioResult | Scenario, b: ScenarioResult | Scenario) -> list[dict[str, Any]]:
    """Two evaluated scenarios side by side: one row per figure (:data:`COMPARE_ROWS`).

    ``a`` and ``b``: a :class:`ScenarioResult`, or a :class:`Scenario`, evaluated with
    :meth:`Scenario.evaluate`'s defaults.

    Each row: ``field``, ``label``, ``unit``, ``a``, ``b``, ``difference`` (``b - a``, None for
    text and booleans and where a side is unknown: NaN) and ``ratio`` (``b / a``, None where
    ``a`` is 0 or either side is not a number).
    ``tokens_per_gpu_s`` is ``tokens_per_s / ranks`` (what a GPU-hour buys).
    """
    a, b = _evaluated("a", a), _evaluated("b", b)
    rows = []
    for field, label, unit in COMPARE_ROWS:
        if field == "tokens_per_gpu_s":
            va, vb = a.tokens_per_s / a.ranks, b.tokens_per_s / b.ranks
        else:
            va, vb = getattr(a, field), getattr(b, field)
        numeric = unit not in ("bool", "text")
        # an unknown figure (a band without a fitted compute) has no difference
        known = numeric and math.isfinite(va) and math.isfinite(vb)
        rows.append(
            {
                "field": field,
                "label": label,
                "unit": unit,
                "a": va,
                "b": vb,
                # a difference within rounding of the larger value is none (float noise
                # printed as "-7.44e-06 ns" before)
                "difference": (
                    (0.0 if abs(vb - va) <= 1e-9 * max(abs(va), abs(vb)) else vb - va)
                    if known
                    else None
                ),
                "ratio": (vb / va) if known and va else None,
            }
        )
    return rows


def compare_summary(a: ScenarioResult | Scenario, b: ScenarioResult | Scenario) -> str:
    """One sentence answering "A or B?": the faster per step (named only when the gap is larger
    than the expected error, :func:`costmodel.verdict.decide_scenarios`), tokens/s per GPU, and
    what fits. ``a``, ``b``: results, or Scenarios evaluated as :func:`compare` takes them."""
    a, b = _evaluated("a", a), _evaluated("b", b)
    fits = {True: "fits", False: "does NOT fit"}
    from .verdict import decide_scenarios, pct_pair, within_expected_error

    ratio = max(a.step_time_s, b.step_time_s) / min(a.step_time_s, b.step_time_s)
    faster = decide_scenarios(a, b)  # a winner only when the gap beats the expected error
    if faster.decided:
        # a ratio that rounds to 1 reads "1x faster": say the gap in percent there
        by = (
            f"{ratio:.3g}x" if f"{ratio:.3g}" != "1" else pct_pair(faster.gap, faster.half_width)[0]
        )
        speed = f"{faster.best}'s step is {by} faster"
    elif not faster.known:  # no winner named: the model's ranking, and why it is not decided
        speed = faster.text()
    else:
        # after a comma, not in brackets: the verdict's text may carry its own
        speed = f"A and B take the same step time, {faster.text()}"
    ga, gb = a.tokens_per_s / a.ranks, b.tokens_per_s / b.ranks
    # tokens/s per GPU = tokens per step / (step x GPUs): tokens and GPUs are exact, so its
    # ratio carries the step ratio's expected error, and the same rule names a winner
    gap = max(ga, gb) / min(ga, gb) - 1.0
    if gap < 0.005:
        per_gpu = "both do the same tokens/s per GPU (within 0.5%)"
    elif faster.known and within_expected_error(gap, faster.half_width):
        per_gpu = "tokens/s per GPU within the expected error"
    else:
        per_gpu = f"{'A' if ga > gb else 'B'} does more tokens/s per GPU" + (
            "" if faster.known else " by the model alone"
        )
    return (
        f"{speed}; {per_gpu} "
        f"(A {units.format_count(ga)} vs B {units.format_count(gb)} tokens/s per GPU); "
        f"memory: A {fits[a.fits]}, B {fits[b.fits]}.{_measured_on_one_gpu(a, b)}"
    )


def balance(comm_s: float, compute_s: float) -> str:
    """The lesson's verdict, the balance the flips move (:meth:`Scenario._flips`): ``"comms"``
    where the communication [s] outlasts the compute [s], else ``"compute"``. The headline
    verdict (:func:`costmodel.strategy.step.verdict`) also counts the exposed share, so the two
    can differ; where they do, no flip is called the verdict's.

    >>> balance(0.55, 0.4), balance(0.59, 0.7)
    ('comms', 'compute')
    """
    return "comms" if comm_s > compute_s else "compute"


#: Scenario fields that set one micro-batch's work or the GPU's speed at it, besides the compute
#: precision (:attr:`Scenario.compute_precision`): a measured compute time is of one setting of
#: each, so two configurations that differ in one of them cannot share it
#: (:func:`measured_compute_changed`)
COMPUTE_WORK_FIELDS: tuple[str, ...] = (
    "arch",
    "params",
    "local_batch",
    "sequence_length",
    "recompute",
    "flash_attention",
    "mfu",
    "power_limit_w",
)


def measured_compute_changed(a: Scenario, b: Scenario) -> tuple[str, ...]:
    """The fields in which ``b`` changes the work of ``a``'s micro-batch while pricing it with
    ``a``'s one measured compute time (``b.compute_time_s == a.compute_time_s``): the measured
    time is of ``a``'s micro-batch, so ``b``'s compute would read the same whatever it changed (a
    13B model at a 7B's compute, twice the micro-batch for free, an MFU or a power limit that
    moves nothing). Empty where ``a`` has no measured compute, ``b`` has its own, or nothing of
    :data:`COMPUTE_WORK_FIELDS` (and the compute precision) differs; ``params`` is left out when
    ``arch`` is named, since an architecture sets its count. Another GPU is a caveat of its own
    (:func:`compare_summary`)."""
    t = a.compute_time_s
    if t is None or b.compute_time_s != t:
        return ()
    changed = [f for f in COMPUTE_WORK_FIELDS if getattr(a, f) != getattr(b, f)]
    if "arch" in changed and "params" in changed:
        changed.remove("params")
    if a.compute_precision != b.compute_precision:
        changed.append("precision")
    return tuple(changed)


def measured_on_another_gpu(a: Scenario, b: Scenario) -> tuple[str, str] | None:
    """(A's GPU, B's GPU) where ``b`` prices its compute with ``a``'s one measured compute time
    (``b.compute_time_s == a.compute_time_s``) on another GPU than ``a``'s: the time was
    measured on A's card, so B would run at A's speed (and be billed at B's price). None where
    ``a`` has no measured compute, ``b`` has its own, or both run on one GPU. The one rule of
    :meth:`Scenario.with_changes` (which refuses it unless the changes give B's own
    ``compute_time_s``), ``scenario --vs`` and the step page's B (which predicts B's compute)."""
    t = a.compute_time_s
    if t is None or b.compute_time_s != t:
        return None
    ga, gb = str(a._validated_cluster().gpu.name), str(b._validated_cluster().gpu.name)
    return None if ga == gb else (ga, gb)


def measured_on_another_gpu_refusal(
    gpu_a: str,
    gpu_b: str,
    measured: str,
    change: str = "cluster",
    own: str = "its own `compute_time_s`",
    predicted: str = "`compute_time_s` None for its predicted compute",
) -> str:
    """The one refusal of a B on another GPU at A's measured compute time
    (:func:`measured_on_another_gpu`), in a surface's words: ``change`` the change refused,
    ``own`` how to give B its own measured compute, ``predicted`` how to have it predicted.

    >>> measured_on_another_gpu_refusal("h100-sxm", "b200", "430 ms")
    "cluster: B runs on b200, not A's h100-sxm, and the measured compute time (430 ms) is of A's GPU: B would be priced at h100-sxm's speed and b200's price; give B its own `compute_time_s`, or `compute_time_s` None for its predicted compute"
    """
    return (
        f"{change}: B runs on {gpu_b}, not A's {gpu_a}, and the measured compute time "
        f"({measured}) is of A's GPU: B would be priced at {gpu_a}'s speed and {gpu_b}'s price; "
        f"give B {own}, or {predicted}"
    )


def _measured_on_one_gpu(a: ScenarioResult, b: ScenarioResult) -> str:
    """The caveat of a comparison whose two sides price their compute with one measured
    compute time while B changes the micro-batch's work (:func:`measured_compute_changed`),
    or runs on another GPU: a time measured for one micro-batch on one card carries to
    neither, so the steps compare the communication alone (empty where that is not the
    case)."""
    t = a.scenario.compute_time_s
    if t is not None and (changed := measured_compute_changed(a.scenario, b.scenario)):
        return (
            f" Both sides use the one measured compute per micro-batch "
            f"({units.format_duration(t)}), though B changes its work ({', '.join(changed)}): "
            "B's compute is A's, not B's; give B its own measured compute, or none (its "
            "fitted compute)."
        )
    if t is None or b.scenario.compute_time_s != t or a.gpu_name == b.gpu_name:
        return ""
    return (
        f" Both sides use the one measured compute per micro-batch "
        f"({units.format_duration(t)}), though A runs on {a.gpu_name} and B on {b.gpu_name}: "
        "the step times differ by the communication alone, not by the GPUs' speed; to compare "
        "the GPUs, give each its own measured compute, or none (each GPU's fitted compute)."
    )
