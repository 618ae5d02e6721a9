"""CLI papercuts from a QA pass that pasted the README's commands.

- `validate compare --reference nope` listed 21a-21d, 26 and 27 among the ids it accepts, and
  then refused each (busbw-only tables, a file without nccl-tests rows);
- `predict --op all_gather --size 100GB` said "an all-reduce needs twice that" on an
  all-gather row;
- `step --help` gave `--cluster` no `[default: dgx-h100]`, though step assumes it as train and
  scenario do (and mark it).
"""

from __future__ import annotations

import re

from tests._cli import run


def test_an_unknown_reference_lists_only_the_ids_compare_reads():
    from costmodel.validation.reference_runs import timed_runs

    out = run("validate", "compare", "--reference", "nope")
    assert out.exit_code == 2
    line = out.stderr.strip()
    assert len(line.splitlines()) == 1, line
    allowed = re.search(r"allowed: a run's short id \(([^)]*)\)", line)
    assert allowed is not None, line
    ids = allowed.group(1).split(", ")
    assert ids == list(timed_runs())
    assert not {"21a", "21b", "21c", "21d", "26", "27"} & set(ids)
    assert "21a, 21b, 21c, 21d, 26, 27 are bundled without times" in line
    for untimed in ("21a", "26"):  # and each of those is refused, as said
        assert run("validate", "compare", "--reference", untimed).exit_code == 2


def test_the_buffer_note_of_an_all_gather_does_not_speak_of_an_all_reduce():
    out = run("predict", "--op", "all_gather", "--size", "100GB", "--cluster", "dgx-h100",
              "--nodes", "2")  # fmt: skip
    assert out.exit_code == 0, out.stderr
    text = out.stdout + out.stderr
    assert "more than the h100-sxm GPU memory" in text
    assert "all-reduce" not in text.split("note: size", 1)[1].split("\n", 1)[0]
    assert "the op's other buffer comes on top: up to twice that" in text


def test_step_help_marks_the_cluster_it_assumes():
    for cmd in ("step", "train", "scenario"):
        text = re.sub(r"\s+", " ", run(cmd, "--help").stdout)
        opt = text.split("--cluster <str>", 1)[1].split(" --nodes", 1)[0]
        assert "[default: dgx-h100]" in opt, (cmd, opt)
