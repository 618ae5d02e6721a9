"""Headless (AppTest) checks from the thirty-fifth QA pass (a new user planning a run: edge
values in every box and link, A against B, presets, uploads).

Each test failed before its fix.
"""

from __future__ import annotations

import logging

import pytest

from tests.test_app import _text, assert_clean, metrics, open_page, open_tables

logging.getLogger("streamlit").setLevel(logging.ERROR)


def _errors(at) -> list[str]:
    return [_text(e.value) for e in at.error]


@pytest.mark.parametrize(
    ("page", "key", "text", "label"),
    [
        ("page_ddp.py", "ddp_power", "500W", "GPU power limit [W] (optional)"),
        ("page_ddp.py", "ddp_usd", "$3", "USD per GPU-hour (h100-sxm)"),
        ("page_ddp.py", "ddp_contention", "abc", "Overlap contention c [0-1]"),
        ("page_batch.py", "base_lr", "3e-4x", "Base learning rate [-]"),
        ("page_memory.py", "fragmentation", "5%", "Fragmentation allowance"),
    ],
)
def test_a_link_with_text_in_a_fraction_box_is_named(page, key, text, label) -> None:
    """A whole-number box's link that holds no number was named in red ("is not a whole
    number ..., the default is used"); a box of fractions dropped it without a word
    (``?ddp_power=500W`` ran at the datasheet's 700 W, ``?ddp_usd=$3`` at the $2
    placeholder). Now it is named, with the box, and the URL loses it."""
    at = open_page(page, {key: text})
    assert_clean(at)
    said = [e for e in _errors(at) if f"URL parameter {key}: {text!r} is not a number" in e]
    assert said and label in said[0] and "the default is used" in said[0], _errors(at)
    assert key not in at.query_params


def test_a_link_with_text_in_a_bounded_fraction_box_names_its_range() -> None:
    at = open_page("page_ddp.py", {"ddp_contention": "high"})
    assert any("an overlap contention in [0, 1]" in e for e in _errors(at)), _errors(at)


def test_a_fraction_boxs_number_in_a_link_is_still_read() -> None:
    at = open_page("page_ddp.py", {"ddp_usd": "3.5"})
    assert_clean(at)
    assert not [e for e in _errors(at) if "URL parameter" in e], _errors(at)
    assert metrics(at)["Cost [USD]"] != metrics(open_page("page_ddp.py"))["Cost [USD]"]


def test_tokens_to_train_reads_the_token_grammar_of_train() -> None:
    """``train --tokens 2Ti`` (2 x 2^40 tokens, the token grammar of every token option) was
    refused by the step page's "Tokens to train" box as "cannot parse '2Ti'", in the bare
    count's words and without the box's range. Now it gives the wall clock of 2,199,023,255,552
    tokens, as the CLI does: 1.0995x that of 2T."""
    binary = open_page("page_ddp.py", {"ddp_tokens": "2Ti"})
    assert_clean(binary)
    assert not _errors(binary), _errors(binary)
    decimal = open_page("page_ddp.py", {"ddp_tokens": "2T"})
    gpu_hours = [float(metrics(a)["GPU-hours"].replace(",", "")) for a in (binary, decimal)]
    assert gpu_hours[0] / gpu_hours[1] == pytest.approx(2**41 / 2e12, rel=1e-3), gpu_hours


def test_b_takes_its_own_compute_precision_as_scenario_vs_does() -> None:
    """H100 at fp8 against an A100: B took A's fp8 and was refused "use bf16", which only A's
    box could change (and so A). B has its own precision now ("same as A" by default), as
    ``scenario --precision fp8 --vs cluster=dgx-a100,precision=bf16``: A 446 ms, B 1.17 s."""
    query = {"ddp_precision": "fp8", "ddp_pin": "true", "ddp_b_cluster": "dgx-a100"}
    same = open_page("page_ddp.py", query)
    assert_clean(same)
    assert any(e.startswith("**Configuration B**: Compute precision (B): ") for e in _errors(same))
    at = open_tables(open_page("page_ddp.py", {**query, "ddp_b_precision": "bf16"}))
    assert_clean(at)
    assert not _errors(at), _errors(at)
    rows = next(d.value for d in at.dataframe if "B - A" in d.value.columns).set_index("figure")
    assert (rows.loc["step time", "A"], rows.loc["step time", "B"]) == ("446 ms", "1.17 s")
    assert any(
        "dgx-h100 x 4 (fp8), ddp  |  B: 7 B params on dgx-a100 x 4, ddp" in c.value
        for c in at.caption
    ), [c.value for c in at.caption]


def test_b_precision_as_a_is_said_to_be_the_same() -> None:
    at = open_page("page_ddp.py", {"ddp_pin": "true", "ddp_b_precision": "bf16"})
    assert any("B is the same as A" in i.value for i in at.info)
    at = open_page("page_ddp.py", {"ddp_pin": "true", "ddp_b_precision": "fp8"})
    assert not any("B is the same as A" in i.value for i in at.info)


def test_b_takes_its_own_hsdp_group_as_scenario_vs_does() -> None:
    """HSDP at a group of 16 (two H100 nodes) against one node: B took A's group and was
    refused "16 does not divide the 8 ranks" with no box of B's to change it in. B has its own
    group box now (shown while B runs hsdp), as ``scenario --strategy hsdp --group-size 16
    --vs nodes=1,group_size=8``: A 513 ms, B 500 ms."""
    query = {"ddp_strategy": "hsdp", "ddp_group": "16", "ddp_pin": "true", "ddp_b_nodes": "1"}
    kept = open_page("page_ddp.py", query)
    assert_clean(kept)
    assert any(
        e.startswith("**Configuration B**: HSDP group (B) [GPUs]: 16 does not divide the 8 ranks")
        for e in _errors(kept)
    ), _errors(kept)
    at = open_tables(open_page("page_ddp.py", {**query, "ddp_b_group": "8"}))
    assert_clean(at)
    assert not _errors(at), _errors(at)
    rows = next(d.value for d in at.dataframe if "B - A" in d.value.columns).set_index("figure")
    assert (rows.loc["step time", "A"], rows.loc["step time", "B"]) == ("513 ms", "500 ms")
    # A's own group typed for B leaves B the same as A
    same = open_page("page_ddp.py", {**query, "ddp_b_nodes": "", "ddp_b_group": "16"})
    assert any("B is the same as A" in i.value for i in same.info)


def test_memory_b_takes_its_own_hsdp_group() -> None:
    """ZeRO-3 as hsdp at a group of 8 against B on 4 ranks: B took A's group and was refused
    under A's box ("HSDP group [GPUs]: 8 does not divide the 4 ranks"), which only A could
    change. B has its own group box now (shown while B is ZeRO-3 as hsdp); at 4 it needs
    29.3 GB per GPU, as ``costmodel memory --params 7B --strategy hsdp --group-size 4
    --ranks 4``."""
    query = {
        "zero_stage": "3",
        "mem_strategy": "hsdp",
        "mem_group": "8",
        "mem_pin": "true",
        "mem_b_ranks": "4",
    }
    kept = open_page("page_memory.py", query)
    assert_clean(kept)
    assert any(
        e.startswith("**Configuration B**: HSDP group (B) [GPUs]: 8 does not divide the 4 ranks")
        for e in _errors(kept)
    ), _errors(kept)
    at = open_page("page_memory.py", {**query, "mem_b_group": "4"})
    assert_clean(at)
    assert not _errors(at), _errors(at)
    assert any("B needs 29.3 GB of 85.5 GB (fits)" in s.value for s in at.success)
    same = open_page("page_memory.py", {**query, "mem_b_ranks": "", "mem_b_group": "8"})
    assert any("B is the same as A" in i.value for i in same.info)


def test_memory_b_takes_its_own_recipe_as_scenario_vs_does() -> None:
    """fp8-mixed on H100 against an A100: B took A's recipe and was refused (no fp8 tensor
    cores) naming A's box, which only A could change. B has its own recipe box now, as
    ``scenario --recipe fp8-mixed --vs cluster=dgx-a100,recipe=mixed-adam``: 105 GB against
    126 GB per GPU."""
    query = {"recipe": "fp8-mixed", "mem_pin": "true", "mem_b_gpu": "a100-sxm-80gb"}
    kept = open_page("page_memory.py", query)
    assert_clean(kept)
    assert any(
        e.startswith("**GPU (B)**: Precision recipe (B): fp8-mixed trains with fp8")
        for e in _errors(kept)
    ), _errors(kept)
    at = open_page("page_memory.py", {**query, "mem_b_recipe": "mixed-adam"})
    assert_clean(at)
    assert not _errors(at), _errors(at)
    assert any(
        "A needs 105 GB per GPU" in w.value and "B needs 126 GB" in w.value for w in at.warning
    )


def test_b_says_its_own_notes_as_scenario_vs_does() -> None:
    """A's bucket_cap beside B under FSDP: ``scenario --bucket 100MiB --vs strategy=fsdp`` says
    B does not apply it, and ``--vs arch=llama-3.1-405b`` that B's model needs tensor and
    pipeline parallelism ("note (B): ..."); the page showed A's notes only."""
    at = open_page(
        "page_ddp.py", {"ddp_bucket": "100MiB", "ddp_pin": "true", "ddp_b_strategy": "fsdp"}
    )
    assert_clean(at)
    said = [_text(c.value) for c in at.caption]
    assert any(c.startswith("Note (B): bucket_cap_bytes: not applied to fsdp") for c in said), said
    big = open_page("page_ddp.py", {"ddp_pin": "true", "ddp_b_arch": "llama-3.1-405b"})
    said = [_text(c.value) for c in big.caption]
    assert any(
        c.startswith("Note (B): a model of 406B parameters: production runs") for c in said
    ), said


def test_memory_b_says_what_its_model_leaves_out() -> None:
    """B on llama-3.1-405b (A a 7B count): ``costmodel memory --arch llama-3.1-405b`` says
    production runs of this size add tensor and pipeline parallelism, and the page says it for
    A's own 405B model; for B's it said nothing. A mixture of experts as B gets its note too."""
    at = open_page("page_memory.py", {"mem_pin": "true", "mem_b_arch": "llama-3.1-405b"})
    assert_clean(at)
    said = [_text(c.value) for c in at.caption]
    assert any(
        c.startswith("Note (B): a model of 406B parameters: production runs") for c in said
    ), said
    moe = open_page("page_memory.py", {"mem_pin": "true", "mem_b_arch": "mixtral-8x7b"})
    said = [_text(c.value) for c in moe.caption]
    assert any(c.startswith("Note (B): mixtral-8x7b is a mixture of experts") for c in said), said


@pytest.mark.parametrize(("nodes", "tail"), [("1", "it changes nothing here)."), ("4", "use it.")])
def test_cluster_sharp_box_says_what_it_changes(nodes, tail) -> None:
    """Ticking "In-network reduction across nodes (SHARP)" moved the hierarchical columns
    alone (8.39 -> 6.98 ms at 4 nodes) and, on one node, nothing at all, while the page said
    neither: the model's time above stays 6.08 ms. The caption over the columns says it now."""
    at = open_page("page_cluster.py", {"cl_sharp": "true", "cl_nodes": nodes})
    assert_clean(at)
    said = next(_text(c.value) for c in at.caption if c.value.startswith("Below: "))
    assert "In-network reduction (SHARP) is on: the hierarchical columns" in said, said
    assert said.endswith(tail), said
    off = open_page("page_cluster.py", {"cl_nodes": nodes})
    assert not any("SHARP" in c.value for c in off.caption)


def test_validate_page_warns_when_no_preset_matches_the_log(tmp_path) -> None:
    """``validate compare`` refuses a log of a GPU no preset has without ``--cluster``; the
    page compared it on its default (dgx-h100) with only a grey caption. Now a warning says
    so and names the box; a bundled run on its own preset gets no such warning."""
    from costmodel.reference import reference_path

    other = tmp_path / "a6000_allreduce.txt"  # bundled 13a with a GPU no preset has
    other.write_text(reference_path("13a").read_text().replace("H100 80GB HBM3", "RTX A6000"))
    warned = []
    for path in (other, reference_path("13a")):
        at = open_page("page_validate.py")
        at.file_uploader(key="val_upload").set_value((path.name, path.read_bytes(), "text/plain"))
        at.run()
        assert_clean(at)
        warned.append([_text(w.value) for w in at.warning if "No cluster preset" in _text(w.value)])
    assert len(warned[0]) == 1, warned
    assert "RTX A6000" in warned[0][0] and "compared on dgx-h100" in warned[0][0]
    assert "'Cluster it ran on'" in warned[0][0]
    assert warned[1] == [], warned[1]
