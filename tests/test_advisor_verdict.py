"""A winner only when it wins, in the strategy advisor: the strategies within the expected
error of the fastest are a tie (API, CLI text and JSON, the step page), by the rule of
costmodel.verdict (one compute estimate on one GPU: only the difference of the compute shares
counts), computed here from the rows' own numbers through the verdict functions."""

from __future__ import annotations

import json
import math

from typer.testing import CliRunner

import costmodel as cm
from costmodel import cli, verdict
from costmodel.strategy.advisor import Advice

H100_8 = {"arch": "llama-3.1-8b", "cluster": "dgx-h100", "nodes": 8}


def _rule(a, b) -> float:
    """The pair's half-width by costmodel.verdict's rule, from the steps' own figures."""

    def m(s):  # the step with every collective at an end of its band
        lo, hi = s.collective_band_s
        return max(s.step_time_s - lo, hi - s.step_time_s) / s.step_time_s

    lo, hi = a.compute_band
    assert a.compute_source == b.compute_source == "fitted" and a.compute_band == b.compute_band
    return verdict.shared_compute_half_width(
        m(a), m(b), a.compute_s / a.step_time_s, b.compute_s / b.step_time_s, max(1 - lo, hi - 1)
    )


def test_strategies_inside_the_expected_error_are_a_tie_not_a_ranking():
    a = cm.advise_strategy(**H100_8)
    best = a.best
    assert best is not None and best.fits
    fit = [s for s in a.steps if s.fits]
    rows = a.rows()
    tied = [best]
    for s, r in zip(a.steps[1:], rows[1:], strict=True):
        if not s.fits:
            assert r["within_expected_error"] is False and r["half_width_vs_best"] is None
            continue
        h = _rule(best, s)
        gap = s.step_time_s / best.step_time_s - 1
        assert r["half_width_vs_best"] == h and r["gap_to_best"] == gap
        assert r["within_expected_error"] is (gap <= h)
        # the same decision as costmodel.verdict.decide on the pair
        assert (verdict.decide({"a": best.step_time_s, "b": s.step_time_s}, h).winner is None) is (
            gap <= h
        )
        if gap <= h:
            tied.append(s)
    assert len(tied) >= 3 and a.tied == tuple(tied) and len(tied) < len(fit)
    assert not a.decisive and a.verdict is not None and a.verdict.winner is None
    assert rows[0]["within_expected_error"] is True and not any(r["winner"] for r in rows)
    # the shared compute error cancels: the tie's error is far narrower than a row's own band
    lo, hi = best.step_time_band_s
    assert (
        max(r["half_width_vs_best"] for r in rows[1 : len(tied)]) < (hi / best.step_time_s - 1) / 3
    )
    text = a.summary()
    assert verdict.WITHIN in text and "no winner" in text
    assert all(s.layout.name in text for s in tied)
    d = a.as_dict()
    assert d["best"] == best.layout.name and d["winner"] is None and d["decisive"] is False
    assert d["tied"] == [s.layout.name for s in tied]


def test_a_clear_winner_is_named_with_its_margin():
    a = cm.advise_strategy(**H100_8, strategies=[{"strategy": "zero2"}, {"strategy": "fsdp"}])
    best, other = a.steps
    h = _rule(best, other)
    gap = other.step_time_s / best.step_time_s - 1
    assert gap > h  # the rule's numbers, not typed-in ones
    assert a.decisive and a.tied == () and a.verdict.winner == best.layout.name == "fsdp"
    rows = a.rows()
    assert rows[0]["winner"] is True and rows[0]["within_expected_error"] is False
    assert rows[1]["within_expected_error"] is False and rows[1]["half_width_vs_best"] == h
    assert a.summary().startswith("winner: fsdp") and verdict.WITHIN not in a.summary()
    assert a.as_dict()["winner"] == "fsdp"


def test_a_strategy_that_does_not_fit_is_never_the_winner():
    # ddp is faster than zero2 here (570 vs 579 ms) but needs 169 GB on an 80 GB card
    a = cm.advise_strategy(**H100_8, strategies=[{"strategy": "ddp"}, {"strategy": "zero2"}])
    ddp = next(s for s in a.steps if s.layout.name == "ddp")
    zero2 = next(s for s in a.steps if s.layout.name == "zero2")
    assert not ddp.fits and zero2.fits and ddp.step_time_s < zero2.step_time_s
    assert a.best is zero2 and a.decisive and a.as_dict()["winner"] == "zero2"
    assert "only strategy that fits" in a.summary()
    row = next(r for r in a.rows() if r["strategy"] == "ddp")
    assert row["winner"] is False and row["within_expected_error"] is False
    none = cm.advise_strategy(arch="llama-3.1-70b", cluster="dgx-h100", nodes=1)
    assert none.best is None and not none.decisive and none.tied == ()
    assert none.as_dict()["winner"] is None and not any(r["winner"] for r in none.rows())
    assert none.summary().startswith("no strategy fits")


def test_an_unknown_expected_error_names_no_winner():
    # Blackwell: the compute is the default MFU (no fitted efficiency): the error is unknown
    a = cm.advise_strategy(arch="llama-3.1-8b", cluster="dgx-b200", nodes=2)
    assert a.best is not None and a.best.compute_source == "default-mfu"
    assert not a.decisive and a.verdict is not None and not a.verdict.known
    assert a.as_dict()["winner"] is None and "unknown" in a.summary()
    # the fastest is unknown against the rest, but in the tie a known pair makes (a tie is
    # mutual: tests/test_qa_pass8.py)
    rows = a.rows()
    known_tie = any(r["within_expected_error"] is True for r in rows[1:])
    assert rows[0]["within_expected_error"] is (True if known_tie else None)


def test_cli_strategy_all_says_within_the_expected_error_in_text_and_json():
    run = CliRunner().invoke
    args = ["step", "--arch", "llama-3.1-8b", "--cluster", "dgx-h100", "--nodes", "8"]
    args += ["--strategy", "all"]
    api = cm.advise_strategy(**H100_8)
    r = run(cli.app, [*args, "--json"])
    assert r.exit_code == 0, r.stdout + r.stderr
    d = json.loads(r.stdout)
    assert d["winner"] is None and d["decisive"] is False and d["best"] == api.best.layout.name
    assert d["tied"] == [s.layout.name for s in api.tied] and d["verdict"] == api.summary()
    for row, ref in zip(d["strategies"], api.rows(), strict=True):
        assert row["within_expected_error"] == ref["within_expected_error"]
        assert (row["half_width_vs_best"] is None) == (ref["half_width_vs_best"] is None)
        if ref["half_width_vs_best"] is not None:
            assert math.isclose(row["half_width_vs_best"], ref["half_width_vs_best"])
    r = run(cli.app, args)
    assert r.exit_code == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    tied_lines = [ln for ln in lines if ln.startswith("1=")]
    assert [ln.split()[1] for ln in tied_lines] == [s.layout.name.split()[0] for s in api.tied]
    assert "vs fastest" in r.stdout and "(within ±" in r.stdout and "(beyond ±" in r.stdout
    assert lines[-1] == api.summary() and verdict.WITHIN in lines[-1]


def test_step_page_says_which_strategies_tie():
    from tests.test_app import assert_clean, open_page, open_tables

    at = open_tables(open_page("page_ddp.py", {"ddp_cluster": "dgx-h100", "ddp_nodes": "8"}))
    assert_clean(at)
    said = next(c.value for c in at.caption if c.value.startswith("**Which strategy:**"))
    frame = next(df.value for df in at.dataframe if "vs fastest" in df.value.columns)
    frame = getattr(frame, "data", frame)  # a Styler's frame
    tied = frame[frame["rank"] == "1="]
    assert len(tied) >= 2 and verdict.WITHIN in said and "no winner" in said
    assert all(name in said for name in tied["strategy"])
    assert all(("within" in v or "a tie" in v or v == "tied") for v in tied["vs fastest"])


def test_advice_is_still_a_plain_ranking():
    # .best stays the nominal fastest that fits (compatibility); Advice of no step decides nothing
    assert Advice(()).best is None and Advice(()).as_dict()["verdict"].startswith("no strategy")
