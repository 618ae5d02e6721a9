r"""PyTorch's own DDP benchmark (bundled as ``costmodel/data/reference/ddp/14_*``): the models'
tensor lists, the DGX-1 all-reduce it ran on, and the DDP step of one of its rows.

The benchmark (pytorch/pytorch ``benchmarks/distributed/ddp``, V100 DGX-1, PyTorch 1.4) times
torchvision ResNet/ResNeXt training steps on 1-16 GPUs. What the code needs to predict those
rows lives here, in one place, for both readers: the shape check of the DDP step model
(``tests/test_ddp.py``) and the fit of DDP's per-step overhead (``scripts/fit_ddp_overhead.py``).
The file itself is read by :func:`costmodel.reference.ddp_benchmark_file` and
:func:`costmodel.reference.parse_ddp_benchmark`.

>>> sum(MODELS["resnet50"][0]) == MODELS["resnet50"][1]
True
>>> round(float(dgx1_allreduce_time_fn(8)(np.array([100e6]))[0]) * 1e3, 3)    # 100 MB over 8 V100s [ms]
1.223
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import collectives

MiB = 2**20

GPUS: tuple[int, ...] = (1, 2, 4, 8, 16)
"""The GPU counts of the benchmark's DDP rows (1-2 DGX-1 machines)."""


def torchvision_param_counts(
    blocks: list[int], groups: int = 1, width_per_group: int = 64
) -> list[int]:
    """Parameter tensors of torchvision's Bottleneck ResNet/ResNeXt, in registration order.

    Follows torchvision/models/resnet.py: conv1 7x7 + bn1; per stage, Bottleneck blocks of
    conv1 1x1, bn1, conv2 3x3 (grouped), bn2, conv3 1x1, bn3, and a downsample 1x1 conv + bn on
    the first block; fc 2048 x 1000 + bias. Convolutions have no bias; a BatchNorm has a weight
    and a bias. The totals match torchvision's published counts (:data:`MODELS`).

    >>> len(torchvision_param_counts([3, 4, 6, 3]))      # ResNet-50's 161 parameter tensors
    161
    """
    counts = [3 * 64 * 7 * 7, 64, 64]
    inplanes = 64
    for stage, n_blocks in enumerate(blocks):
        planes = 64 * 2**stage
        width = int(planes * (width_per_group / 64.0)) * groups
        for b in range(n_blocks):
            counts += [inplanes * width, width, width]
            counts += [width // groups * width * 9, width, width]
            counts += [width * planes * 4, planes * 4, planes * 4]
            if b == 0:
                counts += [inplanes * planes * 4, planes * 4, planes * 4]
            inplanes = planes * 4
    return counts + [2048 * 1000, 1000]


MODELS: dict[str, tuple[list[int], int]] = {
    "resnet50": (torchvision_param_counts([3, 4, 6, 3]), 25_557_032),
    "resnet101": (torchvision_param_counts([3, 4, 23, 3]), 44_549_160),
    "resnext50_32x4d": (torchvision_param_counts([3, 4, 6, 3], 32, 4), 25_028_904),
    "resnext101_32x8d": (torchvision_param_counts([3, 4, 23, 3], 32, 8), 88_791_336),
}
"""The benchmark's models: (tensor list in registration order, published parameter count).
The counts are torchvision's model docs ("num_params" of the IMAGENET1K_V1 weights)."""

# DGX-1 (V100 SXM2): NVLink2, 6 links x 25 GB/s per direction = 150 GB/s per GPU per direction
# (NVIDIA Tesla V100 datasheet: "NVLink 300 GB/s", bidirectional). Across the 2 machines, 4x
# 100 Gb/s InfiniBand per machine (the benchmark's text) = 50 GB/s per node, which bounds a flat
# ring over both nodes (DESIGN.md 3.2).
NVLINK_BYTES_PER_S = 150e9
NODE_IB_BYTES_PER_S = 4 * 100e9 / 8
# NCCL's Ring/Simple latency (docs/nccl-model.md sections 1.2, 1.5, 1.6, from tuning.cc):
# base 8.4 us, + 3.4 us per NVLink step, + 14 us per network step (2 (nodes-1) of the 2 (N-1)
# steps), x 1.9 on multi-node Volta ("plateau effect").
BASE_LAT_S, NVLINK_STEP_S, NET_STEP_S, VOLTA_MULTINODE = 8.4e-6, 3.4e-6, 14e-6, 1.9


def dgx1_allreduce_time_fn(ranks: int) -> Callable[[np.ndarray], np.ndarray]:
    """Textbook ring on DGX-1 V100 with NCCL's latency constants; 8 GPUs per machine.

    Returns ``f(bucket_bytes) -> seconds`` for :func:`costmodel.ddp.ddp_step`.
    """
    if ranks == 1:
        return lambda b: np.zeros_like(b)  # one rank sends nothing
    nodes = (ranks + 7) // 8
    steps = 2 * (ranks - 1)
    net_steps = 2 * (nodes - 1)
    lat = BASE_LAT_S + (steps - net_steps) * NVLINK_STEP_S + net_steps * NET_STEP_S
    if nodes > 1:
        lat *= VOLTA_MULTINODE
    bw = NVLINK_BYTES_PER_S if nodes == 1 else min(NVLINK_BYTES_PER_S, NODE_IB_BYTES_PER_S)
    return lambda b: np.asarray(lat + collectives.allreduce_time(b, ranks, bw))


def predict_step_s(
    model: str, ranks: int, compute_s: float, cap_bytes: float, contention: float
) -> float:
    """The DDP step model's time for one benchmark row [s].

    :func:`costmodel.ddp.ddp_step` with the row's setting: the model's fp32 gradients
    (4 B/element), PyTorch 1.4's bucketing (the small 1 MiB bucket reduced last), the DGX-1 ring
    (:func:`dgx1_allreduce_time_fn`), ``compute_s`` the measured one-GPU step without DDP, and
    overlap contention ``contention``; no per-step host overhead (that is what
    ``scripts/fit_ddp_overhead.py`` fits on top of this).
    """
    from .ddp import ddp_step

    counts, _ = MODELS[model]
    return ddp_step(
        None,
        ranks,
        compute_time_s=compute_s,
        gradient_bytes_per_param=4,  # fp32 training
        bucket_cap_bytes=cap_bytes,
        first_bucket_bytes=MiB,
        small_bucket_last=True,  # PyTorch 1.4
        allreduce_time_fn=dgx1_allreduce_time_fn(ranks),
        layer_param_counts=counts,
        comm_contention=contention,
        timeline=False,
    ).step_time_s
