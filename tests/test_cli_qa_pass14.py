"""A QA pass over one road per question: a preset's rank count read alike by `collective
--cluster --ranks` and the sweep; options a measured step time makes moot; a calibration's
backend; the scenario's calibration note; `validate compare` beside its own outputs."""

from __future__ import annotations

import json

import pytest

import costmodel as cm
from tests._cli import one_line_error, run


def _json(*args: str):
    r = run(*args, "--json")
    assert r.exit_code == 0, (r.stdout, r.stderr)
    return json.loads(r.stdout)


# --- collective --cluster --ranks: the sweep's reading of a preset's rank count ---------------


@pytest.mark.parametrize(("ranks", "nodes", "gpus"), [("16", 2, 8), ("4", 1, 4), ("8", 1, 8)])
def test_collective_cluster_ranks_is_the_sweeps_row(ranks, nodes, gpus):
    row = _json(
        "collective", "all_reduce", "--cluster", "dgx-h100", "--ranks", ranks, "--size", "1GiB"
    )["results"][0]
    swept = cm.sweep(preset="dgx-h100", ranks=int(ranks), size=2**30).iloc[0]
    p = cm.predict_collective("all_reduce", 2**30, "dgx-h100", nodes=nodes, gpus_per_node=gpus)
    assert (row["nodes"], row["gpus_per_node"], row["ranks"]) == (nodes, gpus, int(ranks))
    assert row["time_s"] == swept["time_s"] == p.time_s


def test_collective_cluster_ranks_not_whole_nodes_refused_as_the_sweep():
    line = one_line_error(
        run("collective", "all_reduce", "--cluster", "dgx-h100", "--ranks", "12", "-s", "1GB"),
        "--ranks: 12 GPUs cannot be built from 'dgx-h100' nodes of 8 GPUs",
        "--ranks <= 8 or a multiple of 8",
        "--nodes",
    )
    assert "`" not in line
    with pytest.raises(ValueError, match="12 GPUs cannot be built from 'dgx-h100'"):
        cm.sweep(preset="dgx-h100", ranks=12, size=2**30)


@pytest.mark.parametrize(
    ("extra", "field"),
    [(("--nodes", "3"), "--nodes: 3 disagrees with --ranks 16"),
     (("--gpus-per-node", "4"), "--gpus-per-node: 4 disagrees with --ranks 16")],
)  # fmt: skip
def test_collective_cluster_ranks_with_disagreeing_nodes_refused(extra, field):
    one_line_error(
        run("collective", "all_reduce", "--cluster", "dgx-h100", "--ranks", "16", "-s", "1GB",
            *extra),
        field,
        "2 nodes of 8 GPUs",
    )  # fmt: skip


def test_collective_cluster_ranks_with_agreeing_nodes_answered():
    a = _json("collective", "all_reduce", "--cluster", "dgx-h100", "--ranks", "16", "--nodes",
              "2", "-s", "1GB")["results"][0]  # fmt: skip
    b = _json("collective", "all_reduce", "--cluster", "dgx-h100", "--nodes", "2", "-s", "1GB")
    assert a["time_s"] == b["results"][0]["time_s"]


def test_collective_cluster_ranks_algorithm_all_on_those_nodes():
    d = _json("collective", "all_reduce", "--cluster", "dgx-h100", "--ranks", "16",
              "--algorithm", "all", "-s", "1GB")  # fmt: skip
    assert (d["nodes"], d["ranks"]) == (2, 16)


def test_collective_cluster_one_rank_count():
    one_line_error(
        run("collective", "all_reduce", "--cluster", "dgx-h100", "--ranks", "8,16", "-s", "1GB"),
        "--ranks: with --cluster one rank count",
    )


# --- train --step-time: the predicted step's own options are refused -------------------------

TRAIN = ("train", "--arch", "llama-2-7b", "--tokens", "2T", "--nodes", "8", "--zero", "1")


@pytest.mark.parametrize(
    "extra",
    [("--model", "nccl"), ("--model=lesson",), ("--contention", "0.5"),
     ("--power-limit-w", "400"), ("--sync",), ("--no-sync",)],
)  # fmt: skip
def test_train_step_time_refuses_options_of_the_predicted_step(extra):
    name = extra[0].partition("=")[0]
    one_line_error(
        run(*TRAIN, "--step-time", "3s", *extra), f"{name}: not with --step-time", "give one"
    )


@pytest.mark.parametrize("extra", [("--model", "lesson"), ("--contention", "0.5"), ("--sync",)])
def test_train_without_step_time_takes_them(extra):
    assert run(*TRAIN, *extra, "--json").exit_code == 0


def test_train_step_time_keeps_memory_options():
    a = _json(*TRAIN, "--step-time", "3s")
    b = _json(*TRAIN, "--step-time", "3s", "--bucket", "100MiB")
    assert a["wall_days"] == b["wall_days"]
    assert a["memory_total_bytes"] != b["memory_total_bytes"]  # the fit follows it


# --- a calibration's backend: the harness's values, one check for every loader ----------------

H100_LOG = "costmodel/data/reference/nccl-tests/13a_waynehacking8_1x4xH100-slice_auto_allreduce.txt"


@pytest.fixture(scope="module")
def h100_toml(tmp_path_factory):
    out = tmp_path_factory.mktemp("cal") / "h100.toml"
    r = run("calibrate", H100_LOG, "--cluster", "dgx-h100", "-o", str(out))
    assert r.exit_code == 0, r.stderr
    return out


def _with_backend(src, tmp_path, value):
    text = src.read_text(encoding="utf-8")
    assert "\nbackend = " not in text
    out = tmp_path / "edited.toml"
    out.write_text(text.replace("\nplacement = ", f"\nbackend = {value}\nplacement = ", 1))
    return out


@pytest.mark.parametrize("value", ['"carrier-pigeon"', '"NCCL"', "3"])
def test_calibration_backend_refused_alike_by_every_loader(h100_toml, tmp_path, value):
    from costmodel.validation.calibrate import load_calibration

    bad = _with_backend(h100_toml, tmp_path, value)
    cluster_line = one_line_error(
        run("collective", "all_reduce", "--cluster", str(bad), "--size", "4KiB"),
        f"{bad}: backend: ",
        "'nccl' or 'gloo'",
    )
    compare_line = one_line_error(
        run("validate", "compare", H100_LOG, "--calibration", str(bad)), f"{bad}: backend: "
    )
    assert cluster_line.split(f"{bad}: ", 1)[1] == compare_line.split(f"{bad}: ", 1)[1]
    with pytest.raises(ValueError, match="backend: .*'nccl' or 'gloo'"):
        load_calibration(bad)


@pytest.mark.parametrize("value", ["nccl", "gloo"])
def test_calibration_backend_known_values_load(h100_toml, tmp_path, value):
    from costmodel.validation.calibrate import load_calibration

    good = _with_backend(h100_toml, tmp_path, f'"{value}"')
    assert load_calibration(good).backend == value
    assert run("collective", "all_reduce", "--cluster", str(good), "--size", "4KiB").exit_code == 0


def test_calibrate_keeps_only_a_backend_the_loaders_take(tmp_path):
    """A results file whose backend the harness does not write (edited, or another tool's)
    calibrated into a file every loader then refused; the backend is left out instead."""
    from pathlib import Path

    from costmodel.validation.calibrate import calibrate, load_calibration, write_calibration
    from costmodel.validation.logread import read_log

    log = Path(H100_LOG)
    rows = read_log(log.read_text(encoding="utf-8"), log.name).rows
    for backend, kept in (("gloo", "gloo"), ("mpi", None)):
        c = calibrate(rows.assign(backend=backend), base="dgx-h100", name="h1cal")
        assert c.backend == kept
        out = tmp_path / f"{backend}.toml"
        write_calibration(c, out)
        assert load_calibration(out).backend == kept


# --- scenario on a calibration: a warning about another row says which row --------------------

POLARIS_LOG = "costmodel/data/reference/nccl-tests/25a_"


@pytest.fixture(scope="module")
def polaris_toml(tmp_path_factory):
    """Calibrated on 2 x 4 A100 over Slingshot: across nodes only."""
    from pathlib import Path

    (log,) = Path(POLARIS_LOG).parent.glob(Path(POLARIS_LOG).name + "*")
    out = tmp_path_factory.mktemp("cal") / "polaris.toml"
    r = run("calibrate", str(log), "--cluster", "alcf-polaris", "-o", str(out))
    assert r.exit_code == 0, r.stderr
    return out


def _calibration_warnings(capsys, *args: str) -> list[str]:
    """The `costmodel: warning:` lines naming a calibration, as the entry point prints them."""
    from costmodel import cli

    assert cli.main(["scenario", "--params", "7B", *args]) == 0
    return [x for x in capsys.readouterr().err.splitlines() if "calibration '" in x]


def test_scenario_on_two_nodes_names_the_one_node_scaling_row(polaris_toml, capsys):
    (line,) = _calibration_warnings(capsys, "--cluster", str(polaris_toml), "--nodes", "2")
    assert line.startswith("costmodel: warning: the scaling table's row at 1 node: ")
    assert "calibration 'polaris' was fitted across nodes only" in line


def test_scenario_on_one_node_of_a_multi_node_calibration_is_its_own(polaris_toml, capsys):
    (line,) = _calibration_warnings(capsys, "--cluster", str(polaris_toml), "--nodes", "1")
    assert line.startswith("costmodel: warning: calibration 'polaris' was fitted across nodes")


def test_scenario_names_each_multi_node_row_once(h100_toml, capsys):
    lines = _calibration_warnings(capsys, "--cluster", str(h100_toml), "--nodes", "2",
                                  "--strategy", "fsdp")  # fmt: skip
    # the scenario's own 2-node step, then the table's other multi-node rows, each named once
    assert len(lines) == 2, lines
    assert "the scaling table" not in lines[0]
    assert "the scaling table's rows at 4, 8, 16 nodes: calibration 'h100'" in lines[1]


# --- validate compare FOLDER beside its own earlier outputs ----------------------------------


def test_compare_leaves_out_its_own_earlier_outputs(tmp_path):
    """An earlier `validate compare logs/ -o logs/cmp.csv --report logs/r.html` (and a Parquet
    table, and --json saved there) left files the next run read as logs: each "not compared",
    and the run FAILed (exit 1) with every log compared. They are named and left out now."""
    import shutil

    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(H100_LOG, logs)
    first = run("validate", "compare", str(logs), "--cluster", "dgx-h100", "-o",
                str(logs / "cmp.csv"), "--report", str(logs / "r.html"), "--json")  # fmt: skip
    assert first.exit_code == 0, first.stderr
    (logs / "out.json").write_text(first.stdout, encoding="utf-8")
    table = run("validate", "compare", str(logs), "--cluster", "dgx-h100", "-o",
                str(logs / "c.parquet"))  # fmt: skip
    assert table.exit_code == 0, table.stderr
    again = run("validate", "compare", str(logs), "--cluster", "dgx-h100", "--json")
    assert again.exit_code == 0, again.stderr
    doc = json.loads(again.stdout)
    assert doc["skipped_files"] == [] and doc["passed"] is True
    assert doc["rows"] == json.loads(first.stdout)["rows"]
    assert [x.split(":")[0] for x in doc["skipped_outputs"]] == [
        "c.parquet", "cmp.csv", "out.json", "r.html"
    ]  # fmt: skip
    assert "--output table (Parquet)" in doc["skipped_outputs"][0]
    text = run("validate", "compare", str(logs), "--cluster", "dgx-h100")
    assert text.exit_code == 0, text.stderr
    assert "left out: r.html: validate compare's own --report (HTML), not a log" in text.stderr
    # calibrate reads a folder alike: the outputs left out, not "not fitted"
    fitted = run("calibrate", str(logs), "--cluster", "dgx-h100", "-o", str(tmp_path / "c.toml"),
                 "--json")  # fmt: skip
    assert fitted.exit_code == 0, fitted.stderr
    assert json.loads(fitted.stdout)["skipped_files"] == []


def test_compare_output_redirected_into_the_folder_is_its_own(tmp_path, monkeypatch):
    """`validate compare logs/ --json > logs/out.json`: the shell creates out.json, empty,
    before the command lists the folder; it was read as an empty log and failed the run."""
    import sys

    from costmodel.cli.measure import _compare_output

    out = tmp_path / "out.json"
    with out.open("w", encoding="utf-8") as stream:
        monkeypatch.setattr(sys, "stdout", stream)
        said = _compare_output(out)
    assert said == "this command's own standard output (redirected there), not a log"


def test_a_log_named_like_an_output_is_still_a_log(tmp_path):
    """Told by content, not by name: an nccl-tests log saved as .csv or .json is compared."""
    import shutil

    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(H100_LOG, logs / "run.csv")
    doc = json.loads(run("validate", "compare", str(logs), "--cluster", "dgx-h100",
                         "--json").stdout)  # fmt: skip
    assert doc["skipped_outputs"] == [] and doc["rows"] > 0
