"""One table of which collective algorithm exists for which op, under every model and surface.

The textbook model accepted ``hierarchical`` for every op in its check and refused it later in
other words ("is an all-reduce algorithm; allowed for 'broadcast': chain, binomial_tree", no
``auto``, no alias), its allowed lists named ``hierarchical`` for broadcast and all-to-all; the
lesson and textbook models refused reduce-scatter's ``pairwise`` that the formulas and a raw-link
sweep accepted (and echoed as ``pairwise``, not ``ring``); ``--algorithm all`` listed
``hierarchical`` on a cluster but not in a preset sweep, and NCCL's algorithms an op does not
have ("pat" for all-reduce) as unavailable; ``collective all -a tree`` gave rows with no reason.

Now :func:`costmodel.models.algorithms` (with :func:`~costmodel.models.algorithm_aliases`) is
the table, and every surface answers from it: a name in it (or an alias of one, any case) is
answered by its canonical name with the same number everywhere; any other name is refused with
one message naming the field and the op's allowed list, the same on the API
(``predict_collective``, ``cm.collective_time``), the CLI (``--algorithm``, exit 2, one line) and
the sweeps; ``all`` lists exactly the table. This file walks op x model x algorithm through them.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest
from typer.testing import CliRunner

import costmodel as cm
from costmodel import cli, collectives, models, sweep, tables
from costmodel.predict import predict_all_algorithms, predict_collective

ROOT = Path(__file__).resolve().parents[1]
OPS = tables.OPS
CLUSTER, NODES, SIZE = "dgx-h100", 2, 2**28  # 2 nodes: hierarchical differs from the flat ring
LINK_RANKS, LINK_BW = 8, 50e9
#: the four names a cluster surface takes (calibrated needs a calibration preset: see below)
CLUSTER_MODELS = ("lesson", "textbook", "nccl", "nccl-table")
#: every name any model has for any op, every alias, spellings and one no model has
NAMES = tuple(
    dict.fromkeys(
        [
            "auto",
            *(a for m in CLUSTER_MODELS for op in OPS for a in models.algorithms(m, op)),
            *(a for m in CLUSTER_MODELS for op in OPS for a in models.algorithm_aliases(m, op)),
            "RING",
            "NVLSTree",
            "Binomial-Tree",
            "spiral",
        ]
    )
)


def _key(name: str) -> str:
    """A name as the models read it: case, ``-``, ``_`` and spaces ignored."""
    return re.sub(r"[-_ ]", "", name.lower())


def expected(model: str, op: str, name: str, *, link: bool = False) -> str | None:
    """What the table says ``name`` is for ``(model, op)``: its canonical name (``auto`` for
    auto), or None where it is no algorithm of the op. Written from the table's two lists,
    not from :func:`models.check_algorithm`, which is what is tested."""
    names = models.algorithms(model, op, link=link)
    aliases = models.algorithm_aliases(model, op)
    for n in ("auto", *names):
        if _key(n) == _key(name):
            return n
    for a, canonical in aliases.items():
        if _key(a) == _key(name):
            return canonical
    return None


def _tail(message: str, said_by_cli: bool = False) -> str:
    """A refusal after its field name (``algorithm: 'x' ...``); ``said_by_cli``: as the CLI
    says it, the fields the rest marks (`` `nodes` ``) as the collective command's options
    (cli._common.cli_words; it writes the field in front as ``--algorithm``)."""
    from costmodel.cli._common import cli_words, command_options
    from costmodel.cli.comm import collective

    tail = message.split("algorithm", 1)[1].lstrip(":= ")
    return cli_words(tail, command_options(collective)) if said_by_cli else tail


def _cli(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(cli.app, list(args))
    return res.exit_code, res.stdout, res.stderr


def _one_line_refusal(code: int, out: str, err: str) -> str:
    """The one line of a refusal (exit 2, nothing on stdout), without the program's prefix."""
    assert code == 2, (code, out, err)
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("costmodel: error: --algorithm"), err
    return lines[0].removeprefix("costmodel: error: ")


# --- the table itself ------------------------------------------------------------------------
def test_the_table_per_model_and_op():
    """Written out from its sources: the alpha-beta rows (DESIGN 3.1), the two-level all-reduce
    for the textbook model on a cluster only, and NCCL's tuning table (tuning.cc l.294-304)."""
    for op in OPS:
        assert models.algorithms("lesson", op) == collectives.ALGORITHMS[op]
        assert models.algorithms("textbook", op, link=True) == collectives.ALGORITHMS[op]
        assert models.algorithms("lesson", op, link=True) == collectives.ALGORITHMS[op]
        extra = ("hierarchical", "hierarchical_pipelined") if op == "all_reduce" else ()
        assert models.algorithms("textbook", op) == collectives.ALGORITHMS[op] + extra
        nccl = ("p2p",) if op == "all_to_all" else tables.NCCL_OP_ALGORITHMS[op]
        for m in ("nccl", "nccl-table", "calibrated"):
            assert models.algorithms(m, op) == nccl
    assert "pat" not in models.algorithms("nccl", "all_reduce")
    assert models.algorithms("nccl", "broadcast") == ("ring",)
    with pytest.raises(ValueError, match="model: 'nccl' needs a cluster"):
        models.algorithms("nccl", "all_reduce", link=True)


def test_aliases_per_model_and_op():
    assert models.algorithm_aliases("lesson", "reduce_scatter") == {"pairwise": "ring"}
    for m in ("lesson", "textbook"):
        assert models.algorithm_aliases(m, "broadcast") == {"ring": "chain"}
        assert models.algorithm_aliases(m, "reduce") == {"ring": "chain"}
        assert models.algorithm_aliases(m, "all_to_all") == {"ring": "pairwise"}
        assert models.algorithm_aliases(m, "all_reduce") == {}
    for op in OPS:  # NCCL_ALGO=CollNet is CollNetDirect, where the op has it
        want = (
            {"collnet": "collnet_direct"}
            if op in ("all_reduce", "reduce_scatter", "all_gather")
            else {}
        )
        assert models.algorithm_aliases("nccl", op) == want
        # an alias never shadows a canonical name of the same op
        for m in CLUSTER_MODELS:
            assert not set(models.algorithm_aliases(m, op)) & set(models.algorithms(m, op))


@pytest.mark.parametrize("model", [*CLUSTER_MODELS, "calibrated"])
@pytest.mark.parametrize("op", OPS)
def test_check_algorithm_is_the_table(model, op):
    """Every name: the canonical name the table gives it, or the one message ending with the
    op's allowed list (auto, the names, the aliases)."""
    allowed = models.allowed_algorithms_text(model, op)
    assert allowed.startswith("auto, " + ", ".join(models.algorithms(model, op)))
    for name in NAMES:
        want = expected(model, op, name)
        if want is not None:
            assert models.check_algorithm(model, op, name) == want
            continue
        with pytest.raises(ValueError) as exc:
            models.check_algorithm(model, op, name)
        msg = str(exc.value)
        assert msg.startswith(f"algorithm: {name.lower()!r} is not a {model} {op} algorithm")
        assert msg.endswith(f"; allowed: {allowed}")


def test_a_hierarchical_name_for_another_op_says_where_it_is():
    with pytest.raises(ValueError) as exc:
        models.check_algorithm("textbook", "all_to_all", "hierarchical")
    assert str(exc.value) == (
        "algorithm: 'hierarchical' is not a textbook all_to_all algorithm (the model has it for "
        "all_reduce); allowed: auto, pairwise; ring (alias of pairwise)"
    )
    with pytest.raises(
        ValueError, match=r"\(it needs a cluster|has it for all_reduce on a cluster"
    ):
        models.check_algorithm("textbook", "all_reduce", "hierarchical", link=True)


# --- op x model x algorithm on a cluster: API, cm.collective_time, sweep, CLI ----------------
@cache
def _api(model: str, op: str, name: str) -> tuple[str, object]:
    """("ok", Prediction) or ("refused", message) of predict_collective."""
    try:
        return "ok", predict_collective(op, SIZE, CLUSTER, NODES, model=model, algorithm=name)
    except ValueError as exc:
        return "refused", str(exc)


@pytest.mark.parametrize("model", CLUSTER_MODELS)
@pytest.mark.parametrize("op", OPS)
def test_api_and_sweep_give_one_answer_per_name(model, op):
    c = cm.cluster(CLUSTER, nodes=NODES)
    table_refusal = f"; allowed: {models.allowed_algorithms_text(model, op)}"
    for name in NAMES:
        want = expected(model, op, name)
        kind, p = _api(model, op, name)
        if want is None:  # no algorithm of the op: refused by the table, in its words
            assert kind == "refused", (name, p)
            assert isinstance(p, str) and p.endswith(table_refusal), p
            assert p.startswith(f"algorithm: {name.lower()!r} is not a {model} {op} algorithm"), p
        elif kind == "refused":  # in the table, but this cluster cannot run it: a reason
            assert isinstance(p, str) and not p.endswith(table_refusal), p
            assert want in p and ("cannot run" in p or "needs" in p), p
        else:
            assert want == "auto" or p.algorithm == want, (name, p.algorithm)
        # cm.collective_time: the same road, the same number or the same message
        try:
            t = cm.collective_time(op, SIZE, c, algorithm=name, model=model)
        except ValueError as exc:
            assert kind == "refused" and str(exc) == p, (name, str(exc))
        else:
            assert kind == "ok" and t == p.time_s, name
        # a sweep of that one row: the same number and algorithm, or the same message
        try:
            df = sweep.sweep(
                preset=CLUSTER, model=model, op=op, algorithm=name, nodes=NODES, size=SIZE
            )
        except ValueError as exc:
            assert kind == "refused" and str(exc).endswith(_tail(p)), (name, str(exc), p)
        else:
            assert kind == "ok", (name, p)
            (row,) = df.itertuples()
            assert row.error == "" and row.time_s == pytest.approx(p.time_s, rel=1e-12), name
            assert str(row.algorithm_used) == p.algorithm, name


#: per (model, op), the names the CLI walk asks: every accepted one (each a number to compare),
#: the refusals of each kind (another op's, another model's, the two-level all-reduce, none's)
def _cli_names(model: str, op: str) -> list[str]:
    accepted = [n for n in NAMES if expected(model, op, n) is not None]
    refused = [n for n in NAMES if expected(model, op, n) is None]
    kinds = ["hierarchical", "tree", "pairwise", "p2p", "nvls_tree", "spiral"]
    return accepted + [n for n in kinds if n in refused]


@pytest.mark.parametrize("model", CLUSTER_MODELS)
@pytest.mark.parametrize("op", OPS)
def test_cli_gives_the_api_answer_per_name(model, op):
    base = ["collective", op, "-s", str(SIZE), "--cluster", CLUSTER, "--nodes", str(NODES)]
    for name in _cli_names(model, op):
        kind, p = _api(model, op, name)
        code, out, err = _cli(*base, "--model", model, "--algorithm", name, "--json")
        if kind == "refused":
            assert isinstance(p, str)
            line = _one_line_refusal(code, out, err)
            assert line.endswith(_tail(p, said_by_cli=True)), (line, p)
            continue
        assert code == 0, (name, err)
        (row,) = json.loads(out)["results"]
        assert row["algorithm_used"] == p.algorithm, name
        assert row["time_s"] == pytest.approx(p.time_s, rel=1e-12), name
        # the request as given (lower case), what ran by its canonical name
        assert row["algorithm"] == name.lower()


def test_reduce_scatter_pairwise_is_its_ring_under_both_alpha_beta_models():
    for model in ("lesson", "textbook"):
        ring = predict_collective(
            "reduce_scatter", SIZE, CLUSTER, NODES, model=model, algorithm="ring"
        )
        pw = predict_collective(
            "reduce_scatter", SIZE, CLUSTER, NODES, model=model, algorithm="pairwise"
        )
        assert pw.algorithm == "ring" and pw.time_s == ring.time_s > 0
    # NCCL names its reduce-scatter ring "ring" only: pairwise is refused with NCCL's list
    with pytest.raises(ValueError, match=r"allowed: auto, ring, nvls, collnet_direct, pat;"):
        predict_collective("reduce_scatter", SIZE, CLUSTER, NODES, algorithm="pairwise")


def test_a_calibrated_cluster_refuses_from_the_same_table(tmp_path):
    """A calibration preset with fabric terms answers through NCCL's candidates, so its
    ``calibrated`` (and ``nccl``) model takes NCCL's row of the table: ``pat`` is no
    all-reduce algorithm there either, refused with that row before anything is timed, and a
    name in the row is answered by it. (nccl-tests 09a, 2x RTX 2080 Ti, as
    tests/test_calibrated_presets.py.)"""
    from costmodel.validation.calibrate import calibrate, write_calibration
    from costmodel.validation.nccl_tests import read_nccl_tests
    from tests._paths import NCCL_TESTS

    log = read_nccl_tests(NCCL_TESTS / "09a_autodl-1x2x2080Ti-PCIe3-noP2P_allreduce.txt")
    cal = calibrate(
        log, name="rtx-cal", min_bytes=2**16, source="09a", base="pcie3-2x-rtx2080ti-nop2p"
    )
    assert cal.fabric  # the realistic calibration this test is about
    path = str(write_calibration(cal, tmp_path / "rtx-cal.toml"))
    for model in ("calibrated", "nccl"):
        with pytest.raises(ValueError) as exc:
            predict_collective("all_reduce", 2**26, path, model=model, algorithm="pat")
        assert str(exc.value) == (
            f"algorithm: 'pat' is not a {model} all_reduce algorithm (the model has it for "
            f"reduce_scatter, all_gather); allowed: {models.allowed_algorithms_text(model, 'all_reduce')}"
        )
        assert (
            predict_collective("all_reduce", 2**26, path, model=model, algorithm="Tree").algorithm
            == "tree"
        )


# --- over one link (numbers, no cluster): the formulas' rows -----------------------------------
@pytest.mark.parametrize("op", OPS)
def test_one_link_api_cli_and_sweep_agree_per_name(op):
    base = ["collective", op, "-s", "1GB", "--ranks", str(LINK_RANKS), "--bandwidth", "50GB/s"]
    for model in ("lesson", "textbook"):
        allowed = f"; allowed: {models.allowed_algorithms_text(model, op, link=True)}"
        for name in NAMES:
            want = expected(model, op, name, link=True)
            try:
                t = cm.collective_time(op, 1e9, LINK_RANKS, LINK_BW, algorithm=name, model=model)
            except ValueError as exc:
                msg = str(exc)
                assert want is None and msg.endswith(allowed), (name, msg)
                assert msg.startswith(
                    f"algorithm: {name.lower()!r} is not a {model} {op} algorithm over one link"
                )
            else:
                row = models.LESSON_DEFAULT_ALGORITHM[op] if want == "auto" else want
                assert row is not None, name
                assert t == collectives.collective_time(op, 1e9, LINK_RANKS, LINK_BW, algorithm=row)
            try:
                df = sweep.sweep(
                    ranks=LINK_RANKS,
                    bandwidth=LINK_BW,
                    model=model,
                    op=op,
                    algorithm=name,
                    size="1GB",
                )
            except ValueError as exc:
                assert want is None and str(exc) == msg, (name, str(exc))
            else:
                # no algorithm_used column over a link: the row names what ran, canonically
                (r,) = df.itertuples()
                assert r.algorithm == row and r.time_s == t, name
            if model != "textbook":  # the CLI's raw link is the textbook formula (no --model)
                continue
            code, out, err = _cli(*base, "--algorithm", name, "--json")
            if want is None:
                assert _one_line_refusal(code, out, err).endswith(_tail(msg, said_by_cli=True))
            else:
                assert code == 0, err
                (res,) = json.loads(out)["results"]
                assert res["algorithm"] == row and res["time_s"] == t


def test_one_link_has_no_two_level_all_reduce():
    with pytest.raises(
        ValueError, match=r"over one link \(model textbook has it for all_reduce on a cluster\)"
    ):
        cm.allreduce_time(1e9, 16, 50e9, algorithm="hierarchical")
    assert cm.allreduce_time(1e9, "dgx-h100", algorithm="hierarchical") > 0  # a Cluster: yes


# --- algorithm = all: exactly the table --------------------------------------------------------
@pytest.mark.parametrize("model", CLUSTER_MODELS)
@pytest.mark.parametrize("op", OPS)
def test_all_lists_the_table_on_every_surface(model, op):
    table = list(models.algorithms(model, op))
    r = predict_all_algorithms(op, [2**20, SIZE], CLUSTER, NODES, model=model)
    listed = [*r.available, *(a for a, _ in r.unavailable)]
    assert sorted(listed) == sorted(table) and len(listed) == len(set(listed))
    assert list(r.available) == [a for a in table if a in r.available]  # in the table's order
    # the CLI's --algorithm all prints that comparison
    code, out, err = _cli(
        "collective", op, "-s", str(SIZE), "--cluster", CLUSTER, "--nodes", str(NODES),
        "--model", model, "--algorithm", "all", "--json",
    )  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    shown = [*dict.fromkeys(row["algorithm"] for row in data["results"])]
    assert shown == list(r.available)
    assert [u["algorithm"] for u in data["unavailable"]] == [a for a, _ in r.unavailable]
    # a preset sweep's algorithm=all: one row per listed algorithm, in the table's order; the
    # ones the cluster cannot run carry the reason predict_all_algorithms gives
    df = sweep.sweep(preset=CLUSTER, model=model, op=op, algorithm="all", nodes=NODES, size=SIZE)
    assert df["algorithm"].tolist() == table
    answered = df[df["error"] == ""]["algorithm"].tolist()
    assert answered == list(r.available)
    for a in answered:
        row = df[df["algorithm"] == a].iloc[0]
        at = r.frame[(r.frame["algorithm"] == a) & (r.frame["message_bytes"] == SIZE)].iloc[0]
        assert row["time_s"] == pytest.approx(at["time_s"], rel=1e-12), a


@pytest.mark.parametrize("op", OPS)
def test_all_over_one_link_lists_the_formulas(op):
    table = list(models.algorithms("textbook", op, link=True))
    df = sweep.sweep(ranks=LINK_RANKS, bandwidth=LINK_BW, op=op, algorithm="all", size="1GB")
    assert df["algorithm"].tolist() == table
    code, out, err = _cli(
        "collective", op, "-s", "1GB", "--ranks", str(LINK_RANKS), "--bandwidth", "50GB/s",
        "-a", "all", "--json",
    )  # fmt: skip
    assert code == 0, err
    assert [r["algorithm"] for r in json.loads(out)["results"]] == table


def test_sweep_all_for_calibrated_is_refused_by_name():
    with pytest.raises(ValueError, match=r"^algorithm: 'all' expands for model=lesson, textbook"):
        sweep.sweep(preset=CLUSTER, model="calibrated", algorithm="all", size=SIZE)


# --- op = all ---------------------------------------------------------------------------------
def test_every_op_names():
    assert models.every_op_algorithms("lesson") == ("auto", "ring")
    assert models.every_op_algorithms("textbook") == ("auto", "ring")
    assert models.every_op_algorithms("textbook", link=True) == ("auto", "ring")
    assert models.every_op_algorithms("nccl") == ("auto",)  # all-to-all has only p2p


@pytest.mark.parametrize("model", CLUSTER_MODELS)
def test_op_all_accepts_only_a_name_of_every_op(model):
    """``collective all``, ``predict --op all`` and a sweep's ``op=all``: a name every op has
    (auto; ring for the alpha-beta models, each op answering by its own canonical row), else
    one refusal naming the ops without it and the names every op has."""
    every = models.every_op_algorithms(model)
    where = ["--cluster", CLUSTER, "--nodes", str(NODES), "--model", model]
    for name in ("auto", "ring", "RING", "tree", "hierarchical", "p2p", "chain", "spiral"):
        ok = all(expected(model, op, name) is not None for op in OPS)
        collective = _cli("collective", "all", "-s", "1MB", *where, "-a", name, "--json")
        predict = _cli(
            "predict", "--op", "all", "--sizes", "1MB", *where, "--algorithm", name, "--json"
        )
        if ok:
            assert _key(name) in map(_key, every)
            assert collective[0] == 0 and predict[0] == 0, (name, collective[2], predict[2])
            rows = json.loads(collective[1])["results"]
            assert [r["op"] for r in rows] == list(OPS)
            for r in rows:  # each op's own canonical row, the number predict gives
                p = predict_collective(r["op"], 1e6, CLUSTER, NODES, model=model, algorithm=name)
                assert r["algorithm_used"] == p.algorithm
                assert r["time_s"] == pytest.approx(p.time_s, rel=1e-12)
            continue
        lacking = [op for op in OPS if expected(model, op, name) is None]
        msg = (
            f"'{name.lower()}' is not a {model} algorithm of every op (not of "
            f"{', '.join(lacking)}); allowed with every op: {', '.join(every)}"
        )
        for code, out, err in (collective, predict):
            assert _one_line_refusal(code, out, err).endswith(msg), (name, err)
        with pytest.raises(ValueError) as exc:
            sweep.sweep(
                preset=CLUSTER, model=model, op="all", algorithm=name, nodes=NODES, size="1MB"
            )
        assert str(exc.value).endswith(msg)


@pytest.mark.parametrize("where", ["link", "cluster"])
def test_op_all_with_algorithm_all_lists_each_ops_table(where):
    if where == "link":
        args, model, link = ["--ranks", "8", "--bandwidth", "50GB/s"], "textbook", True
    else:
        args, model, link = (
            ["--cluster", CLUSTER, "--nodes", "2", "--model", "textbook"],
            "textbook",
            False,
        )
    code, out, err = _cli("collective", "all", "-s", "1MB", *args, "-a", "all", "--json")
    assert code == 0, err
    rows = json.loads(out)["results"]
    for op in OPS:
        assert [r["algorithm"] for r in rows if r["op"] == op] == list(
            models.algorithms(model, op, link=link)
        )
    # a row the cluster cannot run carries why, and the human table says it under the rows
    if where == "cluster":
        (nvls,) = [r for r in rows if r["algorithm"] == "nvls"]
        assert nvls["time_s"] is None and "needs in-switch reduction" in nvls["error"]
        code, out, err = _cli("collective", "all", "-s", "1MB", *args, "-a", "all")
        assert code == 0 and "not available: all_reduce nvls: " in out


# --- what users read: --help, README, the app ---------------------------------------------------
def test_help_names_every_alias_and_the_models_lists():
    code, out, _ = _cli("collective", "--help")
    text = " ".join(out.split())
    assert code == 0
    for model in ("lesson", "nccl"):
        for op in OPS:
            for alias, canonical in models.algorithm_aliases(model, op).items():
                assert f"{alias} = {canonical}" in text, (alias, canonical)
    for name in (
        "hierarchical",
        "hierarchical_pipelined",
        "nvls_tree",
        "collnet_chain",
        "pat",
        "p2p",
    ):
        assert name in text
    code, out, _ = _cli("predict", "--help")
    assert code == 0 and "pairwise = ring (reduce_scatter)" in " ".join(out.split())


def _cell(names: tuple[str, ...], aliases: dict[str, str]) -> str:
    text = ", ".join(f"`{n}`" for n in names)
    return text + "".join(f"; `{a}` = `{c}`" for a, c in aliases.items())


def test_readme_table_is_the_table():
    """README's "Algorithms per op and model" table, row for row, from the table."""
    readme = (ROOT / "README.md").read_text()
    for op in OPS:
        lesson = _cell(models.algorithms("lesson", op), models.algorithm_aliases("lesson", op))
        extra = [
            a for a in models.algorithms("textbook", op) if a not in models.algorithms("lesson", op)
        ]
        textbook = ", ".join(f"`{a}`" for a in extra) or "-"
        nccl = _cell(models.algorithms("nccl", op), models.algorithm_aliases("nccl", op))
        row = f"| `{op}` | {lesson} | {textbook} | {nccl} |"
        assert row in readme, row


def test_collectives_page_offers_the_table_and_names_a_refusal():
    """The page's one-link view offers each op's formulas (the table over one link); a link
    naming an alias opens its canonical name, and one naming what the op has not is named in
    red with the op's list."""
    from tests.test_app import _text, assert_clean, open_page

    at = open_page("page_collectives.py", {"view": "link", "op": "all_reduce"})
    assert_clean(at)
    for op in OPS:
        at.selectbox(key="op").set_value(op).run()
        assert_clean(at)
        (box,) = at.multiselect
        assert tuple(box.options) == models.algorithms("textbook", op, link=True), op
    at = open_page(
        "page_collectives.py",
        {
            "view": "link",
            "op": "reduce_scatter",
            "algorithms_reduce_scatter": ["pairwise", "halving"],
        },
    )
    assert_clean(at)
    assert [m.value for m in at.multiselect] == [["ring", "halving"]]
    assert not at.error
    at = open_page(
        "page_collectives.py",
        {"view": "link", "op": "broadcast", "algorithms_broadcast": ["hierarchical"]},
    )
    assert_clean(at)
    (err,) = [_text(e.value) for e in at.error]
    assert "'hierarchical' is not a choice of Algorithms to compare" in err
    assert "allowed: " + ", ".join(models.algorithms("textbook", "broadcast", link=True)) in err


def test_no_surface_shows_an_alias_as_what_ran():
    """Aliases resolve to one canonical name in output, everywhere."""
    for model in ("lesson", "textbook"):
        for op in OPS:
            for alias, canonical in models.algorithm_aliases(model, op).items():
                p = predict_collective(op, SIZE, CLUSTER, NODES, model=model, algorithm=alias)
                assert p.algorithm == canonical
                df = sweep.sweep(
                    ranks=8, bandwidth=LINK_BW, model=model, op=op, algorithm=alias, size="1GB"
                )
                assert df["algorithm"].tolist() == [canonical]
    # NCCL_ALGO=CollNet on a cluster with IB SHARP: collnet_direct ran, and says so
    sharp = "coreweave-hgx-h100"
    p = predict_collective("all_reduce", SIZE, sharp, 4, algorithm="CollNet", collnet_enabled=True)
    q = predict_collective(
        "all_reduce", SIZE, sharp, 4, algorithm="collnet_direct", collnet_enabled=True
    )
    assert p.algorithm == "collnet_direct" and p.time_s == q.time_s > 0
