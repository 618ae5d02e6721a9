"""Headless app tests from the third fresh-eyes QA pass (streamlit.testing AppTest): each one
failed on the defect it names before its fix."""

from __future__ import annotations

from tests.test_app import _text, assert_clean, metrics, open_page


def _plain(markdown: str) -> str:
    """An error's text as shown: Markdown's escapes and bold removed."""
    return _text(markdown).replace("**", "")


def _subheaders(at) -> list[str]:
    return [h.value for h in at.subheader]


def test_step_headline_of_a_setup_that_does_not_fit_says_so():
    """The step page's headline sentence ("Step on 32 GPUs (4 x 8): 549 ms, compute-bound")
    gave a step for 7B under DDP on 80 GB cards (126 GB per GPU) with no word that it cannot
    run: the warning sat below the inputs, a screen and a half lower on a phone."""
    at = open_page("page_ddp.py")
    assert_clean(at)
    head = next(h for h in _subheaders(at) if h.startswith("Step on"))
    assert "does not fit" in head and "126 GB per GPU > 85.5 GB" in head, head
    at = open_page("page_ddp.py", {"ddp_strategy": "fsdp"})
    assert_clean(at)
    head = next(h for h in _subheaders(at) if h.startswith("Step on"))
    assert "fit" not in head, head


def test_step_page_bad_measured_compute_names_the_box_once():
    """A bad measured compute ("-1", "0", "abc") said "**Scenario**: compute_time_s:
    compute_time_s: must be ... got '-1' (got '-1')": the API's field name twice, not the box
    the user typed in, while every other box on the page is named by its label."""
    for bad in ("-1", "0", "abc", "2e6"):
        at = open_page("page_ddp.py", {"ddp_compute": bad})
        assert_clean(at)
        errors = [_plain(e.value) for e in at.error]
        assert len(errors) == 1, (bad, errors)
        assert errors[0].startswith("Measured compute per micro-batch:"), errors
        assert "compute_time_s" not in errors[0] and errors[0].count("got") <= 1, errors
        assert not at.metric  # no step from a refused input
    at = open_page("page_ddp.py", {"ddp_compute": "350ms"})
    assert_clean(at)
    assert not at.error and any(m.label == "Step time" for m in at.metric)


def test_memory_heads_box_is_off_while_nothing_uses_the_heads():
    """Heads 32 -> 64 changed nothing on the Memory page's first view: the heads enter only the
    attention-score term (5 a s^2 b), which FlashAttention (on by default) and recomputation
    drop. The box is greyed out then, with why; it counts again without them."""
    at = open_page("page_memory.py", {"shape_activations": "true"})
    assert_clean(at)
    heads = at.number_input(key="heads")
    assert heads.disabled and "FlashAttention" in heads.help
    at = open_page(
        "page_memory.py", {"flash": "false", "recompute": "full", "shape_activations": "true"}
    )
    assert at.number_input(key="heads").disabled
    at = open_page("page_memory.py", {"flash": "false", "shape_activations": "true"})
    assert not at.number_input(key="heads").disabled
    before = metrics(at)["Memory per GPU, ZeRO-0"]
    at.number_input(key="heads").set_value(64).run()
    assert_clean(at)
    assert metrics(at)["Memory per GPU, ZeRO-0"] != before


def _after(at, subheader: str) -> list:
    """The page's elements after the subheader ``subheader``, in page order."""
    nodes = list(at.main)
    start = next(i for i, n in enumerate(nodes) if n.type == "subheader" and n.value == subheader)
    return nodes[start + 1 :]


def test_bucket_advisor_of_a_setup_that_does_not_fit_says_so_beside_it():
    """The bucket_cap advisor gave "Exposed at the best cap 14.5 ms" for 7B under DDP on 80 GB
    cards (126 GB per GPU) with no warning in its section: the page's warnings sit a screen
    above. A fitting setup gets no such warning."""
    at = open_page("page_ddp.py")
    assert_clean(at)
    after = _after(at, "bucket_cap advisor")
    first_metric = next(i for i, n in enumerate(after) if n.type == "metric")
    warned = [n.value for n in after[:first_metric] if n.type == "alert" or "warning" in n.type]
    assert any("does not fit" in _plain(w) for w in warned), [n.type for n in after[:5]]
    at = open_page("page_ddp.py", {"ddp_nodes": "8", "ddp_local_batch": "1", "ddp_params": "1B"})
    assert_clean(at)
    after = _after(at, "bucket_cap advisor")
    first_metric = next(i for i, n in enumerate(after) if n.type == "metric")
    assert not [n for n in after[:first_metric] if "warning" in n.type or n.type == "alert"]


def test_step_page_s_verdict_flip_and_scaling_of_a_setup_that_does_not_fit_say_so():
    """The step page's "Smallest change that flips the verdict" (green) and its "Scaling vs GPU
    count" chart were shown for 7B under DDP on 80 GB cards (126 GB per GPU) with no word beside
    them that the step cannot run; with fsdp (fits) neither says so."""
    for tab in ("One step", "Scaling vs GPU count"):
        at = open_page("page_ddp.py", {"ddp_chart_tab": tab})
        assert_clean(at)
        texts = [_plain(w.value) for w in at.warning] + [_plain(i.value) for i in at.info]
        flip = "Smallest change that flips the comm-vs-compute balance"
        assert any(flip in t and "does not fit" in t for t in texts), texts
        assert not any(flip in _plain(x.value) for x in at.success)
    at = open_page("page_ddp.py", {"ddp_chart_tab": "Scaling vs GPU count"})
    assert any("Does not fit in GPU memory at 1" in _plain(w.value) for w in at.warning)
    at = open_page("page_ddp.py", {"ddp_strategy": "fsdp", "ddp_chart_tab": "Scaling vs GPU count"})
    assert_clean(at)
    assert not any("Does not fit in GPU memory at" in _plain(w.value) for w in at.warning)
