"""Price presets: one GPU per price, dated, never applied to another GPU, stale warnings, and
both sides' days, GPU-hours and dollars in a comparison (CLI and API)."""

from __future__ import annotations

import datetime as dt
import json
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from costmodel import cli, presets, training
from costmodel.presets import shipped_dir
from costmodel.scenario import Scenario
from costmodel.training import (
    STALE_PRICE_DAYS,
    Price,
    check_price_gpu,
    load_price,
    price_age_warning,
    price_names,
    prices_for_gpu,
    scale_notes,
    training_cost,
)

# A100 40 GB prices (AWS p4d, Azure ND A100 v4, Lambda) name the 40 GB A100 GPU preset, added
# with the 40 GB card's datasheet in a parallel change; until then no shipped cluster uses it.
PENDING_GPU_PRESETS = {"a100-sxm-40gb"}


def run(*args: str):
    return CliRunner().invoke(cli.app, list(args))


def _gpu_names() -> set[str]:
    return {p.stem for p in (shipped_dir() / "gpus").glob("*.toml")}


def _cluster_gpus() -> dict[str, str]:
    out = {}
    for path in sorted((shipped_dir() / "clusters").glob("*.toml")):
        out[path.stem] = presets.cluster(path.stem).gpu.name
    return out


def test_every_price_is_for_one_known_gpu_cited_and_dated():
    gpus = _gpu_names() | PENDING_GPU_PRESETS
    names = price_names()
    assert len(names) >= 20
    for name in names:
        p = load_price(name)
        assert p.gpu in gpus, (name, p.gpu)
        assert "http" in p.source and p.date in p.source, name
        assert p.day <= dt.date(2026, 12, 1)
        # a per-instance price stored per GPU (or the reverse) leaves this range; the top is
        # Azure's GB200 list rate, $27.04 per GPU-hour
        assert 0.5 < p.usd_per_gpu_hour < 30, name
        text = (shipped_dir() / "prices" / f"{name}.toml").read_text()
        assert "usd_per_instance_hour" in text and "#" in text.split("usd_per_instance_hour")[1]
    # every GPU the issue names has at least one price from more than one cloud
    for gpu in ("h100-sxm", "h200-sxm", "b200", "a100-sxm-80gb", "a100-sxm-40gb"):
        clouds = {n.split("-")[0] for n in prices_for_gpu(gpu)}
        assert len(clouds) >= 2, (gpu, clouds)
    assert prices_for_gpu("gb200")


def test_stale_aws_presets_are_refreshed_and_p4d_is_the_40gb_a100():
    p5 = load_price("aws-p5-on-demand")
    assert p5.usd_per_instance_hour == 55.04 and p5.date >= "2025-07-01"
    p4d = load_price("aws-p4d-on-demand")
    assert p4d.gpu == "a100-sxm-40gb" and p4d.date >= "2025-07-01"
    assert load_price("aws-p4d-capacity-block").gpu == "a100-sxm-40gb"
    assert load_price("aws-p4de-on-demand").gpu == "a100-sxm-80gb"


def test_no_price_is_applied_to_a_gpu_it_was_not_published_for():
    """Every cluster preset x every price preset: the cost exists only for the price's GPU."""
    clusters = _cluster_gpus()
    applied = refused = 0
    for gpu in clusters.values():
        for name in price_names():
            p = load_price(name)
            kw = dict(steps=1, tokens_per_step=1e6, step_time_s=3600.0, ranks=8, gpu=gpu)
            if p.gpu == gpu:
                c = training_cost(price=name, **kw)
                assert c.cost_usd == pytest.approx(8 * p.usd_per_gpu_hour)
                assert c.price_date == p.date
                applied += 1
            else:
                with pytest.raises(ValueError, match=f"price: {name} is a price for {p.gpu}"):
                    training_cost(price=name, **kw)
                refused += 1
    assert applied > 10 and refused > 100


def test_mismatch_names_the_presets_that_match_or_asks_for_a_typed_price():
    with pytest.raises(ValueError, match="lambda-b200-on-demand") as e:
        check_price_gpu("aws-p5-on-demand", "b200")
    assert "usd_per_gpu_hour" in str(e.value)
    with pytest.raises(ValueError, match="no price preset is published for rtx-2080ti"):
        check_price_gpu("aws-p5-on-demand", "rtx-2080ti")


def test_scenario_cost_checks_the_cluster_gpu():
    r = Scenario(params=1e9, cluster="dgx-b200", nodes=1).evaluate(scaling=False, flips=False)
    with pytest.raises(ValueError, match="b200"):
        r.training_cost(1e9, price="aws-p5-on-demand")
    c = r.training_cost(1e9, price="lambda-b200-on-demand")
    assert c.cost_usd == pytest.approx(c.gpu_hours * 6.69)
    typed = r.training_cost(1e9, usd_per_gpu_hour=3.0)
    assert typed.price_date is None and typed.price_warning == ""


def test_stale_warning_with_an_injected_today():
    p = load_price("aws-p5-on-demand")
    fresh = p.day + dt.timedelta(days=STALE_PRICE_DAYS)
    stale = p.day + dt.timedelta(days=STALE_PRICE_DAYS + 1)
    assert price_age_warning(p, today=fresh) == ""
    w = price_age_warning(p, today=stale)
    assert p.date in w and f"{STALE_PRICE_DAYS + 1} days old" in w
    kw = dict(steps=1, tokens_per_step=1.0, step_time_s=1.0, ranks=8, price="aws-p5-on-demand")
    assert training_cost(**kw, today=fresh).price_warning == ""
    assert "days old" in training_cost(**kw, today=stale).price_warning
    r = Scenario(params=1e9, cluster="dgx-h100").evaluate(scaling=False, flips=False)
    old = r.training_cost(1e9, price="aws-p5-capacity-block", today=dt.date(2027, 12, 1))
    assert "2026-07-22" in old.price_warning and "497 days old" in old.price_warning


def test_cli_train_shows_the_date_and_refuses_another_gpus_price(monkeypatch):
    # the day is fixed: the preset's empty warning below would turn on 2027-09-21 otherwise
    monkeypatch.setattr(training, "current_date", lambda: dt.date(2026, 12, 5))
    r = run(
        "train", "--arch", "llama-2-7b", "--tokens", "2T", "--cluster", "dgx-b200",
        "--nodes", "8", "--price", "aws-p5-on-demand",
    )  # fmt: skip
    assert r.exit_code == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert "--usd-per-gpu-hour" in r.stderr and "b200" in r.stderr
    r = run(
        "train", "--arch", "llama-2-7b", "--tokens", "2T", "--cluster", "dgx-b200",
        "--nodes", "8", "--price", "lambda-b200-on-demand",
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    cost_line = next(line for line in r.stdout.splitlines() if line.startswith("cost"))
    assert "2026-09-20" in cost_line
    d = json.loads(
        run(
            "train", "--arch", "llama-2-7b", "--tokens", "2T", "--cluster", "dgx-b200",
            "--price", "lambda-b200-on-demand", "--json",
        ).stdout
    )  # fmt: skip
    assert d["price_date"] == "2026-09-20" and d["price_warning"] == ""


def test_cli_scenario_vs_gives_both_sides_days_gpu_hours_and_dollars():
    base = ("scenario", "--arch", "llama-2-7b", "--nodes", "8", "--zero", "1", "--tokens", "2T")
    base += ("--price", "aws-p5-on-demand", "--vs", "cluster=dgx-b200")
    d = json.loads(run(*base, "--price-b", "lambda-b200-on-demand", "--json").stdout)
    a, b = d["training_cost"]["A"], d["training_cost"]["B"]
    assert a["price_date"] == "2026-11-09" and b["price_date"] == "2026-09-20"
    for side in (a, b):
        assert side["cost_usd"] == pytest.approx(side["gpu_hours"] * side["usd_per_gpu_hour"])
        assert side["wall_days"] > 0
    assert b["gpu_hours"] < a["gpu_hours"]  # the B200 step is faster
    text = run(*base).stdout
    assert "wall clock " in text and " days " in text and "GPU-hours" in text
    # never A's H100 price for B200: the B200 preset of A's provider and terms, named and dated
    assert "n/a (no price)" not in text and "price B: aws-p6-b200-on-demand" in text
    assert "priced at aws-p6-b200-on-demand (2026-10-10 prices)" in text and "--price-b" in text
    r = run(*base, "--price-b", "aws-p5-on-demand")
    assert r.exit_code == 2 and "b200" in r.stderr


def test_70b_class_answers_say_tensor_and_pipeline_parallelism_is_not_modelled():
    assert scale_notes(7e9) == [] and "pipeline" in scale_notes(69e9)[0]
    r = Scenario(arch="llama-3.1-70b", cluster="dgx-h100", nodes=8, zero_stage=3).evaluate(
        scaling=False, flips=False
    )
    assert any("tensor and pipeline" in n for n in r.notes)
    assert any("tensor and pipeline" in n for n in r.training_cost(1e12).notes)
    out = run("train", "--arch", "llama-3.1-70b", "--tokens", "1T", "--nodes", "8", "--zero", "3")
    assert "tensor and pipeline" in out.stdout
    mem = run("memory", "--arch", "llama-3.1-70b", "--zero-stage", "3", "--ranks", "64")
    assert "tensor and pipeline" in mem.stdout
    assert "tensor" not in run("memory", "--arch", "llama-2-7b").stdout


def test_price_files_parse_with_their_own_dates():
    for path in (shipped_dir() / "prices").glob("*.toml"):
        with path.open("rb") as f:
            raw = tomllib.load(f)
        assert dt.date.fromisoformat(raw["date"]) == load_price(raw["name"]).day


def _raw(name: str) -> dict:
    with (shipped_dir() / "prices" / f"{name}.toml").open("rb") as f:
        return tomllib.load(f)


def test_committed_prices_carry_their_term_and_only_they_do():
    committed = [n for n in price_names() if load_price(n).terms == "committed"]
    assert {"aws-p4d-reserved-1y", "aws-p4de-reserved-1y"} <= set(committed)
    for name in price_names():
        p = load_price(name)
        if p.terms == "committed":
            assert p.term_years in (1, 3) and p.terms_label == f"committed-{p.term_years}y"
            assert f"{p.term_years}-year" in p.description, name
        else:
            assert p.term_years is None and p.terms_label == p.terms, name
    # the loader refuses a commitment without its term, and a term on anything else
    raw = _raw("aws-p4d-reserved-1y")
    del raw["term_years"]
    with pytest.raises(ValueError, match="term_years: a committed price needs"):
        Price.model_validate(raw)
    with pytest.raises(ValueError, match="term_years: a committed price needs"):
        Price.model_validate({**raw, "term_years": 2})
    with pytest.raises(ValueError, match="term_years: only a committed price has a term"):
        Price.model_validate({**_raw("aws-p4d-on-demand"), "term_years": 1})


def test_reserved_rows_are_read_beside_the_on_demand_price_of_the_same_row():
    """The dump row holds both rates: its on-demand rate is our on-demand preset's, and the
    1-year reservation is cheaper (a wrong column would break one of the two)."""
    for reserved, on_demand in (
        ("aws-p4d-reserved-1y", "aws-p4d-on-demand"),
        ("aws-p4de-reserved-1y", "aws-p4de-on-demand"),
    ):
        r, od = load_price(reserved), load_price(on_demand)
        assert r.gpu == od.gpu and r.gpus_per_instance == od.gpus_per_instance
        assert f"on-demand {od.usd_per_instance_hour!r} in the same row" in r.source
        assert 0.4 < r.usd_per_instance_hour / od.usd_per_instance_hour < 0.9


def test_new_presets_price_only_their_own_gpu():
    cases = {
        "aws-p6-b200-on-demand": ("dgx-b200", "dgx-h100"),
        "aws-p4d-reserved-1y": ("alcf-polaris", "aws-p4de"),  # 40 GB A100, not the 80 GB one
        "aws-p4de-reserved-1y": ("aws-p4de", "alcf-polaris"),
    }
    for name, (own, other) in cases.items():
        p = load_price(name)
        assert presets.cluster(own).gpu.name == p.gpu
        kw = dict(steps=1, tokens_per_step=1e6, step_time_s=3600.0, ranks=8)
        c = training_cost(price=name, gpu=p.gpu, **kw)
        assert c.cost_usd == pytest.approx(p.usd_per_instance_hour)  # 8 GPUs x 1 h
        assert c.price_date == p.date and p.terms_label in c.price_note
        with pytest.raises(ValueError, match=f"price: {name} is a price for {p.gpu}"):
            training_cost(price=name, gpu=presets.cluster(other).gpu.name, **kw)
    assert load_price("aws-p6-b200-on-demand").usd_per_gpu_hour == pytest.approx(113.9328 / 8)


def test_cli_lists_the_commitment_term_and_prices_with_it():
    text = run("archs").stdout
    line = next(x for x in text.splitlines() if x.startswith("aws-p4d-reserved-1y "))
    assert "committed-1y" in line and "2026-01-21" in line
    d = json.loads(run("archs", "--json").stdout)
    rows = {p["name"]: p for p in d["prices"]}
    assert rows["aws-p4d-reserved-1y"]["term_years"] == 1
    assert rows["aws-p4d-reserved-1y"]["terms_label"] == "committed-1y"
    assert rows["aws-p5-on-demand"]["term_years"] is None
    r = run(
        "train", "--arch", "llama-2-7b", "--tokens", "1B", "--cluster", "alcf-polaris",
        "--nodes", "2", "--zero", "3", "--price", "aws-p4d-reserved-1y",
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert "committed-1y" in r.stdout and "2026-01-21" in r.stdout


def _cloud(name: str) -> str:
    return name.split("-")[0]


def test_every_discounted_price_is_below_the_same_clouds_on_demand_price():
    """Spot, committed and capacity-block rates undercut the on-demand list of the same cloud
    and GPU, and a 3-year commitment undercuts the 1-year one: a rate read from the wrong
    column of a price table (e.g. a reservation read as on-demand) breaks this."""
    names = price_names()
    compared = 0
    for name in names:
        p = load_price(name)
        if p.terms == "on-demand":
            continue
        for other in names:
            od = load_price(other)
            if od.terms == "on-demand" and od.gpu == p.gpu and _cloud(other) == _cloud(name):
                assert p.usd_per_gpu_hour < od.usd_per_gpu_hour, (name, other)
                compared += 1
        if p.terms_label == "committed-3y":
            one_year = load_price(name.replace("-3y", "-1y"))
            assert p.usd_per_gpu_hour < one_year.usd_per_gpu_hour, name
    assert compared >= 20


def test_hyperscalers_price_the_gpus_the_issue_names():
    """Azure H200, Google Cloud B200 (spot, committed and DWS Calendar mode: Google lists no
    on-demand A4 price), AWS B200, and committed prices from AWS and Google Cloud."""
    have = {(_cloud(n), load_price(n).gpu, load_price(n).terms) for n in price_names()}
    assert ("azure", "h200-sxm", "on-demand") in have
    assert ("aws", "b200", "on-demand") in have
    assert {("gcp", "b200", "spot"), ("gcp", "b200", "committed")} <= have
    assert ("gcp", "b200", "capacity-block") in have
    for gpu in ("h100-sxm", "h200-sxm", "b200", "a100-sxm-40gb"):
        assert ("gcp", gpu, "committed") in have, gpu
    assert ("aws", "a100-sxm-40gb", "committed") in have
    for gpu in ("h100-sxm", "a100-sxm-40gb", "a100-sxm-80gb"):
        assert ("azure", gpu, "spot") in have, gpu
    # GB200: Azure and Oracle list it, AWS sells it only as UltraServer capacity blocks
    assert {("azure", "gb200", "on-demand"), ("oci", "gb200", "on-demand")} <= have
    assert {("aws", "gb200", "capacity-block"), ("aws", "b200", "capacity-block")} <= have
    assert ("gcp", "a100-sxm-80gb", "committed") in have
    for gpu in ("a100-sxm-40gb", "a100-sxm-80gb", "h100-sxm", "h200-sxm", "b200"):
        assert len({c for c, g, _ in have if g == gpu}) >= 4, gpu


def test_two_dumps_agree_where_they_overlap():
    """The Azure H100 and A100 40 GB on-demand presets (one dump, 2026-11-09) match the rates
    the other dump (2026-10-10) printed beside its spot rows."""
    for spot, on_demand in (
        ("azure-nd-h100-v5-spot", "azure-nd-h100-v5-on-demand"),
        ("azure-nd-a100-v4-spot", "azure-nd-a100-v4-on-demand"),
    ):
        quoted = load_price(spot).source.split("on-demand ")[1].split(" ")[0]
        assert float(quoted) == pytest.approx(load_price(on_demand).usd_per_instance_hour, rel=1e-4)


# Shipped clusters whose GPU no cloud rents: consumer and workstation cards, and the 32 GB
# V100 of DGX-1 (no dated list price for it was found).
UNPRICED_CLUSTER_GPUS = {"rtx-2080ti", "rtx-pro-6000-blackwell", "v100-sxm2"}


def test_every_datacenter_gpu_of_a_shipped_cluster_has_a_price_and_none_is_stale():
    """Every shipped cluster's data-center GPU has a price preset of its own (GH200 and L40S
    included), GB200 from four clouds, and no shipped price is more than a year old on
    2026-12-01 (the 2024 capacity-block rates were replaced)."""
    gpus = set(_cluster_gpus().values())
    for gpu in sorted(gpus - UNPRICED_CLUSTER_GPUS):
        assert prices_for_gpu(gpu), gpu
    assert {_cloud(n) for n in prices_for_gpu("gb200")} >= {"aws", "azure", "coreweave", "oci"}
    day = dt.date(2026, 12, 1)
    assert [n for n in price_names() if price_age_warning(n, today=day)] == []
    r = Scenario(params=1e9, cluster="gb200-nvl72", nodes=1).evaluate(scaling=False, flips=False)
    c = r.training_cost(1e9, price="aws-p6e-gb200-capacity-block")
    assert c.cost_usd == pytest.approx(c.gpu_hours * 761.904 / 72)
    with pytest.raises(ValueError, match="gb200"):
        r.training_cost(1e9, price="aws-p6-b200-capacity-block")


def test_gcp_calendar_mode_prices_are_the_cells_of_the_page_copy_the_committed_rows_use():
    """Google's DWS Calendar mode (a block of capacity booked for a fixed duration) is shipped
    as `capacity-block`, read from the same dated copy of the pricing table as the committed-use
    rows of the same machine: same file and commit, same date, same GPU, and the number is the
    cell the source quotes (a typo or a cell from the wrong column breaks one of these)."""
    shapes = {
        "gcp-a4": "a4-highgpu-8g",
        "gcp-a3-ultra": "a3-ultragpu-8g",
        "gcp-a3-mega": "a3-megagpu-8g",
        "gcp-a3-high": "a3-highgpu-8g",
    }
    for prefix, shape in shapes.items():
        cal, cud = load_price(f"{prefix}-dws-calendar"), load_price(f"{prefix}-cud-1y")
        assert cal.terms == "capacity-block" and cal.gpu == cud.gpu and cal.date == cud.date
        assert cal.source.split(" ")[0] == cud.source.split(" ")[0]  # same page copy and commit
        assert f"{shape} row: DWS Calendar Mode price $" in cal.source
        cell = cal.source.split("DWS Calendar Mode price $")[1].split(" ")[0]
        assert float(cell) == cal.usd_per_instance_hour, prefix
        # Calendar mode is dearer per hour than the 3-year commitment of the same machine
        assert cal.usd_per_instance_hour > load_price(f"{prefix}-cud-3y").usd_per_instance_hour


# What no source read publishes (the README's "Not found, so not shipped" list): a preset for
# one of these means that list has to change too. None stands for any GPU or any terms.
NOT_PUBLISHED = [
    ("azure", "b200", None),
    ("azure", "h200-sxm", "spot"),
    ("azure", "gb200", "spot"),
    ("azure", None, "committed"),
    ("gcp", "b200", "on-demand"),
    ("gcp", "gb200", None),
    ("aws", "gb200", "on-demand"),
    ("aws", "gb200", "spot"),
    ("aws", "gb200", "committed"),
    ("aws", "b200", "spot"),
    ("aws", "b200", "committed"),
    ("aws", "h100-sxm", "committed"),
    ("aws", "h200-sxm", "committed"),
    ("oci", None, "spot"),
    ("lambda", "h200-sxm", None),
    ("lambda", "gb200", None),
    ("coreweave", None, "committed"),
]


def test_the_readme_list_of_unpublished_prices_matches_the_presets():
    have = {(_cloud(n), load_price(n).gpu, load_price(n).terms) for n in price_names()}
    for cloud, gpu, terms in NOT_PUBLISHED:
        hits = [h for h in have if h[0] == cloud and gpu in (None, h[1]) and terms in (None, h[2])]
        assert hits == [], (cloud, gpu, terms)
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    gaps = readme.split("**Not found, so not shipped**")[1].split("- **")[0]
    for words in (
        "Azure B200",
        "Azure H200 and GB200 spot",
        "reservation or savings-plan",
        "Google Cloud B200 on-demand",
        "(A4X)",
        "B200 spot",
        "preemptible",
        "Lambda H200 and GB200",
        "CoreWeave committed",
    ):
        assert words in " ".join(gaps.split()), words
