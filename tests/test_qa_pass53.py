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
