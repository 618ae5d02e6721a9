"""Where the reference data lives: ``shared/`` sits beside the repository checkout (as in CI)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
NCCL_TESTS = SHARED / "data" / "nccl-tests"
DDP = SHARED / "data" / "ddp"
LESSON = SHARED / "reference" / "lesson-data-parallelism.txt"

if not NCCL_TESTS.is_dir():  # fail loudly: these tests check the model against real data
    raise FileNotFoundError(
        f"reference data not found at {NCCL_TESTS}: shared/ must sit beside the checkout"
    )
