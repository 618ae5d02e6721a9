"""Headless tests of the Collectives page's cluster view: every algorithm
on a cluster, a typed message size ("14GB"), and a pinned second configuration side by side."""

from __future__ import annotations

import pytest

from costmodel.predict import predict_all_algorithms, predict_collective
from costmodel.units import format_duration
from tests.test_app import _text, assert_clean, metrics, open_page, open_tables

CLUSTER_VIEW = {"view": "A model on a cluster preset"}


def frame_with(at, column: str):
    open_tables(at)
    frames = [d.value for d in at.dataframe if column in d.value.columns]
    assert frames, f"no table with {column!r}"
    return frames[0]


def test_14gb_on_8_dgx_h100_answers_which_algorithm_wins():
    at = open_page("page_collectives.py", {**CLUSTER_VIEW, "nccl_nodes": "8", "size_text": "14GB"})
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    p = predict_collective("all_reduce", 14e9, "dgx-h100", nodes=8)
    m = metrics(at)
    assert m["Time"] == format_duration(p.time_s)
    assert m["Algorithm / protocol"] == f"{p.algorithm} / {p.protocol}"
    table = frame_with(at, "model's choice")
    r = predict_all_algorithms("all_reduce", [14e9], "dgx-h100", 8)
    assert sorted(table["algorithm"]) == sorted(r.available)
    assert table["algorithm"].iloc[0] == p.algorithm  # fastest first, and it is NCCL's pick
    assert table.loc[table["model's choice"] == "yes", "algorithm"].tolist() == [p.algorithm]
    assert table["time [µs]"].iloc[0] == pytest.approx(p.time_s * 1e6, rel=1e-12)
    refused = frame_with(at, "why not here").set_index("algorithm")["why not here"]
    assert "IB SHARP" in refused["nvls"]
    # the open tab's chart only (the first, on the first view); the other tab draws its own
    assert [c.key for c in at.get("plotly_chart")] == ["chart_algorithms_time_s"]
    at.session_state["cluster_chart_tab"] = "busbw vs size"
    at.run()
    assert [c.key for c in at.get("plotly_chart")] == ["chart_algorithms_busbw_bytes_per_s"]


def test_the_text_box_wins_over_the_size_list():
    at = open_page("page_collectives.py", {**CLUSTER_VIEW, "size": "1.05 MB"})
    assert at.selectbox(key="size").value == 2**20  # a shared link's size label, as before
    before = metrics(at)["Time"]
    at.text_input(key="size_text").set_value("14GB").run()
    assert_clean(at)
    assert metrics(at)["Time"] == format_duration(
        predict_collective("all_reduce", 14e9, "dgx-h100").time_s
    )
    assert metrics(at)["Time"] != before
    at.text_input(key="size_text").set_value("").run()  # emptied: the size list again
    assert metrics(at)["Time"] == before


@pytest.mark.parametrize("text", ["14 gigs", "8Gb", "-3MB", "99TiB"])
def test_a_bad_size_text_names_the_grammar(text):
    at = open_page("page_collectives.py", CLUSTER_VIEW)
    at.text_input(key="size_text").set_value(text).run()
    assert_clean(at)
    errors = [e.value for e in at.error]
    assert any("Message size" in e and "14GB" in e and "16 TiB" in e for e in errors), errors
    assert at.selectbox(key="nccl_cluster").value == "dgx-h100"  # the inputs still render


def test_the_link_view_takes_a_typed_size():
    from costmodel import collectives

    link = {"view": "Formulas on one link (alpha-beta)"}
    at = open_page("page_collectives.py", {**link, "size_text": "14GB", "ranks": "64"})
    assert_clean(at)
    best = min(
        collectives.collective_time("all_reduce", 14e9, 64, 450e9, 5e-6, a)
        for a in ("ring", "tree", "recursive_doubling")
    )
    assert metrics(at)["Time"] == format_duration(best)


def test_pin_a_second_configuration_side_by_side():
    at = open_page("page_collectives.py", {**CLUSTER_VIEW, "nccl_nodes": "8", "size_text": "14GB"})
    at.toggle(key="coll_compare").set_value(True).run()
    at.button(key="pin_now").click().run()  # B = 8 x dgx-h100
    assert at.number_input(key="pin_nodes").value == 8
    at.number_input(key="nccl_nodes").set_value(2).run()  # A = 2 x dgx-h100
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    a = predict_collective("all_reduce", 14e9, "dgx-h100", nodes=2)
    b = predict_collective("all_reduce", 14e9, "dgx-h100", nodes=8)
    diff = frame_with(at, "time B / A").set_index("message size [B]")
    assert diff.at[14e9, "time B / A"] == pytest.approx(b.time_s / a.time_s, rel=1e-12)
    assert diff.at[14e9, "busbw B / A"] == pytest.approx(
        b.busbw_bytes_per_s / a.busbw_bytes_per_s, rel=1e-12
    )
    assert diff.at[14e9, "B algorithm"] == b.algorithm
    m = metrics(at)
    assert m["B: time"] == format_duration(b.time_s)
    assert m["Time B / A"] == f"{b.time_s / a.time_s:.3g}x"
    assert "chart_pinned_time_s" in {c.key for c in at.get("plotly_chart")}
    at.session_state["pinned_chart_tab"] = "A and B: busbw"
    at.run()
    assert "chart_pinned_busbw_bytes_per_s" in {c.key for c in at.get("plotly_chart")}


def test_the_pinned_comparison_is_restored_from_the_url():
    query = {
        **CLUSTER_VIEW,
        "coll_compare": "true",
        "pin_cluster": "dgx-a100",
        "pin_nodes": "4",
        "pin_model": "textbook",
    }
    at = open_page("page_collectives.py", query)
    assert_clean(at)
    b = predict_collective("all_reduce", 2**28, "dgx-a100", nodes=4, model="textbook")
    assert metrics(at)["B: time"] == format_duration(b.time_s)
    diff = frame_with(at, "time B / A")
    assert len(diff) == 32  # every size of the size list (8 B .. 16 GiB)
    assert (diff["B algorithm"] == "ring").all()  # the textbook's choice


@pytest.mark.parametrize(
    ("pin_cluster", "pin_nodes", "one_error"),
    [("dgx-a100", "4", False), ("dgx-h100", "8", True)],
)
def test_side_by_side_error_adds_on_other_hardware(pin_cluster, pin_nodes, one_error):
    """A on 2 DGX H100 against B: on other hardware the two bands add; on the same preset,
    model and regime they are one error (the wider band)."""
    from costmodel.verdict import decide, pair_half_width

    query = {
        **CLUSTER_VIEW,
        "nccl_nodes": "2",
        "size_text": "1GB",
        "coll_compare": "true",
        "pin_cluster": pin_cluster,
        "pin_nodes": pin_nodes,
        "pin_model": "nccl",
    }
    at = open_page("page_collectives.py", query)
    assert_clean(at)
    a = predict_collective("all_reduce", 1e9, "dgx-h100", nodes=2)
    b = predict_collective("all_reduce", 1e9, pin_cluster, nodes=int(pin_nodes))
    ha, hb = float(a.error_band.half_width), float(b.error_band.half_width)
    assert (a.error_band.regime == b.error_band.regime) or not one_error
    half = pair_half_width(ha, hb, same_error=one_error)
    assert half == pytest.approx(max(ha, hb) if one_error else ha + hb)
    verdict = decide({"A": a.time_s, "B": b.time_s}, half)
    lead = "Faster configuration" if verdict.decided else "A or B"  # no winner inside the error
    said = [_text(m.value) for m in at.markdown if _text(m.value).startswith(f"{lead}: ")]
    assert said == [f"{lead}: {verdict.text()}."]


def test_no_winner_inside_the_expected_error_on_the_page():
    """14 GB on 8 DGX H100: ring 3% ahead of NVLS-tree under ±41% is not a winner."""
    at = open_page("page_collectives.py", {**CLUSTER_VIEW, "nccl_nodes": "8", "size_text": "14GB"})
    assert_clean(at)
    r = predict_all_algorithms("all_reduce", [14e9], "dgx-h100", 8)
    said = [_text(m.value) for m in at.caption if "Algorithms:" in _text(m.value)]
    assert len(said) == 1 and said[0].startswith(f"Algorithms: {r.verdicts[0].text()}.")
    assert "within the expected error" in said[0] and "Fastest" not in said[0]
    at.text_input(key="size_text").set_value("1MiB").run()  # tree wins by more than the band
    said = [_text(m.value) for m in at.caption if "Fastest algorithm:" in _text(m.value)]
    assert said[0].startswith("Fastest algorithm: tree (")


def test_cluster_page_takes_a_typed_size():
    at = open_page("page_cluster.py", {"cl_nodes": "8", "cl_size_text": "14GB"})
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    p = predict_collective("all_reduce", 14e9, "dgx-h100", nodes=8)
    assert metrics(at)["Time, model nccl"] == format_duration(p.time_s)
    said = [_text(m.value) for m in at.markdown if "textbook algorithm" in _text(m.value).lower()]
    assert len(said) == 1, said
    # "Fastest" only beside a winner: inside the expected error the page names none
    assert said[0].startswith("Fastest") != ("within the expected error" in said[0]), said
    at.text_input(key="cl_size_text").set_value("14 gigs").run()
    assert_clean(at)
    assert any("Message size" in e.value for e in at.error)


def test_every_model_is_one_click_away():
    at = open_page("page_collectives.py", CLUSTER_VIEW)
    assert_clean(at)
    keys = {c.key for c in at.get("plotly_chart")}
    assert "chart_nccl_time_s" not in keys  # not drawn on the first view
    at.toggle(key="coll_all_models").set_value(True).run()
    assert_clean(at)
    models = frame_with(at, "algbw [GB/s]")
    want = predict_collective("all_reduce", 2**28, "dgx-h100", model="lesson")
    lesson = models[models["model"] == "lesson"]
    assert lesson["time [µs]"].iloc[0] == pytest.approx(want.time_s * 1e6, rel=1e-12)
    assert "chart_nccl_time_s" in {c.key for c in at.get("plotly_chart")}


def test_cluster_page_says_fastest_only_beside_a_winner():
    """4 x 8 H100 at 1 GiB: hierarchical (pipelined) is 33% ahead of the flat ring under the
    textbook's ±45%: no winner, so the sentence does not open with "Fastest"."""
    at = open_page("page_cluster.py", {"cl_nodes": "4", "cl_size_text": "1GiB"})
    assert_clean(at)
    said = [_text(m.value) for m in at.markdown if "extbook algorithm" in _text(m.value)]
    assert len(said) == 1 and "within the expected error" in said[0], said
    assert said[0].startswith("Textbook algorithms: within the expected error"), said
