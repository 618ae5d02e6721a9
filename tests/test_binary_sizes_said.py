"""Sizes typed in binary prefixes are said back in them (docs/design.md, units): `collective
--size 14GiB` printed "15 GB" in its table and "fastest at 15 GB"; `predict --sizes 1GiB` "1.07
GB". The numbers are the same (the JSON keeps bytes); only the words change, and a size typed in
decimal, or a mix, stays decimal."""

from __future__ import annotations

import json

import pytest

from costmodel import units
from tests._cli import run


def _ok(*args: str) -> str:
    out = run(*args)
    assert out.exit_code == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("collective", "all_reduce", "--size", "14GiB", "--cluster", "dgx-h100", "--nodes", "8"),
        ("collective", "all_reduce", "--size", "14GiB", "--ranks", "64", "--bandwidth", "50GB/s"),
        ("collective", "all_reduce", "-s", "14GiB", "--cluster", "dgx-h100", "--nodes", "8",
         "--algorithm", "all"),
        ("predict", "--op", "all_reduce", "--cluster", "dgx-h100", "--nodes", "2", "--sizes",
         "14GiB"),
    ],
)  # fmt: skip
def test_a_binary_size_is_said_in_binary(args):
    text = _ok(*args)
    assert "14 GiB" in text, text
    assert "15 GB" not in text and "15.0 GB" not in text, text


def test_fastest_and_crossover_lines_say_binary_sizes():
    text = _ok("collective", "all_reduce", "-s", "64KiB:1GiB", "--cluster", "dgx-h100",
               "--nodes", "2", "--algorithm", "all")  # fmt: skip
    assert "fastest at 64 KiB:" in text and "fastest at 1 GiB:" in text, text
    crossings = [line for line in text.splitlines() if line.startswith("crossover:")]
    assert crossings, text
    assert all("iB and " in line for line in crossings), crossings
    assert " kB" not in text and " MB " not in text, text


@pytest.mark.parametrize(
    "sizes", [["--size", "14GB"], ["--size", "1GiB", "--size", "1GB"], ["--size", "1GiB,1GB"]]
)
def test_decimal_or_mixed_sizes_stay_decimal(sizes):
    text = _ok("collective", "all_reduce", *sizes, "--cluster", "dgx-h100", "--nodes", "2")
    assert "GiB" not in text, text


def test_the_numbers_do_not_change():
    def one(size: str) -> dict:
        out = _ok("collective", "all_reduce", "--size", size, "--cluster", "dgx-h100",
                  "--nodes", "2", "--json")  # fmt: skip
        return json.loads(out)["results"][0]

    binary, decimal = one("1GiB"), one(str(2**30))
    assert binary["size_bytes"] == decimal["size_bytes"] == 2**30
    assert binary["time_s"] == decimal["time_s"]


def test_typed_binary_needs_every_size_binary():
    assert units.typed_binary("1GiB", "8 KiB:1 MiB")
    assert not units.typed_binary("1GiB", "1GB")
    assert not units.typed_binary()
    assert not units.typed_binary(2**30)
