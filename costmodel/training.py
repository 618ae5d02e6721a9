r"""Time and cost to train: tokens (or steps) to wall-clock days, GPU-hours and dollars.

.. math::
    n = \lceil D / T_{step} \rceil,\quad W = n\, t_{step},\quad
    G = W N / 3600,\quad \$ = G \cdot p,\quad
    \mathrm{MFU} = \frac{C_{tok}\, T_{step}}{t_{step}\, N\, F_{peak}}

``D`` tokens to train, ``T_step`` tokens per optimizer step (the global batch), ``t_step`` the
step time (predicted by :class:`costmodel.scenario.Scenario` or measured), ``N`` GPUs, ``p`` the
price per GPU-hour, ``C_tok`` the training FLOPs per token
(:meth:`costmodel.architecture.Architecture.training_flops_per_token`, or ``6 P`` for a bare
parameter count, Kaplan et al. 2020) and ``F_peak`` the GPU's dense peak. MFU as defined by
Chowdhery et al. 2022 (PaLM, arXiv:2204.02311, appendix B): model FLOPs per second over peak,
recomputation not counted.

A run on a slice of each node (``gpus_per_node`` below the node's) is billed whole: a cloud
instance, and a price preset's per-GPU price, is paid for every GPU of each node held, so the
dollars are ``$ = W n_nodes g_billed / 3600 * p`` with ``g_billed`` from
:func:`billed_gpus_per_node` (the node's full GPU count for every one-host node), while the
GPU-hours ``G`` stay the ones used; :attr:`TrainingCost.billing_note` says so.

Prices are inputs: ``usd_per_gpu_hour``, or a price preset (``presets/prices/*.toml``: cited
list prices with the date of the source they were read from). A preset is published for one GPU
(``Price.gpu``): given the cluster's GPU (``gpu=``), a preset for another GPU is refused, never
substituted (:func:`check_price_gpu`), and without a preset for that GPU the answer asks for
``usd_per_gpu_hour``. Cloud prices change: every cost carries its price date, and a price older
than :data:`STALE_PRICE_DAYS` days gets a warning (:func:`price_age_warning`).

>>> c = training_cost(2e12, tokens_per_step=4e6, step_time_s=8.0, ranks=512, usd_per_gpu_hour=2.0)
>>> c.steps, round(c.wall_days, 2), round(c.gpu_hours), round(c.cost_usd)
(500000, 46.3, 568889, 1137778)
"""

from __future__ import annotations

import datetime as _dt
import functools
import math
import tomllib
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from . import units
from .presets import shipped_dir

SECONDS_PER_DAY = 86400.0
STALE_PRICE_DAYS = 365
"""A price read more than this many days before today is flagged as possibly out of date: 365
days old is not flagged, 366 is (so a leap year's anniversary, 366 days after a date before its
February 29, is flagged a day before the calendar year is over)."""


def current_date() -> _dt.date:
    """The system date: the day a price's age is measured at when no ``today`` is given
    (:func:`price_age_warning`, :func:`training_cost`, and so the CLI, the sweep and the app);
    the one place the price code reads the clock, so a test fixes the day by replacing it."""
    return _dt.date.today()


class Price(BaseModel):
    """A cited rental price of a GPU instance (frozen, strict)."""

    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")

    name: str
    description: str
    gpu: str = Field(description="GPU preset name")
    gpus_per_instance: int = Field(ge=1)
    usd_per_instance_hour: float = Field(gt=0)
    terms: Literal["on-demand", "spot", "capacity-block", "committed"] = Field(
        description="how the price is bought: on-demand, spot, capacity-block or committed"
    )
    term_years: int | None = Field(
        default=None,
        description="commitment term of a committed price (reserved instance, savings plan, "
        "committed-use discount): 1 or 3 years; absent for every other terms",
    )
    date: str = Field(description="date of the source the price was read from (ISO date)")
    source: str

    @model_validator(mode="after")
    def _term_matches_terms(self) -> Price:
        if self.terms == "committed" and self.term_years not in (1, 3):
            raise ValueError(
                f"term_years: a committed price needs its commitment term, 1 or 3 (years); "
                f"got {self.term_years!r}"
            )
        if self.terms != "committed" and self.term_years is not None:
            raise ValueError(
                f"term_years: only a committed price has a term, and its `terms` are "
                f"{self.terms!r}; got {self.term_years!r}"
            )
        return self

    @property
    def source_sites(self) -> str:
        """The cited :attr:`source` in short: the site of each address it cites, in order, each
        once (a code host's or a data hub's with its owner, ``github.com/datareceipts``, since
        the host alone does not tell a vendor's repository from a third party's dump); the
        text up to its first comma where it cites no address. What the ``price:`` line, the
        app's cost caption and ``costmodel archs`` show beside the date, so an official list
        price can be told from a transcription; the full citation is :attr:`source`.

        >>> Price(name="x", description="d", gpu="h100-sxm", gpus_per_instance=8,
        ...       usd_per_instance_hour=8.0, terms="on-demand", date="2026-01-01",
        ...       source="https://lambda.ai/instances, as transcribed in "
        ...       "https://github.com/api-evangelist/lambda-labs/blob/main/p.yml").source_sites
        'lambda.ai, github.com/api-evangelist'
        """
        import re

        sites: list[str] = []
        for url in re.findall(r"https?://[^\s,\"();:]+", self.source):
            host, _, path = url.split("://", 1)[1].partition("/")
            host = host.removeprefix("www.")
            parts = [x for x in path.split("/") if x]
            if host == "github.com" and parts:
                host = f"{host}/{parts[0]}"
            elif host == "huggingface.co" and len(parts) >= 2:  # datasets/<owner>
                host = f"{host}/{parts[0]}/{parts[1]}"
            if host not in sites:
                sites.append(host)
        return ", ".join(sites) if sites else self.source.split(",", 1)[0].strip()

    @property
    def terms_label(self) -> str:
        """How the price is bought, with the term of a commitment: ``committed-1y``, ``spot``."""
        return f"committed-{self.term_years}y" if self.terms == "committed" else self.terms

    @field_validator("date")
    @classmethod
    def _iso_date(cls, v: str) -> str:
        # "2026-13-01" or "Nov 2026" failed later, in the age's subtraction, with a message
        # that named no field
        try:
            _dt.date.fromisoformat(v)
        except ValueError:
            raise ValueError(f"date: expected an ISO date (YYYY-MM-DD), got {v!r}") from None
        if len(v) != 10:  # fromisoformat also reads "20261109" and "2026-W45-1"
            raise ValueError(f"date: expected an ISO date (YYYY-MM-DD), got {v!r}")
        return v

    @property
    def day(self) -> _dt.date:
        """:attr:`date` as a :class:`datetime.date`."""
        return _dt.date.fromisoformat(self.date)

    @property
    def usd_per_gpu_hour(self) -> float:
        """Price of one GPU for one hour [USD]."""
        return self.usd_per_instance_hour / self.gpus_per_instance


@functools.lru_cache(maxsize=1)
def _prices() -> dict[str, Price]:
    out: dict[str, Price] = {}
    for path in sorted((shipped_dir() / "prices").glob("*.toml")):
        with path.open("rb") as f:
            try:
                p = Price.model_validate(tomllib.load(f))
                p.day  # noqa: B018  (an unreadable date fails here, with the file named)
            except ValueError as exc:
                raise ValueError(f"{path}: {exc}") from None
        out[p.name] = p
    return out


LARGE_MODEL_PARAMS = 65e9
"""From this size (the 70B class: Llama-2-70B has 69.0B parameters) the answers say that
production runs add tensor and pipeline parallelism, which is not modelled."""


def whole_steps_note(tokens: float, steps: int, tokens_per_step: float) -> list[str]:
    """The note of whole steps that train over 1% more tokens than asked, else none.

    Steps are whole, ``n = ceil(D / T_step)``, so ``n T_step >= D``: 1,000 tokens at 32,768
    per step are one step of 32,768 tokens, and the time and cost are that step's. Said where
    the excess passes 1% of ``D`` (a batch that is a sizable part of the run), not for the
    last partial step of a long run.

    >>> whole_steps_note(1000, 1, 32768)[0][:60]
    'steps are whole: 1 step of 32,768 tokens trains 32,768 token'
    >>> whole_steps_note(2e12, 476838, 4194304)
    []
    """
    from .units import format_counted

    trained = steps * tokens_per_step
    if trained <= 1.01 * tokens:
        return []
    return [
        f"steps are whole: {format_counted(steps, 'step')} of "
        f"{tokens_per_step:,.0f} tokens train{'s' if steps == 1 else ''} {trained:,.0f} tokens, "
        f"{trained / tokens:.3g}x the {tokens:,.0f} asked; the time and cost are for those steps"
    ]


def scale_notes(params: float) -> list[str]:
    """What the answer leaves out at this model size (empty below :data:`LARGE_MODEL_PARAMS`).

    Tensor, pipeline, context and expert parallelism are not modelled: the step is data
    parallelism (DDP, ZeRO) only. Production runs of 70B-class models shard each layer with
    tensor parallelism within a node and split layers with pipeline parallelism across nodes
    (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using
    Megatron-LM", arXiv:2104.04473; Llama 3 Herd of Models, arXiv:2407.21783, section 3.3.2).

    >>> scale_notes(7e9)
    []
    >>> scale_notes(70e9)[0][:59]
    'a model of 70B parameters: production runs of this size add'
    >>> scale_notes(671e9)[0][:23]
    'a model of 671B paramet'
    """
    if float(params) < LARGE_MODEL_PARAMS:
        return []
    return [
        f"a model of {float(params) / 1e9:,.0f}B parameters: production runs of this size add "
        "tensor and pipeline parallelism "
        "(Megatron-LM, arXiv:2104.04473; Llama 3, arXiv:2407.21783 section 3.3.2), which this "
        "tool does not model: memory and step here are data parallelism (DDP/ZeRO) alone"
    ]


def prices_for_gpu(gpu: str) -> list[str]:
    """Names of the price presets published for the GPU preset ``gpu``, sorted.

    >>> prices_for_gpu("gb200")[:2]
    ['aws-p6e-gb200-capacity-block', 'azure-nd-gb200-v6-on-demand']

    A :class:`~costmodel.hardware.GPU` (``cm.cluster("dgx-h100").gpu``) is read by its name;
    anything else that is no name is refused, naming ``gpu`` (an array compared element-wise).
    A name that is no GPU preset (a typo) is refused with the GPU presets, in the words of every
    unknown preset (it answered ``[]``, as for a GPU nobody prices); a GPU preset without a
    published price is ``[]``.

    >>> prices_for_gpu("rtx-2080ti")
    []
    """
    name = getattr(gpu, "name", gpu) if not isinstance(gpu, str) else gpu
    if not isinstance(name, str):
        from ._checks import said

        raise ValueError(
            f"gpu: expected one GPU preset name (`cm.presets.names()`) or a `cm.GPU`, got "
            f"{said(gpu)}"
        )
    if isinstance(gpu, str):
        from . import presets

        known = presets.names("gpu")
        if name not in known:
            raise presets._unknown(name, known, "gpu", field="gpu")
    return published_prices(name)


def published_prices(gpu_name: str) -> list[str]:
    """Names of the price presets published for the GPU called ``gpu_name``, sorted; ``[]``
    for any other name. For a GPU the caller holds (a cluster's, which may be a user preset or
    an inline table no GPU preset names), never a name typed: :func:`prices_for_gpu` refuses
    a typo."""
    return sorted(n for n, p in _prices().items() if p.gpu == gpu_name)


#: Terms a side on another GPU is priced at when the other side's price gives none to follow:
#: the list price anyone can rent at, without a commitment or a reservation.
DEFAULT_PRICE_TERMS = "on-demand"


def price_provider(price: str | Price) -> str:
    """The provider a price preset is published by: its name's first word, as every shipped
    preset is named (``aws-p5-on-demand`` -> ``aws``, ``gcp-a4-spot`` -> ``gcp``).

    >>> price_provider("coreweave-b200-on-demand")
    'coreweave'
    """
    return load_price(price).name.split("-", 1)[0]


def default_price(gpu: str, like: str | Price | None = None) -> tuple[Price, str] | None:
    """The price preset a configuration on ``gpu`` is costed at when none was chosen for it (the
    second side of a comparison run on another GPU than the first), and why, in a few words;
    None when no preset is published for ``gpu``. Every surface uses this one rule (the CLI's
    ``scenario --vs`` without ``--price-b``, the app's Price (B) box).

    Only presets published for ``gpu`` are candidates (:func:`published_prices`): a GPU is never
    priced with another GPU's price. ``like``: the other side's preset; the candidate bought on
    its terms (:attr:`Price.terms_label`) from its provider (:func:`price_provider`) comes
    first, then one on its terms from any provider, then one from its provider, then any.
    Without ``like`` (the other side at a typed rate or none) a :data:`DEFAULT_PRICE_TERMS`
    price comes first, then any. Within the first group that has one, the lowest per GPU-hour
    (then the name, so the choice never depends on file order).

    >>> p, why = default_price("b200", like="aws-p5-on-demand")
    >>> p.name, why
    ('aws-p6-b200-on-demand', 'the aws on-demand price published for b200, as aws-p5-on-demand')
    >>> p, why = default_price("b200")
    >>> p.name, why
    ('lambda-b200-on-demand', 'the lowest on-demand price published for b200')
    >>> default_price("no-such-gpu") is None
    True
    """
    names = published_prices(gpu)
    if not names:
        return None
    found = [load_price(n) for n in names]
    ref = load_price(like) if like is not None else None
    terms = ref.terms_label if ref is not None else DEFAULT_PRICE_TERMS
    maker = price_provider(ref) if ref is not None else None
    # (what the group's price is, what the earlier groups lacked, which prices are in it)
    groups: list[tuple[str, str, Callable[[Price], bool]]] = []
    if ref is not None:
        groups += [
            (
                f"{maker} {terms}",
                "",
                lambda p: price_provider(p) == maker and p.terms_label == terms,
            ),
            (terms, f"{maker} publishes none", lambda p: p.terms_label == terms),
            (f"{maker}", f"no {terms} one is published", lambda p: price_provider(p) == maker),
        ]
        last = f"none from {maker}, none {terms}"
    else:
        groups.append((terms, "", lambda p: p.terms_label == terms))
        last = f"no {terms} one is published"
    groups.append(("", last, lambda p: True))
    for what, lacked, fits in groups:
        match = [p for p in found if fits(p)]
        if match:
            lowest = "lowest " if len(match) > 1 else ""
            why = (
                f"the {lowest}{what + ' ' if what else ''}price published for {gpu}"
                + (f" ({lacked})" if lacked else "")
                + (f", as {ref.name}" if ref is not None else "")
            )
            return min(match, key=lambda p: (p.usd_per_gpu_hour, p.name)), why
    return None  # pragma: no cover - the last group takes every candidate


def check_price_gpu(price: str | Price, gpu: str) -> Price:
    """The price preset ``price`` if it was published for ``gpu``; else a ValueError naming the
    field, the GPUs involved and the presets that do match (or ``usd_per_gpu_hour``).

    A GPU is never priced with another GPU's price (a B200 at an H100 rate, an 80 GB A100 at a
    40 GB A100 rate).

    ``gpu``: a GPU's name, or a :class:`~costmodel.hardware.GPU` (``cm.cluster("dgx-h100").gpu``),
    read by its name as :func:`prices_for_gpu` reads it; anything else is refused naming ``gpu``
    (a GPU object was compared with the preset's GPU name, and its own price refused).
    """
    from .hardware import GPU, Cluster

    if isinstance(gpu, GPU):
        gpu = gpu.name
    elif not isinstance(gpu, str):
        from ._checks import said

        shown = f"the cluster {gpu.name!r}" if isinstance(gpu, Cluster) else said(gpu)
        raise ValueError(
            f"gpu: expected one GPU preset name (`cm.presets.names()`) or a `cm.GPU` "
            f"(a cluster's `.gpu`), got {shown}"
        )
    p = load_price(price)
    if p.gpu != gpu:
        match = published_prices(gpu)
        hint = (
            f"price presets for {gpu}: {', '.join(match)}; or give `usd_per_gpu_hour`"
            if match
            else f"no price preset is published for {gpu}: give `usd_per_gpu_hour`"
        )
        raise ValueError(
            f"price: {p.name} is a price for {p.gpu}, not for this cluster's GPU {gpu}; {hint}"
        )
    return p


def price_age_warning(price: str | Price, today: _dt.date | None = None) -> str:
    """A warning when the price is older than :data:`STALE_PRICE_DAYS` days at ``today``
    (default: the system date, :func:`current_date`), or dated after ``today`` (a typo in the date or a
    wrong system clock: no age can be told), else ``""``.

    The age is ``(today - date).days``: 365 days is not flagged, 366 is, in any year.

    >>> price_age_warning("aws-p5-capacity-block", today=_dt.date(2027, 12, 1))[:40]
    'price aws-p5-capacity-block is from 2026'
    >>> price_age_warning("aws-p5-capacity-block", today=_dt.date(2026, 12, 1))
    ''
    >>> price_age_warning("aws-p5-on-demand", today=_dt.date(2026, 11, 1))[:58]
    'price aws-p5-on-demand is dated 2026-11-09, 8 days after t'

    A :class:`datetime.datetime` (``datetime.now()``) is read as its date; anything else that
    is no date is refused, naming ``today``.
    """
    p = load_price(price)
    if isinstance(today, _dt.datetime):  # a date and a time: its day (date - datetime raised)
        today = today.date()
    elif today is not None and not isinstance(today, _dt.date):
        from ._checks import said

        raise ValueError(f"today: expected a datetime.date, got {said(today)}")
    now = today or current_date()
    age = (now - p.day).days
    if age < 0:
        return (
            f"price {p.name} is dated {p.date}, {-age} days after today ({now.isoformat()}): a "
            "price cannot be read on a day still to come, so its date or the system clock is "
            "wrong; check the price's date or give `usd_per_gpu_hour`"
        )
    if age <= STALE_PRICE_DAYS:
        return ""
    return (
        f"price {p.name} is from {p.date}, {age} days old: cloud prices change (AWS cut P4 and "
        "P5 prices in June 2025); check the current list or give `usd_per_gpu_hour`"
    )


def price_names() -> list[str]:
    """Names of the shipped price presets, sorted.

    >>> "aws-p5-on-demand" in price_names()
    True
    """
    return sorted(_prices())


def load_price(name: str | Price) -> Price:
    """The price preset called ``name``.

    >>> round(load_price("aws-p5-on-demand").usd_per_gpu_hour, 2)     # $55.04 / 8 GPUs
    6.88
    """
    if isinstance(name, Price):
        return name
    table = _prices()
    if not isinstance(name, str):  # an array or a list is no name (it was "unhashable type")
        from ._checks import said

        raise ValueError(
            f"price: expected one price preset name (`cm.price_names()`), got {said(name)}"
        )
    if name not in table:  # as an unknown cluster or architecture is refused
        from ._checks import unknown_name

        raise ValueError(
            unknown_name(
                "price",
                "price preset",
                name,
                list(table),
                case_note="preset names are lower-case",
                cutoff=0.6,
                see=" (see `cm.price_names()`)",
            )
        )
    return table[name]


@dataclass(frozen=True)
class TrainingCost:
    """Time and cost of a training run (SI units; USD)."""

    tokens: float  # tokens trained [-]
    steps: int  # optimizer steps [-]
    tokens_per_step: float  # global batch [tokens]
    step_time_s: float  # [s]
    step_time_source: str  # "predicted" or "measured"
    ranks: int  # GPUs [-]
    wall_s: float  # wall-clock time [s]
    gpu_hours: float  # [GPU h]
    usd_per_gpu_hour: float | None
    cost_usd: float | None
    price_note: str
    price_date: str | None  # date of the price's source (None: a typed price, no source)
    price_warning: str  # "" or why the price may be out of date
    flops_per_token: float | None  # training FLOPs per token [FLOP]
    mfu: float | None  # model FLOP utilisation implied by the step time [-]
    notes: tuple[str, ...] = ()  # what the answer leaves out (scale_notes)
    # the predicted step's expected-error band [s] (costmodel.strategy.band); None: none given
    # (a measured step) or unknown
    step_time_band_s: tuple[float, float] | None = None
    # "" or, for a configuration that does not fit in GPU memory, the warning that the cost is
    # of a setup that cannot run (ScenarioResult.training_cost sets it; a cost is never without it)
    fit_warning: str = ""
    # GPUs paid for: the run's nodes x the GPUs billed per node (billed_gpus_per_node); None:
    # no node given, the GPUs used
    billed_ranks: int | None = None
    billing_note: str = ""  # "" or "billed for N GPUs per node (the whole instance), M used"
    # the price preset's name and how it is bought (Price.terms_label: "on-demand", "spot",
    # "capacity-block", "committed-1y"); None: a typed price, or none
    price: str | None = None
    price_terms: str | None = None
    # the price preset's cited source in full (Price.source; its sites end price_note); None:
    # a typed price, or none
    price_source: str | None = None

    @property
    def billed_gpu_hours(self) -> float:
        """GPU-hours paid for [GPU h]: :attr:`gpu_hours` scaled to the GPUs billed (a node
        slice pays for the whole node); the cost is these times the price."""
        billed = self.ranks if self.billed_ranks is None else self.billed_ranks
        return self.wall_s * billed / 3600.0

    @property
    def wall_days(self) -> float:
        """Wall-clock days [d]."""
        return self.wall_s / SECONDS_PER_DAY

    @property
    def band_factors(self) -> tuple[float, float] | None:
        """(low, high) multipliers of the step time, hence of the days, GPU-hours and cost [-]
        (every one of them is proportional to the step); None when there is no band."""
        if self.step_time_band_s is None:
            return None
        lo, hi = self.step_time_band_s
        return (lo / self.step_time_s, hi / self.step_time_s)

    def _scaled(self, value: float | None) -> tuple[float, float] | None:
        f = self.band_factors
        return None if f is None or value is None else (value * f[0], value * f[1])

    @property
    def wall_days_band(self) -> tuple[float, float] | None:
        """Wall-clock days at the ends of the step's band [d]; None without a band."""
        return self._scaled(self.wall_days)

    @property
    def gpu_hours_band(self) -> tuple[float, float] | None:
        """GPU-hours at the ends of the step's band [GPU h]; None without a band."""
        return self._scaled(self.gpu_hours)

    @property
    def cost_usd_band(self) -> tuple[float, float] | None:
        """Cost at the ends of the step's band [USD]; None without a price or a band."""
        return self._scaled(self.cost_usd)

    def as_dict(self) -> dict[str, Any]:
        """Every figure by name (JSON, tables)."""
        d = asdict(self)
        d["wall_days"] = self.wall_days
        d["billed_gpu_hours"] = self.billed_gpu_hours
        d["tokens_per_step"] = units.whole_number(self.tokens_per_step)  # as step --json does
        for k in ("step_time_band_s", "wall_days_band", "gpu_hours_band", "cost_usd_band"):
            v = getattr(self, k)
            d[k] = None if v is None else list(v)
        return d


def billed_gpus_per_node(
    gpus_per_node: int,
    whole_node_gpus: int | None = None,
    hosts_per_node: int = 1,
    gpus_per_instance: int | None = None,
) -> int:
    r"""GPUs paid for in each node when a run uses ``gpus_per_node`` of them.

    A node is rented whole: a cloud instance bills every GPU it holds, whether the run uses
    them or not, and a price preset's per-GPU price is its instance price over all its GPUs.
    The unit rented is a host (one operating-system instance: the whole node of every 8-GPU
    preset; one 4-GPU tray of a GB200 NVL72 rack's 18), or the price's instance where that is
    larger (a rack sold whole, AWS's 72-GPU u-p6e-gb200x72), never more than the node.

    .. math::
        u = \min(G, \max(G / H, I)),\quad g_{billed} = \min(G, \lceil g / u \rceil u)

    ``g`` GPUs used per node, ``G`` the whole node's GPUs (``Node.whole_node_gpus``; None: the
    node is whole, ``G = g``), ``H`` its hosts (``Node.hosts_per_node``), ``I`` the price's
    ``gpus_per_instance`` (None or a per-GPU price: 1). A whole node is billed as used.
    Returns GPUs [GPUs], whole; the cost is ``W n_nodes g_billed / 3600 x p`` [USD] (module
    docstring). Instance shapes: the price presets' cited sources (``presets/prices/*.toml``).

    Parameters
    ----------
    gpus_per_node : int
        GPUs the run uses in each node ``g``.
    whole_node_gpus : int, optional
        GPUs of the whole node ``G`` (``>= g``); None: the node is not a slice.
    hosts_per_node : int
        Hosts (trays) of the whole node ``H`` (``G / H`` GPUs each).
    gpus_per_instance : int, optional
        GPUs of the price preset's instance ``I``.

    Examples
    --------
    >>> billed_gpus_per_node(4, 8)                 # half a DGX H100: the instance is paid whole
    8
    >>> billed_gpus_per_node(8)                    # a whole node
    8
    >>> billed_gpus_per_node(6, 72, hosts_per_node=18)      # two 4-GPU trays of an NVL72
    8
    >>> billed_gpus_per_node(6, 72, hosts_per_node=18, gpus_per_instance=72)  # a rack sold whole
    72
    """
    from ._checks import whole_count
    from ._limits import LIMITS

    g = whole_count("gpus_per_node", gpus_per_node)
    whole = g if whole_node_gpus is None else whole_count("whole_node_gpus", whole_node_gpus)
    for name, count, raw in (
        ("gpus_per_node", g, gpus_per_node),
        ("whole_node_gpus", whole, whole_node_gpus),
    ):  # a node's GPUs (1e300 was billed), said as given (1e300, not its 301 digits)
        LIMITS["gpus_per_node"].check(name, raw if type(raw) is float else count)
    if whole < g:
        raise ValueError(
            f"whole_node_gpus: the whole node has at least the {g} GPUs used, got {whole}"
        )
    hosts = whole_count("hosts_per_node", hosts_per_node)
    inst = 1 if gpus_per_instance is None else whole_count("gpus_per_instance", gpus_per_instance)
    unit = min(whole, max(-(-whole // hosts), inst))
    return min(whole, -(-g // unit) * unit)


def billing_note(gpus_per_node: int, billed: int, whole_node_gpus: int | None) -> str:
    """The line a cost on a node slice carries: ``""`` when every GPU billed is used.

    >>> billing_note(4, 8, 8)
    'billed for 8 GPUs per node (the whole instance), 4 used'
    >>> billing_note(6, 8, 72)
    'billed for 8 GPUs per node (whole hosts of the 72-GPU node), 6 used'
    """
    if billed <= gpus_per_node:
        return ""
    what = (
        "the whole instance"
        if whole_node_gpus is None or billed >= whole_node_gpus
        else f"whole hosts of the {whole_node_gpus}-GPU node"
    )
    return f"billed for {billed} GPUs per node ({what}), {gpus_per_node} used"


def _positive(name: str, value: Any, unit: str = "", limit: Any = None) -> float:
    """``value`` as a finite float > 0, else ValueError naming ``name``; with ``limit`` (a
    :class:`costmodel._limits.Limit`) in that range, every refusal of a number in its words
    (a step time of 0 said "> 0 s" and one of 2e6 s "(0, 1e6] s")."""
    if isinstance(value, bool):  # float(True) is 1.0: one token, a 1 s step
        raise ValueError(f"{name}: expected a number, got a bool ({value!r})")
    from ._checks import refuse_unreal

    refuse_unreal(name, value)  # float(np.timedelta64(5, "ns")) is 5.0: a 5 s step
    try:
        x = float(value)
    except (TypeError, ValueError):
        # "2T" as text: the number it means, as the API's other arguments say (units.text_hint)
        hint = units.text_hint(name, value)
        from ._checks import said

        raise ValueError(f"{name}: expected a number, got {said(value)}{hint}") from None
    if limit is not None and not limit.holds(x):
        raise ValueError(f"{name}: must be {limit.rule}, got {value!r}")
    if not math.isfinite(x) or x <= 0:
        unit = f" {unit}" if unit else ""
        raise ValueError(f"{name}: must be a finite number > 0{unit}, got {value!r}")
    return x


def _recompute_extra(value: Any) -> float:
    """``recompute_extra`` as a float in its range (:data:`costmodel._limits.RECOMPUTE_EXTRA`:
    0..1/3 of forward + backward), else ValueError naming it; a string, a bool or None is
    refused as not a number (``"0.3"`` is not read as 0.3)."""
    from ._checks import refuse_unreal, said
    from ._limits import RECOMPUTE_EXTRA

    if isinstance(value, bool) or value is None or isinstance(value, str | bytes):
        raise ValueError(f"recompute_extra: expected a number, got {said(value)}")
    refuse_unreal("recompute_extra", value)
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"recompute_extra: expected a number, got {said(value)}") from None
    if not RECOMPUTE_EXTRA.holds(x):
        raise ValueError(f"recompute_extra: must be {RECOMPUTE_EXTRA.rule}, got {value!r}")
    return x


def training_cost(
    tokens: float | None = None,
    *,
    steps: float | None = None,
    tokens_per_step: float,
    step_time_s: float,
    ranks: int,
    usd_per_gpu_hour: float | None = None,
    price: str | Price | None = None,
    flops_per_token: float | None = None,
    peak_flops: float | None = None,
    measured: bool = False,
    gpu: str | None = None,
    today: _dt.date | None = None,
    params: float | None = None,
    step_time_band_s: tuple[float, float] | None = None,
    usd_source: str = "user",
    node: Any = None,
    step_time_name: str = "step_time_s",
    recompute_extra: float = 0.0,
) -> TrainingCost:
    r"""Wall-clock time, GPU-hours, cost and implied MFU of a training run (module docstring).

    .. math::
        n = \lceil D / T_{step} \rceil,\quad W = n\, t_{step}\ [s],\quad G = W N / 3600,\quad
        \$ = G p\ [USD],\quad \mathrm{MFU} = C_{tok} T_{step} / (t_{step} N F_{peak})

    MFU as Chowdhery et al. 2022 (PaLM, arXiv:2204.02311, appendix B) define it.

    Parameters
    ----------
    tokens : float, optional
        Tokens to train ``D`` [-]; or give ``steps``. Steps are whole: ``ceil(D / T_step)``.
    steps : float, optional
        Optimizer steps (whole, >= 1).
    tokens_per_step : float
        Tokens per optimizer step ``T_step`` (global batch x sequence length) [-]: a whole
        number >= 1 (``4e6`` is; ``0.5`` is refused, a unit slip rather than a batch).
    step_time_s : float
        Time of one optimizer step [s]: predicted (``Scenario.evaluate().step_time_s``) or
        measured (``measured=True``: then the MFU is what the measurement implies). With
        ``flops_per_token`` and ``peak_flops``, a step shorter than its work takes at the peak
        (an MFU above 1) is refused either way, as ``costmodel train --step-time`` refuses it
        (:func:`costmodel._checks.refuse_faster_than_peak`).
    ranks : int
        GPUs ``N`` the run holds (all of them are paid for).
    usd_per_gpu_hour, price
        The price of one GPU-hour [USD], or a price preset name (:func:`price_names`); neither
        leaves ``cost_usd`` None.
    flops_per_token, peak_flops
        Training FLOPs per token and one GPU's dense peak [FLOP/s]; both give the MFU
        (``peak_flops`` alone is refused: it gives nothing without ``flops_per_token``).
    gpu : str or costmodel.hardware.GPU, optional
        The GPU preset the run uses (its name, or the GPU: ``cm.cluster("dgx-h100").gpu``): a
        ``price`` published for another GPU is an error (:func:`check_price_gpu`).
    today : datetime.date, optional
        The date the price's age is measured at (default: the system date).
    params : float, optional
        The model's parameter count (> 0): a 70B-class model gets :func:`scale_notes`.
    step_time_band_s : (float, float), optional
        The predicted step's expected-error band [s] (``StrategyStep.step_time_band_s``):
        days, GPU-hours and cost are proportional to the step, so they carry the same band.
        ``(nan, nan)`` is an unknown band (a GPU with no fitted compute efficiency): no band.
        Not with ``measured=True``.
    usd_source : {"user", "default"}
        Where ``usd_per_gpu_hour`` came from, for the price note: ``"user"`` (default) a price
        the user gave; ``"default"`` an interface's placeholder the user did not give (the
        app's price box untouched), said so rather than called the user's.
    node : costmodel.hardware.Node, optional
        The cluster's node (``Cluster.node``): on a slice of it (``whole_node_gpus`` set) the
        cost pays for :func:`billed_gpus_per_node` GPUs of each of the
        ``ceil(ranks / gpus_per_node)`` nodes (``billed_ranks``, ``billing_note``); a typed
        ``usd_per_gpu_hour`` too (the node is held). None: the GPUs used are the GPUs paid.
    step_time_name : str
        The name a refused step time is reported under: the argument the caller's user typed
        (``ScenarioResult.training_cost`` passes ``measured_step_time_s``).
    recompute_extra : float
        Recomputation's extra work ``r`` over forward + backward [-], in [0, 1/3]
        (:func:`costmodel.strategy.compute.recompute_extra`: 1/3 under full, the most a second
        forward adds): the step (measured or predicted) is held to the peak's time for
        ``C_tok T_step (1 + r) / N`` FLOP per GPU, the FLOPs the GPUs execute (the MFU reported
        stays of the model's FLOPs).

    Examples
    --------
    One hour of a p5.48xlarge at its on-demand price of 2026-11-09, and the MFU a 36 s step of
    a 7B model at a million tokens per step implies:

    >>> c = training_cost(steps=100, tokens_per_step=1e6, step_time_s=36.0, ranks=8,
    ...                   price="aws-p5-on-demand", flops_per_token=6 * 7e9, peak_flops=989.5e12,
    ...                   measured=True, gpu="h100-sxm")
    >>> round(c.gpu_hours), round(c.cost_usd, 2), round(c.mfu, 3), c.price_date
    (8, 55.04, 0.147, '2026-11-09')
    """
    if (tokens is None) == (steps is None):
        raise ValueError("tokens, steps: give exactly one of them")
    from ._checks import flag
    from ._limits import LIMITS

    measured = flag("measured", measured)
    if today is not None and not isinstance(today, _dt.date):
        raise ValueError(f"today: expected a datetime.date, got {today!r}")
    if params is not None:  # only for its notes, but a NaN or a typo is refused, not noted
        params = _positive("params", params, "parameters")
    if peak_flops is not None and flops_per_token is None:
        raise ValueError(
            "peak_flops: gives the MFU only with flops_per_token (FLOPs per token, e.g. "
            "6 x params); give both, or neither"
        )
    per = _positive("tokens_per_step", tokens_per_step, "tokens")
    if per != math.floor(per):
        # a step trains whole sequences of whole tokens (global batch x sequence length): a
        # fraction is a unit slip (0.5 for 0.5M), not a batch, and it made steps = ceil(D /
        # 0.5) silently; a whole float (4e6, a float column's 32768.0) is a count, accepted
        raise ValueError(
            f"tokens_per_step: must be a whole number of tokens >= 1 (global batch x sequence "
            f"length), got {tokens_per_step!r}; a fraction of a token is likely a unit slip "
            "(4M tokens per step is 4e6)"
        )
    # plausibility bounds shared with the CLI (a 1e30 s step, 1e308 USD/GPU-hour: cost inf)
    t = _positive(step_time_name, step_time_s, "s", LIMITS["step_time"])
    if usd_per_gpu_hour is not None:
        LIMITS["usd_per_gpu_hour"].check("usd_per_gpu_hour", usd_per_gpu_hour)
    from ._checks import whole_count

    ranks = whole_count("ranks", ranks)  # a numpy integer too
    if tokens is not None:
        d = _positive("tokens", tokens)
        ratio = d / per
        if ratio > 1e15:
            raise ValueError(
                f"tokens: {d:g} tokens at {per:g} per step is over 1e15 steps; "
                "allowed: tokens / tokens_per_step <= 1e15"
            )
        if d == math.floor(d) and per == math.floor(per):  # token counts: exact ceiling
            n = -(-int(d) // int(per))
        else:  # a ratio within float rounding of a whole number is that number
            # (ratio x (1 - 1e-12) undercounted past 1e12 steps: 1e16 tokens at 4,096 per step
            # made 2,441,406,249,998 steps, not 2,441,406,250,000)
            r = round(ratio)
            n = r if abs(ratio - r) <= 1e-12 * ratio else math.ceil(ratio)
    else:
        s = _positive("steps", steps)
        if s > 1e15 or s != math.floor(s):
            raise ValueError(f"steps: must be a whole number in [1, 1e15], got {steps!r}")
        n = int(s)
        d = n * per
    if usd_per_gpu_hour is not None and price is not None:
        raise ValueError("usd_per_gpu_hour, price: give one of them, not both")
    if usd_source not in ("user", "default"):
        raise ValueError(f"usd_source: must be 'user' or 'default', got {usd_source!r}")
    note = ""
    usd = None
    instance_gpus: int | None = None
    price_date = None
    warning = ""
    price_name = terms = price_source = None
    if price is not None:
        pr = check_price_gpu(price, gpu) if gpu is not None else load_price(price)
        price_name, terms = pr.name, pr.terms_label
        instance_gpus = pr.gpus_per_instance
        usd = pr.usd_per_gpu_hour
        price_date = pr.date
        warning = price_age_warning(pr, today)
        # a per-GPU list price (gpus_per_instance 1) is not the price of the machine rented:
        # "$10/h per instance" read as an 8-GPU OCI bare-metal machine for $10/h
        per_unit = (
            "per GPU"
            if pr.gpus_per_instance == 1
            else f"per {pr.gpus_per_instance}-GPU instance (${units.format_usd_rate(pr.usd_per_gpu_hour)} per GPU-hour)"
        )
        note = (
            f"{pr.name}: {pr.description}, ${units.format_usd_rate(pr.usd_per_instance_hour)}/h {per_unit} "
            f"({pr.terms_label}), price as of {pr.date} (source: {pr.source_sites})"
        )
        price_source = pr.source
    elif usd_per_gpu_hour is not None:
        usd = _positive("usd_per_gpu_hour", usd_per_gpu_hour, "USD")
        note = f"${units.format_usd_rate(usd)} per GPU-hour, given by the user (no published price, so no date)"
        if usd_source == "default":
            note = (
                f"${units.format_usd_rate(usd)} per GPU-hour, a placeholder default: neither a published price nor "
                "one given by the user (so no date)"
            )
    billed_ranks = ranks
    bill_note = ""
    if node is not None:
        g = int(node.gpus_per_node)
        per_node = billed_gpus_per_node(
            g,
            node.whole_node_gpus,
            node.hosts_per_node,
            instance_gpus,
        )
        billed_ranks = -(-ranks // g) * per_node
        bill_note = billing_note(g, per_node, node.whole_node_gpus)
    wall = n * t
    gpu_h = wall * ranks / 3600.0
    billed_h = wall * billed_ranks / 3600.0
    if not math.isfinite(billed_h * (usd or 1.0)):
        raise ValueError(
            f"{step_time_name}: {t:g} s x {n:g} steps x {ranks} GPUs overflows; allowed: a run "
            "whose GPU-hours (and cost) are finite numbers"
        )
    mfu = None
    c_tok = None
    extra_r = _recompute_extra(recompute_extra)
    if flops_per_token is not None:
        c_tok = _positive("flops_per_token", flops_per_token, "FLOP")
        if peak_flops is not None:
            peak = _positive("peak_flops", peak_flops, "FLOP/s")
            mfu = c_tok * per / (t * ranks * peak)
            # faster than the GPUs' peak: a typo or a wrong unit, measured or handed in as a
            # prediction alike (the CLI's --step-time and the API's step_time_s: one rule)
            from ._checks import refuse_faster_than_peak

            # one GPU's share of the work the GPUs execute, at its peak: the model's FLOPs
            # and, under recomputation, its extra work r (a hardware FLOP utilisation then,
            # PaLM appendix B), as a measured compute time is held to
            refuse_faster_than_peak(
                step_time_name,
                "step",
                t,
                c_tok * per / ranks * (1.0 + extra_r),
                peak,
                f"a step of at least {{}} for {per:,.0f} tokens on {ranks} GPUs"
                + (f" with recomputation's {extra_r:.0%} extra work" if extra_r > 0 else ""),
                "an MFU" if extra_r <= 0 else "a hardware FLOP utilisation (recomputation counted)",
                measured=measured,
            )
    band = None
    if step_time_band_s is not None:
        if measured:
            raise ValueError("step_time_band_s: a measured step has no predicted band")
        try:
            b_lo, b_hi = (float(x) for x in step_time_band_s)
        except (TypeError, ValueError):
            raise ValueError(
                f"step_time_band_s: expected (low, high) in s, got {step_time_band_s!r}"
            ) from None
        if not (math.isnan(b_lo) and math.isnan(b_hi)):  # (nan, nan): an unknown band
            if not (math.isfinite(b_lo) and math.isfinite(b_hi) and 0.0 < b_lo <= t <= b_hi):
                raise ValueError(
                    f"step_time_band_s: must satisfy 0 < low <= step_time_s <= high (or be "
                    f"(nan, nan): unknown), got ({b_lo:g}, {b_hi:g}) around {t:g} s"
                )
            band = (b_lo, b_hi)
    return TrainingCost(
        step_time_band_s=band,
        tokens=d,
        steps=n,
        tokens_per_step=per,
        step_time_s=t,
        step_time_source="measured" if measured else "predicted",
        ranks=ranks,
        wall_s=wall,
        gpu_hours=gpu_h,
        usd_per_gpu_hour=usd,
        cost_usd=None if usd is None else billed_h * usd,
        billed_ranks=billed_ranks,
        billing_note=bill_note,
        price_note=note,
        price_date=price_date,
        price_warning=warning,
        price=price_name,
        price_terms=terms,
        price_source=price_source,
        notes=(*(scale_notes(params) if params is not None else ()), *whole_steps_note(d, n, per)),
        flops_per_token=c_tok,
        mfu=mfu,
    )
