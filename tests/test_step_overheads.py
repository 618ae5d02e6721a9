"""One road for the memory's overheads on the step surfaces.

`costmodel memory --cuda-context --fragmentation` (strategy_memory's ``cuda_context_bytes`` and
``fragmentation``, the Memory page's "CUDA context, fragmentation" boxes) could say "does not
fit" where every step surface said "fits": the API's ``strategy_step``, ``Scenario``, the
advisor, the CLI's ``step``/``scenario``/``train``, the step sweep and the step page sized the
step's memory without them. They all take both now, with memory's names, defaults and ranges:
one question gets one memory per GPU and one verdict on every surface, equal to
``strategy_memory`` of the step's layout with the same overheads.
"""

from __future__ import annotations

import json
import re

import pytest
from pydantic import ValidationError

import costmodel as cm
from costmodel import presets
from costmodel.scenario import Scenario
from costmodel.strategy import strategy_step
from costmodel.strategy.advisor import advise, advise_nodes, fit_suggestions
from costmodel.strategy.layout import make_layout
from costmodel.strategy.memory import strategy_memory
from costmodel.units import format_bytes
from tests._cli import one_line_error, run
from tests._first_view import sent_messages
from tests.test_app import _text, assert_clean, metrics, open_page

#: Llama-2-7B under ZeRO-1 on one DGX H100 node (8 GPUs): 60.9 GB a GPU of its 85.5 GB.
ARCH, CLUSTER, STRATEGY = "llama-2-7b", "dgx-h100", "zero1"
GPU_BYTES = float(presets.cluster(CLUSTER).gpu.memory_bytes)

#: (as typed on the CLI, the page and a sweep; in SI numbers for the API): none; a 2 GiB
#: context and 5 % fragmentation (66 GB: still fits); a 30 GB context (90.9 GB: does not fit)
NONE = (("0", 0.0), (0.0, 0.0))
SMALL = (("2GiB", 0.05), (2.0 * 2**30, 0.05))
BIG = (("30GB", 0.0), (30e9, 0.0))


def reference(ctx: float, frag: float) -> float:
    """strategy_memory of the step's layout with the same overheads [B]: what every surface
    must report."""
    lay = make_layout(strategy=STRATEGY, ranks=8, gpus_per_node=8)
    return float(
        strategy_memory(lay, arch=ARCH, cuda_context_bytes=ctx, fragmentation=frag).total_bytes
    )


def test_the_question_is_one_the_overheads_decide():
    """Not a vacuous flip: without overheads it fits, the small ones keep it fitting with a
    different total, the big context does not fit."""
    none, small, big = (reference(*o[1]) for o in (NONE, SMALL, BIG))
    assert none < small <= GPU_BYTES < big
    # C + f x what the allocator holds (the buffers included), as training_memory says
    assert small == pytest.approx(2 * 2**30 + 1.05 * none, rel=1e-12)


# --- each surface's (memory per GPU [B], fits) for (typed, numbers) ---------------------------
def _api(typed, numbers):
    ctx, frag = numbers
    s = strategy_step(
        arch=ARCH,
        cluster=CLUSTER,
        nodes=1,
        strategy=STRATEGY,
        cuda_context_bytes=ctx,
        fragmentation=frag,
        timeline=False,
        band=False,
    )
    return s.memory_bytes, s.fits


def _scenario(typed, numbers):
    ctx, frag = numbers
    r = Scenario(
        arch=ARCH, cluster=CLUSTER, strategy=STRATEGY, cuda_context_bytes=ctx, fragmentation=frag
    ).evaluate(scaling=False, flips=False)
    return r.memory_total_bytes, r.fits


def _scenario_text(typed, numbers):
    """Scenario reads the context as a size with its unit too (``"2GiB"``), as with_changes."""
    ctx, frag = typed
    r = Scenario(
        arch=ARCH, cluster=CLUSTER, strategy=STRATEGY, cuda_context_bytes=ctx, fragmentation=frag
    ).evaluate(scaling=False, flips=False)
    return r.memory_total_bytes, r.fits


def _scenario_changes(typed, numbers):
    """B of a comparison: ``with_changes("cuda_context=...,fragmentation=...")``."""
    ctx, frag = typed
    base = Scenario(arch=ARCH, cluster=CLUSTER, strategy=STRATEGY)
    r = base.with_changes(f"cuda_context={ctx},fragmentation={frag}").evaluate(
        scaling=False, flips=False
    )
    return r.memory_total_bytes, r.fits


def _row(adv, layout=STRATEGY):
    row = next(r for r in adv.rows() if r["layout"] == layout)
    return row["memory_bytes"], row["fits"]


def _advise(typed, numbers):
    ctx, frag = numbers
    return _row(
        advise(
            arch=ARCH,
            cluster=CLUSTER,
            nodes=1,
            band=False,
            cuda_context_bytes=ctx,
            fragmentation=frag,
        )
    )


def _advise_nodes(typed, numbers):
    ctx, frag = numbers
    table = advise_nodes(
        arch=ARCH,
        cluster=CLUSTER,
        nodes=(1, 2),
        band=False,
        cuda_context_bytes=ctx,
        fragmentation=frag,
    )
    return _row(table[1])


def _fit_suggestions(typed, numbers):
    ctx, frag = numbers
    fa = fit_suggestions(
        arch=ARCH,
        cluster=CLUSTER,
        nodes=1,
        strategy=STRATEGY,
        band=False,
        cuda_context_bytes=ctx,
        fragmentation=frag,
    )
    return fa.base.memory_bytes, fa.fits


def _cli_json(*args: str) -> dict:
    r = run(*args, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def _over(typed) -> tuple[str, ...]:
    return ("--cuda-context", typed[0], "--fragmentation", str(typed[1]))


def _cli_step(typed, numbers):
    d = _cli_json(
        "step", "--arch", ARCH, "--cluster", CLUSTER, "--strategy", STRATEGY, *_over(typed)
    )
    # the inputs, as memory --json writes them
    assert (d["cuda_context_bytes"], d["fragmentation"]) == numbers
    return d["memory_bytes"], d["fits"]


def _cli_step_all(typed, numbers):
    d = _cli_json("step", "--arch", ARCH, "--cluster", CLUSTER, "--strategy", "all", *_over(typed))
    row = next(r for r in d["strategies"] if r["layout"] == STRATEGY)
    assert (row["cuda_context_bytes"], row["fragmentation"]) == numbers
    return row["memory_bytes"], row["fits"]


def _cli_scenario(typed, numbers):
    d = _cli_json("scenario", "--arch", ARCH, "--strategy", STRATEGY, *_over(typed))
    s = d["scenario"]
    assert (s["cuda_context_bytes"], s["fragmentation"]) == numbers
    return d["memory_total_bytes"], d["fits"]


def _cli_train(typed, numbers):
    d = _cli_json("train", "--arch", ARCH, "--tokens", "1B", "--strategy", STRATEGY, *_over(typed))
    assert (d["cuda_context_bytes"], d["fragmentation"]) == numbers
    return d["memory_total_bytes"], d["fits"]


def _cli_memory(typed, numbers):
    """`costmodel memory`, the surface the others must now agree with."""
    d = _cli_json(
        "memory", "--arch", ARCH, "--strategy", STRATEGY, "--ranks", "8", "--cluster", CLUSTER,
        *_over(typed),
    )  # fmt: skip
    return d["memory_bytes"], d["fits"]


def _sweep(typed, numbers):
    ctx, frag = typed
    df = cm.sweep(
        kind="step",
        arch=ARCH,
        preset=CLUSTER,
        strategy=STRATEGY,
        cuda_context=ctx,
        fragmentation=str(frag),
    )
    assert len(df) == 1 and df["error"].iloc[0] == ""
    # the inputs are columns of the row, as every swept step option
    assert (df["cuda_context_bytes"].iloc[0], df["fragmentation"].iloc[0]) == numbers
    return float(df["memory_GB"].iloc[0]) * 1e9, bool(df["fits"].iloc[0])


def _page_query(typed) -> dict[str, str]:
    return {
        "ddp_arch": ARCH,
        "ddp_cluster": CLUSTER,
        "ddp_nodes": "1",
        "ddp_strategy": STRATEGY,
        "ddp_context": typed[0],
        "ddp_fragmentation": str(typed[1]),
    }


def _strategy_table_row(at, layout: str) -> list[str]:
    """The strategy advisor's row of ``layout`` on the step page (its table shown as text)."""
    for md in at.markdown:
        text = _text(md.value)
        if "| memory per GPU |" not in text:
            continue
        for line in text.splitlines():
            # the text table keeps a number and its unit together (a no-break space)
            cells = [c.replace("\xa0", " ").strip() for c in line.strip().strip("|").split("|")]
            if len(cells) > 3 and cells[1] == layout:
                return cells
    raise AssertionError("no strategy table on the page")


def _page(typed, numbers):
    at = open_page("page_ddp.py", _page_query(typed))
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    memory = metrics(at)["Memory per GPU"]
    delta = next(m for m in at.metric if m.label == "Memory per GPU")
    fits = _DELTA[delta.proto.delta]
    # the strategy advisor's table says the same for this layout
    row = _strategy_table_row(at, STRATEGY)
    assert row[2] == memory and row[3] == ("yes" if fits else "NO"), row
    return memory, fits


_DELTA = {"fits": True, "does not fit": False}

SURFACES = {
    "api strategy_step": _api,
    "Scenario": _scenario,
    "Scenario, context with its unit": _scenario_text,
    "Scenario.with_changes": _scenario_changes,
    "advise": _advise,
    "advise_nodes": _advise_nodes,
    "fit_suggestions": _fit_suggestions,
    "cli step": _cli_step,
    "cli step --strategy all": _cli_step_all,
    "cli scenario": _cli_scenario,
    "cli train": _cli_train,
    "cli memory": _cli_memory,
    "step sweep": _sweep,
}


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize("overheads", [NONE, SMALL, BIG], ids=["none", "small", "big"])
def test_every_surface_reports_strategy_memory_with_the_overheads(surface, overheads):
    typed, numbers = overheads
    want = reference(*numbers)
    memory, fits = SURFACES[surface](typed, numbers)
    assert memory == pytest.approx(want, rel=1e-12), surface
    assert fits is (want <= GPU_BYTES), surface


@pytest.mark.parametrize("overheads", [NONE, SMALL, BIG], ids=["none", "small", "big"])
def test_the_step_page_reports_the_same_memory_and_verdict(overheads):
    typed, numbers = overheads
    want = reference(*numbers)
    memory, fits = _page(typed, numbers)
    assert memory == format_bytes(want)
    assert fits is (want <= GPU_BYTES)


def test_a_big_context_flips_the_verdict_on_every_surface():
    """Fits at no overheads, does not fit with a 30 GB context: on each surface, both ways."""
    for name, surface in {**SURFACES, "step page": _page}.items():
        assert surface(*NONE)[1] is True, name
        assert surface(*BIG)[1] is False, name


def test_the_overheads_change_the_memory_only():
    """The step's times do not depend on them: the same schedule, another memory."""
    a = _api_step(*NONE[1])
    b = _api_step(*BIG[1])
    assert a.step_time_s == b.step_time_s and a.comm_s == b.comm_s
    assert b.memory_bytes - a.memory_bytes == pytest.approx(30e9, rel=1e-12)
    parts = b.memory.parts()
    assert parts["cuda_context_bytes"] == 30e9


def _api_step(ctx, frag):
    return strategy_step(
        arch=ARCH,
        cluster=CLUSTER,
        strategy=STRATEGY,
        cuda_context_bytes=ctx,
        fragmentation=frag,
        timeline=False,
    )


def test_what_makes_it_fit_counts_the_overheads():
    """Each change the advisor suggests is sized with the same overheads: a sharded layout's
    memory is strategy_memory of that layout with them, so a change said to fit fits."""
    fa = fit_suggestions(
        arch=ARCH,
        cluster=CLUSTER,
        strategy=STRATEGY,
        band=False,
        cuda_context_bytes=30e9,
        fragmentation=0.0,
    )
    assert not fa.fits
    fsdp = next(c for c in fa.changes if c.change == "fsdp")
    lay = make_layout(strategy="fsdp", ranks=8, gpus_per_node=8)
    want = strategy_memory(lay, arch=ARCH, cuda_context_bytes=30e9).total_bytes
    assert fsdp.step.memory_bytes == want
    assert all(c.step.memory.base.cuda_context_bytes == 30e9 for c in fa.changes)


def test_scenario_s_largest_model_and_scaling_table_count_them():
    """max_params is layout_max_params with the overheads (as `memory`'s largest model) and
    the scaling table's memory is strategy_memory's at each node count."""
    from costmodel.strategy.memory import layout_max_params

    for strategy in ("ddp", STRATEGY):
        s = Scenario(arch=ARCH, strategy=strategy, cuda_context_bytes=30e9, fragmentation=0.05)
        r = s.evaluate(flips=False)
        mem = strategy_memory(s.layout(), arch=ARCH, cuda_context_bytes=30e9, fragmentation=0.05)
        assert r.max_params == layout_max_params(
            GPU_BYTES,
            s.layout(),
            activations_bytes=mem.activations_bytes,
            cuda_context_bytes=30e9,
            fragmentation=0.05,
        )
        for row in r.scaling:
            lay = s.layout(row.nodes)
            want = strategy_memory(lay, arch=ARCH, cuda_context_bytes=30e9, fragmentation=0.05)
            assert row.memory_bytes == float(want.total_bytes), (strategy, row.nodes)


def test_the_text_answers_name_the_overheads():
    over = _over(BIG[0])
    for args in (
        ("step", "--arch", ARCH, "--cluster", CLUSTER, "--strategy", STRATEGY),
        ("scenario", "--arch", ARCH, "--strategy", STRATEGY),
        ("train", "--arch", ARCH, "--tokens", "1B", "--strategy", STRATEGY),
    ):
        r = run(*args, *over)
        assert r.exit_code == 0, r.stderr
        line = next(x for x in r.stdout.splitlines() if x.startswith("memory per GPU"))
        assert line.endswith("(does NOT fit; incl. CUDA context 30 GB)"), line
        assert r.stdout.startswith("DOES NOT FIT: 90.9 GB per GPU > 85.5 GB"), r.stdout[:200]


# --- bad values ---------------------------------------------------------------------------------
_CONTEXT_RULE = "a size in 0 B..16 TiB (2**44 B), whole bytes, e.g. 1GiB"
_FRAGMENTATION_RULE = "a fraction in [0, 1)"
_COMMANDS = {
    "step": ("step", "--arch", ARCH, "--cluster", CLUSTER),
    "scenario": ("scenario", "--arch", ARCH),
    "train": ("train", "--arch", ARCH, "--tokens", "1B"),
}


@pytest.mark.parametrize("command", _COMMANDS)
@pytest.mark.parametrize(
    ("flag", "bad", "got"),
    [
        ("--fragmentation", "1", "1.0"),
        ("--fragmentation", "-0.1", "-0.1"),
        ("--fragmentation", "nan", "nan"),
        ("--fragmentation", "abc", "'abc'"),
        ("--cuda-context", "-1GB", "'-1GB'"),
        ("--cuda-context", "32TB", "'32TB'"),
        ("--cuda-context", "1.5B", "'1.5B'"),
        ("--cuda-context", "lots", "'lots'"),
    ],
)
def test_bad_overheads_are_one_line_naming_the_flag_and_range(command, flag, bad, got):
    rule = _FRAGMENTATION_RULE if flag == "--fragmentation" else _CONTEXT_RULE
    line = one_line_error(run(*_COMMANDS[command], flag, bad), f"{flag}: must be {rule}, got ")
    assert f"got {got}" in line, line
    # memory refuses the same value in the same words
    memory = one_line_error(run("memory", "--arch", ARCH, flag, bad))
    assert memory == line


def test_the_one_link_step_refuses_them():
    """The lesson's step over one link has no memory to add them to: refused, not ignored."""
    link = ("step", "--params", "7B", "--compute-time", "400ms", "--ranks", "64")
    for flag, value in (("--cuda-context", "1GiB"), ("--fragmentation", "0.1")):
        one_line_error(
            run(*link, "--bandwidth", "50GB/s", flag, value),
            f"{flag}: an option of the step on a cluster preset",
        )


def _api_error(fn, **kw) -> str:
    with pytest.raises(ValueError) as info:
        fn(**kw)
    return str(info.value)


@pytest.mark.parametrize(
    ("field", "bad", "says"),
    [
        ("fragmentation", 1.0, "fragmentation: must be a fraction in [0, 1), got 1.0"),
        ("fragmentation", -0.1, "fragmentation: must be a fraction in [0, 1), got -0.1"),
        ("fragmentation", float("nan"), "fragmentation: must be a fraction in [0, 1), got nan"),
        ("cuda_context_bytes", -1.0, "cuda_context_bytes: must be a size in 0 B..16 TiB (2**44 B)"),
        (
            "cuda_context_bytes",
            float("inf"),
            "cuda_context_bytes: must be a size in 0 B..16 TiB (2**44 B)",
        ),
        ("cuda_context_bytes", "lots", "cuda_context_bytes: expected a number, got 'lots'"),
        ("cuda_context_bytes", [1.0, 2.0], "cuda_context_bytes: one number per call"),
        ("fragmentation", True, "fragmentation: expected a number, got True"),
        # None is no number (it was read as NaN: "got nan")
        ("fragmentation", None, "fragmentation: expected a number, got None"),
        ("cuda_context_bytes", None, "cuda_context_bytes: expected a number, got None"),
    ],
)
def test_the_api_refuses_in_strategy_memory_s_words(field, bad, says):
    """strategy_step and the advisor check them as strategy_memory does (one check, one
    message), naming the field."""
    lay = make_layout(strategy=STRATEGY, ranks=8, gpus_per_node=8)
    memory = _api_error(strategy_memory, layout=lay, arch=ARCH, **{field: bad})
    assert says in memory, memory
    step = _api_error(strategy_step, arch=ARCH, strategy=STRATEGY, timeline=False, **{field: bad})
    assert step == memory
    adv = _api_error(advise, arch=ARCH, band=False, **{field: bad})
    assert adv == memory


@pytest.mark.parametrize(
    ("field", "bad", "says"),
    [
        ("fragmentation", 1, "fragmentation: must be a fraction in [0, 1), got 1"),
        ("fragmentation", "abc", "fragmentation: expected a number, got 'abc'"),
        ("cuda_context_bytes", -1, "cuda_context_bytes: must be a size in 0 B..16 TiB (2**44 B)"),
        ("cuda_context_bytes", "lots", "cuda_context_bytes: cannot parse 'lots'"),
        ("cuda_context_bytes", True, "cuda_context_bytes: expected a number, got a bool"),
    ],
)
def test_scenario_refuses_naming_the_field(field, bad, says):
    with pytest.raises(ValidationError) as info:
        Scenario(arch=ARCH, **{field: bad})
    text = str(info.value)
    assert text.startswith(says), text
    assert "(got " not in text  # the value said once


def test_the_sweep_refuses_naming_the_axis_and_range():
    for axis, bad, rule in (
        ("fragmentation", "1", _FRAGMENTATION_RULE),
        ("fragmentation", "0.5,1.5", _FRAGMENTATION_RULE),
        ("cuda_context", "-1GB", _CONTEXT_RULE),
        ("cuda_context", "32TB", _CONTEXT_RULE),
    ):
        with pytest.raises(ValueError, match=rf"^{axis}: must be {re.escape(rule)}, got "):
            cm.sweep(kind="step", arch=ARCH, preset=CLUSTER, **{axis: bad})


def test_a_bare_context_in_a_sweep_or_vs_is_bytes_with_the_size_warning():
    """``cuda_context=2`` is 2 bytes, warned as every size without its unit; 0 is none in every
    unit and is not."""
    with pytest.warns(cm.units.BareNumberWarning, match=r"cuda_context=2 is 2 bytes"):
        Scenario(arch=ARCH).with_changes("cuda_context=2")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", cm.units.BareNumberWarning)
        Scenario(arch=ARCH).with_changes("cuda_context=0")
    r = run("scenario", "--arch", ARCH, "--vs", "cuda_context=2")
    assert r.exit_code == 0, r.stderr
    assert "--vs cuda_context=2 is 2 bytes" in r.stderr


# --- the step page ------------------------------------------------------------------------------
def _walk(node):
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _walk(child)


def test_the_step_page_s_boxes_are_the_memory_page_s_sent_after_the_first_chart():
    """The same labels and defaults as the Memory page's expander; on the step page they stand
    under the other inputs but are sent after the first chart (a slot filled later), so its
    first view sends no widget more before the chart (tests/test_first_view.py bounds it)."""
    at = open_page("page_ddp.py", {"ddp_arch": ARCH, "ddp_nodes": "1"})
    assert_clean(at)
    mem = open_page("page_memory.py", {"arch": ARCH})
    assert_clean(mem)

    def boxes(page, keys):
        return [
            (w.label, w.value)
            for w in (*page.text_input, *page.number_input)
            if w.key in keys  # type: ignore[attr-defined]
        ]

    step_boxes = boxes(at, ("ddp_context", "ddp_fragmentation"))
    assert step_boxes == boxes(mem, ("context", "fragmentation"))
    assert step_boxes == [
        ("CUDA context per GPU [B]", "0"),
        ("Fragmentation allowance [fraction of held memory]", 0.0),
    ]
    # on screen: under the inputs, above the chart
    nodes = list(_walk(at._tree))
    keys = [getattr(n, "key", None) for n in nodes]
    first_chart = [getattr(n, "type", "") for n in nodes].index("plotly_chart")
    assert keys.index("ddp_context") < first_chart
    assert keys.index("ddp_fragmentation") < first_chart
    # on the wire: after the chart
    sent = [
        (k, label)
        for k, _, _, label in sent_messages("page_ddp", {"ddp_arch": ARCH, "ddp_nodes": "1"})
    ]
    chart = [k for k, _ in sent].index("plotly_chart")
    assert sent.index(("text_input", "CUDA context per GPU [B]")) > chart
    assert sent.index(("number_input", "Fragmentation allowance [fraction of held memory]")) > chart


def test_typing_in_the_step_page_s_boxes_changes_the_step_s_memory():
    """Boxes below the chart still size the step above it: a value typed there is the next
    run's (common.overheads_drawn_later), as one given by the URL."""
    at = open_page("page_ddp.py", _page_query(NONE[0]))
    assert metrics(at)["Memory per GPU"] == format_bytes(reference(*NONE[1]))
    at.text_input(key="ddp_context").set_value("2GiB").run()
    at.number_input(key="ddp_fragmentation").set_value(0.05).run()
    assert_clean(at)
    assert metrics(at)["Memory per GPU"] == format_bytes(reference(*SMALL[1]))
    help_text = next(m for m in at.metric if m.label == "Memory per GPU").help
    assert "CUDA context 2.15 GB and fragmentation 0.05" in help_text, help_text
    at.text_input(key="ddp_context").set_value("30GB").run()
    at.number_input(key="ddp_fragmentation").set_value(0.0).run()
    assert metrics(at)["Memory per GPU"] == format_bytes(reference(*BIG[1]))
    assert any("Does not fit" in _text(w.value) for w in at.warning)


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ({"ddp_context": "-1GB"}, f"CUDA context per GPU [B]: must be {_CONTEXT_RULE}, got '-1GB'"),
        ({"ddp_context": "lots"}, f"CUDA context per GPU [B]: must be {_CONTEXT_RULE}, got 'lots'"),
        (
            {"ddp_fragmentation": "1"},
            "Fragmentation allowance [fraction of held memory]: must be a fraction in [0, 1), "
            "got 1.0",
        ),
    ],
)
def test_the_step_page_refuses_a_bad_value_in_red_naming_the_box(query, says):
    at = open_page("page_ddp.py", {"ddp_arch": ARCH, "ddp_nodes": "1", **query})
    assert_clean(at)
    said = [_text(e.value) for e in at.error]
    assert any(says in s for s in said), said
    assert not any("(got " in s for s in said), said  # the value said once
    # the boxes are still there to correct it
    assert [w.key for w in at.text_input if w.key == "ddp_context"] == ["ddp_context"]
    assert [w.key for w in at.number_input if w.key == "ddp_fragmentation"]
