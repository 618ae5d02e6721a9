"""A QA pass over CLI leftovers: ``scenario --vs global_tokens`` / ``tokens_per_gpu`` set B's
batch as the step sweep's rows do; a quoted ``~`` in an output path is the home folder;
``collective --model textbook`` over one link; one name for the size column of ``predict``
and ``collective``; a tiny MFU shown with its significant digits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from costmodel import units
from tests._cli import one_line_error, run

SC = ("scenario", "--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--nodes", "2",
      "--strategy", "fsdp")  # fmt: skip
STEP = ("step", "--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--strategy", "fsdp")
#: what B's step and the step command's answer both say, key for key
SAME = ("step_time_s", "compute_s", "comm_s", "exposed_comm_s", "tokens_per_step",
        "global_batch", "gpu_memory_bytes", "fits")  # fmt: skip


def _json(*args: str) -> dict:
    r = run(*args, "--json")
    assert r.exit_code == 0, (r.stdout, r.stderr)
    return json.loads(r.stdout)


# --- scenario --vs global_tokens / tokens_per_gpu: B's batch in tokens ------------------------


@pytest.mark.parametrize(
    ("vs", "step_args"),
    [
        ("global_tokens=8Mi", ("--nodes", "2", "--global-tokens", "8Mi")),
        ("nodes=4,global_tokens=8Mi", ("--nodes", "4", "--global-tokens", "8Mi")),
        (
            "global_tokens=8Mi,micro_batch=2",
            ("--nodes", "2", "--global-tokens", "8Mi", "--micro-batch", "2"),
        ),
        (
            "global_tokens=8Mi,accumulation=64",
            ("--nodes", "2", "--global-tokens", "8Mi", "--accumulation", "64"),
        ),
        ("tokens_per_gpu=8Ki", ("--nodes", "2", "--tokens-per-gpu", "8Ki")),
        (
            "tokens_per_gpu=8Ki,global_tokens=1Mi",
            ("--nodes", "2", "--tokens-per-gpu", "8Ki", "--global-tokens", "1Mi"),
        ),
    ],
)
def test_vs_batch_in_tokens_is_steps_answer(vs, step_args):
    """`--vs global_tokens=8Mi` was refused ("no field of B's configuration"): B is now the
    step `costmodel step --global-tokens` (and `--tokens-per-gpu`) answers for the same
    inputs, exactly, with what was solved for B said in b_solved."""
    d = _json(*SC, "--vs", vs)
    step = _json(*STEP, *step_args)
    b = d["b"]
    assert {k: b[k] for k in SAME} == {k: step[k] for k in SAME}
    assert b["scenario"]["local_batch"] == step["micro_batch"]
    assert b["scenario"]["accumulation"] == step["accumulation"]
    solved = d["b_solved"]
    assert solved["from"] == ("--vs global_tokens" if "global" in vs else "--vs tokens_per_gpu")
    assert (solved["local_batch"], solved["accumulation"]) == (
        step["micro_batch"],
        step["accumulation"],
    )


def test_vs_global_tokens_is_the_step_sweeps_row():
    """One road: the step sweep's global_tokens row is B's step."""
    b = _json(*SC, "--vs", "global_tokens=8Mi")["b"]
    r = run(
        "sweep", "--no-progress", "--kind", "step", "--set", "preset=dgx-h100",
        "--set", "arch=llama-3.1-8b", "--set", "nodes=2", "--set", "strategy=fsdp",
        "--set", "global_tokens=8Mi", "--json",
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    (row,) = json.loads(r.stdout)
    assert (row["micro_batch"], row["accumulation"]) == (1, 128)
    assert row["step_time_s"] == b["step_time_s"]
    assert row["global_tokens"] == b["tokens_per_step"] == 8 * 2**20


def test_vs_global_tokens_says_so_in_bs_header():
    r = run(*SC, "--vs", "global_tokens=8Mi")
    assert r.exit_code == 0, r.stderr
    b_line = next(ln for ln in r.stdout.splitlines() if ln.startswith("B: "))
    assert "micro-batch 1 x accumulation 128 solved from --vs global_tokens" in b_line


def test_vs_global_tokens_overrides_as_global_tokens():
    """A's --global-tokens 4Mi, --vs global_tokens=8Mi: B at 8Mi, A at 4Mi."""
    d = _json(*SC, "--global-tokens", "4Mi", "--vs", "global_tokens=8Mi")
    assert d["a"]["tokens_per_step"] == 4 * 2**20
    assert d["b"]["tokens_per_step"] == 8 * 2**20


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("--vs", "global_tokens=0"), ["--vs global_tokens", "1..1e16"]),
        (("--vs", "global_tokens=3000"), ["--vs global_tokens: 3,000 tokens", "B's 16 GPUs"]),
        (("--vs", "tokens_per_gpu=3000"), ["--vs tokens_per_gpu", "--seq 4096"]),
        (("--vs", "tokens_per_gpu=8Ki,micro_batch=2"), ["--vs micro_batch, --vs tokens_per_gpu"]),
        (("--vs", "global_tokens=8Mi,micro_batch=2,accumulation=2"),
         ["--vs micro_batch, --vs accumulation", "--vs global_tokens"]),
        (("--micro-batch", "2", "--accumulation", "2", "--vs", "global_tokens=8Mi"),
         ["--vs global_tokens", "--micro-batch and --accumulation", "--vs micro_batch=M"]),
    ],
)  # fmt: skip
def test_vs_batch_in_tokens_refusals_are_one_line(args, fragments):
    line = one_line_error(run(*SC, *args), *fragments)
    assert "no field of B's configuration" not in line


# --- -o '~/x.csv': the home folder, as the shell would have expanded it ------------------------


def test_quoted_tilde_output_is_the_home_folder(tmp_path, monkeypatch):
    """`-o '~/x.csv'` was refused as "folder '~' does not exist"."""
    monkeypatch.setenv("HOME", str(tmp_path))
    r = run("sweep", "--no-progress", "--set", "preset=dgx-h100", "--set", "nodes=1",
            "--set", "size=1GB", "-o", "~/x.csv")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert (tmp_path / "x.csv").is_file()
    assert not Path("~").exists()


def test_quoted_tilde_report_is_the_home_folder(tmp_path, monkeypatch):
    """--report (a second output of one command) takes the same road."""
    from costmodel.cli import _common

    monkeypatch.setenv("HOME", str(tmp_path))
    out = _common.home_expanded(
        {"output": Path("~/x.csv"), "report": Path("~/r.html"), "other": Path("~/k")},
        ["output", "report"],
    )
    assert out["output"] == tmp_path / "x.csv" and out["report"] == tmp_path / "r.html"
    assert out["other"] == Path("~/k")  # not a path parameter: left as given


# --- collective --model textbook over one link ------------------------------------------------

LINK = ("collective", "all_reduce", "--ranks", "8", "--bandwidth", "100GB/s", "-s", "1GB,14GB")


@pytest.mark.parametrize("model", ["textbook", "Textbook", "lesson"])
def test_collective_over_one_link_takes_the_link_models(model):
    """textbook is the one-link collective's model: --model textbook was refused."""
    plain = _json(*LINK)["results"]
    given = _json(*LINK, "--model", model)["results"]
    assert [r["time_s"] for r in given] == [r["time_s"] for r in plain]
    assert {r["model"] for r in given} == {model.lower()}


@pytest.mark.parametrize("model", ["nccl", "calibrated", "nccl-table"])
def test_collective_over_one_link_refuses_cluster_models_naming_them(model):
    line = one_line_error(
        run(*LINK, "--model", model),
        f"--model: {model} is a model of the collective on a cluster preset",
        "allowed there: textbook, lesson",
    )
    for other in ("nccl", "calibrated", "nccl-table"):
        assert other in line


# --- predict's size column: "size", as collective's --------------------------------------------


def test_predict_text_size_column_is_size_as_collectives():
    p = run("predict", "--op", "all_reduce", "--cluster", "dgx-h100", "--nodes", "2", "-s", "1GB")
    c = run("collective", "all_reduce", "--cluster", "dgx-h100", "--nodes", "2", "-s", "1GB")
    assert p.exit_code == c.exit_code == 0, (p.stderr, c.stderr)
    p_head, c_head = p.stdout.splitlines()[1].split(), c.stdout.splitlines()[0].split()
    assert "size" in p_head and "size" in c_head and "message" not in p_head
    # the JSON keys were already one: size_bytes
    pj = _json("predict", "--op", "all_reduce", "--cluster", "dgx-h100", "-s", "1GB")
    assert "size_bytes" in pj["results"][0]


# --- a tiny MFU: its significant digits, not "0.0%" -----------------------------------------


def test_format_mfu_keeps_significant_digits():
    assert units.format_mfu(0.414) == "41.4%"
    assert units.format_mfu(0.00028) == "0.028%"
    assert units.format_mfu(3.1e-5) == "0.0031%"
    assert units.format_mfu(0.414, sep=" ") == "41.4 %"


def test_train_tiny_mfu_is_not_zero():
    args = ("train", "--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--nodes", "1000000",
            "--strategy", "fsdp", "--tokens", "1T")  # fmt: skip
    r = run(*args)
    assert r.exit_code == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("MFU at this step"))
    mfu = _json(*args)["mfu"]
    assert 0 < mfu < 1e-3
    assert "0.0%" not in line and units.format_mfu(mfu) in line


def test_app_tiny_mfu_metric_is_not_zero():
    """The step page's MFU metric, through the same helper: a 1000 s measured step of the
    page's first setup implies about 0.02%, which read "0.0 %"."""
    pytest.importorskip("streamlit")
    from streamlit.testing.v1 import AppTest

    page = Path(__file__).resolve().parents[1] / "costmodel" / "web" / "page_ddp.py"
    at = AppTest.from_file(str(page), default_timeout=120)
    at.run()
    at.text_input(key="ddp_measured_step").set_value("1000s").run()
    assert not at.exception, [e.value for e in at.exception]
    shown = {m.label: m.value for m in at.metric}["MFU implied by the measured step"]
    assert shown != "0.0 %" and shown.endswith(" %"), shown
    assert 0 < float(shown.removesuffix(" %")) < 0.1
