"""The torch job's synthetic DDP model is never larger than ``--ddp-params`` asks for.

The MLP has ``--ddp-params / (width^2 + width)`` layers, at least one: a width whose one layer
holds more than ``--ddp-params`` built that layer anyway (``--ddp-width 10000000`` at the
default 4M made a 1e14-parameter layer the job then tried to allocate). Such a width, and a
``--ddp-params`` below the smallest layer (a 1 x 1 weight and its bias: 2), are refused in one
line naming the option and its allowed range, on ``validate torch`` and the job itself; the
default width (512) narrows to the widest layer a smaller ``--ddp-params`` holds.
"""

from __future__ import annotations

import pytest

from costmodel.validation.torch_bench import main, parse_args
from tests._cli import one_line_error, run


@pytest.mark.parametrize(
    ("params", "width", "widest"),
    [("4M", 10_000_000, 1_999), ("4M", 2_000, 1_999), ("25M", 5_000, 4_999), ("2", 2, 1)],
)
def test_a_width_wider_than_the_model_is_refused_with_its_range(params, width, widest):
    with pytest.raises(ValueError) as exc:
        parse_args(["--ddp", "--ddp-params", params, "--ddp-width", str(width)])
    msg = str(exc.value)
    assert msg.startswith("--ddp-width: ")
    assert f"allowed: 1..{widest:,} at this --ddp-params" in msg
    # the widest allowed is the widest one layer of which fits: the next one does not
    p = parse_args(["--ddp", "--ddp-params", params]).ddp_params
    assert widest * widest + widest <= p < (widest + 1) ** 2 + widest + 1


@pytest.mark.parametrize(("params", "width"), [("4M", 512), ("64K", 252), ("10K", 99), ("2", 1)])
def test_the_default_width_narrows_to_a_model_of_the_size_asked(params, width):
    """Not given, the width is 512 or the widest layer ``--ddp-params`` holds: 64K built one
    512-wide layer, 262,656 parameters, four times the 64,000 asked for."""
    args = parse_args(["--ddp", "--ddp-params", params])
    assert args.ddp_width == width
    assert width * width + width <= args.ddp_params


def test_the_widest_allowed_width_is_taken():
    args = parse_args(["--ddp", "--ddp-params", "4M", "--ddp-width", "1999"])
    assert args.ddp_width == 1999
    assert parse_args(["--ddp", "--ddp-params", "2", "--ddp-width", "1"]).ddp_params == 2


def test_fewer_parameters_than_the_smallest_layer_is_refused(capsys):
    assert main(["--ddp", "--ddp-params", "1", "--ddp-width", "1"]) == 2
    assert capsys.readouterr().err.strip() == (
        "torch_bench: --ddp-params: must be a whole number >= 2, got 1"
    )


def test_validate_torch_refuses_it_before_launching():
    r = run("validate", "torch", "--dry-run", "--", "--ddp", "--ddp-width", "100000")
    assert r.exit_code == 2
    assert one_line_error(r).startswith(
        "costmodel: error: --ddp-width: one layer 100000 wide holds 10,000,100,000 parameters"
    )


# --- a bundled run compared with another cluster than its own ----------------------------------
def test_a_bundled_run_given_another_cluster_says_which_it_ran_on():
    """``validate compare --reference 16b --cluster aws-p4de`` predicted a p4de for a log
    measured on p5 without a word (its log names no GPU, but its index does): the option
    still wins, and a warning names the cluster the run measured; none when they agree."""
    from costmodel.reference import reference_path
    from costmodel.validation.logread import read_log
    from costmodel.validation.reference_runs import find_bundled_run

    path = reference_path("16b")
    raw = path.read_bytes()
    own = find_bundled_run(raw, path.name).preset
    assert own == "aws-p5"
    other = read_log(raw, path.name, cluster="aws-p4de", strict=False)
    said = [n for n in other.notices if n.startswith("cluster: ")]
    assert said == [
        "cluster: the bundled run 16b ran on aws-p5 (its index), not aws-p4de: the "
        "prediction is for a cluster the log did not measure"
    ]
    assert not any(
        n.startswith("cluster: ")
        for n in read_log(raw, path.name, cluster=own, strict=False).notices
    )
    r = run("validate", "compare", "--reference", "16b", "--cluster", "aws-p4de")
    assert "warning: cluster: the bundled run 16b ran on aws-p5" in r.stderr


# --- a contradiction says the log's values as a sentence, never a Python list -----------------
def test_nodes_or_gpus_per_node_contradicting_host_lines_read_as_words():
    """ "contradicts the log's host lines (nodes [1])" leaked a Python list into the one line
    the CLI and the Validate page show."""
    from costmodel.reference import reference_path
    from costmodel.validation.logread import read_log

    path = reference_path("06a")  # 2 nodes x 8 GPUs, host lines stated
    raw = path.read_bytes()
    with pytest.raises(ValueError) as exc:
        read_log(raw, path.name, nodes=3, strict=False)
    assert str(exc.value) == "nodes: 3 contradicts the log's host lines (nodes 2)"
    with pytest.raises(ValueError) as exc:
        read_log(raw, path.name, gpus_per_node=4, strict=False)
    assert str(exc.value) == "gpus_per_node: 4 contradicts the log's host lines (GPUs per node 8)"
