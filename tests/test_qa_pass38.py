"""QA pass 38: the calibration workflow end to end, as a cluster engineer uses it.

A bundled nccl-tests log stands in for a measurement: ``costmodel calibrate LOG --cluster BASE
-o cal.toml``, then the TOML as a cluster everywhere (``--cluster cal.toml``, ``cm.cluster``).
Each test here failed before the fix it pins (CHANGELOG, Unreleased).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from costmodel import presets
from costmodel.cli import app
from tests._paths import NCCL_TESTS as DATA

LOG_2X8_IB = DATA / "06a_nccl-tests-309_2x8xH100-XE9680-8xNDR400_allreduce.txt"
BASE = "dell-xe9680-h100"  # the cluster 06a ran on (its index): InfiniBand
ROOT = Path(__file__).resolve().parents[1]


def _stderr(*args: str) -> str:
    """The `costmodel` script's stderr (its warning lines), the command having succeeded."""
    done = subprocess.run(
        [sys.executable, "-m", "costmodel", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


def _ok(args: list[str]) -> str:
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    return res.output


def _refusal(args: list[str]) -> str:
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1, res.output
    return lines[0]


@pytest.fixture(scope="module")
def cal_toml(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cal") / "cal.toml"
    _ok(["calibrate", str(LOG_2X8_IB), "--cluster", BASE, "-o", str(out)])
    text = out.read_text()
    assert 'fabric = "infiniband"' in text and f'base = "{BASE}"' in text
    return out


@pytest.mark.parametrize(("base", "fabric"), [("aws-p5", "efa"), ("alps-gh200", "slingshot")])
def test_a_calibration_moved_to_a_base_on_another_network_is_refused(
    cal_toml: Path, tmp_path: Path, base: str, fabric: str
) -> None:
    """The inter-node terms (network latency per hop, NIC efficiency) were fitted on
    InfiniBand; a ``base`` edited to a cluster on EFA or Slingshot applied them to that
    network without a word (the prediction files them under the base's fabric)."""
    moved = tmp_path / "moved.toml"
    moved.write_text(cal_toml.read_text().replace(f'base = "{BASE}"', f'base = "{base}"'))
    before = moved.read_bytes()
    line = _refusal(
        ["collective", "all_reduce", "--size", "64KiB", "--cluster", str(moved), "--nodes", "2"]
    )
    assert line.startswith("costmodel: error: ") and "fabric.fabric: 'infiniband'" in line
    assert f"({fabric!r})" in line and "(costmodel calibrate ... --cluster NAME)" in line
    with pytest.raises(presets.PresetError, match=r"fabric\.fabric: 'infiniband'"):
        presets.load(str(moved))
    assert moved.read_bytes() == before  # the user's file is never modified


def test_a_calibration_on_a_base_of_the_same_network_still_loads(
    cal_toml: Path, tmp_path: Path
) -> None:
    """Another InfiniBand cluster as base is the user's call (the calibrate-time warning says
    the log ran elsewhere); only another network is refused."""
    moved = tmp_path / "moved.toml"
    moved.write_text(cal_toml.read_text().replace(f'base = "{BASE}"', 'base = "dgx-h100"'))
    c = presets.load(str(moved))
    assert c.fabric == "infiniband" and c.calibration is not None


ACROSS_NODES_ONLY = "was fitted across nodes only"


def test_a_multi_node_step_on_an_inter_node_calibration_says_no_one_node_warning(
    cal_toml: Path, tmp_path: Path
) -> None:
    """The fitted compute is calibrated on an internal one-node step; on a calibration fitted
    across nodes only that step's warning ("this one-node prediction uses the uncalibrated nccl
    model") reached `step --nodes 2` and `train --nodes 2`, which predict no one-node step. A
    one-node step asked for still says it, once."""
    own = tmp_path / "cal-step.toml"  # its own name: the one-node calibration is cached per cluster
    own.write_text(cal_toml.read_text().replace('name = "cal"', 'name = "cal-step"'))
    ask = ["--arch", "llama-3.1-8b", "--cluster", str(own), "--seq", "4096"]
    for command in (["step", *ask, "--strategy", "fsdp"], ["train", *ask, "--tokens", "1T"]):
        err = _stderr(*command, "--nodes", "2")
        assert ACROSS_NODES_ONLY not in err, err
    err = _stderr("step", *ask, "--nodes", "1")
    assert err.count(ACROSS_NODES_ONLY) == 1, err


def test_the_verdict_on_a_calibrated_cluster_says_a_calibration_answers(
    cal_toml: Path, presets_folder: Path
) -> None:
    """The band of a calibrated cluster is unknown because the calibration answers (the CLI's
    '± ?' note says so); the algorithms' verdict said "no bundled run measured this regime" on
    multi-node InfiniBand, which six bundled runs measured. CLI, API and Collectives page say
    the one reason (predict_all_algorithms' verdicts)."""
    from costmodel.predict import CALIBRATED_VERDICT_WHY, predict_all_algorithms
    from tests.test_app import open_page

    r = predict_all_algorithms("all_reduce", [65536.0], str(cal_toml), nodes=2)
    text = r.verdicts[0].text()
    assert text.endswith(f"the expected error here is unknown: {CALIBRATED_VERDICT_WHY}"), text
    assert "no bundled run" not in text
    out = _ok(
        ["collective", "all_reduce", "--size", "64KiB", "--cluster", str(cal_toml)]
        + ["--nodes", "2", "--algorithm", "all"]
    )
    assert f"fastest at 64 KiB: {text}" in out, out
    # the page, as a user picks the calibration from a presets folder
    at = open_page(
        "page_collectives.py",
        {"view": "A model on a cluster preset", "nccl_cluster": "cal", "nccl_nodes": "2"}
        | {"size_text": "64KiB"},
    )
    assert not at.exception and not at.error, [e.value for e in at.error]
    said = " ".join(c.value.replace("\\", "") for c in at.caption)
    assert CALIBRATED_VERDICT_WHY in said and "no bundled run measured" not in said, said


@pytest.fixture
def presets_folder(cal_toml: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A COSTMODEL_PRESETS folder holding the calibration (its name: 'cal'), as the pages list
    it among the clusters; the pages' caches emptied before and after."""
    import streamlit

    folder = tmp_path / "presets"
    (folder / "calibrations").mkdir(parents=True)
    (folder / "calibrations" / "cal.toml").write_text(cal_toml.read_text())
    monkeypatch.setenv("COSTMODEL_PRESETS", str(folder))
    streamlit.cache_data.clear()
    yield folder
    monkeypatch.delenv("COSTMODEL_PRESETS")
    streamlit.cache_data.clear()


PAGES = [
    ("page_collectives.py", {"view": "A model on a cluster preset", "size_text": "64KiB"}, "nccl"),
    ("page_cluster.py", {}, "cl"),
    ("page_ddp.py", {}, "ddp"),
]


@pytest.mark.parametrize(("page_file", "query", "prefix"), PAGES, ids=[p for p, _, _ in PAGES])
def test_the_pages_say_the_calibration_warning_the_cli_says(
    presets_folder: Path, page_file: str, query: dict, prefix: str
) -> None:
    """One node of a calibration fitted across nodes only is answered by the uncalibrated
    model; `collective`/`step` say so on stderr, the Collectives, Cluster and Training step
    pages said nothing (the warning went to the server's log). Two nodes: no such box."""
    from tests.test_app import open_page

    boxes = {}
    for nodes in ("1", "2"):
        at = open_page(page_file, {**query, f"{prefix}_cluster": "cal", f"{prefix}_nodes": nodes})
        assert not at.exception and not at.error, [e.value for e in at.error]
        boxes[nodes] = [w.value for w in at.warning if ACROSS_NODES_ONLY in w.value]
    assert len(boxes["1"]) == 1 and "uses the uncalibrated nccl model" in boxes["1"][0]
    assert boxes["2"] == []


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("nodes = [\n    2,", "nodes = [\n    0,", "fabric.nodes"),
        ("gpus_per_node = [\n    8,", "gpus_per_node = [\n    -8,", "fabric.gpus_per_node"),
        ("ranks = [\n    16,", "ranks = [\n    0,", "fit.ranks"),
    ],
)
def test_a_hand_edited_measured_count_below_one_is_refused_naming_the_key(
    cal_toml: Path, tmp_path: Path, old: str, new: str, field: str
) -> None:
    """The node, GPU and rank counts a calibration measured decide where its unshrunk fit
    applies (FabricCalibration.at); 0 or -8 read silently (and the measured shape then never
    applied). Now one line naming the key, the user's file untouched."""
    text = cal_toml.read_text()
    assert old in text
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace(old, new, 1))
    before = bad.read_bytes()
    line = _refusal(
        ["collective", "all_reduce", "--size", "64KiB", "--cluster", str(bad), "--nodes", "2"]
    )
    assert line.startswith(f"costmodel: error: {bad}: {field}: "), line
    assert bad.read_bytes() == before
