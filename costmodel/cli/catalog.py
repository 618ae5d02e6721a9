"""Subcommands that list what ships: ``presets list|show|schema``, ``archs`` and ``fabrics``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from .. import units
from ._common import JsonOpt, _jsonable, _kv, _left_table, _print_json


def archs(as_json: JsonOpt = False) -> None:
    """Architecture presets (parameters, shape, source) and price presets.

    Example: costmodel archs --json
    """
    from ..architecture import arch_names, load_arch
    from ..training import load_price, price_names

    rows = [load_arch(n) for n in arch_names()]
    prices = [load_price(n) for n in price_names()]
    if as_json:
        _print_json(
            {
                "archs": [
                    {**a.model_dump(), "params": a.params, "active_params": a.active_params}
                    for a in rows
                ],
                "prices": [
                    {
                        **p.model_dump(),
                        "usd_per_gpu_hour": p.usd_per_gpu_hour,
                        "terms_label": p.terms_label,
                    }
                    for p in prices
                ],
            }
        )
        return
    # columns as wide as their longest entry: a price of $10 or more pushed the rest of its
    # line one place right of the others
    wide = max((len(a.name) for a in rows), default=16)
    # each list under a heading: the prices followed the architectures without a word, and
    # `train` sends a user here for them ("--price with one of the 18 presets ...")
    typer.echo(
        "architecture presets (--arch NAME): parameters; L layers, h hidden, heads/KV heads, "
        "vocabulary, trained context"
    )
    for a in rows:
        moe = f", {units.format_count(a.active_params)} active" if a.moe else ""
        # the trained context, which a longer --seq runs past (architecture.context_note)
        ctx = f" context={a.max_positions:,}" if a.max_positions is not None else ""
        typer.echo(
            f"{a.name:<{wide}} {units.format_count(a.params):>9} params{moe}; L={a.layers} "
            f"h={a.hidden} heads={a.heads}/{a.kv_heads} vocab={a.vocab}{ctx}"
        )
    # the prices on their decimal points ($5.97 above $11.0612 read as the larger), each
    # with its unit, as typed ("$4.858/GPU-h")
    usd = _on_the_point([f"${units.format_usd_rate(p.usd_per_gpu_hour)}" for p in prices], "/GPU-h")
    w_name = max((len(p.name) for p in prices), default=0)
    w_gpu = max((len(p.gpu) for p in prices), default=0)
    w_terms = max((len(p.terms_label) for p in prices), default=0)
    w_sites = max((len(p.source_sites) for p in prices), default=0)
    # the source's sites, not the description alone: an official list price told from a
    # third party's dump (the full citation is `archs --json`'s "source")
    typer.echo(
        "\nprice presets (--price NAME): GPU, USD per GPU-hour, terms, date, source (its sites; "
        "the full citation in --json), description (each prices its own GPU only)"
    )
    for p, u in zip(prices, usd, strict=True):
        typer.echo(
            f"{p.name:<{w_name}} {p.gpu:<{w_gpu}} {u} {p.terms_label:<{w_terms}} "
            f"(as of {p.date}) {p.source_sites:<{w_sites}} {p.description}"
        )


def _on_the_point(numbers: list[str], unit: str) -> list[str]:
    """``numbers`` (texts) as one column aligned on their decimal points, each followed by
    ``unit``: the whole part right-justified, the fraction and the unit left-justified (a
    number without a point ends where the points stand).

    >>> for line in _on_the_point(["$5.97", "$11.0612", "$4.858", "$2"], "/GPU-h"):
    ...     print(f"[{line}]")
    [ $5.97/GPU-h  ]
    [$11.0612/GPU-h]
    [ $4.858/GPU-h ]
    [ $2/GPU-h     ]
    """
    parts = [n.partition(".") for n in numbers]
    w_whole = max((len(whole) for whole, _, _ in parts), default=0)
    tails = [f"{point}{frac}{unit}" for _, point, frac in parts]
    w_tail = max((len(t) for t in tails), default=0)
    return [
        f"{whole:>{w_whole}}{t:<{w_tail}}" for (whole, _, _), t in zip(parts, tails, strict=True)
    ]


def fabrics(as_json: JsonOpt = False) -> None:
    """Network fabrics: what the model uses for each, fitted or cited, and the sources.

    Per fabric: the per-message overhead in use (fitted on the bundled runs, else the cited
    prior, else none), the cited share of line rate a multi-node ring reaches, whether it is
    proxy-driven (shares the network ramp's multiplier), the network ramp amplitude, and whether
    any bundled run measures it between nodes (an unmeasured fabric's error band is unknown).

    Example: costmodel fabrics --json
    """
    from ..fabrics import fabric_table

    rows: list[dict[str, Any]] = fabric_table()
    if as_json:
        _print_json(rows)
        return
    cols = ["fabric", "overhead", "from", "ring NIC share", "proxy", "net ramp", "measured"]

    def num(v: float | None, fmt: str) -> str:
        return "-" if v is None else format(v, fmt)

    table = [
        [
            r["fabric"],
            num(r["per_message_overhead_us"], ".1f")
            + " us" * (r["per_message_overhead_us"] is not None),
            r["overhead_from"],
            num(r["ring_nic_fraction"], ".2f"),
            "yes" if r["proxy_driven"] else "no",
            f"{r['net_ramp_phi']:.2f}",
            "yes" if r["measured"] else "no (error band unknown)",
        ]
        for r in rows
    ]
    typer.echo(_left_table(cols, table))
    typer.echo("Sources: costmodel/data/fabric_priors.toml (costmodel fabrics --json lists them).")


# --- presets ----------------------------------------------------------------------------------
def presets_list(
    kind: Annotated[
        str | None, typer.Option(help="gpu, link, cluster or calibration (plural accepted).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Every preset with its headline figures, source, and whether a user file overrides it.

    Example: costmodel presets list --kind cluster
    """
    from .. import presets

    rows = [r.as_dict() for r in presets.listing(kind)]
    if as_json:
        _print_json(rows)
        return
    cols = ["name", "kind", "headline", "origin", "source"]
    table = [[str(r[c]) for c in cols] for r in rows]
    for line in table:
        line[-1] = line[-1] if len(line[-1]) <= 60 else line[-1][:59] + "…"
    typer.echo(_left_table(cols, table))


def presets_show(
    name: Annotated[str, typer.Argument(metavar="NAME", help="Preset name, e.g. dgx-h100.")],
    nodes: Annotated[
        int | None,
        typer.Option(min=1, help="For a cluster preset: number of nodes (default 1)."),
    ] = None,
    gpus_per_node: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="For a cluster preset: use a slice of each node, as step, scenario and train "
            "take it (default: all its GPUs).",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Every field of one preset (and, for a cluster, the figures the formulas use).

    --nodes and --gpus-per-node shape the cluster as step, scenario and train do (the derived
    figures: the ranks, a slice's share of the NICs).

    Example: costmodel presets show dgx-h100 --nodes 2
    """
    from .. import presets
    from ..architecture import arch_names
    from ..training import price_names

    # the other two kinds of preset live elsewhere: say where, not "unknown preset"
    if name not in presets.names() and name in price_names():
        raise ValueError(
            f"name: {name!r} is a price preset, not hardware: `costmodel archs` lists prices "
            "(GPU, price per GPU-hour, date, source)"
        )
    if name not in presets.names() and name in arch_names():
        raise ValueError(
            f"name: {name!r} is an architecture preset, not hardware: `costmodel archs` lists "
            f"architectures (parameters, shape, source); `costmodel memory --arch {name}` uses it"
        )
    obj = presets.load(name)
    is_cluster = type(obj).__name__ == "Cluster"
    kind = type(obj).__name__.removesuffix("Preset").lower()  # gpu, link: as `presets list`
    for flag, value in (("--nodes", nodes), ("--gpus-per-node", gpus_per_node)):
        if value is not None and not is_cluster:  # said, not silently ignored
            raise ValueError(
                f"{flag}: applies to cluster presets only; {name!r} is a {kind} preset (leave "
                f"{flag} out, or name a cluster, e.g. dgx-h100)"
            )
    data: dict[str, Any] = {
        "name": name,
        "kind": type(obj).__name__,
        "fields": _jsonable(obj.model_dump(mode="json")),
    }
    target = (
        presets.cluster(name, nodes=nodes or 1, gpus_per_node=gpus_per_node, field="name")
        if is_cluster
        else obj
    )
    derived = {attr: _jsonable(getattr(target, attr)) for attr in _DERIVED if hasattr(target, attr)}
    if derived:
        data["derived"] = derived
    if as_json:
        _print_json(data)
        return
    typer.echo(f"{name} ({data['kind']})")
    typer.echo(_kv([(k, _fmt_field(k, v)) for k, v in _flatten(data["fields"]).items()]))
    if "derived" in data:
        typer.echo("\nderived (what the formulas use; per GPU, per direction):")
        typer.echo(_kv([(k, _fmt_field(k, v)) for k, v in data["derived"].items()]))


_DERIVED = (
    "per_direction_bandwidth_bytes_per_s",
    "effective_bandwidth_bytes_per_s",
    "peak_flops",
    "nodes",
    "gpus_per_node",
    "ranks",
    "intra_bandwidth_bytes_per_s",
    "inter_bandwidth_bytes_per_s",
    "node_inter_bandwidth_bytes_per_s",
    "intra_latency_s",
    "inter_latency_s",
    "intra_kind",
    "fabric",
    "nvls",
    "sharp",
)
"""Properties `presets show` prints under the stored fields, where the preset has them."""


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _fmt_field(name: str, value: Any) -> str:
    """A preset field's value in its unit, as `presets list` writes it: FLOP/s to 4 significant
    digits (one GPU's peak reads 989.5 TFLOP/s in both; 3 digits said 990 here), the rest to 3.
    A field left unset (``null`` in --json: no power limit, so the datasheet's; no calibration)
    or empty is "-", as every table of the CLI writes a missing value, not Python's "None" or
    a blank."""
    if value is None or value == "":
        return "-"
    if isinstance(value, int | float) and not isinstance(value, bool):
        for suffix, fmt, digits in (
            ("_bytes_per_s", units.format_rate, 3),
            ("_bytes", units.format_bytes, 3),
            ("_s", units.format_duration, 3),
            ("_flops", units.format_flops, 4),
        ):
            if name.endswith(suffix):
                return fmt(float(value), digits)
    return str(value)


def presets_schema(
    kind: Annotated[
        str, typer.Argument(metavar="KIND", help="gpu, link, cluster or calibration.")
    ] = "cluster",
) -> None:
    """The JSON schema a preset TOML file is written against.

    Example: costmodel presets schema link
    """
    from .. import presets

    typer.echo(presets.schema_json(kind.lower()))
