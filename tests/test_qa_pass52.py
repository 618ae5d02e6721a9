"""QA pass 52: a new user's walk through the planning questions the tool exists for (the 14 GB
all-reduce on 64 H100s, which algorithm wins where, the 70B model under ZeRO-3, H100 against
B200 days and dollars, a 4M-token batch, a bundled nccl-tests log, a Hugging Face config.json)
on the CLI, the API and the app.

Each test failed before the fix it pins (CHANGELOG, Unreleased).
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from costmodel.cli import app


def _run(args: list[str]):
    return CliRunner().invoke(app, args)


def _ok(args: list[str]) -> str:
    res = _run(args)
    assert res.exit_code == 0, res.output
    return res.output


def _stdout(args: list[str]) -> str:
    """What the command writes to stdout alone (its ``assumed:`` lines go to stderr)."""
    res = _run(args)
    assert res.exit_code == 0, res.output
    return res.stdout


def _refusal(args: list[str]) -> str:
    res = _run(args)
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1, res.output
    return lines[0]


# --- which algorithm wins on 64 nodes: the band it judges by is extrapolated -----------------
ALL_64 = ["collective", "all_reduce", "--size", "1MiB", "--size", "1GiB"]
ALL_64 += ["--cluster", "dgx-h100", "--nodes", "64", "--algorithm", "all"]
BEYOND = "64 nodes is beyond the largest measured run in this regime"


def test_every_algorithm_on_64_nodes_says_its_band_is_extrapolated() -> None:
    """``collective all_reduce --cluster dgx-h100 --nodes 64 --algorithm all`` judged "fastest
    at 1 MiB: tree (... expected error ±49%)" with no word that 64 nodes is past the 20 nodes
    the band was measured on, where ``collective all_reduce`` (one algorithm), ``collective
    all --algorithm all``, ``predict`` and the Collectives page ("extrapolated beyond 20
    nodes") all say it. Now the same ``band:`` line follows the verdicts."""
    out = _ok(ALL_64)
    band = [ln for ln in out.splitlines() if ln.startswith("band: ")]
    assert band == [f"band: multi-node-infiniband, {BEYOND}" + band[0].split(BEYOND)[1]], out
    assert "the band is extrapolated, not measured at this scale" in band[0]
    # the same line as the one-algorithm form's, word for word
    one = _ok(ALL_64[:-2])
    assert band[0] in one.splitlines(), one


def test_every_algorithm_json_carries_the_extrapolation() -> None:
    """``--json`` says it as the step's and train's JSON do (``band_extrapolated``,
    ``band_extrapolation``)."""
    got = json.loads(_ok([*ALL_64, "--json"]))
    assert got["band_extrapolated"] is True
    assert got["band_extrapolation"].startswith(f"multi-node-infiniband, {BEYOND}")


def test_every_algorithm_within_the_measured_runs_says_nothing_more() -> None:
    """On 8 nodes (within the 20 measured) no band line is added, and the JSON says false."""
    args = [*ALL_64[:9], "8", "--algorithm", "all"]
    out = _ok(args)
    assert not [ln for ln in out.splitlines() if ln.startswith("band: ")], out
    got = json.loads(_ok([*args, "--json"]))
    assert got["band_extrapolated"] is False and got["band_extrapolation"] == ""


def test_every_algorithm_on_one_nvl72_domain_says_72_gpus_are_beyond() -> None:
    """GPUs count as well as nodes: one GB200 NVL72 node of 72 GPUs is past the 8-GPU runs."""
    out = _ok(
        ["collective", "all_reduce", "--size", "1KiB", "--cluster", "gb200-nvl72"]
        + ["--algorithm", "all"]
    )
    assert "band: single-node-nvlink, 72 GPUs is beyond the largest measured run" in out, out


# --- --gpus and --gpu: the spellings a newcomer types -----------------------------------------
RANKS_COMMANDS = ["collective", "memory", "batch", "step", "scenario", "train"]


@pytest.mark.parametrize("command", RANKS_COMMANDS)
@pytest.mark.parametrize("spelling", ["--gpus", "--num-gpus", "--world-size"])
def test_a_gpu_count_option_names_ranks_and_nodes(command: str, spelling: str) -> None:
    """``--gpus 64`` was "No such option: --gpus" (``scenario``: "(Possible options: --vs)"),
    naming nothing that counts GPUs. Now the one line names --ranks and --nodes."""
    line = _refusal([command, spelling, "64"])
    assert line.startswith(f"costmodel: error: No such option: {spelling}; the GPU count is ")
    assert "--ranks N" in line and "--nodes N of --cluster" in line, line
    assert "Possible options" not in line and f"'costmodel {command} --help'" in line


def test_predict_has_no_ranks_and_names_nodes() -> None:
    """``predict`` counts nodes of its cluster only: its hint names no --ranks it lacks."""
    line = _refusal(["predict", "--cluster", "dgx-h100", "--size", "1GB", "--gpus", "64"])
    assert "the GPU count is --nodes N of --cluster" in line and "--ranks" not in line, line


@pytest.mark.parametrize("command", [*RANKS_COMMANDS, "predict"])
def test_a_gpu_model_option_names_the_cluster_preset(command: str) -> None:
    """``train --gpu b200`` was "No such option: --gpu (Possible options: --mfu)": an MFU has
    nothing to do with the card. Now it says the GPU is the --cluster preset's."""
    line = _refusal([command, "--gpu", "b200"])
    assert "No such option: --gpu; the GPU is the --cluster preset's" in line, line
    assert "--mfu" not in line and "Possible options" not in line
    # memory alone has a card-memory option, and says so
    assert ("--gpu-memory" in line) is (command == "memory"), line


def test_other_unknown_options_keep_clicks_words() -> None:
    """Only those spellings get a hint: an unknown option otherwise keeps click's line."""
    line = _refusal(["step", "--bogus", "1"])
    assert line.startswith("costmodel: error: No such option: --bogus"), line
    assert "GPU count" not in line


# --- the LR rule for AdamW ---------------------------------------------------------------------
LR = ["batch", "--local", "1", "--ranks", "512", "--global-tokens", "4Mi", "--seq", "4096"]
LR += ["--base-lr", "3e-4", "--base-tokens", "1Mi"]


@pytest.mark.parametrize(
    ("typed", "rule"), [("adamw", "sqrt"), ("AdamW", "sqrt"), ("sgd", "linear")]
)
def test_an_optimizer_given_as_the_rule_is_told_its_rule(typed: str, rule: str) -> None:
    """``batch --rule adamw`` (the question is "the LR rule for AdamW") was "--rule: must be
    one of linear, sqrt, got 'adamw'", leaving the user to read --help for which is AdamW's.
    The refusal now says it."""
    line = _refusal([*LR, "--rule", typed])
    assert line.startswith("costmodel: error: --rule: must be one of linear, sqrt, got "), line
    assert f"is an optimizer: its rule is {rule} (" in line, line
    # and the rule it names gives the answer (sqrt: 3e-4 x sqrt(4) at 4 x the tuned batch)
    out = _ok([*LR, "--rule", rule])
    assert ("0.0006 " if rule == "sqrt" else "0.0012 ") in out, out


def test_the_api_refusal_says_the_same() -> None:
    import costmodel as cm

    with pytest.raises(ValueError, match=r"'adamw' is an optimizer: its rule is sqrt \(Adam/AdamW"):
        cm.scale_learning_rate(3e-4, 2**20, 4 * 2**20, rule="AdamW")
    with pytest.raises(ValueError) as err:  # any other name: the refusal as it was
        cm.scale_learning_rate(3e-4, 2**20, 4 * 2**20, rule="cubic")
    assert str(err.value) == "rule: unknown learning-rate rule 'cubic'; allowed: linear, sqrt"


# --- scenario --vs ranks=N: B's GPU count as A's --ranks --------------------------------------
SC = ["scenario", "--arch", "llama-3.1-8b", "--nodes", "64", "--strategy", "fsdp"]


def test_vs_ranks_is_bs_gpu_count_as_ranks_reads_it() -> None:
    """``scenario --ranks 512`` is taken, but ``--vs ranks=1024`` was "unknown field ranks"
    (its allowed list named neither ranks nor the global_tokens and tokens_per_gpu it takes).
    Now B's ranks are read as A's --ranks: 1024 on dgx-h100 is 128 nodes, the same B as
    ``--vs nodes=128`` to the last digit."""
    by_ranks = json.loads(_ok([*SC, "--vs", "ranks=1024", "--json"]))
    by_nodes = json.loads(_ok([*SC, "--vs", "nodes=128", "--json"]))
    assert by_ranks["b"]["ranks"] == 1024 and by_ranks["b"]["nodes"] == 128, by_ranks["b"]
    assert by_ranks["b"]["step_time_s"] == by_nodes["b"]["step_time_s"]
    # one node's slice, and another cluster's nodes (72 GPUs each)
    out = _ok([*SC, "--vs", "ranks=4"])
    assert "B: llama-3.1-8b: 8.03 B params on dgx-h100 x 1 node (4 GPUs)" in out, out
    out = _ok([*SC, "--vs", "cluster=gb200-nvl72,ranks=144"])
    assert "on gb200-nvl72 x 2 nodes (144 GPUs)" in out, out


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ("ranks=12", "--vs ranks: "),
        ("ranks=16,nodes=4", "--vs nodes: 4 disagrees with --vs ranks 16"),
        ("ranks=0", "--vs ranks: must be a whole number in 1.."),
    ],
)
def test_vs_ranks_refusals_name_vs_ranks(change: str, said: str) -> None:
    line = _refusal([*SC, "--vs", change])
    assert line.startswith(f"costmodel: error: {said}"), line
    assert "--ranks" not in line.replace("--vs ranks", ""), line


def test_an_unknown_vs_key_lists_every_key_vs_takes() -> None:
    line = _refusal([*SC, "--vs", "gpu=b200"])
    assert line.startswith("costmodel: error: --vs: unknown field gpu; allowed: params,"), line
    assert line.endswith(", ranks, global_tokens, tokens_per_gpu"), line


def test_step_ranks_alone_suggests_only_a_count_the_default_cluster_builds() -> None:
    """``step --arch llama-3.1-8b --ranks 12`` (no link, no cluster) suggested "--cluster
    dgx-h100 --ranks 12", which is refused (12 GPUs are not whole 8-GPU nodes). ``--ranks N``
    alone is now N GPUs of the default cluster, as ``train`` reads it: 12 is refused in the
    preset's words, a one-link option given with it suggests the counts the preset takes."""
    line = _refusal(["step", "--arch", "llama-3.1-8b", "--ranks", "12"])
    assert "--ranks: 12 GPUs cannot be built from 'dgx-h100' nodes of 8 GPUs" in line, line
    line = _refusal(["step", "--params", "7B", "--latency", "5us", "--ranks", "12"])
    assert "--cluster dgx-h100 --ranks 12" not in line, line
    assert "--cluster dgx-h100 --ranks N, N up to 8 or a multiple of 8; 12 is neither" in line
    line = _refusal(["step", "--params", "7B", "--latency", "5us", "--ranks", "64"])
    assert line.endswith("a cluster: --cluster dgx-h100 --ranks 64"), line
    _ok(["step", "--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--ranks", "64"])


# --- a Hugging Face config.json: a model's folder under ~ ------------------------------------
def _home_model(tmp_path, monkeypatch) -> None:
    from tests._paths import ROOT

    (tmp_path / "models" / "q").mkdir(parents=True)
    src = ROOT / "tests" / "data" / "hf_configs" / "qwen2.5-7b" / "config.json"
    (tmp_path / "models" / "q" / "config.json").write_text(src.read_text())
    monkeypatch.setenv("HOME", str(tmp_path))


def test_a_models_folder_under_home_is_read_as_its_config_json(tmp_path, monkeypatch) -> None:
    """``--arch '~/models/q/config.json'`` was read (the reader expands ``~``) but the folder
    that holds it, ``--arch '~/models/q'`` (quoted, or from a script's variable), was "unknown
    architecture '~/models/q'" with the list of presets. Now both are the same model."""
    import costmodel as cm

    _home_model(tmp_path, monkeypatch)
    assert cm.load_arch("~/models/q").params == cm.load_arch("~/models/q/config.json").params
    folder = json.loads(_ok(["memory", "--arch", "~/models/q", "--ranks", "8", "--json"]))
    file = json.loads(_ok(["memory", "--arch", "~/models/q/config.json", "--ranks", "8", "--json"]))
    assert folder["memory_GB"] == file["memory_GB"] > 0 and folder["params"] == file["params"]


def test_a_folder_under_home_without_config_json_is_said_so(tmp_path, monkeypatch) -> None:
    _home_model(tmp_path, monkeypatch)
    line = _refusal(["memory", "--arch", "~/models", "--ranks", "8"])
    assert "--arch: '~/models' is a folder with no config.json" in line, line


# --- a bundled nccl-tests log by its short id ------------------------------------------------
@pytest.mark.parametrize("typed", ["6a", "06A", "06a"])
def test_a_reference_id_is_read_in_any_case_and_without_its_leading_zero(typed: str) -> None:
    """``validate compare --reference 6a`` (or ``06A``) was "'6a' is not a bundled reference
    run" followed by the 40-odd full file names; the run cited as 06a is that one."""
    from costmodel.reference import reference_path

    assert reference_path(typed, kind="nccl-tests") == reference_path("06a", kind="nccl-tests")
    got = json.loads(_stdout(["validate", "compare", "--reference", typed, "--json"]))
    want = json.loads(_stdout(["validate", "compare", "--reference", "06a", "--json"]))
    assert got["median_abs_rel_error"] == want["median_abs_rel_error"]


def test_an_unknown_reference_lists_the_short_ids() -> None:
    """The refusal names the short ids the option's help lists (02, 03, ..., 27), not every full
    file name."""
    line = _refusal(["validate", "compare", "--reference", "99"])
    assert line.startswith(
        "costmodel: error: --reference: '99' is not a bundled reference run; allowed: a run's "
        "short id (02, 03, 04a, "
    ), line
    assert "02_coreweave" not in line and "06a_nccl-tests-309" in line, line


# --- a 4M-token batch at "4k" tokens per sequence -----------------------------------------------
def test_a_sequence_typed_4k_is_offered_its_binary_reading() -> None:
    """``batch --local 1 --ranks 512 --global-tokens 4Mi --seq 4k`` (4k = 4,000) was refused
    with 2.048 accumulations and ways out that change the batch; the question meant 4,096
    tokens per sequence. The refusal now offers --seq=4096, the binary reading of 4k, with the
    accumulation it gives; that split is then accepted."""
    line = _refusal(
        ["batch", "--local", "1", "--ranks", "512", "--global-tokens", "4Mi"] + ["--seq", "4k"]
    )
    assert "; or --seq=4096 (--accumulation=2), the binary reading of 4k (4Ki)" in line, line
    out = _ok(["batch", "--local", "1", "--ranks", "512", "--global-tokens", "4Mi", "--seq", "4Ki"])
    assert "accumulation steps A [-]       2" in out, out


def test_the_sequence_hint_only_where_it_splits() -> None:
    """No sequence hint alone where its binary reading does not split either (4M tokens, 4k
    sequence: 4M / (4096 x 512) is not whole; both binary readings together are offered), nor
    for a sequence typed without a thousands multiple."""
    from costmodel import batch as bt

    with pytest.raises(bt.BatchSplitError) as err:
        bt.solve_batch(local_batch=1, ranks=512, global_tokens=4_000_000, sequence_length=4000)
    said = bt.split_refusal(err.value)
    assert "; or sequence_length=4096 (" not in said, said
    assert "global_tokens=4,194,304 with sequence_length=4096 (accumulation=2)" in said, said
    with pytest.raises(bt.BatchSplitError) as err:
        bt.solve_batch(local_batch=1, ranks=512, global_tokens=4 * 2**20, sequence_length=4095)
    assert "sequence_length=" not in bt.split_refusal(err.value), err.value
    with pytest.raises(bt.BatchSplitError) as err:
        bt.solve_batch(local_batch=1, ranks=512, global_tokens=4 * 2**20, sequence_length=4000)
    assert "; or sequence_length=4096 (accumulation=2)" in bt.split_refusal(err.value)


def test_the_batch_page_offers_the_same_sequence() -> None:
    """The Batch page words the same refusal in its boxes' labels (one road: split_refusal)."""
    import logging

    from tests.test_app import _text, assert_clean, open_page

    logging.getLogger("streamlit").setLevel(logging.ERROR)
    at = open_page(
        "page_batch.py",
        {
            "solve": "accumulation",
            "batch_unit": "tokens",
            "seq_len": "4k",
            "batch_global_tokens": "4Mi",
            "batch_ranks": "512",
            "batch_local_batch": "1",
        },
    )
    assert_clean(at)
    said = " ".join(_text(e.value) for e in at.error)
    assert (
        "; or Sequence length [tokens per sample] = 4096 (Accumulation steps A [-] = 2), the "
        "binary reading of 4k (4Ki)" in said
    ), said


# --- the Collectives page's side by side: B's time with its band -----------------------------
def test_side_by_side_b_time_has_its_band_and_says_it_is_extrapolated() -> None:
    """With B on 64 DGX H100 nodes, "B: time 168 µs" stood alone: no band, and no word that 64
    nodes is past the 20 the band was measured on, where A's time and the CLI's band line say
    both. B's metric now carries its band as A's does, and a caption says B's expected error."""
    import logging

    from tests.test_app import _text, assert_clean, open_page

    logging.getLogger("streamlit").setLevel(logging.ERROR)
    q = {"nccl_cluster": "dgx-h100", "nccl_nodes": "2", "size_text": "1MiB"}
    at = open_page("page_collectives.py", {**q, "coll_compare": "true", "pin_nodes": "64"})
    assert_clean(at)
    b = {m.label: m for m in at.metric}["B: time"]
    assert b.value == "168 µs" and b.delta == "150 µs to 293 µs", (b.value, b.delta)
    said = [_text(c.value) for c in at.caption if "of B" in _text(c.value)]
    assert said and said[0].startswith("Expected error ±49% of B: 150 µs to 293 µs"), said
    assert "extrapolated beyond 20 nodes" in said[0], said


# --- collective --ranks 64 with no link and no cluster -----------------------------------------
def test_collective_ranks_alone_says_what_is_missing() -> None:
    """``collective all_reduce --size 14GB --ranks 64`` (64 H100s, no --bandwidth, no
    --cluster) was "collective: needs --ranks and --bandwidth, or --cluster NAME", naming the
    --ranks that was given as missing. Now it names --bandwidth, and the preset form that runs
    (as ``step`` says it)."""
    line = _refusal(["collective", "all_reduce", "--size", "14GB", "--ranks", "64"])
    assert line.startswith("costmodel: error: --bandwidth: the one-link collective needs both"), (
        line
    )
    assert line.endswith("or give --cluster NAME (--cluster dgx-h100 --ranks 64)"), line
    _ok(["collective", "all_reduce", "--size", "14GB", "--cluster", "dgx-h100", "--ranks", "64"])
    line = _refusal(["collective", "all_reduce", "--size", "14GB", "--ranks", "12"])
    assert "--ranks N, N up to 8 or a multiple of 8; 12 is neither" in line, line
    line = _refusal(["collective", "all_reduce", "--size", "14GB", "--bandwidth", "50GB/s"])
    assert line.startswith("costmodel: error: --ranks: the one-link collective needs both"), line
