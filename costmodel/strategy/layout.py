r"""One frozen description of a data-parallel layout: what every strategy module, the memory
model, the step engine and the advisor read (the role of torchtitan's ``parallel_dims.py``).

A :class:`Layout` names the strategy and its options; :func:`wrap_units` cuts a model into the
units the strategy gathers and reduces (FSDP's wrapped modules: the embedding, each transformer
block, the head, as torchtitan's ``apply_fsdp`` wraps a Llama).

========= =============================================== ===================================
strategy  sharded over the data-parallel ranks             per step on the wire (ring, M bytes)
========= =============================================== ===================================
ddp       nothing                                          all-reduce ``2 (N-1)/N M``
zero1     optimizer states (+ fp32 master)                 reduce-scatter + all-gather
zero2     + gradients                                      reduce-scatter + all-gather
fsdp      + parameters (ZeRO-3, FULL_SHARD)                all-gather x 2 + reduce-scatter
hsdp      as fsdp inside a group, replicated across        as fsdp in the group + all-reduce
                                                           of the shard across groups
========= =============================================== ===================================

>>> Layout(strategy="hsdp", ranks=64, group_size=8).groups
8
>>> try:
...     Layout(strategy="ddp", ranks=8, reshard_after_forward=False)
... except ValueError as e:
...     print(e.errors()[0]["msg"])
Value error, reshard_after_forward: only fsdp and hsdp reshard parameters; strategy 'ddp' has no such option (leave it unset)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import (
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from .._limits import LIMITS, validation_parts
from ..hardware import (
    DEFAULT_GPUS_PER_NODE,
    FlagOrNone,
    OneLineModel,
    OneLineValidationError,
    default_ranks,
)

Strategy = Literal["ddp", "zero1", "zero2", "fsdp", "hsdp"]
STRATEGIES: tuple[str, ...] = ("ddp", "zero1", "zero2", "fsdp", "hsdp")
"""Every data-parallel strategy the step engine schedules."""

ZERO_STAGE: dict[str, int] = {"ddp": 0, "zero1": 1, "zero2": 2, "fsdp": 3, "hsdp": 3}
"""The ZeRO stage of each strategy's sharding (hsdp: stage 3 inside its group)."""

_OTHER_NAMES: dict[str, str] = {
    "zero0": "ddp",
    "zero1": "zero1",
    "zero2": "zero2",
    "zero3": "fsdp",
    "fullshard": "fsdp",
    "shardgradop": "zero2",
    "hybridshard": "hsdp",
    "noshard": "ddp",
}
"""Names users type for a strategy (ZeRO-3, FSDP's ShardingStrategy) -> the one name used here."""


RANKS_EVERY_LAYOUT = "`cm.advise_strategy()`"
"""The API call that ranks every layout of one job (its step time, memory and fit): what a
refusal of ``strategy='all'`` points to where one layout is priced."""


def unknown_strategy(name: Any, *, field: str = "strategy", allow_all: bool = False) -> str:
    """The one-line error for a strategy name that is not one of :data:`STRATEGIES`, pointing
    to the name used here when ``name`` is another name for it (``zero3`` -> ``fsdp``), and,
    for ``all`` where one layout is priced (``allow_all`` False: ``cm.Scenario``,
    ``cm.Layout``, ``cm.strategy_step``), to the API call that ranks every layout
    (``cm.advise_strategy``, the step and memory of each; the CLI says its command).

    >>> unknown_strategy("zero-3")
    "strategy: unknown 'zero-3'; allowed: ddp, zero1, zero2, fsdp, hsdp (ZeRO-3 is fsdp here)"
    >>> unknown_strategy("all")
    "strategy: unknown 'all'; allowed: ddp, zero1, zero2, fsdp, hsdp (`cm.advise_strategy()` ranks every layout, with its memory)"
    """
    allowed = ", ".join(STRATEGIES) + (", all" if allow_all else "")
    key = "".join(c for c in str(name).lower() if c.isalnum())
    same = _OTHER_NAMES.get(key)
    hint = ""
    if key == "all" and not allow_all:
        hint = f" ({RANKS_EVERY_LAYOUT} ranks every layout, with its memory)"
    elif same is not None:
        label = f"ZeRO-{key[-1]}" if key.startswith("zero") else str(name)
        hint = f" ({label} is {same} here)"
    return f"{field}: unknown {name!r}; allowed: {allowed}{hint}"


STRATEGY_OF_STAGE: dict[int, str] = {0: "ddp", 1: "zero1", 2: "zero2", 3: "fsdp"}
"""The strategy a bare ZeRO stage means (the older ``zero_stage`` option)."""


def stage_agrees(strategy: str, stage: int | None) -> bool:
    """Whether a ZeRO stage given together with a strategy names the same layout: the one
    rule of ``costmodel memory --zero --strategy``, :class:`costmodel.Scenario` and a memory
    sweep's ``zero_stage`` and ``strategy`` axes.

    A stage agrees with a strategy when it is the strategy's own (:data:`ZERO_STAGE`: ddp 0,
    zero1 1, zero2 2, fsdp 3, hsdp 3, its ZeRO-3 inside each group); ``None`` (no stage given)
    agrees with every strategy.

    >>> stage_agrees("hsdp", 3), stage_agrees("fsdp", 3), stage_agrees("hsdp", 1)
    (True, True, False)
    """
    return stage is None or stage == ZERO_STAGE[strategy]


DEFAULT_COMM_CONTENTION = 0.0
r"""The one default overlap contention ``c`` of every surface (API, CLI, Scenario, sweep, app).

While a collective runs, compute advances at rate ``1 - c`` (NCCL kernels share the SMs and
memory bandwidth with the compute kernels). 0 is the textbook assumption (communication fully
overlapped with the compute it runs under); 1 stalls compute during communication (no overlap).
The only fit shipped today, to PyTorch's DDP benchmark on V100 ResNets
(``costmodel.ddp.FITTED_COMM_CONTENTION`` = 1.0), is one GPU generation and one model family, so
it is not the default. Fitted end to end on the published LLM runs (docs/step-fidelity.md,
scripts/step_fidelity.py), a free ``c`` scored 4.2 % median held-out scaling error against 4.0 %
at ``c = 0`` under grouped cross-validation, so 0 stays. Every surface shows the value next to
the numbers it gives."""

DTYPE_BYTES: dict[str, float] = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0}
"""Bytes per element of the communication dtypes (IEEE 754 binary32/16, bfloat16, OCP FP8)."""
PARAM_DTYPES = ("bf16", "fp16", "fp8", "fp32")
GRAD_DTYPES = ("fp32", "bf16", "fp16")

# DDP's default bucket: torch/nn/parallel/distributed.py, bucket_cap_mb=25 -> 25 * 2**20 bytes.
DEFAULT_BUCKET_CAP_BYTES = 25 * 2**20
# DeepSpeed's ZeRO-1/2 defaults (deepspeed/runtime/zero/config.py,
# ZERO_OPTIMIZATION_REDUCE_BUCKET_SIZE_DEFAULT and ..._ALLGATHER_BUCKET_SIZE_DEFAULT): reduce_bucket_size
# = allgather_bucket_size = 5e8 elements (counted in elements, not bytes). The model uses the
# reduce bucket's (the reduce-scatters' cut, the ipg buffers); the parameter all-gather is one
# collective, which allgather_bucket_size does not cut (costmodel.strategy.zero.gather_bytes).
DEFAULT_ZERO_BUCKET_ELEMENTS = 500_000_000


BUCKETED_STRATEGIES: tuple[str, ...] = ("ddp", "zero1", "zero2")
"""The strategies that reduce gradients in buckets of ``bucket_cap_bytes`` (DDP's
``bucket_cap_mb``, DeepSpeed's ``reduce_bucket_size``); fsdp and hsdp gather and reduce per
wrapped module (:func:`wrap_units`), so a bucket size means nothing to them."""


def bucket_not_applied(
    strategies: str | tuple[str, ...] | list[str], bucket_cap_bytes: float | None
) -> str | None:
    """The note a step gives when ``bucket_cap_bytes`` was given to strategies that have no
    gradient bucket (fsdp, hsdp): it is not applied, and which strategies use it. None when
    none was given or every strategy uses it. The one text of the step's ``notes``
    (API, sweep rows, Scenario) and of the CLI's ``--bucket`` warning.

    >>> bucket_not_applied("fsdp", 50e6)
    'bucket_cap_bytes: not applied to fsdp, which gathers and reduces per wrapped module (a transformer block), not in gradient buckets; ddp, zero1 and zero2 use it'
    >>> bucket_not_applied("zero2", 50e6) is None, bucket_not_applied("fsdp", None) is None
    (True, True)
    """
    if bucket_cap_bytes is None:
        return None
    names = [strategies] if isinstance(strategies, str) else list(strategies)
    unused = list(dict.fromkeys(s for s in names if s not in BUCKETED_STRATEGIES))
    if not unused:
        return None
    which = " and ".join(unused)
    verb = "gathers and reduces" if len(unused) == 1 else "gather and reduce"
    return (
        f"bucket_cap_bytes: not applied to {which}, which {verb} per wrapped module (a "
        f"transformer block), not in gradient buckets; {', '.join(BUCKETED_STRATEGIES[:-1])} "
        f"and {BUCKETED_STRATEGIES[-1]} use it"
    )


NO_SYNC_STRATEGIES: tuple[str, ...] = ("ddp", "zero1")
"""The strategies whose ``no_sync`` skips the gradient reduction of the non-final micro-batches
of an accumulation. zero2 reduce-scatters every micro-batch (DeepSpeed refuses ``no_sync``
under ZeRO stage 2 and 3: its gradient partitioning reduces as the backward makes them);
fsdp and hsdp do here too (FSDP1's ``no_sync`` and FSDP2's ``set_requires_gradient_sync(False)``
keep unsharded gradients instead, which this model does not price)."""


def no_sync_not_applied(strategy: str, accumulation: int, no_sync: bool) -> str | None:
    """The note a step of ``accumulation`` > 1 micro-batches gives when ``no_sync`` changes
    nothing for its strategy (zero2, fsdp, hsdp reduce every micro-batch here:
    :data:`NO_SYNC_STRATEGIES`), or None. The one text of the step's ``notes``.

    >>> no_sync_not_applied("fsdp", 4, True)[:60]
    'no_sync: not applied to fsdp, which reduce-scatters the grad'
    >>> no_sync_not_applied("ddp", 4, True) is None, no_sync_not_applied("fsdp", 1, True) is None
    (True, True)
    """
    if not no_sync or accumulation <= 1 or strategy in NO_SYNC_STRATEGIES:
        return None
    if strategy == "zero2":
        why = "DeepSpeed's ZeRO stage 2 has no no_sync: it partitions the gradients as they come"
    else:
        why = (
            "FSDP's no_sync and FSDP2's set_requires_gradient_sync(False), which keep unsharded "
            "gradients until the last micro-batch, are not modelled"
        )
    return (
        f"no_sync: not applied to {strategy}, which reduce-scatters the gradients of every "
        f"micro-batch in this model ({why}); {' and '.join(NO_SYNC_STRATEGIES)} use it"
    )


def bucket_cap_bytes_for(
    strategy: str, bucket_cap_bytes: float | None, bytes_per_element: float
) -> float:
    r"""The bucket size a bucketed strategy really uses [B]: the one given, else its default.

    ``ddp`` (and the unbucketed ``fsdp``/``hsdp``): PyTorch's ``bucket_cap_mb`` = 25 MiB.
    ``zero1``/``zero2``: DeepSpeed's ``reduce_bucket_size`` = 5e8 elements, so ``cap = 5e8 *
    bytes_per_element`` (the gradient dtype's bytes: the reduce-scatter buckets and the ipg
    buffer). Their parameter all-gather is not cut (:func:`costmodel.strategy.zero.gather_bytes`:
    DeepSpeed's ``allgather_bucket_size`` applies only without ``all_gather_into_tensor``).
    An explicit ``bucket_cap_bytes`` wins for every strategy.

    >>> bucket_cap_bytes_for("ddp", None, 2.0) / 2**20
    25.0
    >>> bucket_cap_bytes_for("zero2", None, 2.0), bucket_cap_bytes_for("zero2", 2**20, 2.0)
    (1000000000.0, 1048576.0)
    """
    if bucket_cap_bytes is not None:
        return float(bucket_cap_bytes)
    if strategy in ("zero1", "zero2"):
        return DEFAULT_ZERO_BUCKET_ELEMENTS * float(bytes_per_element)
    return float(DEFAULT_BUCKET_CAP_BYTES)


class LayoutError(OneLineValidationError):
    """A refused :class:`Layout`, in one line naming each field and its allowed range, as
    :class:`costmodel.scenario.ScenarioError` says a Scenario's (the base,
    :class:`costmodel.hardware.OneLineValidationError`, is imported here by that name too)."""


class Layout(OneLineModel):
    """A data-parallel layout, validated on construction (frozen).

    ``ranks`` defaults to one node of ``gpus_per_node`` (8 unless given), the data-parallel
    size every surface asks a memory or step question at when none is given
    (:data:`costmodel.hardware.DEFAULT_NODES`, :func:`costmodel.hardware.default_ranks`):

    >>> Layout(strategy="fsdp").ranks, Layout(strategy="fsdp", gpus_per_node=4).ranks
    (8, 4)

    Errors name the field and its allowed values, on one line (:class:`LayoutError`):

    >>> Layout(strategy="fsdp", ranks=0)
    Traceback (most recent call last):
    ...
    costmodel.strategy.layout.LayoutError: ranks: Input should be greater than or equal to 1; allowed: [1, 1,000,000,000] (got 0)
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    # every road in refuses with the one-line LayoutError: :class:`costmodel.hardware.OneLineModel`
    one_line_error: ClassVar[type[OneLineValidationError]] = LayoutError

    strategy: Strategy = Field("ddp", description="ddp, zero1, zero2, fsdp or hsdp")
    ranks: int = Field(
        default_ranks(),
        ge=1,
        le=1_000_000_000,
        description="data-parallel ranks (GPUs); default one node: gpus_per_node "
        "(hardware.default_ranks)",
    )
    gpus_per_node: int = Field(DEFAULT_GPUS_PER_NODE, ge=1, le=4096, description="GPUs per node")
    group_size: int | None = Field(
        None,
        ge=1,
        description="hsdp: ranks that shard one replica (default one node); must divide ranks",
    )
    reshard_after_forward: FlagOrNone = Field(
        None,
        description="fsdp/hsdp: free the gathered parameters after forward (default True: "
        "FULL_SHARD); False keeps them to backward (SHARD_GRAD_OP)",
    )
    gradient_as_bucket_view: FlagOrNone = Field(
        None,
        description="ddp: gradients are views into DDP's all-reduce buckets, so no bucket copy "
        "of them is held (default False, PyTorch's gradient_as_bucket_view)",
    )
    param_dtype: Literal["bf16", "fp16", "fp8", "fp32"] = Field(
        "bf16", description="dtype parameters are all-gathered in"
    )
    grad_dtype: Literal["fp32", "bf16", "fp16"] | None = Field(
        None, description="dtype gradients are reduced in (default: the precision recipe's)"
    )
    bucket_cap_bytes: int | None = Field(
        None,
        ge=1,
        le=10**13,
        description="ddp/zero1/zero2 bucket size [B] (default: the strategy's own, "
        "bucket_cap(): ddp 25 MiB, zero1/zero2 5e8 elements)",
    )
    comm_contention: float = Field(
        DEFAULT_COMM_CONTENTION,
        ge=0.0,
        le=1.0,
        description="compute slows to 1 - c while a collective runs (0 = no contention)",
    )

    @model_validator(mode="before")
    @classmethod
    def _one_node(cls, data: Any) -> Any:
        """``ranks`` not given: one node of ``gpus_per_node`` (the default of every surface,
        :func:`costmodel.hardware.default_ranks`), so ``Layout(gpus_per_node=4)`` is 4 ranks."""
        if isinstance(data, dict) and "ranks" not in data:
            gpn = data.get("gpus_per_node")
            if isinstance(gpn, int) and not isinstance(gpn, bool) and 1 <= gpn <= 4096:
                return {**data, "ranks": default_ranks(gpn)}
        return data

    @field_validator(
        "ranks", "gpus_per_node", "group_size", "bucket_cap_bytes", "comm_contention", mode="before"
    )
    @classmethod
    def _not_a_bool(cls, v: Any, info: ValidationInfo) -> Any:
        """A number, not a bool: pydantic's lax mode read ``ranks=True`` as one rank and
        ``comm_contention=True`` as a contention of 1."""
        if isinstance(v, bool):
            raise ValueError(f"{info.field_name}: expected a number, got a bool ({v!r})")
        if info.field_name == "comm_contention":
            # --contention's one range, in its words (as Scenario's), not pydantic's
            # "Input should be a finite number"; text that is no number is left to pydantic
            x = v.item() if type(v).__module__ == "numpy" and getattr(v, "ndim", None) == 0 else v
            if isinstance(x, str):
                try:
                    float(x)
                except ValueError:
                    return v
            if isinstance(x, int | float | str):
                LIMITS["contention"].check("comm_contention", x)
        return v

    @field_validator("strategy", mode="before")
    @classmethod
    def _strategy(cls, v: Any) -> Any:
        if isinstance(v, str) and v.lower() not in STRATEGIES:
            raise ValueError(unknown_strategy(v))
        return v.lower() if isinstance(v, str) else v

    @model_validator(mode="after")
    def _check(self) -> Layout:
        if self.reshard_after_forward is not None and self.strategy not in ("fsdp", "hsdp"):
            raise ValueError(
                "reshard_after_forward: only fsdp and hsdp reshard parameters; strategy "
                f"{self.strategy!r} has no such option (leave it unset)"
            )
        if self.gradient_as_bucket_view is not None and self.strategy != "ddp":
            raise ValueError(
                "gradient_as_bucket_view: only ddp has gradient buckets to view (DDP's "
                f"gradient_as_bucket_view); strategy {self.strategy!r} has no such option "
                "(leave it unset)"
            )
        if self.group_size is not None and self.strategy != "hsdp":
            raise ValueError(
                f"group_size: only hsdp has a sharding group; strategy {self.strategy!r} has "
                "none (leave it unset)"
            )
        if self.strategy == "hsdp":
            g, n, gpn = self.shard_group, self.ranks, self.gpus_per_node
            if n % g:
                allowed = [d for d in range(1, n + 1) if n % d == 0 and _spans_nodes(d, gpn)]
                raise ValueError(
                    f"group_size: {g} does not divide the {n} ranks; allowed: "
                    f"{', '.join(map(str, allowed[:24]))}{' ...' if len(allowed) > 24 else ''}"
                )
            if not _spans_nodes(g, gpn):
                raise ValueError(
                    f"group_size: {g} must divide a node's {gpn} GPUs or be whole nodes "
                    f"(a multiple of {gpn})"
                )
        return self

    # --- derived -----------------------------------------------------------------------------
    @property
    def shard_group(self) -> int:
        """Ranks one copy of the state is sharded over [-] (1 for ddp: nothing sharded)."""
        if self.strategy == "hsdp":
            return self.group_size or min(self.gpus_per_node, self.ranks)
        return self.ranks

    @property
    def groups(self) -> int:
        """Replicas of the sharded state (hsdp's replicate dimension; ranks for ddp) [-]."""
        return self.ranks // self.shard_group if self.strategy == "hsdp" else 1

    @property
    def reshards(self) -> bool:
        """Whether fsdp/hsdp free the gathered parameters after forward (default True)."""
        return self.strategy in ("fsdp", "hsdp") and self.reshard_after_forward is not False

    @property
    def bucket_view(self) -> bool:
        """Whether ddp's gradients are views into its buckets (``gradient_as_bucket_view``;
        default False, PyTorch's), so it holds no bucket copy of them; False off ddp."""
        return self.strategy == "ddp" and self.gradient_as_bucket_view is True

    @property
    def zero_stage(self) -> int:
        """The ZeRO stage of this sharding (memory.py's parts sharded)."""
        return ZERO_STAGE[self.strategy]

    @property
    def param_bytes(self) -> float:
        """Bytes per parameter element all-gathered [B]."""
        return DTYPE_BYTES[self.param_dtype]

    def grad_bytes(self, recipe_gradient_bytes: float) -> float:
        """Bytes per gradient element reduced [B]: ``grad_dtype``'s, else the recipe's."""
        return DTYPE_BYTES[self.grad_dtype] if self.grad_dtype else float(recipe_gradient_bytes)

    @property
    def bucket_note(self) -> str | None:
        """Why this layout's ``bucket_cap_bytes`` is not applied (fsdp, hsdp: no gradient
        buckets), or None (:func:`bucket_not_applied`)."""
        return bucket_not_applied(self.strategy, self.bucket_cap_bytes)

    @property
    def param_dtype_note(self) -> str | None:
        """Why this layout's ``param_dtype`` changes nothing (ddp all-gathers no parameters:
        it all-reduces gradients, in ``grad_dtype``), or None where it is the default (bf16)
        or the strategy gathers in it.

        >>> Layout(strategy="ddp", param_dtype="fp8").param_dtype_note[:38]
        'param_dtype: fp8 not applied to ddp, w'
        >>> Layout(strategy="zero1", param_dtype="fp8").param_dtype_note is None
        True
        """
        if self.strategy != "ddp" or self.param_dtype == "bf16":
            return None
        return (
            f"param_dtype: {self.param_dtype} not applied to ddp, which all-gathers no "
            "parameters (it all-reduces gradients, in `grad_dtype`); zero1, zero2, fsdp and hsdp "
            "gather in it"
        )

    def as_dict(self) -> dict[str, Any]:
        """The layout the step runs, JSON-ready: its fields, with ``bucket_cap_bytes`` None
        where the strategy has no bucket to apply it to (:attr:`bucket_note` says so)."""
        out = self.model_dump()
        if self.bucket_note is not None:
            out["bucket_cap_bytes"] = None
        return out

    def bucket_cap(self, bytes_per_element: float) -> float:
        """Bucket size [B] for elements of ``bytes_per_element`` bytes: ``bucket_cap_bytes`` if
        given, else this strategy's default (:func:`bucket_cap_bytes_for`)."""
        return bucket_cap_bytes_for(self.strategy, self.bucket_cap_bytes, bytes_per_element)

    @property
    def name(self) -> str:
        """A short label: ``fsdp``, ``fsdp (no reshard)``, ``hsdp g=8``, ``ddp (bucket view)``."""
        if self.strategy == "hsdp":
            base = f"hsdp g={self.shard_group}"
        else:
            base = self.strategy
        if self.strategy in ("fsdp", "hsdp") and not self.reshards:
            base += " (no reshard)"
        if self.bucket_view:
            base += " (bucket view)"
        return base

    def identity(self) -> dict[str, Any]:
        """The five keys that name this layout on every surface (:data:`LAYOUT_KEYS`), each
        with one meaning: ``strategy`` the plain strategy (one of :data:`STRATEGIES`),
        ``layout`` its :attr:`name` (``hsdp g=8``, ``fsdp (no reshard)``), ``group_size``
        hsdp's sharding group (:attr:`shard_group`, the ``g`` of the name; None for another
        strategy), ``reshard_after_forward`` whether fsdp/hsdp free the gathered parameters
        after forward (:attr:`reshards`, True unless turned off; None for a strategy without
        the option) and ``gradient_as_bucket_view`` whether ddp's gradients are views into its
        buckets (:attr:`bucket_view`, False unless turned on; None for another strategy). Step
        and memory sweep rows and the ``--json`` of ``step``, ``memory``,
        ``scenario`` and ``train`` write these, so one layout reads the same on each.

        >>> Layout(strategy="hsdp", ranks=64, group_size=8).identity()
        {'strategy': 'hsdp', 'layout': 'hsdp g=8', 'group_size': 8, 'reshard_after_forward': True, 'gradient_as_bucket_view': None}
        >>> Layout(strategy="fsdp", ranks=8, reshard_after_forward=False).identity()["layout"]
        'fsdp (no reshard)'
        >>> Layout(strategy="zero1", ranks=8).identity()["group_size"] is None
        True
        """
        sharded = self.strategy in ("fsdp", "hsdp")
        return {
            "strategy": self.strategy,
            "layout": self.name,
            "group_size": int(self.shard_group) if self.strategy == "hsdp" else None,
            "reshard_after_forward": self.reshards if sharded else None,
            "gradient_as_bucket_view": self.bucket_view if self.strategy == "ddp" else None,
        }


LAYOUT_KEYS: tuple[str, ...] = (
    "strategy",
    "layout",
    "group_size",
    "reshard_after_forward",
    "gradient_as_bucket_view",
)
"""The keys (and sweep columns, in this order) that name a layout: :meth:`Layout.identity`."""


def make_layout(**fields: Any) -> Layout:
    """:class:`Layout` with a plain ``ValueError`` naming the field (not pydantic's report).

    >>> make_layout(strategy="hsdp", ranks=16, group_size=3)
    Traceback (most recent call last):
    ...
    ValueError: group_size: 3 does not divide the 16 ranks; allowed: 1, 2, 4, 8, 16
    """
    try:
        return Layout(**fields)
    except ValidationError as exc:
        # the first refusal, as the Layout says it (its field's range included)
        msg = validation_parts(exc, got=True)[0]
        if msg.startswith("strategy: ") and "allowed: " not in msg:
            msg += f"; allowed: {', '.join(STRATEGIES)}"
        raise ValueError(msg) from None


def _spans_nodes(g: int, gpn: int) -> bool:
    return gpn % g == 0 or g % gpn == 0


@dataclass(frozen=True)
class WrapUnit:
    """One unit FSDP wraps (gathers and reduces as one): its name and parameter count."""

    name: str
    params: float
    compute_weight: float  # share of a micro-batch's compute this unit does (sums to 1)


# A bare parameter count outside architecture_for_params' range (1e6-1e13) gets blocks of at
# most this many parameters (a 4096-hidden Llama block is 12 x 4096^2 ~ 2e8).
DEFAULT_BLOCK_PARAMS = 12 * 4096**2


def wrap_units(params: float, arch: Any = None) -> tuple[WrapUnit, ...]:
    """The wrapped units of a model in forward order: embedding, each block, the head.

    With an architecture the units are its real tensors grouped by module (the input
    embedding; ``model.layers.i``; the final norm with the output projection, or with a tied
    embedding nothing extra). Compute is shared in proportion to the matmul parameters of each
    unit (a lookup does no matmul: the embedding gets none unless it is tied to the head). A
    bare count gets the units of the transformer of that size
    (:func:`~costmodel.architecture.architecture_for_params`), scaled to exactly ``params``;
    outside that rule's range (1e6 to 1e13 parameters) equal blocks of at most
    :data:`DEFAULT_BLOCK_PARAMS`.

    >>> [u.name for u in wrap_units(0, "llama-2-7b")][:3], len(wrap_units(0, "llama-2-7b"))
    (['embedding', 'block 0', 'block 1'], 34)
    >>> len(wrap_units(7e9)), round(sum(u.params for u in wrap_units(7e9)) / 7e9, 12)
    (43, 1.0)
    """
    if arch is not None:
        from ..architecture import load_arch

        return _arch_units(load_arch(arch))
    from dataclasses import replace

    from ..architecture import architecture_for_params

    try:
        shape = architecture_for_params(params)
    except ValueError:
        n = max(1, math.ceil(float(params) / DEFAULT_BLOCK_PARAMS))
        return tuple(WrapUnit(f"block {i}", params / n, 1.0 / n) for i in range(n))
    k = float(params) / float(shape.params)
    return tuple(replace(u, params=u.params * k) for u in _arch_units(shape))


def largest_pair_params(params: float, arch: Any = None) -> float:
    """Parameters of the largest two neighbouring units of :func:`wrap_units` (the unit
    computing and the one prefetched, gathered at once) [-]; the one unit's when there is one.

    Equal blocks (a bare count outside :func:`~costmodel.architecture.architecture_for_params`'
    range) are counted, not built: the largest-model search (``stage_max_params``) probes counts
    up to ``capacity / bytes per parameter``, 1e17 parameters and more for ZeRO-3 over a million
    ranks, whose hundreds of millions of blocks held the Memory page for minutes. The value is
    the same as from the units, to the last bit (``a + a == 2 * a``).

    >>> import math
    >>> largest_pair_params(1e17) == 2 * (1e17 / math.ceil(1e17 / DEFAULT_BLOCK_PARAMS))
    True
    >>> units = wrap_units(7e9)
    >>> largest_pair_params(7e9) == max(a.params + b.params for a, b in zip(units, units[1:]))
    True
    """
    n = _equal_blocks(params, arch)
    if n is not None:
        block = params / n
        return block if n == 1 else 2 * block
    sizes = [u.params for u in wrap_units(params, arch)]
    return max((a + b for a, b in zip(sizes, sizes[1:], strict=False)), default=sizes[0])


def largest_unit_params(params: float, arch: Any = None) -> float:
    """Parameters of the largest one unit of :func:`wrap_units` [-]: what fsdp on one rank
    holds gathered at a time (no prefetch allocates ahead there: :func:`costmodel.strategy.memory.
    _fsdp_one_rank_bytes`). Equal blocks are counted, not built, as in
    :func:`largest_pair_params`.

    >>> largest_unit_params(7e9) == max(u.params for u in wrap_units(7e9))
    True
    >>> largest_unit_params(1e17) * 2 == largest_pair_params(1e17)
    True
    """
    n = _equal_blocks(params, arch)
    if n is not None:
        return params / n
    return max(u.params for u in wrap_units(params, arch))


def _equal_blocks(params: float, arch: Any) -> int | None:
    """How many equal blocks :func:`wrap_units` cuts ``params`` into where it cuts no
    architecture's units (no ``arch``, a count outside
    :func:`~costmodel.architecture.architecture_for_params`' range): ``ceil(P /``
    :data:`DEFAULT_BLOCK_PARAMS` ``)``, at least one; None where the units are an
    architecture's. Counted, not built: :func:`largest_pair_params` and
    :func:`largest_unit_params` read the block sizes from it.

    >>> _equal_blocks(1e17, None) == math.ceil(1e17 / DEFAULT_BLOCK_PARAMS)
    True
    >>> _equal_blocks(7e9, None) is None       # an architecture's units
    True
    """
    if arch is not None:
        return None
    from ..architecture import architecture_for_params

    try:
        architecture_for_params(params)
    except ValueError:
        return max(1, math.ceil(float(params) / DEFAULT_BLOCK_PARAMS))
    return None


_UNITS_CACHE: dict[tuple[str, int], tuple[WrapUnit, ...]] = {}


def _arch_units(a: Any) -> tuple[WrapUnit, ...]:
    """:func:`wrap_units` of an :class:`~costmodel.architecture.Architecture` (cached)."""
    key = (a.name, int(a.params))
    hit = _UNITS_CACHE.get(key)
    if hit is not None:
        return hit
    embed, head = 0.0, 0.0
    blocks = [0.0] * a.layers
    for (name, _), n in zip(a.tensors(), a.tensor_sizes, strict=True):
        parts = name.split(".")
        if len(parts) > 2 and parts[1] in ("layers", "h"):
            blocks[int(parts[2])] += n
        elif "embed" in name or parts[1] in ("wte", "wpe"):
            embed += n
        else:
            head += n
    # matmul parameters: a lookup does none, a tied embedding is also the output projection
    embed_mm = float(a.vocab * a.hidden) if a.tied_embeddings else 0.0
    weights = [embed_mm, *blocks, head]
    total = sum(weights)
    units = [WrapUnit("embedding", embed, weights[0] / total)]
    units += [WrapUnit(f"block {i}", b, b / total) for i, b in enumerate(blocks)]
    units.append(WrapUnit("head", head, head / total))
    out = tuple(units)
    _UNITS_CACHE[key] = out
    return out
