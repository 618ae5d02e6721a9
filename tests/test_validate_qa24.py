"""NCCL_ALGO sets in ``calibrate`` and on the Collectives page.

1. ``calibrate`` read a recorded set (``NCCL_ALGO=Ring,Tree``, NCCL 2.24+'s
   ``allreduce:ring,tree;broadcast:ring``, ``^NVLS``) as one pinned algorithm named
   ``ring,tree`` and refused the log ("every row ran with NCCL_ALGO pinned to ring,tree ...
   no formula"). ``validate compare`` predicts such rows as NCCL's own choice among the set's
   members (``predict_collective(algorithm="ring,tree")``); calibrate now fits them that way:
   the alpha-beta line of NCCL's own choice (ring, as an unpinned run's), the cluster's model
   choosing among the set's members, a set of one name pinned to it.

Every log here is a FORMAT FIXTURE, not a measurement: its times are the uncalibrated
``nccl`` model's own predictions for the set it records (written as nccl-tests prints them),
so a fit that models the set as ``validate compare`` does reproduces them, and one that does
not, does not. No bundled log records an NCCL_ALGO set.
"""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

from costmodel.predict import predict_collective
from costmodel.validation.calibrate import (
    _group_columns,
    calibrate,
    calibrated_predictor,
    to_preset,
)
from costmodel.validation.compare import cluster_predictor, compare
from costmodel.validation.nccl_tests import parse_nccl_tests
from tests._cli import one_line_error, run

SIZES = [2**k for k in range(16, 31, 2)]  # 64 KiB to 1 GiB, 8 sizes


def _log(value: str | None, times_under: str = "auto", *, proto: str | None = None) -> str:
    """An all_reduce_perf log of one DGX H100 (8 ranks) whose NCCL lines record NCCL_ALGO
    ``value`` (and NCCL_PROTO ``proto``); its times are the nccl model's under ``times_under``
    (synthetic: see the module docstring)."""
    p = predict_collective("all_reduce", SIZES, "dgx-h100", nodes=1, algorithm=times_under)
    devices = "".join(
        f"#  Rank {r:2d} Group  0 Pid {1000 + r:6d} on     node01 device {r:2d} "
        f"[0000:{r + 1:02x}:00] NVIDIA H100 80GB HBM3\n"
        for r in range(8)
    )
    env = "".join(
        f"node01:1000:1000 [0] NCCL INFO {var} set by environment to {v}\n"
        for var, v in (("NCCL_ALGO", value), ("NCCL_PROTO", proto))
        if v
    )
    rows = ""
    for m, t in zip(SIZES, p.time_s, strict=True):
        us, algbw = t * 1e6, m / t / 1e9
        busbw = algbw * 2 * 7 / 8
        rows += (
            f"{m:12d} {m // 4:13d}     float     sum      -1 {us:8.2f} {algbw:7.2f} {busbw:7.2f}"
            f"      0 {us:8.2f} {algbw:7.2f} {busbw:7.2f}      0\n"
        )
    return (
        "# nccl-tests version 2.17.6 nccl-headers=22603 nccl-library=22603\n"
        "# Collective test starting: all_reduce_perf\n"
        "# nThread 1 nGpus 1 minBytes 65536 maxBytes 1073741824 step: 4(factor) warmup iters: 5"
        " iters: 20 agg iters: 1 validation: 1 graph: 0\n"
        "#\n# Using devices\n" + devices + env + "#\n"
        "#                                                              out-of-place"
        "                       in-place          \n"
        "#       size         count      type   redop    root     time   algbw   busbw #wrong"
        "     time   algbw   busbw #wrong\n"
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       "
        "     (us)  (GB/s)  (GB/s)       \n" + rows + "# Out of bounds values : 0 OK\n"
        "# Avg bus bandwidth    : 100 \n#\n# Collective test concluded: all_reduce_perf\n"
    )


def _rows(value, times_under="auto", **kw) -> pd.DataFrame:
    return parse_nccl_tests(_log(value, times_under, **kw))


def _fits(cal) -> list[tuple]:
    return [(f.op, f.algorithm, f.protocol, f.level, f.latency_s, f.bandwidth_bytes_per_s)
            for f in cal.fits]  # fmt: skip


# --- the alpha-beta fit: a set of several names is NCCL's own choice -------------------------
@pytest.mark.parametrize("value", ["Ring,Tree", "allreduce:ring,tree;broadcast:ring", "^NVLS"])
def test_a_set_is_fitted_as_nccls_own_choice(value):
    """Before: refused ("pinned to ring,tree", no formula). The same rows unpinned give the
    same fit: NCCL's own choice, fitted by the ring line (among a set's members here)."""
    cal = calibrate(_rows(value, "ring,tree"))
    own = calibrate(_rows(None, "ring,tree"))
    assert _fits(cal) == _fits(own)
    assert [f.algorithm for f in cal.fits] == ["ring"]
    assert cal.residuals.attrs["skipped"] == []


@pytest.mark.parametrize(
    ("value", "pinned"),
    [("Tree,", "tree"), ("tree,tree", "tree"), ("allreduce:tree,pat", "tree"),
     ("allgather:ring;allreduce:NVLS", "nvls")],
)  # fmt: skip
def test_a_set_of_one_name_is_pinned_to_it(value, pinned):
    """A set allowing one name NCCL has for the op (pat has no all_reduce kernel: NCCL
    ignores it) is that name pinned: its fit is the pinned run's."""
    cal = calibrate(_rows(value, pinned))
    assert _fits(cal) == _fits(calibrate(_rows(pinned, pinned)))
    assert [f.algorithm for f in cal.fits] == [pinned]


def test_nccls_reported_choice_groups_a_sets_rows():
    """Rows whose log has NCCL_DEBUG=TUNING (``nccl_algo``) are fitted by what NCCL chose for
    each size, under a set as under no NCCL_ALGO; a pinned value stays pinned."""
    rows = pd.DataFrame({
        "op": ["all_reduce"] * 4,
        "algo_env": ["Ring,Tree", "Ring,Tree", None, "Ring"],
        "nccl_algo": ["Tree", "Ring", "Tree", "Tree"],
    })  # fmt: skip
    assert _group_columns(rows)["algorithm"].tolist() == ["tree", "ring", "tree", "ring"]


def test_a_set_without_ring_has_no_line_and_is_said_so(tmp_path):
    """NCCL's choice among tree and NVLS is no one alpha-beta line (the ring line fits NCCL's
    own choice; predict.fitted_time_s answers a set by its members' fits only): refused on one
    line, not as a pin; beside a set with ring, it is skipped and said."""
    path = tmp_path / "tree_nvls.log"
    path.write_text(_log("Tree,NVLS", "tree,nvls"))
    said = run("calibrate", str(path), "-o", str(tmp_path / "x.toml"))
    line = one_line_error(said, "leaving NCCL the choice among tree,nvls (all_reduce)",
                          "a set without ring", "calibrate a run with NCCL_ALGO=Ring or Tree")  # fmt: skip
    assert "pinned to tree,nvls" not in line
    both = pd.concat([_rows("^ring", "^ring"), _rows("ring,tree", "ring,tree")])
    cal = calibrate(both)
    assert [f.algorithm for f in cal.fits] == ["ring"] and cal.fits[0].points == len(SIZES)
    (skip,) = cal.residuals.attrs["skipped"]
    assert skip.startswith("all_reduce/^ring: NCCL's own choice among a set without ring")


# --- with a cluster: the model chooses among the set's members, as validate compare does ------
@pytest.mark.parametrize("value", ["Ring,Tree", "allreduce:ring,tree;broadcast:ring"])
def test_the_cluster_fit_chooses_among_the_set_as_compare_does(value):
    """Rows timed as the model's ring,tree choice: fitted as that choice, the fabric terms
    reproduce them (log error ~0, the terms ~ the model's own). Before, calibrate read the set
    with normalize_algorithm and failed; fitted as unpinned (auto, which picks NVLS on an H100
    node) they are off by a quarter. ``validate compare`` with the calibration predicts the
    rows with the set and finds them where they were measured."""
    rows = _rows(value, "ring,tree")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the rows are the preset's hardware: no mismatch
        cal = calibrate(rows, cluster="dgx-h100", base="dgx-h100")
    (fabric,) = cal.fabric
    assert fabric.rms_log_error < 2e-3
    assert all(abs(v - 1) < 0.01 for v in fabric.terms.values()), fabric.terms
    unpinned = calibrate(_rows(None, "ring,tree"), cluster="dgx-h100", base="dgx-h100")
    assert unpinned.fabric[0].rms_log_error > 0.1  # what reading the set as auto would give
    compared = compare(rows, calibrated_predictor(cal), model="calibrated")
    assert compared["rel_error"].abs().max() < 0.01
    plain = compare(rows, cluster_predictor("dgx-h100"), model="nccl")
    expected = predict_collective("all_reduce", SIZES, "dgx-h100", algorithm="ring,tree")
    out = plain[plain["placement"] == "out_of_place"]
    assert out["predicted_time_s"].tolist() == pytest.approx(expected.time_s.tolist(), rel=1e-12)
    assert out["predicted_algorithm"].tolist() == expected.algorithm.tolist()
    assert compared["predicted_algorithm"].tolist() == plain["predicted_algorithm"].tolist()


def test_a_protocol_set_is_fitted_as_nccls_choice_and_compared_with_it(tmp_path):
    """``NCCL_PROTO=LL128,Simple``: NCCL's choice among them, the fit's protocol ``auto``
    (a preset refused ``ll128,simple``); ``validate compare --calibration`` predicts the rows
    with that fit (the set's members' fits, or NCCL's own choice's), not 'no fit'."""
    path = tmp_path / "proto_set.log"
    path.write_text(_log("Ring,Tree", "ring,tree", proto="LL128,Simple"))
    toml = tmp_path / "proto-set.toml"
    said = run("calibrate", str(path), "-o", str(toml))
    assert said.exit_code == 0, said.output
    assert 'protocol = "auto"' in toml.read_text() and 'algorithm = "ring"' in toml.read_text()
    csv = tmp_path / "rows.csv"
    said = run("validate", "compare", str(path), "--calibration", str(toml), "-o", str(csv))
    assert said.exit_code in (0, 1), said.output
    rows = pd.read_csv(csv)
    assert rows["predicted_time_s"].notna().all(), rows["note"].tolist()
    cal = calibrate(_rows("Ring,Tree", "ring,tree", proto="^LL"))
    assert [(f.algorithm, f.protocol) for f in cal.fits] == [("ring", "auto")]
    to_preset(cal)  # a valid preset
    one = calibrate(_rows("Ring", "ring", proto="Simple,"))
    assert [(f.algorithm, f.protocol) for f in one.fits] == [("ring", "simple")]


def test_the_cli_calibrates_a_logged_set(tmp_path):
    path = tmp_path / "ring_tree.log"
    path.write_text(_log("allreduce:ring,tree;broadcast:ring", "ring,tree"))
    toml = tmp_path / "set.toml"
    said = run("calibrate", str(path), "--cluster", "dgx-h100", "-o", str(toml))
    assert said.exit_code == 0, said.output
    text = toml.read_text()
    assert 'algorithm = "ring"' in text and "[[fabric]]" in text
    assert "costmodel: error" not in said.stderr
    # the in-sample check predicts the rows uncalibrated as validate compare does, with the set
    assert "0.0% uncalibrated" in said.stderr, said.stderr


# --- 2. the Collectives page: the NCCL_ALGO box -----------------------------------------------
def _page(query: dict):
    from tests.test_app import assert_clean, open_page

    at = open_page("page_collectives.py", {"nccl_nodes": "4", "size_text": "1GiB", **query})
    assert_clean(at)
    return at


def _metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _errors(at) -> list[str]:
    from tests.test_app import _text

    return [_text(e.value) for e in at.error]


def test_the_page_restricts_the_choice_as_the_cli_and_the_api():
    """``ring,tree`` in the box: the headline is ``predict_collective(..., algorithm=
    "ring,tree")``, the number ``collective --algorithm ring,tree`` prints, and not the
    unrestricted choice (NVLSTree at 1 GiB on 4 DGX H100 nodes)."""
    import json

    from costmodel.units import format_duration, format_rate
    from costmodel.web.page_collectives import ALGO_BOX

    api = predict_collective("all_reduce", 2**30, "dgx-h100", nodes=4, algorithm="ring,tree")
    said = run("collective", "all_reduce", "--cluster", "dgx-h100", "--nodes", "4",
               "--size", "1GiB", "--algorithm", "ring,tree", "--json")  # fmt: skip
    assert said.exit_code == 0, said.output
    (cli,) = json.loads(said.stdout)["results"]
    assert cli["time_s"] == pytest.approx(float(api.time_s), rel=1e-12)
    at = _page({"coll_algo": "ring,tree"})
    assert not at.error, _errors(at)
    assert at.text_input(key="coll_algo").label == ALGO_BOX
    shown = _metrics(at)
    assert shown["Time"] == format_duration(cli["time_s"]) == format_duration(float(api.time_s))
    assert shown["Bus bandwidth (busbw)"] == format_rate(float(api.busbw_bytes_per_s))
    assert shown["Algorithm / protocol"] == f"{api.algorithm} / {api.protocol}"
    assert cli["algorithm_used"] == api.algorithm == "ring"
    assert shown["NCCL's choice"] == f"{api.algorithm} / {api.protocol}"  # NCCL under the set
    plain = _metrics(_page({}))
    assert plain["Algorithm / protocol"].startswith("nvls_tree"), plain  # the set changes it
    assert plain["Time"] != shown["Time"]
    # the table of every algorithm marks the set's choice as the model's (the headline's)
    from costmodel.web.data_collectives import algorithms_on_cluster

    r = algorithms_on_cluster("all_reduce", "dgx-h100", 4, None, "nccl", 2**30, "ring,tree")
    at_size = r.frame[r.frame["message_bytes"] == 2**30]
    assert at_size[at_size["chosen"]]["algorithm"].tolist() == ["ring"]
    assert len(at_size) > 2  # every algorithm is still listed, pinned
    auto = algorithms_on_cluster("all_reduce", "dgx-h100", 4, None, "nccl", 2**30)
    chosen = auto.frame[auto.frame["chosen"] & (auto.frame["message_bytes"] == 2**30)]
    assert chosen["algorithm"].tolist() == ["nvls_tree"]


@pytest.mark.parametrize(("typed", "model", "api_value"),
                         [("^NVLS_Tree", "nccl", "^nvls_tree"), ("Tree", "lesson", "tree"),
                          ("Binomial_Tree", "textbook", "binomial_tree")])  # fmt: skip
def test_the_box_reads_a_set_and_a_name_as_the_api(typed, model, api_value):
    from costmodel.units import format_duration

    api = predict_collective("all_reduce", 2**30, "dgx-h100", nodes=4, algorithm=api_value,
                             model=model)  # fmt: skip
    at = _page({"coll_algo": typed, "coll_model": model})
    assert not at.error, _errors(at)
    shown = _metrics(at)
    assert shown["Time"] == format_duration(float(api.time_s))
    assert shown["Algorithm / protocol"] == f"{api.algorithm} / {api.protocol}"
    if model != "nccl":  # a lesson or textbook name is no NCCL_ALGO: NCCL's choice is its own
        own = predict_collective("all_reduce", 2**30, "dgx-h100", nodes=4)
        assert shown["NCCL's choice"] == f"{own.algorithm} / {own.protocol}"


@pytest.mark.parametrize(
    ("typed", "query", "fragments"),
    [
        ("ring,treee", {}, ["'treee' in the set 'ring,treee' is not an NCCL algorithm",
                            "allowed in a set: tree, ring, collnet_direct"]),
        ("treee", {}, ["'treee' is not a nccl all_reduce algorithm", "allowed: auto, tree, ring"]),
        ("ring,tree", {"coll_model": "textbook"},
         ["'ring,tree' is a set to choose from, but the textbook model does not choose",
          "allowed: auto, ring"]),
        ("nvls,nvls_tree", {"nccl_cluster": "dgx-a100", "nccl_nodes": "1"},
         ["'nvls,nvls_tree' with", "allowed algorithms here: auto, tree, ring"]),
    ],
)  # fmt: skip
def test_a_name_the_model_does_not_have_is_refused_in_red_naming_the_box(typed, query, fragments):
    from costmodel.web.page_collectives import ALGO_BOX

    at = _page({"coll_algo": typed, **query})
    (said,) = _errors(at)
    # the box named once, in bold (the label twice before: "Algorithms (NCCL_ALGO): Algorithms")
    assert said.startswith(f"**{ALGO_BOX}**: ") and said.count(ALGO_BOX) == 1, said
    for f in fragments:
        assert f in said, said
    assert "algorithm:" not in said and "--algorithm" not in said, said  # the box, not the API
    assert "Time" not in _metrics(at)  # no number beside a refusal


# --- 3. nccl-tests -J output as nccl-tests writes it ------------------------------------------
# tests/data/nccl_tests_synthetic.json had a layout nccl-tests never writes: one "devices" entry
# per rank at the top level, "version" "2.19.6", booleans as JSON booleans, root a number. The
# writer (src/util.cu at v2.19.6: jsonOutputInit, writeDeviceReport, jsonRankInfo, jsonBool,
# writeBenchmarkLinePreamble) puts "devices" inside "config", one entry per PROCESS (parseRankInfo
# reads the first "#  Rank" line of each process's block), "version" the file format (int 3),
# booleans as the strings "true"/"false", doubles as %lf, root as the "%6i" string. A -g 2 run
# so lists one device and ran 2 ranks: the reader, fitted to the invented layout, said 1.
def _j_document(processes: int, hosts: int, nthreads: int, ngpus: int, okay: str = "true") -> str:
    """A -J document in nccl-tests 2.19.6's layout (FORMAT FIXTURE: invented numbers)."""
    import json

    devices = [
        {"rank": p * nthreads * ngpus, "group": 0, "pid": 1000 + p,
         "hostname": f"node{p % hosts:02d}", "device": 0, "device_hex": "0000:01:00",
         "device_info": "SYNTHETIC GPU"}
        for p in range(processes)
    ]  # fmt: skip
    config = {"nthreads": nthreads, "ngpus": ngpus, "minimum_bytes": 1048576,
              "maximum_bytes": 1048576, "step_factor": 2, "warmup_iters": 1, "iterations": 20,
              "aggregated_iterations": 1, "validation": 1, "graph": 0,
              "blocking_collectives": "false", "per_iter_timing": "false", "per_iter_skip": 0,
              "parallel_init": "false", "devices": devices}  # fmt: skip
    block = {"time": 100.0, "alg_bw": 10.48576, "bus_bw": 10.48576, "nwrong": 0.0}
    return json.dumps({
        "version": 3, "start_time": "2026-12-05 02:00:00",
        "args": ["./build/all_reduce_perf", "-g", str(ngpus), "-t", str(nthreads), "-J", "o.json"],
        "env": [], "nccl_version": 22807, "config": config,
        "results": [{"size": 1048576, "count": 262144, "type": "float", "redop": "sum",
                     "root": "    -1", "out_of_place": block, "in_place": block,
                     "actual_iterations": 20, "experiment_name": ""}],
        "out_of_bounds": {"count": 0 if okay == "true" else 3, "okay": okay},
        "average_bus_bandwidth": {"bandwidth": 10.48576, "okay": "unchecked"},
        "errors": [], "end_time": "2026-12-05 02:00:01",
    }, separators=(",", ":"))  # fmt: skip


@pytest.mark.parametrize(
    ("processes", "hosts", "nthreads", "ngpus", "ranks", "nodes", "per_node"),
    [(1, 1, 1, 8, 8, 1, 8),  # all_reduce_perf -g 8: one process, one entry
     (2, 2, 2, 2, 8, 2, 4),  # mpirun -np 2 over 2 nodes, -t 2 -g 2
     (16, 2, 1, 1, 16, 2, 8)],  # one process per GPU: an entry per rank
)  # fmt: skip
def test_a_j_files_devices_are_processes_each_of_threads_times_gpus(
    processes, hosts, nthreads, ngpus, ranks, nodes, per_node
):
    df = parse_nccl_tests(_j_document(processes, hosts, nthreads, ngpus))
    assert (df["ranks"] == ranks).all() and (df["nodes"] == nodes).all(), df[["ranks", "nodes"]]
    assert (df["gpus_per_node"] == per_node).all()
    assert not df["flagged"].any()


def test_a_j_files_out_of_bounds_false_flags_its_rows():
    """``"okay": "false"`` (jsonBool writes a string) was read as not False: no row flagged."""
    df = parse_nccl_tests(_j_document(1, 1, 1, 2, okay="false"))
    assert df["flagged"].all() and df["flag_reason"].str.contains("out of bounds").all()


def test_the_bundled_json_fixture_is_in_the_layout_nccl_tests_writes():
    import json

    from tests._paths import ROOT

    data = ROOT / "tests" / "data"
    assert not (data / "nccl_tests_synthetic.json").exists()  # the invented layout, removed
    text = (data / "nccl_tests_synthetic_v3.json").read_text(encoding="utf-8")
    doc = json.loads(text)
    assert "NOT A MEASUREMENT" in doc["env"][0]  # labelled inside the layout (an env entry)
    assert list(doc)[:6] == ["version", "start_time", "args", "env", "nccl_version", "config"]
    assert doc["version"] == 3 and "devices" not in doc and len(doc["config"]["devices"]) == 1
    assert doc["config"]["ngpus"] == 2 and doc["config"]["blocking_collectives"] == "false"
    assert doc["results"][0]["root"] == "    -1" and '"time":10.240000' in text
    df = parse_nccl_tests(text)
    assert (df["ranks"] == 2).all() and (df["gpus_per_process"] == 2).all()
