"""The realistic model's numbers, pinned: a change meant to make the prediction code faster must
give the same times.

``tests/data/predictions_pinned.npz`` holds times the code computed (not typed in): every
bundled run's sizes (``fit_corrections.load_runs``) under ``nccl`` and ``nccl-table``, with the
shared fitted parameters and with a cross-validation fold's (the path the refit takes, where
the kept plans do not apply), and a grid over every cluster preset, op, node count and slice
(several node counts in one call) with and without a calibration's candidate scale. Regenerate
it only for a change that is meant to move the numbers, and say so in that commit:

    PYTHONPATH=. python -m tests.test_predictions_pinned --write

The comparison allows 4 units in the last place: numpy's vectorised power and logarithm may
round differently on another CPU; any change to the model moves a time by far more.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from costmodel import presets
from costmodel.realistic import realistic_rows
from tests._paths import load_script

PINNED = Path(__file__).with_name("data") / "predictions_pinned.npz"
OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all")
SIZES = 2.0 ** np.arange(0, 36, 5)  # 1 B .. 32 GiB
NODES = (1, 2, 3, 64)  # 3 and 64: one call, one group, two node counts
SCALE = {("ring", "simple"): (0.8, 1.5), ("*", "*"): (0.9, 1.1)}


def _fold_params() -> dict[str, object]:
    """A fold's fitted parameters: a mapping that is not the shared one."""
    from costmodel.fitted_corrections import CV

    return dict(CV["21a"])


def _computed() -> dict[str, np.ndarray]:
    fit = load_script("fit_corrections")
    fold = _fold_params()
    out: dict[str, np.ndarray] = {}
    for run in fit.load_runs():
        if run.spec.busbw_only or run.spec.torch_table:
            continue
        for model in ("nccl", "nccl-table"):
            out[f"run {run.key} {model}"] = fit.predict_run(run, model)
        out[f"run {run.key} nccl fold"] = fit.predict_run(run, "nccl", fold)
    for name in presets.names("cluster"):
        cluster = presets.cluster(name)
        g = cluster.gpus_per_node
        nodes = NODES if cluster.node.nics_per_node else (1,)  # one node without a network
        m, k = np.meshgrid(SIZES, np.asarray(nodes, dtype=float), indexing="ij")
        slices = np.where(np.arange(m.size).reshape(m.shape) % 2 == 0, g, max(1, g // 2))
        for op in OPS:
            for label, kw in (
                ("table", {"corrected": False}),
                ("fitted", {}),
                ("fold", {"params": fold}),
                ("scaled", {"candidate_scale": SCALE}),
            ):
                t = realistic_rows(op, m, k, slices, cluster, **kw)[0]
                out[f"grid {name} {op} {label}"] = np.asarray(t, dtype=float)
    return out


@pytest.fixture(scope="module")
def computed() -> dict[str, np.ndarray]:
    return _computed()


def test_the_pinned_file_covers_what_is_computed(computed):
    with np.load(PINNED) as pinned:
        assert set(pinned.files) == set(computed)
    assert len(computed) > 500  # runs x models and presets x ops x variants


def test_every_time_is_the_pinned_time(computed):
    with np.load(PINNED) as pinned:
        moved = []
        for key, got in computed.items():
            want = pinned[key]
            assert got.shape == want.shape, key
            try:
                np.testing.assert_array_max_ulp(got, want, maxulp=4)
            except AssertionError:
                moved.append(key)
    assert not moved, f"{len(moved)} pinned predictions moved, e.g. {moved[:5]}"


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m tests.test_predictions_pinned --write")
    np.savez_compressed(PINNED, **_computed())
    print(f"wrote {PINNED}")
