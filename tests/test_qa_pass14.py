"""QA pass 14: the readable wall clock and GPU-hours on the step page as on the CLI, GPU-hours
of a short run that are not "0", and a tiny bandwidth refused without numpy's overflow warning.
"""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pytest
from typer.testing import CliRunner

import costmodel as cm
from costmodel import cli, units
from tests.test_app import assert_clean, metrics, open_page

RUNNER = CliRunner()


def _train(*args: str) -> dict[str, str]:
    """The rows of ``costmodel train``'s table: {label: text}."""
    got = RUNNER.invoke(cli.app, ["train", *args])
    assert got.exit_code == 0, got.output
    rows = {}
    for line in got.output.splitlines():
        m = re.match(r"^(\S.*?)\s{2,}(\S.*)$", line)
        if m:
            rows[m.group(1)] = m.group(2)
    return rows


@pytest.mark.parametrize("tokens", ["1T", "1000"])
def test_the_step_page_writes_the_wall_clock_and_gpu_hours_as_the_cli_does(tokens):
    """The page showed "Wall clock [days] 0.00000587" where `costmodel train` writes "507 ms",
    and both "GPU-hours 0" for a short run."""
    at = open_page("page_ddp.py", {"ddp_arch": "llama-2-7b", "ddp_tokens": tokens})
    assert_clean(at)
    m = metrics(at)
    rows = _train("--arch", "llama-2-7b", "--tokens", tokens, "--nodes", "4")  # the page's nodes
    wall, _, band = rows["wall clock"].partition(" (band ")
    assert m["Wall clock"] == wall
    hours, _, hours_band = rows["GPU-hours"].partition(" (band ")
    assert m["GPU-hours"] == hours and hours not in ("0", "0.0")
    lo, hi = band.rstrip(")").split("-")  # the band in the wall clock's unit on both
    unit = wall.split()[-1]
    caption = next(c.value for c in at.caption if "Expected-error band" in c.value)
    assert f"{lo}-{hi} {unit}" in caption, (caption, rows["wall clock"])
    assert hours_band and not hours_band.startswith("0-0")


def test_gpu_hours_of_a_short_run_keep_three_digits_and_json_keeps_the_number():
    rows = _train("--arch", "llama-2-7b", "--tokens", "1000")
    assert rows["GPU-hours"] != "0 (band 0-0)"
    got = RUNNER.invoke(cli.app, ["train", "--arch", "llama-2-7b", "--tokens", "1000", "--json"])
    assert got.exit_code == 0, got.output
    hours = json.loads(got.output)["gpu_hours"]
    assert 0 < hours < 0.01  # the number itself, unrounded
    assert rows["GPU-hours"].split()[0] == units.format_gpu_hours(hours)
    assert units.format_gpu_hours(hours) == f"{float(f'{hours:.3g}'):g}"


def test_format_gpu_hours_keeps_whole_hours_for_long_runs():
    assert units.format_gpu_hours(36864.4) == "36,864"
    assert units.format_gpu_hours(1.5e-7) == "0.00000015"  # plain decimals, not 1.5e-07
    assert units.format_gpu_hours(99.96) == "100.0"  # rounding up past 100 is still 3 digits


@pytest.mark.parametrize(
    "args",
    [
        (1e9, 8, 1e-300),
        (np.array([1e9, 1.0]), 8, 1e-300),
        (np.array([1e9]), np.array([1, 8]), 1e-300),
        (np.array([1e9]), 8, 1e9, 1e308),  # latency x steps past the float range
    ],
)
def test_a_tiny_bandwidth_is_refused_without_a_runtime_warning(args):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="bandwidth_bytes_per_s|latency_s"):
            cm.allreduce_time(*args)


def test_one_rank_with_a_tiny_bandwidth_is_refused_and_warns_nothing():
    """One rank takes no time, but a bandwidth below 1 MB/s is refused as every command
    refuses it (the range of ``--bandwidth``), with no numpy warning before the error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for m in (np.array([1e9]), 1e9):
            with pytest.raises(ValueError, match=r"^bandwidth_bytes_per_s: must be .*1 MB/s"):
                cm.allreduce_time(m, 1, 1e-300)
        assert cm.allreduce_time(np.array([1e9]), 1, 1e6).tolist() == [0.0]
        assert cm.allreduce_time(1e9, 1, 1e6) == 0.0


# --- the Validate page's URL after a log is chosen -------------------------------------------
def test_the_validate_url_follows_the_inputs_after_an_upload():
    """The page resets the cluster and the op for each new log through st.session_state;
    Streamlit's binding then kept the reset value in the URL, so the cluster and the op set
    after an upload never reached it (a reload or a shared link got stale inputs)."""
    from tests.test_app import REFERENCE, REFERENCE_LOGS

    at = open_page("page_validate.py")
    at.selectbox(key="val_cluster").set_value("dgx-a100").run()  # before any log
    text = (REFERENCE_LOGS / REFERENCE).read_bytes()
    at.file_uploader(key="val_upload").set_value((REFERENCE, text, "text/plain")).run()
    assert_clean(at)
    # the new log resets the cluster to its own preset (left out of the URL, as a default)
    assert at.selectbox(key="val_cluster").value == "dgx-h100"
    assert "val_cluster" not in at.query_params
    at.selectbox(key="val_cluster").set_value("dgx-a100").run()
    assert at.query_params["val_cluster"] == "dgx-a100"
    at.selectbox(key="val_op").set_value("all_gather").run()
    at.radio(key="val_placement").set_value("in-place").run()
    assert_clean(at)
    assert {k: at.query_params[k] for k in ("val_cluster", "val_op", "val_placement")} == {
        "val_cluster": "dgx-a100",
        "val_op": "all_gather",
        "val_placement": "in-place",
    }
    at.selectbox(key="val_cluster").set_value("dgx-h100").run()  # back to the log's own
    assert "val_cluster" not in at.query_params


def test_a_validate_link_still_opens_its_cluster_and_op_with_a_reference_run():
    at = open_page(
        "page_validate.py",
        {"val_source": "reference", "val_cluster": "dgx-a100", "val_op": "all_gather"},
    )
    assert_clean(at)
    assert at.selectbox(key="val_cluster").value == "dgx-a100"
    assert at.selectbox(key="val_op").value == "all_gather"
    assert at.query_params["val_cluster"] == "dgx-a100"
    at.selectbox(key="val_op").set_value("broadcast").run()
    assert at.query_params["val_op"] == "broadcast"
    names = [r for r in at.selectbox(key="val_reference").options]
    at.selectbox(key="val_reference").set_value(names[-1]).run()  # a new log resets both
    assert_clean(at)
    assert at.selectbox(key="val_op").value == "from the log"
    assert "val_op" not in at.query_params


@pytest.mark.parametrize("tokens", ["1T", "1000"])
def test_the_cost_of_a_short_run_is_not_zero_dollars_on_the_cli_or_the_page(tokens):
    """`train --tokens 1000` printed "$0" beside GPU-hours 0.00451 (`,.0f`), and so did the
    step page's cost; both now write dollars by the GPU-hours rule (units.format_usd)."""
    price = ("--price", "aws-p5-on-demand")
    rows = _train("--arch", "llama-2-7b", "--tokens", tokens, "--nodes", "4", *price)
    got = RUNNER.invoke(
        cli.app, ["train", "--arch", "llama-2-7b", "--tokens", tokens, "--nodes", "4", *price,
                  "--json"],
    )  # fmt: skip
    usd = json.loads(got.output)["cost_usd"]
    assert usd > 0
    assert rows["cost"].startswith(f"${units.format_usd(usd)} ")
    assert not rows["cost"].startswith("$0 ")
    at = open_page(
        "page_ddp.py",
        {"ddp_arch": "llama-2-7b", "ddp_tokens": tokens, "ddp_price": "aws-p5-on-demand"},
    )
    assert_clean(at)
    assert metrics(at)["Cost [USD]"] == units.format_usd(usd)
