"""Headless app tests of planning answers: prices only for the cluster's GPU with their date (A and
B), tokens-first batch and Adam's learning-rate rule, your own config.json on the Memory page,
and the out-of-scope note."""

from __future__ import annotations

from pathlib import Path

from costmodel import batch, training
from costmodel.architecture import load_arch
from costmodel.web.scope import OUT_OF_SCOPE
from tests.test_app import _text, assert_clean, metrics, open_page, open_through_navigation

DATA = Path(__file__).parent / "data" / "hf_configs"


def test_ddp_price_list_is_the_clusters_gpu_only_and_b_gets_its_own_price():
    at = open_page("page_ddp.py", {"ddp_cluster": "dgx-b200", "ddp_nodes": "1"})
    assert_clean(at)
    options = at.selectbox(key="ddp_price").options
    assert set(options) == {"custom", *training.prices_for_gpu("b200")}
    assert "aws-p5-on-demand" not in options
    at.selectbox(key="ddp_price").set_value("lambda-b200-on-demand").run()
    assert_clean(at)
    cost = next(m for m in at.metric if m.label == "Cost [USD]")
    assert "2026-09-20" in cost.help
    # B on H100s: its own price list (H100 only), both sides' days, GPU-hours and dollars
    at.toggle(key="ddp_pin").set_value(True).run()
    at.selectbox(key="ddp_b_cluster").set_value("dgx-h100").run()
    assert_clean(at)
    assert set(at.selectbox(key="ddp_price_b").options) == {
        "custom",
        *training.prices_for_gpu("h100-sxm"),
    }
    at.selectbox(key="ddp_price_b").set_value("aws-p5-on-demand").run()
    assert_clean(at)
    m = metrics(at)
    for side in ("A", "B"):
        assert f"Wall clock ({side})" in m and f"GPU-hours ({side})" in m
        assert f"Cost ({side}) [USD]" in m
    cost_b = next(x for x in at.metric if x.label == "Cost (B) [USD]")
    assert "2026-11-09" in cost_b.help


def test_batch_page_plans_in_tokens_and_labels_the_lr_rules():
    at = open_page("page_batch.py")
    at.radio(key="batch_unit").set_value("tokens")
    at.number_input(key="seq_len").set_value(4096)
    at.number_input(key="batch_local_batch").set_value(1)
    at.number_input(key="batch_ranks").set_value(512).run()
    assert_clean(at)
    m = metrics(at)
    assert (
        m["Accumulation steps A [-] = global / (local x N)"] == "2"
    )  # 4 x 2^20 / 4096 = 1024 = 1 x 512 x 2
    assert m["Global batch [tokens per step]"].startswith("4.19 M")
    # tokens first: AdamW's square-root rule from 3e-4 at 1 Mi tokens is the default
    assert at.radio(key="rule_tokens").value == "sqrt"
    lr = [v for k, v in metrics(at).items() if k.startswith("Learning rate")]
    assert lr == ["0.0006"]  # Adam square-root rule: 3e-4 x sqrt(4 Mi / 1 Mi)
    assert any("Malladi" in c.value for c in at.caption)
    labels = at.radio(key="rule_tokens").options
    assert any("Adam" in o for o in labels) and any("ResNet" in o for o in labels)
    at.number_input(key="critical_tokens").set_value(2**21).run()
    lr = [v for k, v in metrics(at).items() if k.startswith("Learning rate")]
    expected = batch.scale_learning_rate(3e-4, 2**20, 2**22, rule="sqrt", critical_batch=2**21)
    assert lr == [f"{expected:.4g}"] and any("McCandlish" in c.value for c in at.caption)


def test_batch_page_tokens_that_are_not_whole_sequences_name_the_field():
    at = open_page("page_batch.py")
    at.radio(key="batch_unit").set_value("tokens").run()
    at.number_input(key="batch_global_tokens").set_value(4_000_000).run()
    assert_clean(at)
    # the box's label, not the library's argument (global_tokens)
    texts = [_text(e.value) for e in at.error]
    assert any("Global batch [tokens per step]" in t and "nearest" in t for t in texts), texts
    assert not any("global_tokens" in t for t in texts), texts


def test_memory_page_reads_an_uploaded_config_like_the_preset():
    at = open_page("page_memory.py")
    at.selectbox(key="arch").set_value("your own (config.json)").run()
    assert_clean(at)
    assert any("Upload a config.json" in i.value for i in at.info)
    content = (DATA / "llama-2-7b" / "config.json").read_bytes()
    at.file_uploader(key="arch_config").upload("config.json", content, "application/json").run()
    assert_clean(at)
    mine = metrics(at)
    ref = open_page("page_memory.py", {"arch": "llama-2-7b"})
    assert mine == metrics(ref)
    assert load_arch("llama-2-7b").params > 0
    at.file_uploader(key="arch_config").upload(
        "config.json", b'{"model_type": "bert"}', "application/json"
    ).run()
    assert_clean(at)
    assert any("is not supported" in _text(e.value) for e in at.error)


def test_out_of_scope_note_in_the_sidebar_and_the_memory_help():
    at = open_through_navigation("page_memory.py")
    assert_clean(at)
    assert any(OUT_OF_SCOPE in c.value for c in at.sidebar.caption)
    assert "tensor, pipeline" in at.selectbox(key="arch").help


def test_memory_page_says_what_makes_it_fit_as_the_cli_does():
    """70B on 64 H100s with 4096-token activations does not fit at any ZeRO stage without
    recomputation: the page says so first and names the recomputation the CLI's `memory` names
    (ZeRO-3: full), and where the CLI names none (ZeRO-1) the stage and the mode that fit
    together."""
    import json

    from typer.testing import CliRunner

    from costmodel.cli import app

    for zero in (3, 1):
        q = {"arch": "llama-3.1-70b", "dp_ranks": "64"}
        at = open_page("page_memory.py", q)
        at.radio(key="zero_stage").set_value(zero).run()
        assert_clean(at)
        warn = " ".join(w.value for w in at.warning)
        assert "Does not fit" in warn
        # the page's default card is the H100 SXM, dgx-h100's GPU (memory gives no verdict
        # without a card)
        args = ["memory", "--arch", "llama-3.1-70b", "--zero", str(zero), "--ranks", "64"]
        args += ["--cluster", "dgx-h100"]
        out = CliRunner().invoke(app, [*args, "--json"])
        assert out.exit_code == 0, out.output
        cli = json.loads(out.output)
        assert cli["fits"] is False
        if "fits_with_recompute" in cli:
            assert f"recompute {cli['fits_with_recompute']}:" in warn
        else:  # no mode fits ZeRO-1 alone; ZeRO-3 with full recomputation does (37 GB)
            assert "ZeRO-3 and recompute full at N = 64" in warn
            assert "No recomputation mode" not in warn
    assert zero == 1 and "fits_with_recompute" not in cli  # both branches ran
    # a setup that fits gets no such warning
    at.radio(key="zero_stage").set_value(3)
    at.selectbox(key="recompute").set_value("full").run()
    assert_clean(at)
    ok = at
    assert not any("Does not fit" in w.value for w in ok.warning)


def _cost_caption(at) -> str:
    captions = [_text(c.value) for c in at.caption if "GPUs;" in _text(c.value)]
    assert len(captions) == 1, captions
    return captions[0]


def test_ddp_cost_caption_names_the_price_once_typed_or_dated():
    """The caption under the cost says where the price came from exactly once: the untouched
    box is a placeholder, not the user's ("$2 per GPU-hour, given by the user" was shown when
    nobody gave it); a typed price is the user's, with its value and no date; a published
    price carries its date once."""
    at = open_page("page_ddp.py")
    assert_clean(at)
    caption = _cost_caption(at)
    assert "$2.00 per GPU-hour, a placeholder default" in caption, caption
    assert "given by the user" not in caption.replace("one given by the user", "")
    cost = [m for m in at.metric if m.label.startswith("Cost")]
    assert len(cost) == 1 and "placeholder price" in cost[0].help  # its help says it too
    at.number_input(key="ddp_usd").set_value(2.5).run()
    assert_clean(at)
    caption = _cost_caption(at)
    assert "$2.50 per GPU-hour, given by the user" in caption and "placeholder" not in caption
    assert caption.count("given") == 1
    at.selectbox(key="ddp_price").set_value("aws-p5-on-demand").run()
    assert_clean(at)
    captions = [_text(c.value) for c in at.caption if "GPUs;" in _text(c.value)]
    date = training.load_price("aws-p5-on-demand").date
    assert len(captions) == 1 and captions[0].count(date) == 1, captions


def test_ddp_b_that_does_not_fit_has_its_warning_beside_its_step_and_cost():
    """A (fsdp) fits, B (ddp, 126 GB on an 85.5 GB H100) does not: B's step and B's cost were
    shown with no warning (the only one spoke of A); now each sits beside B's warning."""
    at = open_page("page_ddp.py", {"ddp_strategy": "fsdp"})
    at.toggle(key="ddp_pin").set_value(True).run()
    at.selectbox(key="ddp_b_strategy").set_value("ddp").run()
    assert_clean(at)
    assert "Cost (B) [USD]" in metrics(at)
    warned = [_text(w.value) for w in at.warning if "Configuration B does not fit" in w.value]
    assert len(warned) == 2, [w.value for w in at.warning]
    assert "126 GB per GPU > 85.5 GB" in warned[0] and "time and cost" in warned[1]
    assert not any("Configuration A" in w.value for w in at.warning)  # A fits
    at.selectbox(key="ddp_strategy").set_value("ddp").run()  # now both do not fit
    assert_clean(at)
    assert any("Configuration A does not fit" in w.value for w in at.warning)
