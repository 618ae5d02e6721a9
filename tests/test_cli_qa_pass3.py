"""A new user's pass over the CLI: every --help example pasted, empty values, one planning setup.

`tests/test_cli_help.py` runs the examples of `train`, `batch`, `scenario`, `memory` and `step`;
here every other command's are run as printed (the one-line `Example: costmodel ...` form too),
the few that need what a test machine has not got named with the reason. An empty or blank
value (`-o "$OUT"` with `OUT` unset) is refused on one line naming the option, never read as the
working folder or as the option left out. One planning question (Llama-3.1-70B under FSDP on 8
DGX H100 nodes, 2T tokens) gets the same numbers from `step`, `scenario`, `train`, `memory` and
the step sweep, in JSON with no NaN or infinity.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
import typer

from costmodel import cli
from costmodel.reference import reference_path
from tests._cli import one_line_error, run

# --- every --help example, pasted ------------------------------------------------------------

#: commands whose examples tests/test_cli_help.py runs already
RUN_ELSEWHERE = {"train", "batch", "scenario", "memory", "step"}

#: examples that cannot run here, by their first words -> why
CANNOT_RUN = {
    "costmodel app": "serves the app until stopped (tests/test_serve.py starts it)",
    "costmodel sweep grid.toml --engine dask": "needs a Dask scheduler at tcp://head:8786",
    "costmodel validate compare runs/h100/results.jsonl": "needs a measured results file",
}

#: examples that start a job: run with --dry-run (every argument checked, nothing launched)
DRY_RUN = (
    "costmodel validate torch",
    "costmodel validate nccl-tests run",
    "costmodel validate compute",
)

#: examples that read what `validate torch`'s example writes: given the session's real gloo run
READS_TORCH_RUN = "costmodel calibrate torch.jsonl"


def _leaves() -> list[list[str]]:
    out: list[list[str]] = []

    def walk(cmd, path):
        subs = getattr(cmd, "commands", None)
        if subs is None:
            out.append(path)
        for name, sub in (subs or {}).items():
            walk(sub, [*path, name])

    walk(typer.main.get_command(cli.app), [])
    return out


def _help_examples(path: list[str]) -> list[str]:
    """The `costmodel ...` lines of a --help page, indented or after `Example:`."""
    page = run(*path, "--help").stdout
    lines = [ln.strip().removeprefix("Example:").strip() for ln in page.splitlines()]
    return [ln for ln in lines if ln.startswith("costmodel ")]


PRINTED = [
    line for path in _leaves() if path[0] not in RUN_ELSEWHERE for line in _help_examples(path)
]
EXAMPLES = [line for line in PRINTED if not line.startswith(tuple(CANNOT_RUN))]


def test_the_examples_reach_the_commands_the_other_test_leaves_out():
    commands = {shlex.split(line)[1] for line in EXAMPLES}
    assert {"collective", "predict", "sweep", "fabrics", "presets", "validate"} <= commands
    assert len(EXAMPLES) >= 15
    # calibrate's example reads the file validate torch's example writes
    assert any(line.startswith(READS_TORCH_RUN) for line in EXAMPLES)
    assert any(
        line.startswith("costmodel validate torch") and "-o torch.jsonl" in line
        for line in EXAMPLES
    )
    # every line named as one that cannot run is still printed by some --help
    for prefix in CANNOT_RUN:
        assert any(line.startswith(prefix) for line in PRINTED), prefix


@pytest.mark.parametrize("line", EXAMPLES, ids=EXAMPLES)
def test_every_help_example_runs_when_pasted(line, tmp_path, monkeypatch, request):
    if line.startswith(READS_TORCH_RUN):  # validate torch -o torch.jsonl, then calibrate it
        results, _ = request.getfixturevalue("gloo_run")
        (tmp_path / "torch.jsonl").write_bytes(results.read_bytes())
    monkeypatch.chdir(tmp_path)
    args = shlex.split(line)[1:]
    if line.startswith(DRY_RUN):
        args.append("--dry-run")
    r = run(*args)
    if line.startswith("costmodel validate compare --reference"):
        # a bundled run compared: exit 1 is the fidelity verdict it prints, not a refusal
        assert r.exit_code in (0, 1), (line, r.stderr)
        assert ("FAIL:" in r.stdout) == (r.exit_code == 1), r.stdout[-500:]
    else:
        assert r.exit_code == 0, (line, r.stderr)


# --- an empty value is refused, never read as the working folder or as left out --------------
def _log() -> str:
    return str(reference_path("22"))


BLANK_PATHS = [
    (("validate", "compare", ""), "RESULTS"),
    (("calibrate", "", "-o", "c.toml"), "RESULTS"),
    (("calibrate", "LOG", "-o", ""), "--output"),
    (("sweep", " "), "GRID_FILE"),
    (("sweep", "--set", "preset=dgx-h100", "--set", "size=1MB", "-o", ""), "--output"),
    (("sweep", "--set", "preset=dgx-h100", "--set", "size=1MB", "--output="), "--output"),
    (("validate", "nccl-tests", "run", "--dry-run", "-o", ""), "--output"),
    (("validate", "nccl-tests", "run", "--dry-run", "-o", "r", "--build-dir", " "), "--build-dir"),
    (("validate", "torch", "--dry-run", "-o", ""), "--output"),
    (("validate", "compare", "LOG", "--report", ""), "--report"),
    (("validate", "compare", "LOG", "--calibration", ""), "--calibration"),
]


@pytest.mark.parametrize(("args", "option"), BLANK_PATHS, ids=[" ".join(a) for a, _ in BLANK_PATHS])
def test_an_empty_path_is_refused_naming_it(args, option, tmp_path, monkeypatch):
    """`Path('')` is the working folder: `validate nccl-tests run -o ""` planned its rows there
    and `validate compare ''` compared every log in it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "16a_copy.txt").write_bytes(Path(reference_path("16a")).read_bytes())
    args = tuple(_log() if a == "LOG" else a for a in args)
    line = one_line_error(run(*args), f"{option}: ", "is no path")
    assert "working folder" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["16a_copy.txt"]  # nothing written


def test_the_working_folder_typed_as_a_dot_is_still_taken():
    r = run("validate", "nccl-tests", "run", "--dry-run", "-o", ".")
    assert r.exit_code == 0, r.stderr
    assert "all_reduce_perf" in r.stdout


@pytest.mark.parametrize("kind", ["", " "])
def test_an_empty_sweep_kind_is_refused_not_read_as_collective(kind):
    line = one_line_error(
        run("sweep", "--set", "preset=dgx-h100", "--set", "size=1MB", "--kind", kind),
        "--kind: unknown sweep kind ''",
    )
    assert "allowed: collective, memory, step" in line


def test_an_empty_sweep_kind_beside_a_grid_file_is_refused_by_its_name(tmp_path):
    grid = tmp_path / "g.toml"
    grid.write_text('kind = "collective"\n[grid]\npreset = ["dgx-h100"]\nsize = "1MB"\n')
    one_line_error(run("sweep", str(grid), "--kind", ""), "--kind: unknown sweep kind ''")


def test_an_empty_calibration_name_is_refused_not_the_file_name(tmp_path):
    out = tmp_path / "cal.toml"
    one_line_error(
        run("calibrate", _log(), "-o", str(out), "--name", ""),
        "--name: '' is not a preset name",
    )
    assert not out.exists()


# --- one planning question, one answer on every command --------------------------------------
SETUP = ("--arch", "llama-3.1-70b", "--cluster", "dgx-h100", "--nodes", "8", "--zero", "3",
         "--recompute", "full")  # fmt: skip


def _strict_json(text: str):
    def refuse(constant: str):
        raise AssertionError(f"{constant} in --json output")

    return json.loads(text, parse_constant=refuse)


def _json(*args: str):
    r = run(*args, "--json")
    assert r.exit_code == 0, (args, r.stderr)
    return _strict_json(r.stdout)


def test_the_70b_fsdp_plan_is_one_answer_on_every_command():
    step = _json("step", *SETUP)
    scenario = _json("scenario", *SETUP)
    train = _json("train", *SETUP, "--tokens", "2T")
    memory = _json("memory", *SETUP)
    (row,) = _json(
        "sweep", "--kind", "step", "--set", "preset=dgx-h100", "--set", "arch=llama-3.1-70b",
        "--set", "strategy=fsdp", "--set", "recompute=full", "--set", "nodes=8", "--tokens", "2T",
    )  # fmt: skip
    assert step["layout"] == scenario["layout"] == train["layout"] == row["layout"] == "fsdp"
    assert memory["layout"] == "fsdp"
    t = step["step_time_s"]
    assert scenario["step_time_s"] == train["step_time_s"] == row["step_time_s"] == t
    m = step["memory_bytes"]
    assert scenario["memory_total_bytes"] == train["memory_total_bytes"] == m
    assert memory["memory_bytes"] == m
    assert row["memory_GB"] == pytest.approx(m / 1e9, rel=1e-12)
    assert step["fits"] is scenario["fits"] is train["fits"] is memory["fits"] is row["fits"]
    assert train["wall_days"] == row["wall_days"] and train["gpu_hours"] == row["gpu_hours"]
    assert train["mfu"] == row["mfu"]


# --- a refusal names only options the command has ---------------------------------------------
def _options_of(command: str) -> set[str]:
    cmd = typer.main.get_command(cli.app).commands[command]  # type: ignore[attr-defined]
    return {o for p in cmd.params for o in getattr(p, "opts", []) if o.startswith("--")}


@pytest.mark.parametrize("command", ["train", "step", "scenario"])
def test_a_batch_that_does_not_split_names_only_this_commands_options(command):
    """4M (decimal) tokens of 4096 do not split over 512 GPUs: the ways out were said as
    `--global-batch=512`, `batch`'s option, which train, step and scenario do not take."""
    args = ["--arch", "llama-3.1-8b", "--nodes", "64", "--global-tokens", "4M", "--seq", "4096"]
    extra = ["--tokens", "1T"] if command == "train" else []
    line = one_line_error(run(command, *args, *extra), "nearest valid", "global batch = 512")
    named = set(re.findall(r"--[a-z][a-z0-9-]*", line))
    assert named and named <= _options_of(command), named - _options_of(command)


# --- the app's address -------------------------------------------------------------------------
@pytest.mark.parametrize("address", ["", " ", "127.0.0.1 "])
def test_an_empty_app_address_is_refused_not_every_interface(address, monkeypatch):
    """Streamlit reads an empty server.address as unset, listening on every interface:
    `costmodel app --address ""` served there, said nowhere. (No server starts here: the
    launcher's serve is replaced by one that records the command.)"""
    from costmodel.web import launch

    started: list[list[str]] = []
    monkeypatch.setattr(launch, "serve", lambda cmd: started.append(cmd) or 0)
    line = one_line_error(run("app", "--address", address), "--address: ", "0.0.0.0")
    assert "no address to listen on" in line and not started
    assert run("app", "--address", "127.0.0.1").exit_code == 0 and len(started) == 1
    assert started[0][started[0].index("--server.address") + 1] == "127.0.0.1"


def test_h100_against_b200_days_and_dollars_are_one_answer_on_every_command():
    """`scenario --vs cluster=dgx-b200` prices B at the preset published for B200 of A's
    provider and terms; `train` and the step sweep on dgx-b200 at that price say the same."""
    tokens = ("--tokens", "2T")
    both = _json(
        "scenario", *SETUP, *tokens, "--price", "aws-p5-on-demand", "--vs", "cluster=dgx-b200"
    )
    b = both["training_cost"]["B"]
    b_price = both["training_cost"]["B_price_default"]["price"]
    on_b200 = [*SETUP[: SETUP.index("--cluster")], *SETUP[SETUP.index("--nodes") :]]
    train = _json("train", *on_b200, "--cluster", "dgx-b200", *tokens, "--price", b_price)
    (row,) = _json(
        "sweep", "--kind", "step", "--set", "preset=dgx-b200", "--set", "arch=llama-3.1-70b",
        "--set", "strategy=fsdp", "--set", "recompute=full", "--set", "nodes=8", *tokens,
        "--price", b_price,
    )  # fmt: skip
    assert b["cost_usd"] is not None and b["cost_usd"] > 0
    assert b["wall_days"] == train["wall_days"] == row["wall_days"]
    assert b["cost_usd"] == train["cost_usd"] == row["cost_usd"]


@pytest.mark.parametrize("value", ["nan", "-1"])
def test_a_fragmentation_out_of_range_is_said_with_its_whole_range(value):
    """`--vs fragmentation=nan` (and the API's Scenario) said "a finite number >= 0": no
    upper bound, where 1.0 is refused as "a fraction in [0, 1)"."""
    one_line_error(
        run("scenario", "--arch", "llama-3.1-8b", "--vs", f"fragmentation={value}"),
        "--vs fragmentation: must be a fraction in [0, 1)",
    )


def test_a_cuda_context_past_16_tib_is_refused_on_every_road():
    """`--cuda-context 1PB` and the sweep's axis were refused past 16 TiB; `--vs cuda_context=1PB`
    and the API's Scenario priced it."""
    import costmodel as cm

    one_line_error(
        run("scenario", "--arch", "llama-3.1-8b", "--vs", "cuda_context=1PB"),
        "--vs cuda_context: must be a size in 0 B..16 TiB",
    )
    with pytest.raises(ValueError, match=r"^cuda_context_bytes: must be a size in 0 B\.\.16 TiB"):
        cm.Scenario(arch="llama-3.1-8b", cuda_context_bytes=1e15)
    assert cm.Scenario(arch="llama-3.1-8b", cuda_context_bytes=2**44).cuda_context_bytes == 2**44


def test_gpus_per_node_has_one_range_on_the_cli_the_vs_and_the_api():
    """--gpus-per-node and a cluster's node take 1..1,024; Scenario (so --vs) said [1, 4,096]."""
    import costmodel as cm

    one_line_error(
        run("scenario", "--arch", "llama-3.1-8b", "--vs", "gpus_per_node=0"),
        "--vs gpus_per_node: ", "1..1,024",
    )  # fmt: skip
    one_line_error(run("scenario", "--arch", "llama-3.1-8b", "--gpus-per-node", "0"), "1,024")
    with pytest.raises(ValueError, match=r"gpus_per_node: must be a whole number in 1\.\.1,024"):
        cm.Scenario(arch="llama-3.1-8b", gpus_per_node=2000)
