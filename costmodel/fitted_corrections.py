"""The fitted correction parameters, loaded from ``costmodel/data/fitted_corrections.toml``.

The numbers are data, written (atomically) by ``scripts/fit_corrections.py``; this module only
reads them into frozen, typed objects. ``ALL`` is fitted on every reference
run; ``CV[run]`` on every run of the other sources (grouped cross-validation: the run's whole
source, e.g. all of 13a-f, is left out; tests/test_fidelity.py predicts each run with its own,
so no run is predicted by constants fitted on it or on a sibling). ``LORO`` is the former name
of ``CV``, kept as an alias. ``FITTED.bands`` holds the grouped-CV error bands
(:mod:`costmodel.uncertainty`). ``ALL`` and ``CV[run]`` are
read-only mappings in the form :mod:`costmodel.corrections` takes
(:meth:`CorrectionParams.as_dict` gives a plain dict).

>>> FITTED.all.ramp_phi >= 0 and set(LORO) == set(FITTED.loro)
True
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from importlib import resources
from types import MappingProxyType

DATA_FILE = "data/fitted_corrections.toml"


@dataclass(frozen=True)
class CorrectionParams:
    """One set of fitted parameters (units in the names; see :mod:`costmodel.corrections`)."""

    host_base_us: float
    host_per_gpu_us: float
    host_staged_duplex: float
    nvl_domain_link_scale: float
    ramp_phi: float
    ramp_knee_bytes: float
    fabric_latency_us: Mapping[str, float]
    fabric_ramp_phi: Mapping[str, float]
    fabric_tree_efficiency: Mapping[str, float]
    # added after the first fitted files: absent in a file means no such term
    net_ramp_phi: float = 0.0
    net_ramp_knee_bytes: float = 1.0
    fabric_net_ramp_scale: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    fabric_achievable_fraction: Mapping[str, float] = field(
        default_factory=lambda: MappingProxyType({})
    )
    host_per_process_us: float = 0.0
    net_ramp_exponent: float = 0.5
    ring_nic_fraction: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    a2a_net_efficiency: float = 1.0
    fabric_node_rate_gbs: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    fabric_fitted_fraction: Mapping[str, float] = field(
        default_factory=lambda: MappingProxyType({})
    )
    a2a_peer_latency_us: float = 0.0
    fabric_net_ll128_off: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    nvlink_step_latency_scale: float = 1.0
    blackwell_nvlink_step_latency_scale: float = 1.0

    @classmethod
    def from_table(cls, table: Mapping[str, object], where: str) -> CorrectionParams:
        names = {f.name for f in fields(cls)}
        # fields with a default were added after the first fitted files: a file may lack them
        optional = {
            f.name
            for f in fields(cls)
            if f.default is not MISSING or f.default_factory is not MISSING
        }
        unknown = sorted(set(table) - names)
        missing = sorted(names - set(table) - optional)
        if unknown or missing:
            raise ValueError(f"{where}: unknown keys {unknown}, missing keys {missing}")
        kw: dict[str, object] = {}
        for k, v in table.items():
            if isinstance(v, Mapping):
                kw[k] = MappingProxyType({str(a): float(b) for a, b in v.items()})
            else:
                kw[k] = float(v)  # type: ignore[arg-type]
        return cls(**kw)  # type: ignore[arg-type]

    def as_dict(self) -> dict[str, object]:
        """A plain dict (nested dicts copied), as :mod:`costmodel.corrections` takes."""
        out: dict[str, object] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            out[f.name] = dict(v) if isinstance(v, Mapping) else v
        return out


@dataclass(frozen=True)
class FittedCorrections:
    """The whole file: when and for which NCCL it was fitted, ALL and the LORO sets."""

    fitted_on: str
    nccl_version: str
    all: CorrectionParams
    loro: Mapping[str, CorrectionParams]
    groups: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    bands: Mapping[str, Mapping[str, Mapping[str, Mapping[str, float]]]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    measured_fabrics: tuple[str, ...] = ()
    dropped_terms: tuple[str, ...] = ()
    #: fold kind ("family", "op") -> run -> parameters fitted without the run's fabric family
    #: or op class (the harder folds the error bands come from, with ``cv``)
    folds: Mapping[str, Mapping[str, CorrectionParams]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    #: regime -> size class -> nominal / measured (leave one source out) coverage of the band
    coverage: Mapping[str, Mapping[str, Mapping[str, float]]] = field(
        default_factory=lambda: MappingProxyType({})
    )

    @property
    def cv(self) -> Mapping[str, CorrectionParams]:
        """Per run, the parameters fitted with the run's whole source left out (grouped CV)."""
        return self.loro


def parse(text: str, where: str = DATA_FILE) -> FittedCorrections:
    """Parse the TOML text of a fitted-corrections file (ValueError naming what is wrong)."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{where}: not valid TOML ({exc})") from exc
    for key in ("fitted_on", "nccl_version", "all"):
        if key not in doc:
            raise ValueError(f"{where}: missing {key!r}")
    section = "cv" if "cv" in doc else "loro"  # files before grouped CV: leave-one-run-out
    loro = {
        str(run): CorrectionParams.from_table(t, f"{where} [{section}.{run}]")
        for run, t in doc.get(section, {}).items()
    }
    bands = {
        str(model): MappingProxyType(
            {
                str(reg): MappingProxyType(
                    {str(sc): MappingProxyType(dict(v)) for sc, v in classes.items()}
                )
                for reg, classes in regs.items()
            }
        )
        for model, regs in doc.get("band", {}).items()
    }
    return FittedCorrections(
        fitted_on=str(doc["fitted_on"]),
        nccl_version=str(doc["nccl_version"]),
        all=CorrectionParams.from_table(doc["all"], f"{where} [all]"),
        loro=MappingProxyType(loro),
        groups=MappingProxyType({str(k): str(v) for k, v in doc.get("groups", {}).items()}),
        bands=MappingProxyType(bands),
        measured_fabrics=tuple(str(f) for f in doc.get("measured_fabrics", ())),
        dropped_terms=tuple(str(t) for t in doc.get("dropped_terms", ())),
        folds=MappingProxyType(
            {
                str(kind): MappingProxyType(
                    {
                        str(run): CorrectionParams.from_table(t, f"{where} [fold.{kind}.{run}]")
                        for run, t in per_run.items()
                    }
                )
                for kind, per_run in doc.get("fold", {}).items()
            }
        ),
        coverage=MappingProxyType(
            {
                str(reg): MappingProxyType(
                    {str(sc): MappingProxyType(dict(v)) for sc, v in classes.items()}
                )
                for reg, classes in doc.get("coverage", {}).items()
            }
        ),
    )


def load() -> FittedCorrections:
    """Read the packaged file."""
    text = resources.files("costmodel").joinpath(DATA_FILE).read_text(encoding="utf-8")
    return parse(text)


FITTED = load()
FITTED_ON = FITTED.fitted_on
NCCL_VERSION = FITTED.nccl_version
ALL: Mapping[str, object] = MappingProxyType(FITTED.all.as_dict())
CV: Mapping[str, Mapping[str, object]] = MappingProxyType(
    {k: MappingProxyType(v.as_dict()) for k, v in FITTED.loro.items()}
)
LORO = CV  # the name before grouped CV; same per-run mapping
