"""The app's words and roads: one bare parameter count, one memory on every surface; errors
that name the box a user typed in, once; the Batch page's defaults and numbers as the others
show them; a hidden box's parameter out of the URL."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from costmodel import cli
from costmodel.architecture import architecture_for_params
from costmodel.units import format_bytes, format_count
from tests.test_app import _text, assert_clean, metrics, open_page


def _cli_json(*args: str) -> dict:
    res = CliRunner().invoke(cli.app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


# --- one road for a bare parameter count ---------------------------------------------------
#: The Memory page's part rows by `memory --json`'s ``memory_parts_bytes`` keys.
_PARTS = {
    "weights": "weights_bytes",
    "gradients": "gradients_bytes",
    "fp32 master": "master_bytes",
    "optimizer states": "optimizer_bytes",
    "activations": "activations_bytes",
    "communication buckets": "buckets_bytes",
    "gathered units (FSDP)": "gathered_units_bytes",
}


@pytest.mark.parametrize(
    ("stage", "strategy", "seq", "micro"),
    [(0, "ddp", 4096, 1), (3, "fsdp", 4096, 1), (3, "fsdp", 8192, 2)],
)
def test_a_bare_count_has_one_memory_on_both_pages_and_the_cli(stage, strategy, seq, micro):
    """A first-time user typing 7B saw 144 GB on the Memory page (activations of a 32 x 4096
    shape of its own) and 126 GB on the step page (the model state of the count). Both pages
    and both commands now size the count the same way, the model state of the layout the step
    prices, whatever the sequence and micro-batch."""
    cli_memory = _cli_json("memory", "--params", "7B", "--zero-stage", str(stage), "--ranks", "8")[
        "memory_bytes"
    ]
    cli_step = _cli_json(
        "step", "--params", "7B", "--cluster", "dgx-h100", "--nodes", "1", "--strategy",
        strategy, "--seq", str(seq), "--micro-batch", str(micro),
    )["memory_bytes"]  # fmt: skip
    assert cli_memory == cli_step  # the same function: exactly

    mem = open_page(
        "page_memory.py",
        {"dp_ranks": "8", "zero_stage": str(stage), "act_seq": str(seq), "micro": str(micro)},
    )
    assert_clean(mem)
    assert metrics(mem)[f"Memory per GPU, ZeRO-{stage}"] == format_bytes(cli_memory)
    # exactly where the page gives the bytes: its part-by-part table is `memory --json`'s parts
    mem.session_state["table_memory"] = True
    mem = mem.run()
    parts = next(d.value for d in mem.dataframe if f"ZeRO-{stage} [B]" in d.value.columns)
    shown = dict(zip(parts["part"], parts[f"ZeRO-{stage} [B]"], strict=True))
    cli_parts = _cli_json("memory", "--params", "7B", "--zero-stage", str(stage), "--ranks", "8")[
        "memory_parts_bytes"
    ]
    for part, key in _PARTS.items():
        assert shown[part] == cli_parts[key], part
    assert sum(shown.values()) == pytest.approx(cli_memory, rel=1e-15)
    step = open_page(
        "page_ddp.py",
        {
            "ddp_strategy": strategy,
            "ddp_nodes": "1",
            "ddp_seq": str(seq),
            "ddp_local_batch": str(micro),
        },
    )
    assert_clean(step)
    assert metrics(step)["Memory per GPU"] == format_bytes(cli_step)


def test_the_first_view_of_7b_is_126_gb_on_both_pages():
    """The numbers a first-time user saw, 144 GB and 126 GB, are now one: 126 GB (7B x 16 B of
    mixed-precision Adam, plus DDP's 2 B/param bucket copy), on the pages' first views."""
    assert metrics(open_page("page_memory.py"))["Memory per GPU, ZeRO-0"] == "126 GB"
    assert metrics(open_page("page_ddp.py"))["Memory per GPU"] == "126 GB"


def test_both_pages_say_which_shape_a_bare_count_stands_for():
    """The Memory page's custom note and the step's own note name the transformer a count
    stands for (architecture_for_params) and say its memory is the model state."""
    d = architecture_for_params(7e9)
    at = open_page("page_memory.py")
    shape = f"{d.layers} layers x hidden {d.hidden}"
    said = [_text(c.value) for c in at.caption if shape in _text(c.value)]
    assert len(said) == 1 and "architecture_for_params" in said[0]
    assert "model state alone" in said[0]
    at = open_page("page_ddp.py", {"ddp_params": "70B"})
    d70 = architecture_for_params(70e9)
    shape = f"({d70.layers} layers, hidden {d70.hidden}: architecture_for_params)"
    said = [_text(c.value) for c in at.caption if shape in _text(c.value)]
    assert said and "the model state, activations not sized" in said[0], said


def test_the_memory_page_s_shape_boxes_default_to_the_count_s_shape():
    """Added activations of a bare count come from the shape boxes, whose empty default is
    the transformer the count stands for (architecture_for_params), not a shape of the page's
    own; a number typed replaces its part."""
    from costmodel import memory

    d = architecture_for_params(7e9)
    at = open_page("page_memory.py", {"dp_ranks": "1"})
    assert at.checkbox(key="shape_activations").value is False
    assert not [n for n in at.number_input if n.key in ("layers", "hidden", "heads")]
    at.checkbox(key="shape_activations").check().run()
    assert_clean(at)
    boxes = {n.key: n for n in at.number_input}
    assert boxes["layers"].value is None and str(d.layers) in boxes["layers"].placeholder
    assert boxes["hidden"].value is None and str(d.hidden) in boxes["hidden"].placeholder
    # FlashAttention, no recompute: eq. (1) without the scores, as the selective terms
    # (the state's 112 GB: one rank under ddp is plain training, no bucket copy)
    act = memory.activation_bytes(d.layers, d.hidden, 4096, 1, d.heads, "selective")
    assert metrics(at)["Memory per GPU, ZeRO-0"] == format_bytes(112e9 + act)
    at.number_input(key="layers").set_value(32).run()
    act32 = memory.activation_bytes(32, d.hidden, 4096, 1, d.heads, "selective")
    assert metrics(at)["Memory per GPU, ZeRO-0"] == format_bytes(112e9 + act32)
    note = next(_text(c.value) for c in at.caption if _text(c.value).startswith("Custom model"))
    assert "add none to a bare count" in note


def test_a_count_without_a_dense_shape_asks_for_the_shape_it_needs():
    at = open_page("page_memory.py", {"params": "50T", "shape_activations": "true"})
    assert_clean(at)
    assert any(_text(e.value).startswith("Layers: enter it") for e in at.error)
    # with FlashAttention the heads box is greyed (eq. (1) reads no heads): it is not asked for
    shape = {"params": "50T", "shape_activations": "true", "layers": "10", "hidden": "4096"}
    at = open_page("page_memory.py", shape)
    assert_clean(at)
    assert at.number_input(key="heads").disabled
    assert "Memory per GPU, ZeRO-0" in metrics(at)
    at = open_page("page_memory.py", {**shape, "flash": "false"})
    errors = [_text(e.value) for e in at.error]
    assert any(e.startswith("Heads: enter it") for e in errors), errors


# --- errors name the box a user typed in, once ------------------------------------------------
@pytest.mark.parametrize(
    ("query", "box", "argument"),
    [
        ({"dp_ranks": "0"}, "Data-parallel ranks N [GPUs]: must be", "dp_ranks:"),
        (
            {"fragmentation": "5"},
            "Fragmentation allowance [fraction of held memory]: must be",
            "fragmentation:",
        ),
    ],
)
def test_memory_refusals_name_the_box(query, box, argument):
    at = open_page("page_memory.py", query)
    assert_clean(at)
    errors = [_text(e.value) for e in at.error]
    assert len(errors) == 1 and box in errors[0], errors
    assert argument not in errors[0]


@pytest.mark.parametrize(
    ("query", "box", "argument"),
    [
        ({"pin_nodes": "0"}, "B: nodes: must be", "nodes:"),
        ({"pin_gpus": "0"}, "B: GPUs per node: must be", "gpus_per_node:"),
        ({"pin_gpus": "99"}, "B: GPUs per node: dgx-h100 has 8 GPUs per node", "gpus_per_node:"),
    ],
)
def test_collectives_configuration_b_refusals_name_b_s_box(query, box, argument):
    at = open_page("page_collectives.py", {"view": "cluster", "coll_compare": "true", **query})
    assert_clean(at)
    errors = [_text(e.value) for e in at.error]
    assert len(errors) == 1 and box in errors[0], errors
    assert f" {argument}" not in errors[0].replace(box, "")


def test_step_page_reports_a_bad_b_node_count_once_by_b_s_box():
    """A B of 0 nodes was refused under "Configuration B" ("Nodes: ...", A's box) and again
    under the bucket_cap advisor ("nodes: ..."): now once, naming B's box."""
    at = open_page("page_ddp.py", {"ddp_pin": "true", "ddp_b_nodes": "0"})
    assert_clean(at)
    errors = [_text(e.value) for e in at.error]
    assert len(errors) == 1, errors
    # B's box, with the CLI's --nodes range (tests/test_app_qa20.py), before B is evaluated
    assert errors[0].startswith("Nodes (B): must be a whole number in 1..1,000,000")
    assert "nodes:" not in errors[0]
    assert "Best bucket_cap" in metrics(at)  # A's advice is still given


def test_a_recompute_the_custom_model_does_not_offer_is_reset_by_the_box_s_name():
    """Switching the Memory page from a named model with selective-op to a custom one said
    "URL parameter recompute: ..." of a value the box held, not a link: now the box says it,
    once, and the URL forgets it. A link naming it still gets the URL's message."""
    at = open_page("page_memory.py", {"arch": "llama-3.1-8b", "recompute": "selective-op"})
    assert_clean(at)
    at.selectbox(key="arch").set_value("custom (parameter count)").run()
    errors = [_text(e.value) for e in at.error]
    assert errors == ["Recompute: selective-op is not offered for a custom model; reset to none"]
    assert at.selectbox(key="recompute").value == "none"
    assert "recompute" not in at.query_params
    at.run()
    assert not at.error
    link = open_page("page_memory.py", {"recompute": "selective-op"})
    assert any(_text(e.value).startswith("URL parameter recompute:") for e in link.error)


@pytest.mark.parametrize("measured", ["1ms", "0s", "1e30s"])
def test_a_refused_measured_step_names_its_box(measured):
    at = open_page("page_ddp.py", {"ddp_measured_step": measured})
    assert_clean(at)
    errors = [_text(e.value) for e in at.error]
    assert len(errors) == 1 and "Measured step time [s]: " in errors[0], errors
    assert "step_time_s" not in errors[0]


# --- the Batch page: defaults and numbers as the other surfaces show them ---------------------
def test_the_batch_page_s_sequence_length_is_every_surface_s_4096():
    from costmodel.memory import DEFAULT_SEQUENCE_LENGTH

    at = open_page("page_batch.py")
    assert at.number_input(key="seq_len").value == DEFAULT_SEQUENCE_LENGTH == 4096
    step = open_page("page_ddp.py")
    assert step.number_input(key="ddp_seq").value == 4096
    # 8,192 samples x 4,096 tokens, as `costmodel batch --seq 4096` says it
    tokens = _cli_json(
        "batch", "--local", "4", "--ranks", "64", "--global", "8192", "--seq", "4096"
    )
    m = metrics(at)
    shown = next(v for k, v in m.items() if k.startswith("Global batch [tokens per step]"))
    assert shown == f"{format_count(8192 * 4096)} tokens"
    assert tokens["global_tokens"] == 8192 * 4096


def test_token_counts_below_a_million_are_exact():
    """The step page showed a micro-batch of 4,096 tokens as "4.1 k"."""
    from costmodel.units import format_token_count

    assert format_token_count(4096) == "4,096" and format_token_count(999_999) == "999,999"
    assert format_token_count(2**22) == format_count(2**22) == "4.19 M"
    at = open_page("page_ddp.py")
    assert metrics(at)["Tokens per GPU per micro-batch"] == "4,096"
    at = open_page("page_ddp.py", {"ddp_local_batch": "2", "ddp_seq": "2048"})
    assert metrics(at)["Tokens per GPU per micro-batch"] == "4,096"
    batch = open_page(
        "page_batch.py", {"batch_ranks": "1", "batch_global_batch": "64", "seq_len": "1024"}
    )
    m = metrics(batch)
    shown = next(v for k, v in m.items() if k.startswith("Global batch [tokens per step]"))
    assert shown == "65,536 tokens"


def test_a_hidden_rule_box_leaves_the_url_and_comes_back():
    """The samples' rule box, synced to the URL by the page, kept ``rule=sqrt`` in the URL
    while the unit was tokens (where ``rule_tokens`` is drawn), unlike Streamlit-bound boxes;
    now it leaves while hidden and comes back with its value."""
    at = open_page("page_batch.py", {"rule": "sqrt"})
    assert at.radio(key="rule").value == "sqrt" and at.query_params.get("rule") == "sqrt"
    at.radio(key="batch_unit").set_value("tokens").run()
    assert_clean(at)
    assert "rule" not in at.query_params
    at.radio(key="rule_tokens").set_value("linear").run()
    assert at.query_params.get("rule_tokens") == "linear"
    at.radio(key="batch_unit").set_value("samples").run()
    assert at.radio(key="rule").value == "sqrt" and at.query_params.get("rule") == "sqrt"
    assert "rule_tokens" not in at.query_params


def test_the_activation_recipe_is_greyed_while_no_activations_are_sized():
    """A bare count sizes no activations by default (as ``memory --params``, which refuses
    --seq and the rest): the recipe's boxes are greyed until activations are added."""
    at = open_page("page_memory.py")
    recipe = [
        at.number_input(key="act_seq"),
        at.number_input(key="micro"),
        at.selectbox(key="recompute"),
        at.checkbox(key="flash"),
    ]
    assert all(box.disabled for box in recipe)
    at.checkbox(key="shape_activations").check().run()
    assert not any(
        box.disabled for box in (at.number_input(key="act_seq"), at.number_input(key="micro"))
    )
    named = open_page("page_memory.py", {"arch": "llama-3.1-8b"})
    assert not named.number_input(key="act_seq").disabled
    named.checkbox(key="activations").uncheck().run()
    assert named.number_input(key="act_seq").disabled and named.selectbox(key="loss").disabled
