"""NCCL_ALGO / NCCL_PROTO with a list per function (NCCL 2.24+), as vLLM and SGLang export them.

``NCCL_ALGO=allreduce:tree`` (their deterministic-inference setting) pins all_reduce to tree and
leaves every other function to NCCL. The harness refused it in the shell ("is not an NCCL_ALGO
value") and passed such a recorded value whole to the predictor, which could not read it. The
grammar is NCCL's ``parseList`` (src/graph/tuning.cc); its comment's examples are tested here.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pytest

from costmodel.nccl.names import NCCL_FUNCTIONS, nccl_list_for, parse_nccl_list
from costmodel.reference import reference_path
from costmodel.validation.runner import inherited_env, plan_sweep, refused_by_nccl
from tests._cli import one_line_error, run

VLLM = "allreduce:tree"


# --- 1. the resolver, on NCCL's own examples -------------------------------------------------
@pytest.mark.parametrize(
    ("value", "var", "expected"),
    [
        # "Enable ring and collnetdirect for all functions, then select tree and collnetdirect
        # for allreduce and ring for broadcast."
        (
            "ring,collnetdirect;allreduce:tree,collnetdirect;broadcast:ring",
            "NCCL_ALGO",
            {
                "all_reduce": "tree,collnetdirect",
                "broadcast": "ring",
                "all_gather": "ring,collnetdirect",
                "reduce_scatter": "ring,collnetdirect",
                "reduce": "ring,collnetdirect",
            },
        ),
        # "Enable LL and Simple for all functions, but everything except LL for allreduce."
        (
            "LL,Simple;allreduce:^LL",
            "NCCL_PROTO",
            {"all_reduce": "^LL", "all_gather": "LL,Simple", "broadcast": "LL,Simple"},
        ),
        # "Enable everything but LL128, but only LL128 for allreduce."
        ("^LL128;allreduce:LL128", "NCCL_PROTO", {"all_reduce": "LL128", "reduce": "^LL128"}),
        # vLLM's: all_reduce pinned, every other function NCCL's own choice
        (VLLM, "NCCL_ALGO", {"all_reduce": "tree", "all_gather": None, "reduce_scatter": None}),
        # a plain value applies to every function, as written
        ("Tree", "NCCL_ALGO", {"all_reduce": "Tree", "broadcast": "Tree"}),
        # prefixes are case-insensitive; a later mapping resets the function's whole list
        ("AllReduce:Tree;ALLREDUCE:Ring", "NCCL_ALGO", {"all_reduce": "Ring", "reduce": None}),
        # '^' excluding nothing: every name enabled, NCCL's own choice
        ("ring;allgather:^", "NCCL_ALGO", {"all_gather": None, "all_reduce": "ring"}),
    ],
)
def test_the_list_nccl_applies_to_each_op(value, var, expected):
    for op, applied in expected.items():
        assert nccl_list_for(op, value, var) == applied, op


def test_every_function_and_the_peer_to_peer_ops():
    """Each collective maps to its ncclFuncStr name; all_to_all and sendrecv are no function
    of NCCL's table (peer-to-peer): neither variable applies, yet the value is still checked."""
    assert NCCL_FUNCTIONS == {
        "broadcast": "broadcast",
        "reduce": "reduce",
        "all_gather": "allgather",
        "reduce_scatter": "reducescatter",
        "all_reduce": "allreduce",
    }
    for op, function in NCCL_FUNCTIONS.items():
        assert nccl_list_for(op, f"ring;{function}:tree") == "tree"
        others = [o for o in NCCL_FUNCTIONS if o != op]
        assert {nccl_list_for(o, f"{function}:pat") for o in others} == {None}
    for op in ("all_to_all", "sendrecv"):
        assert nccl_list_for(op, "ring;allreduce:tree") is None
        with pytest.raises(ValueError, match="'rings' is not a name NCCL knows"):
            nccl_list_for(op, "rings")


@pytest.mark.parametrize("missing", [None, "", "  ", math.nan, float("nan")])
def test_nothing_recorded_is_nccls_choice(missing):
    assert nccl_list_for("all_reduce", missing) is None


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("allreduce:treee", "'treee' is not a name NCCL knows"),
        ("allredux:tree", "'allredux' is no NCCL function"),
        ("allreduce:tree;ring", "only the first list may lack a function: 'ring'"),
        ("all_reduce:tree", "'all_reduce' is no NCCL function"),
        (";", "it names nothing"),
        ("allreduce:,", "enables nothing"),
    ],
)
def test_what_nccl_refuses_is_refused_on_one_line(value, why):
    with pytest.raises(ValueError) as info:
        parse_nccl_list(value)
    said = str(info.value)
    assert "\n" not in said
    assert said.startswith(f"NCCL_ALGO: {value!r} is not an NCCL_ALGO value ("), said
    assert why in said.split("; allowed: ")[0], said
    assert "allowed: collnetchain, collnetdirect, nvls, nvlstree, pat, ring, tree" in said
    assert said.endswith("functions: broadcast, reduce, allgather, reducescatter, allreduce)")
    with pytest.raises(ValueError, match="allowed: ll, ll128, simple"):
        parse_nccl_list("allreduce:LL256", "NCCL_PROTO")


def test_nccl_refuses_only_the_op_its_list_cannot_run():
    """Tree has no all_gather kernel: a per-function value that pins it for all_gather leaves
    that run out of the sweep, and runs the others with their own list."""
    assert refused_by_nccl("all_gather", VLLM, None) is None
    assert refused_by_nccl("all_gather", "ring;allgather:tree", None) == (
        "NCCL has no tree for all_gather (allowed: ring, nvls, collnet_direct, pat)"
    )
    specs = plan_sweep(["all_reduce", "all_gather"], algos=["ring;allgather:tree"])
    assert [s.op for s in specs] == ["all_reduce"]
    assert refused_by_nccl("all_reduce", "nvls", "allreduce:LL") is not None
    with pytest.raises(ValueError, match=r"^algos: 'allreduce:tre' is not an NCCL_ALGO value"):
        plan_sweep(["all_reduce"], algos=["allreduce:tre"])


# --- 2. the sweep takes it from the shell ----------------------------------------------------
def _sweep(tmp_path: Path, *extra: str):
    """``validate nccl-tests run`` of fake all_reduce_perf / all_gather_perf that print bundled
    13a (one process driving 4 H100; an all_reduce log: its rows are read as the op it names)."""
    build = tmp_path / "build"
    build.mkdir(parents=True, exist_ok=True)
    for op in ("all_reduce", "all_gather"):
        binary = build / f"{op}_perf"
        binary.write_text(f"#!/bin/sh\ncat '{reference_path('13a')}'\n")
        binary.chmod(0o755)
    out = tmp_path / "run"
    return out, run(
        "validate", "nccl-tests", "run", "-o", str(out), "--build-dir", str(build),
        "--gpus", "4", "--no-progress", *extra,
    )  # fmt: skip


def test_a_per_function_nccl_algo_in_the_shell_runs_and_is_recorded(tmp_path, monkeypatch):
    """``export NCCL_ALGO=allreduce:tree`` (vLLM's) was refused before anything ran. The sweep
    now takes it as its value, every run inherits it verbatim, and ``validate compare``
    predicts the all_reduce rows pinned to tree."""
    monkeypatch.setenv("NCCL_ALGO", VLLM)
    monkeypatch.delenv("NCCL_PROTO", raising=False)
    assert inherited_env(None, None)[0] == [VLLM]
    out, said = _sweep(tmp_path, "--ops", "all_reduce,all_gather", "--dry-run")
    assert said.exit_code == 0, said.output
    lines = said.stdout.splitlines()
    assert len(lines) == 2 and all(x.startswith(f"NCCL_ALGO={VLLM} ") for x in lines), lines
    assert f"NCCL_ALGO={VLLM} is set in this environment" in said.stderr

    out, said = _sweep(tmp_path)
    assert said.exit_code == 0, said.output
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert {r["algo_env"] for r in rows} == {VLLM}
    (log,) = (out / "logs").glob("*.log")
    assert f"# costmodel runner env: NCCL_ALGO={VLLM}" in log.read_text()
    compared = run("validate", "compare", str(out / "results.jsonl"), "--json")
    assert compared.exit_code in (0, 1), compared.output
    assert {s["algorithm"] for s in json.loads(compared.stdout)["summary"]} == {"tree"}

    # a name or function NCCL does not know: one line naming the variable, nothing run
    for bad, why in (("allreduce:treee", "'treee'"), ("allredux:tree", "'allredux'")):
        monkeypatch.setenv("NCCL_ALGO", bad)
        out, said = _sweep(tmp_path / bad.replace(":", "_"))
        one_line_error(
            said, f"NCCL_ALGO: '{bad}', set in this environment", why, "allowed: collnetchain"
        )
        assert not out.exists()


# --- 3. compare reads what NCCL applied to each row's op ------------------------------------
def _rows(tmp_path: Path, name: str, algo: str | None) -> Path:
    """1 GiB all_reduce and all_gather rows of one DGX H100 (8 ranks), NCCL_ALGO ``algo``."""
    base = {"ranks": 8, "nodes": 1, "gpus_per_node": 8, "device": "NVIDIA H100 80GB HBM3",
            "kind": "collective", "size_bytes": 2**30, "placement": "out_of_place",
            "time_s": 5e-3, "flagged": False, "algo_env": algo}  # fmt: skip
    path = tmp_path / f"{name}.jsonl"
    path.write_text(
        "".join(json.dumps({**base, "op": op}) + "\n" for op in ("all_reduce", "all_gather"))
    )
    return path


def _predicted(tmp_path: Path, name: str, algo: str | None) -> dict[str, float]:
    import pandas as pd

    csv = tmp_path / f"{name}.csv"
    said = run("validate", "compare", str(_rows(tmp_path, name, algo)), "--cluster", "dgx-h100",
               "-o", str(csv))  # fmt: skip
    assert said.exit_code in (0, 1), said.output
    rows = pd.read_csv(csv)
    return dict(zip(rows["op"], rows["predicted_time_s"], strict=True))


def test_compare_pins_all_reduce_and_leaves_all_gather_to_nccl(tmp_path):
    """Rows recording ``allreduce:tree`` went whole to the predictor, which could not read it:
    neither row was predicted. all_reduce is now predicted as with NCCL_ALGO=Tree and
    all_gather as with nothing set."""
    per_function = _predicted(tmp_path, "vllm", VLLM)
    pinned = _predicted(tmp_path, "tree", "Tree")
    own = _predicted(tmp_path, "own", None)
    assert per_function["all_reduce"] == pinned["all_reduce"]
    assert per_function["all_gather"] == own["all_gather"]
    assert per_function["all_reduce"] != own["all_reduce"]  # tree is not NCCL's pick here
    # a value NCCL would refuse: said on its rows, which are not predicted; the others are
    import pandas as pd

    path = _rows(tmp_path, "bad", "allreduce:treee")
    good = _rows(tmp_path, "good", None).read_text()
    path.write_text(path.read_text() + good)
    csv = tmp_path / "bad.csv"
    said = run("validate", "compare", str(path), "--cluster", "dgx-h100", "-o", str(csv))
    assert said.exit_code in (0, 1), said.output
    rows = pd.read_csv(csv)
    bad = rows[rows["algo_env"].notna()]
    assert len(bad) == 2 and bad["predicted_time_s"].isna().all(), rows
    assert all("'treee' is not a name NCCL knows" in n for n in bad["note"]), bad["note"]
    assert rows[rows["algo_env"].isna()]["predicted_time_s"].notna().all(), rows
    assert "'treee'" in said.stderr  # the rows left out are named


def test_calibrate_and_its_band_read_the_per_function_value():
    """calibrate groups rows by what NCCL applied to their op (tree for all_reduce, ring, its
    default, for all_gather under allreduce:tree)."""
    import pandas as pd

    from costmodel.validation.calibrate import _group_columns

    rows = pd.DataFrame({"op": ["all_reduce", "all_gather"], "algo_env": [VLLM, VLLM]})
    grouped = _group_columns(rows)
    plain = _group_columns(pd.DataFrame({"op": ["all_reduce", "all_gather"],
                                         "algo_env": ["Tree", None]}))  # fmt: skip
    assert grouped["algorithm"].tolist() == plain["algorithm"].tolist()
    with pytest.raises(ValueError, match=r"^algo_env: NCCL_ALGO: 'allredux:tree' is not"):
        _group_columns(pd.DataFrame({"op": ["all_reduce"], "algo_env": ["allredux:tree"]}))


# --- 4. a log whose NCCL lines record it: the CLI and the Validate page ----------------------
def _log(tmp_path: Path, value: str | None) -> Path:
    """Bundled 13a (all_reduce, 4 H100 of one node), NCCL's INFO line for NCCL_ALGO after its
    device list as NCCL prints it."""
    lines = reference_path("13a").read_text().splitlines()
    seps = [i for i, line in enumerate(lines) if line.startswith("# ---")]
    out: list[str] = []
    for line in lines[seps[1] + 1 :]:
        out.append(line)
        if line.startswith("#  Rank  3") and value:
            out.append(f"node01:1:1 [0] NCCL INFO NCCL_ALGO set by environment to {value}")
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "h100_allreduce.log"
    path.write_text("\n".join(out) + "\n")
    return path


def test_the_validate_page_reads_a_logged_per_function_value(tmp_path, monkeypatch):
    """A log whose NCCL lines say ``NCCL_ALGO set by environment to allreduce:tree`` is
    predicted pinned to tree, by ``validate compare`` and on the Validate page alike; one that
    pins only all_gather leaves this all_reduce log to NCCL's choice."""
    import pandas as pd

    from tests.test_app_qa21 import _assert_same, _cli, _page

    algorithms = {}
    for name, value in (("vllm", VLLM), ("gather", "allgather:ring"), ("own", None)):
        path = _log(tmp_path / name, value)
        cli_said = _cli(path, tmp_path / name)
        algorithms[name] = {s["algorithm"] for s in cli_said.json["summary"]}
        if name == "vllm":
            page = _page(monkeypatch, path.name, path.read_bytes())
            _assert_same(page, cli_said)
            rows = pd.read_csv(io.StringIO(page.csvs["comparison.csv"]))
            assert set(rows["algorithm"].dropna()) == {"tree"}, rows
    assert algorithms["vllm"] == {"tree"}
    assert algorithms["gather"] == algorithms["own"] != {"tree"}
