"""The README's words against what the code does, from a QA pass that pasted its commands.

- hsdp's groups in `memory --strategy all` / `step --strategy all`: the README said "each group
  that divides the ranks and fits a node" and groups "that fit the slice", but
  `strategy.advisor.hsdp_group_sizes` also takes groups of whole nodes (g = 16, 32 on 8 x 8
  GPUs), and its own example (`--nodes 4 --gpus-per-node 3  # hsdp g=3, g=6`) has one;
- the goal-run table's closing sentence called it "the earlier leave-one-run-out one" under a
  column headed "grouped CV" whose figures are docs/fidelity.md's grouped-CV column;
- one GPU under ddp is plain training: the README's DDP host-overhead paragraph says so.
"""

from __future__ import annotations

import re
from pathlib import Path

from costmodel.strategy.advisor import hsdp_group_sizes
from tests._cli import run

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
FIDELITY = (ROOT / "docs" / "fidelity.md").read_text(encoding="utf-8")


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_readme_says_hsdp_groups_are_inside_a_node_or_whole_nodes():
    flat = _flat(README)
    assert "fits a node" not in flat and "fit the slice" not in flat
    assert "is either inside a node (divides its GPUs) or whole nodes (a multiple of them)" in flat
    said = re.search(r"`strategy\.advisor\.hsdp_group_sizes`, g = ([\d, ]+) on 8 x 8 GPUs", flat)
    assert said is not None
    assert [int(g) for g in said.group(1).split(", ")] == hsdp_group_sizes(64, 8)


def test_readme_hsdp_examples_list_the_groups_memory_prints():
    line = re.search(r"^ *(costmodel memory [^\n#]*--gpus-per-node 3[^\n#]*)# (hsdp g=.*)$",
                     README, re.M)  # fmt: skip
    assert line is not None
    out = run(*line.group(1).split()[1:])
    assert out.exit_code == 0, out.stderr
    printed = re.findall(r"hsdp g=(\d+)", out.stdout)
    said = re.findall(r"g=(\d+)", line.group(2))
    assert printed == said == [str(g) for g in hsdp_group_sizes(12, 3)]
    eight = run("memory", "--arch", "llama-3.1-8b", "--strategy", "all", "--nodes", "8",
                "--cluster", "dgx-h100")  # fmt: skip
    assert re.findall(r"hsdp g=(\d+)", eight.stdout) == ["2", "4", "8", "16", "32"]


def test_readme_goal_run_table_is_called_grouped_cv_as_its_figures_are():
    flat = _flat(README)
    assert "earlier leave-one-run-out" not in flat
    assert "gives each run's grouped-CV figures" in flat
    # 06a's row: the README's grouped-CV and in-sample cells are docs/fidelity.md's columns
    row = re.search(r"^\| 06a \|[^|]*\|[^|]*\|[^|]*\| \*\*([^*]+)\*\* \| ([^|]+) \|", README, re.M)
    assert row is not None
    fid = re.search(r"^\| 06a\*? \|.*\| ([^|]+) \| ([^|]+) \|$", FIDELITY, re.M)
    assert fid is not None
    in_sample, grouped = (" / ".join(c.strip().split(" / ")[:2]) for c in fid.groups())
    assert row.group(1).strip() == grouped and row.group(2).strip() == in_sample


def test_readme_says_one_gpu_under_ddp_has_no_host_overhead():
    flat = _flat(README)
    assert "engine adds it to every `ddp` step of two ranks or more" in flat
    assert "one rank is plain training, no DDP wrapper, so on one GPU every strategy ties" in flat
