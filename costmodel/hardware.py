r"""Hardware models: GPU, Link, Node and Cluster (frozen, strict pydantic v2).

These are the objects users think in; the formula modules never see them. A :class:`Cluster`
hands the formula layer plain SI numbers (per-GPU bandwidth per direction, latency per hop,
rank counts), and :mod:`costmodel.presets` loads them from the cited TOML files in ``presets/``.

Units
-----
Every quantity is stored in SI (bytes, seconds, B/s, FLOP/s) and its field name says so
(``memory_bytes``, ``latency_s``, ``datasheet_bandwidth_bytes_per_s``). A quantity may be given
as a number in that SI unit or as a string with a unit, parsed by :mod:`costmodel.units`
(``"80GB"``, ``"900GB/s"``, ``"400Gb/s"``, ``"0.6us"``, ``"989.5TFLOP/s"``). **Preset files must use
strings with units**: a bare number in a TOML file is refused, so ``latency_s = 2.7`` (meant as
µs) can never be read as 2.7 seconds.

Per direction
-------------
A :class:`Link` stores the figure its datasheet prints and whether that figure counts one
direction or both (``datasheet_direction``). NVIDIA quotes NVLink and PCIe as bidirectional
totals (H100: "NVLink 900GB/s", "PCIe Gen5 128GB/s"); InfiniBand and Ethernet NICs are quoted
per direction (NDR "400Gb/s"). Formulas use the per-direction figure
(:attr:`Link.per_direction_bandwidth_bytes_per_s`). The seed lesson differs from the datasheets
in two places: it uses NVLink4's 900 GB/s bidirectional total as a per-direction bandwidth in
its 500 MB example, and it calls PCIe 5.0 x16 "~64 GB/s bidirectional" where 64 GB/s is the
per-direction figure (128 GB/s bidirectional).

>>> nvl4 = Link(name="nvlink4", kind="nvlink", generation="NVLink 4",
...             datasheet_bandwidth_bytes_per_s="900GB/s", datasheet_direction="bidirectional",
...             links_in_figure=18, latency_s="0.6us", source="H100 datasheet")
>>> nvl4.per_direction_bandwidth_bytes_per_s / 1e9, nvl4.per_link_bandwidth_bytes_per_s / 1e9
(450.0, 25.0)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated, Any, ClassVar, Literal, Self, cast

from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic.config import ExtraValues

from ._limits import LIMITS, is_bound, validation_parts
from .tables import Op
from .units import format_flops, format_rate, parse_bytes, parse_duration, parse_flops, parse_rate

__all__ = [
    "GPU",
    "Link",
    "Node",
    "Cluster",
    "Architecture",
    "LinkKind",
    "IntraKind",
    "Fabric",
    "COMPUTE_CAPABILITIES",
    "REQUIRE_UNITS",
    "CollectiveFit",
    "CalibrationPreset",
    "textbook_algorithm",
    "check_power_limit_w",
    "OneLineValidationError",
    "HardwareError",
]

Architecture = Literal["volta", "turing", "ampere", "ada", "hopper", "blackwell"]
LinkKind = Literal[
    "nvlink", "pcie", "infiniband", "roce", "efa", "slingshot", "tcpxo", "ethernet", "socket"
]
IntraKind = Literal["nvswitch", "nvlink-mesh", "pcie"]
Fabric = Literal["infiniband", "efa", "slingshot", "roce", "tcpxo", "ethernet", "socket", "none"]
CpuVendor = Literal["intel", "amd", "nvidia", "unknown"]

# CUDA compute capabilities per architecture (CUDA C Programming Guide, "Compute Capabilities")
COMPUTE_CAPABILITIES: dict[str, tuple[float, ...]] = {
    "volta": (7.0, 7.2),
    "turing": (7.5,),
    "ampere": (8.0, 8.6, 8.7),
    "ada": (8.9,),
    "hopper": (9.0,),
    "blackwell": (10.0, 10.3, 12.0),
}

# which network fabric each NIC link kind belongs to
_FABRIC_OF_KIND: dict[str, str] = {
    "infiniband": "infiniband",
    "roce": "roce",
    "efa": "efa",
    "slingshot": "slingshot",
    "tcpxo": "tcpxo",
    "ethernet": "ethernet",
    "socket": "socket",  # NCCL's TCP socket transport (no RDMA, no plugin) over any NIC
}

#: validation context key: when true, quantities must be strings with units (preset files)
REQUIRE_UNITS = "require_units"

#: The data-parallel size a memory or step question gets when none is given, on every surface
#: (``costmodel memory``/``step``/``scenario``/``train``, the memory and step sweeps,
#: ``strategy_step``, ``Scenario``, ``Layout``, the Memory page): one node. With a cluster (given
#: or the default one) that is its GPUs per node (or the slice of them asked for);
#: :func:`default_ranks` is the rule.
DEFAULT_NODES = 1
#: The GPUs of that node where no hardware is given at all (``costmodel memory`` without
#: ``--cluster``/``--gpu-memory``, a memory sweep without ``preset``, ``Layout`` without
#: ``gpus_per_node``, the Memory page's "Data-parallel ranks N [GPUs]"): a DGX/HGX node's 8, the node
#: of the default cluster ``dgx-h100`` that ``step``, ``scenario`` and ``train`` assume.
DEFAULT_GPUS_PER_NODE = 8


def default_ranks(gpus_per_node: int | None = None) -> int:
    """The data-parallel ranks a memory or step question defaults to [-]: :data:`DEFAULT_NODES`
    nodes of ``gpus_per_node`` GPUs (a cluster's, or the slice of its node asked for), or of
    :data:`DEFAULT_GPUS_PER_NODE` where no hardware gives a node.

    >>> default_ranks(), default_ranks(4)
    (8, 4)
    """
    per_node = DEFAULT_GPUS_PER_NODE if gpus_per_node is None else int(gpus_per_node)
    return DEFAULT_NODES * per_node


_NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"
# quantity kind -> (parser, SI unit, examples shown in messages and in the JSON schema)
_QUANTITIES: dict[str, tuple[Callable[..., Any], str, tuple[str, ...]]] = {
    "bytes": (parse_bytes, "B", ("80GB", "141GB")),
    "rate": (parse_rate, "B/s", ("450GB/s", "400Gb/s")),
    "duration": (parse_duration, "s", ("0.6us", "2.7us")),
    "flops": (parse_flops, "FLOP/s", ("989.5TFLOP/s", "2250TFLOP/s")),
}


def _quantity(kind: str, bounds: str, allowed: str) -> tuple[BeforeValidator, WithJsonSchema]:
    """The validator and JSON schema of a quantity field: a number in its SI unit or a text with
    a unit; ``bounds`` says the field's range in the schema, ``allowed`` after the unit
    parser's own refusal of a value out of it (``-80GB``, ``nan``: "must be ... >= 0 bytes")."""
    parser, unit, examples = _QUANTITIES[kind]
    shown = " or ".join(repr(e) for e in examples)

    def parse(value: Any, name: str) -> Any:
        try:
            return parser(value, name=name)
        except ValueError as exc:
            if is_bound(exc):  # the parser's own bound ("> 0"): the field's range beside it
                raise ValueError(f"{exc}; allowed: {allowed}") from None
            raise

    def before(value: Any, info: ValidationInfo) -> Any:
        name = info.field_name or kind
        if isinstance(value, bool):
            raise ValueError(
                f"{name}: expected a quantity with a unit such as {shown}, got {value!r}"
            )
        if isinstance(value, int | float):
            if info.context and info.context.get(REQUIRE_UNITS):
                raise ValueError(
                    f"{name}: a unit is required in preset files: write a string such as "
                    f"{shown}, not the bare number {value!r}"
                )
            return parse(value, name)
        if isinstance(value, str):
            try:
                float(value)
            except ValueError:
                return parse(value, name)
            raise ValueError(
                f"{name}: a unit is required: write a string such as {shown}, not {value!r}"
            )
        return value  # strict validation names the wrong type

    schema = {
        "type": "string",
        "description": f"a quantity with a unit, stored in {unit}; {bounds}",
        "examples": list(examples),
    }
    return BeforeValidator(before), WithJsonSchema(schema)


Bytes = Annotated[
    int, Field(gt=0, le=10**13), *_quantity("bytes", "0 < value <= 10 TB", "(0 B, 10 TB]")
]
# a bandwidth and a dense peak hold the ranges the formulas hold them to (the one limits table,
# :data:`costmodel._limits.LIMITS`: "bandwidth" 1 MB/s..1 PB/s, "peak_flops" 1 GFLOP/s..1
# EFLOP/s), so a Link of 50 B/s (a GB/s slip) or a GPU of 989 FLOP/s (989T meant) is refused
# where it is written, naming its field, rather than priced at years by one model and refused by
# another naming an argument never typed
_BANDWIDTH, _PEAK = LIMITS["bandwidth"], LIMITS["peak_flops"]
Rate = Annotated[
    float,
    Field(ge=_BANDWIDTH.lo, le=_BANDWIDTH.hi),
    *_quantity(
        "rate",
        f"{format_rate(_BANDWIDTH.lo)} <= value <= {format_rate(_BANDWIDTH.hi)}",
        f"[{format_rate(_BANDWIDTH.lo)}, {format_rate(_BANDWIDTH.hi)}]",
    ),
]
Duration = Annotated[
    float, Field(ge=0, le=1.0), *_quantity("duration", "0 <= value <= 1 s", "[0 s, 1 s]")
]
Flops = Annotated[
    float,
    Field(ge=_PEAK.lo, le=_PEAK.hi),
    *_quantity(
        "flops",
        f"{format_flops(_PEAK.lo)} <= value <= {format_flops(_PEAK.hi)}",
        f"[{format_flops(_PEAK.lo)}, {format_flops(_PEAK.hi)}]",
    ),
]
Name = Annotated[str, Field(pattern=_NAME_PATTERN, min_length=1, max_length=64)]


def _flag(allow_none: bool) -> BeforeValidator:
    """The validator of a flag field: a real boolean (Python or numpy), else ValueError in the
    words of every function's flag (:func:`costmodel._checks.flag`: ``"no_sync: expected a bool
    (True, False), got 'no'"``): ``'no'``, ``'off'``, ``'False'`` or ``1`` switched a feature on
    or off silently. Text is read only by ``model_validate_strings`` (its ``true``/``false``),
    as the CLI and URL layers read it; JSON's ``true``/``false`` are booleans already."""

    def before(value: Any, info: ValidationInfo) -> Any:
        from ._checks import flag

        if isinstance(value, str) and info.context and info.context.get(_STRINGS):
            return value  # model_validate_strings: pydantic reads its text ("true")
        return flag(info.field_name or "flag", value, allow_none=allow_none)

    return BeforeValidator(before)


#: validation context key :meth:`OneLineModel.model_validate_strings` sets: its values are text
_STRINGS = "_strings"

#: A flag field of a public model: a real boolean only (:func:`_flag`).
Flag = Annotated[bool, _flag(False)]
#: A flag field whose None is "the strategy's default" (``reshard_after_forward``).
FlagOrNone = Annotated[bool | None, _flag(True)]
Source = Annotated[
    str,
    Field(
        min_length=1,
        description="citation for the numbers: datasheet, paper, or a maintainer's statement "
        "with its issue number",
    ),
]


class OneLineValidationError(ValidationError):
    """Pydantic's ``ValidationError`` (``errors()``, ``title``, caught as ``ValidationError`` or
    ``ValueError``) whose text is one line naming each field and its allowed range
    (:func:`costmodel._limits.validation_parts`), with no pydantic URL or input dump: the base
    of :class:`HardwareError`, :class:`costmodel.architecture.ArchitectureError`,
    :class:`costmodel.strategy.layout.LayoutError` and :class:`costmodel.scenario.ScenarioError`.
    """

    def __str__(self) -> str:
        return "; ".join(validation_parts(self, got=True))

    @classmethod
    def of(cls, exc: ValidationError) -> ValidationError:
        """``exc`` as this class (the same errors); ``exc`` itself if pydantic cannot
        rebuild one of its errors."""
        details: list[Any] = [
            {k: e[k] for k in ("type", "loc", "input", "ctx") if k in e} for e in exc.errors()
        ]
        try:
            return cls.from_exception_data(exc.title, details)
        except Exception:  # noqa: BLE001  (an error type pydantic cannot rebuild: keep it)
            return exc


class HardwareError(OneLineValidationError):
    """A refused :class:`GPU`, :class:`Link`, :class:`Node` or :class:`Cluster` (or a
    calibration record), in one line naming each field and its allowed range, as
    :class:`costmodel.scenario.ScenarioError` says a Scenario's:

    ``memory_bytes: Input should be greater than 0; allowed: (0 B, 10 TB] (got 0)``

    A preset file's refusal is :class:`costmodel.presets.PresetError`, which names the file
    and reads these same errors (``errors()``)."""


def _python_numbers(cls: Any, data: Any) -> Any:
    """``data`` with each numpy number given for one of ``fields`` (``np.int64(2)``, an element
    of an array or a pandas row) the Python number it holds, as the API's functions read it:
    the strict models refused ``nodes=np.int64(2)`` as "should be a valid integer (got 2)". A
    numpy duration, date or complex value is refused naming the field
    (:func:`costmodel._checks.refuse_unreal`): ``np.timedelta64(1, "ns")`` read as 1 (a link
    latency of 1 s), a complex number as its real part, raised as the model's own
    ``one_line_error`` (``ScenarioError``, ``HardwareError``, ...). The caller's dict is not
    changed.

    Done before pydantic sees the data (in :class:`OneLineModel`'s constructor and
    ``model_validate``), not as a model validator: a validator in front of the fields makes
    ``model_validate_strings`` validate the strings as Python input, which the strict models
    refuse."""
    if not isinstance(data, dict):
        return data
    from ._checks import refuse_unreal

    out = None
    for name, value in data.items():
        if not (hasattr(value, "dtype") and name in cls.model_fields):
            continue
        try:
            if value.dtype.kind != "b":  # a numpy bool for a flag field is its Python bool
                refuse_unreal(name, value)
        except ValueError as exc:  # the model's error, as its other refusals are
            raise cls.one_line_error.from_exception_data(
                cls.__name__,
                [{"type": "value_error", "loc": (), "input": data, "ctx": {"error": exc}}],
            ) from None
        if getattr(value, "ndim", None) == 0 and value.dtype.kind in "biuf":
            out = dict(data) if out is None else out
            out[name] = value.item()
    return data if out is None else out


class OneLineModel(BaseModel):
    """A pydantic model whose every road in (the constructor, ``model_validate``,
    ``model_validate_json``, ``model_validate_strings``: pydantic's own, same arguments)
    raises :attr:`one_line_error` (a :class:`OneLineValidationError`) in place of pydantic's
    multi-line report."""

    one_line_error: ClassVar[type[OneLineValidationError]] = OneLineValidationError

    def __init__(self, **data: Any) -> None:
        data = _python_numbers(type(self), data)
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise self.one_line_error.of(exc) from None

    # pydantic's own mark of its base __init__ (RootModel's too): without it pydantic treats
    # this __init__ as a custom one and validates every other road through it, which drops
    # ``model_validate(..., context=...)`` (the preset loader's "a unit is required")
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    @classmethod
    def model_validate(
        cls,
        obj: Any,
        *,
        strict: bool | None = None,
        extra: ExtraValues | None = None,
        from_attributes: bool | None = None,
        context: Any | None = None,
        by_alias: bool | None = None,
        by_name: bool | None = None,
    ) -> Self:
        obj = _python_numbers(cls, obj)
        try:
            return super().model_validate(
                obj,
                strict=strict,
                extra=extra,
                from_attributes=from_attributes,
                context=context,
                by_alias=by_alias,
                by_name=by_name,
            )
        except ValidationError as exc:
            raise cls.one_line_error.of(exc) from None

    @classmethod
    def model_validate_json(
        cls,
        json_data: str | bytes | bytearray,
        *,
        strict: bool | None = None,
        extra: ExtraValues | None = None,
        context: Any | None = None,
        by_alias: bool | None = None,
        by_name: bool | None = None,
    ) -> Self:
        try:
            return super().model_validate_json(
                json_data,
                strict=strict,
                extra=extra,
                context=context,
                by_alias=by_alias,
                by_name=by_name,
            )
        except ValidationError as exc:
            raise cls.one_line_error.of(exc) from None

    @classmethod
    def model_validate_strings(
        cls,
        obj: Any,
        *,
        strict: bool | None = None,
        extra: ExtraValues | None = None,
        context: Any | None = None,
        by_alias: bool | None = None,
        by_name: bool | None = None,
    ) -> Self:
        try:
            return super().model_validate_strings(
                obj,
                strict=strict,
                extra=extra,
                # a flag's text ("false") is read here, as pydantic reads it (_flag)
                context={**(context or {}), _STRINGS: True},
                by_alias=by_alias,
                by_name=by_name,
            )
        except ValidationError as exc:
            raise cls.one_line_error.of(exc) from None


class _Frozen(OneLineModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)
    one_line_error: ClassVar[type[OneLineValidationError]] = HardwareError


class _Hardware(_Frozen):
    """The hardware models: a NaN or an infinity is refused as not finite, with the field's
    range (pydantic's default read a NaN ``compute_capability`` as "less than or equal to 12")."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)


class GPU(_Hardware):
    """One GPU: memory, memory bandwidth, dense tensor throughput, architecture.

    >>> g = GPU(name="h100-sxm", architecture="hopper", compute_capability=9.0,
    ...         memory_bytes="80GB", memory_bandwidth_bytes_per_s="3.35TB/s",
    ...         fp16_dense_flops="989.5TFLOP/s", bf16_dense_flops="989.5TFLOP/s",
    ...         fp8_dense_flops="1979TFLOP/s", source="NVIDIA H100 datasheet")
    >>> g.memory_bytes, g.bf16_dense_flops
    (80000000000, 989500000000000.0)
    """

    name: Name = Field(description="preset name (lower case, digits, '.', '_', '-')")
    description: str = Field("", description="free text: full product name, variant")
    architecture: Architecture = Field(description="GPU architecture family")
    compute_capability: float = Field(
        ge=7.0, le=12.0, description="CUDA compute capability, e.g. 9.0 for Hopper"
    )
    memory_bytes: Bytes = Field(description="device memory [B] (datasheet GB = 1e9 B)")
    memory_bandwidth_bytes_per_s: Rate = Field(description="device memory bandwidth [B/s]")
    fp16_dense_flops: Flops = Field(description="dense FP16 tensor-core throughput [FLOP/s]")
    bf16_dense_flops: Flops | None = Field(
        None, description="dense BF16 tensor-core throughput [FLOP/s]; absent if unsupported"
    )
    fp8_dense_flops: Flops | None = Field(
        None, description="dense FP8 tensor-core throughput [FLOP/s]; absent if unsupported"
    )
    power_limit_w: float | None = Field(
        None,
        strict=False,
        allow_inf_nan=True,  # a NaN is refused by check_power_limit_w, with the GPU's range
        description="board power limit the GPU runs at [W] (nvidia-smi -pl), in [minimum, datasheet "
        "maximum] (costmodel.compute.GPU_MIN_POWER_W, GPU_POWER_W); absent: the datasheet power (costmodel.compute.GPU_POWER_W)",
    )
    source: Source

    @model_validator(mode="after")
    def _check_capability(self) -> GPU:
        allowed = COMPUTE_CAPABILITIES[self.architecture]
        if self.compute_capability not in allowed:
            raise ValueError(
                f"compute_capability: {self.compute_capability} does not match `architecture` "
                f"{self.architecture!r}; allowed: {', '.join(map(str, allowed))}"
            )
        if self.power_limit_w is not None:
            check_power_limit_w(self, self.power_limit_w)
        return self

    def with_power_limit_w(self, power_limit_w: float | None) -> GPU:
        """This GPU capped at ``power_limit_w`` [W] (None: back to its datasheet power).

        Validated by :func:`check_power_limit_w`: in [minimum, datasheet maximum] (H100 SXM
        200..700 W, A100 SXM 100..400 W).
        """
        if power_limit_w is not None:  # checked first: an array compares element-wise
            power_limit_w = check_power_limit_w(self, power_limit_w)
        if power_limit_w == self.power_limit_w:
            return self
        return GPU.model_validate({**_shallow(self), "power_limit_w": power_limit_w})

    @property
    def peak_flops(self) -> float:
        """Dense BF16 throughput if supported, else FP16 [FLOP/s]: the training peak."""
        return self.bf16_dense_flops if self.bf16_dense_flops is not None else self.fp16_dense_flops


class Link(_Hardware):
    """A link class (NVLink generation, PCIe x16, a NIC): the datasheet figure and what it counts.

    ``datasheet_bandwidth_bytes_per_s`` is the figure as printed; ``datasheet_direction`` says
    whether it is per direction or the sum of both; ``links_in_figure`` how many physical
    links or ports it adds up (18 for H100's "NVLink 900GB/s", 1 for a NIC port). Formulas use
    :attr:`per_direction_bandwidth_bytes_per_s` (and :attr:`effective_bandwidth_bytes_per_s`).

    >>> ndr = Link(name="ib-ndr", kind="infiniband", generation="NDR",
    ...            datasheet_bandwidth_bytes_per_s="400Gb/s", datasheet_direction="per_direction",
    ...            latency_s="2.7us", efficiency=0.96, efficiency_source="nccl-tests #290/#319",
    ...            source="ConnectX-7 datasheet")
    >>> ndr.per_direction_bandwidth_bytes_per_s / 1e9, ndr.effective_bandwidth_bytes_per_s / 1e9
    (50.0, 48.0)
    """

    name: Name = Field(description="preset name")
    description: str = Field("", description="free text")
    kind: LinkKind = Field(description="link technology")
    generation: str = Field(min_length=1, description="generation, e.g. 'NVLink 4', 'NDR', 'Gen5'")
    datasheet_bandwidth_bytes_per_s: Rate = Field(
        description="bandwidth as the datasheet prints it [B/s]"
    )
    datasheet_direction: Literal["per_direction", "bidirectional"] = Field(
        description="whether the datasheet figure counts one direction or both added together"
    )
    links_in_figure: int = Field(
        1, ge=1, le=64, description="physical links or ports the datasheet figure adds up"
    )
    line_rate_bytes_per_s: Rate | None = Field(
        None, description="signalling rate per direction of one link or port, if cited [B/s]"
    )
    latency_s: Duration = Field(description="latency per hop [s]")
    efficiency: float = Field(
        1.0,
        gt=0.0,
        le=1.0,
        description="fraction of the per-direction bandwidth bulk transfers reach (measured)",
    )
    efficiency_source: str = Field(
        "", description="citation for efficiency; required when efficiency < 1"
    )
    source: Source

    @model_validator(mode="after")
    def _check_efficiency_source(self) -> Link:
        if self.efficiency < 1.0 and not self.efficiency_source.strip():
            raise ValueError(
                f"efficiency: {self.efficiency} needs `efficiency_source` (a citation for the "
                "measured fraction); allowed: 1.0 without one"
            )
        return self

    @property
    def per_direction_bandwidth_bytes_per_s(self) -> float:
        """The datasheet figure per direction [B/s]: halved if the datasheet counts both."""
        halves = 2.0 if self.datasheet_direction == "bidirectional" else 1.0
        return self.datasheet_bandwidth_bytes_per_s / halves

    @property
    def bidirectional_bandwidth_bytes_per_s(self) -> float:
        """Both directions added [B/s]: what NVIDIA's NVLink/PCIe datasheets print."""
        return 2.0 * self.per_direction_bandwidth_bytes_per_s

    @property
    def per_link_bandwidth_bytes_per_s(self) -> float:
        """Per direction, per physical link or port [B/s]."""
        return self.per_direction_bandwidth_bytes_per_s / self.links_in_figure

    @property
    def effective_bandwidth_bytes_per_s(self) -> float:
        """Per direction, all links of the figure, times :attr:`efficiency` [B/s]."""
        return self.per_direction_bandwidth_bytes_per_s * self.efficiency


class Node(_Hardware):
    """One node: its GPUs, the link between them, its NICs, in-switch reduction support.

    For a GB200 NVL72 rack the "node" is the whole NVLink domain (72 GPUs over 18 hosts,
    ``hosts_per_node = 18``), because that is the unit inside which traffic stays on NVLink.
    """

    name: str = Field("", description="system name, e.g. 'NVIDIA DGX H100'")
    gpus_per_node: int = Field(ge=1, le=1024, description="GPUs in one node (NVLink domain)")
    hosts_per_node: int = Field(
        1, ge=1, le=1024, description="operating-system hosts (trays) in one node"
    )
    gpu: GPU
    intra_link: Link = Field(description="link between GPUs inside the node")
    intra_kind: IntraKind = Field(
        description="'nvswitch' (all-to-all through switches), 'nvlink-mesh' (direct links), 'pcie'"
    )
    nvlinks_per_gpu: int | None = Field(
        None, ge=0, le=64, description="NVLinks per GPU; default: the intra link's links_in_figure"
    )
    p2p: Flag = Field(True, description="GPU peer-to-peer access inside the node")
    nvls: Flag = Field(False, description="in-switch reduction inside the node (NVLink SHARP)")
    nics_per_node: int = Field(0, ge=0, le=1024, description="network ports per node for GPUs")
    nic: Link | None = Field(None, description="the network port, absent when nics_per_node = 0")
    fabric: Fabric = Field("none", description="the network between nodes")
    sharp: Flag = Field(False, description="in-network reduction across nodes (IB SHARP)")
    cpu_vendor: CpuVendor = Field("unknown", description="host CPU vendor (NCCL tunes on it)")
    whole_node_gpus: int | None = Field(
        None,
        ge=1,
        le=1024,
        description="GPUs of the whole node when this node is a slice of it "
        "(Cluster.with_gpus_per_node sets it; a rented node is billed whole); None: the whole node",
    )
    source: Source

    @model_validator(mode="after")
    def _check(self) -> Node:
        if self.whole_node_gpus is not None and self.whole_node_gpus < self.gpus_per_node:
            raise ValueError(
                f"whole_node_gpus: {self.whole_node_gpus} is below `gpus_per_node` "
                f"{self.gpus_per_node}: a slice has at most the whole node's GPUs"
            )
        kind = self.intra_link.kind
        if self.intra_kind == "pcie" and kind != "pcie":
            raise ValueError(f"intra_kind: 'pcie' needs a pcie `intra_link`, got kind {kind!r}")
        if self.intra_kind != "pcie" and kind != "nvlink":
            raise ValueError(
                f"intra_kind: {self.intra_kind!r} needs an nvlink `intra_link`, got kind {kind!r}"
            )
        if self.intra_kind == "pcie" and self.nvlinks_per_gpu not in (None, 0):
            raise ValueError(
                f"nvlinks_per_gpu: {self.nvlinks_per_gpu} with `intra_kind` 'pcie'; allowed: 0"
            )
        if not self.p2p and self.intra_kind != "pcie":
            raise ValueError("p2p: false is only possible with `intra_kind` 'pcie'")
        if self.nvls and self.intra_kind != "nvswitch":
            raise ValueError(f"nvls: true needs `intra_kind` 'nvswitch', got {self.intra_kind!r}")
        if self.nvls and self.gpu.architecture not in ("hopper", "blackwell"):
            raise ValueError(
                f"nvls: true needs a hopper or blackwell GPU, got {self.gpu.architecture!r}"
            )
        if (self.nics_per_node == 0) != (self.nic is None) or (self.nic is None) != (
            self.fabric == "none"
        ):
            raise ValueError(
                f"nics_per_node: {self.nics_per_node}, with `nic` "
                f"{'set' if self.nic else 'absent'} and `fabric` {self.fabric!r}: either all "
                "three describe a network or none does (`nics_per_node` 0, no `nic`, `fabric` "
                "'none')"
            )
        if self.nic is not None:
            expected = _FABRIC_OF_KIND.get(self.nic.kind)
            if expected != self.fabric:
                raise ValueError(
                    f"fabric: {self.fabric!r} does not match the `nic` kind "
                    f"{self.nic.kind!r}; allowed: {expected!r}"
                )
        if self.sharp and self.fabric != "infiniband":
            raise ValueError(f"sharp: true needs `fabric` 'infiniband', got {self.fabric!r}")
        return self

    @property
    def nvlinks(self) -> int:
        """NVLinks per GPU (0 for PCIe nodes)."""
        if self.intra_kind == "pcie":
            return 0
        return (
            self.nvlinks_per_gpu
            if self.nvlinks_per_gpu is not None
            else (self.intra_link.links_in_figure)
        )

    @property
    def intra_bandwidth_bytes_per_s(self) -> float:
        """Per GPU, per direction, at line rate [B/s]: NVLinks x per-link, or the PCIe x16 link."""
        if self.intra_kind == "pcie":
            return self.intra_link.per_direction_bandwidth_bytes_per_s
        return self.nvlinks * self.intra_link.per_link_bandwidth_bytes_per_s


# --- calibration (fitted alpha-beta per op, algorithm, protocol and level) ---------------------
CalibrationLevel = Literal["intra", "inter"]
CollectiveOp = Op  # tables.Op: the one list of collectives
#: A count a calibration's rows measured (ranks, nodes, GPUs per node): a whole number >= 1.
#: A hand-edited 0 or -8 read silently and only stopped the measured shape from applying.
MeasuredCount = Annotated[int, Field(ge=1)]
#: The fabric terms a calibration can fit (``FabricCalibration.measured``), as
#: :func:`costmodel.validation.calibrate.fit_fabric` names them.
FabricTerm = Literal[
    "bandwidth_efficiency",
    "latency_scale",
    "host_floor_scale",
    "nic_efficiency",
    "net_latency_us",
    "duplex_efficiency",
]


def textbook_algorithm(op: str, algorithm: str) -> str:
    """The :data:`costmodel.collectives.ALGORITHMS` name of ``algorithm`` for ``op``.

    Accepts NCCL's spelling in any case (``"Ring"``, ``"TREE"``, ``"NVLS"``) and the ring
    aliases (``"ring"`` is broadcast's ``"chain"`` and all-to-all's ``"pairwise"``).

    >>> textbook_algorithm("broadcast", "Ring"), textbook_algorithm("all_reduce", "NVLS")
    ('chain', 'nvls')
    """
    from .collectives import ALGORITHMS, ALIASES

    if op not in ALGORITHMS:
        raise ValueError(f"op: unknown collective {op!r}; allowed: {', '.join(ALGORITHMS)}")
    name = str(algorithm).lower()
    name = ALIASES[op].get(name, name)
    if name not in ALGORITHMS[op]:
        raise ValueError(
            f"algorithm: {algorithm!r} has no textbook formula for {op}; allowed: "
            f"{', '.join(ALGORITHMS[op])}"
        )
    return name


class CollectiveFit(_Frozen):
    r"""One fitted group of a calibration: :math:`T(M, N) = s(N)\,\alpha + b(M, N) / B`.

    ``s`` and ``b`` are :func:`costmodel.collectives.latency_steps` and
    :func:`~costmodel.collectives.bytes_per_rank` of ``op`` and ``algorithm`` (DESIGN 3.1);
    ``latency_s`` is alpha, ``bandwidth_bytes_per_s`` is B. Written by
    :func:`costmodel.validation.calibrate.write_calibration`.
    """

    op: CollectiveOp = Field(description="collective (collectives.OPS)")
    algorithm: str = Field("ring", description="textbook algorithm (collectives.ALGORITHMS[op])")
    protocol: str = Field(
        "auto",
        min_length=1,
        description="NCCL protocol measured (NCCL_PROTO), 'auto' if not pinned",
    )
    level: CalibrationLevel = Field(description="'intra' (one node) or 'inter' (several nodes)")
    latency_s: Duration = Field(description="fitted alpha, per latency step")
    bandwidth_bytes_per_s: Rate = Field(description="fitted B = 1/beta, per rank")
    ranks: tuple[MeasuredCount, ...] = Field((), strict=False, description="rank counts measured")
    points: int = Field(0, ge=0, description="measured points fitted")
    rms_rel_error: float | None = Field(
        None,
        ge=0,
        description="RMS busbw error of the fitted rows (busbw_fit / busbw_meas - 1 = "
        "t_meas / t_fit - 1, as validate compare's rel_error)",
    )
    max_abs_rel_error: float | None = Field(
        None, ge=0, description="largest |busbw error| of the fitted rows"
    )
    cv_max_abs_rel_error: float | None = Field(
        None, ge=0, description="largest |busbw error| on held-out sizes (every other size)"
    )
    cv_max_abs_rel_error_ge_1mib: float | None = Field(
        None, ge=0, description="the same, held-out sizes >= 1 MiB only"
    )
    min_bytes: Bytes | None = Field(
        None, description="smallest message size fitted: the held-out errors say nothing below"
    )
    max_bytes: Bytes | None = Field(
        None, description="largest message size fitted: the held-out errors say nothing above"
    )
    source: Source

    @model_validator(mode="after")
    def _check_fitted_sizes(self) -> Self:
        _sizes_in_order(self.min_bytes, self.max_bytes)
        return self

    @field_validator("algorithm")
    @classmethod
    def _canonical_algorithm(cls, value: str, info: ValidationInfo) -> str:
        op = info.data.get("op")
        return value if op is None else textbook_algorithm(op, value)

    @field_validator("protocol")
    @classmethod
    def _known_protocol(cls, value: str) -> str:
        """'auto' or an NCCL protocol, in the spelling calibrate writes (``LL128`` ->
        ``ll128``): a typo was kept and then never matched a pinned protocol, so its fit was
        silently passed over for another."""
        from .tables import NCCL_PROTOCOLS

        key = value.lower().replace("_", "").replace("-", "")
        if key != "auto" and key not in NCCL_PROTOCOLS:
            raise ValueError(
                f"protocol: {value!r} is not an NCCL protocol; allowed: auto, "
                f"{', '.join(NCCL_PROTOCOLS)}"
            )
        return key

    @field_validator("ranks")
    @classmethod
    def _check_ranks(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if any(n < 1 for n in value):
            raise ValueError(f"ranks: {list(value)} must all be >= 1")
        return value

    def time_s(self, message_bytes: Any, ranks: Any) -> Any:
        r"""Fitted time [s]: :math:`s(N)\,\alpha + b(M, N)/B`.

        >>> f = CollectiveFit(op="all_reduce", level="intra", latency_s="100us",
        ...                   bandwidth_bytes_per_s="1GB/s", source="example")
        >>> round(f.time_s(1e6, 2) * 1e3, 6)     # 2 x 0.1 ms + 1 MB / 1 GB/s (N = 2: b = M)
        1.2
        """
        from .collectives import Algorithm, bytes_per_rank, latency_steps

        # algorithm is a str field; collectives checks it against ALGORITHMS[op] (ValueError)
        algorithm = cast(Algorithm, self.algorithm)
        return (
            latency_steps(self.op, ranks, algorithm) * self.latency_s
            + bytes_per_rank(self.op, message_bytes, ranks, algorithm) / self.bandwidth_bytes_per_s
        )


Placement = Literal["out-of-place", "in-place", "both"]
Backend = Literal["nccl", "gloo"]
"""The communication backends a calibration's runs can come from: those the harness runs and
writes in its results' ``backend`` column (nccl-tests and ``validate torch --backend nccl``:
nccl; ``validate torch --backend gloo`` on CPUs: gloo)."""


class CandidateCalibration(_Frozen):
    r"""Calibrated parameters of one realistic-model candidate (``[[candidate]]`` in the TOML).

    The realistic model (:mod:`costmodel.realistic`) times each NCCL (algorithm, protocol)
    candidate as :math:`t_c = \lambda_c \ell_c + M h_c / \eta_c` (capped by the hardware),
    takes the fastest, then the host floor. ``bandwidth_efficiency`` is :math:`\eta_c` and
    ``latency_scale`` :math:`\lambda_c`, both fitted by
    the calibration before fabric terms (robust least squares on log time); still read from
    older files.
    ``algorithm = protocol = "*"`` is the entry every other candidate of (op, level) takes and
    carries ``host_floor_scale``, the fitted multiplier of the model's host floor.
    """

    op: CollectiveOp = Field(description="collective")
    level: CalibrationLevel = Field(description="'intra' (one node) or 'inter' (several nodes)")
    fabric: Fabric = Field("none", description="network between nodes at this level")
    algorithm: str = Field(description="NCCL algorithm (ring, tree, nvls, ...) or '*'")
    protocol: str = Field(description="NCCL protocol (ll, ll128, simple) or '*'")
    bandwidth_efficiency: float = Field(gt=0, le=100, description="eta: bandwidth multiplier")
    latency_scale: float = Field(gt=0, le=1000, description="lambda: latency multiplier")
    host_floor_scale: float | None = Field(
        None, gt=0, le=1000, description="multiplier of the host floor (the * entry)"
    )
    nodes: tuple[MeasuredCount, ...] = Field((), strict=False, description="node counts measured")
    gpus_per_node: tuple[MeasuredCount, ...] = Field(
        (), strict=False, description="GPUs per node measured"
    )
    min_bytes: Bytes | None = Field(None, description="smallest size fitted")
    max_bytes: Bytes | None = Field(None, description="largest size fitted")
    points: int = Field(0, ge=0, description="measured points this candidate was chosen on")
    source: Source

    @model_validator(mode="after")
    def _check_size_range(self) -> Self:
        _sizes_in_order(self.min_bytes, self.max_bytes)
        return self


def _sizes_in_order(min_bytes: int | None, max_bytes: int | None) -> None:
    """Refuse a fitted size range whose ``max_bytes`` lies below its ``min_bytes`` (a
    hand-edited calibration: no run measured such a range)."""
    if min_bytes is not None and max_bytes is not None and max_bytes < min_bytes:
        raise ValueError(
            f"max_bytes: {max_bytes} B is below min_bytes ({min_bytes} B); allowed: "
            f"[{min_bytes} B, 10 TB] (the largest size fitted, at least the smallest)"
        )


class FabricShapeTerms(_Frozen):
    """The fitted fabric terms before the shrinkage, used at the calibration's own shape.

    :func:`costmodel.validation.calibrate.fit_fabric` shrinks each term towards the model's
    value by how well the rows identify it, for other ops and node/GPU counts; on the ops,
    node and GPU counts the rows measured (``FabricCalibration.ops``, ``nodes``,
    ``gpus_per_node``) the fit itself is the best estimate of that path, and these apply.
    None: as the shrunk term.
    """

    bandwidth_efficiency: float | None = Field(None, gt=0, le=100)
    latency_scale: float | None = Field(None, gt=0, le=1000)
    host_floor_scale: float | None = Field(None, gt=0, le=1000)
    nic_efficiency: float | None = Field(None, gt=0, le=1)
    net_latency_s: Duration | None = None
    duplex_efficiency: float | None = Field(None, gt=0, le=1)


class FabricCalibration(_Frozen):
    r"""Calibrated terms of the cluster's fabric at one level (``[[fabric]]`` in the TOML).

    Unlike :class:`CandidateCalibration` (one multiplier pair per NCCL candidate of one op),
    these are properties of the hardware path, so one calibration applies to every op and to
    other node and GPU counts of the same level (:mod:`costmodel.predict`):

    - ``bandwidth_efficiency`` :math:`\eta`: multiplier on every candidate's modelled bandwidth
      (one node: the NVLink/PCIe link's efficiency; several nodes: the network path's);
    - ``latency_scale`` :math:`\lambda`: multiplier on NCCL's modelled latency;
    - ``host_floor_scale`` :math:`\phi`: multiplier on the host launch floor;
    - several nodes only: ``nic_efficiency`` (share of the NICs' line rate reached: the
      hardware cap and the NIC-bound ring use it) and ``net_latency_s`` (extra latency per
      network hop, NCCL's ``latencyInter`` slot);
    - host-staged (no GPU peer-to-peer) nodes: ``duplex_efficiency``, the share of the one-way
      rate each direction gets when an op sends and receives at once.

    A term the calibration's rows did not constrain is left out (None: the model's own value);
    ``measured`` lists those that were. Fitted by
    :func:`costmodel.validation.calibrate.fit_fabric` (robust least squares on log time).
    """

    level: CalibrationLevel = Field(description="'intra' (one node) or 'inter' (several nodes)")
    fabric: Fabric = Field("none", description="network between nodes at this level")
    bandwidth_efficiency: float = Field(1.0, gt=0, le=100, description="eta: bandwidth multiplier")
    latency_scale: float = Field(1.0, gt=0, le=1000, description="lambda: latency multiplier")
    host_floor_scale: float = Field(1.0, gt=0, le=1000, description="host floor multiplier")
    nic_efficiency: float | None = Field(
        None, gt=0, le=1, description="share of the NICs' line rate reached (several nodes)"
    )
    net_latency_s: Duration | None = Field(
        None, description="extra latency per network hop (several nodes)"
    )
    duplex_efficiency: float | None = Field(
        None, gt=0, le=1, description="share each direction gets on a host-staged path"
    )
    measured: tuple[FabricTerm, ...] = Field(
        (), strict=False, description="terms the rows constrained"
    )
    ops: tuple[CollectiveOp, ...] = Field((), strict=False, description="ops measured")
    nodes: tuple[MeasuredCount, ...] = Field((), strict=False, description="node counts measured")
    gpus_per_node: tuple[MeasuredCount, ...] = Field(
        (), strict=False, description="GPUs per node measured"
    )
    min_bytes: Bytes | None = Field(None, description="smallest size fitted")
    max_bytes: Bytes | None = Field(None, description="largest size fitted")
    points: int = Field(0, ge=0, description="measured points fitted")
    rms_rel_error: float | None = Field(
        None,
        ge=0,
        le=1e6,
        description="rms busbw error of the fit on its own rows (0.05 is 5 %)",
    )
    source: Source
    measured_shape: FabricShapeTerms | None = Field(
        None, description="the unshrunk fit, used on the ops and node/GPU counts measured"
    )

    @model_validator(mode="after")
    def _check_size_range(self) -> Self:
        _sizes_in_order(self.min_bytes, self.max_bytes)
        return self

    def at(self, op: str, nodes: int, gpus_per_node: int) -> FabricCalibration:
        """The terms for ``op`` on ``nodes`` x ``gpus_per_node``: the unshrunk fit
        (:attr:`measured_shape`) where the rows measured that op and shape, else these."""
        own = self.measured_shape
        if (
            own is None
            or op not in self.ops
            or nodes not in self.nodes
            or gpus_per_node not in self.gpus_per_node
        ):
            return self
        return self.model_copy(update={k: v for k, v in own.model_dump().items() if v is not None})


class CalibrationPreset(_Frozen):
    """Fitted figures for a cluster: a calibration preset (``preset = "calibration"``).

    ``base`` names the cluster preset the fits refine; loaded through
    :func:`costmodel.presets.load` / ``cm.cluster``, a calibration with a base becomes that
    :class:`Cluster` with :attr:`Cluster.calibration` set (see :mod:`costmodel.predict` for how
    predictions use it). In the TOML file the alpha-beta fits are ``[[fit]]`` tables and the
    realistic model's calibrated candidates ``[[candidate]]`` tables; ``placement`` says which
    nccl-tests rows were fitted (out-of-place, in-place or both).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, populate_by_name=True)

    name: Name = Field(description="preset name (the file name without .toml)")
    base: Name | None = Field(None, description="cluster preset the fits refine")
    description: str = Field("", description="free text")
    backend: Backend | None = Field(None, description="communication backend measured (nccl, gloo)")
    method: str = Field("", description="how the fits were made")
    created: str = Field("", description="when the fits were made (ISO 8601)")
    fits: tuple[CollectiveFit, ...] = Field(
        (),
        strict=False,
        validation_alias=AliasChoices("fit", "fits"),
        description="fitted alpha-beta groups ([[fit]] tables in the file)",
    )
    candidates: tuple[CandidateCalibration, ...] = Field(
        (),
        strict=False,
        validation_alias=AliasChoices("candidate", "candidates"),
        description="calibrated realistic-model candidates ([[candidate]] tables)",
    )
    fabric: tuple[FabricCalibration, ...] = Field(
        (),
        strict=False,
        description="calibrated fabric terms per level ([[fabric]] tables)",
    )
    placement: Placement | None = Field(
        None, description="nccl-tests rows fitted: out-of-place, in-place or both"
    )
    source: Source

    @model_validator(mode="after")
    def _check_nonempty(self) -> CalibrationPreset:
        if not self.fits and not self.candidates and not self.fabric:
            raise ValueError(
                "fit: a calibration needs at least one [[fit]], [[candidate]] or [[fabric]]"
            )
        return self

    def fabric_terms(self, level: str) -> FabricCalibration | None:
        """The calibrated fabric terms of ``level`` ("intra"/"inter"); None where none."""
        return next((f for f in self.fabric if f.level == level), None)

    def covers(self, op: str, level: str) -> bool:
        """Whether some fit is for ``op`` at ``level`` ("intra"/"inter")."""
        return (
            any(f.op == op and f.level == level for f in self.fits)
            or any(c.op == op and c.level == level for c in self.candidates)
            or self.fabric_terms(level) is not None
        )

    def candidate_scale(self, op: str, level: str) -> dict[tuple[str, str], tuple[float, float]]:
        """``{(algorithm, protocol): (efficiency, latency scale)}`` of (op, level); {} if none."""
        return {
            (c.algorithm, c.protocol): (c.bandwidth_efficiency, c.latency_scale)
            for c in self.candidates
            if c.op == op and c.level == level
        }

    def host_floor_scale(self, op: str, level: str) -> float:
        """The fitted multiplier of the host floor of (op, level); 1 where none was fitted."""
        for c in self.candidates:
            if c.op == op and c.level == level and c.host_floor_scale is not None:
                return c.host_floor_scale
        return 1.0


class Cluster(_Hardware):
    """A cluster: ``nodes`` copies of one :class:`Node`. Hands the formulas plain SI numbers.

    Bandwidths are per direction. ``intra_*`` and ``inter_*`` are line rates (datasheet);
    ``effective_*`` multiply by the links' measured efficiency factors.

    >>> from costmodel.presets import cluster
    >>> c = cluster("dgx-h100", nodes=2)
    >>> c.ranks, c.intra_bandwidth_bytes_per_s / 1e9, c.inter_bandwidth_bytes_per_s / 1e9
    (16, 450.0, 50.0)
    >>> c.node_inter_bandwidth_bytes_per_s / 1e9, c.effective_node_inter_bandwidth_bytes_per_s / 1e9
    (400.0, 384.0)
    """

    name: Name = Field(description="preset name")
    description: str = Field("", description="free text")
    nodes: int = Field(1, ge=1, le=1_000_000, description="number of nodes")
    node: Node
    source: Source
    calibration: CalibrationPreset | None = Field(
        None, description="fitted alpha-beta figures predictions use (a calibration preset)"
    )

    @model_validator(mode="after")
    def _check(self) -> Cluster:
        if self.nodes > 1 and self.node.nics_per_node == 0:
            raise ValueError(
                f"nodes: {self.nodes} nodes but the node has no network (`nics_per_node` 0); "
                "allowed: 1 node, or a node with NICs"
            )
        return self

    # --- structure -----------------------------------------------------------------------
    @property
    def gpus_per_node(self) -> int:
        """GPUs per node."""
        return self.node.gpus_per_node

    @property
    def ranks(self) -> int:
        """Total GPUs (one rank each)."""
        return self.nodes * self.node.gpus_per_node

    @property
    def gpu(self) -> GPU:
        """The GPU model."""
        return self.node.gpu

    @property
    def intra_kind(self) -> str:
        """'nvswitch', 'nvlink-mesh' or 'pcie'."""
        return self.node.intra_kind

    @property
    def p2p(self) -> bool:
        """GPU peer-to-peer inside a node."""
        return self.node.p2p

    @property
    def nvls(self) -> bool:
        """In-switch reduction inside a node (NVLink SHARP)."""
        return self.node.nvls

    @property
    def sharp(self) -> bool:
        """In-network reduction across nodes (IB SHARP / CollNet)."""
        return self.node.sharp

    @property
    def fabric(self) -> str:
        """The network between nodes ('none' if the node has no NIC)."""
        return self.node.fabric

    @property
    def nics_per_node(self) -> int:
        """Network ports per node."""
        return self.node.nics_per_node

    @property
    def nic(self) -> Link | None:
        """The network port's link preset."""
        return self.node.nic

    @property
    def nvlinks_per_gpu(self) -> int:
        """NVLinks per GPU (0 on PCIe nodes)."""
        return self.node.nvlinks

    @property
    def cpu_vendor(self) -> str:
        """Host CPU vendor."""
        return self.node.cpu_vendor

    @property
    def hosts_per_node(self) -> int:
        """Operating-system hosts in one node (18 trays for GB200 NVL72, else 1)."""
        return self.node.hosts_per_node

    # --- numbers for the formulas ---------------------------------------------------------
    @property
    def nvlink_bandwidth_per_link_bytes_per_s(self) -> float:
        """One NVLink, one direction [B/s] (0.0 on PCIe nodes)."""
        if self.node.intra_kind == "pcie":
            return 0.0
        return self.node.intra_link.per_link_bandwidth_bytes_per_s

    @property
    def intra_bandwidth_bytes_per_s(self) -> float:
        """Per GPU, per direction, datasheet line rate, inside a node [B/s]."""
        return self.node.intra_bandwidth_bytes_per_s

    @property
    def node_inter_bandwidth_bytes_per_s(self) -> float:
        """All NICs of one node, per direction, line rate [B/s] (0.0 without a network)."""
        if self.node.nic is None:
            return 0.0
        return self.node.nics_per_node * self.node.nic.per_direction_bandwidth_bytes_per_s

    @property
    def inter_bandwidth_bytes_per_s(self) -> float:
        """Per-GPU share of the node's NICs, per direction, line rate [B/s]."""
        return self.node_inter_bandwidth_bytes_per_s / self.node.gpus_per_node

    @property
    def effective_intra_bandwidth_bytes_per_s(self) -> float:
        """:attr:`intra_bandwidth_bytes_per_s` times the intra link's efficiency [B/s]."""
        return self.intra_bandwidth_bytes_per_s * self.node.intra_link.efficiency

    @property
    def effective_node_inter_bandwidth_bytes_per_s(self) -> float:
        """:attr:`node_inter_bandwidth_bytes_per_s` times the NIC's efficiency [B/s]."""
        if self.node.nic is None:
            return 0.0
        return self.node_inter_bandwidth_bytes_per_s * self.node.nic.efficiency

    @property
    def effective_inter_bandwidth_bytes_per_s(self) -> float:
        """:attr:`inter_bandwidth_bytes_per_s` times the NIC's efficiency [B/s]."""
        return self.effective_node_inter_bandwidth_bytes_per_s / self.node.gpus_per_node

    @property
    def intra_latency_s(self) -> float:
        """Latency per hop inside a node [s]."""
        return self.node.intra_link.latency_s

    @property
    def inter_latency_s(self) -> float:
        """Latency per hop between nodes [s] (0.0 without a network)."""
        return 0.0 if self.node.nic is None else self.node.nic.latency_s

    @property
    def peak_flops(self) -> float:
        """Dense BF16 (else FP16) throughput of one GPU [FLOP/s]."""
        return self.node.gpu.peak_flops

    # --- variants ----------------------------------------------------------------------------
    def with_nodes(self, nodes: int) -> Cluster:
        """The same cluster with ``nodes`` nodes: a whole number in 1..1,000,000 (``2.0`` and a
        numpy integer too, as :func:`costmodel.cluster` reads them); else a one-line ValueError
        naming ``nodes`` and the range.

        >>> from costmodel.presets import cluster
        >>> cluster("dgx-h100").with_nodes(0)
        Traceback (most recent call last):
        ...
        ValueError: nodes: must be a whole number in 1..1,000,000, got 0 (dgx-h100)
        """
        from ._checks import whole_count
        from ._limits import LIMITS, MAX_NODES

        rule = LIMITS["nodes"].rule
        try:
            n = whole_count("nodes", nodes)  # an array: one count per call (its own message)
        except ValueError as exc:
            if "one count per call" in str(exc):
                raise
            raise ValueError(f"nodes: must be {rule}, got {nodes!r} ({self.name})") from None
        if n > MAX_NODES:
            raise ValueError(f"nodes: must be {rule}, got {n:,} ({self.name})")
        return Cluster.model_validate({**_shallow(self), "nodes": n})

    def with_gpus_per_node(self, gpus_per_node: int) -> Cluster:
        """A slice of each node with ``gpus_per_node`` GPUs; each GPU keeps its share of NICs.

        NICs scale as ``ceil(nics_per_node * g / G)`` (one NIC per GPU stays one per GPU; 32
        EFA ports over 8 GPUs give 16 for a 4-GPU slice).
        """
        from ._checks import whole_count

        g0 = self.node.gpus_per_node
        given = gpus_per_node
        gpus_per_node = whole_count("gpus_per_node", gpus_per_node)
        if gpus_per_node > g0:
            shown = repr(given) if type(given) is float else str(gpus_per_node)  # not 301 digits
            raise ValueError(
                f"gpus_per_node: {self.name} has {g0} GPUs per node, got {shown}; allowed: "
                f"1..{g0} (a slice of the node), or a preset with larger nodes"
            )
        nics = self.node.nics_per_node
        if nics:
            nics = math.ceil(nics * gpus_per_node / g0)
        whole = self.node.whole_node_gpus or g0  # a slice of a slice: still the whole node's
        node = Node.model_validate(
            {
                **_shallow(self.node),
                "gpus_per_node": gpus_per_node,
                "nics_per_node": nics,
                "whole_node_gpus": None if gpus_per_node == whole else whole,
            }
        )
        return Cluster.model_validate({**_shallow(self), "node": node})

    def with_power_limit_w(self, power_limit_w: float | None) -> Cluster:
        """This cluster with its GPUs capped at ``power_limit_w`` [W] (:meth:`GPU.with_power_limit_w`;
        None: the datasheet power). The same cluster object when nothing changes.

        >>> from costmodel.presets import cluster
        >>> cluster("dgx-h100").with_power_limit_w(500.0).gpu.power_limit_w
        500.0
        """
        gpu = self.node.gpu.with_power_limit_w(power_limit_w)
        if gpu is self.node.gpu:
            return self
        node = Node.model_validate({**_shallow(self.node), "gpu": gpu})
        return Cluster.model_validate({**_shallow(self), "node": node})


def power_limit_text_refusal(name: str, text: Any) -> ValueError:
    """The refusal of a power limit typed as no number (``500W``, ``max``) where the GPU, and so
    its range, is not read yet: the field, the unit the number is in and each modelled family's
    [minimum, datasheet maximum] (:func:`check_power_limit_w` then checks a number against its
    GPU's). The one wording of ``--power-limit-w`` (step, train, scenario) and the step sweep's
    ``power_limit_w`` axis; click's "Input should be a valid number" and the sweep's bare
    "cannot parse '500W' as a number" named no range.

    >>> str(power_limit_text_refusal("power_limit_w", "500W"))
    "power_limit_w: must be a power in watts, a plain number (a100-sxm-80gb 100..400, h100-sxm 200..700: each GPU's minimum and datasheet maximum power limit), e.g. 500, got '500W'"
    """
    from .compute import _FAMILY_POWER_OF, datasheet_power_w, min_power_limit_w
    from .presets import load

    ranges = ", ".join(
        f"{part} {min_power_limit_w(load(part)):g}..{datasheet_power_w(load(part)):g}"
        for part in _FAMILY_POWER_OF.values()
    )
    return ValueError(
        f"{name}: must be a power in watts, a plain number ({ranges}: each GPU's minimum and "
        f"datasheet maximum power limit), e.g. 500, got {text!r}"
    )


def check_power_limit_w(gpu: Any, power_limit_w: Any) -> float:
    """``power_limit_w`` [W] of ``gpu`` if it is in [minimum, datasheet maximum], else
    ``ValueError`` naming the field and the range.

    The range is the one the driver enforces: a board's power limit can be lowered
    (``nvidia-smi -pl``) down to its minimum (:func:`costmodel.compute.min_power_limit_w`: A100
    SXM 100 W, H100/H200 SXM 200 W, the driver's and the DGX BMC's published values) but not
    raised above its datasheet maximum TDP (:func:`costmodel.compute.datasheet_power_w`: A100
    SXM 400 W, H100/H200 SXM 700 W). For any other GPU (B200 and the other Blackwell parts, L40S,
    V100, ...) power scaling is not modelled: the compute fit's power law has no runs of its
    family, so a limit would change nothing, and it is refused saying so (not as a range the
    value missed: the card takes limits the model cannot price). The one check of every
    surface: the GPU model, ``presets.cluster``, ``strategy_step``, ``Scenario``, the CLI, the
    sweep and the step page.
    """
    from .compute import _FAMILY_POWER_OF, datasheet_power_w, gpu_family, min_power_limit_w

    name = str(getattr(gpu, "name", gpu))
    if getattr(power_limit_w, "ndim", 0):  # several powers: one GPU runs at one
        from ._checks import said

        raise ValueError(
            f"power_limit_w: one power per call, got {said(power_limit_w)}; for several, "
            "loop, or cm.sweep(preset=..., power_limit_w=[...])"
        )
    if hasattr(power_limit_w, "item") and not isinstance(power_limit_w, bool):
        power_limit_w = power_limit_w.item()  # a numpy number (an array's element)
    try:
        top = datasheet_power_w(gpu)
        low = min_power_limit_w(gpu)
    except ValueError:
        raise ValueError(
            f"power_limit_w: power scaling is not modelled for {name} ({gpu_family(gpu)}): the "
            "compute fit's power law has no runs of this GPU family (it has "
            f"{', '.join(_FAMILY_POWER_OF)}), so a power limit would change nothing; leave it "
            "unset (the GPU runs at its own power)"
        ) from None
    ok = (
        not isinstance(power_limit_w, bool)
        and isinstance(power_limit_w, (int, float))
        and math.isfinite(power_limit_w)
        and low <= power_limit_w <= top
    )
    if not ok:
        raise ValueError(
            f"power_limit_w: must be a power in [{low:g}, {top:g}] W ({name}'s minimum and "
            f"datasheet maximum power limit), got {power_limit_w!r}"
        )
    return float(power_limit_w)


def _shallow(model: BaseModel) -> dict[str, Any]:
    """Field values without dumping nested models (so they re-validate as instances)."""
    return {name: getattr(model, name) for name in type(model).model_fields}
