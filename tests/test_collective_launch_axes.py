"""How a collective run is launched (nccl-tests ``-g``, NCCL_NVLS_ENABLE, NCCL_COLLNET_ENABLE) is
one road: the collective sweep's axes ``gpus_per_process``, ``nvls`` and ``collnet_enabled``,
which ``costmodel collective --cluster`` passes as it passes ``nodes``; every row is
``predict_collective`` with those keywords, on the CLI, the API's sweep and a grid file alike."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import costmodel as cm
from costmodel.predict import predict_all_algorithms, predict_collective
from costmodel.sweep import read_table, sweep
from tests._cli import one_line_error, run

#: small sizes, where one process driving the node's GPUs raises the launch floor, to large
#: ones, where NCCL's choice (NVLS, CollNet) decides
SIZES = [8, 512, 4096, 65536, 1 << 20, 1 << 26, 1 << 30, 1 << 32]
SIZE_TEXT = ",".join(f"{s}B" for s in SIZES)

#: the columns of a preset collective sweep without a launch (unchanged by the launch axes)
PLAIN_COLUMNS = [
    "preset", "model", "op", "algorithm", "protocol_requested", "nodes", "gpus_per_node",
    "ranks", "size_bytes", "time_s", "algbw_GBps", "busbw_GBps", "algorithm_used",
    "protocol_used", "error_band_pct", "time_lo_s", "time_hi_s", "regime", "band_note",
    "band_extrapolated", "memory_note", "error",
]  # fmt: skip
LAUNCH_COLUMNS = ["gpus_per_process", "nvls", "collnet"]

#: (CLI options, predict_collective's keywords, the sweep's axes, a preset where the launch
#: changes the answer): each launch option alone, and all three
LAUNCHES = [
    (["--gpus-per-process", "8"], {"gpus_per_process": 8}, {"gpus_per_process": 8}, "dgx-h100"),
    (["--no-nvls"], {"nvls": False}, {"nvls": False}, "dgx-h100"),
    (["--collnet"], {"collnet_enabled": True}, {"collnet": True}, "coreweave-hgx-h100"),
    (
        ["--gpus-per-process", "8", "--no-nvls", "--collnet"],
        {"gpus_per_process": 8, "nvls": False, "collnet_enabled": True},
        {"gpus_per_process": 8, "nvls": False, "collnet_enabled": True},
        "coreweave-hgx-h100",
    ),
]


def _cli_rows(*args: str) -> pd.DataFrame:
    r = run("collective", *args, "--json")
    assert r.exit_code == 0, r.stderr
    return pd.DataFrame(json.loads(r.stdout)["results"])


def _same(rows: pd.DataFrame, p) -> None:
    """``rows`` (a sweep's or the CLI's) are prediction ``p``'s, row by row."""
    np.testing.assert_array_equal(rows["time_s"].to_numpy(dtype=float), p.time_s)
    assert rows["algorithm_used"].astype(str).tolist() == p.algorithm.tolist()
    assert rows["protocol_used"].astype(str).tolist() == p.protocol.tolist()
    np.testing.assert_allclose(
        rows["busbw_GBps"].to_numpy(dtype=float) * 1e9, p.busbw_bytes_per_s, rtol=1e-12
    )


@pytest.mark.parametrize(("options", "keywords", "axes", "preset"), LAUNCHES)
def test_the_cli_launch_is_predict_collective_and_the_sweep(options, keywords, axes, preset):
    for name in ("dgx-h100", preset):
        want = predict_collective("all_reduce", np.array(SIZES, float), name, 2, **keywords)
        got = _cli_rows(
            "all_reduce", "--cluster", name, "--nodes", "2", "--size", SIZE_TEXT, *options
        )
        _same(got, want)
        api = cm.sweep(preset=name, nodes=2, size=SIZES, **axes)
        _same(api, want)
        # one road: the CLI's JSON rows are the sweep's rows, column for column
        assert list(got.columns) == list(api.columns)
        assert got.columns.tolist() == PLAIN_COLUMNS[:8] + LAUNCH_COLUMNS + PLAIN_COLUMNS[8:]
        assert (got["gpus_per_process"] == keywords.get("gpus_per_process", 1)).all()
        assert got["nvls"].tolist() == [keywords.get("nvls")] * len(SIZES)
        assert (got["collnet"] == keywords.get("collnet_enabled", False)).all()
    # the launch is priced: the defaults give another answer on the preset where it matters
    plain = predict_collective("all_reduce", np.array(SIZES, float), preset, 2)
    assert not np.array_equal(plain.time_s, want.time_s)


@pytest.mark.parametrize("model", ["nccl", "nccl-table", "textbook", "lesson"])
@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter", "broadcast"])
def test_every_model_and_op_of_the_sweep_takes_the_launch_as_predict_collective(model, op):
    keywords = {"gpus_per_process": 4, "nvls": False, "collnet_enabled": True}
    df = sweep(
        preset="coreweave-hgx-h100", model=model, op=op, nodes=[1, 2, 4],
        gpus_per_node=[4, 8], size=SIZES, **keywords,
    )  # fmt: skip
    for (nodes, gpn), rows in df.groupby(["nodes", "gpus_per_node"], sort=False):
        p = predict_collective(
            op, np.array(SIZES, float), "coreweave-hgx-h100", int(nodes), int(gpn),
            model=model, **keywords,
        )  # fmt: skip
        _same(rows, p)


@pytest.mark.parametrize("model", ["nccl", "calibrated"])
def test_a_calibrated_preset_takes_the_launch_on_predict_collectives_road(model, tmp_path):
    from costmodel.validation.calibrate import calibrate, write_calibration
    from costmodel.validation.nccl_tests import read_nccl_tests
    from tests._paths import NCCL_TESTS

    log = read_nccl_tests(NCCL_TESTS / "09a_autodl-1x2x2080Ti-PCIe3-noP2P_allreduce.txt")
    cal = calibrate(
        log, name="rtx-cal", min_bytes=2**16, source="09a", base="pcie3-2x-rtx2080ti-nop2p"
    )
    path = str(write_calibration(cal, tmp_path / "rtx-cal.toml"))
    want = predict_collective(
        "all_reduce", np.array(SIZES, float), path, model=model, gpus_per_process=2
    )
    _same(sweep(preset=path, model=model, size=SIZES, gpus_per_process=2), want)
    plain = predict_collective("all_reduce", np.array(SIZES, float), path, model=model)
    assert not np.array_equal(plain.time_s, want.time_s)  # two GPUs on one process: priced


def test_a_grid_file_and_a_mapping_take_the_launch_axes(tmp_path):
    path = tmp_path / "launch.toml"
    path.write_text(
        'kind = "collective"\n[grid]\npreset = "coreweave-hgx-h100"\nnodes = [1, 2]\n'
        f'size = "{SIZE_TEXT}"\ngpus_per_process = [1, 8]\nnvls = false\ncollnet = true\n',
        encoding="utf-8",
    )
    df = sweep(str(path))
    blocks = df.groupby(["gpus_per_process", "nodes"], sort=False)
    assert len(blocks) == 4 and len(df) == 4 * len(SIZES)
    for (gpp, nodes), rows in blocks:
        p = predict_collective(
            "all_reduce", np.array(SIZES, float), "coreweave-hgx-h100", int(nodes),
            gpus_per_process=int(gpp), nvls=False, collnet_enabled=True,
        )  # fmt: skip
        _same(rows, p)
        assert rows["nvls"].tolist() == [False] * len(SIZES) and rows["collnet"].all()
    # the same grid as a mapping (a JSON document read in): the same rows
    spec = json.loads(
        json.dumps(
            {"preset": "coreweave-hgx-h100", "nodes": [1, 2], "size": SIZE_TEXT,
             "gpus_per_process": [1, 8], "nvls": False, "collnet_enabled": True}
        )
    )  # fmt: skip
    pd.testing.assert_frame_equal(sweep(spec), df)
    # and the CLI's sweep of the file writes them
    out = tmp_path / "launch.csv"
    r = run("sweep", str(path), "-o", str(out))
    assert r.exit_code == 0, r.stderr
    pd.testing.assert_frame_equal(read_table(out), df, check_categorical=False)


def test_an_unset_nvls_is_the_presets_and_reads_back_from_csv(tmp_path):
    df = sweep(preset="dgx-h100", nodes=2, size=SIZES, gpus_per_process=8)
    assert df["nvls"].isna().all() and not df["collnet"].any()
    _same(df, predict_collective("all_reduce", np.array(SIZES, float), "dgx-h100", 2,
                                 gpus_per_process=8))  # fmt: skip
    for name in ("rows.csv", "rows.parquet"):
        out = tmp_path / name
        r = run("sweep", "--set", "preset=dgx-h100", "--set", "nodes=2", "--set",
                f"size={SIZE_TEXT}", "--set", "gpus_per_process=8", "-o", str(out))  # fmt: skip
        assert r.exit_code == 0, r.stderr
        back = read_table(out)
        assert back["nvls"].isna().all(), name  # null, not NaN floats or the text "None"
        pd.testing.assert_frame_equal(back, df, check_categorical=False)


def test_a_row_whose_node_is_smaller_than_a_process_is_refused_the_others_answered():
    df = sweep(preset="dgx-h100", gpus_per_node=[2, 4, 8], size=SIZES, gpus_per_process=4)
    bad = df[df["gpus_per_node"] == 2]
    assert bad["time_s"].isna().all() and len(bad) == len(SIZES)
    (reason,) = set(bad["error"].astype(str))
    assert reason.startswith("gpus_per_process: 4 GPUs per process") and "allowed: 1, 2 " in reason
    for gpn in (4, 8):
        rows = df[df["gpus_per_node"] == gpn]
        assert (rows["error"].astype(str) == "").all()
        _same(rows, predict_collective("all_reduce", np.array(SIZES, float), "dgx-h100", 1,
                                       gpn, gpus_per_process=4))  # fmt: skip


@pytest.mark.parametrize(
    ("axes", "words"),
    [
        ({"gpus_per_process": 0}, ("gpus_per_process:", "1..1,024", "got 0")),
        ({"gpus_per_process": 2.5}, ("gpus_per_process:", "whole number")),
        ({"gpus_per_process": 9}, ("gpus_per_process: 9", "allowed: 1, 2, 4, 8 ")),
        ({"nvls": "maybe"}, ("nvls:", "true or false")),
        ({"collnet": 1}, ("collnet_enabled:", "true or false")),
    ],
)
def test_bad_launch_values_are_refused_in_one_line_naming_the_field(axes, words):
    with pytest.raises(ValueError) as info:
        sweep(preset="dgx-h100", size="1MB", **axes)
    text = str(info.value)
    assert "\n" not in text
    for w in words:
        assert w in text, text


def test_the_launch_needs_a_preset():
    for name in ("gpus_per_process", "nvls", "collnet"):
        value = 2 if name == "gpus_per_process" else True
        with pytest.raises(
            ValueError, match=rf"^{name.replace('collnet', 'collnet_enabled')}:.*`preset`"
        ):
            sweep(ranks=8, bandwidth="50GB/s", size="1MB", **{name: value})


def test_the_cli_refuses_bad_launches_in_its_words():
    base = ("collective", "all_reduce", "--cluster", "dgx-h100", "--size", "1MB")
    one_line_error(run(*base, "--gpus-per-process", "9"), "--gpus-per-process: 9", "1, 2, 4, 8")
    line = one_line_error(
        run(*base, "--gpus-per-node", "4", "--gpus-per-process", "8"),
        "--gpus-per-process",
        "1, 2, 4",
    )
    assert "--gpus-per-node" in line and "`" not in line  # the library's field in the CLI's words
    one_line_error(
        run(*base, "--gpus-per-process", "9", "--algorithm", "all"),
        "--gpus-per-process",
        "1, 2, 4, 8",
    )
    one_line_error(
        run("sweep", "--set", "preset=dgx-h100", "--set", "size=1MB", "--set", "nvls=maybe"),
        "nvls", "true or false",
    )  # fmt: skip


def test_a_sweep_without_the_launch_is_unchanged():
    df = sweep(preset="dgx-h100", nodes=[1, 2], size=SIZES, model=["nccl", "textbook"])
    assert df.columns.tolist() == PLAIN_COLUMNS
    for (model, nodes), rows in df.groupby(["model", "nodes"], sort=False):
        p = predict_collective("all_reduce", np.array(SIZES, float), "dgx-h100", int(nodes),
                               model=str(model))  # fmt: skip
        _same(rows, p)
    plain = _cli_rows("all_reduce", "--cluster", "dgx-h100", "--nodes", "2", "--size", SIZE_TEXT)
    assert plain.columns.tolist() == PLAIN_COLUMNS
    # a launch at the defaults is the same prediction, now with its columns
    launched = sweep(preset="dgx-h100", nodes=[1, 2], size=SIZES, model=["nccl", "textbook"],
                     gpus_per_process=1, collnet=False)  # fmt: skip
    pd.testing.assert_frame_equal(launched.drop(columns=LAUNCH_COLUMNS), df)


def test_the_cli_table_says_the_launch_and_algorithm_all_takes_it():
    r = run("collective", "all_reduce", "--cluster", "dgx-h100", "--nodes", "2", "--size", "1GB",
            "--gpus-per-process", "8", "--no-nvls")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    head = r.stdout.splitlines()[0]
    assert head == (
        "launched with 8 GPUs per process (nccl-tests -g), NVLS off (NCCL_NVLS_ENABLE=0)"
    )
    p = predict_collective("all_reduce", 1e9, "dgx-h100", 2, gpus_per_process=8, nvls=False)
    assert f" {p.algorithm} " in r.stdout.splitlines()[1 + 1]
    # --algorithm all with the launch: predict_all_algorithms with the same keywords
    r = run("collective", "all_reduce", "--cluster", "dgx-h100", "--nodes", "2", "--size", "1GB",
            "--gpus-per-process", "8", "--no-nvls", "--algorithm", "all", "--json")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    got = {(x["algorithm"], x["time_s"]) for x in json.loads(r.stdout)["results"]}
    want = predict_all_algorithms("all_reduce", [1e9], "dgx-h100", 2, gpus_per_process=8,
                                  nvls=False)  # fmt: skip
    assert got == set(zip(want.frame["algorithm"], want.frame["time_s"], strict=True))
    assert not any(a.startswith("nvls") for a, _ in got)
    # every op and every algorithm at once takes it too, through the sweep
    rows = _cli_rows("all", "--cluster", "dgx-h100", "--nodes", "2", "--size", "1GB",
                     "--no-nvls", "--algorithm", "all")  # fmt: skip
    answered = rows[rows["error"] == ""]
    assert not answered["algorithm_used"].str.startswith("nvls").any()
    assert (rows.loc[rows["algorithm"].str.startswith("nvls"), "error"] != "").all()
    assert rows["nvls"].eq(False).all()


@pytest.mark.parametrize("g", [3, 5, 6, 7])
def test_processes_that_do_not_split_a_node_evenly_are_refused_on_every_road(g):
    """``-g 3`` on 8-GPU nodes: the ranks priced are every GPU of every node, which three GPUs
    per process cannot launch; refused in one rule through the API, the CLI and the sweep."""
    words = ("gpus_per_process", f"{g} GPUs per process", "allowed: 1, 2, 4, 8 ")
    with pytest.raises(ValueError) as api:
        predict_collective("all_reduce", 2**20, cluster="dgx-h100", nodes=2, gpus_per_process=g)
    assert all(w in str(api.value) for w in words), api.value
    with pytest.raises(ValueError) as swept:  # every row refused: the sweep's refusal
        sweep(preset="dgx-h100", nodes=2, size="1MiB", gpus_per_process=g)
    assert str(swept.value) == str(api.value)
    line = one_line_error(
        run(
            "collective",
            "all_reduce",
            "--cluster",
            "dgx-h100",
            "--nodes",
            "2",
            "--size",
            "1MiB",
            "--gpus-per-process",
            str(g),
        ),
        "--gpus-per-process",
        "1, 2, 4, 8",
    )
    assert str(api.value).split("allowed: ")[1] == line.split("allowed: ")[1].rstrip()
    # a divisor is answered on every road
    assert (
        predict_collective(
            "all_reduce", 2**20, cluster="dgx-h100", nodes=2, gpus_per_process=4
        ).time_s
        > 0
    )
