"""One road for the step: the same step question through every surface gives one number.

Llama-3.1-8B on 4 DGX H100 nodes under FSDP (and HSDP in groups of 8, ZeRO-1 at its own
default buckets, and FSDP with parameters gathered and gradients reduced in fp32), micro-batch 1
at 4096
tokens, MFU 0.4, the nccl collective model and the one default overlap contention: asked of the
API (``cm.strategy_step``), ``cm.Scenario``, the CLI (``step --json``, ``scenario --json``,
``train --json``), the sweep (``cm.sweep(kind="step")``, what ``costmodel sweep --kind step``
writes) and the step page (AppTest: its step metric and its scaling table). Every
answer must equal the API's to 1e-9 relative (the page's metric to its printed digits).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

import costmodel as cm
from costmodel import cli
from costmodel.strategy import DEFAULT_COMM_CONTENTION
from costmodel.units import format_duration
from tests.test_app import open_tables

WEB = Path(__file__).resolve().parents[1] / "costmodel" / "web"
RTOL = 1e-9
Q = dict(arch="llama-3.1-8b", cluster="dgx-h100", nodes=4)


def _cli_json(*args: str) -> dict:
    result = CliRunner().invoke(cli.app, [*args, "--json"])
    assert result.exit_code == 0, result.stderr + result.stdout
    return json.loads(result.stdout)


@pytest.mark.parametrize(
    ("strategy", "options", "dtypes"),
    [
        pytest.param("fsdp", [], {}, id="fsdp"),
        pytest.param("hsdp", ["--group-size", "8"], {}, id="hsdp"),
        # no --bucket anywhere: every surface takes zero1's own bucket (5e8 elements)
        pytest.param("zero1", [], {}, id="zero1"),
        # the dtypes the collectives move: the step page's switch and boxes, as the others
        pytest.param("fsdp", [], {"param_dtype": "fp32", "grad_dtype": "fp32"}, id="fsdp-fp32"),
    ],
)
def test_one_step_question_one_number(strategy, options, dtypes):
    extra = {"group_size": 8} if strategy == "hsdp" else {}
    extra.update(dtypes)
    options = [*options, *(x for k, v in dtypes.items() for x in (f"--{k.replace('_', '-')}", v))]
    api = cm.strategy_step(**Q, strategy=strategy, **extra)
    assert api.comm_contention == DEFAULT_COMM_CONTENTION
    t = api.step_time_s
    r = cm.Scenario(**Q, strategy=strategy, **extra).evaluate(scaling=False, flips=False)
    assert r.step_time_s == pytest.approx(t, rel=RTOL)
    assert r.memory_total_bytes == pytest.approx(api.memory_bytes, rel=RTOL)
    common = ["--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--nodes", "4"]
    step = _cli_json("step", *common, "--strategy", strategy, *options)
    assert step["step_time_s"] == pytest.approx(t, rel=RTOL)
    assert step["memory_bytes"] == pytest.approx(api.memory_bytes, rel=RTOL)
    sc = _cli_json("scenario", *common, "--strategy", strategy, *options)
    assert sc["step_time_s"] == pytest.approx(t, rel=RTOL)
    tr = _cli_json("train", *common, "--strategy", strategy, *options, "--steps", "10")
    assert tr["step_time_s"] == pytest.approx(t, rel=RTOL)
    assert (tr["strategy"], tr["layout"]) == (strategy, api.layout.name)
    sw = cm.sweep(
        kind="step", preset="dgx-h100", arch="llama-3.1-8b", nodes=4, strategy=strategy, **dtypes
    )
    assert sw["strategy"].tolist() == [strategy]
    assert sw["layout"].tolist() == [api.layout.name]  # hsdp's default group: one node (8)
    assert sw["step_time_s"].iloc[0] == pytest.approx(t, rel=RTOL)
    assert sw["memory_GB"].iloc[0] * 1e9 == pytest.approx(api.memory_bytes, rel=RTOL)
    assert sw["comm_contention"].iloc[0] == DEFAULT_COMM_CONTENTION
    # the step page: the headline metric and the scaling table's row for 4 nodes
    query = {"ddp_arch": "llama-3.1-8b", "ddp_strategy": strategy, "ddp_nodes": "4"}
    if strategy == "hsdp":
        query["ddp_group"] = "8"
    if dtypes:
        query.update({"ddp_dtypes": "true", **{f"ddp_{k}": v for k, v in dtypes.items()}})
    at = AppTest.from_file(str(WEB / "page_ddp.py"), default_timeout=120)
    at.query_params.update(query)
    at.run()
    assert not at.exception, at.exception
    shown = {m.label: m.value for m in at.metric}
    assert shown["Step time"] == format_duration(t)
    open_tables(at)
    scaling = next(d.value for d in at.dataframe if "step [s]" in d.value.columns)
    row = scaling.set_index("nodes").loc[4]
    assert row["step [s]"] == pytest.approx(t, rel=RTOL)
