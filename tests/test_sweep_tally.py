"""The collective sweep's tally of rows whose buffer no GPU holds counts answered rows only."""

from __future__ import annotations

import costmodel as cm

from ._cli import run


def test_a_refused_row_is_not_counted_as_an_extrapolated_time():
    """A 200 GB all-reduce on two H100 nodes: the textbook model answers ring and tree and
    refuses NVLS (no SHARP across nodes). All three keep the buffer note, but only the two
    answered rows have a time the warning can call the model's extrapolation."""
    args = dict(preset="dgx-h100", model="textbook", algorithm="ring,tree,nvls", nodes=2)
    df = cm.sweep(**args, size="200GB")
    assert (df["memory_note"] != "").all()
    refused = df["error"] != ""
    assert refused.sum() == 1 and df.loc[refused, "time_s"].isna().all()
    sets = [x for k, v in args.items() for x in ("--set", f"{k}={v}")]
    s = run("sweep", *sets, "--set", "size=200GB", "--no-progress")
    assert s.exit_code == 0, s.stderr
    assert "2 of 3 rows have a per-rank buffer larger than their GPU's memory" in s.stderr
    assert "1 of 3 rows" in s.stderr  # the refused row is said once, as refused
