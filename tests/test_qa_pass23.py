"""QA pass 23: a new user's CLI and API session planning multi-GPU training (collectives on
a cluster, fit and step per strategy, days and dollars, batch in tokens, sweeps, own
config.json), odd inputs included."""

from __future__ import annotations

import pytest

import costmodel as cm
from tests._cli import one_line_error, run


# --- a preset path that is a folder is named as a folder, not as missing -----------------------
def test_a_cluster_path_that_is_a_folder_says_so(tmp_path):
    folder = tmp_path / "mycluster.toml"
    folder.mkdir()
    line = one_line_error(
        run("collective", "all_reduce", "--size", "14GB", "--cluster", str(folder)),
        "--cluster: ",
        "is a folder, not a preset file",
    )
    assert "does not exist" not in line
    with pytest.raises(cm.presets.PresetError, match="is a folder, not a preset file"):
        cm.presets.load(folder, "cluster")


def test_a_missing_cluster_path_still_says_it_does_not_exist(tmp_path):
    one_line_error(
        run("collective", "all_reduce", "--size", "1GB", "--cluster", str(tmp_path / "no.toml")),
        "--cluster: ",
        "preset file does not exist",
    )


# --- an output whose folder is a file says so, not that the folder does not exist --------------
def test_an_output_under_a_file_names_the_file(tmp_path):
    a_file = tmp_path / "results.csv"
    a_file.write_text("x\n")
    line = one_line_error(
        run("sweep", "--set", "preset=dgx-h100", "--set", "size=1MB", "-o", str(a_file / "o.csv")),
        "--output: ",
        "is a file, not a folder",
    )
    assert "does not exist" not in line
    with pytest.raises(ValueError, match="is a file, not a folder"):
        cm.sweep.sweep_to_file(a_file / "o.parquet", preset="dgx-h100", size="1MB")


def test_the_dask_dataset_folder_under_a_file_names_the_file(tmp_path):
    from costmodel import distributed

    a_file = tmp_path / "notes.txt"
    a_file.write_text("x\n")
    with pytest.raises(ValueError, match="is a file, not a folder"):
        distributed._prepare_folder(a_file / "ds", {"format": 1})


def test_an_output_in_a_missing_folder_still_says_missing(tmp_path):
    one_line_error(
        run(
            "sweep",
            "--set",
            "preset=dgx-h100",
            "--set",
            "size=1MB",
            "-o",
            str(tmp_path / "no/o.csv"),
        ),
        "--output: folder ",
        "does not exist",
    )


def test_the_local_road_named_by_cm_sweep_output_is_reachable(tmp_path):
    """cm.sweep(..., output=...) points at the local writer; the name it gives must be one a
    user of ``import costmodel as cm`` can call (cm.sweep_to_file does not exist)."""
    with pytest.raises(ValueError) as info:
        cm.sweep(preset="dgx-h100", size="1MB", output=str(tmp_path / "o.csv"))
    named = str(info.value).split("to write a file here: ")[1].split("(")[0]
    assert named.startswith("cm."), named
    fn = cm
    for part in named.split(".")[1:]:
        fn = getattr(fn, part)
    summary = fn(tmp_path / "o.csv", preset="dgx-h100", size="1MB")
    assert summary.rows == 1


# --- A vs B on two GPUs with one measured compute time: said, not passed off as a GPU race -----
def test_compare_across_gpus_with_one_measured_compute_says_so():
    a = cm.Scenario(params="7B", cluster="dgx-h100", nodes=8, compute_time_s=0.4, zero_stage=3)
    ra = a.evaluate()
    # with_changes refuses it (test_qa_pass67); a B built on its own still gets the caveat
    with pytest.raises(ValueError, match="B runs on b200"):
        a.with_changes("cluster=dgx-b200")
    rb = cm.Scenario(**{**a.model_dump(), "cluster": "dgx-b200"}).evaluate()
    text = cm.scenario.compare_summary(ra, rb)
    assert "measured compute per micro-batch (400 ms)" in text, text
    assert "A runs on h100-sxm and B on b200" in text, text
    # B given its own measured compute, or the same GPU: nothing to say
    rb2 = a.with_changes("cluster=dgx-b200,compute_time=0.2").evaluate()
    assert "measured compute" not in cm.scenario.compare_summary(ra, rb2)
    rn = a.with_changes("nodes=16").evaluate()
    assert "measured compute" not in cm.scenario.compare_summary(ra, rn)


def test_scenario_vs_refuses_another_gpu_at_as_measured_compute():
    """Once a caveat in the answer (B priced at A's GPU's speed and B's price): now refused
    in one line asking for B's own compute, or none (test_cli_qa_pass27)."""
    r = run(
        "scenario", "--params", "7B", "--cluster", "dgx-h100", "--nodes", "8",
        "--compute-time", "400ms", "--zero", "3", "--vs", "cluster=dgx-b200",
    )  # fmt: skip
    assert r.exit_code == 2 and "--vs cluster: B runs on b200" in r.stderr, r.stderr


# --- the fit advisor's larger card under a measured compute time: its own compute, said -------
def test_a_larger_card_at_a_measured_compute_says_the_compute_is_not_its_own():
    from costmodel.strategy.advisor import fit_suggestions

    fa = fit_suggestions(7e9, cluster="dgx-h100", nodes=8, compute_time_s=0.4, timeline=False)
    cards = [c for c in fa.changes if c.kind == "larger_card"]
    assert cards, [c.change for c in fa.changes]
    for c in cards:
        note = c.compute_note(fa.base)
        assert note is not None and "its compute predicted on" in note, (c.change, note)
    # the same hardware's changes (sharding) keep no note: the measurement is theirs
    assert all(c.compute_note(fa.base) is None for c in fa.changes if c.kind == "strategy")
    # without a measurement a B200 keeps the default-MFU words
    plain = fit_suggestions(7e9, cluster="dgx-h100", nodes=8, timeline=False)
    b200 = next(c for c in plain.changes if "dgx-b200" in c.change)
    assert "measured" not in (b200.compute_note(plain.base) or "")


def test_step_prints_the_measured_compute_caveat_on_each_larger_card():
    r = run("step", "--params", "7B", "--cluster", "dgx-h100", "--nodes", "8",
            "--compute-time", "400ms")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    cards = [line for line in r.stdout.splitlines() if "a larger card:" in line]
    assert cards and all("its compute predicted on" in line for line in cards), cards
