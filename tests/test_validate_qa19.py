"""The calibration road end to end, as a cluster engineer uses it: ``calibrate`` a bundled log
into a TOML, then hand it to every command that takes one (every number here comes from the
bundled runs; nothing is a measurement of its own).

- ``validate compare --calibration FILE`` (and the Validate page's upload, the same loader)
  checks a hand-edited TOML as ``--cluster FILE`` does: one line naming the file, the key and
  its range; an unknown key, a wrong type, NaN, a name that is not text, a base on another
  network are refused, never a traceback, never applied.
- A ``[[fabric]]`` or ``[[candidate]]`` table's ``fabric`` is a network the model knows,
  ``measured`` names terms the fit has, and ``max_bytes`` is not below ``min_bytes``.
"""

from __future__ import annotations

import datetime as dt
import tomllib
from pathlib import Path

import pytest

from costmodel import presets
from costmodel.validation.calibrate import load_calibration
from tests._cli import one_line_error, run
from tests._paths import NCCL_TESTS

H100_LOG = next(NCCL_TESTS.glob("13a_*"))  # 1 x 4 H100 all_reduce
POLARIS_LOG = next(NCCL_TESTS.glob("25a_*"))  # 2 x 4 A100 all_reduce over Slingshot
CREATED = dt.datetime(2026, 12, 5, 3, 0, 0, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def h100_toml(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cal") / "h100.toml"
    r = run("calibrate", str(H100_LOG), "--cluster", "dgx-h100", "-o", str(out))
    assert r.exit_code == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def polaris_toml(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cal") / "polaris.toml"
    r = run("calibrate", str(POLARIS_LOG), "--cluster", "alcf-polaris", "-o", str(out))
    assert r.exit_code == 0, r.stderr
    return out


def _edited(src: Path, tmp_path: Path, old: str, new: str) -> Path:
    text = src.read_text(encoding="utf-8")
    assert old in text, old
    out = tmp_path / "edited.toml"
    out.write_text(text.replace(old, new, 1), encoding="utf-8")
    return out


def _set(src: Path, tmp_path: Path, key: str, value: str, table: str = "") -> Path:
    """``src`` with the first line ``key = ...`` set to ``key = value`` (a hand edit); with
    ``table`` ("[[fabric]]"), the first in that table (the [[fit]] tables also record
    ``min_bytes``/``max_bytes`` since 2026-12-05)."""
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if table and line.strip() == table), 0)
    i = next(i for i, line in enumerate(lines) if i >= start and line.startswith(f"{key} = "))
    lines[i] = f"{key} = {value}\n"
    out = tmp_path / "edited.toml"
    out.write_text("".join(lines), encoding="utf-8")
    return out


# hand edits `--cluster FILE` refused and `validate compare --calibration FILE` applied,
# ignored or crashed on: (key, value) or (old text, new text), and what the one line names
HAND_EDITS = {
    "name not text": (("name", "5"), ["name:", "valid string"]),
    "typo key": (
        ('fabric = "none"\n', 'fabric = "none"\nlatency_scal = 2.0\n'),
        ["fabric.latency_scal: unknown key", "latency_scale"],
    ),
    "unknown top key": (
        ('placement = "out-of-place"\n', 'placement = "out-of-place"\nbogus = 3\n'),
        ["bogus: unknown key"],
    ),
    "bool term": (("host_floor_scale", "true"), ["fabric.host_floor_scale", "(0, 1,000]"]),
    "NaN fit error": (("rms_rel_error", "nan"), ["fit.rms_rel_error", "nan"]),
}


def _apply(src: Path, tmp_path: Path, edit: tuple[str, str]) -> Path:
    key, value = edit
    return _edited(src, tmp_path, key, value) if "\n" in key else _set(src, tmp_path, key, value)


@pytest.mark.parametrize("case", sorted(HAND_EDITS))
def test_compare_refuses_a_hand_edited_calibration_as_cluster_does(
    case: str, h100_toml: Path, tmp_path: Path
) -> None:
    edit, fragments = HAND_EDITS[case]
    bad = _apply(h100_toml, tmp_path, edit)
    cluster_line = one_line_error(
        run("collective", "all_reduce", "--cluster", str(bad), "--size", "4KiB"), str(bad)
    )
    compare_line = one_line_error(
        run("validate", "compare", str(H100_LOG), "--calibration", str(bad)),
        f"--calibration: {bad}: ",
        *fragments,
    )
    # the same reason on both roads: the key and what is allowed
    assert cluster_line.split(f"{bad}: ", 1)[1] == compare_line.split(f"{bad}: ", 1)[1]


@pytest.mark.parametrize(
    ("key", "value", "fragments"),
    [
        ("latency_scale", "nan", ["fabric.latency_scale", "must be in (0, 1,000], got nan"]),
        ("host_floor_scale", "1e300", ["fabric.host_floor_scale", "(0, 1,000]"]),
        ("host_floor_scale", "-2.0", ["fabric.host_floor_scale", "(0, 1,000]"]),
        ("latency_s", '"-4e-06s"', ["fit.latency_s", "[0 s, 1 s]"]),
        ("bandwidth_bytes_per_s", '"0B/s"', ["fit.bandwidth_bytes_per_s", "[1 MB/s, 1 PB/s]"]),
    ],
)
def test_compare_names_the_file_key_and_range_in_one_line(
    key: str, value: str, fragments: list[str], h100_toml: Path, tmp_path: Path
) -> None:
    """Not the whole [[fit]] table dumped, not pydantic's one bound ("less than or equal to
    1000" for NaN), not 'calibration ... is not a valid preset' without the file."""
    bad = _set(h100_toml, tmp_path, key, value)
    line = one_line_error(
        run("validate", "compare", str(H100_LOG), "--calibration", str(bad)),
        f"--calibration: {bad}: ",
        *fragments,
    )
    assert "{" not in line  # no table dumped


def test_compare_refuses_a_base_on_another_network(polaris_toml: Path, tmp_path: Path) -> None:
    """Slingshot's fitted NIC share and hop latency carried onto InfiniBand: `--cluster FILE`
    refused it, `validate compare --calibration FILE` predicted with it."""
    bad = _set(polaris_toml, tmp_path, "base", '"dgx-a100"')
    one_line_error(
        run("validate", "compare", str(POLARIS_LOG), "--calibration", str(bad)),
        "fabric.fabric: 'slingshot'",
        "dgx-a100",
        "allowed: 'infiniband'",
    )


def test_compare_names_base_not_name_for_an_unknown_base(h100_toml: Path, tmp_path: Path) -> None:
    bad = _set(h100_toml, tmp_path, "base", '"dgx-h1000"')
    line = one_line_error(
        run("validate", "compare", str(H100_LOG), "--calibration", str(bad)),
        f"{bad}: base: no cluster preset named 'dgx-h1000'",
        "closest: dgx-h100",
    )
    assert "name:" not in line


def test_load_calibration_keeps_reading_bare_numbers(h100_toml: Path, tmp_path: Path) -> None:
    """Older files wrote quantities as bare numbers (write_calibration's docstring)."""
    lat = tomllib.loads(h100_toml.read_text(encoding="utf-8"))["fit"][0]["latency_s"]
    old = _set(h100_toml, tmp_path, "latency_s", repr(float(lat.removesuffix("s"))))
    assert load_calibration(old).fits[0].latency_s == load_calibration(h100_toml).fits[0].latency_s


# --- the schema: a table's network, its measured terms, its size range --------------------------
@pytest.mark.parametrize(
    ("key", "value", "fragments"),
    [
        ("fabric", '"warp"', ["fabric.fabric", "'infiniband'", "'warp'"]),
        ("measured", '["latency_scal"]', ["fabric.measured", "'latency_scale'"]),
        ("max_bytes", '"1B"', ["fabric: max_bytes: 1 B is below min_bytes (8 B)"]),
    ],
)
def test_a_fabric_table_is_checked_on_both_roads(
    key: str, value: str, fragments: list[str], h100_toml: Path, tmp_path: Path
) -> None:
    """An unknown network, a term the fit has not, or a size range upside down were loaded
    on every road and used (or ignored) without a word."""
    text = h100_toml.read_text(encoding="utf-8")
    if key == "measured":  # a list over several lines
        start = text.index("measured = [")
        end = text.index("]\n", start) + 2
        bad = tmp_path / "edited.toml"
        bad.write_text(text[:start] + f"measured = {value}\n" + text[end:], encoding="utf-8")
    else:
        bad = _set(h100_toml, tmp_path, key, value, table="[[fabric]]")
    for args in (
        ("collective", "all_reduce", "--cluster", str(bad), "--size", "4KiB"),
        ("validate", "compare", str(H100_LOG), "--calibration", str(bad)),
    ):
        one_line_error(run(*args), str(bad), *fragments)
    with pytest.raises(presets.PresetError, match="fabric"):
        presets.cluster(str(bad))


# --- load -> save -> load ----------------------------------------------------------------------
@pytest.mark.parametrize("which", ["h100_toml", "polaris_toml"])
def test_a_calibration_round_trips_byte_for_byte(
    which: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Saved again, a loaded calibration is the file it was read from (its `created` stamp
    given back): the [[fabric]] table's source, the only place the shares of each fitted shift
    kept are said, was rewritten without them."""
    from costmodel.validation.calibrate import write_calibration

    src: Path = request.getfixturevalue(which)
    created = dt.datetime.fromisoformat(tomllib.loads(src.read_text(encoding="utf-8"))["created"])
    again = write_calibration(load_calibration(src), tmp_path / src.name, created=created)
    assert "kept: " in src.read_text(encoding="utf-8")
    assert again.read_text(encoding="utf-8") == src.read_text(encoding="utf-8")
    assert load_calibration(again) == load_calibration(src)


def test_the_validate_page_refuses_a_hand_edited_calibration_as_the_cli_does(
    h100_toml: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page's "Calibration TOML" box reads through load_calibration: a typo'd key was
    dropped there and the comparison made without the term."""
    import streamlit

    from costmodel.web.page_validate import CALIBRATION_BOX
    from tests.test_app import _text
    from tests.test_app_qa22 import _page

    bad = _set(h100_toml, tmp_path, "latency_scale", "2.0\nlatency_scal = 2.0")
    streamlit.cache_data.clear()
    try:
        page = _page(monkeypatch, H100_LOG, "edited.toml", bad.read_bytes())
    finally:
        streamlit.cache_data.clear()
    errors = [_text(e.value).replace("**", "") for e in page.at.error]
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"{CALIBRATION_BOX}: edited.toml: fabric.latency_scal: unknown key")
    assert not page.at.metric  # no comparison made without the term
    cli_line = one_line_error(
        run("validate", "compare", str(H100_LOG), "--calibration", str(bad)), "latency_scal"
    )
    assert cli_line.split(f"{bad}: ", 1)[1] in errors[0]


# --- the same question, the same answer on every road ------------------------------------------
def test_compare_with_a_calibration_names_the_algorithm_each_row_was_predicted_with(
    h100_toml: Path, tmp_path: Path
) -> None:
    """`validate compare --calibration` left predicted_algorithm empty (its summary then
    pooled ring and NVLS rows under "auto") where `--cluster` fills it; each row's is the
    algorithm `collective --cluster FILE` answers with at that size and launch."""
    import pandas as pd

    from costmodel.predict import predict_collective

    out = tmp_path / "cmp.csv"
    r = run("validate", "compare", str(H100_LOG), "--calibration", str(h100_toml), "-o", str(out))
    assert r.exit_code == 0, r.stderr
    rows = pd.read_csv(out)
    assert rows["predicted_algorithm"].notna().all()
    assert set(rows["algorithm"]) == set(rows["predicted_algorithm"]) == {"ring", "nvls"}
    for (size, gpp), group in rows.groupby(["size_bytes", "gpus_per_process"]):
        p = predict_collective(
            "all_reduce",
            float(size),
            presets.cluster(str(h100_toml), gpus_per_node=4),
            gpus_per_process=int(gpp),
        )
        assert set(group["predicted_algorithm"]) == {p.algorithm}, size
        assert group["predicted_time_s"].iloc[0] == pytest.approx(float(p.time_s), rel=1e-12)


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("rms_rel_error", "nan", "fit.rms_rel_error: must be in [0, inf), got nan"),
        ("cv_max_abs_rel_error", "-1.0", "fit.cv_max_abs_rel_error: must be in [0, inf), got -1.0"),
        ("points", "-5", "fit.points: must be in [0, inf), got -5"),
    ],
)
def test_a_fit_key_is_refused_with_its_range_as_a_fabric_key_is(
    key: str, value: str, said: str, h100_toml: Path, tmp_path: Path
) -> None:
    """The [[fit]] tables are read under their alias `fit` (the model's field is `fits`): the
    range lookup missed them and said pydantic's one bound ("greater than or equal to 0",
    also for a NaN)."""
    bad = _set(h100_toml, tmp_path, key, value)
    for args in (
        ("collective", "all_reduce", "--cluster", str(bad), "--size", "4KiB"),
        ("validate", "compare", str(H100_LOG), "--calibration", str(bad)),
    ):
        line = one_line_error(run(*args), f"{bad}: {said}")
        assert "greater than" not in line


def test_the_range_lookup_follows_a_field_alias() -> None:
    from costmodel._limits import field_range

    assert field_range("CalibrationPreset", "fit.latency_s") == "[0 s, 1 s]"
    assert field_range("CalibrationPreset", "fits.latency_s") == "[0 s, 1 s]"


def test_a_fit_protocol_is_an_nccl_protocol(h100_toml: Path, tmp_path: Path) -> None:
    """A protocol no NCCL has was kept and never matched a pinned run, whose rows then took
    another fit without a word; NCCL's own spelling (LL128) reads as calibrate writes it."""
    bad = _set(h100_toml, tmp_path, "protocol", '"ll129"')
    for args in (
        ("collective", "all_reduce", "--cluster", str(bad), "--size", "4KiB"),
        ("validate", "compare", str(H100_LOG), "--calibration", str(bad)),
    ):
        one_line_error(
            run(*args),
            f"{bad}: fit.protocol: 'll129' is not an NCCL protocol; allowed: auto, ll, ll128",
        )
    nccl_spelling = _set(h100_toml, tmp_path, "protocol", '"LL128"')
    assert load_calibration(nccl_spelling).fits[0].protocol == "ll128"
    cluster = presets.cluster(str(nccl_spelling))
    assert cluster.calibration is not None
    assert cluster.calibration.fits[0].protocol == "ll128"


@pytest.mark.parametrize("what", ["deep", "large"])
def test_compare_bounds_a_calibration_file_as_cluster_does(
    what: str, h100_toml: Path, tmp_path: Path
) -> None:
    """A value nested 5,000 deep overflowed tomllib's recursion on `validate compare
    --calibration` (a traceback) where `--cluster FILE` refuses it by its depth; a file over the
    preset files' size bound is refused before it is parsed."""
    from costmodel.presets import MAX_PRESET_FILE_BYTES

    extra = (
        "x = " + "[" * 5000 + "]" * 5000 if what == "deep" else "# " + "x" * MAX_PRESET_FILE_BYTES
    )
    bad = _edited(
        h100_toml,
        tmp_path,
        'placement = "out-of-place"\n',
        f'placement = "out-of-place"\n{extra}\n',
    )
    said = (
        "deep; allowed: at most" if what == "deep" else f"at most {MAX_PRESET_FILE_BYTES:,} bytes"
    )
    for args in (
        ("collective", "all_reduce", "--cluster", str(bad), "--size", "4KiB"),
        ("validate", "compare", str(H100_LOG), "--calibration", str(bad)),
    ):
        one_line_error(run(*args), str(bad), said)


def test_calibrate_warns_when_its_name_is_a_cluster_presets(tmp_path: Path) -> None:
    """`calibrate ... --cluster dgx-h100 -o dgx-h100.toml` wrote a calibration named as its
    base; loaded by path it works, but a presets folder holding it refused every command
    (also ones on other clusters) after the fact. Said when it is written, not refused."""
    out = tmp_path / "dgx-h100.toml"
    r = run("calibrate", str(H100_LOG), "--cluster", "dgx-h100", "-o", str(out))
    assert r.exit_code == 0, r.stderr
    warned = [line for line in r.stderr.splitlines() if "--name: 'dgx-h100'" in line]
    assert len(warned) == 1, r.stderr
    assert "cluster preset" in warned[0] and "--name dgx-h100-calibrated" in warned[0]
    assert presets.cluster(str(out)).calibration is not None  # by path: loads
    with pytest.raises(presets.PresetError, match="dgx-h100"):  # in a presets folder: refused
        presets.cluster("dgx-a100", dirs=[str(tmp_path)])
    fine = run("calibrate", str(H100_LOG), "--cluster", "dgx-h100", "-o", str(tmp_path / "x.toml"))
    assert fine.exit_code == 0 and "--name:" not in fine.stderr


def test_predict_says_why_a_calibrated_band_is_unknown_as_collective_does(h100_toml: Path) -> None:
    """The same question on the same calibrated cluster: `collective` (and the sweep) said
    "a calibration answers: ...", `predict` "calibrated fit: its error is the calibration
    report's", two reasons for one '± ?'."""
    import json

    asked = ("--cluster", str(h100_toml), "--size", "4KiB", "--gpus-per-node", "4", "--json")
    one = run("collective", "all_reduce", *asked)
    two = run("predict", "--op", "all_reduce", *asked)
    assert one.exit_code == two.exit_code == 0, (one.stderr, two.stderr)
    (a,) = json.loads(one.stdout)["results"]
    (b,) = json.loads(two.stdout)["results"]
    assert a["time_s"] == b["time_s"]
    assert a["band_note"] == b["band_note"]
    assert a["band_note"].startswith("a calibration answers")
    text_one = run("collective", "all_reduce", *asked[:-1]).stdout
    text_two = run("predict", "--op", "all_reduce", *asked[:-1]).stdout
    said = [line for line in text_one.splitlines() if line.startswith("expected_error:")]
    assert said and said == [
        line for line in text_two.splitlines() if line.startswith("expected_error:")
    ]
