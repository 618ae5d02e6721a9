"""Tests for costmodel.presets: shipped files, round trips, user folders, bad input, schema."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

import costmodel as cm
from costmodel import presets
from costmodel.hardware import GPU, Cluster, Link
from costmodel.presets import PresetError, cluster, listing, load, names, schema_json, to_toml

SHIPPED = presets.shipped_dir()

ISSUE_GPUS = [
    "v100-sxm2",
    "a100-sxm-80gb",
    "h100-sxm",
    "h200-sxm",
    "b200",
    "gb200",
    "gh200",
    "l40s",
    "rtx-2080ti",
]
ISSUE_LINKS = [
    "nvlink3",
    "nvlink4",
    "nvlink5",
    "pcie3-x16",
    "pcie4-x16",
    "pcie5-x16",
    "ib-hdr",
    "ib-ndr",
    "ib-xdr",
    "roce-400g",
    "roce-800g",
    "efa-v2-100g",
]
ISSUE_CLUSTERS = [
    "dgx1-v100",
    "dgx-a100",
    "dgx-h100",
    "hgx-h200",
    "dgx-b200",
    "gb200-nvl72",
    "aws-p4de",
    "aws-p5",
    "gcp-a3-mega",
    "gcp-a4",
    "azure-nd-h100-v5",
    "pcie-8x-l40s",
    "alps-gh200",
]
# the bundled run ids (costmodel/data/reference/README.md): each needs a preset (presets/README.md)
DATA_RUNS = [
    "02",
    "03",
    "04a",
    "04b",
    "04c",
    "06a",
    "09a",
    "09b",
    "09c",
    "09d",
    "09e",
    "12a",
    "13a",
    "13b",
    "13c",
    "13d",
    "13e",
    "13f",
    "15",
    "16a",
    "16b",
    "16c",
    "20",
    "21a",
    "21b",
    "21c",
    "21d",
    "22",
    "23a",
    "23b",
    "24a",
    "24b",
    "24c",
    "24d",
    "25a",
    "25b",
    "25c",
    "25d",
    "25e",
    "26",
    "27",
]
# bundled files no preset describes yet (presets/README.md says why)
NO_PRESET: list[str] = []


@pytest.fixture(autouse=True)
def _no_user_env(monkeypatch):
    monkeypatch.delenv(presets.ENV_VAR, raising=False)


def _write(root: Path, folder: str, name: str, text: str) -> Path:
    path = root / folder / f"{name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _shipped_text(folder: str, name: str) -> str:
    return (SHIPPED / folder / f"{name}.toml").read_text(encoding="utf-8")


# --- shipped presets -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kind", "required", "model"),
    [("gpu", ISSUE_GPUS, GPU), ("link", ISSUE_LINKS, Link), ("cluster", ISSUE_CLUSTERS, Cluster)],
)
def test_issue_presets_exist_and_load(kind, required, model):
    have = names(kind)
    assert set(required) <= set(have), set(required) - set(have)
    for name in have:
        obj = load(name)
        assert isinstance(obj, model) and obj.name == name and obj.source.strip()


def test_every_preset_round_trips_through_toml(tmp_path):
    all_names = names()
    assert len(all_names) >= len(ISSUE_GPUS) + len(ISSUE_LINKS) + len(ISSUE_CLUSTERS)
    folders = {"gpu": "gpus", "link": "links", "cluster": "clusters"}
    kinds = {row.name: row.kind for row in listing()}
    for name in all_names:
        _write(tmp_path, folders[kinds[name]], name, to_toml(load(name)))
    for name in all_names:
        assert load(name, dirs=[tmp_path]) == load(name), name
    rows = {r.name: r for r in listing(dirs=[tmp_path])}
    assert all(r.origin == "user" and r.overrides for r in rows.values())


TEXT_KEYS = {"name", "description", "generation", "source", "efficiency_source"}


def test_every_number_in_a_shipped_file_is_cited():
    # a key = value line whose value is a number or a quantity string needs a '# citation'
    line_re = re.compile(r'^\s*(\w+)\s*=\s*("[^"]*"|[^\s#]+)\s*(#.*)?$')
    quantity = re.compile(
        r'^("\s*-?[\d.]+(?:[eE][-+]?\d+)?\s*[A-Za-z/]+"|-?[\d.]+(?:[eE][-+]?\d+)?)$'
    )
    files = sorted(SHIPPED.glob("*/*.toml"))
    # hardware presets load through the registry; models/ and prices/ are read by their own
    # modules (costmodel.architecture, costmodel.training) and are checked for citations too
    hardware = [p for p in files if p.parent.name not in ("models", "prices")]
    assert len(hardware) == len(names())
    assert any(p.parent.name == "models" for p in files)
    uncited = []
    for path in files:
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = line_re.match(line)
            if (
                m
                and m[1] not in TEXT_KEYS
                and quantity.match(m[2])
                and not (m[3] and len(m[3]) > 5)
            ):
                uncited.append(f"{path.name}:{no}: {line.strip()}")
    assert not uncited, "\n".join(uncited)


def test_lesson_differences_are_noted_in_presets():
    assert "lesson" in load("nvlink4").description and "900" in load("nvlink4").description
    assert "lesson" in load("pcie5-x16").description
    readme = (SHIPPED / "README.md").read_text(encoding="utf-8")
    assert "0.97 ms" in readme and "64 GB/s bidirectional" in readme


def test_every_data_run_maps_to_a_loadable_preset():
    readme = (SHIPPED / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d\d[a-f]?)(?:-(\d\d[a-f]?))? \| `cluster\(\"([^\"]+)\"", readme, re.M)
    covered = {}
    for first, last, preset in rows:
        ids = [first] if not last else [r for r in DATA_RUNS if first <= r <= last]
        for run in ids:
            covered[run] = preset
    assert sorted(covered) == sorted(DATA_RUNS)
    for preset in set(covered.values()):
        assert isinstance(cluster(preset), Cluster)


def test_data_run_presets_match_their_headers():
    # 06a: 2 nodes x 8 H100, 8 x CX-7 400G NDR (nccl-tests #309)
    c = cluster("dell-xe9680-h100", nodes=2)
    assert (c.ranks, c.nics_per_node, c.nic.name) == (16, 8, "ib-ndr")
    # 09a: 2 x RTX 2080 Ti, PCIe Gen3, P2P not supported
    c = cluster("pcie3-2x-rtx2080ti-nop2p")
    assert (c.ranks, c.p2p, c.intra_kind, c.gpu.name) == (2, False, "pcie", "rtx-2080ti")
    # 15: 4 GH200 per node, Slingshot-11; 512 nodes = 2048 ranks
    assert cluster("alps-gh200", nodes=512).ranks == 2048
    # 03: IB SHARP (CollNet) enabled
    assert cluster("coreweave-hgx-h100").sharp
    # 16b: 32 x 100G EFA per p5
    assert cluster("aws-p5").node_inter_bandwidth_bytes_per_s == pytest.approx(400e9)


def test_cm_cluster_is_presets_cluster():
    assert cm.cluster("dgx-h100", nodes=8) == cluster("dgx-h100", nodes=8)
    assert cm.presets.names("link") == names("link")


# --- seed examples through presets -----------------------------------------------------------
def test_seed_nvlink_example_with_textbook_bandwidth():
    # lesson: 500 MB over 8 GPUs on NVLink4 "at 900 GB/s: 0.875 GB / 900 GB/s ~ 0.97 ms"
    nvl4 = load("nvlink4")
    t = cm.allreduce_time(500e6, 8, nvl4.datasheet_bandwidth_bytes_per_s)
    assert t == pytest.approx(0.97e-3, rel=0.01)  # the lesson rounds to 2 digits
    per_dir = cm.allreduce_time(500e6, 8, nvl4.per_direction_bandwidth_bytes_per_s)
    assert per_dir == pytest.approx(2 * t, rel=1e-12)


def test_seed_ndr_examples():
    ndr = load("ib-ndr").per_direction_bandwidth_bytes_per_s
    # lesson: (b) 500 MB, 8 GPUs one per node over NDR: 0.875/50 ~ 17.5 ms
    assert cm.allreduce_time(500e6, 8, ndr) == pytest.approx(17.5e-3, rel=1e-9)
    # lesson: 7B model, 14 GB over 64 GPUs at 50 GB/s: ~0.55 s (27.6 GB / 50 GB/s)
    assert cm.allreduce_time(14e9, 64, ndr) == pytest.approx(0.55, rel=0.01)
    # lesson: XDR (100 GB/s/GPU) roughly halves it to ~275 ms
    xdr = load("ib-xdr").per_direction_bandwidth_bytes_per_s
    assert cm.allreduce_time(14e9, 64, xdr) == pytest.approx(0.275, rel=0.01)


# --- user folders ----------------------------------------------------------------------------
def _user_h100(memory: str) -> str:
    text = _shipped_text("gpus", "h100-sxm")
    return re.sub(r'memory_bytes = "[^"]*"', f'memory_bytes = "{memory}"', text)


def test_env_folder_overrides_shipped_and_listing_says_so(tmp_path, monkeypatch):
    path = _write(tmp_path, "gpus", "h100-sxm", _user_h100("94GB"))
    monkeypatch.setenv(presets.ENV_VAR, str(tmp_path))
    assert load("h100-sxm").memory_bytes == 94_000_000_000
    # references resolve against the merged set: the shipped cluster picks up the user GPU
    assert cluster("dgx-h100").gpu.memory_bytes == 94_000_000_000
    row = next(r for r in listing("gpu") if r.name == "h100-sxm")
    assert row.origin == "user" and row.path == str(path)
    assert row.overrides and row.overrides[0].endswith(os.path.join("gpus", "h100-sxm.toml"))
    other = next(r for r in listing("gpu") if r.name == "b200")
    assert other.origin == "shipped" and not other.overrides


def test_precedence_dirs_over_env_and_first_env_folder_wins(tmp_path, monkeypatch):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    _write(a, "gpus", "h100-sxm", _user_h100("90GB"))
    _write(b, "gpus", "h100-sxm", _user_h100("91GB"))
    _write(c, "gpus", "h100-sxm", _user_h100("92GB"))
    monkeypatch.setenv(presets.ENV_VAR, os.pathsep.join([str(a), str(b)]))
    assert load("h100-sxm").memory_bytes == 90_000_000_000  # first folder of the list wins
    assert load("h100-sxm", dirs=[c]).memory_bytes == 92_000_000_000  # explicit beats env
    assert load("h100-sxm", dirs=str(c)).memory_bytes == 92_000_000_000


def test_flat_user_folder_needs_preset_key(tmp_path):
    text = to_toml(load("ib-ndr")).replace('name = "ib-ndr"', 'name = "my-nic"')
    (tmp_path / "my-nic.toml").write_text(text, encoding="utf-8")
    assert load("my-nic", dirs=[tmp_path]).kind == "infiniband"
    (tmp_path / "my-nic.toml").write_text(text.replace('preset = "link"\n', ""), encoding="utf-8")
    with pytest.raises(PresetError, match="my-nic.toml: preset: missing"):
        names(dirs=[tmp_path])


def test_custom_cluster_with_inline_tables(tmp_path):
    text = to_toml(cluster("dgx-h100")).replace('name = "dgx-h100"', 'name = "my-box"', 1)
    _write(tmp_path, "clusters", "my-box", text)
    mine = cluster("my-box", nodes=4, dirs=[tmp_path])
    assert mine.ranks == 32 and mine.node == cluster("dgx-h100").node


# --- bad input: one message naming the file, the field and what is allowed --------------------
def _bad_link(tmp_path, edit) -> Path:
    text = edit(_shipped_text("links", "ib-ndr"))
    return _write(tmp_path, "links", "ib-ndr", text)


@pytest.mark.parametrize(
    ("edit", "pattern"),
    [
        (lambda t: t + "\nname = \n", r"malformed TOML.*allowed: TOML 1\.0"),
        (
            lambda t: t + '\ncolour = "red"\n',
            r"colour: unknown key; allowed keys: name, description",
        ),
        (
            lambda t: re.sub(r"(?m)^source = .*$", "", t),
            r"source: required but missing; allowed: a citation",
        ),
        (lambda t: t.replace('"400Gb/s"', '"0Gb/s"'), r"datasheet_bandwidth_bytes_per_s: .*> 0"),
        (lambda t: t.replace('"400Gb/s"', '"-400Gb/s"'), r"datasheet_bandwidth_bytes_per_s: .*> 0"),
        (
            lambda t: t.replace('"400Gb/s"', "50e9"),
            r"datasheet_bandwidth_bytes_per_s: a unit is required .*'400Gb/s'",
        ),
        (lambda t: t.replace('"2.7us"', "2.7"), r"latency_s: a unit is required"),
        (
            lambda t: t.replace('"per_direction"', '"one-way"'),
            r"datasheet_direction: Input should be 'per_direction' or 'bidirectional'",
        ),
        (
            lambda t: t.replace('name = "ib-ndr"', 'name = "ib-ndr2"'),
            r"name: 'ib-ndr2' differs from the file name; allowed: 'ib-ndr'",
        ),
    ],
)
def test_bad_file_message_names_file_field_and_allowed(tmp_path, edit, pattern):
    path = _bad_link(tmp_path, edit)
    with pytest.raises(PresetError) as info:
        load("ib-ndr", dirs=[tmp_path])
    message = str(info.value)
    assert str(path) in message
    assert re.search(pattern, message, re.S), message


def test_loading_never_half_succeeds(tmp_path):
    _write(
        tmp_path, "gpus", "good-gpu", _shipped_text("gpus", "b200").replace('"b200"', '"good-gpu"')
    )
    _bad_link(tmp_path, lambda t: t.replace('"400Gb/s"', '"0Gb/s"'))
    # a bad file anywhere fails every call: no listing, no load of the good file either
    for call in (
        lambda: names(dirs=[tmp_path]),
        lambda: load("good-gpu", dirs=[tmp_path]),
        lambda: listing(dirs=[tmp_path]),
    ):
        with pytest.raises(PresetError, match="ib-ndr.toml"):
            call()
    (tmp_path / "links" / "ib-ndr.toml").unlink()
    assert load("good-gpu", dirs=[tmp_path]).name == "good-gpu"


def test_unknown_name_suggests_closest():
    with pytest.raises(PresetError, match=r"unknown preset 'dgx-h10'; closest: dgx-h100"):
        load("dgx-h10")
    with pytest.raises(PresetError, match=r"unknown cluster preset 'h100-sxm'"):
        cluster("h100-sxm")  # a GPU, not a cluster
    with pytest.raises(ValueError, match="unknown cluster preset 'nvlink9'"):
        cm.cluster("nvlink9")


def test_dangling_reference_suggests_closest(tmp_path):
    text = _shipped_text("clusters", "dgx-h100").replace('gpu = "h100-sxm"', 'gpu = "h100-sxn"')
    path = _write(tmp_path, "clusters", "dgx-h100", text)
    with pytest.raises(
        PresetError,
        match=rf"{re.escape(str(path))}: node.gpu: no gpu preset named 'h100-sxn'; closest: h100-sxm",
    ):
        names(dirs=[tmp_path])


def test_override_with_another_kind_refused(tmp_path):
    text = _shipped_text("gpus", "b200").replace('"b200"', '"nvlink4"')
    _write(tmp_path, "gpus", "nvlink4", text)
    with pytest.raises(PresetError, match="is a gpu here but a link"):
        names(dirs=[tmp_path])


def test_missing_user_folder_refused(tmp_path, monkeypatch):
    monkeypatch.setenv(presets.ENV_VAR, str(tmp_path / "nope"))
    with pytest.raises(
        PresetError, match=r"nope: presets folder \(from COSTMODEL_PRESETS\) does not exist"
    ):
        names()


def test_bad_kind_and_nodes():
    with pytest.raises(PresetError, match="allowed: gpu, link, cluster"):
        names("nic")
    with pytest.raises(ValueError, match="nodes"):
        cluster("dgx-h100", nodes=0)


# --- listing and schema ------------------------------------------------------------------------
def test_listing_shows_every_preset_with_headline_and_source():
    rows = listing()
    assert [r.name for r in rows if r.kind == "gpu"] == names("gpu")
    assert {r.name for r in rows} == set(names())
    for r in rows:
        assert r.headline and r.source and r.origin == "shipped" and Path(r.path).is_file()
    h = next(r for r in rows if r.name == "dgx-h100")
    assert (
        "8x h100-sxm" in h.headline and "450 GB/s" in h.headline and "400 GB/s/node" in h.headline
    )
    assert json.dumps(h.as_dict())  # plain data for --json


def test_schema_is_what_users_write():
    link = json.loads(schema_json("link"))
    bw = link["properties"]["datasheet_bandwidth_bytes_per_s"]
    assert bw["type"] == "string" and "400Gb/s" in bw["examples"]
    assert link["additionalProperties"] is False and "source" in link["required"]
    cl = json.loads(schema_json("clusters"))
    gpu_options = cl["$defs"]["Node"]["properties"]["gpu"]["anyOf"]
    assert {"type": "string", "description": "name of a gpu preset"} in gpu_options
    nic_types = [o.get("type") for o in cl["$defs"]["Node"]["properties"]["nic"]["anyOf"]]
    assert "string" in nic_types and "null" in nic_types
    assert json.loads(schema_json("gpu"))["properties"]["memory_bytes"]["type"] == "string"


def test_bad_value_message_names_the_field_once(tmp_path):
    # a validator's own "field: ..." text used to be prefixed by the field again and followed
    # by a second "(got ...)"
    text = _shipped_text("links", "ib-ndr").replace('"400Gb/s"', '"-400Gb/s"', 1)
    _write(tmp_path, "links", "ib-ndr", text)
    with pytest.raises(PresetError) as err:
        load("ib-ndr", dirs=[tmp_path])
    msg = str(err.value)
    assert "ib-ndr.toml: datasheet_bandwidth_bytes_per_s: must be" in msg
    assert msg.count("datasheet_bandwidth_bytes_per_s") == 1, msg
    assert msg.count("-400Gb/s") == 1, msg


def test_data_runs_are_the_bundled_runs():
    from costmodel.reference import reference_id, reference_runs

    assert sorted(DATA_RUNS + NO_PRESET) == sorted(reference_id(n) for n in reference_runs())
