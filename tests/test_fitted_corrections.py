"""Fitted correction parameters as data: the TOML file, its frozen typed object, the writer."""

from __future__ import annotations

import dataclasses

import pytest

from costmodel import corrections as C
from costmodel.corrections_toml import dumps
from costmodel.fitted_corrections import ALL, FITTED, LORO, CorrectionParams, parse
from costmodel.predict import fitted_params


def test_packaged_file_loads_into_frozen_typed_objects():
    assert isinstance(FITTED.all, CorrectionParams)
    with pytest.raises(dataclasses.FrozenInstanceError):
        FITTED.all.ramp_phi = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        FITTED.all.fabric_latency_us["efa"] = 0.0  # type: ignore[index]
    assert set(ALL) == set(C.DEFAULT_PARAMS)
    assert len(LORO) >= 40
    C._check(fitted_params())


def test_fitted_params_is_a_fresh_copy():
    p = fitted_params()
    p["fabric_latency_us"]["efa"] = -1.0
    assert fitted_params()["fabric_latency_us"] != p["fabric_latency_us"]


def test_writer_and_reader_round_trip():
    text = dumps(
        FITTED.fitted_on,
        FITTED.nccl_version,
        dict(ALL),
        {k: dict(v) for k, v in LORO.items()},
        groups=dict(FITTED.groups),
        bands={
            m: {r: {c: dict(v) for c, v in cl.items()} for r, cl in regs.items()}
            for m, regs in FITTED.bands.items()
        },
        measured_fabrics=FITTED.measured_fabrics,
        dropped_terms=FITTED.dropped_terms,
        coverage={r: {c: dict(v) for c, v in cl.items()} for r, cl in FITTED.coverage.items()},
        folds={
            kind: {run: p.as_dict() for run, p in per_run.items()}
            for kind, per_run in FITTED.folds.items()
        },
    )
    again = parse(text)
    assert again == FITTED
    assert FITTED.bands and FITTED.groups  # grouped CV written
    assert FITTED.coverage and FITTED.folds  # the harder folds and the band's coverage


def test_bad_files_name_what_is_wrong():
    good = dumps("2026-12-01", "2.30.7", dict(ALL), {})
    with pytest.raises(ValueError, match="missing keys \\['ramp_phi'\\]"):
        parse(good.replace("\nramp_phi = ", "\n# ramp_phi = "))
    with pytest.raises(ValueError, match="unknown keys \\['ramp_phii'\\]"):
        parse(good.replace("\nramp_phi = ", "\nramp_phii = 1.0\nramp_phi = "))
    with pytest.raises(ValueError, match="missing 'all'"):
        parse('fitted_on = "x"\nnccl_version = "y"\n')
    with pytest.raises(ValueError, match="not valid TOML"):
        parse("[all")
    with pytest.raises(ValueError, match="finite"):
        dumps("d", "v", {**dict(ALL), "ramp_phi": float("nan")}, {})
