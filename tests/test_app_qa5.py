"""Headless app tests from the fifth fresh-eyes QA pass (streamlit.testing AppTest): each one
failed on the defect it names before its fix."""

from __future__ import annotations

import json

import pytest

import costmodel as cm
from costmodel.units import format_duration
from tests.test_app import _text, assert_clean, open_page, open_tables

LLAMA_70B_FSDP = {"ddp_arch": "llama-3.1-70b", "ddp_nodes": "8", "ddp_strategy": "fsdp"}


def _plain(markdown: str) -> str:
    """An element's text as shown: Markdown's escapes and bold removed."""
    return _text(markdown).replace("**", "")


def test_the_step_s_headline_parts_add_up_to_the_step():
    """Llama-3.1-70B under FSDP on 64 H100s showed "Step time 4.29 s", "Compute 3.85 s",
    "Exposed communication 22 ms" and nothing else: 404 ms waiting for the slowest rank and
    11 ms of optimizer step (10% of the step, printed by `costmodel step`) were on no line of
    the page, and A-vs-B's "One step" bars (compute + exposed) were 10% shorter than the
    steps they stood for. The page now says what the rest is, and the bars reach the step."""
    at = open_page("page_ddp.py", {**LLAMA_70B_FSDP, "ddp_pin": "true", "ddp_b_nodes": "16"})
    assert_clean(at)
    r = cm.Scenario(arch="llama-3.1-70b", cluster="dgx-h100", nodes=8, strategy="fsdp").evaluate(
        scaling=False, flips=False
    )
    assert r.sync_s > 0.05 * r.step_time_s  # the case: a part worth seeing
    captions = [_plain(c.value) for c in at.caption]
    said = next(c for c in captions if c.startswith("Step "))
    # in the answer slot under the metrics, above the inputs (and the out-of-scope note)
    assert captions.index(said) < next(i for i, c in enumerate(captions) if "Not modelled" in c)
    for part in (r.step_time_s, r.compute_s, r.exposed_comm_s, r.optimizer_s, r.sync_s):
        assert format_duration(part) in said, said
    assert "slowest rank" in said and "optimizer step" in said
    fig = next(c for c in at.get("plotly_chart") if "chart_compare_step" in c.proto.id)
    bars = json.loads(fig.proto.spec)["data"]
    step = {m.label: m.value for m in at.metric}["Step time"]
    a_label = bars[0]["y"][0]
    a_total = sum(b["x"][b["y"].index(a_label)] for b in bars)
    assert format_duration(a_total) == step  # the bar's length is the step shown
    assert a_total == pytest.approx(r.step_time_s, rel=1e-9)


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"act_seq": "0", "shape_activations": "true"}, "Sequence length [tokens]:"),
        ({"micro": "0", "shape_activations": "true"}, "Local batch per GPU [samples]:"),
        ({"layers": "0", "shape_activations": "true"}, "Layers:"),
        ({"arch": "llama-3.1-8b", "act_seq": "-5"}, "Sequence length [tokens]:"),
    ],
)
def test_memory_with_a_refused_activation_shape_shows_no_memory(query, field):
    """Sequence 0 (or micro-batch 0, layers 0) with "Include activations" on showed the refusal
    twice ("Activations: ..." and "Memory: ...") and, between them, "Memory per GPU, ZeRO-0:
    126 GB (does not fit)", its chart and tables: the memory without the activations the box
    asks for, as if the shape had none, naming the API's argument (sequence_length), not the
    box. The refusal is now said once, naming the box, and no memory is shown."""
    at = open_page("page_memory.py", query)
    assert_clean(at)
    errors = [_plain(e.value) for e in at.error]
    assert len(errors) == 1 and field in errors[0], errors
    assert not at.metric and not any(h.value.startswith("Memory per GPU") for h in at.subheader)
    assert not at.get("plotly_chart")


def test_ranks_needed_that_no_count_meets_says_the_bytes_as_every_figure_does():
    """Llama-3.1-70B's 'Ranks needed' table said "even at 10,000,000 ranks each needs
    1.39e+03 GB" beside a headline of 1.39 TB: the library's refusal wrote bytes / 1e9 with
    three significant digits, not the unit every other figure uses."""
    at = open_page("page_memory.py", {"arch": "llama-3.1-70b", "dp_ranks": "64"})
    assert_clean(at)
    at.session_state["table_ranks_needed"] = True
    at = at.run()
    notes = next(d.value for d in at.dataframe if "note" in d.value.columns)["note"]
    stage0 = next(n for n in notes if n and "ZeRO-0" in n)
    assert "1.39 TB" in stage0 and "e+" not in " ".join(n for n in notes if n), list(notes)


@pytest.mark.parametrize(
    ("stage", "buffer", "other_buffers"),
    [
        ("0 (DDP)", "DDP's bucket copy", ("ZeRO-1", "FSDP")),
        ("2 (+ gradients)", "ZeRO-2's gradient bucket", ("DDP", "FSDP")),
        ("3 (FSDP)", "FSDP's gathered units", ("DDP", "ZeRO-1")),
    ],
)
def test_memory_names_the_buffer_of_the_stage_shown_and_the_excess_unsigned(
    stage, buffer, other_buffers
):
    """The Memory page said "plus 14 GB of DDP's bucket copy, ZeRO-1/2's buckets or FSDP's
    gathered units in flight (none on one rank: it communicates nothing)" whatever the stage
    and rank count (8 ranks: the 14 GB is DDP's copy; the aside about one rank was always
    there), and "Fits? no, -58.7 GB over" (over by minus 58.7 GB) where `costmodel memory`
    says "no (58.7 GB over)"."""
    at = open_page("page_memory.py", {"zero_stage": stage})
    assert_clean(at)
    sized = next(_plain(c.value) for c in at.caption if c.value.startswith("Sized as"))
    assert buffer in sized and "one rank" not in sized, sized
    assert not any(o in sized.split("plus", 1)[1] for o in other_buffers), sized
    at = open_page("page_memory.py", {"dp_ranks": "1"})
    sized = next(_plain(c.value) for c in at.caption if c.value.startswith("Sized as"))
    assert "no communication buffer" in sized and "14 GB" not in sized, sized
    fits = next(m for m in at.metric if m.label == "Fits?")
    assert fits.value == "no" and fits.proto.delta.endswith(" over"), fits.proto.delta
    assert not fits.proto.delta.startswith("-"), fits.proto.delta


def test_one_link_without_a_crossover_names_the_algorithm_that_wins_everywhere():
    """14 GB over 64 ranks on a 50 GB/s link with no latency: "No crossover: one algorithm is
    never slower over every size", naming no algorithm (the sentence does not parse either).
    It now names the one the headline names, fastest at every size."""
    at = open_page(
        "page_collectives.py",
        {
            "view": "Formulas on one link (alpha-beta)",
            "size_text": "14GB",
            "ranks": "64",
            "bandwidth": "50GB/s",
            "latency": "0s",
        },
    )
    assert_clean(at)
    fastest = {m.label: m.value for m in at.metric}["Fastest by the formulas"]
    said = next(_plain(c.value) for c in at.caption if c.value.startswith("No crossover"))
    assert said.startswith(f"No crossover: {fastest} is the fastest at every size"), said


@pytest.mark.parametrize(("ref", "algorithm"), [("20", "ring"), ("22", "ring"), ("13f", "nvls")])
def test_a_bundled_run_that_pinned_its_algorithm_is_compared_at_that_algorithm(ref, algorithm):
    """Run 22 (2 x 8 H100, `mpirun -x NCCL_ALGO=Ring` on its header line) was compared on the
    Validate page and by `validate compare --reference 22` with the model's own pick,
    nvls_tree: "median |busbw error| 14.5%", FAIL against the docs/fidelity.md goal. Its index
    entry says the run pinned Ring, and the fit (scripts/fit_corrections.py) compares it at Ring
    (6.6%, ok); run 20 (TCPX, Ring) read 107% instead of 9.4%, 13f's pinned runs likewise. The
    one log reader now takes the index's pinned algorithm where the log prints none, and says
    it assumed it."""
    from costmodel.reference import reference_path
    from costmodel.validation.logread import read_log
    from tests._cli import run

    path = reference_path(ref)
    read = read_log(path.read_bytes(), path.name)
    assert algorithm in set(read.rows["algo_env"].dropna())
    assert any(field == "algorithm" for field, _, _ in read.assumed), read.assumed
    out = run("validate", "compare", "--reference", ref, "--json")
    assert out.exit_code in (0, 1), out.stderr
    assert f"algorithm = {algorithm}" in out.stderr, out.stderr
    at = open_page(
        "page_validate.py", {"val_source": "A reference run", "val_reference": path.name}
    )
    assert_clean(at)
    at = open_tables(at)
    assumed = next(_plain(c.value) for c in at.caption if "Assumed" in c.value)
    assert f"algorithm = {algorithm}" in assumed or "algorithm = nvls, ring" in assumed, assumed
    rows = next(d.value for d in at.dataframe if "predicted_busbw_bytes_per_s" in d.value)
    if ref != "13f":  # one run, one pinned algorithm: every row predicted at it
        assert set(rows["algorithm"]) == {algorithm}, set(rows["algorithm"])


def test_predict_with_every_algorithm_names_the_command_that_prints_them():
    """`costmodel predict --algorithm all` said "call predict_all_algorithms(op, sizes, cluster,
    nodes, model=...)": a Python call, to someone at a shell. It names the command that prints
    every algorithm (which is how `collective --algorithm all` answers the same question)."""
    from tests._cli import one_line_error, run

    args = ("--cluster", "dgx-h100", "--nodes", "8", "--sizes", "14GB", "--algorithm", "all")
    line = one_line_error(run("predict", *args), "--algorithm")
    assert "predict_all_algorithms" not in line
    assert "costmodel collective all_reduce --cluster dgx-h100 --nodes 8" in line, line
    suggested = ("collective", "all_reduce", "--cluster", "dgx-h100", "--nodes", "8")
    out = run(*suggested, "--size", "14GB", "--algorithm", "all")
    assert out.exit_code == 0 and "nvls_tree" in out.stdout, out.stdout


def test_the_app_writes_one_node_and_two_nodes_as_the_cli_does():
    """Collectives' side-by-side said "A = dgx-h100, 8 node(s), nccl" after `collective` and
    `predict` had stopped writing "node(s)"; the step page's scaling warning said "at 1 node(s)"."""
    at = open_page(
        "page_collectives.py",
        {"coll_compare": "true", "pin_cluster": "dgx-b200", "pin_nodes": "1"},
    )
    assert_clean(at)
    side = next(_plain(m.value) for m in at.markdown if "Side by side" in m.value)
    assert "A = dgx-h100, 1 node, nccl" in side and "B = dgx-b200, 1 node, nccl" in side, side
    at = open_page("page_collectives.py", {"coll_compare": "true", "nccl_nodes": "8"})
    side = next(_plain(m.value) for m in at.markdown if "Side by side" in m.value)
    assert "8 nodes" in side and "node(s)" not in side, side
    at = open_page("page_ddp.py", {"ddp_chart_tab": "Scaling vs GPU count"})
    assert_clean(at)
    said = [_plain(w.value) for w in at.warning if "Does not fit in GPU memory at" in w.value]
    assert said and all("node(s)" not in w for w in said), said


def test_b_s_cost_says_why_its_band_is_unknown():
    """H100 (A) against B200 (B): A's cost caption gave "Expected-error band (the step's):
    221.8-293.0 days", B's gave none and no reason (a B200's compute is the default MFU, so its
    band is unknown), which reads as B's days being certain. The reason is now said, in the
    words of `costmodel step`."""
    from costmodel.strategy.band import UNKNOWN_COMPUTE

    at = open_page(
        "page_ddp.py",
        {**LLAMA_70B_FSDP, "ddp_recompute": "full", "ddp_pin": "true", "ddp_b_cluster": "dgx-b200"},
    )
    assert_clean(at)
    b = next(_plain(c.value) for c in at.caption if c.value.startswith("(B):"))
    assert UNKNOWN_COMPUTE in b, b
    a = next(_plain(c.value) for c in at.caption if c.value.startswith("(A):"))
    assert "Expected-error band (the step's):" in a and "unknown" not in a, a


def test_memory_says_whether_more_ranks_fit_the_stage_shown():
    """Llama-3.1-70B under ZeRO-3 on 64 ranks: "What makes it fit: recompute full. More ranks:
    see 'Ranks needed' below", where that table says no rank count fits ZeRO-3 (the 115 GB of
    activations are not sharded). The warning now says so, or names the rank count that fits
    (the table's own figure)."""
    at = open_page(
        "page_memory.py", {"arch": "llama-3.1-70b", "zero_stage": "3 (FSDP)", "dp_ranks": "64"}
    )
    assert_clean(at)
    said = next(_plain(w.value) for w in at.warning if w.value.startswith("Does not fit"))
    assert "More ranks do not make ZeRO-3 fit" in said and "see 'Ranks needed'" not in said
    at = open_page("page_memory.py", {"zero_stage": "1 (optimizer)", "dp_ranks": "1"})
    said = next(_plain(w.value) for w in at.warning if w.value.startswith("Does not fit"))
    table = open_tables(at)
    needed = next(d.value for d in table.dataframe if "ranks needed" in d.value.columns)
    fits_from = int(needed.loc[needed["ZeRO stage"] == 1, "ranks needed"].iloc[0])
    assert f"More ranks: ZeRO-1 fits from N = {fits_from} " in said, said


@pytest.mark.parametrize(
    ("query", "box", "api"),
    [
        ({"ddp_seq": "0"}, "Sequence length [tokens]:", "sequence_length"),
        ({"ddp_local_batch": "0"}, "Local batch per GPU [samples]:", "local_batch"),
        ({"ddp_strategy": "hsdp", "ddp_group": "3"}, "HSDP group [GPUs]: 3 does not", "group_size"),
        ({"ddp_power": "5000"}, "GPU power limit [W]:", "power_limit_w"),
    ],
)
def test_a_refused_step_input_names_its_box_once(query, box, api):
    """The step page refused HSDP group 3 on 32 GPUs with "Scenario: Scenario: group_size: 3
    does not divide the 32 ranks" (the section's name twice, then the API's argument), and
    sequence length 0 with "Scenario: sequence_length: ...", while its boxes are labelled
    "HSDP group [GPUs]", "Sequence length [tokens]". A refusal now names the box, once."""
    at = open_page("page_ddp.py", query)
    assert_clean(at)
    (said,) = [_plain(e.value) for e in at.error]
    assert box in said and api not in said and said.count("Scenario") == 1, said
