"""A fifth pass over the CLI: what earlier passes found and left.

- `predict --help` said "Over one link and --model lesson/textbook" in its --algorithm help
  (the text was collective's), but predict always prices a cluster preset;
- `--json` wrote the global batch in tokens, a count, as a float in `step` and `train`
  (`32768.0`) and as an int in `scenario` (`32768`).
(`collective --gpus-per-process 3` on 8-GPU nodes: tests/test_collective_launch_axes.py.)
"""

from __future__ import annotations

import json

import pytest

from tests._cli import run


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_predict_s_algorithm_help_speaks_of_models_not_of_one_link():
    said = _flat(run("predict", "--help").stdout)
    assert "one link" not in said.lower()
    assert "Under --model lesson/textbook: the alpha" in said  # (wrapped at its hyphen)
    assert "textbook also hierarchical" in said
    # collective, which has a one-link mode, keeps its words
    assert "Over one link and --model lesson/textbook" in _flat(run("collective", "--help").stdout)


BASE = ("--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--nodes", "1", "--json")


@pytest.mark.parametrize(
    "args",
    [
        ("step", *BASE),
        ("step", *BASE, "--strategy", "all"),
        ("train", *BASE, "--tokens", "1e12"),
        ("scenario", *BASE),
    ],
    ids=["step", "step-all", "train", "scenario"],
)
def test_tokens_per_step_is_a_whole_count_in_every_json(args):
    said = run(*args)
    assert said.exit_code == 0, said.output
    found: list[object] = []

    def walk(x: object) -> None:
        if isinstance(x, dict):
            for k, v in x.items():
                if k == "tokens_per_step":
                    found.append(v)
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(json.loads(said.stdout))
    assert found, "no tokens_per_step written"
    assert all(type(v) is int and v == 8 * 4096 for v in found), found
