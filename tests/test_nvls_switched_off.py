"""NVLS pinned where it was switched off says so, not that the hardware lacks it.

`collective --no-nvls --algorithm nvls` on DGX H100 (an NVSwitch system with NVLink SHARP) said
"NVLS needs NVLink SHARP (an NVSwitch system ...)", which the cluster is: the reason is that NVLS
was switched off (as NCCL_NVLS_ENABLE=0 does). A cluster without NVLink SHARP keeps the old reason.
"""

from __future__ import annotations

from costmodel.nccl import topology_inputs
from costmodel.nccl.availability import unavailable_reason
from tests._cli import one_line_error, run

OFF = (
    "NVLS is switched off for this cluster (as NCCL_NVLS_ENABLE=0 does), though its NVSwitch has it"
)
LACKS = "NVLS needs NVLink SHARP (an NVSwitch system with compute capability >= 9.0)"


def _reason(cc: float, nvls: bool, intra: str = "nvswitch") -> str | None:
    t = topology_inputs(
        compute_capability=cc, nodes=1, gpus_per_node=8, intra_kind=intra, nvlinks_per_gpu=18,
        nvls=nvls,
    )  # fmt: skip
    return unavailable_reason("all_reduce", "nvls", "simple", t)


def test_the_library_tells_switched_off_from_missing():
    assert _reason(9.0, nvls=True) is None
    assert _reason(9.0, nvls=False) == OFF
    assert _reason(8.0, nvls=False) == LACKS  # Ampere's NVSwitch has no NVLink SHARP
    assert _reason(8.0, nvls=True) == LACKS
    assert _reason(10.0, nvls=False) == OFF


def test_the_cli_says_it_was_switched_off():
    args = ("collective", "all-reduce", "--size", "1GB", "--algorithm", "nvls")
    line = one_line_error(run(*args, "--cluster", "dgx-h100", "--no-nvls"), "--algorithm")
    assert "nvls/simple: " + OFF in line and LACKS not in line
    line = one_line_error(run(*args, "--cluster", "dgx-a100"), "--algorithm")
    assert "nvls/simple: " + LACKS in line
