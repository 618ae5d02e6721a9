"""QA pass 54: a mixture of experts' compute is calibrated on its dense stand-in.

The compute of one micro-batch is the fitted one-node step (fitted on dense models:
llm-foundry's MPT, torchtitan's Llama) less the engine's one-node communication
(``step._calibrated_micro_s``). A mixture of experts was calibrated on its own one-node step,
which gathers every expert (mixtral-8x7b: 46.7B parameters) while the fitted step prices the
FLOPs of its active ones (12.9B): the compute shrank as the experts grew, and where the
all-expert communication alone exceeded the fitted step the calibration gave up
(``step._UNCALIBRATED_NOTE``) and the step got faster with more work across that edge
(mixtral-8x7b, one DGX H100 node, fsdp: 0.591 s at 1536 tokens, 0.554 s at 2048).

Now the compute is calibrated on the MoE's dense stand-in
(``Architecture.dense_stand_in``: each MoE layer holding only the ``k`` experts a token
passes through, shared experts kept), and the MoE's step is priced with that compute and its
own all-expert communication. Checked here: the stand-in has the MoE's active parameters (but
for the router rows of the skipped experts, which every token scores), the steps of the
shipped MoE presets grow with the sequence across the old edge, the MoE's compute is the
stand-in's calibration, and a dense model's compute is the one its own calibration gives, as
before. No MoE end-to-end run checks the price (README, "Decisions and known limits").
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import pytest

import costmodel as cm
from costmodel.architecture import arch_names, load_arch
from costmodel.strategy import step as step_mod
from costmodel.strategy import strategy_step
from costmodel.strategy.compute import step_compute
from costmodel.strategy.step import _UNCALIBRATED_NOTE, _calibrated_micro_s, measured_peak_flops

MOE_PRESETS = tuple(n for n in arch_names() if load_arch(n).moe)
FAST = {"band": False, "timeline": False}


def _step(arch: str, **kw: Any) -> cm.StrategyStep:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # calibration and extrapolation warnings
        return strategy_step(arch=arch, **{**FAST, **kw})


def test_every_shipped_moe_preset_is_one() -> None:
    """The presets this file checks (a new MoE preset is checked without a change here)."""
    assert {"mixtral-8x7b", "deepseek-v3"} <= set(MOE_PRESETS)


@pytest.mark.parametrize("name", MOE_PRESETS)
def test_the_dense_stand_in_has_the_active_parameters_but_the_skipped_router_rows(
    name: str,
) -> None:
    """``experts = experts_per_token``, everything else kept (shared experts, dense layers,
    attention, embeddings). Its parameters are the MoE's active ones less the router rows of
    the ``E - k`` experts a token skips (``h`` each, plus one bias each where the router has a
    bias per expert: DeepSeek-V3's ``e_score_correction_bias``): a token scores all ``E``
    experts, the stand-in's router has ``k`` rows."""
    a = load_arch(name)
    d = a.dense_stand_in
    assert d is a.dense_stand_in  # one object: the calibration's caches key on it
    assert d.experts == a.experts_per_token and d.experts_per_token == a.experts_per_token
    assert d.shared_experts == a.shared_experts and d.dense_layers == a.dense_layers
    assert (d.layers, d.hidden, d.heads, d.kv_heads, d.vocab) == (
        a.layers,
        a.hidden,
        a.heads,
        a.kv_heads,
        a.vocab,
    )
    assert d.params == d.active_params  # every expert it holds is active
    router_bias = 1 if a.family == "deepseek-v3" else 0
    skipped_rows = (a.layers - a.dense_layers) * (a.experts - a.experts_per_token)
    assert a.active_params - d.params == skipped_rows * (a.hidden + router_bias)
    assert (a.active_params - d.params) / a.active_params < 0.003  # 0.006 % and 0.27 %
    assert d.published_params == d.params and d.name != a.name


def test_a_dense_architecture_is_its_own_stand_in() -> None:
    a = load_arch("llama-3.1-8b")
    assert a.dense_stand_in is a


@pytest.mark.parametrize(
    ("name", "cluster", "strategy", "sequences"),
    [
        # the old edges: 1536 -> 2048 on DGX H100, 1024 -> 1536 on DGX A100, 4096 -> 8192
        ("mixtral-8x7b", "dgx-h100", "fsdp", (512, 1024, 1536, 2048, 3072, 4096)),
        ("mixtral-8x7b", "dgx-a100", "fsdp", (512, 1024, 1536, 2048)),
        ("mixtral-8x7b", "alcf-polaris", "ddp", (256, 512, 1024)),
        ("deepseek-v3", "dgx-h100", "fsdp", (1024, 2048, 4096, 8192)),
    ],
)
def test_moe_steps_grow_with_the_sequence_across_the_old_edge(
    name: str, cluster: str, strategy: str, sequences: tuple[int, ...]
) -> None:
    """mixtral-8x7b on one DGX H100 node under fsdp was 0.591 s at 1536 tokens and 0.554 s at
    2048 (the shorter one uncalibrated). Now the compute and the step grow with the sequence,
    and no step is left uncalibrated."""
    steps = [_step(name, cluster=cluster, nodes=1, strategy=strategy, sequence_length=q)
             for q in sequences]  # fmt: skip
    for s in steps:
        assert _UNCALIBRATED_NOTE not in s.notes, s.notes
    for a, b in zip(steps, steps[1:], strict=False):
        assert b.compute_s > a.compute_s and b.step_time_s > a.step_time_s, (
            [s.step_time_s for s in steps],
            [s.compute_s for s in steps],
        )


def _fitted(a: Any, cluster: str, sequence_length: int) -> Any:
    """The fitted one-node compute of a micro-batch of ``a`` (as the step's ``_setup`` asks
    for it: bf16, no recomputation, micro-batch 1)."""
    gpu = cm.cluster(cluster).gpu
    return step_compute(
        a,
        gpu,
        sequence_length,
        1,
        flops_per_token=a.training_flops_per_token(sequence_length),
        peak_flops=measured_peak_flops(gpu, "bf16"),
    )


def _calibrate(ct: Any, shape: Any, cluster: str, sequence_length: int) -> float:
    """:func:`_calibrated_micro_s` of ``shape`` afresh (its cache emptied), the step's
    defaults (mixed-adam, micro-batch 1, the nccl model)."""
    step_mod._CALIBRATED.clear()
    c = cm.cluster(cluster)
    return _calibrated_micro_s(
        ct, float(shape.params), shape, c, "mixed-adam", 1, sequence_length, "nccl"
    )


@pytest.mark.parametrize("name", ("gpt2-124m", "llama-3.1-8b"))
def test_a_dense_models_compute_is_its_own_calibration_as_before(name: str) -> None:
    """The step's compute (one micro-batch, no recomputation) equals the calibration called
    with the dense architecture itself, the road every dense model took before."""
    a = load_arch(name)
    ct = _fitted(a, "dgx-h100", 2048)
    assert ct.one_node_step
    old_road = _calibrate(ct, a, "dgx-h100", 2048)
    s = _step(name, cluster="dgx-h100", nodes=2, strategy="fsdp", sequence_length=2048)
    assert s.compute_s == pytest.approx(old_road, rel=1e-12)


def test_a_moes_compute_is_its_stand_ins_calibration_where_its_own_gave_up() -> None:
    """mixtral-8x7b at 1536 tokens on DGX H100: calibrated on its own one-node step (46.7B
    gathered) the fixed point falls below the datasheet peak's time, so no compute reproduces
    the fitted step (the old road gave up there); calibrated on the stand-in (12.9B) it is a
    compute above that time, and it is the step's compute, on any strategy and node count."""
    a = load_arch("mixtral-8x7b")
    ct = _fitted(a, "dgx-h100", 1536)
    peak = measured_peak_flops(cm.cluster("dgx-h100").gpu, "bf16")
    work = a.training_flops_per_token(1536) * 1536
    assert _calibrate(ct, a, "dgx-h100", 1536) * peak < work  # the old road: no fixed point
    stand_in = _calibrate(ct, a.dense_stand_in, "dgx-h100", 1536)
    assert work < stand_in * peak and stand_in < ct.micro_s
    for strategy, nodes in (("fsdp", 1), ("ddp", 4), ("zero2", 2)):
        s = _step("mixtral-8x7b", cluster="dgx-h100", nodes=nodes, strategy=strategy,
                  sequence_length=1536)  # fmt: skip
        assert math.isclose(s.compute_s, stand_in, rel_tol=1e-12), (strategy, s.compute_s)


@pytest.mark.parametrize("strategy", ("ddp", "fsdp"))
@pytest.mark.parametrize("params", (1e6, 1e7, 3e7))
def test_a_tiny_count_below_the_edge_takes_the_peaks_compute_and_grows_across_it(
    params: float, strategy: str
) -> None:
    """Where no compute reproduces the fitted one-node step even on a dense model (a bare
    count of 30M parameters or less at short sequences on one DGX H100 node: the one-node
    collectives' latency exceeds its fitted step), the compute is the time of the GPU's dense
    peak, which the calibrated compute meets at the edge, and the answer says so. It was the
    fitted compute used as it is, longer than the calibrated one just past the edge: 10M
    parameters under fsdp, 0.458 ms at 256 tokens and 0.275 ms at 320. More sequence, micro-batch
    or recomputation now never makes the step or the compute shorter across it. The peak's time
    is of the larger of the shape's FLOPs and the count's 6N (``step.peak_floor_s``)."""
    # up to 768 tokens: since fsdp's gathers and reduce-scatters run one at a time (one NCCL
    # communicator) the one-node step's collectives are longer and 30M parameters cross the
    # edge at 640 tokens, not below 512
    seqs = (16, 64, 128, 192, 256, 320, 384, 512, 640, 768)
    kw = dict(cluster="dgx-h100", nodes=1, strategy=strategy, **FAST)

    def step(q: int, **more: Any) -> cm.StrategyStep:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return strategy_step(params, sequence_length=q, **kw, **more)

    steps = [step(q) for q in seqs]
    below = [s for s in steps if _UNCALIBRATED_NOTE in s.notes]
    assert below and len(below) < len(steps)  # the grid crosses the edge
    peak = measured_peak_flops(cm.cluster("dgx-h100").gpu, "bf16")
    for s, q in zip(steps, seqs, strict=True):
        # the peak's time for the larger of the shape's FLOPs and the count's 6N (the FLOPs a
        # given MFU of a count is of): no MFU above 1 in either definition
        shape_flops = step_mod.model_flops_per_token(params, None, q)[0]
        floor = step_mod.peak_floor_s(shape_flops, 6 * params, q, peak)
        if _UNCALIBRATED_NOTE in s.notes:
            assert s.compute_s == pytest.approx(floor, rel=1e-12)
        else:
            assert s.compute_s >= floor * (1 - 1e-12)
    for q, s in zip(seqs, steps, strict=True):
        more = [step(q, micro_batch=2), step(q, recompute="full")]
        for t in more:
            assert t.compute_s >= s.compute_s and t.step_time_s >= s.step_time_s, (q, t.notes)
    for a, b in zip(steps, steps[1:], strict=False):
        assert b.compute_s > a.compute_s and b.step_time_s > a.step_time_s, (
            [s.step_time_s for s in steps],
            [s.compute_s for s in steps],
        )
