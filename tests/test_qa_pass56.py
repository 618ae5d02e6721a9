"""One road for the default MFU: on a GPU with no fitted compute efficiency, a bare parameter
count's default compute is the compute of the MFU its label names, typed back.

The default ("default MFU 0.40") priced 0.40 of the FLOPs of the transformer the count stands
for (6N of its non-embedding parameters + attention), while ``--mfu 0.4`` prices 0.40 of 6N
of the whole count: 7B at 4096 tokens on a DGX B200 node was 223 ms by default and 191 ms
typed. The default is now "as if the user typed ``--mfu 0.40``" (decision,
``model_flops_per_token`` in costmodel/strategy/step.py): the same FLOPs through the same
function, on every surface (API, CLI, sweep, the step page, the cost's MFU).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import costmodel as cm
from costmodel import cli, sweep
from costmodel.compute import compute_fit, gpu_family
from costmodel.strategy import strategy_step

COUNTS = (1e8, 1e9, 1e10, 1e11, 1e12)


def _unfitted_clusters() -> dict[str, str]:
    """One cluster preset per GPU with no fitted efficiency (bf16): GPU name -> cluster."""
    out: dict[str, str] = {}
    for name in cm.presets.names("cluster"):
        gpu = cm.presets.cluster(name).gpu
        try:
            compute_fit(gpu, "bf16")
        except ValueError:
            out.setdefault(gpu.name, name)
    return out


UNFITTED = _unfitted_clusters()


def test_the_unfitted_gpus_are_the_ones_the_fit_has_no_family_for():
    # the test covers every such GPU of the presets, not a list written here
    from costmodel.strategy.compute import fitted_efficiency

    assert {"b200", "gb200", "v100-sxm2", "l40s"} <= set(UNFITTED)
    for gpu in UNFITTED:
        fam = gpu_family(cm.presets.load(gpu))
        assert fam not in ("ampere", "hopper"), gpu
        assert fitted_efficiency(cm.presets.load(gpu)) is None  # the step's own test


def _label_mfu(label: str) -> float:
    """The MFU the default's label names: the last "MFU x.xx" (under recomputation it is the
    step's MFU after "adds its extra work at the same utilisation")."""
    return float(re.findall(r"MFU (\d\.\d\d)", label)[-1])


@pytest.mark.parametrize("gpu", sorted(UNFITTED))
@pytest.mark.parametrize("params", COUNTS)
def test_the_default_is_the_label_mfu_typed_back_api(gpu, params):
    kw = dict(params=params, cluster=UNFITTED[gpu], nodes=1, strategy="fsdp")
    default = strategy_step(**kw)
    assert default.compute_source == "default-mfu"
    assert "default MFU 0.40" in default.compute_label
    typed = strategy_step(**kw, mfu=_label_mfu(default.compute_label))
    assert typed.compute_source == "mfu"
    assert default.compute_s == pytest.approx(typed.compute_s, rel=1e-12)
    assert default.step_time_s == pytest.approx(typed.step_time_s, rel=1e-12)


@pytest.mark.parametrize("params", [7e9, 1e11])
def test_under_full_recomputation_the_label_mfu_typed_back_too(params):
    """The default is of a run without recomputation (its decision): recompute full adds a
    third at the same utilisation and the label names the step's MFU 0.30, which typed back
    (a given MFU is PaLM's, recomputation inside it) gives the same compute."""
    kw = dict(params=params, cluster="dgx-b200", nodes=1, strategy="fsdp", recompute="full")
    default = strategy_step(**kw)
    assert _label_mfu(default.compute_label) == 0.30
    typed = strategy_step(**kw, mfu=0.30)
    assert default.compute_s == pytest.approx(typed.compute_s, rel=1e-12)


def test_seven_b_on_a_dgx_b200_node_is_191_ms_as_typed():
    """The command of the report: 223 ms by default against 191 ms with ``--mfu 0.4``; now
    both are 6 x 7e9 x 4096 / (B200's bf16 peak x 0.4)."""
    peak = cm.presets.load("b200").bf16_dense_flops
    kw = dict(params=7e9, cluster="dgx-b200", nodes=1)
    for s in (strategy_step(**kw), strategy_step(**kw, mfu=0.4)):
        assert s.compute_s == pytest.approx(6 * 7e9 * 4096 / (peak * 0.4), rel=1e-12)


def test_an_architecture_was_already_one_road():
    kw = dict(arch="llama-3.1-8b", cluster="dgx-b200", nodes=1)
    default, typed = strategy_step(**kw), strategy_step(**kw, mfu=0.4)
    assert default.compute_source == "default-mfu"
    assert default.compute_s == pytest.approx(typed.compute_s, rel=1e-12)


def test_the_fitted_road_of_a_bare_count_keeps_its_shape_flops():
    """On a fitted GPU a bare count is still priced with its transformer's FLOPs (the fit reads
    its hidden size and attention); only the default's FLOPs moved."""
    from costmodel.architecture import architecture_for_params
    from costmodel.strategy.step import model_flops_per_token

    h100 = cm.presets.load("h100-sxm")
    shape = architecture_for_params(7e9).training_flops_per_token(4096)
    assert model_flops_per_token(7e9, None, 4096, gpu=h100)[0] == shape
    assert model_flops_per_token(7e9, None, 4096)[0] == shape  # no GPU: the fitted road's
    b200 = cm.presets.load("b200")
    assert model_flops_per_token(7e9, None, 4096, gpu=b200)[0] == 6 * 7e9
    # fp8 on a Hopper GPU is fitted, on a Blackwell one not
    assert model_flops_per_token(7e9, None, 4096, gpu=h100, precision="fp8")[0] == shape


def _cli_step(*args: str) -> dict:
    r = CliRunner().invoke(cli.app, ["step", *args, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


@pytest.mark.parametrize("gpu", sorted(UNFITTED))
def test_the_default_is_the_label_mfu_typed_back_cli(gpu):
    for count in ("100M", "10B", "1T"):
        args = ("--params", count, "--cluster", UNFITTED[gpu], "--nodes", "1")
        default = _cli_step(*args)
        assert default["compute_source"] == "default-mfu"
        m = _label_mfu(default["compute_label"])
        typed = _cli_step(*args, "--mfu", f"{m:.2f}")
        assert default["compute_s"] == pytest.approx(typed["compute_s"], rel=1e-12), count
        assert default["step_time_s"] == pytest.approx(typed["step_time_s"], rel=1e-12)


def test_the_default_is_the_label_mfu_typed_back_sweep():
    presets = ",".join(sorted(UNFITTED.values()))
    counts = ",".join(f"{p:g}" for p in COUNTS)
    grid = dict(kind="step", preset=presets, params=counts, strategy="fsdp", nodes=1)
    default = sweep.sweep(**grid)
    typed = sweep.sweep(**grid, mfu="0.4")
    assert len(default) == len(UNFITTED) * len(COUNTS)
    assert default["compute_source"].eq("default-mfu").all(), default["error"].tolist()
    assert typed["compute_source"].eq("mfu").all()
    key = ["preset", "params"]
    a = default.set_index(key)["compute_s"].sort_index()
    b = typed.set_index(key)["compute_s"].sort_index()
    assert a.to_numpy() == pytest.approx(b.to_numpy(), rel=1e-12)
    # each row is the API's step
    for (preset, params), t in a.items():
        one = strategy_step(params=params, cluster=preset, nodes=1, strategy="fsdp")
        assert t == pytest.approx(one.compute_s, rel=1e-12)


def test_the_cost_mfu_is_of_the_flops_the_default_priced():
    """``costmodel train``'s MFU (Scenario.flops_per_token) names the FLOPs the step was priced
    with: 6N of the count at the default, as typed; its MFU is the same either way."""
    from costmodel.scenario import Scenario

    d = Scenario(params=7e9, cluster="dgx-b200", nodes=1)
    g = Scenario(params=7e9, cluster="dgx-b200", nodes=1, mfu=0.4)
    assert d.flops_per_token() == g.flops_per_token() == 6 * 7e9
    assert "default MFU" in d.flops_definition()
    cd = d.evaluate(scaling=False).training_cost(1e12, usd_per_gpu_hour=2.0)
    cg = g.evaluate(scaling=False).training_cost(1e12, usd_per_gpu_hour=2.0)
    assert cd.mfu == pytest.approx(cg.mfu, rel=1e-12)


def test_the_step_page_default_is_the_label_mfu_typed_back():
    pytest.importorskip("streamlit")
    from streamlit.testing.v1 import AppTest

    from costmodel.units import format_duration

    page = Path(__file__).resolve().parents[1] / "costmodel" / "web" / "page_ddp.py"
    at = AppTest.from_file(str(page), default_timeout=120)
    at.query_params.update({"ddp_cluster": "dgx-b200"})  # a bare 7B count, 4 nodes
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    shown = " ".join(str(c.value) for c in at.caption)
    assert "default MFU 0.40" in shown
    default = {m.label: m.value for m in at.metric}["Compute"]
    api = strategy_step(params=7e9, cluster="dgx-b200", nodes=4, strategy="fsdp", mfu=0.4)
    at.checkbox(key="ddp_own_mfu").check().run()  # the box opens at 0.40
    assert not at.exception, [e.value for e in at.exception]
    assert at.number_input(key="ddp_mfu").value == pytest.approx(0.4)
    typed = {m.label: m.value for m in at.metric}["Compute"]
    assert default == typed == format_duration(api.compute_s)


def test_a_priced_sweep_row_gives_the_cost_mfu_of_the_typed_default():
    """The sweep's cost columns take their MFU's FLOPs from the same road as the step
    (``_mfu_inputs``): the default row's MFU is ``costmodel train``'s, and the typed 0.40's."""
    from costmodel.scenario import Scenario

    row = sweep.sweep(
        kind="step", preset="dgx-b200", params="7e9", nodes=1, tokens="1T", usd_per_gpu_hour=2.0
    ).iloc[0]
    assert row["compute_source"] == "default-mfu"
    typed = Scenario(params=7e9, cluster="dgx-b200", nodes=1, mfu=0.4)
    cost = typed.evaluate(scaling=False).training_cost(1e12, usd_per_gpu_hour=2.0)
    assert row["mfu"] == pytest.approx(cost.mfu, rel=1e-9)
