"""A run that stops on a refused input keeps every URL-bound box in the URL; the NCCL_ALGO
box's refusals name that box once.

Streamlit's binding drops from the URL the value of a bound box a run does not draw: on the
Training step page, Nodes = 0 stopped the page before "Tokens to train" and the price, the URL
lost both, and a reload opened their defaults (common.keep_undrawn_in_url). On Collectives, an
algorithm the cluster cannot run was refused under "Nodes / GPUs per node", and an unknown name
said the box's label twice.
"""

from __future__ import annotations

import functools

from streamlit.testing.v1 import AppTest, local_script_runner

from tests.test_app import metrics, open_page

STEP = {
    "ddp_nodes": "8",
    "ddp_arch": "llama-3.1-70b",
    "ddp_strategy": "fsdp",
    "ddp_recompute": "full",
    "ddp_pin": "true",
    "ddp_b_cluster": "dgx-b200",
    "ddp_tokens": "15T",
    "ddp_price": "aws-p5-on-demand",
}
COST = ("Wall clock (A)", "GPU-hours (A)", "Cost (A) [USD]", "Cost (B) [USD]")


def _cost(at: AppTest) -> dict[str, str]:
    shown = metrics(at)
    return {k: shown[k] for k in COST if k in shown}


def _nodes(at: AppTest, n: int) -> AppTest:
    at.number_input(key="ddp_nodes").set_value(n)
    return at.run()


def test_a_refused_node_count_keeps_tokens_and_price_in_the_url():
    """Nodes = 0: the red line, and the URL still carries the tokens and the price; Nodes back
    at 8: the cost is the one the link opened with (15T at the AWS p5 price), not 1T's."""
    at = open_page("page_ddp.py", STEP)
    opened = _cost(at)
    assert set(opened) == set(COST), metrics(at)
    default = _cost(
        open_page("page_ddp.py", {k: v for k, v in STEP.items() if k not in ("ddp_tokens",)})
    )
    assert default["Cost (A) [USD]"] != opened["Cost (A) [USD]"]  # the tokens move the cost
    _nodes(at, 0)
    assert any("Nodes" in e.value and "got 0" in e.value for e in at.error), at.error
    assert _cost(at) == {}  # the page stopped before the cost
    url = dict(at.query_params)
    assert url.get("ddp_tokens") == "15T" and url.get("ddp_price") == "aws-p5-on-demand", url
    assert url.get("ddp_nodes") == "0", url
    _nodes(at, 8)
    assert not at.error, [e.value for e in at.error]
    assert at.text_input(key="ddp_tokens").value == "15T"
    assert at.selectbox(key="ddp_price").value == "aws-p5-on-demand"
    assert _cost(at) == opened
    assert dict(at.query_params) == STEP


def test_a_reload_of_the_refused_view_then_fixed_shows_the_linked_cost():
    """The URL the refusal left, opened afresh (a reload), then Nodes = 8: 15T at the p5 price."""
    at = open_page("page_ddp.py", STEP)
    opened = _cost(at)
    _nodes(at, 0)
    reloaded = open_page("page_ddp.py", dict(at.query_params))
    assert any("got 0" in e.value for e in reloaded.error), reloaded.error
    _nodes(reloaded, 8)
    assert _cost(reloaded) == opened
    assert dict(reloaded.query_params) == STEP


def test_a_refused_local_batch_keeps_a_typed_tokens_count():
    """A value typed in this session (20T), then Local batch = 0: the URL holds the typed value,
    and the box shows it again once the batch is fixed."""
    at = open_page("page_ddp.py", STEP)
    at.text_input(key="ddp_tokens").set_value("20T").run()
    twenty = _cost(at)
    at.number_input(key="ddp_local_batch").set_value(0).run()
    assert at.error and _cost(at) == {}
    assert at.query_params.get("ddp_tokens") == "20T", dict(at.query_params)
    assert at.query_params.get("ddp_price") == "aws-p5-on-demand", dict(at.query_params)
    at.number_input(key="ddp_local_batch").set_value(1).run()
    assert at.text_input(key="ddp_tokens").value == "20T"
    assert _cost(at) == twenty


def test_a_refused_node_count_on_collectives_keeps_the_every_model_switch():
    at = open_page(
        "page_collectives.py", {"nccl_nodes": "8", "size_text": "14GB", "coll_all_models": "true"}
    )
    at.number_input(key="nccl_nodes").set_value(0).run()
    assert at.error
    assert at.query_params.get("coll_all_models") == "true", dict(at.query_params)
    at.number_input(key="nccl_nodes").set_value(8).run()
    assert not at.error and at.toggle(key="coll_all_models").value


def _algo_error(algo: str) -> str:
    at = open_page(
        "page_collectives.py", {"nccl_nodes": "8", "size_text": "14GB", "coll_algo": algo}
    )
    assert len(at.error) == 1, [e.value for e in at.error]
    return at.error[0].value.replace("\\", "")


def test_an_algorithm_the_cluster_cannot_run_is_refused_under_its_box():
    text = _algo_error("nvls")
    assert text.startswith("**Algorithms (NCCL_ALGO)**: 'nvls'"), text
    assert "cannot run all_reduce" in text and "Nodes / GPUs per node" not in text, text
    assert text.count("Algorithms (NCCL_ALGO)") == 1, text


def test_an_unknown_algorithm_names_the_box_once():
    for algo in ("foo", "ring,foo"):
        text = _algo_error(algo)
        assert text.startswith("**Algorithms (NCCL_ALGO)**: 'foo'"), text
        assert text.count("Algorithms (NCCL_ALGO)") == 1, text


def test_back_to_a_refused_entry_keeps_that_entrys_tokens(monkeypatch):
    """Nodes 0 (an entry holding 15T), Nodes 5, Tokens 20T, then Back to the refused entry: its
    URL keeps 15T (not the 20T typed since), and the box shows 15T once Nodes is fixed."""
    at = open_page("page_ddp.py", STEP)
    _nodes(at, 0)
    _nodes(at, 5)
    at.text_input(key="ddp_tokens").set_value("20T").run()
    assert _cost(at)
    back = functools.partial(local_script_runner.RerunData, is_history_navigation=True)
    monkeypatch.setattr(local_script_runner, "RerunData", back)
    at.query_params.clear()
    at.query_params.update({**STEP, "ddp_nodes": "0"})
    at.run()
    assert at.error and _cost(at) == {}
    assert at.query_params.get("ddp_tokens") == "15T", dict(at.query_params)
    monkeypatch.undo()
    _nodes(at, 8)
    assert at.text_input(key="ddp_tokens").value == "15T"
    assert dict(at.query_params) == STEP
