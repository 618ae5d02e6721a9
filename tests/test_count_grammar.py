"""One grammar for every whole count on every surface (README "Limits on input"): digits, or a
number with an exponent or a suffix k, M, G (B), T that is a whole number within the field's
range; underscores (``1_000``), fractions (``1.5``, ``1e-1``) and signs are refused naming the
option or field and its range. CLI options, the sweep's --set axes and grid files, --vs items,
Scenario fields given as text and the app's URL values of whole-number boxes read it alike."""

from __future__ import annotations

import json

import pytest

import costmodel as cm
from costmodel import units
from costmodel._limits import LIMITS
from tests._cli import one_line_error, run

# (command line with {} where the count goes, the option named in a refusal, digits)
CLI_OPTIONS = [
    (("batch", "--ranks", "{}", "--local", "1", "--accumulation", "1"), "--ranks", "1000"),
    (("batch", "--local", "{}", "--ranks", "8", "--accumulation", "1"), "--local", "1000"),
    (("batch", "--ranks", "8", "--local", "1", "--accumulation", "{}"), "--accumulation", "1000"),
    (
        ("collective", "all_reduce", "--cluster", "dgx-h100", "--nodes", "{}", "--size", "1GB"),
        "--nodes",
        "1000",
    ),
    (
        ("collective", "all_reduce", "--ranks", "{}", "--bandwidth", "50GB/s", "--size", "1GB"),
        "--ranks",
        "1000",
    ),
    (("presets", "show", "dgx-h100", "--nodes", "{}"), "--nodes", "1000"),
    (
        ("train", "--steps", "{}", "--arch", "llama-2-7b", "--cluster", "dgx-h100"),
        "--steps",
        "1000",
    ),
]
SAME_AS_1000 = ["1e3", "1k", "1K", "1.0e3", "0.001M", " 1000 ", "+1000"]
REFUSED = ["1_000", "1.5", "1e-1", "-1", "2x", "1e3.5", "1,000", "0x10", ""]


def _cmd(template: tuple[str, ...], value: str) -> list[str]:
    return [value if a == "{}" else a for a in template] + ["--json"]


@pytest.mark.parametrize(("template", "option", "digits"), CLI_OPTIONS)
def test_every_integer_option_reads_each_spelling_as_its_digits(template, option, digits):
    want = run(*_cmd(template, digits))
    assert want.exit_code == 0, want.stderr
    for spelling in SAME_AS_1000:
        got = run(*_cmd(template, spelling))
        assert got.exit_code == 0, (spelling, got.stderr)
        assert json.loads(got.stdout) == json.loads(want.stdout), spelling


@pytest.mark.parametrize(("template", "option", "digits"), CLI_OPTIONS)
@pytest.mark.parametrize("spelling", REFUSED)
def test_every_integer_option_refuses_what_is_not_a_whole_count(template, option, digits, spelling):
    param = {"--local": "local", "--steps": "steps", "--accumulation": "accumulation"}.get(
        option, option.removeprefix("--")
    )
    rule = LIMITS[param].rule
    line = one_line_error(run(*_cmd(template, spelling)), f"{option}: must be {rule}")
    assert "Traceback" not in line and "valid integer" not in line
    if spelling in ("1_000", "2x", "0x10"):  # text in no form of a count says the forms
        assert "digits, an exponent or a suffix k, M, G" in line, line


def test_a_count_beyond_the_range_is_named_as_typed():
    line = one_line_error(
        run("collective", "all_reduce", "--cluster", "dgx-h100", "--nodes", "2M", "--size", "1GB"),
        "--nodes: must be a whole number in 1..1,000,000",
    )
    assert line.endswith("got '2M'"), line
    # digits keep their old wording (a number, not the text)
    line = one_line_error(
        run("batch", "--ranks", "2000000000", "--local", "1", "--accumulation", "1"),
        "--ranks: must be a whole number in 1..1,000,000,000",
    )
    assert line.endswith("got 2000000000"), line


@pytest.mark.parametrize(("spelling", "nodes"), [("10", 10), ("1e1", 10), ("2k", 2000)])
def test_sweep_set_vs_and_scenario_read_the_same_counts(spelling, nodes):
    s = cm.Scenario(arch="llama-2-7b", nodes=spelling)
    assert s.nodes == nodes
    assert cm.Scenario(arch="llama-2-7b").with_changes(f"nodes={spelling}").nodes == nodes
    df = cm.sweep(op="all_reduce", preset="dgx-h100", nodes=spelling, size=1e9)
    assert list(df["nodes"]) == [nodes]
    r = run("sweep", "--set", "preset=dgx-h100", "--set", f"nodes={spelling}",
            "--set", "size=1GB", "--no-progress", "--json")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert [row["nodes"] for row in json.loads(r.stdout)] == [nodes]
    v = run("scenario", "--cluster", "dgx-h100", "--nodes", "2", "--arch", "llama-2-7b",
            "--vs", f"nodes={spelling}", "--json")  # fmt: skip
    assert v.exit_code == 0, v.stderr
    assert f"{nodes * 8}" in v.stdout


@pytest.mark.parametrize("spelling", ["1_0", "1.5", "1e-1", "-1", "ten"])
def test_sweep_set_vs_and_scenario_refuse_the_same_counts(spelling):
    with pytest.raises(ValueError, match=r"nodes: must be a whole number in 1\.\.1,000,000, got"):
        cm.Scenario(arch="llama-2-7b", nodes=spelling)
    one_line_error(
        run(
            "sweep",
            "--set",
            "preset=dgx-h100",
            "--set",
            f"nodes={spelling}",
            "--set",
            "size=1GB",
            "--no-progress",
        ),  # fmt: skip
        "--set nodes: must be a whole number in 1..1,000,000",
    )
    one_line_error(
        run(
            "scenario",
            "--cluster",
            "dgx-h100",
            "--nodes",
            "2",
            "--arch",
            "llama-2-7b",
            "--vs",
            f"nodes={spelling}",
        ),  # fmt: skip
        "--vs nodes: must be a whole number in 1..1,000,000",
    )


def test_a_grid_file_reads_the_same_counts(tmp_path):
    from costmodel import sweep

    grid = tmp_path / "grid.toml"
    grid.write_text(
        'kind = "collective"\n[grid]\npreset = "dgx-h100"\nnodes = ["1e1", "2k", 8]\nsize = "1GB"\n'
    )
    assert sweep.load_grid(grid).axes["nodes"] == [10, 2000, 8]
    r = run("sweep", str(grid), "--no-progress", "--json")
    assert r.exit_code == 0, r.stderr
    assert sorted(row["nodes"] for row in json.loads(r.stdout)) == [8, 10, 2000]
    grid.write_text(
        'kind = "collective"\n[grid]\npreset = "dgx-h100"\nnodes = "1_0"\nsize = "1GB"\n'
    )
    with pytest.raises(
        ValueError,
        match=r"nodes: must be a whole number in 1\.\.1,000,000, got '1_0'; expected a whole number",
    ):
        sweep.load_grid(grid)


@pytest.mark.parametrize(
    ("text", "value"),
    [("8", 8), ("1e3", 1000), ("2k", 2000), ("2K", 2000), ("3M", 3_000_000), ("1G", 10**9),
     ("7B", 7 * 10**9), ("2T", 2 * 10**12), ("1.5k", 1500), (" 16 ", 16), ("1.5", 1.5),
     ("1e-1", 0.1), ("-1", -1)],
)  # fmt: skip
def test_the_one_reader(text, value):
    got = units.read_count(text)
    assert got == value and type(got) is type(value)


# ("1,000" is refused saying how to write it: tests/test_qa_pass24.py)
@pytest.mark.parametrize("text", ["1_000", "2 kB", "0x10", "1e3.5", "", "k", "8ki"])
def test_the_one_reader_refuses_text_in_no_form_of_a_count(text):
    with pytest.raises(ValueError, match="expected a whole number: digits, an exponent"):
        units.read_count(text, name="nodes")
    with pytest.raises(ValueError, match="nodes: cannot parse"):
        units.parse_int(text, name="nodes")


@pytest.mark.parametrize(("given", "value"), [("2k", "2000"), ("1e1", "10"), ("16", "16")])
def test_url_values_of_whole_number_boxes_read_the_grammar(given, value):
    from tests.test_app import assert_clean, open_page

    at = open_page("page_cluster.py", {"cl_nodes": given})
    assert_clean(at)
    assert at.number_input(key="cl_nodes").value == int(value)


@pytest.mark.parametrize("given", ["1_0", "ten", "1.5"])
def test_url_values_of_whole_number_boxes_refuse_the_rest_naming_the_box(given):
    from tests.test_app import open_page

    at = open_page("page_cluster.py", {"cl_nodes": given})
    assert not at.exception
    assert at.number_input(key="cl_nodes").value == 4  # the default, not 10 from 1_0
    [message] = [e.value.replace("\\", "") for e in at.error]
    assert f"URL parameter cl_nodes: {given} is not a whole number" in message
