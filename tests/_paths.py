"""Where the reference data lives: bundled in the package (``costmodel/data/reference/``).

Kept as a thin alias so tests read ``NCCL_TESTS / name``; the lookup itself is
:mod:`costmodel.reference`, the one place that knows where the files are.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from costmodel.reference import reference_dir

ROOT = Path(__file__).resolve().parents[1]
NCCL_TESTS = reference_dir("nccl-tests")
DDP = reference_dir("ddp")


def load_script(name: str) -> ModuleType:
    """``scripts/<name>.py`` as a module, executed once per test session and kept in
    ``sys.modules[name]`` (the fit scripts are not a package; their dataclasses look their
    module up by name)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
