"""QA pass 72 on the notebook API (``import costmodel as cm``): a step faster than the GPUs'
peak and a bad ``recompute_extra`` in training_cost, hardware bandwidths and FLOP/s held to
the formulas' ranges, strict flags on the public models, compare with a Scenario, a 2-D
Prediction's frame, the memory formulas' params and GPU-memory limits, whole-float ranks,
advise_strategy's empty summary and step.py's doctest."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest
from typer.testing import CliRunner

import costmodel as cm
from costmodel import cli
from costmodel.scenario import compare_summary

FAST = dict(tokens_per_step=4e6, step_time_s=1.0, ranks=64, flops_per_token=6 * 7e9)
PEAK = 989e12


# --- 1. training_cost: an MFU above 1 and recompute_extra -----------------------------------
def test_predicted_step_faster_than_peak_is_refused():
    with pytest.raises(ValueError, match=r"^step_time_s: a step of 1 s implies an MFU of 2\.65"):
        cm.training_cost(1e12, **FAST, peak_flops=PEAK)


def test_measured_step_still_refused_with_its_word():
    with pytest.raises(ValueError, match=r"^step_time_s: a measured step of 1 s implies an MFU"):
        cm.training_cost(1e12, **FAST, peak_flops=PEAK, measured=True)


@pytest.mark.parametrize("measured", [False, True])
@pytest.mark.parametrize("bad", [-0.9, math.nan, math.inf, 0.5, 2.0])
def test_recompute_extra_out_of_range_is_refused(bad, measured):
    with pytest.raises(ValueError, match=r"^recompute_extra: must be .*\[0, 1/3\]"):
        cm.training_cost(
            1e12,
            **{**FAST, "step_time_s": 10.0},
            peak_flops=PEAK,
            measured=measured,
            recompute_extra=bad,
        )


@pytest.mark.parametrize("bad", ["0.3", None, True])
def test_recompute_extra_not_a_number_names_the_field(bad):
    with pytest.raises(ValueError, match=r"^recompute_extra: expected a number"):
        cm.training_cost(1e12, **{**FAST, "step_time_s": 10.0}, recompute_extra=bad)


def test_recompute_extra_in_range_is_taken():
    c = cm.training_cost(
        1e12,
        **{**FAST, "step_time_s": 10.0},
        peak_flops=PEAK,
        measured=True,
        recompute_extra=1 / 3,
    )
    assert 0 < c.mfu < 1
    c = cm.training_cost(1e12, **{**FAST, "step_time_s": 10.0}, recompute_extra=np.float64(0.0))
    assert c.mfu is None


def test_scenario_training_cost_still_answers():
    r = cm.Scenario(arch="llama-2-7b", nodes=8, recompute="full", mfu=0.75).evaluate()
    c = r.training_cost(2e12)
    assert 0 < c.mfu <= 1.0 + 1e-9


# --- 2. hardware models: the formulas' bandwidth and FLOP/s ranges --------------------------
def _nic_cluster(bandwidth):
    c = cm.cluster("dgx-h100", nodes=2)
    nic = {**c.node.nic.model_dump(), "datasheet_bandwidth_bytes_per_s": bandwidth}
    return cm.Cluster(**{**c.model_dump(), "node": {**c.node.model_dump(), "nic": nic}})


def test_link_with_a_bandwidth_in_the_wrong_unit_is_refused():
    with pytest.raises(ValueError, match=r"datasheet_bandwidth_bytes_per_s: .*1 MB/s"):
        cm.Link(
            **{
                **cm.cluster("dgx-h100").node.nic.model_dump(),
                "datasheet_bandwidth_bytes_per_s": 50,
            }
        )
    with pytest.raises(ValueError, match=r"datasheet_bandwidth_bytes_per_s"):
        _nic_cluster(50)


def test_gpu_with_flops_in_the_wrong_unit_is_refused():
    g = cm.cluster("dgx-h100").gpu.model_dump()
    with pytest.raises(ValueError, match=r"bf16_dense_flops: .*1 GFLOP/s"):
        cm.GPU(**{**g, "bf16_dense_flops": 989})
    with pytest.raises(ValueError, match=r"memory_bandwidth_bytes_per_s: .*1 MB/s"):
        cm.GPU(**{**g, "memory_bandwidth_bytes_per_s": 3.35})


def test_real_bandwidths_still_load():
    assert _nic_cluster(1e6).node.nic.datasheet_bandwidth_bytes_per_s == 1e6
    assert _nic_cluster("400Gb/s").node.nic.datasheet_bandwidth_bytes_per_s == 50e9


def test_every_shipped_preset_loads():
    from costmodel import presets

    every = presets.names()
    assert {"dgx-h100", "ib-ndr", "h100-sxm"} <= set(every)
    for name in every:
        presets.load(name)


def test_cli_preset_folder_with_a_slow_nic_says_one_line(tmp_path, monkeypatch):
    from costmodel import presets

    text = (presets.shipped_dir() / "links" / "ib-ndr.toml").read_text()
    assert '"400Gb/s"' in text
    (tmp_path / "links").mkdir()
    (tmp_path / "links" / "ib-ndr.toml").write_text(text.replace('"400Gb/s"', '"50B/s"', 1))
    monkeypatch.setenv("COSTMODEL_PRESETS", str(tmp_path))
    r = CliRunner().invoke(
        cli.app,
        ["collective", "all_reduce", "--size", "1GB", "--cluster", "dgx-h100", "--nodes", "2"],
    )
    assert r.exit_code == 2, r.output
    err = r.stderr.strip()
    assert "\n" not in err and "datasheet_bandwidth_bytes_per_s" in err and "1 MB/s" in err


# --- 3. strict flags on the public models ---------------------------------------------------
@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda v: cm.Scenario(params=7e9, no_sync=v), "no_sync"),
        (lambda v: cm.Scenario(params=7e9, flash_attention=v), "flash_attention"),
        (lambda v: cm.Layout(strategy="ddp", gradient_as_bucket_view=v), "gradient_as_bucket_view"),
        (lambda v: cm.Layout(strategy="fsdp", reshard_after_forward=v), "reshard_after_forward"),
    ],
)
@pytest.mark.parametrize("value", ["no", "off", 1, 0, "False"])
def test_model_flags_are_real_booleans(make, field, value):
    with pytest.raises(ValueError, match=rf"{field}: expected a bool \(True, False"):
        make(value)


@pytest.mark.parametrize("value", ["no", 1])
def test_hardware_and_architecture_flags_say_the_same(value):
    node = cm.cluster("dgx-h100").node.model_dump()
    with pytest.raises(ValueError, match=r"^p2p: expected a bool \(True, False\), got"):
        cm.Node(**{**node, "p2p": value})
    from costmodel.architecture import Architecture, load_arch

    arch = load_arch("llama-2-7b").model_dump()
    with pytest.raises(ValueError, match=r"tied_embeddings: expected a bool \(True, False\)"):
        Architecture(**{**arch, "tied_embeddings": value})


def test_model_validate_strings_still_reads_text_flags():
    assert (
        cm.Scenario.model_validate_strings({"params": "7e9", "no_sync": "false"}).no_sync is False
    )


def test_model_flags_take_real_and_numpy_booleans():
    assert cm.Scenario(params=7e9, no_sync=False).no_sync is False
    assert cm.Scenario(params=7e9, flash_attention=np.bool_(False)).flash_attention is False
    assert cm.Layout(strategy="ddp", gradient_as_bucket_view=True).gradient_as_bucket_view is True


# --- 4. compare with a Scenario -------------------------------------------------------------
def test_compare_accepts_a_scenario():
    a = cm.Scenario(arch="llama-2-7b", nodes=8)
    b = cm.Scenario(arch="llama-2-7b", nodes=16)
    r = a.evaluate()
    assert r.compare(b) == r.compare(b.evaluate())
    assert compare_summary(r, b) == compare_summary(r, b.evaluate())


@pytest.mark.parametrize("other", [None, {}, "llama-2-7b", 3])
def test_compare_refuses_other_types(other):
    r = cm.Scenario(arch="llama-2-7b", nodes=8).evaluate()
    with pytest.raises(TypeError, match=r"^other: expected a ScenarioResult or a Scenario"):
        r.compare(other)
    with pytest.raises(TypeError, match=r"^b: expected a ScenarioResult or a Scenario"):
        compare_summary(r, other)


# --- 5. a 2-D Prediction's frame ------------------------------------------------------------
def test_to_frame_of_2d_sizes_is_ravelled():
    sizes = np.array([[1e6], [1e9]])
    p = cm.predict_collective("all_reduce", sizes, "dgx-h100", nodes=2)
    assert np.shape(p.time_s) == (2, 1)  # the Prediction keeps broadcasting
    f = p.to_frame()
    assert len(f) == 2
    assert list(f["message_bytes"]) == [1e6, 1e9]
    assert list(f["time_s"]) == list(np.ravel(p.time_s))


# --- 6. the memory formulas' limits ---------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: cm.training_memory(1e30), r"^params: must be a parameter count in 0\.\.1e15"),
        (lambda: cm.training_memory(np.array([1e9, 1e30])), r"^params: must be .*1e15"),
        (lambda: cm.min_ranks(1e18, 80e9), r"^params: must be .*1e15"),
        (lambda: cm.max_params(1e30), r"^memory_bytes: must be a GPU memory in 1 B\.\.16 TiB"),
        (lambda: cm.max_params(np.array([80e9, 1e30])), r"^memory_bytes: must be a GPU memory"),
        (lambda: cm.min_ranks(7e9, 1e30), r"^memory_bytes: must be a GPU memory in 1 B\.\.16 TiB"),
        (lambda: cm.max_params(0.5), r"^memory_bytes: must be a GPU memory in 1 B"),
    ],
)
def test_memory_formulas_hold_the_limits(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_memory_formulas_still_answer_in_range():
    assert cm.training_memory(30e9).total_bytes == 480e9
    assert cm.training_memory(0.0).total_bytes == 0.0
    assert cm.max_params(80e9) == 5e9
    assert cm.min_ranks(30e9, 80e9, zero_stage=3) == 6
    assert cm.max_params(2**44) > 0


# --- papercuts ------------------------------------------------------------------------------
@pytest.mark.parametrize("ranks", [16.0, np.array(16), np.int64(16), np.float64(16.0)])
def test_allreduce_time_takes_a_whole_float_rank_count(ranks):
    assert cm.allreduce_time(2**30, ranks, "dgx-h100") == cm.allreduce_time(2**30, 16, "dgx-h100")


def test_allreduce_time_still_refuses_a_fraction():
    with pytest.raises(ValueError, match=r"^ranks: "):
        cm.allreduce_time(2**30, 16.5, "dgx-h100")


def test_advise_summary_says_what_does_not_fit():
    text = cm.advise_strategy(2e12, nodes=1).summary()
    assert "none is named" not in text
    assert "no strategy fits" in text and "GB" in text


def test_step_module_doctest_passes_without_pytest_flags():
    import costmodel.strategy.step as step

    result = doctest.testmod(step, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_the_memory_formulas_params_bound_is_the_limits_tables():
    from costmodel import memory
    from costmodel._limits import LIMITS

    assert memory.MAX_PARAMS == LIMITS["params"].hi
