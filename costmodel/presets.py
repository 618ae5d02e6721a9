r"""Hardware presets: cited TOML files for GPUs, links and clusters, shipped and user-supplied.

Files
-----
One TOML file per preset, named after it, in ``gpus/``, ``links/`` or ``clusters/``:

- shipped: the top-level ``presets/`` folder of the repository, installed inside the wheel as
  the package ``costmodel._presets``;
- user: every folder in ``COSTMODEL_PRESETS`` (an ``os.pathsep``-separated list), then the
  folders passed as ``dirs=`` (the CLI's ``--presets-dir``). A user folder has the same layout
  (files directly in it must say ``preset = "gpu" | "link" | "cluster"``).

A later source overrides an earlier one by name (shipped < ``COSTMODEL_PRESETS`` < ``dirs``;
within one list the first folder wins, as in ``PATH``); :func:`listing` says which file won.

Format
------
Keys are the model fields (:mod:`costmodel.hardware`), whose names carry the SI unit the value
is stored in. **Quantities are strings with units** (``memory_bytes = "80GB"``,
``datasheet_bandwidth_bytes_per_s = "900GB/s"``, ``latency_s = "0.6us"``,
``bf16_dense_flops = "989.5TFLOP/s"``); a bare number is refused, so a value is never read in the
wrong unit. Every number carries a ``# citation`` comment and every preset a ``source``. In a
cluster file, ``node.gpu``, ``node.intra_link`` and ``node.nic`` name a GPU or link preset, or
hold a full inline table. ``costmodel presets schema`` prints the JSON schema.

Loading never half-succeeds: all files are read and validated together, and any error (TOML
syntax, unknown key, missing source, zero bandwidth, bare number, dangling reference) raises
one :class:`PresetError` naming the file, the field and what is allowed.

Calibrations
------------
A calibration preset (``preset = "calibration"``, or ``kind = "calibration"`` as
:func:`costmodel.validation.calibrate.write_calibration` writes it; folder ``calibrations/``)
holds alpha-beta figures fitted to measurements (``[[fit]]`` tables: op, algorithm, protocol,
level, ``latency_s``, ``bandwidth_bytes_per_s``, all quantities with units) and ``base``, the
cluster preset they refine. Design:

- With a ``base``, the calibration *is a cluster*: :func:`load` and :func:`cluster` return the
  base :class:`Cluster` renamed to the calibration and carrying it in
  :attr:`Cluster.calibration`, so every part that takes a cluster name (``cm.cluster``,
  ``predict_collective``, Scenario, sweeps, the CLI, the app) can use it. :func:`names` and
  :func:`listing` list it among the clusters (``listing`` says ``kind = "calibration"``).
- Its inter-node ``[[fabric]]`` and ``[[candidate]]`` tables name the network they were
  fitted on (``fabric``, the base's at calibration time); a ``base`` on another network is
  refused naming ``fabric.fabric`` (the fitted network latency and NIC efficiency are that
  network's, not the base's).
- Without a ``base`` (e.g. a CPU/gloo run, for which no cluster preset exists),
  :func:`load` returns the :class:`CalibrationPreset` itself; ``cluster()`` refuses it.
- :func:`costmodel.predict.predict_collective` uses the fits as described there
  (``model="calibrated"``, or automatically under the default ``model="nccl"``).
- Any preset file can also be loaded by path: ``load("runs/my-cluster.toml")``,
  ``cluster("runs/my-cluster.toml", nodes=2)``. A file given by path must say ``preset =``
  (or ``kind = "calibration"``); its ``name`` need not match the file name.

Which preset describes each measured run in ``data/nccl-tests`` is tabled in
``presets/README.md`` (e.g. 06a: ``cluster("dell-xe9680-h100", nodes=2)``).

>>> names("gpu")[:3]
['a100-sxm-40gb', 'a100-sxm-80gb', 'b200']
>>> c = cluster("dgx-h100", nodes=8)
>>> c.ranks, c.gpu.name, c.node.nic.name
(64, 'h100-sxm', 'ib-ndr')
"""

from __future__ import annotations

import difflib
import importlib.resources
import json
import os
import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, overload

import tomli_w
from pydantic import BaseModel, ValidationError

from . import textfile
from .hardware import GPU, REQUIRE_UNITS, CalibrationPreset, Cluster, Link, Node
from .units import (
    format_bytes,
    format_duration,
    format_flops,
    format_rate,
    parse_bytes,
    parse_duration,
    parse_flops,
    parse_rate,
)

__all__ = [
    "ENV_VAR",
    "KINDS",
    "PresetError",
    "PresetRow",
    "names",
    "load",
    "check_calibration",
    "check_calibration_base",
    "cluster",
    "listing",
    "schema",
    "schema_json",
    "to_toml",
    "shipped_dir",
]

ENV_VAR = "COSTMODEL_PRESETS"
#: kind -> (folder, model)
KINDS: dict[str, tuple[str, type[BaseModel]]] = {
    "gpu": ("gpus", GPU),
    "link": ("links", Link),
    "cluster": ("clusters", Cluster),
    "calibration": ("calibrations", CalibrationPreset),
}
_KIND_ALIASES = {
    "gpus": "gpu",
    "links": "link",
    "clusters": "cluster",
    "node": "cluster",
    "calibrations": "calibration",
}
# cluster files may name these presets instead of inlining them: field -> kind
_REFERENCES = {"gpu": "gpu", "intra_link": "link", "nic": "link"}


class PresetError(ValueError):
    """A preset file or name is wrong; the message names the file, the field, what is allowed."""


@dataclass(frozen=True)
class PresetRow:
    """One line of :func:`listing`."""

    name: str
    kind: str
    headline: str
    source: str
    origin: str  # "shipped" or "user"
    path: str
    overrides: tuple[str, ...] = ()  # files this one shadows

    def as_dict(self) -> dict[str, Any]:
        """Plain dict (for JSON output and DataFrames)."""
        return {
            "name": self.name,
            "kind": self.kind,
            "headline": self.headline,
            "source": self.source,
            "origin": self.origin,
            "path": self.path,
            "overrides": list(self.overrides),
        }


@dataclass
class _File:
    name: str
    kind: str
    path: str
    origin: str
    data: dict[str, Any]
    overrides: list[str] = field(default_factory=list)


# --- locating files ----------------------------------------------------------------------------
def shipped_dir() -> Path:
    """The shipped presets folder: ``costmodel._presets`` if installed, else the repo folder."""
    try:
        root = importlib.resources.files("costmodel._presets")
        path = Path(str(root))
        if (path / "gpus").is_dir():
            return path
    except (ModuleNotFoundError, TypeError):
        pass
    return Path(__file__).resolve().parent.parent / "presets"


def _normalize_kind(kind: str | None) -> str | None:
    if kind is None:
        return None
    k = _KIND_ALIASES.get(kind, kind)
    if k not in KINDS:
        other = (
            " (price and architecture presets: `cm.price_names()`, `cm.arch_names()`)"
            if str(kind).lower().rstrip("s") in ("price", "arch", "architecture", "model")
            else ""
        )
        raise PresetError(
            f"kind: {kind!r} is not a preset kind; allowed: {', '.join(KINDS)}{other}"
        )
    return k


def _user_dirs(dirs: Iterable[str | os.PathLike[str]] | str | None) -> list[tuple[Path, str]]:
    """(folder, how it was given), lowest priority first."""
    out: list[tuple[Path, str]] = []
    env = os.environ.get(ENV_VAR, "")
    env_dirs = [d for d in env.split(os.pathsep) if d.strip()]
    # within a list the first folder wins (PATH); later entries override earlier -> reverse
    out += [(Path(d).expanduser(), ENV_VAR) for d in reversed(env_dirs)]
    if isinstance(dirs, str | os.PathLike):
        dirs = [dirs]
    out += [(Path(d).expanduser(), "dirs argument") for d in reversed(list(dirs or []))]
    for path, how in out:
        if not _is(path, "dir"):
            raise PresetError(
                f"{_short(path)}: presets folder (from {how}) does not exist or is not a folder"
            )
    return out


def _short(path: object) -> str:
    """A path for a message: at most 200 characters (a 10,000-character one is cut)."""
    text = str(path)
    return text if len(text) <= 200 else f"{text[:200]}... ({len(text)} characters)"


def _is(path: Path, what: str) -> bool:
    """``path.is_dir()`` / ``is_file()``, False where the OS refuses the path (name too long,
    a NUL byte, no permission) instead of an OSError."""
    try:
        return path.is_dir() if what == "dir" else path.is_file()
    except (OSError, ValueError):
        return False


MAX_PRESET_FILE_BYTES = 1_000_000
"""Largest preset TOML read (1 MB; the shipped ones are under 50 kB), checked before reading."""
MAX_PRESET_NESTING = 32
"""Deepest nesting of arrays and inline tables in a preset TOML (the shipped ones use 3),
checked before parsing: a file nested 100,000 deep would otherwise exhaust the parser's stack."""
_TOML_SKIP_RE = re.compile(
    r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*'
)
_TOML_BRACKET_RE = re.compile(r"[\[\]{}]")


def toml_nesting(text: str) -> int:
    """Deepest nesting of ``[`` / ``{`` in TOML text, strings and comments left out (linear).

    >>> toml_nesting('a = [[1, 2], {b = "[[["}]  # [[[')
    2
    """
    depth = deepest = 0
    for m in _TOML_BRACKET_RE.finditer(_TOML_SKIP_RE.sub("", text)):
        if m.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(0, depth - 1)
    return deepest


def read_toml_bounded(path: Path, what: str = "preset") -> dict[str, Any]:
    """Parse a user TOML file with its size and nesting bounded before parsing.

    PresetError (a ValueError) naming the file for a file over :data:`MAX_PRESET_FILE_BYTES`,
    nested deeper than :data:`MAX_PRESET_NESTING`, unreadable or malformed.
    """
    where = _short(path)
    try:
        size = path.stat().st_size
        if size > MAX_PRESET_FILE_BYTES:
            raise PresetError(
                f"{where}: {what} file is {size:,} bytes; allowed: at most "
                f"{MAX_PRESET_FILE_BYTES:,} bytes"
            )
        with path.open("rb") as fh:  # read at most the limit (the file may grow meanwhile)
            raw = fh.read(MAX_PRESET_FILE_BYTES + 1)
        if len(raw) > MAX_PRESET_FILE_BYTES:
            raise PresetError(
                f"{where}: {what} file is over {MAX_PRESET_FILE_BYTES:,} bytes; allowed: at most "
                f"{MAX_PRESET_FILE_BYTES:,} bytes"
            )
    except OSError as exc:
        raise PresetError(f"{where}: cannot read: {exc}") from None
    try:  # decoded as logs, results, grid files and calibrations are (costmodel.textfile)
        text = textfile.decode_text(raw, where, what=f"{what} file")
    except textfile.TextDecodeError as exc:
        raise PresetError(f"{where}: cannot read: {exc.message}") from None
    depth = toml_nesting(text)
    if depth > MAX_PRESET_NESTING:
        raise PresetError(
            f"{where}: {what} file nests arrays or tables {depth} deep; allowed: at most "
            f"{MAX_PRESET_NESTING}"
        )
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PresetError(f"{where}: malformed TOML: {exc}; allowed: TOML 1.0 syntax") from None
    except RecursionError:
        raise PresetError(
            f"{where}: {what} file nests too deep to parse; allowed: at most "
            f"{MAX_PRESET_NESTING} levels"
        ) from None


def _toml_files(root: Path) -> list[tuple[Path, str | None]]:
    """(file, kind implied by its folder or None) under one presets root."""
    found: list[tuple[Path, str | None]] = []
    for kind, (folder, _) in KINDS.items():
        sub = root / folder
        if sub.is_dir():
            found += [(p, kind) for p in sorted(sub.glob("*.toml"), key=_file_name)]
    found += [(p, None) for p in sorted(root.glob("*.toml"), key=_file_name)]
    return found


def _file_name(path: Path) -> str:
    """The sort key of the files of one folder: their name (the order of the paths, cheaper)."""
    return path.name


def _stamp(path: Path, origin: str) -> tuple[str, int, int, str]:
    """(path, modification time [ns], size [B], origin): one stat per file and lookup."""
    st = path.stat()
    return str(path), st.st_mtime_ns, st.st_size, origin


def _read(path: Path, folder_kind: str | None, origin: str, *, by_path: bool = False) -> _File:
    data = read_toml_bounded(path)
    kind = data.pop("preset", None)
    if data.get("kind") == "calibration" and kind in (None, "calibration"):
        kind = data.pop("kind")  # as calibrate.write_calibration writes it
    if kind is not None:
        if not isinstance(kind, str) or _KIND_ALIASES.get(kind, kind) not in KINDS:
            raise PresetError(
                f"{path}: preset: {kind!r} is not a preset kind; allowed: {', '.join(KINDS)}"
            )
        kind = _KIND_ALIASES.get(kind, kind)
        if folder_kind is not None and kind != folder_kind:
            raise PresetError(
                f"{path}: preset: {kind!r} in a {KINDS[folder_kind][0]}/ folder; allowed: {folder_kind!r}"
            )
    kind = kind or folder_kind
    if kind is None:
        raise PresetError(
            f"{path}: preset: missing; a file outside gpus/, links/, clusters/, calibrations/ "
            'must say preset = "gpu" | "link" | "cluster" | "calibration"'
        )
    name = data.get("name", path.stem)
    if by_path:  # a name that is not text is refused by the validation, naming its type
        data["name"] = name
        return _File(name=str(name), kind=kind, path=str(path), origin=origin, data=data)
    if name != path.stem:
        raise PresetError(
            f"{path}: name: {name!r} differs from the file name; allowed: {path.stem!r} "
            "(one file per preset, named after it)"
        )
    data["name"] = name
    return _File(name=name, kind=kind, path=str(path), origin=origin, data=data)


# --- validation ----------------------------------------------------------------------------
def _fields_at(model: type[BaseModel], loc: Sequence[Any]) -> list[str] | None:
    """The allowed keys of the (nested) model that ``loc`` points into."""
    current: Any = model
    for part in loc:
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        info = current.model_fields.get(str(part))
        if info is None:
            return None
        ann = info.annotation
        candidates = [ann, *getattr(ann, "__args__", ())]
        current = next(
            (c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None
        )
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return None


#: pydantic's errors for a number past one bound of its field ("Input should be less than or
#: equal to 100000000000000"): a preset's refusal says the field's whole range in its unit
_BOUND_ERRORS = frozenset(
    {"greater_than", "greater_than_equal", "less_than", "less_than_equal", "finite_number"}
)


def _typed(data: Any, loc: Sequence[Any]) -> Any:
    """The value the file holds at ``loc`` (``node.nic.latency_s``), as typed (``"1e30GB/s"``,
    not pydantic's 1e+39 B/s); None where the file holds none there (a referenced preset's)."""
    for part in loc:
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


def _explain(
    path: str, model: type[BaseModel], exc: ValidationError, data: Any = None
) -> PresetError:
    """One refusal naming the file and each field refused; a quantity out of its range says
    the field's whole range in its unit (``allowed: [1 MB/s, 1 PB/s]``,
    :func:`costmodel._limits.field_range`), never pydantic's one bound alone, and the value as
    the file types it (``data``: the file's table)."""
    from ._limits import RANGE_ERRORS, field_range

    lines = []
    for err in exc.errors():
        loc = [p for p in err["loc"] if not isinstance(p, int)]
        where = ".".join(str(p) for p in loc) or "(file)"
        msg = err["msg"].removeprefix("Value error, ")
        kind = err["type"]
        if kind == "extra_forbidden":
            allowed = _fields_at(model, loc[:-1]) or []
            lines.append(f"{where}: unknown key; allowed keys: {', '.join(allowed)}")
        elif kind == "missing":
            hint = (
                "a citation (datasheet, paper, issue number)"
                if loc[-1:] == ["source"]
                else ("see `cm.presets.schema(kind)`")
            )
            lines.append(f"{where}: required but missing; allowed: {hint}")
        else:
            got = err.get("input")
            if loc:  # a validator that already names its field: say the field once
                msg = msg.removeprefix(f"{loc[-1]}: ")
            bounds = field_range(model.__name__, where) if kind in RANGE_ERRORS else ""
            if bounds and "; allowed: " not in msg:
                typed = _typed(data, loc)
                got = typed if isinstance(typed, str) else got
                if kind in _BOUND_ERRORS:  # pydantic's one bound, in bytes: the range instead
                    msg = f"must be in {bounds}, got {got!r}"
                else:  # a type pydantic names ("a valid integer"): and the range
                    msg += f"; allowed: {bounds}"
            shown = "" if isinstance(got, dict) or repr(got) in msg else f" (got {got!r})"
            lines.append(f"{where}: {msg}{shown}")
    body = "\n  ".join(lines)
    return PresetError(f"{path}: {body}" if len(lines) == 1 else f"{path}:\n  {body}")


class _Registry:
    def __init__(self, files: dict[str, _File]):
        self.files = files
        self.models: dict[str, BaseModel] = {}
        # gpus and links first: clusters refer to them; calibrations refer to clusters
        for kind in ("gpu", "link", "cluster", "calibration"):
            for f in sorted((f for f in files.values() if f.kind == kind), key=lambda f: f.name):
                self.models[f.name] = self._validate(f)

    def _resolve(self, f: _File, key: str, value: Any) -> Any:
        kind = _REFERENCES[key]
        if not isinstance(value, str):
            return value
        ref = self.files.get(value)
        if ref is None or ref.kind != kind:
            pool = sorted(n for n, g in self.files.items() if g.kind == kind)
            close = difflib.get_close_matches(value, pool, n=3, cutoff=0.5)
            hint = f"closest: {', '.join(close)}" if close else f"allowed: {', '.join(pool)}"
            raise PresetError(f"{f.path}: node.{key}: no {kind} preset named {value!r}; {hint}")
        return self.models[value]

    def _calibrated(self, f: _File) -> BaseModel:
        """A calibration: the base cluster carrying it, or the bare calibration without base."""
        cal = check_calibration(f.path, f.data)
        base = _base_in(self, f.path, cal)
        if base is None:
            return cal
        return Cluster.model_validate(
            {
                **{k: getattr(base, k) for k in type(base).model_fields},
                "name": cal.name,
                "description": cal.description or f"{base.name} calibrated ({len(cal.fits)} fits)",
                "source": f"calibration {cal.name}: {cal.source}; base preset {base.name}: "
                f"{base.source}",
                "calibration": cal,
            }
        )

    def _validate(self, f: _File) -> BaseModel:
        if f.kind == "calibration":
            return self._calibrated(f)
        model = KINDS[f.kind][1]
        data = dict(f.data)
        if f.kind == "cluster" and isinstance(data.get("node"), dict):
            node = dict(data["node"])
            for key in _REFERENCES:
                if key in node:
                    node[key] = self._resolve(f, key, node[key])
            data["node"] = node
        try:
            return model.model_validate(data, context={REQUIRE_UNITS: True})
        except ValidationError as exc:
            raise _explain(f.path, model, exc, f.data) from None


def check_calibration(
    path: Any, data: dict[str, Any], *, require_units: bool = True
) -> CalibrationPreset:
    """The calibration table ``data`` of the file ``path`` (without its ``kind``/``preset``
    key), validated; a refusal names the file and each key refused with its range
    (:func:`_explain`). One check for every road that reads a calibration: a cluster preset
    (:func:`load`, ``--cluster FILE``) and
    :func:`costmodel.validation.calibrate.load_calibration` (``validate compare
    --calibration``, the Validate page's upload), which passes ``require_units=False`` for
    older files with bare numbers."""
    try:
        return CalibrationPreset.model_validate(data, context={REQUIRE_UNITS: require_units})
    except ValidationError as exc:
        raise _explain(str(path), CalibrationPreset, exc, data) from None


def check_calibration_base(path: Any, cal: CalibrationPreset) -> Cluster | None:
    """The base cluster of ``cal`` (None without one), refused as :func:`load` refuses a
    calibration by path: an unknown ``base`` names the closest presets, and inter-node terms
    fitted on another network than the base's are refused (:func:`_check_fabric_of_base`)."""
    return None if cal.base is None else _base_in(_registry(), path, cal)


def _base_in(reg: Any, path: Any, cal: CalibrationPreset) -> Cluster | None:
    """The base cluster of ``cal`` among the presets of ``reg`` (a registry: the one being
    loaded, or the shipped one), None without a base: an unknown ``base`` names the closest
    cluster presets, and inter-node terms fitted on another network than the base's are
    refused (:func:`_check_fabric_of_base`)."""
    if cal.base is None:
        return None
    ref = reg.files.get(cal.base)
    base = reg.models.get(cal.base)
    if ref is None or ref.kind != "cluster" or not isinstance(base, Cluster):
        pool = sorted(n for n, g in reg.files.items() if g.kind == "cluster")
        close = difflib.get_close_matches(cal.base, pool, n=3, cutoff=0.5)
        hint = f"closest: {', '.join(close)}" if close else f"allowed: {', '.join(pool)}"
        raise PresetError(f"{path}: base: no cluster preset named {cal.base!r}; {hint}")
    _check_fabric_of_base(path, cal, base)
    return base


def _check_fabric_of_base(path: Any, cal: CalibrationPreset, base: Cluster) -> None:
    """Refuse inter-node terms fitted on another network than the base cluster's.

    ``calibrate --cluster NAME`` writes the base's fabric into each inter-node ``[[fabric]]``
    and ``[[candidate]]`` table; the terms (NIC efficiency, network latency per hop, ...) are
    properties of that network, and the prediction files them under the base's fabric
    (:func:`costmodel.predict.fabric_calibration_inputs`), so a ``base`` edited to a cluster
    on another network would carry, say, InfiniBand's fitted latency onto EFA without a word.
    """
    for table, entries in (("fabric", cal.fabric), ("candidate", cal.candidates)):
        for e in entries:
            if e.level == "inter" and e.fabric != "none" and e.fabric != base.fabric:
                raise PresetError(
                    f"{path}: {table}.fabric: {e.fabric!r} (the network its inter-node terms "
                    f"were fitted on) is not the fabric of base {base.name!r} "
                    f"({base.fabric!r}); allowed: {base.fabric!r}, i.e. a calibration of "
                    f"{base.name}'s own runs (`calibrate`)"
                )


_CACHE: dict[tuple[Any, ...], _Registry] = {}


def _registry(dirs: Iterable[str | os.PathLike[str]] | str | None = None) -> _Registry:
    roots = [(shipped_dir(), "shipped"), *((p, "user") for p, _ in _user_dirs(dirs))]
    listed = [(root, origin, _toml_files(root)) for root, origin in roots]
    key = tuple(_stamp(p, origin) for _, origin, files in listed for p, _ in files)
    if key in _CACHE:
        return _CACHE[key]
    merged: dict[str, _File] = {}
    for _, origin, files in listed:
        layer: dict[str, _File] = {}
        for path, folder_kind in files:
            f = _read(path, folder_kind, origin)
            if f.name in layer:  # same name twice in one folder tree
                raise PresetError(
                    f"{path}: name: {f.name!r} is also defined in {layer[f.name].path}; "
                    "allowed: one file per name in a presets folder"
                )
            layer[f.name] = f
        for name, f in layer.items():
            old = merged.get(name)
            if old is not None:
                if old.kind != f.kind:
                    raise PresetError(
                        f"{f.path}: name: {name!r} is a {f.kind} here but a {old.kind} in "
                        f"{old.path}; allowed: override a preset only with one of the same kind"
                    )
                f.overrides = [old.path, *old.overrides]
            merged[name] = f
    registry = _Registry(merged)
    if len(_CACHE) > 32:
        _CACHE.clear()
    _CACHE[key] = registry
    return registry


# --- public interface -------------------------------------------------------------------------
def names(
    kind: str | None = None, *, dirs: Iterable[str | os.PathLike[str]] | str | None = None
) -> list[str]:
    """Sorted preset names, of one kind (``"gpu"``, ``"link"``, ``"cluster"``) or all.

    >>> "nvlink4" in names("link"), "nvlink4" in names("gpu")
    (True, False)
    """
    k = _normalize_kind(kind)
    reg = _registry(dirs)
    return sorted(n for n, f in reg.files.items() if _kind_matches(f, reg.models[n], k))


def _kind_matches(f: _File, model: BaseModel, kind: str | None) -> bool:
    """A calibration with a base counts as a cluster too (it loads as one)."""
    return (
        kind is None
        or f.kind == kind
        or (kind == "cluster" and f.kind == "calibration" and isinstance(model, Cluster))
    )


def _is_path(name: object) -> bool:
    if isinstance(name, os.PathLike):
        return True
    return isinstance(name, str) and (name.endswith(".toml") or os.sep in name or "/" in name)


def _load_path(
    path: str | os.PathLike[str], reg: _Registry, field: str = "name"
) -> tuple[_File, BaseModel]:
    p = Path(path).expanduser()
    if not _is(p, "file"):
        where = f"{field}: {_short(p)}" if field != "name" else _short(p)
        what = "is a folder, not a preset file" if _is(p, "dir") else "preset file does not exist"
        raise PresetError(
            f"{where}: {what}; allowed: a preset name (see "
            "`cm.presets.names()`) or the path of a preset TOML file"
        )
    # a file in a gpus/, links/, clusters/ or calibrations/ folder is of that kind, as it is
    # when its folder is a presets root's (so a shipped preset loads by its path too)
    folder_kind = next((k for k, (folder, _) in KINDS.items() if p.parent.name == folder), None)
    f = _read(p, folder_kind, "user", by_path=True)
    return f, reg._validate(f)


def _unknown(name: object, pool: list[str], kind: str | None, field: str = "name") -> PresetError:
    """The refusal of an unknown preset ``name``, naming ``field`` (the argument or field the
    caller's user gave it in: ``cluster`` of a Scenario, ``preset`` of a sweep)."""
    from ._checks import unknown_name

    what = f"{kind} preset" if kind else "preset"
    return PresetError(
        unknown_name(
            field,
            what,
            name,
            pool,
            case_note="preset names are lower-case",
            see=" (see `cm.presets.names()`)",
        )
    )


@overload
def load(
    name: str | os.PathLike[str],
    kind: Literal["gpu"],
    *,
    dirs: Iterable[str | os.PathLike[str]] | str | None = None,
    field: str = "name",
) -> GPU: ...
@overload
def load(
    name: str | os.PathLike[str],
    kind: Literal["link"],
    *,
    dirs: Iterable[str | os.PathLike[str]] | str | None = None,
    field: str = "name",
) -> Link: ...
@overload
def load(
    name: str | os.PathLike[str],
    kind: str | None = None,
    *,
    dirs: Iterable[str | os.PathLike[str]] | str | None = None,
    field: str = "name",
) -> GPU | Link | Cluster | CalibrationPreset: ...
def load(
    name: str | os.PathLike[str],
    kind: str | None = None,
    *,
    dirs: Iterable[str | os.PathLike[str]] | str | None = None,
    field: str = "name",
) -> GPU | Link | Cluster | CalibrationPreset:
    """The validated preset called ``name`` (a :class:`GPU`, :class:`Link` or :class:`Cluster`).

    ``name`` may also be the path of a preset file (ends in ``.toml`` or contains a ``/``).
    ``field`` is what an unknown name's refusal starts with: the argument or field the user
    gave the name in (``cluster`` of a Scenario), ``name`` by default.
    A calibration loads as its base cluster carrying the fits (module docstring, Calibrations);
    one without ``base`` loads as a :class:`CalibrationPreset`.

    >>> load("nvlink4").per_direction_bandwidth_bytes_per_s
    450000000000.0
    """
    k = _normalize_kind(kind)
    reg = _registry(dirs)
    f: _File | None
    model: BaseModel | None
    if _is_path(name) and not (isinstance(name, str) and name in reg.files):
        f, model = _load_path(name, reg, field)
    elif isinstance(name, str):
        f = reg.files.get(name)
        model = reg.models[name] if f is not None else None
    else:
        f, model = None, None
    if f is None or model is None or not _kind_matches(f, model, k):
        if f is not None and f.kind == "calibration" and k == "cluster":
            raise PresetError(
                f"{f.path}: base: calibration {f.name!r} names no base cluster, so it is "
                "not a cluster (it predicts the rows it was fitted on: "
                "`calibrated_predictor`); allowed: one calibrated with a base cluster "
                '(`calibrate`), or add base = "<cluster preset>" to it'
            )
        pool = sorted(n for n, g in reg.files.items() if _kind_matches(g, reg.models[n], k))
        raise _unknown(name, pool, k, field)
    return model  # type: ignore[return-value]


def cluster(
    name: str | Cluster,
    nodes: int | None = None,
    *,
    gpus_per_node: int | None = None,
    power_limit_w: float | None = None,
    dirs: Iterable[str | os.PathLike[str]] | str | None = None,
    field: str = "name",
) -> Cluster:
    """A cluster preset with ``nodes`` nodes (optionally a ``gpus_per_node`` slice, and its
    GPUs capped at ``power_limit_w`` [W]; None keeps the preset's: its datasheet power unless
    the GPU preset sets a limit). ``field`` names the name in an unknown name's refusal
    (:func:`load`). ``nodes=None``: one node of a preset named, or the nodes of a
    :class:`Cluster` passed in (it was 1 for both, so ``predict_collective(op, M,
    cluster("dgx-h100", nodes=8))`` silently answered for one node of 8 GPUs).

    >>> cluster("dgx-h100", nodes=8).ranks
    64
    >>> cluster(cluster("dgx-h100", nodes=8)).ranks    # a Cluster keeps its nodes
    64
    >>> cluster("dgx-h100", gpus_per_node=4).ranks    # a 4-GPU slice of one node
    4
    >>> cluster("dgx-h100", power_limit_w=500).gpu.power_limit_w
    500.0
    """
    c = name if isinstance(name, Cluster) else load(name, "cluster", dirs=dirs, field=field)
    assert isinstance(c, Cluster)
    from ._checks import whole_count

    if nodes is None:  # a Cluster passed in keeps its nodes; a preset by name is one node
        nodes = name.nodes if isinstance(name, Cluster) else 1
    nodes = whole_count("nodes", nodes)  # a numpy integer (an array's element) or 2.0 too
    if gpus_per_node is not None:
        gpus_per_node = whole_count("gpus_per_node", gpus_per_node)
    if gpus_per_node is not None and gpus_per_node != c.gpus_per_node:
        c = c.with_gpus_per_node(gpus_per_node)
    if power_limit_w is not None:
        c = c.with_power_limit_w(power_limit_w)
    try:
        return c if nodes == c.nodes else c.with_nodes(nodes)
    except ValidationError as exc:
        # the cluster named: a sweep over several presets said which node count, not whose
        why = exc.errors()[0]["msg"].removeprefix("Value error, ").removeprefix("nodes: ")
        raise ValueError(f"nodes: {why} ({c.name})") from None


def _headline(model: BaseModel) -> str:
    if isinstance(model, CalibrationPreset):
        first = model.fits[0]
        return (
            f"{len(model.fits)} fits, no base cluster; {first.op} {first.level} "
            f"{first.algorithm}: {format_rate(first.bandwidth_bytes_per_s)}, "
            f"{format_duration(first.latency_s)}/step"
        )
    if isinstance(model, Cluster) and model.calibration is not None:
        cal = model.calibration
        return (
            f"{_headline(model.model_copy(update={'calibration': None}))} "
            f"[calibrated on {cal.base}: {len(cal.fits)} fits]"
        )
    if isinstance(model, GPU):
        flops = model.bf16_dense_flops or model.fp16_dense_flops
        prec = "bf16" if model.bf16_dense_flops else "fp16"
        cap = "" if model.power_limit_w is None else f", capped at {model.power_limit_w:g} W"
        return (
            f"{format_bytes(model.memory_bytes)}, {format_rate(model.memory_bandwidth_bytes_per_s)}, "
            f"{format_flops(flops, 4)} {prec} dense{cap}"
        )
    if isinstance(model, Link):
        ds = (
            f" (datasheet {format_rate(model.datasheet_bandwidth_bytes_per_s)} bidirectional)"
            if model.datasheet_direction == "bidirectional"
            else ""
        )
        eff = f", x{model.efficiency:g} effective" if model.efficiency < 1 else ""
        return (
            f"{format_rate(model.per_direction_bandwidth_bytes_per_s)} per direction{ds}, "
            f"{format_duration(model.latency_s)}/hop{eff}"
        )
    assert isinstance(model, Cluster)
    n = model.node
    net = (
        f"{n.nics_per_node}x {n.nic.name} = {format_rate(model.node_inter_bandwidth_bytes_per_s)}/node"
        if n.nic
        else "no network"
    )
    extras = [x for x, on in (("NVLS", n.nvls), ("SHARP", n.sharp), ("no P2P", not n.p2p)) if on]
    return (
        f"{n.gpus_per_node}x {n.gpu.name}, {n.intra_kind} "
        f"{format_rate(model.intra_bandwidth_bytes_per_s)}/GPU, {net}"
        + (f" [{', '.join(extras)}]" if extras else "")
    )


def listing(
    kind: str | None = None, *, dirs: Iterable[str | os.PathLike[str]] | str | None = None
) -> list[PresetRow]:
    """Every preset (of one kind) with its headline figures, source, and the file that won.

    >>> row = [r for r in listing("link") if r.name == "nvlink4"][0]
    >>> row.origin, row.headline.split(",")[0]
    ('shipped', '450 GB/s per direction (datasheet 900 GB/s bidirectional)')
    """
    k = _normalize_kind(kind)
    reg = _registry(dirs)
    order = list(KINDS)
    rows = [
        PresetRow(
            name=f.name,
            kind=f.kind,
            headline=_headline(reg.models[f.name]),
            source=str(getattr(reg.models[f.name], "source", "")),
            origin=f.origin,
            path=f.path,
            overrides=tuple(f.overrides),
        )
        for f in reg.files.values()
        if _kind_matches(f, reg.models[f.name], k)
    ]
    return sorted(rows, key=lambda r: (order.index(r.kind), r.name))


# --- schema and writing ----------------------------------------------------------------------
def schema(kind: str) -> dict[str, Any]:
    """JSON schema of one preset kind, as a user writes the TOML file (quantities are strings)."""
    k = _normalize_kind(kind)
    assert k is not None
    model = KINDS[k][1]
    sch = model.model_json_schema()
    sch.setdefault("properties", {})["preset"] = {
        "const": k,
        "description": "optional inside gpus/, links/, clusters/; required elsewhere",
    }
    node = sch.get("$defs", {}).get("Node")
    if node:
        for key, ref_kind in _REFERENCES.items():
            prop = node["properties"][key]
            named = {"type": "string", "description": f"name of a {ref_kind} preset"}
            options = prop.pop("anyOf", None) or [{"$ref": prop.pop("$ref")}]
            prop["anyOf"] = [named, *options]
    return sch


def schema_json(kind: str) -> str:
    """:func:`schema` as indented JSON text (``costmodel presets schema``)."""
    return json.dumps(schema(kind), indent=2)


_PREFIXES = (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3), ("", 1.0))
_DURATIONS = (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9))


def _num(x: float) -> str:
    s = repr(float(x))
    return s[:-2] if s.endswith(".0") else s


def _quantity_text(field_name: str, value: float) -> str:
    """Shortest unit string that parses back to exactly ``value``."""
    if field_name.endswith("_bytes_per_s"):
        cands = [f"{_num(value / s)}{p}B/s" for p, s in _PREFIXES]
        parse: Any = parse_rate
    elif field_name.endswith("_bytes"):
        cands = [f"{_num(value / s)}{p}B" for p, s in _PREFIXES if value % s == 0]
        cands.append(f"{int(value)}B")
        parse = parse_bytes
    elif field_name.endswith("_flops"):
        cands = [f"{_num(value / s)}{p}FLOP/s" for p, s in _PREFIXES if p != "P"]
        parse = parse_flops
    else:  # *_s
        cands = [f"{_num(value / s)}{u}" for u, s in _DURATIONS]
        parse = parse_duration
    exact = [c for c in cands if parse(c) == value]
    return min(exact, key=len) if exact else cands[-1]


_QUANTITY_SUFFIXES = ("_bytes_per_s", "_bytes", "_flops", "_s")


def _toml_dict(model: BaseModel) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in type(model).model_fields:
        value = getattr(model, name)
        if value is None:
            continue
        if isinstance(value, BaseModel):
            out[name] = _toml_dict(value)
        elif isinstance(value, tuple) and value and all(isinstance(v, BaseModel) for v in value):
            out["fit" if name == "fits" else name] = [_toml_dict(v) for v in value]
        elif (
            name.endswith(_QUANTITY_SUFFIXES)
            and isinstance(value, int | float)
            and not isinstance(value, bool)
        ):
            out[name] = _quantity_text(name, value)
        else:
            out[name] = value
    return out


def to_toml(model: GPU | Link | Cluster | Node | CalibrationPreset) -> str:
    """A preset file for ``model`` (quantities as exact unit strings; nested models inline).

    >>> print(to_toml(load("nvlink4")).splitlines()[0])
    preset = "link"
    """
    kind = {GPU: "gpu", Link: "link", Cluster: "cluster", CalibrationPreset: "calibration"}.get(
        type(model)
    )
    if kind is None:
        raise ValueError(
            f"model: expected a GPU, Link, Cluster or CalibrationPreset, got {type(model).__name__}"
        )
    return tomli_w.dumps({"preset": kind, **_toml_dict(model)})
