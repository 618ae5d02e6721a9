"""Review pass: a sweep's kind given where its grid goes."""

from __future__ import annotations

import pytest

import costmodel as cm


@pytest.mark.parametrize("kind", ["collective", "memory", "step"])
def test_a_kind_given_as_the_grid_says_so(kind: str, tmp_path, monkeypatch) -> None:
    # cm.sweep("step", ...) read "step" as a grid file name ("grid file 'step' does not exist")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        ValueError,
        match=rf"^grid: '{kind}' is a kind of sweep, not a grid file; give it as `kind`",
    ):
        cm.sweep(kind, preset="dgx-h100", nodes=[1])


def test_a_file_named_as_a_kind_is_still_read(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "memory").write_text('kind = "memory"\n[grid]\nparams = ["7B"]\nranks = [8]\n')
    df = cm.sweep("memory")
    assert len(df) == 1 and df["ranks"].tolist() == [8]


def test_a_missing_file_is_still_named() -> None:
    with pytest.raises(ValueError, match=r"^grid file 'steps' does not exist"):
        cm.sweep("steps")


def test_a_tie_label_never_follows_a_strategy_told_apart() -> None:
    # fsdp (band +-18 %) within its error of the fastest, hsdp g=32 (narrow band) told apart
    # above it: the table read "7 hsdp g=32" then "1= fsdp"
    from costmodel.cli.training import _advice_table

    def row(rank: int, layout: str, within: bool | None, gap: float | None) -> dict:
        return {
            "rank": rank,
            "layout": layout,
            "memory_bytes": 2e10,
            "fits": True,
            "step_time_s": 6.0 * (1 + (gap or 0.0)),
            "step_time_lo_s": 5.0,
            "step_time_hi_s": 7.0,
            "tokens_per_s": 1e6,
            "bound": "compute",
            "within_expected_error": within,
            "gap_to_best": gap,
            "half_width_vs_best": None if gap is None else (0.18 if layout == "fsdp" else 0.004),
            "winner": False,
        }

    rows = [
        row(1, "hsdp g=64", True, None),
        row(2, "hsdp g=32", False, 0.01),
        row(3, "fsdp", True, 0.02),
    ]
    lines = _advice_table(rows).splitlines()[1:]
    assert [ln.split()[0] for ln in lines] == ["1=", "2", "3"]
    assert lines[2].endswith("+2% (within ±18%)")  # its column still says it is within


def test_the_peak_floor_counts_the_recomputation() -> None:
    # a tiny model at the GPU's peak: with full recomputation the GPU runs a second forward, so
    # its compute is longer (both were 21.5 ns: the floor was of the model FLOPs alone)
    kw = dict(params=1e6, cluster="dgx-h100", nodes=1, gpus_per_node=1, strategy="ddp")
    kw |= dict(sequence_length=32)
    plain = cm.strategy_step(**kw)
    full = cm.strategy_step(**kw, recompute="full")
    assert full.compute_s > plain.compute_s * 1.2
