"""`memory --strategy all --bucket`: the layouts that have no gradient bucket (fsdp, hsdp) are
sized without it, and the command says so, as `step --strategy all --bucket` does."""

import json

import pytest

from tests._cli import run

BASE = ("--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--nodes", "2", "--strategy", "all")
WARNING = "costmodel: warning: --bucket: not applied to fsdp and hsdp"


def _warnings(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("costmodel: warning:")]


def test_memory_all_with_a_bucket_warns_as_step_all_does():
    mem = run("memory", *BASE, "--bucket", "100MiB")
    step = run("step", *BASE, "--bucket", "100MiB")
    assert mem.exit_code == 0, mem.output
    assert step.exit_code == 0, step.output
    said = _warnings(mem)
    assert len(said) == 1 and said[0].startswith(WARNING), mem.stderr
    assert said[0] in _warnings(step)  # the one text, word for word
    assert "ddp, zero1 and zero2 use it" in said[0]
    # the table is still the answer, and the bucketed rows carry the bucket
    assert "zero1" in mem.stdout and "hsdp g=8" in mem.stdout


def test_memory_all_json_carries_the_bucket_warning_and_the_rows_say_where_it_applied():
    result = run("memory", *BASE, "--bucket", "100MiB", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert len(data["warnings"]) == 1 and data["warnings"][0].startswith("--bucket: not applied")
    caps = {r["layout"]: r["bucket_cap_bytes"] for r in data["layouts"]}
    assert caps["ddp"] == caps["zero1"] == caps["zero2"] == 100 * 2**20
    assert caps["fsdp"] is None and caps["hsdp g=8"] is None


@pytest.mark.parametrize(
    "extra",
    [(), ("--param-dtype", "bf16")],
    ids=["no-bucket", "dtype-only"],
)
def test_memory_all_without_a_bucket_warns_of_none(extra):
    result = run("memory", *BASE, *extra)
    assert result.exit_code == 0, result.output
    assert not any("--bucket" in w for w in _warnings(result)), result.stderr
