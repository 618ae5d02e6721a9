"""Cited priors per network fabric (``costmodel/data/fabric_priors.toml``), not fitted.

Two quantities per fabric class, each with its public source (vendor code and docs,
maintainers' comments; none is one of the bundled runs):

- ``per_message_overhead_us``: time per inter-node step on top of NCCL's own InfiniBand NET
  latencies, the slot NCCL fills with a net plugin's reported latency (tuning.cc,
  ``latencyInter``). Where the fit has no multi-node run of a fabric (a grouped-CV fold without
  the fabric's only source, or a fabric no bundled run measures) it stands in for the fitted
  :func:`costmodel.corrections.fabric_latency_us`.
- ``achievable_fraction``: share of the NICs' line rate that large transfers reach; a
  multi-node Ring/Simple reaches it (:func:`costmodel.corrections.ring_nic_fraction`), and it
  can cap every candidate (:func:`costmodel.corrections.achievable_fraction`; neutralised by
  the grouped-CV ablation).
- ``node_rate_gbs``: for a transport that copies every byte through host memory (NCCL's TCP
  socket fallback) the most a node moves per direction whatever its NICs' line rate; it stands
  in for :func:`costmodel.corrections.fabric_node_rate_gbs` where no run of the fabric is fitted.
- ``proxy_driven``: the fabric's data path needs host software beyond NCCL's verbs transport;
  such fabrics share the network ramp's multiplier
  (:func:`costmodel.corrections.net_ramp_phi`).

A fabric without a figure has no entry: the model keeps NCCL's InfiniBand behaviour there and
the error band says the fabric is unmeasured (:mod:`costmodel.uncertainty`).

>>> PRIORS["efa"].per_message_overhead_us, PRIORS["infiniband"].achievable_fraction
(17.0, 0.95)
>>> "per_message_overhead_us" in PRIORS["tcpxo"].sources, PRIORS["tcpxo"].per_message_overhead_us
(True, None)
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType

DATA_FILE = "data/fabric_priors.toml"
_VALUES = ("per_message_overhead_us", "achievable_fraction", "node_rate_gbs")


@dataclass(frozen=True)
class FabricPrior:
    """One fabric's priors (None: no public figure) and their sources."""

    fabric: str
    per_message_overhead_us: float | None
    achievable_fraction: float | None
    confidence: str
    sources: Mapping[str, str]
    proxy_driven: bool = False
    node_rate_gbs: float | None = None


def parse(text: str, where: str = DATA_FILE) -> dict[str, FabricPrior]:
    """Parse the priors file; ValueError naming the fabric and key on a bad value.

    >>> parse('[x]\\nachievable_fraction = 0.9\\nachievable_fraction_source = "a"\\n')["x"].sources
    mappingproxy({'achievable_fraction': 'a'})
    """
    doc = tomllib.loads(text)
    out = {}
    for fabric, t in doc.items():
        vals: dict[str, float | None] = {}
        for k in _VALUES:
            v = t.get(k)
            if v is not None:
                v = float(v)
                ok, allowed = {
                    "per_message_overhead_us": (v >= 0, ">= 0 us"),
                    "achievable_fraction": (0 < v <= 1, "in (0, 1]"),
                    "node_rate_gbs": (v > 0, "> 0 GB/s"),
                }[k]
                if not (math.isfinite(v) and ok):
                    raise ValueError(f"{where} [{fabric}] {k}: must be {allowed}, got {v!r}")
                if not t.get(f"{k}_source"):
                    raise ValueError(f"{where} [{fabric}] {k} has no {k}_source")
            vals[k] = v
        srcs = {k: str(t[f"{k}_source"]) for k in _VALUES if f"{k}_source" in t}
        proxy = t.get("proxy_driven", False)
        if not isinstance(proxy, bool) or (proxy and not t.get("proxy_driven_source")):
            raise ValueError(f"{where} [{fabric}] proxy_driven: a boolean with a source")
        if proxy:
            srcs["proxy_driven"] = str(t["proxy_driven_source"])
        out[fabric] = FabricPrior(
            fabric,
            vals["per_message_overhead_us"],
            vals["achievable_fraction"],
            str(t.get("confidence", "")),
            MappingProxyType(srcs),
            proxy,
            vals["node_rate_gbs"],
        )
    return out


PRIORS: Mapping[str, FabricPrior] = MappingProxyType(
    parse(resources.files("costmodel").joinpath(DATA_FILE).read_text(encoding="utf-8"))
)


def prior_latency_us() -> dict[str, float]:
    """{fabric: per-message overhead [us]} for the fabrics with a cited figure."""
    return {
        f: p.per_message_overhead_us
        for f, p in PRIORS.items()
        if p.per_message_overhead_us is not None
    }


def achievable_fractions() -> dict[str, float]:
    """{fabric: achievable fraction of line rate} for the fabrics with a cited figure."""
    return {
        f: p.achievable_fraction for f, p in PRIORS.items() if p.achievable_fraction is not None
    }


def node_rates_gbs() -> dict[str, float]:
    """{fabric: per-node rate [GB/s]} for host-copy transports with a cited figure (socket)."""
    return {f: p.node_rate_gbs for f, p in PRIORS.items() if p.node_rate_gbs is not None}


def proxy_driven_fabrics() -> tuple[str, ...]:
    """Fabrics whose every network chunk passes through host software beyond NCCL's verbs
    transport (cited per fabric): they share one fitted multiplier on the network ramp.

    >>> "efa" in proxy_driven_fabrics(), "infiniband" in proxy_driven_fabrics()
    (True, False)
    """
    return tuple(sorted(f for f, p in PRIORS.items() if p.proxy_driven))


def fabric_table() -> list[dict[str, object]]:
    """Per fabric, what the shipped model uses and where it comes from (``costmodel fabrics``).

    The per-message overhead in use is the fitted one where a bundled run measures the fabric,
    else the cited prior, else none (NCCL's InfiniBand latency); then the ring NIC share, the
    network ramp amplitude on two nodes, whether a bundled multi-node run measures the fabric
    (else its error band is unknown), the confidence and the sources.

    >>> rows = {r["fabric"]: r for r in fabric_table()}
    >>> rows["infiniband"]["overhead_from"], rows["tcpxo"]["per_message_overhead_us"]
    ('fitted', None)
    """
    from . import corrections as C
    from .fitted_corrections import FITTED

    params = FITTED.all.as_dict()
    fitted_lat = FITTED.all.fabric_latency_us
    rows: list[dict[str, object]] = []
    for f, p in PRIORS.items():
        lat: float | None
        if f in fitted_lat:
            lat, lat_from = float(fitted_lat[f]), "fitted"
        elif p.per_message_overhead_us is not None:
            lat, lat_from = p.per_message_overhead_us, "cited prior"
        else:
            lat, lat_from = None, "none (NCCL's InfiniBand latency)"
        rows.append(
            {
                "fabric": f,
                "per_message_overhead_us": lat,
                "overhead_from": lat_from,
                "achievable_fraction": p.achievable_fraction,
                "ring_nic_fraction": C.ring_nic_fraction(f, 2, params) or None,
                "proxy_driven": p.proxy_driven,
                "net_ramp_phi": C.net_ramp_phi(f, 2, params),
                "measured": f in FITTED.measured_fabrics,
                "confidence": p.confidence,
                "sources": dict(p.sources),
            }
        )
    return rows
