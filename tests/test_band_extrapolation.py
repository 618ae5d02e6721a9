"""The error band knows the node and GPU range it was measured on: the largest bundled run of each
regime (recorded by scripts/fit_corrections.py with the bands), and a prediction beyond it keeps
the band's numbers but says, on the API, the CLI and the app, that the band is extrapolated."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from costmodel import uncertainty as U
from costmodel.cli import app
from costmodel.fitted_corrections import FITTED
from costmodel.predict import predict_collective
from costmodel.presets import cluster as load_cluster
from costmodel.reference import reference_dir
from costmodel.validation.nccl_tests import read_nccl_tests
from costmodel.validation.reference_runs import RUNS

SIZE = 14e9  # the 14 GB all-reduce of a 7B model's fp16 gradients, from 1 MiB
EXTRAPOLATED = "beyond the largest measured run in this regime"


def _largest_runs_per_regime() -> dict[str, tuple[int, int]]:
    """regime -> (nodes, GPUs) of its largest bundled run, from the index of bundled runs
    (costmodel/validation/reference_runs.py) and the files' own rank counts where the index
    leaves the node count to them: nodes = ranks / GPUs per node, one node where neither is
    given (the index's rule)."""
    out: dict[str, tuple[int, int]] = {}
    for spec in RUNS:
        counts: set[tuple[int, int]] = set()
        if spec.nodes is not None and spec.gpus_per_node is not None:
            counts.add((spec.nodes, spec.gpus_per_node))
        else:
            (path,) = sorted(reference_dir("nccl-tests").glob(f"{spec.prefix}_*.txt"))
            df = read_nccl_tests(path)
            for _, r in df.groupby("run"):
                ranks = spec.ranks or int(r.ranks.iloc[0])
                g = spec.gpus_per_node or ranks // (spec.nodes or 1)
                counts.add((spec.nodes or ranks // g, g))
        for nodes, g in counts:
            c = load_cluster(spec.preset, nodes=nodes, gpus_per_node=g)
            reg = U.regime(c.fabric, c.intra_kind, nodes)
            n0, g0 = out.get(reg, (0, 0))
            out[reg] = (max(n0, nodes), max(g0, nodes * g))
    return out


def test_each_band_records_the_largest_run_of_its_regime():
    want = _largest_runs_per_regime()
    assert want["multi-node-infiniband"][0] > 1  # the regime the 100,000-node question is in
    for model, regs in FITTED.bands.items():
        assert set(regs) == set(want), model
        for reg, classes in regs.items():
            got_nodes = max(int(v["max_nodes"]) for v in classes.values())
            got_gpus = max(int(v["max_gpus"]) for v in classes.values())
            assert (got_nodes, got_gpus) == want[reg], (model, reg)
            for v in classes.values():  # each size class rests on a subset of those runs
                assert 1 <= v["max_nodes"] <= got_nodes and v["max_gpus"] <= got_gpus


def _ib_largest() -> int:
    return int(FITTED.bands["nccl"]["multi-node-infiniband"]["ge1MiB"]["max_nodes"])


def test_a_prediction_within_the_measured_range_says_nothing_of_extrapolation():
    largest = _largest_runs_per_regime()["multi-node-infiniband"][0]
    for nodes in (2, largest):
        b = predict_collective("all_reduce", SIZE, "dgx-h100", nodes=nodes).error_band
        assert b is not None and b.measured
        assert b.extrapolated == "" and EXTRAPOLATED not in b.note, nodes
        assert b.max_nodes_measured == _ib_largest()


@pytest.mark.parametrize("nodes", [lambda n: n + 1, lambda n: 100_000])
def test_a_prediction_beyond_it_keeps_the_numbers_and_says_extrapolated(nodes):
    largest = _ib_largest()
    n = nodes(largest)
    inside = predict_collective("all_reduce", SIZE, "dgx-h100", nodes=largest).error_band
    b = predict_collective("all_reduce", SIZE, "dgx-h100", nodes=n).error_band
    assert b is not None and inside is not None
    # the decision: the same regime's numbers, marked, not dropped
    assert b.measured and (b.half_width, b.lo, b.hi) == (inside.half_width, inside.lo, inside.hi)
    gpus = int(FITTED.bands["nccl"]["multi-node-infiniband"]["ge1MiB"]["max_gpus"])
    ranks = n * load_cluster("dgx-h100").gpus_per_node  # beyond the run's GPUs too: says both
    counts = f"{n:,} nodes and {ranks:,} GPUs are" if ranks > gpus else f"{n:,} nodes is"
    cell = FITTED.bands["nccl"]["multi-node-infiniband"]["ge1MiB"]  # and how many runs
    of = f"{int(cell['n_runs'])} runs from {int(cell['n_groups'])} sources"
    said = f"{counts} {EXTRAPOLATED} ({largest:,} nodes, {gpus:,} GPUs at most, over {of})"
    assert said in b.extrapolated and "extrapolated" in b.extrapolated
    assert b.extrapolated in b.note


def test_below_1_mib_the_smaller_class_range_is_named():
    small = FITTED.bands["nccl"]["multi-node-infiniband"]["lt1MiB"]
    big = FITTED.bands["nccl"]["multi-node-infiniband"]["ge1MiB"]
    n = int(small["max_nodes"]) + 1
    b = predict_collective("all_reduce", [1e3, SIZE], "dgx-h100", nodes=n).error_band
    assert b is not None
    if n > big["max_nodes"]:
        pytest.fail("the test needs a node count inside one size class and beyond the other")
    assert (
        f"{int(small['max_nodes']):,} nodes" in b.extrapolated and "below 1 MiB" in b.extrapolated
    )
    assert "from 1 MiB" not in b.extrapolated
    one = predict_collective("all_reduce", SIZE, "dgx-h100", nodes=n).error_band
    assert one is not None and one.extrapolated == ""  # the 14 GB row alone was measured there


def _cli(*args: str) -> str:
    out = CliRunner().invoke(app, list(args))
    assert out.exit_code == 0, out.output
    return out.output


def test_the_cli_says_extrapolated_beyond_the_largest_run_only():
    largest = _ib_largest()
    common = ("all_reduce", "--size", "14GB", "--cluster", "dgx-h100", "--nodes")
    assert EXTRAPOLATED not in _cli("collective", *common, str(largest))
    far = _cli("collective", *common, "100000")
    both = "100,000 nodes and 800,000 GPUs are"  # 8 GPUs per node: beyond both counts
    assert f"{both} {EXTRAPOLATED} ({largest:,} nodes" in far
    assert "±" in far  # the band's number stays
    pred = _cli("predict", "--cluster", "dgx-h100", "--nodes", "100000", "-s", "14GB")
    assert f"{both} {EXTRAPOLATED} ({largest:,} nodes" in pred


def test_the_collectives_page_caption_says_extrapolated():
    from tests.test_app import _text, assert_clean, open_page

    largest = _ib_largest()
    view = {"view": "A model on a cluster preset", "size_text": "14GB"}
    at = open_page("page_collectives.py", {**view, "nccl_nodes": str(largest + 1)})
    assert_clean(at)
    said = [_text(c.value) + " " + str(c.help) for c in at.caption if "Expected error" in c.value]
    assert said and f"extrapolated beyond {largest:,} nodes" in said[0], said
    assert EXTRAPOLATED in said[0]
    at = open_page("page_collectives.py", {**view, "nccl_nodes": str(largest)})
    said = [_text(c.value) for c in at.caption if "Expected error" in c.value]
    assert said and "extrapolated" not in said[0], said


def test_the_cluster_page_metric_help_says_extrapolated():
    from tests.test_app import assert_clean, open_page

    largest = _ib_largest()
    at = open_page("page_cluster.py", {"cl_nodes": str(largest + 1), "cl_size_text": "14GB"})
    assert_clean(at)
    (m,) = [m for m in at.metric if m.label == "Expected error"]
    assert EXTRAPOLATED in str(m.help) and m.value.startswith("±")  # the number stays
    at = open_page("page_cluster.py", {"cl_nodes": str(largest), "cl_size_text": "14GB"})
    (m,) = [m for m in at.metric if m.label == "Expected error"]
    assert "extrapolated" not in str(m.help)


@pytest.mark.parametrize(
    ("preset", "model"),
    [("dgx-h100", "nccl"), ("dgx-h100", "textbook"), ("dgx-h100", "lesson"), ("dgx-a100", "nccl")],
)
def test_a_sweep_row_flags_an_extrapolated_band_as_the_api_does(preset, model):
    """One road: a collective sweep's ``band_extrapolated`` is True exactly where
    predict_collective's band says it is extrapolated (its ``extrapolated`` note), on both
    sides of 1 MiB and of the largest measured run; ``costmodel collective --json`` carries
    the same column."""
    from costmodel.sweep import sweep

    nodes, sizes = [1, 2, 16, 17, 20, 21, 64], [2.0**10, 2.0**30]
    rows = sweep(preset=[preset], model=[model], op=["all_reduce"], nodes=nodes, size=sizes)
    assert rows["band_extrapolated"].dtype == bool and len(rows) == len(nodes) * len(sizes)
    seen = set()
    for r in rows.itertuples():
        band = predict_collective(
            "all_reduce", r.size_bytes, load_cluster(preset), nodes=r.nodes, model=model
        ).error_band
        assert band is not None
        assert r.band_extrapolated == bool(band.extrapolated), (r.nodes, r.size_bytes)
        seen.add(bool(r.band_extrapolated))
    assert seen == {True, False}  # the grid crosses the largest measured run
    said = CliRunner().invoke(
        app, ["collective", "all_reduce", "--size", "1GB", "--cluster", preset, "--nodes", "64",
              "--model", model, "--json"],
    )  # fmt: skip
    assert said.exit_code == 0, said.output
    import json

    assert json.loads(said.output)["results"][0]["band_extrapolated"] is True


def test_a_row_without_a_band_is_not_called_extrapolated():
    """A band that is unknown (a fabric no bundled run measured between nodes) is not
    extrapolated: there are no numbers to extrapolate; the row says why in ``band_note``."""
    from costmodel.sweep import sweep

    rows = sweep(preset=["gcp-a3-mega"], op=["all_reduce"], nodes=[2, 512], size=[2.0**30])
    unknown = rows[rows["error_band_pct"].isna()]
    assert len(unknown) and not unknown["band_extrapolated"].any()
    assert (unknown["band_note"] != "").all()
