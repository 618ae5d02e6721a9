"""A library QA pass of ``import costmodel as cm``: range words, ``with_changes``, price look-ups,
preset files, the MFU's floor and how prices are written.

Found and fixed here:

- ``cm.Scenario(..., mfu=1.5)`` said "mfu: Input should be less than or equal to 1; allowed:
  (0, 1] (got 1.5)" and ``comm_contention=-1`` "Input should be greater than or equal to 0":
  pydantic's one bound beside ours. Every bounded numeric field now says its range in the words
  of the CLI option's limit (``_limits.LIMITS``), as ``nodes`` and ``group_size`` did;
- ``Scenario.with_changes(nodes=2)`` raised a TypeError: keyword arguments are changes too;
- ``cm.prices_for_gpu("typo")`` answered ``[]``, as for a GPU nobody prices: an unknown GPU is
  refused with the GPU presets, in every unknown preset's words;
- a preset file with a bandwidth of ``"1e30GB/s"`` or a latency of ``"5s"`` said pydantic's one
  bound in SI units ("less than or equal to 100000000000000 (got 1e+39)"): the field's range in
  its unit now, and the value as the file types it;
- ``costmodel step --mfu 1e-300`` priced a step of 1.9e299 s: an MFU below 0.1%
  (``_limits.MIN_MFU``) is refused on every road; a compute time implying an MFU of 1e299 said
  the percentage in 300 digits;
- prices were written ``$3.9 per GPU-hour`` beside ``$55.04/h``: one formatter for prices per
  hour (cents, ``units.format_usd_rate``) and one for totals (``units.format_usd``), used by
  ``train``, ``scenario --vs``, ``archs`` and the step page.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import costmodel as cm
from costmodel import units
from costmodel._limits import LIMITS
from costmodel.strategy.compute import micro_batch_compute_s

from ._cli import one_line_error, run

ROOT = Path(__file__).resolve().parents[1]

# --- 1. every bounded Scenario field says its range in its limit's words -------------------------
#: Scenario's numeric fields -> values out of their range, below and above; ``None``: the field's
#: own validator words it (a GPU's power range, check_overheads)
_OUT_OF_RANGE: dict[str, tuple[object, ...]] = {
    "params": (0, 2e15),
    "zero_stage": (-1, 4),
    "group_size": (0, 2e9),
    "nodes": (0, 2_000_000),
    "gpus_per_node": (0, 2000),
    "power_limit_w": (1, 1e6),
    "local_batch": (0, 2e6),
    "accumulation": (0, 2e6),
    "sequence_length": (0, 2e8),
    "mfu": (0, 1.5, -1, float("nan"), 1e-300),
    "compute_time_s": (0, -1, 2e6, float("inf")),
    "bucket_cap_bytes": (0, 1e14),
    "comm_contention": (-1, 1.5, float("nan")),
    "cuda_context_bytes": (1e20,),
    "fragmentation": (-0.1, 1),
}

#: the limit of each field whose range is the CLI option's (the others say theirs themselves)
_LIMIT_OF = {
    "params": "params",
    "zero_stage": "zero",
    "group_size": "group_size",
    "nodes": "nodes",
    "gpus_per_node": "gpus_per_node",
    "local_batch": "local_batch",
    "accumulation": "accumulation",
    "sequence_length": "sequence_length",
    "mfu": "mfu",
    "compute_time_s": "compute_time",
    "bucket_cap_bytes": "bucket",
    "comm_contention": "contention",
    "cuda_context_bytes": "cuda_context",
    "fragmentation": "fragmentation",
}


def test_the_table_covers_every_numeric_field_of_scenario():
    """A numeric field added to Scenario must be added here, so its refusal is checked."""
    numeric = {
        name
        for name, f in cm.Scenario.model_fields.items()
        if any(t in str(f.annotation) for t in ("int", "float")) and "bool" not in str(f.annotation)
    }
    assert numeric == set(_OUT_OF_RANGE)


@pytest.mark.parametrize(
    ("field", "value"), [(f, v) for f, vs in _OUT_OF_RANGE.items() for v in vs]
)
def test_a_scenario_field_out_of_range_is_said_in_one_range_s_words(field, value):
    base: dict[str, object] = {"arch": "llama-2-7b", "cluster": "dgx-h100", "nodes": 1}
    if field == "params":
        base = {"cluster": "dgx-h100"}
    if field == "group_size":
        base["strategy"] = "hsdp"
    with pytest.raises(cm.ScenarioError) as exc:
        cm.Scenario(**{**base, field: value})
    text = str(exc.value)
    assert text.startswith(f"{field}: must be "), text
    assert "Input should" not in text and "; allowed:" not in text  # one range, once
    if field in _LIMIT_OF:
        assert f"must be {LIMITS[_LIMIT_OF[field]].rule}, got " in text, text


def test_the_cli_s_vs_says_the_option_s_range_for_a_field_pydantic_bounded():
    r = run("scenario", "--arch", "llama-2-7b", "--vs", "contention=1.5")
    line = one_line_error(r, f"--vs contention: must be {LIMITS['contention'].rule}, got '1.5'")
    assert "Input should" not in line
    r = run("scenario", "--arch", "llama-2-7b", "--vs", "bucket=0")
    one_line_error(r, f"--vs bucket: must be {LIMITS['bucket'].rule}, got ")


# --- 2. with_changes takes keyword arguments ------------------------------------------------------
def test_with_changes_takes_keywords_as_a_dict_s_entries():
    s = cm.Scenario(arch="llama-2-7b", cluster="dgx-h100", nodes=1)
    assert s.with_changes(nodes=2) == s.with_changes({"nodes": 2}) == s.with_changes("nodes=2")
    assert s.with_changes(nodes=2).nodes == 2
    both = s.with_changes("strategy=fsdp", nodes=4, bucket_cap_bytes="50MiB")
    assert (both.strategy_name, both.nodes, both.bucket_cap_bytes) == ("fsdp", 4, 50 * 2**20)
    assert s.with_changes() == s
    with pytest.raises(ValueError, match=r"^changes: nodes given both in `changes` and as a "):
        s.with_changes({"nodes": 2}, nodes=3)
    with pytest.raises(ValueError, match=r"^changes: unknown field seq_len; allowed: params"):
        s.with_changes(seq_len=8)
    with pytest.raises(TypeError, match=r"^changes: expected a dict of fields or text") as exc:
        s.with_changes(2)  # type: ignore[arg-type]
    assert "\n" not in str(exc.value)


# --- 3. prices_for_gpu refuses an unknown GPU -----------------------------------------------------
def test_prices_for_an_unknown_gpu_are_refused_with_the_gpu_presets():
    with pytest.raises(cm.presets.PresetError) as exc:
        cm.prices_for_gpu("typo")
    with pytest.raises(cm.presets.PresetError) as same:
        cm.presets.load("typo", kind="gpu", field="gpu")
    assert str(exc.value) == str(same.value)  # the words of every unknown preset
    assert str(exc.value).startswith("gpu: unknown gpu preset 'typo'; allowed: a100-sxm-40gb")
    with pytest.raises(cm.presets.PresetError, match="did you mean 'h100-sxm'"):
        cm.prices_for_gpu("H100-SXM")
    # a known GPU without a published price, and a GPU object of a name no preset has
    assert cm.prices_for_gpu("rtx-2080ti") == []
    assert "aws-p5-on-demand" in cm.prices_for_gpu("h100-sxm")
    mine = cm.cluster("dgx-h100").gpu.model_copy(update={"name": "my-gpu"})
    assert cm.prices_for_gpu(mine) == []
    assert cm.training.default_price("no-such-gpu") is None  # a cluster's GPU: no refusal


# --- 4. a preset file's quantity out of range says the field and the range -------------------------
@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (('"400Gb/s"', '"1e30GB/s"'),
         "datasheet_bandwidth_bytes_per_s: must be in [1 MB/s, 1 PB/s], got '1e30GB/s'"),
        (('"400Gb/s"', '"-50GB/s"'), "datasheet_bandwidth_bytes_per_s: must be a finite rate in "
         "B/s > 0, got '-50GB/s'; allowed: [1 MB/s, 1 PB/s]"),
        (('"400Gb/s"', '"0GB/s"'), "allowed: [1 MB/s, 1 PB/s]"),
        (('"2.7us"', '"5s"'), "latency_s: must be in [0 s, 1 s], got '5s'"),
    ],
)  # fmt: skip
def test_a_preset_file_s_quantity_out_of_range_says_its_range(tmp_path, edit, says):
    folder = tmp_path / "links"
    folder.mkdir()
    path = folder / "ib-ndr.toml"
    text = (ROOT / "presets" / "links" / "ib-ndr.toml").read_text()
    assert edit[0] in text
    path.write_text(text.replace(*edit))
    with pytest.raises(cm.presets.PresetError) as exc:
        cm.presets.load("ib-ndr", dirs=[tmp_path])
    assert says in str(exc.value) and "Input should" not in str(exc.value), str(exc.value)
    r = subprocess.run(
        [sys.executable, "-m", "costmodel", "--presets-dir", str(tmp_path), "presets", "list"],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert r.returncode == 2 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_a_preset_file_s_count_out_of_range_says_its_range(tmp_path):
    folder = tmp_path / "links"
    folder.mkdir()
    text = (ROOT / "presets" / "links" / "nvlink4.toml").read_text()
    edited = re.sub(r"(?m)^links_in_figure = 18", "links_in_figure = 0", text)
    assert edited != text
    (folder / "nvlink4.toml").write_text(edited)
    with pytest.raises(
        cm.presets.PresetError, match=r"links_in_figure: must be in \[1, 64\], got 0$"
    ):
        cm.presets.load("nvlink4", dirs=[tmp_path])


# --- 5. the MFU's floor, on every road ------------------------------------------------------------
def test_an_mfu_below_its_floor_is_refused_on_every_road():
    from costmodel._limits import MIN_MFU

    rule = LIMITS["mfu"].rule
    assert MIN_MFU == 0.001 and rule == "a model FLOP utilisation in [0.001, 1]"
    said = f"mfu: must be {rule}, got 1e-300"
    roads = [
        lambda: cm.Scenario(params="7B", mfu=1e-300),
        lambda: cm.strategy_step(arch="llama-3.1-8b", mfu=1e-300),
        lambda: cm.advise_strategy(arch="llama-3.1-8b", mfu=1e-300),
        lambda: cm.ddp_step(
            7e9, 8, bandwidth_bytes_per_s=50e9, tokens_per_gpu=4096, peak_flops=989e12, mfu=1e-300
        ),
        lambda: micro_batch_compute_s(6 * 7e9, 4096, 989e12, mfu=1e-300),
    ]
    for road in roads:
        with pytest.raises(ValueError, match=re.escape(said)):
            road()
    with pytest.raises(ValueError, match=re.escape(f"mfu: must be {rule}")):
        cm.sweep(kind="step", preset="dgx-h100", params="7B", mfu=1e-4)
    one_line_error(run("step", "--arch", "llama-2-7b", "--mfu", "1e-300"), f"--mfu: {said[5:]}")
    # the floor itself is a step, of minutes for a 7B model
    st = cm.Scenario(params="7B", mfu=MIN_MFU).strategy_step(timeline=False, band=False)
    assert 60 < st.compute_s < 3600


def test_a_tiny_compute_time_is_refused_in_readable_numbers():
    """``--compute-time 1e-300`` was refused (an MFU above the peak) with the percentage in
    300 digits."""
    line = one_line_error(
        run("step", "--arch", "llama-2-7b", "--compute-time", "1e-300"),
        "implies an MFU of 1.91e+299",
    )
    assert "(1.91e+301% of the" in line and len(line) < 400
    assert not re.search(r"\d{1,3}(,\d{3}){6,}", line)
    line = one_line_error(run("step", "--arch", "llama-2-7b", "--compute-time", "0.1"))
    assert re.search(r"\(\d{3}% of the", line), line  # a plain percentage while it reads as one


# --- 6. one formatter for prices, one for totals --------------------------------------------------
def test_the_formatters():
    assert [units.format_usd_rate(v) for v in (3.9, 98.32, 2, 14.2416, 4.858047899375)] == [
        "3.90", "98.32", "2.00", "14.2416", "4.858"
    ]  # fmt: skip
    assert units.format_usd_rate(0.001234) == "0.00123"  # under a cent: never "0.00"
    assert [units.format_usd(v) for v in (255678.4, 48.43, 3.9, 0.00778)] == [
        "255,678", "48.43", "3.90", "0.00778"
    ]  # fmt: skip


_DOLLARS = re.compile(r"\$([\d,]+(?:\.\d+)?)")


def _rate_shown(text: str) -> list[str]:
    """The dollar figures of the price lines (per GPU-hour, per hour) in ``text``."""
    found = []
    for line in text.splitlines():
        if "per GPU-hour" in line or "/h " in line:
            found += [m.group(1) for m in _DOLLARS.finditer(line) if "per GPU" in line[m.end() :]
                      or line[m.end() :].startswith("/h")]  # fmt: skip
    return found


@pytest.mark.parametrize(
    ("price", "want"),
    [
        (("--usd-per-gpu-hour", "3.9"), ["3.90"]),
        (("--price", "oci-h100-on-demand"), ["10.00", "10.00"]),
        (("--price", "aws-p5-on-demand"), ["6.88", "55.04", "6.88"]),
    ],
)
def test_train_writes_every_price_in_cents(price, want):
    r = run("train", "--params", "7B", "--tokens", "1T", *price)
    assert r.exit_code == 0, r.stderr
    said = r.stdout
    if price[0] == "--price":  # the preset's own description is cited text, not a figure of ours
        said = said.replace(cm.load_price(price[1]).description, "")
    assert _rate_shown(said) == want, r.stdout
    usd = json.loads(run("train", "--params", "7B", "--tokens", "1T", *price, "--json").stdout)
    cost = next(x for x in r.stdout.splitlines() if x.startswith("cost "))
    assert f"${units.format_usd(usd['cost_usd'])} " in cost


def test_a_short_run_s_total_is_in_dollars_and_cents():
    args = ("train", "--arch", "llama-2-7b", "--tokens", "100M", "--usd-per-gpu-hour", "3.9")
    usd = json.loads(run(*args, "--json").stdout)["cost_usd"]
    assert 0.01 <= usd < 100, usd  # a total of dollars and cents
    cost = next(x for x in run(*args).stdout.splitlines() if x.startswith("cost "))
    assert re.match(r"cost\s+\$\d+\.\d\d ", cost), cost


def test_scenario_vs_and_archs_write_prices_in_cents():
    r = run("scenario", "--params", "7B", "--nodes", "2", "--tokens", "1T",
            "--usd-per-gpu-hour", "3.9", "--vs", "nodes=4")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    row = next(x for x in r.stdout.splitlines() if x.startswith("price per GPU-hour"))
    assert row.split()[-2:] == ["$3.90", "$3.90"], row
    lines = [x for x in run("archs").stdout.splitlines() if "/GPU-h" in x]
    shown = [re.search(r"\$([\d.,]+)/GPU-h", x).group(1) for x in lines]  # type: ignore[union-attr]
    assert all(re.fullmatch(r"\d+\.\d{2,4}", s) for s in shown), shown
    assert "14.2416" in shown  # as published (AWS p6-b200: $113.9328/h over 8 GPUs)


def test_the_step_page_writes_prices_in_cents():
    from tests.test_app import _text, assert_clean, open_page

    at = open_page("page_ddp.py")
    assert_clean(at)
    at.number_input(key="ddp_usd").set_value(3.9).run()
    assert_clean(at)
    captions = [_text(c.value) for c in at.caption if "GPUs;" in _text(c.value)]
    assert len(captions) == 1 and "$3.90 per GPU-hour, given by the user" in captions[0], captions
    at.selectbox(key="ddp_price").set_value("aws-p5-on-demand").run()
    assert_clean(at)
    captions = [_text(c.value) for c in at.caption if "GPUs;" in _text(c.value)]
    assert "$55.04/h per 8-GPU instance ($6.88 per GPU-hour)" in captions[0], captions
    deltas = [str(m.proto.delta) for m in at.metric if m.label.startswith("Cost")]
    assert deltas and all("$" not in d or "$2.00" in d or "prices" in d for d in deltas)
