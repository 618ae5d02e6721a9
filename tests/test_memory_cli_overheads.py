"""`costmodel memory --cuda-context/--fragmentation`: the Memory page's "CUDA context,
fragmentation" boxes on the CLI, through the same stage_memory call, so that the total, the
verdict, what makes it fit and the largest model agree with the page for the same inputs."""

from __future__ import annotations

import json
import re

import pytest

from costmodel.strategy.memory import stage_max_params, stage_memory
from costmodel.units import format_bytes, format_count
from tests._cli import one_line_error, run
from tests.test_app import _text, assert_clean, metrics, open_page

#: Llama-2-7B under ZeRO-1 on one DGX H100 node: 60.9 GB a GPU, which fits its 85.5 GB; an
#: 8 GiB context and a 30 % fragmentation allowance take it to 87.7 GB, which does not.
CLI = ("--arch", "llama-2-7b", "--ranks", "8", "--zero", "1", "--cluster", "dgx-h100")
OVER = ("--cuda-context", "8GiB", "--fragmentation", "0.3")
PAGE = {
    "arch": "llama-2-7b",
    "dp_ranks": "8",
    "zero_stage": "1",
    "gpu": "h100-sxm",  # dgx-h100's GPU
    "context": "8GiB",
    "fragmentation": "0.3",
}


def _json(*args: str) -> dict:
    r = run("memory", *args, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def test_cli_overheads_equal_the_memory_page():
    got = _json(*CLI, *OVER)
    assert got["cuda_context_bytes"] == 8 * 2**30 and got["fragmentation"] == 0.3
    parts = got["memory_parts_bytes"]
    assert parts["cuda_context_bytes"] == 8 * 2**30
    # f x everything the allocator holds, the buckets included (their share in this row,
    # not in theirs): the total less the context is (1 + f) x the held bytes
    held = got["memory_bytes"] - 8 * 2**30
    assert parts["fragmentation_bytes"] == pytest.approx(0.3 / 1.3 * held, rel=1e-12)
    assert parts["buckets_bytes"] == _json(*CLI)["memory_parts_bytes"]["buckets_bytes"]
    plain = _json(*CLI)
    assert plain["fits"] and not got["fits"]  # the overheads decide the verdict here
    assert got["max_params"] < plain["max_params"]

    at = open_page("page_memory.py", PAGE)
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    m = metrics(at)
    assert m["Memory per GPU, ZeRO-1"] == format_bytes(got["memory_bytes"])
    assert m["Fits?"] == ("yes" if got["fits"] else "no")
    assert m["Largest model that fits, ZeRO-1"] == f"{format_count(got['max_params'])} params"
    # what makes it fit: the page's warning names the CLI's recomputation and fewest ranks
    said = " ".join(_text(w.value) for w in at.warning)
    assert f"recompute {got['fits_with_recompute']}: " in said, said
    assert f"ZeRO-1 fits from N = {got['min_ranks']:,}" in said, said


def test_cli_overheads_are_the_library_s():
    """The same stage_memory/stage_max_params call with the API's keywords."""
    got = _json(*CLI, *OVER)
    kw = {"arch": "llama-2-7b", "cuda_context_bytes": 8 * 2**30, "fragmentation": 0.3}
    sm = stage_memory(1, 8, None, **kw)
    assert got["memory_bytes"] == float(sm.total_bytes)
    act = got["memory_parts_bytes"]["activations_bytes"]
    assert got["max_params"] == stage_max_params(
        85520809984.0, 1, 8, activations_bytes=act, cuda_context_bytes=8 * 2**30, fragmentation=0.3
    )


def test_without_overheads_nothing_changes_and_the_advisor_answers():
    plain = _json(*CLI[:-4], "--ranks", "8", "--zero", "0", "--cluster", "dgx-h100")
    assert plain["cuda_context_bytes"] == 0.0 and plain["fragmentation"] == 0.0
    assert "fit_suggestions" in plain and "fit_suggestions_note" not in plain
    zero = _json(*CLI[:-4], "--ranks", "8", "--zero", "0", "--cluster", "dgx-h100", "--cuda-context", "0", "--fragmentation", "0")  # fmt: skip
    assert zero == plain


def test_with_overheads_the_step_advisor_counts_them():
    """The advisor prices each change with the step, whose memory now takes the same overheads
    (strategy_step's cuda_context_bytes and fragmentation): its base is this total, and its
    suggestions are given (they were left out with a note while the step sized neither)."""
    got = _json(*CLI, *OVER)
    assert "fit_suggestions_note" not in got
    fa = got["fit_suggestions"]
    assert not fa["fits"] and fa["memory_bytes"] == got["memory_bytes"]
    plain = _json(*CLI)
    assert "fit_suggestions" not in plain  # it fits without them: nothing to suggest
    r = run("memory", *CLI, *OVER)
    assert r.exit_code == 0, r.stderr
    assert "fit suggestions left out" not in r.stdout
    assert r.stdout.startswith("DOES NOT FIT: 87.7 GB per GPU > 85.5 GB (zero1)"), r.stdout
    assert re.search(r"^CUDA context +8.59 GB$", r.stdout, re.M), r.stdout


@pytest.mark.parametrize(
    ("flag", "bad", "rule"),
    [
        ("--fragmentation", "1", "a fraction in [0, 1)"),
        ("--fragmentation", "-0.1", "a fraction in [0, 1)"),
        ("--fragmentation", "nan", "a fraction in [0, 1)"),
        ("--cuda-context", "-1GB", "a size in 0 B..16 TiB (2**44 B), whole bytes, e.g. 1GiB"),
        ("--cuda-context", "32TB", "a size in 0 B..16 TiB (2**44 B), whole bytes, e.g. 1GiB"),
        ("--cuda-context", "1.5B", "a size in 0 B..16 TiB (2**44 B), whole bytes, e.g. 1GiB"),
    ],
)
def test_out_of_range_overheads_are_one_line(flag, bad, rule):
    # a fraction is read as a float first (got 1.0), as --mfu and --contention
    got = repr(bad) if flag == "--cuda-context" else repr(float(bad))
    one_line_error(run("memory", *CLI, flag, bad), f"{flag}: must be {rule}, got {got}")


def test_a_bare_context_is_bytes_with_the_size_warning():
    r = run("memory", *CLI, "--cuda-context", "2")
    assert r.exit_code == 0, r.stderr
    assert r.stderr.strip() == (
        "costmodel: warning: --cuda-context 2 is 2 bytes (a number without a unit is bytes); "
        "for 2 GiB write 2GiB"
    )
    assert run("memory", *CLI, "--cuda-context", "0").stderr == ""  # none is no typo


def test_step_scenario_train_take_them_and_memory_says_so():
    """Every step surface sizes these overheads now (the API's strategy_step, the CLI, the step
    page): memory's help says so, and step, scenario and train take the same two options, one
    definition (the same help text) on all four commands."""
    import typer.main

    from costmodel import cli

    group = typer.main.get_command(cli.app)
    help_text = " ".join(group.commands["memory"].help.split())  # type: ignore[attr-defined]
    assert "`step`, `scenario` and `train` take the same two options" in help_text
    assert "take neither" not in help_text

    def options(command: str) -> dict[str, str]:
        return {
            o: p.help  # type: ignore[attr-defined]
            for p in group.commands[command].params  # type: ignore[attr-defined]
            for o in p.opts
            if o in ("--cuda-context", "--fragmentation")
        }

    want = options("memory")
    assert set(want) == {"--cuda-context", "--fragmentation"}
    for command in ("step", "scenario", "train"):
        assert options(command) == want, command


# --- a config.json through the one decoder of user files (costmodel.textfile) -----------------
HF = (
    __import__("pathlib").Path(__file__).parent
    / "data"
    / "hf_configs"
    / "llama-2-7b"
    / "config.json"
)


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-32"])
def test_a_config_json_with_a_byte_order_mark_loads(tmp_path, encoding):
    """read_text(encoding="utf-8") refused a UTF-16 config.json (PowerShell 5's `>` writes one)
    and json.loads a UTF-8 one with Notepad's mark ("Unexpected UTF-8 BOM")."""
    from costmodel.architecture import load_arch

    folder = tmp_path / encoding
    folder.mkdir()
    (folder / "config.json").write_bytes(HF.read_text(encoding="utf-8").encode(encoding))
    got = load_arch(str(folder / "config.json"))
    assert got.params == load_arch(str(HF)).params
    r = run("memory", "--arch", str(folder), "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["params"] == got.params


def test_an_undecodable_config_json_names_the_file(tmp_path):
    bad = tmp_path / "latin1.json"
    bad.write_bytes('{"model_type": "llama", "name": "caf\u00e9"}'.encode("latin-1"))
    line = one_line_error(run("memory", "--arch", str(bad)), str(bad), "not a JSON config")
    assert "cannot be decoded" in line and "save the config.json as UTF-8" in line


# --- validate compare: |log ratio| as a number, the headline's rows named ---------------------
def _compare_args(tmp_path) -> tuple[str, ...]:
    from tests.test_validate_qa8 import _off_line_rows

    results = tmp_path / "results.jsonl"
    rows = _off_line_rows().to_dict(orient="records")
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return ("validate", "compare", str(results), "--cluster", "dgx-h100")


def test_compare_prints_the_log_ratio_with_three_decimals(tmp_path):
    """median_abs_log_ratio printed 1.624043 (six decimals) beside the percentages."""
    import re

    args = _compare_args(tmp_path)
    out = run(*args).stdout
    doc = json.loads(run(*args, "--json").stdout)
    header = next(line for line in out.splitlines() if "median_abs_log_ratio" in line)
    assert "median_abs_rel_error" in header
    shown = [f"{r['median_abs_log_ratio']:.3f}" for r in doc["summary"]]
    for value in shown:
        assert re.search(rf"\s{re.escape(value)}\s", out), (value, out)
    assert not re.search(r"\d\.\d{4,}", out.split("median |busbw error|")[0]), out


def test_compare_headline_says_which_rows_it_covers(tmp_path):
    """Under --check-from the headline "median |busbw error| X over N rows" was over every
    predicted row while the checks below judged the range: it now says all sizes and how many
    rows the checks judge; --json's median_abs_rel_error is the headline's, and
    checked_median_abs_rel_error the checked range's."""
    from costmodel.units import format_counted

    args = _compare_args(tmp_path)
    doc = json.loads(run(*args, "--check-from", "1MiB", "--json").stdout)
    assert doc["checked_rows"] == 7 and doc["predicted"] == 11
    out = run(*args, "--check-from", "1MiB", "--tolerance", "0.1").stdout
    head = next(line for line in out.splitlines() if line.startswith("median |busbw error|"))
    assert head.startswith(
        f"median |busbw error| {doc['median_abs_rel_error']:.1%} over "
        f"{format_counted(doc['predicted'], 'row')} of all sizes (--check-from 1 MiB judges the "
        "7 from 1 MiB up, below)"
    ), head
    assert doc["checked_median_abs_rel_error"] == pytest.approx(
        doc["goal"][0]["median_abs_rel_error"]
    )
    plain = run(*args).stdout  # no --check-from: every row is checked, nothing to add
    head = next(line for line in plain.splitlines() if line.startswith("median |busbw error|"))
    assert "of all sizes" not in head and "--check-from" not in head
    full = json.loads(run(*args, "--json").stdout)
    assert full["checked_median_abs_rel_error"] == full["median_abs_rel_error"]


def test_the_page_s_context_box_has_the_cli_s_range():
    """The Memory page's CUDA context box refused a negative size but took 32 TB, which
    `memory --cuda-context 32TB` refuses: one range (costmodel._limits), named by the box."""
    rule = "a size in 0 B..16 TiB (2**44 B), whole bytes, e.g. 1GiB"
    at = open_page("page_memory.py", {"context": "32TB"})
    assert not at.exception
    said = [_text(e.value) for e in at.error]
    assert f"CUDA context per GPU [B]: must be {rule}, got '32TB'" in said, said
    at = open_page("page_memory.py", {"context": "16TiB"})  # the upper end is allowed
    assert_clean(at)
