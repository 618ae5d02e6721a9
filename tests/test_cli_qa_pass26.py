"""A new user's QA pass: the topology formulas' counts held to the shared limits, and a
Hugging Face config.json named by what it says, the same name in the CLI and the app.

1. ``cm.hierarchical_allreduce_time``, ``cm.flat_ring_allreduce_time`` and the rest of
   :mod:`costmodel.topology` took ``nodes`` 1e12 (a time answered), ``gpus_per_node`` 4096
   (a node of the model's 1..1,024 priced) and ``nics_per_node`` 1e30 (6.25e39 B/s a GPU),
   and said 0 or NaN as "a whole number >= 1" with no upper bound, where every command and
   ``cm.cluster`` hold 1..1,000,000 nodes of 1..1,024 GPUs; a flat ring past 1e9 ranks was
   refused as ``ranks``, an input the user never gave (the CLI said ``--ranks``).
2. (below) the name of an uploaded or ``--arch`` config.json.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import costmodel as cm
from costmodel import topology as t
from costmodel._limits import LIMITS, NICS_PER_NODE
from tests._cli import one_line_error, run

NODES = LIMITS["nodes"].rule  # a whole number in 1..1,000,000
GPUS = LIMITS["gpus_per_node"].rule  # a whole number in 1..1,024
NICS = NICS_PER_NODE.rule  # a whole number in 0..1,024

#: each public function of the module with ``nodes`` and ``gpus_per_node`` as (n, g) -> call
CALLS = {
    "hierarchical_allreduce_time": lambda n, g: t.hierarchical_allreduce_time(
        1e9, n, g, 450e9, 50e9
    ),
    "hierarchical_allreduce_phases": lambda n, g: t.hierarchical_allreduce_phases(
        1e9, n, g, 450e9, 50e9
    ),
    "flat_ring_allreduce_time": lambda n, g: t.flat_ring_allreduce_time(1e9, n, g, 450e9, 8, 50e9),
    "flat_ring_bandwidth": lambda n, g: t.flat_ring_bandwidth(n, g, 450e9, 8, 50e9),
}
BAD_NODES = [0, -1, 1.5, math.nan, math.inf, -math.inf, 1_000_001, 1e12]
BAD_GPUS = [0, -2, 2.5, math.nan, math.inf, 1025, 4096, 1e12]


@pytest.mark.parametrize("name", CALLS)
@pytest.mark.parametrize("bad", BAD_NODES)
def test_nodes_out_of_range_is_refused_with_the_shared_range(name, bad):
    call = CALLS[name]
    with pytest.raises(ValueError, match=rf"^nodes: must be {re.escape(NODES)}, got "):
        call(bad, 8)
    with pytest.raises(ValueError) as err:  # an array: the bad element named, with its index
        call(np.array([2.0, bad]), 8)
    assert str(err.value).startswith(f"nodes: must be {NODES}, got "), err.value
    assert str(err.value).endswith("(element 1 of 2)"), err.value


@pytest.mark.parametrize("name", [*CALLS, "per_gpu_inter_bandwidth"])
@pytest.mark.parametrize("bad", BAD_GPUS)
def test_gpus_per_node_out_of_range_is_refused_with_the_shared_range(name, bad):
    def call(g):
        if name == "per_gpu_inter_bandwidth":
            return t.per_gpu_inter_bandwidth(8, 50e9, g)
        return CALLS[name](2, g)

    with pytest.raises(ValueError, match=rf"^gpus_per_node: must be {re.escape(GPUS)}, got "):
        call(bad)
    with pytest.raises(ValueError) as err:
        call([8, bad])
    assert str(err.value).startswith(f"gpus_per_node: must be {GPUS}, got "), err.value
    assert str(err.value).endswith("(element 1 of 2)"), err.value


@pytest.mark.parametrize("bad", [-1, 1.5, math.nan, math.inf, 1025, 1e30])
def test_nics_per_node_is_held_to_the_node_models_range(bad):
    calls = [
        lambda k: t.per_gpu_inter_bandwidth(k, 50e9, 8),
        lambda k: t.flat_ring_bandwidth(2, 8, 450e9, k, 50e9),
        lambda k: t.flat_ring_allreduce_time(1e9, 2, 8, 450e9, k, 50e9),
    ]
    for call in calls:
        with pytest.raises(ValueError, match=rf"^nics_per_node: must be {re.escape(NICS)}, got "):
            call(bad)
        with pytest.raises(ValueError) as err:
            call(np.array([8.0, bad]))
        assert str(err.value).startswith(f"nics_per_node: must be {NICS}, got "), err.value
        assert str(err.value).endswith("(element 1 of 2)"), err.value


def test_the_limits_themselves_are_answered():
    """The bounds are in range: 1,000,000 nodes, 1,024 GPUs, 1,024 or 0 NICs on one node."""
    assert t.hierarchical_allreduce_time(1e9, 1_000_000, 1024, 450e9, 50e9) > 0
    assert t.flat_ring_bandwidth(1_000_000, 8, 450e9, 1024, 50e9) == 450e9
    assert t.per_gpu_inter_bandwidth(1024, 50e9, 1024) == 50e9
    assert t.flat_ring_bandwidth(1, 8, 450e9, 0, 0.0) == 450e9
    arr = t.hierarchical_allreduce_time(
        1e9, np.array([1, 1_000_000]), np.array([1, 1024]), 450e9, 50e9
    )
    assert np.all(np.isfinite(arr))


def test_a_flat_ring_past_the_ranks_limit_names_nodes_and_gpus_per_node():
    """1,000,000 nodes of 1,024 GPUs is a Cluster the model holds, but 1.024e9 ranks in one
    ring is past every command's ranks (1..1e9): refused naming the inputs given, not
    ``ranks``."""
    for arr in (False, True):
        n = np.array([2, 1_000_000]) if arr else 1_000_000
        with pytest.raises(ValueError) as err:
            t.flat_ring_allreduce_time(1e9, n, 1024, 450e9, 8, 50e9)
        text = str(err.value)
        assert text.startswith("nodes: must be at most 976,562 with `gpus_per_node` 1024"), text
        assert "1,000,000,000 ranks" in text and "got 1000000" in text, text
        assert not text.startswith("ranks"), text
    assert t.flat_ring_allreduce_time(1e9, 976_562, 1024, 450e9, 8, 50e9) > 0


@pytest.mark.parametrize("fn", ["hierarchical_allreduce_time", "flat_ring_allreduce_time"])
def test_the_api_exports_refuse_too(fn):
    f = getattr(cm, fn)
    args = (1e9, 1e12, 8, 450e9, 50e9) if fn.startswith("hier") else (1e9, 1e12, 8, 450e9, 8, 50e9)
    with pytest.raises(
        ValueError, match=rf"^nodes: must be {re.escape(NODES)}, got 1000000000000.0$"
    ):
        f(*args)


def test_the_cli_says_the_flat_rings_limit_as_its_options(tmp_path):
    """A preset node of 1,024 GPUs on 1,000,000 nodes, priced by the textbook ring: exit 2,
    one line naming --nodes (it said ``--ranks``, an option not typed)."""
    from pathlib import Path

    src = Path(__file__).parents[1] / "presets" / "clusters" / "gb200-nvl72.toml"
    text = src.read_text(encoding="utf-8").replace('"gb200-nvl72"', '"big1024"', 1)
    text = re.sub(r"gpus_per_node = 72\b", "gpus_per_node = 1024", text)
    text = re.sub(r"hosts_per_node = 18\b", "hosts_per_node = 1", text)
    (tmp_path / "big1024.toml").write_text('preset = "cluster"\n' + text, encoding="utf-8")
    r = run(
        "--presets-dir", str(tmp_path), "collective", "all_reduce", "--cluster", "big1024",
        "--nodes", "1000000", "--model", "textbook", "--algorithm", "ring", "--size", "1GB",
    )  # fmt: skip
    line = one_line_error(r, "--nodes: must be at most 976,562 with --gpus-per-node 1024")
    assert "--ranks" not in line, line
    ok = run(
        "--presets-dir", str(tmp_path), "collective", "all_reduce", "--cluster", "big1024",
        "--nodes", "1000000", "--model", "textbook", "--algorithm", "hierarchical", "--size", "1GB",
    )  # fmt: skip
    assert ok.exit_code == 0, ok.stderr


@pytest.mark.parametrize("nodes", ["0", "1000001", "1e12"])
def test_the_cli_refuses_a_node_count_the_topology_formulas_refuse(nodes):
    r = run(
        "collective", "all_reduce", "--cluster", "dgx-h100", "--nodes", nodes,
        "--model", "textbook", "--algorithm", "hierarchical", "--size", "1GB",
    )  # fmt: skip
    one_line_error(r, f"--nodes: must be {NODES}")
