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

from tests._cli import one_line_error, run


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


@pytest.mark.parametrize("command", ["step", "scenario", "train"])
@pytest.mark.parametrize("option", [("--no-flash",), ("--flash",), ("--loss", "fused")])
def test_activation_options_on_a_bare_count_are_refused_as_memory_refuses_them(command, option):
    """--loss and --flash/--no-flash size activations alone; a bare count sizes none, so step,
    scenario and train refuse them (given at any value) in memory's words, not ignore them."""
    tail = ("--tokens", "1e12") if command == "train" else ()
    said = run(command, "--params", "7B", "--cluster", "dgx-h100", *option, *tail)
    memory = run("memory", "--params", "7B", *option)
    line = one_line_error(said, f"{option[0]}: sizes activations, which need an architecture")
    assert line == one_line_error(memory)
    # with an architecture they are taken: --no-flash keeps the s x s scores
    arch = ("--arch", "llama-2-7b", "--cluster", "dgx-h100", "--json", *tail)
    flash = json.loads(run(command, *arch).stdout)
    if option == ("--no-flash",):
        no_flash = json.loads(run(command, *arch, "--no-flash").stdout)
        key = "memory_bytes"
        assert _first(no_flash, key) > _first(flash, key)


def _first(d: object, key: str) -> float:
    if isinstance(d, dict):
        if key in d and isinstance(d[key], int | float):
            return float(d[key])
        for v in d.values():
            try:
                return _first(v, key)
            except KeyError:
                pass
    if isinstance(d, list):
        for v in d:
            try:
                return _first(v, key)
            except KeyError:
                pass
    raise KeyError(key)


@pytest.mark.parametrize("gpu", ["h100-sxm", "a100-sxm-80gb", "b200"])
def test_presets_show_and_list_write_one_gpu_s_peak_alike(gpu):
    """`presets list` said 989.5 TFLOP/s for the H100 where `presets show` said 990."""
    import re

    listed = next(
        line for line in run("presets", "list").stdout.splitlines() if line.startswith(gpu + " ")
    )
    peak = re.search(r"([\d.]+ [PT]FLOP/s) (bf16|fp16) dense", listed)
    assert peak is not None, listed
    shown = run("presets", "show", gpu).stdout
    assert re.search(rf"^{peak.group(2)}_dense_flops +{re.escape(peak.group(1))}$", shown, re.M), (
        peak.group(1),
        shown,
    )


def test_vs_params_refusal_says_the_count_as_typed():
    """`--vs params=7B,arch=llama-2-13b` said 'params: 7000000000.0 differs from ...'."""
    import costmodel as cm

    line = one_line_error(
        run(
            "scenario",
            "--params",
            "7B",
            "--cluster",
            "dgx-h100",
            "--vs",
            "params=7B,arch=llama-2-13b",
        ),  # fmt: skip
        "--vs params: 7B differs from llama-2-13b's 13,015,864,320",
    )
    assert ".0 " not in line
    with pytest.raises(ValueError, match=r"params: 7,000,000,000 differs"):
        cm.Scenario(arch="llama-2-13b", params=7e9)
