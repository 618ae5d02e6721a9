"""Three message leftovers of an API QA pass, each through the API and the CLI where both exist.

1. The model refusals started ``model='foo' unknown`` / ``model='calibrated' but ...``, not with
   the field and a colon as every other refusal (docs/CONTRACTS.md, "Messages"); the CLI
   renamed the ``model=`` prefix. Now ``model: 'foo' is not a model; allowed: ...``, and the
   CLI's ``--model: ...``.
2. ``ddp_step(ranks=2e9)`` was answered, where ``global_batch`` and every command's ``--ranks``
   refuse past 1,000,000,000: one limit, one message.
3. A None inside a list (``allreduce_time([1e6, None], 8, 50e9)``) was refused as ``got nan
   (element 1 of 2)``, a value the user never typed; a bare None already said ``got None``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import costmodel as cm
from costmodel import models
from tests._cli import one_line_error, run

ALLOWED = "allowed: nccl (default), lesson, textbook, calibrated; reference baseline: nccl-table"


# --- 1. model: the field, a colon, then what is wrong and what is allowed ----------------------
@pytest.mark.parametrize(
    "call",
    [
        lambda: cm.predict_collective("all_reduce", 1e6, "dgx-h100", model="foo"),
        lambda: cm.predict_all_algorithms("all_reduce", [1e6], "dgx-h100", 2, model="foo"),
        lambda: models.check_model("foo"),
    ],
    ids=["predict_collective", "predict_all_algorithms", "check_model"],
)
def test_an_unknown_model_is_refused_by_field_with_the_allowed_list(call) -> None:
    with pytest.raises(ValueError) as err:
        call()
    assert str(err.value) == f"model: 'foo' is not a model; {ALLOWED}"


def test_a_surface_without_the_reference_baseline_lists_the_models_only() -> None:
    with pytest.raises(ValueError) as err:
        models.check_model("foo", reference=False)
    assert (
        str(err.value)
        == "model: 'foo' is not a model; allowed: nccl (default), lesson, textbook, calibrated"
    )


def test_a_model_without_alpha_beta_rows_is_refused_by_field() -> None:
    with pytest.raises(ValueError) as err:
        models.textbook_algorithms("nccl", "all_reduce")
    assert str(err.value) == "model: 'nccl' has no alpha-beta rows; allowed here: lesson, textbook"


def test_calibrated_on_a_cluster_without_a_calibration_is_refused_by_field() -> None:
    with pytest.raises(ValueError) as err:
        cm.predict_collective("all_reduce", 1e6, "dgx-h100", model="calibrated")
    message = str(err.value)
    assert message.startswith(
        "model: 'calibrated', but cluster 'dgx-h100' carries no calibration; "
    )
    # what is allowed instead: a calibration preset, or every other model by name
    assert "allowed: a calibration preset" in message
    assert message.endswith("the models lesson, textbook, nccl"), message


def test_no_library_message_starts_model_equals() -> None:
    """The old form is gone from every model refusal the library writes."""
    import inspect

    from costmodel import predict

    for module in (models, predict):
        source = inspect.getsource(module)
        assert not re.search(r"""ValueError\(\s*f?["']model=""", source), module.__name__


def test_cli_says_the_option_for_an_unknown_model() -> None:
    line = one_line_error(
        run("collective", "all_reduce", "--size", "1GB", "--cluster", "dgx-h100", "--model", "foo")
    )
    assert line == f"costmodel: error: --model: 'foo' is not a model; {ALLOWED}"


def test_cli_says_the_option_for_calibrated_without_a_calibration() -> None:
    line = one_line_error(
        run(
            "collective", "all_reduce", "--size", "1GB", "--cluster", "dgx-h100",
            "--model", "calibrated",
        )
    )  # fmt: skip
    assert line.startswith(
        "costmodel: error: --model: 'calibrated', but cluster 'dgx-h100' carries no calibration; "
    ), line
    assert "model=" not in line


# --- 2. ddp_step's ranks: the one ranks limit --------------------------------------------------
STEP = dict(compute_time_s=0.4, bandwidth_bytes_per_s=50e9, timeline=False)
RANKS_RULE = "a whole number in 1..1,000,000,000"


@pytest.mark.parametrize("ranks", [2e9, 1_000_000_001, 0, 2.5, float("nan")])
def test_ddp_step_refuses_ranks_outside_the_shared_limit(ranks) -> None:
    with pytest.raises(ValueError) as err:
        cm.ddp_step(7e9, ranks, **STEP)
    assert str(err.value) == f"ranks: must be {RANKS_RULE}, got {ranks!r}"
    # the same words global_batch says for the same count
    with pytest.raises(ValueError) as batch:
        cm.global_batch(4, ranks, 1)
    assert str(batch.value).startswith(f"ranks: must be {RANKS_RULE}, got ")


def test_ddp_step_answers_at_the_top_of_the_limit() -> None:
    step = cm.ddp_step(7e9, 1_000_000_000, **STEP)
    assert step.ranks == 1_000_000_000
    # the ring moves 2 (N-1)/N of the gradient bytes: more than at 8 ranks, never less
    assert step.comm_s > cm.ddp_step(7e9, 8, **STEP).comm_s


def test_cli_step_refuses_the_same_ranks_with_the_same_range() -> None:
    line = one_line_error(
        run(
            "step", "--params", "7B", "--compute-time", "400ms", "--ranks", "2000000000",
            "--bandwidth", "50GB/s",
        ),
        "--ranks",
    )  # fmt: skip
    assert line == f"costmodel: error: --ranks: must be {RANKS_RULE}, got 2000000000"


# --- 3. a None inside a list is said as None, with its element ---------------------------------
@pytest.mark.parametrize(
    ("call", "starts"),
    [
        (
            lambda: cm.allreduce_time([1e6, None], 8, 50e9),
            "message_bytes: must be between 0 and 2**44 B (16 TiB), got None (element 1 of 2)",
        ),
        (
            lambda: cm.allreduce_time(1e6, [8, None], 50e9),
            "ranks: must be a whole number in 1..1,000,000,000, got None (element 1 of 2)",
        ),
        (
            lambda: cm.allreduce_time(1e6, 8, [50e9, None]),
            "bandwidth_bytes_per_s: must be a per-direction rate in 1 MB/s..1 PB/s, e.g. 50GB/s, "
            "400Gb/s, got None (element 1 of 2)",
        ),
        (
            lambda: cm.collective_time("all_gather", [[1e9, None]], 4, 100e9),
            "message_bytes: must be between 0 and 2**44 B (16 TiB), got None (element 1 of 2)",
        ),
        (
            lambda: cm.global_batch([4, None], 8),
            "local_batch: must be a whole number in 1..1,000,000, got None (element 1 of 2)",
        ),
        (
            lambda: cm.training_memory([7e9, None]),
            "params: must be a finite number >= 0, got None (element 1 of 2)",
        ),
        (
            lambda: cm.training_memory(7e9, zero_stage=3, dp_ranks=[8, None]),
            "dp_ranks: must be a whole number in 1..1,000,000,000, got None (element 1 of 2)",
        ),
    ],
    ids=["message_bytes", "ranks", "bandwidth", "nested", "global_batch", "params", "dp_ranks"],
)
def test_a_none_in_a_list_is_said_as_none(call, starts) -> None:
    with pytest.raises(ValueError) as err:
        call()
    assert str(err.value) == starts
    assert "nan" not in str(err.value)


def test_a_nan_the_caller_gave_is_still_said_as_nan() -> None:
    """Only a None is said as None: a NaN typed (or an array holding one) is a NaN."""
    for given in ([1e6, float("nan")], np.array([1e6, np.nan])):
        with pytest.raises(ValueError, match=r"got nan \(element 1 of 2\)$"):
            cm.allreduce_time(given, 8, 50e9)


def test_the_first_bad_element_is_named_whatever_it_is() -> None:
    with pytest.raises(ValueError, match=r"got -1\.0 \(element 0 of 2\)$"):
        cm.allreduce_time([-1.0, None], 8, 50e9)
    with pytest.raises(ValueError, match=r"got None \(element 0 of 2\)$"):
        cm.allreduce_time([None, -1.0], 8, 50e9)
