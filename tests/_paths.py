"""Where the reference data lives: bundled in the package (``costmodel/data/reference/``).

Kept as a thin alias so tests read ``NCCL_TESTS / name``; the lookup itself is
:mod:`costmodel.reference`, the one place that knows where the files are.
"""

from __future__ import annotations

from pathlib import Path

from costmodel.reference import reference_dir

ROOT = Path(__file__).resolve().parents[1]
NCCL_TESTS = reference_dir("nccl-tests")
DDP = reference_dir("ddp")
