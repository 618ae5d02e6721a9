"""Package-level promises: the light import, the public names, the version."""

from __future__ import annotations

import subprocess
import sys

import pytest

import costmodel as cm

HEAVY = ("pandas", "plotly", "streamlit", "torch")


def test_import_costmodel_stays_light():
    """`import costmodel` and the formula API must not pull pandas, plotly, streamlit or torch."""
    code = (
        "import sys, costmodel as cm\n"
        "cm.allreduce_time(14e9, 64, 50e9); cm.training_memory(7e9); cm.solve_batch(local_batch=4, ranks=64, global_batch=8192)\n"
        "cm.ddp_step(7e9, 64, compute_time_s=0.4, bandwidth_bytes_per_s=50e9)\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"heavy modules imported: {out.stdout.strip()}"


@pytest.mark.parametrize("name", sorted(cm._EXPORTS))
def test_every_public_name_resolves(name):
    assert getattr(cm, name) is not None


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'allreduce_tme'"):
        cm.allreduce_tme  # noqa: B018


def test_version_matches_pyproject():
    import tomllib
    from pathlib import Path

    meta = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    assert cm.__version__ == meta["project"]["version"]


def test_cm_sweep_is_callable_whatever_was_imported_first():
    code = (
        "import costmodel.sweep, costmodel as cm\n"
        "df = cm.sweep(preset=['dgx-h100'], nodes=[1, 2], size=['1MB', '1GB'])\n"
        "print(len(df))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-800:]
    assert int(out.stdout.strip()) >= 4
