"""One set of input limits on every surface: the same bad value asked through the API, the CLI,
a sweep's grid and an app box (AppTest) where the quantity exists there, refused by the one
limit of ``costmodel._limits.LIMITS`` in the same words (the library names the field, the CLI
its option, the app its box). Each test failed before its fix: a surface answered, or said
another range or pydantic's one bound."""

from __future__ import annotations

import pytest

import costmodel as cm
from costmodel._limits import LIMITS
from tests._cli import one_line_error, run
from tests.test_app import _text, assert_clean, open_page


def _refused(call, start: str) -> str:
    """The message of ``call``'s ValueError, which starts with ``start``."""
    with pytest.raises(ValueError) as info:
        call()
    text = str(info.value)
    assert text.startswith(start), text
    return text


def _rule(name: str) -> str:
    return f"must be {LIMITS[name].rule}, got "


def _page_errors(page: str, query: dict[str, str]) -> str:
    at = open_page(page, query)
    assert_clean(at)
    return " ".join(_text(e.value) for e in at.error)


# --- a raw link's gamma: the sweep's axis had no bound -------------------------------------------


def _batch_critical(value: str):
    """`costmodel batch` for 4Mi tokens on 8 GPUs with AdamW's rule and ``--critical-batch``."""
    return run(
        "batch", "--global-tokens", "4Mi", "--ranks", "8", "--local-batch", "1", "--base-lr",
        "3e-4", "--base-tokens", "1Mi", "--critical-batch", value,
    )  # fmt: skip


def test_gamma_is_refused_by_the_sweep_as_by_collective():
    rule = _rule("gamma")
    _refused(lambda: cm.sweep(bandwidth="50GB/s", ranks=8, size="1MB", gamma=1.0), f"gamma: {rule}")
    link = ("--set", "bandwidth=50GB/s", "--set", "ranks=8", "--set", "size=1MB")
    one_line_error(run("sweep", *link, "--set", "gamma=1"), f"--set gamma: {rule}")
    one_line_error(
        run(
            "collective",
            "all_reduce",
            "--ranks",
            "8",
            "--bandwidth",
            "50GB/s",
            "--size",
            "1MB",
            "--gamma",
            "1",
        ),  # fmt: skip
        f"--gamma: {rule}",
    )
    # within the range it is answered (a GPU's reduction, ~1e-11 s/B)
    assert len(cm.sweep(bandwidth="50GB/s", ranks=8, size="1MB", gamma=1e-11)) == 1


# --- the one-link step's peak FLOP/s and gradient bytes: the API priced 989 FLOP/s ---------------
def test_peak_flops_989_is_refused_by_ddp_step_as_by_the_cli():
    rule = _rule("peak_flops")
    _refused(
        lambda: cm.ddp_step(
            7e9, 8, bandwidth_bytes_per_s=50e9, tokens_per_gpu=4096, mfu=0.4, peak_flops=989
        ),
        f"peak_flops: {rule}989",
    )
    one_line_error(
        run(
            "step",
            "--ranks",
            "8",
            "--bandwidth",
            "50GB/s",
            "--tokens-per-gpu",
            "4096",
            "--peak-flops",
            "989",
            "--params",
            "7B",
        ),  # fmt: skip
        f"--peak-flops: {rule}'989'",
    )
    ok = cm.ddp_step(
        7e9, 8, bandwidth_bytes_per_s=50e9, tokens_per_gpu=4096, mfu=0.4, peak_flops=989e12
    )
    assert ok.compute_s < 1


def test_gradient_bytes_1e300_is_refused_by_ddp_step_as_by_the_cli():
    rule = _rule("gradient_bytes")
    _refused(
        lambda: cm.ddp_step(
            7e9, 8, bandwidth_bytes_per_s=50e9, compute_time_s=1.0, gradient_bytes_per_param=1e300
        ),
        f"gradient_bytes_per_param: {rule}1e+300",
    )
    one_line_error(
        run(
            "step",
            "--ranks",
            "8",
            "--bandwidth",
            "50GB/s",
            "--compute-time",
            "1s",
            "--gradient-bytes",
            "1e300",
            "--params",
            "7B",
        ),  # fmt: skip
        f"--gradient-bytes: {rule}",
    )


# --- a range of three parts: one line naming the axis and the forms --------------------------------
@pytest.mark.parametrize("spec", ["1B:16TiB:1.0001", "8..64..128"])
def test_a_range_of_three_parts_names_the_axis_and_the_forms(spec):
    said = f"cannot parse range {spec!r}; a range is START..STOP, "
    text = _refused(lambda: cm.sweep(bandwidth="50GB/s", ranks=8, size=spec), f"size: {said}")
    assert "its stop" not in text and "START:STOP (doubling)" in text, text
    line = one_line_error(
        run("sweep", "--set", "bandwidth=50GB/s", "--set", "ranks=8", "--set", f"size={spec}"),
        f"--set size: {said}",
    )
    assert "its stop" not in line
    one_line_error(
        run("collective", "all_reduce", "--ranks", "8", "--bandwidth", "50GB/s", "--size", spec),
        f"--size: {said}",
    )


# --- a step sweep's NaN mfu: the CLI's (0, 1], not "a finite number >= 0" --------------------------
def test_a_nan_mfu_says_the_mfu_range_on_every_surface():
    rule = _rule("mfu")
    text = _refused(
        lambda: cm.sweep(kind="step", preset="dgx-h100", params="7B", mfu=float("nan")),
        f"mfu: {rule}",
    )
    assert ">= 0" not in text
    step = ("--kind", "step", "--set", "preset=dgx-h100", "--set", "params=7B")
    one_line_error(run("sweep", *step, "--set", "mfu=nan"), f"--set mfu: {rule}")
    one_line_error(run("step", "--cluster", "dgx-h100", "--params", "7B", "--mfu", "nan"), rule)
    # the contention axis alike (its limit is named `contention`)
    _refused(
        lambda: cm.sweep(kind="step", preset="dgx-h100", params="7B", comm_contention="nan"),
        f"comm_contention: {_rule('contention')}",
    )


# --- the activation recipe's sequence length: training_memory sized 1e12 tokens --------------------
def test_a_sequence_length_past_1e8_is_refused_by_training_memory_as_everywhere():
    rule = _rule("sequence_length")
    _refused(
        lambda: cm.training_memory(arch="llama-2-7b", sequence_length=10**9),
        f"sequence_length: {rule}1000000000",
    )
    _refused(
        lambda: cm.Scenario(arch="llama-2-7b", sequence_length=10**9), f"sequence_length: {rule}"
    )
    one_line_error(run("memory", "--arch", "llama-2-7b", "--seq", "1e9"), f"--seq: {rule}")
    _refused(
        lambda: cm.sweep(kind="memory", arch="llama-2-7b", ranks=8, sequence_length=10**9),
        f"sequence_length: {rule}",
    )
    said = _page_errors(
        "page_ddp.py", {"ddp_arch": "llama-3.1-8b", "ddp_nodes": "2", "ddp_seq": "1000000000"}
    )
    assert f"Sequence length [tokens]: {rule}" in said, said
    # a micro-batch past the CLI's 1e6 too
    _refused(
        lambda: cm.training_memory(arch="llama-2-7b", micro_batch=10**7),
        f"micro_batch: {_rule('micro_batch')}",
    )


# --- a parameter count below one: strategy_step accepted 0.5 --------------------------------------
def test_half_a_parameter_is_refused_by_strategy_step_as_by_scenario_and_the_cli():
    rule = _rule("params")
    _refused(lambda: cm.strategy_step(params=0.5), f"params: {rule}0.5")
    _refused(lambda: cm.Scenario(params=0.5), f"params: {rule}0.5")
    one_line_error(run("step", "--cluster", "dgx-h100", "--params", "0.5"), f"--params: {rule}")
    _refused(lambda: cm.sweep(kind="step", preset="dgx-h100", params=0.5), f"params: {rule}0.5")


# --- min_ranks past the ranks limit: a 300-digit count ---------------------------------------------
def test_min_ranks_says_a_huge_count_in_three_digits():
    # the largest the limits allow: 1e15 parameters on 1 B cards (1e300 is refused as params)
    text = _refused(lambda: cm.min_ranks(1e15, 1.0), "memory_bytes: the fewest ranks that fit, ")
    count = text.split("fit, ")[1].split(",")[0]
    assert count == "1.6e+16", text
    assert len(text) < 250, text
    # one past the limit is still said exactly
    near = _refused(lambda: cm.min_ranks(6e14, 8e6, zero_stage=3), "memory_bytes: ")
    assert "the fewest ranks that fit, 1,200,000,000, are past" in near, near


# --- the step page's count boxes: pydantic's words and "allowed: [1, ...]" ------------------------
STEP_PAGE = {"ddp_arch": "llama-3.1-8b", "ddp_nodes": "2"}


@pytest.mark.parametrize(
    ("key", "box", "limit", "option"),
    [
        ("ddp_nodes", "Nodes", "nodes", "--nodes"),
        ("ddp_local_batch", "Local batch per GPU [samples]", "local_batch", "--micro-batch"),
        ("ddp_seq", "Sequence length [tokens]", "sequence_length", "--seq"),
        ("ddp_accumulation", "Accumulation steps [-]", "accumulation", "--accumulation"),
    ],
)
def test_the_step_page_counts_say_the_cli_s_one_line(key, box, limit, option):
    rule = _rule(limit)
    said = _page_errors("page_ddp.py", {**STEP_PAGE, key: "0"})
    assert f"{box}: {rule}" in said, said
    assert "Input should be" not in said and "allowed: [" not in said, said
    one_line_error(
        run("step", "--cluster", "dgx-h100", "--params", "7B", option, "0"), f"{option}: {rule}"
    )
    field = {"local_batch": "local_batch"}.get(limit, limit)
    _refused(lambda: cm.Scenario(arch="llama-3.1-8b", **{field: 0}), f"{field}: {rule}0")


# --- the Batch page's global tokens and critical batch ---------------------------------------------
BATCH_TOKENS = {"batch_unit": "tokens", "solve": "accumulation"}


@pytest.mark.parametrize("tokens", ["1e17", "0"])
def test_global_tokens_out_of_range_are_refused_by_solve_batch_the_cli_and_the_page(tokens):
    """1e17 was solved into a refusal naming `global_batch`'s limit, 0 said "a whole number
    >= 1": both now in --global-tokens' words. The page's box holds no more than 2**53 (its
    URL reader's bound, below 1e16), so it is asked 0."""
    rule = _rule("global_tokens")
    _refused(
        lambda: cm.solve_batch(
            global_tokens=int(float(tokens)), local_batch=1, ranks=8, sequence_length=4096
        ),
        f"global_tokens: {rule}",
    )
    one_line_error(
        run("batch", "--global-tokens", tokens, "--ranks", "8", "--local-batch", "1"),
        f"--global-tokens: {rule}",
    )
    if tokens == "0":
        said = _page_errors("page_batch.py", {**BATCH_TOKENS, "batch_global_tokens": tokens})
        assert f"Global batch [tokens per step]: {rule}" in said, said


def test_a_critical_batch_past_1e16_is_refused_by_the_api_the_cli_and_the_page():
    rule = _rule("critical_batch")
    _refused(
        lambda: cm.scale_learning_rate(3e-4, 2**20, 2**22, rule="sqrt", critical_batch=1e30),
        f"critical_batch: {rule}1e+30",
    )
    _refused(
        lambda: cm.scale_learning_rate(3e-4, 2**20, 2**22, critical_batch=[2**21, 1e30]),
        f"critical_batch: {rule}1e+30",
    )
    one_line_error(
        _batch_critical("1e30"),
        f"--critical-batch: {rule}",
    )
    # the page's box holds no more than 2**53: a negative batch (0 is its "none") said alike
    _refused(
        lambda: cm.scale_learning_rate(3e-4, 2**20, 2**22, critical_batch=-5),
        f"critical_batch: {rule}-5",
    )
    said = _page_errors("page_batch.py", {**BATCH_TOKENS, "critical_tokens": "-5"})
    # 0 is the box's "none": said before the CLI's range
    assert f"Critical batch size [tokens] (0: none): must be 0 (none) or {rule[8:]}" in said, said
    one_line_error(
        _batch_critical("-5"),
        f"--critical-batch: {rule}",
    )


def test_layouts_bucket_cap_bounds_are_the_one_bucket_limit():
    """A bucket sweep axis is checked against ``LIMITS["bucket"]`` alone (step --bucket's
    words), so ``Layout.bucket_cap_bytes``' own bounds must be that range: else a sweep
    would accept a cap a Layout then refuses (or refuse one it takes)."""
    from costmodel._limits import LIMITS
    from costmodel.strategy.layout import Layout

    meta = Layout.model_fields["bucket_cap_bytes"].metadata
    lo = next(m.ge for m in meta if hasattr(m, "ge"))
    hi = next(m.le for m in meta if hasattr(m, "le"))
    lim = LIMITS["bucket"]
    assert (lo, hi) == (lim.lo, lim.hi)
    assert not lim.lo_open and not lim.hi_open
