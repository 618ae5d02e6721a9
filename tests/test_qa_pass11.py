"""Eleventh QA pass: the command line and the API, asked as an engineer planning real runs.
Each test failed before its fix."""

from __future__ import annotations

import json
import os
import shlex
import stat

import pytest
import typer
from typer.testing import CliRunner

import costmodel as cm
from costmodel import cli
from tests._cli import one_line_error, run


# --- examples in --help are whole lines -----------------------------------------------------------
def _doc_examples(fn) -> list[str]:
    """The ``costmodel ...`` examples of a docstring, with an inline ``Example:`` label cut off."""
    out = []
    for ln in (fn.__doc__ or "").splitlines():
        text = ln.strip()
        if text.startswith(("Example: costmodel ", "Examples: costmodel ")):
            text = text.split(": ", 1)[1]
        if text.startswith("costmodel "):
            out.append(text)
    return out


def _commands_with_examples() -> list[tuple[str, object]]:
    """Every command (nested ones too) whose docstring shows a ``costmodel ...`` example."""
    root = typer.main.get_command(cli.app)
    out: list[tuple[str, object]] = []

    def walk(cmd, path):
        subs = getattr(cmd, "commands", None)
        if subs is not None:
            for name, sub in subs.items():
                walk(sub, [*path, name])
        elif _doc_examples(cmd.callback):
            out.append((" ".join(path), cmd.callback))

    walk(root, [])
    return out


WITH_EXAMPLES = _commands_with_examples()


def test_every_command_with_an_example_is_checked():
    names = {n for n, _ in WITH_EXAMPLES}
    assert {"collective", "predict", "sweep", "calibrate", "validate torch", "validate compare",
            "validate nccl-tests run", "memory", "scenario", "train"} <= names  # fmt: skip


@pytest.mark.parametrize(("name", "fn"), WITH_EXAMPLES, ids=[n for n, _ in WITH_EXAMPLES])
def test_help_examples_stay_whole_lines_at_80_columns(name, fn):
    """At 80 columns click re-wrapped ``costmodel predict ... --sizes`` / ``8B:16GB`` onto two
    lines (also collective's second example, two of sweep's, and calibrate's, validate torch's,
    validate compare's and validate nccl-tests run's): the first line, pasted, ran without the
    option's value. Every command's examples are one line each of its help (click's ``\\b``)."""
    examples = _doc_examples(fn)
    assert examples, name
    r = CliRunner().invoke(cli.app, [*name.split(), "--help"], terminal_width=80)
    assert r.exit_code == 0
    shown = r.stdout.splitlines()
    for example in examples:
        assert any(example in ln for ln in shown), (example, r.stdout)


@pytest.mark.parametrize("name", ["collective", "predict"])
def test_help_examples_of_collective_and_predict_run_when_pasted(name):
    r = CliRunner().invoke(cli.app, [name, "--help"], terminal_width=80)
    lines = [ln.strip() for ln in r.stdout.splitlines() if ln.strip().startswith("costmodel ")]
    assert lines
    for line in lines:
        got = CliRunner().invoke(cli.app, [*shlex.split(line)[1:], "--json"])
        assert got.exit_code == 0, (line, got.stderr)


def test_the_sweep_help_example_runs_when_pasted(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli.app, ["sweep", "--help"], terminal_width=80)
    line = next(ln.strip() for ln in r.stdout.splitlines() if "-o out.parquet" in ln)
    got = CliRunner().invoke(cli.app, [*shlex.split(line)[1:], "--no-progress"])
    assert got.exit_code == 0, (line, got.stderr)
    assert (tmp_path / "out.parquet").stat().st_size > 0


# --- one range per option, the same words on every command -------------------------------------
@pytest.mark.parametrize(
    ("argv", "fragments"),
    [
        (("memory", "--params", "7B", "--zero", "-1"), ("--zero", "0..3")),
        (("train", "--params", "7B", "--tokens", "1T", "--zero-stage", "4"), ("--zero", "0..3")),
        (("scenario", "--params", "7B", "--zero", "9"), ("--zero", "0..3")),
        (("step", "--arch", "llama-3.1-8b", "--strategy", "hsdp", "--group-size", "0"),
         ("--group-size", "1..")),
        (("batch", "--local", "1", "--ranks", "8", "--global", "64", "--base-lr", "1e-3",
          "--base-batch", "0"), ("--base-batch", "1..")),
        (("app", "--port", "0"), ("--port", "1..65,535")),
    ],
)  # fmt: skip
def test_typer_bounded_options_say_their_whole_range(argv, fragments):
    """typer's own min/max said one bound ("Input should be greater than or equal to 0" for
    ``--zero -1`` of a 0..3 stage) in its "Invalid value for ..." form; the one table of limits
    says the range, as for --nodes and --seq."""
    line = one_line_error(run(*argv), *fragments)
    assert "Invalid value" not in line and "Input should be" not in line, line


@pytest.mark.parametrize("value", ["0", "-1", "nan", "1e9"])
def test_the_b_price_has_the_a_price_range(value):
    """``--usd-per-gpu-hour-b`` had typer's ``min=0``: its help said ``[x>=0.0]`` where 0 is
    refused, and -1 or nan got "Input should be greater than or equal to 0"; A's price said
    "(0, 1000]". One range for both sides."""
    args = ("scenario", "--arch", "llama-2-7b", "--nodes", "8", "--vs", "nodes=16", "--tokens",
            "2T", "--price", "aws-p5-on-demand", "--usd-per-gpu-hour-b", value)  # fmt: skip
    one_line_error(
        run(*args), "--usd-per-gpu-hour-b: must be a price in (0, 1000] USD per GPU-hour"
    )


def test_the_b_price_help_states_no_range_it_does_not_keep():
    r = CliRunner().invoke(cli.app, ["scenario", "--help"], terminal_width=80)
    lines = r.stdout.splitlines()
    i = next(i for i, ln in enumerate(lines) if "--usd-per-gpu-hour-b" in ln)
    end = next(j for j in range(i + 1, len(lines)) if lines[j].lstrip().startswith("-"))
    block = " ".join(ln.strip() for ln in lines[i:end])
    assert "A's, same GPU" in block and "x>=" not in block, block


# --- an output file written through a link, its mode kept ---------------------------------------
_GRID = ("--set", "preset=dgx-h100", "--set", "nodes=1,2", "--set", "size=1GB", "--no-progress")


def test_sweep_output_through_a_symlink_keeps_the_link(tmp_path):
    """``-o latest.csv`` where latest.csv links to a run's file replaced the link with a plain
    file and left the file it points at stale (the rename landed on the link's name)."""
    target = tmp_path / "run-1.csv"
    target.write_text("old\n")
    link = tmp_path / "latest.csv"
    link.symlink_to(target.name)
    r = run("sweep", *_GRID, "-o", str(link))
    assert r.exit_code == 0, r.stderr
    assert link.is_symlink() and os.readlink(link) == target.name
    assert target.read_text().startswith('"preset"')
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_sweep_output_keeps_an_existing_files_mode(tmp_path):
    """The temporary file's mode (0666 less the umask) replaced the file's own: a 0640 result
    became world-readable when a sweep rewrote it."""
    out = tmp_path / "grid.csv"
    out.write_text("old\n")
    out.chmod(0o640)
    r = run("sweep", *_GRID, "-o", str(out))
    assert r.exit_code == 0, r.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert out.read_text().startswith('"preset"')


# --- the step's API reads a name as the other functions do ---------------------------------------
def test_strategy_step_reads_an_architecture_name_as_training_memory_does():
    """``cm.training_memory("llama-3.1-70b")`` and ``cm.ddp_step("llama-2-7b", ...)`` read a
    name as the architecture; ``cm.strategy_step("llama-3.1-8b")`` said "params: must be a
    finite count > 0, got 'llama-3.1-8b'"."""
    a = cm.strategy_step("llama-3.1-8b", nodes=2, strategy="fsdp", timeline=False)
    b = cm.strategy_step(arch="llama-3.1-8b", nodes=2, strategy="fsdp", timeline=False)
    assert a.step_time_s == b.step_time_s and a.memory_bytes == b.memory_bytes
    with pytest.raises(
        ValueError,
        match=r"^params: 8,030,261,248 differs from llama-2-7b.s 6,738,415,616; give one of them$",
    ):
        cm.strategy_step("llama-3.1-8b", arch="llama-2-7b")
    with pytest.raises(ValueError, match=r"params: '7B' is neither a number.*params=7e\+09"):
        cm.strategy_step("7B")


def test_the_advisors_read_an_architecture_name_too():
    a = cm.advise_strategy("llama-3.1-8b", nodes=2, model="lesson")
    b = cm.advise_strategy(arch="llama-3.1-8b", nodes=2, model="lesson")
    assert [s.layout.name for s in a.steps] == [s.layout.name for s in b.steps]
    assert [s.step_time_s for s in a.steps] == [s.step_time_s for s in b.steps]
    # recomputation is offered only for an architecture: the name must count as one
    f = cm.fit_suggestions("llama-3.1-70b", nodes=8, strategy="fsdp", model="lesson")
    g = cm.fit_suggestions(arch="llama-3.1-70b", nodes=8, strategy="fsdp", model="lesson")
    assert [c.change for c in f.changes] == [c.change for c in g.changes]
    assert any(c.kind == "recompute" for c in f.changes)


# --- a sequence length in --vs, as --seq reads it ------------------------------------------------
def test_vs_reads_a_sequence_length_as_seq_does():
    """``--seq 8Ki`` answers, ``--vs seq=8Ki`` said "Input should be a valid integer": B's values
    are "in the field's own units", and a sequence length's are those of --seq."""
    a = cm.Scenario(arch="llama-3.1-8b", nodes=2)
    assert a.with_changes("seq=8Ki").sequence_length == 8192
    assert a.with_changes("seq=8k").sequence_length == 8000
    assert cm.Scenario(arch="llama-3.1-8b", sequence_length="8Ki").sequence_length == 8192
    r = run("scenario", "--arch", "llama-3.1-8b", "--nodes", "2", "--vs", "seq=8Ki", "--json")
    assert r.exit_code == 0, r.stderr
    b = json.loads(r.stdout)["b"]
    seq = run("scenario", "--arch", "llama-3.1-8b", "--nodes", "2", "--seq", "8Ki", "--json")
    assert b["step_time_s"] == json.loads(seq.stdout)["step_time_s"]
    one_line_error(run("scenario", "--arch", "llama-3.1-8b", "--vs", "seq=8x"), "--vs seq", "'8Ki'")


# --- step takes --zero as train, scenario and memory do ------------------------------------------
def test_step_takes_zero_as_train_and_scenario_do():
    """``train --zero 3`` and ``memory --zero 3`` answer; ``step --zero 3`` said "No such
    option: --zero". The stage names its strategy (3 = fsdp), the same step as --strategy."""
    base = ("step", "--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--nodes", "2", "--json")
    for zero, strategy in (("1", "zero1"), ("3", "fsdp")):
        by_zero = run(*base, "--zero", zero)
        assert by_zero.exit_code == 0, by_zero.stderr
        assert json.loads(by_zero.stdout) == json.loads(run(*base, "--strategy", strategy).stdout)
    one_line_error(run(*base, "--zero", "3", "--strategy", "ddp"), "--zero 3 contradicts")
    link = ("step", "--params", "7B", "--compute-time", "400ms", "--ranks", "8", "--bandwidth",
            "50GB/s", "--zero", "2")  # fmt: skip
    one_line_error(run(*link), "--zero 2: the sharded strategies need --cluster")


# --- a config.json the reader refuses names --arch, as its other refusals do ---------------------
@pytest.mark.parametrize(
    ("config", "says"),
    [
        ({"model_type": "bert", "hidden_size": 768}, "model_type 'bert' is not supported"),
        ({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": -1,
          "num_attention_heads": 32, "intermediate_size": 11008, "vocab_size": 32000},
         "num_hidden_layers must be a whole number"),
    ],
)  # fmt: skip
def test_a_refused_config_names_the_option_and_the_file(tmp_path, config, says):
    """A missing file or bad JSON said "--arch: ...", a config with an unsupported model_type
    or a bad key said "config.json: ..." (no option, no file): three commands, two forms."""
    cfg = tmp_path / "mine" / "config.json"
    cfg.parent.mkdir()
    cfg.write_text(json.dumps(config))
    for argv in (
        ("step", "--arch", str(cfg.parent)),
        ("memory", "--arch", str(cfg)),
        ("train", "--arch", str(cfg), "--tokens", "1T"),
    ):
        line = one_line_error(run(*argv), str(cfg), says)
        assert line.startswith(f"costmodel: error: --arch: {cfg}: "), line
    with pytest.raises(ValueError, match=r"^arch: .*mine/config\.json: "):
        cm.load_arch(str(cfg))


# --- presets help names every kind the commands take ---------------------------------------------
@pytest.mark.parametrize("argv", [("presets", "list"), ("presets", "schema")])
def test_presets_help_names_the_calibration_kind_they_take(argv):
    """``presets list --kind calibration`` and ``presets schema calibration`` answer (the
    refusal of a bad kind lists calibration), but their help said "gpu, link or cluster"."""
    r = CliRunner().invoke(cli.app, [*argv, "--help"], terminal_width=200)
    assert "cluster or calibration" in " ".join(r.stdout.split()), r.stdout
    assert run(*argv, *(("--kind",) if argv[1] == "list" else ()), "calibration").exit_code == 0


# --- memory's --model is the architecture: a cost model there is named as such -------------------
@pytest.mark.parametrize("model", ["nccl", "lesson", "textbook"])
def test_memory_names_a_cost_model_given_as_its_model(model):
    """``memory``'s --model is an alias of --arch; a step's ``--model nccl`` pasted onto it
    replaced the architecture and was refused as "--arch: unknown architecture 'nccl'"."""
    line = one_line_error(run("memory", "--model", model), "collective cost model")
    assert "unknown architecture" not in line, line
    # beside an --arch, the one option given twice, both spellings named
    one_line_error(
        run("memory", "--arch", "llama-3.1-8b", "--model", model),
        f"--arch/--model: given twice (llama-3.1-8b, then {model}); give it once",
    )
    assert run("memory", "--model", "llama-3.1-8b", "--json").exit_code == 0
