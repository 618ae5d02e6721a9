"""Fourth QA pass: batch evaluation (``costmodel sweep``, ``cm.sweep``) and the formulas a
notebook imports (``import costmodel as cm``), with scalars and arrays.

Each test failed before its fix; the fix is at the shared function the surfaces call.
"""

import numpy as np
import pytest

from tests._cli import one_line_error, run

# --- sweep axes take the one limit of every command ----------------------------------------

# (sweep arguments, the command that refuses the same value, the rule both name)
OUT_OF_LIMIT = [
    (
        ["--set", "ranks=8", "--set", "bandwidth=50", "--set", "size=1GB"],
        ["collective", "all_reduce", "--size", "1GB", "--ranks", "8", "--bandwidth", "50"],
        "bandwidth: must be a per-direction rate in 1 MB/s..1 PB/s",
    ),
    (
        ["--set", "ranks=8", "--set", "bandwidth=50GB/s", "--set", "latency=2s"]
        + ["--set", "size=1GB"],
        ["collective", "all_reduce", "--size", "1GB", "--ranks", "8", "--bandwidth", "50GB/s"]
        + ["--latency", "2s"],
        "latency: must be a latency in 0..1 s",
    ),
    (
        ["--kind", "memory", "--set", "params=0"],
        ["memory", "--params", "0"],
        "params: must be a parameter count in 1..1e15",
    ),
    (
        ["--kind", "memory", "--set", "params=1e16"],
        ["memory", "--params", "1e16"],
        "params: must be a parameter count in 1..1e15",
    ),
    (
        ["--kind", "step", "--set", "preset=dgx-h100", "--set", "params=0.5"],
        ["step", "--params", "0.5", "--cluster", "dgx-h100"],
        "params: must be a parameter count in 1..1e15",
    ),
    (
        ["--kind", "step", "--set", "preset=dgx-h100", "--set", "params=7B"]
        + ["--set", "micro_batch=2000000"],
        ["step", "--params", "7B", "--cluster", "dgx-h100", "--micro-batch", "2000000"],
        "micro_batch: must be a whole number in 1..1,000,000",
    ),
]


@pytest.mark.parametrize(("sweep_args", "command", "rule"), OUT_OF_LIMIT)
def test_a_sweep_axis_out_of_the_command_s_limit_is_refused_as_the_command_refuses_it(
    sweep_args, command, rule
):
    """``sweep --set bandwidth=50`` was answered (50 B/s: a 28 s all-reduce) where
    ``collective --bandwidth 50`` is refused; params 0 gave a memory row of 0 GB that fits."""
    option = "--" + rule.split(":")[0].replace("_", "-")
    one_line_error(run(*command), option + rule[rule.index(":") :])
    one_line_error(run("sweep", *sweep_args, "--no-progress"), rule)


def test_sweep_axes_inside_the_limits_still_evaluate():
    r = run(
        "sweep", "--set", "ranks=8", "--set", "bandwidth=1MB/s,1PB/s", "--set", "latency=0,1s",
        "--set", "size=1GB", "--no-progress",
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert len(r.stdout.strip().splitlines()) == 1 + 4


# --- a memory sweep row carries costmodel memory's notes -----------------------------------


def test_a_memory_sweep_row_carries_the_notes_costmodel_memory_prints():
    """``costmodel memory --params 70B --json`` says activations are not included and that a
    70B-class run adds tensor/pipeline parallelism; the sweep's row for the same question had
    no notes column (an ``activations_GB`` of 0 with nothing saying why)."""
    import json

    import costmodel as cm

    cli = json.loads(run("memory", "--params", "70B", "--zero-stage", "3", "--ranks", "16",
                         "--cluster", "dgx-h100", "--json").stdout)  # fmt: skip
    df = cm.sweep(kind="memory", preset="dgx-h100", params="7B,70B", zero_stage=3, ranks=16)
    row = df[df.params == 70e9].iloc[0]
    assert row.memory_GB * 1e9 == pytest.approx(cli["memory_bytes"], rel=1e-12)

    def as_cli(text: str) -> str:  # the API's rows name the field (`arch`), the CLI the option
        return text.replace("`arch`", "--arch")

    for note in cli["notes"]:  # the activations' line first
        assert note in as_cli(row.notes)
    small = df[df.params == 7e9].iloc[0].notes
    assert cli["notes"][0].startswith("activations:") and cli["notes"][0] in as_cli(small)
    assert "tensor and pipeline parallelism" not in small  # below the 70B class: no such note


# --- formulas: an array gives the number the same scalar gives -----------------------------


@pytest.mark.parametrize("wrap", [np.asarray, lambda x: np.asarray([x]), lambda x: [x]])
def test_tokens_per_step_of_an_array_is_the_scalar_s_exact_count(wrap):
    """``tokens_per_step(np.array(2**40), 2**30)`` was 0 (int64 wrapped) where the same Python
    ints give 2**70; global_batch already kept its product exact, now both share it. Within
    the limits (global batch <= 1e12, sequence <= 1e8) the product still passes 2**62."""
    from costmodel.batch import tokens_per_step

    want = tokens_per_step(2**39, 2**26)
    assert want == 2**65
    got = tokens_per_step(wrap(2**39), 2**26)
    assert np.ravel(got).tolist() == [want]
    small = tokens_per_step(wrap(8192), 2048)
    assert np.ravel(small).tolist() == [8192 * 2048]
    assert np.asarray(small).dtype == np.int64  # counts that fit stay int64


# --- formulas: arrays that do not broadcast are refused naming the arguments ----------------

_A3, _A2 = np.array([1e9, 2e9, 3e9]), np.array([8, 16])


def _formulas():
    import costmodel as cm
    from costmodel.batch import tokens_per_step

    return [
        ("collective_time", lambda: cm.collective_time("all_gather", _A3, _A2, 50e9),
         ("message_bytes", "ranks")),
        ("allreduce_time", lambda: cm.allreduce_time(_A3, _A2, 50e9), ("message_bytes", "ranks")),
        ("bytes_per_rank", lambda: cm.bytes_per_rank("all_reduce", _A3, _A2),
         ("message_bytes", "ranks")),
        ("bus_bandwidth", lambda: cm.bus_bandwidth("all_reduce", _A3, 16, [1.0, 2.0]),
         ("message_bytes", "time_s")),
        ("crossover_bytes", lambda: cm.crossover_bytes("ring", "tree", _A2, _A3, 5e-6),
         ("ranks", "bandwidth_bytes_per_s")),
        ("flat_ring_allreduce_time",
         lambda: cm.flat_ring_allreduce_time(_A3, _A2, 8, 450e9, 8, 50e9),
         ("message_bytes", "nodes")),
        ("training_memory", lambda: cm.training_memory(_A3, zero_stage=3, dp_ranks=_A2),
         ("params", "dp_ranks")),
        ("global_batch", lambda: cm.global_batch([1, 2, 3], _A2), ("local_batch", "ranks")),
        ("tokens_per_step", lambda: tokens_per_step([1, 2, 3], _A2),
         ("global_batch_size", "sequence_length")),
        ("scale_learning_rate", lambda: cm.scale_learning_rate([1e-3, 2e-3, 3e-3], _A2, 64),
         ("base_lr", "base_batch")),
    ]  # fmt: skip


@pytest.mark.parametrize("case", _formulas(), ids=lambda c: c[0])
def test_arrays_that_do_not_broadcast_are_refused_naming_the_arguments(case):
    """``cm.allreduce_time(np.array([1e9, 2e9, 3e9]), np.array([8, 16]), 50e9)`` raised numpy's
    "operands could not be broadcast together with shapes (3,) (2,)", naming no argument."""
    _, call, names = case
    with pytest.raises(ValueError) as err:
        call()
    text = str(err.value)
    assert text.startswith(f"{names[0]}, {names[1]}: shapes do not broadcast"), text
    assert "(3,)" in text and "(2,)" in text
    assert "allowed:" in text


def test_global_batch_from_tokens_takes_arrays_as_the_other_batch_formulas_do():
    """``cm.global_batch_from_tokens(np.array([2**20, 4 * 2**20]), 4096)`` was refused as
    "global_tokens: must be a whole number >= 1, got array([1048576, 4194304])": whole numbers
    >= 1, refused for being an array, where tokens_per_step and global_batch broadcast."""
    import pandas as pd

    import costmodel as cm

    f = cm.global_batch_from_tokens
    want = [f(2**20, 4096), f(4 * 2**20, 4096)]
    for tokens in (np.array([2**20, 4 * 2**20]), [2**20, 4 * 2**20], pd.Series([2**20, 4 * 2**20])):
        assert f(tokens, 4096).tolist() == want
    assert f(np.array(4 * 2**20), np.int64(4096)) == want[1]
    assert f(4 * 2**20, np.array([4096, 2048])).tolist() == [1024, 2048]
    with pytest.raises(ValueError, match=r"4000000 / 4096 = 976.6 .* \(element 1 of 2\)"):
        f([4 * 2**20, 4_000_000], 4096)


# --- a collective sweep row whose band is unknown says why ---------------------------------


def test_a_collective_row_with_an_unknown_band_says_why_as_the_cli_does():
    """``costmodel collective all_reduce --size 1GB --cluster gcp-a3-mega --nodes 2`` shows
    "± ?" and says why (no bundled run measured the fabric); the sweep row (and the command's
    --json, which is that row) wrote NaN in error_band_pct with no word, where a step row has
    band_note."""
    import json

    import costmodel as cm

    text = run("collective", "all_reduce", "--size", "1GB", "--cluster", "gcp-a3-mega",
               "--nodes", "2")  # fmt: skip
    assert "± ?" in text.stdout
    df = cm.sweep(preset="gcp-a3-mega,dgx-h100", nodes="1,2", size="1KB,1GB",
                  op="all_reduce,all_to_all")  # fmt: skip
    unknown = df.error_band_pct.isna()
    assert unknown.any() and (~unknown).any()
    assert (df.band_note[~unknown] == "").all()
    assert df.band_note[unknown].str.contains("the error is unknown").all()
    tcpxo = df[(df.preset == "gcp-a3-mega") & (df.nodes == 2)].band_note
    assert tcpxo.str.contains("'tcpxo' between nodes").all()
    a2a = df[(df.preset == "dgx-h100") & (df.nodes == 2) & (df.op == "all_to_all")].band_note
    assert a2a.str.startswith("all-to-all across nodes").all()
    js = json.loads(run("collective", "all_reduce", "--size", "1GB", "--cluster",
                        "gcp-a3-mega", "--nodes", "2", "--json").stdout)  # fmt: skip
    assert js["results"][0]["error_band_pct"] is None
    assert "'tcpxo' between nodes" in js["results"][0]["band_note"]


@pytest.mark.parametrize(
    ("sweep_args", "command", "rule"),
    [
        (["--set", "ranks=8", "--set", "bandwidth=50GB/s", "--set", "size=-5"],
         ["collective", "all_reduce", "--size=-5", "--ranks", "8", "--bandwidth", "50GB/s"],
         "size: must be a size in 1 B..16 TiB (2**44 B), whole bytes, got '-5'"),
        (["--kind", "memory", "--set", "params=-5"], ["memory", "--params=-5"],
         "params: must be a parameter count in 1..1e15, e.g. 7B, got '-5'"),
        (["--set", "preset=dgx-h100", "--set", "nodes=1.5", "--set", "size=1GB"],
         ["collective", "all_reduce", "--size", "1GB", "--cluster", "dgx-h100", "--nodes", "1.5"],
         "nodes: "),
    ],
)  # fmt: skip
def test_a_sweep_value_that_does_not_parse_states_the_command_s_allowed_range(
    sweep_args, command, rule
):
    """``sweep --set size=-5`` said "size: must be >= 0 bytes", but 0 is refused too (the
    allowed range is 1 B..16 TiB, as ``collective --size=-5`` says)."""
    one_line_error(run(*command))
    line = one_line_error(run("sweep", *sweep_args, "--no-progress"), rule)
    assert "must be >= 0 bytes" not in line.split("(")[0]
    assert "must be a whole number >= 0" not in line.split("(")[0]


@pytest.mark.parametrize("wrap", [np.asarray, list])
def test_an_array_of_critical_batches_scales_each_as_its_scalar(wrap):
    """``cm.scale_learning_rate(3e-4, 2**20, 4 * 2**20, rule="sqrt",
    critical_batch=np.array([2**21, 2**23]))`` raised TypeError "only 0-dimensional arrays can
    be converted to Python scalars" (the scalar fast path took the capped array)."""
    import costmodel as cm

    crit = [2**21, 2**23]
    want = [cm.scale_learning_rate(3e-4, 2**20, 4 * 2**20, rule="sqrt", critical_batch=c)
            for c in crit]  # fmt: skip
    assert want[0] < want[1]  # the smaller critical batch caps the rate
    got = cm.scale_learning_rate(3e-4, 2**20, 4 * 2**20, rule="sqrt", critical_batch=wrap(crit))
    assert np.asarray(got).tolist() == want


def test_an_array_of_zero_stages_is_refused_naming_zero_stage():
    """``cm.training_memory(7e9, zero_stage=np.array([0, 3]))`` raised numpy's "The truth value
    of an array with more than one element is ambiguous", naming no argument."""
    import costmodel as cm

    for call in (
        lambda: cm.training_memory(7e9, zero_stage=np.array([0, 3]), dp_ranks=16),
        lambda: cm.max_params(80e9, zero_stage=np.array([0, 3]), dp_ranks=16),
    ):
        with pytest.raises(ValueError, match=r"^zero_stage: one stage per call, one of \(0, 1"):
            call()
    # a numpy scalar stage is one stage, as before
    assert cm.training_memory(7e9, zero_stage=np.int64(3), dp_ranks=16).total_bytes == 7e9


# --- cm.sweep takes a notebook's columns as axis values ------------------------------------


def test_cm_sweep_takes_a_pandas_column_as_a_list_and_names_the_axis_of_a_2d_array():
    """``cm.sweep(size=df["size"], ...)`` raised TypeError "size: expected a number or a string,
    got Series", and a 2-D array raised "only 0-dimensional arrays can be converted to Python
    scalars" naming no axis."""
    import pandas as pd

    import costmodel as cm

    link = {"ranks": 8, "bandwidth": "50GB/s"}
    want = cm.sweep(size=[1e9, 2e9], **link)
    pd.testing.assert_frame_equal(cm.sweep(size=pd.Series([1e9, 2e9]), **link), want)
    pd.testing.assert_frame_equal(cm.sweep(size=np.array([1e9, 2e9]), **link), want)
    pd.testing.assert_frame_equal(cm.sweep(size=pd.Index([1e9, 2e9]), **link), want)
    with pytest.raises(ValueError, match=r"^size: expected one list of values \(1-D\)"):
        cm.sweep(size=np.array([[1e9, 2e9]]), **link)


# --- a cluster's node count from a numpy loop ----------------------------------------------


def test_a_numpy_integer_node_count_is_a_node_count():
    """``for n in np.array([1, 2, 4]): cm.predict_collective(..., nodes=n)`` was refused as
    "nodes: must be an integer >= 1, got np.int64(2)" (cm.cluster, predict_collective,
    predict_all_algorithms, strategy_step), where the same Python int answers."""
    import costmodel as cm

    for n in np.array([1, 2]):
        assert cm.cluster("dgx-h100", nodes=n) == cm.cluster("dgx-h100", nodes=int(n))
        got = cm.predict_collective("all_reduce", 1e9, "dgx-h100", nodes=n).time_s
        assert got == cm.predict_collective("all_reduce", 1e9, "dgx-h100", nodes=int(n)).time_s
    assert cm.cluster("dgx-h100", gpus_per_node=np.int64(4)).ranks == 4
    assert cm.cluster("dgx-h100", nodes=2.0).ranks == 16
    with pytest.raises(ValueError, match=r"^nodes: must be a whole number >= 1, got 2.5"):
        cm.cluster("dgx-h100", nodes=2.5)
    with pytest.raises(ValueError, match=r"^nodes: one count per call"):
        cm.predict_collective("all_reduce", 1e9, "dgx-h100", nodes=np.array([8, 16]))


def test_numpy_integer_batch_counts_are_counts_in_a_step():
    """``cm.strategy_step(..., micro_batch=np.int64(2))`` was refused as "micro_batch: must be
    a whole number >= 1, got np.int64(2)" (and sequence_length, accumulation, training_cost's
    ranks) where the same Python ints answer; 2.5 is still refused."""
    import costmodel as cm

    kw = {"arch": "llama-2-7b", "cluster": "dgx-h100", "nodes": 1}
    want = cm.strategy_step(**kw, micro_batch=2, sequence_length=2048, accumulation=2)
    got = cm.strategy_step(
        **kw, micro_batch=np.int64(2), sequence_length=np.int32(2048), accumulation=np.int64(2)
    )
    assert got.step_time_s == want.step_time_s
    with pytest.raises(ValueError, match=r"^micro_batch: must be a whole number >= 1, got 2.5"):
        cm.strategy_step(**kw, micro_batch=2.5)


def test_predict_collective_names_the_size_out_of_range_not_the_whole_array():
    """``cm.predict_collective("all_reduce", sizes, ...)`` with one size past 16 TiB among 1e5
    printed the whole array (numpy's elided repr, without the bad value); the formulas of
    costmodel.collectives name the element."""
    import costmodel as cm

    sizes = np.arange(1, 100_001, dtype=float) * 1e9
    with pytest.raises(ValueError) as err:
        cm.predict_collective("all_reduce", sizes, "dgx-h100", nodes=2)
    text = str(err.value)
    assert text == (
        "message_bytes: must be between 0 and 2**44 B (16 TiB), got 17593000000000.0 "
        "(element 17592 of 100000)"
    )


def test_a_size_range_that_does_not_parse_states_the_rule_once():
    """``predict --sizes 8B:x`` goes through the sweep's parser: its limit's words must not be
    wrapped in the same words again."""
    line = one_line_error(
        run("predict", "--op", "all_reduce", "--cluster", "dgx-h100", "--sizes", "8B:x"),
        "--sizes: must be a size in 1 B..16 TiB (2**44 B), whole bytes, got '8B:x' (its stop 'x' is not)",
    )
    assert line.count("must be a size in") == 1
