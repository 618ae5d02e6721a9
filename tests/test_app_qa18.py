"""Tests from the eighteenth QA pass of the step and Validate pages (streamlit AppTest, the API
and the CLI). Each one failed on the defect it names before its fix."""

from __future__ import annotations

import json

from tests._cli import run


# --- fit suggestions: no combined change whose part alone fits -------------------------------
def test_fit_suggestions_drop_a_combination_whose_part_fits_api():
    """Llama-2-7B as ddp on one DGX H100 node does not fit; "a larger card: gb200-nvl72 (gb200)"
    fits alone, and "... (gb200) and recompute full" was listed next to it (and "2 nodes (16
    GPUs) with fsdp" next to "fsdp"). A combined change whose part alone fits is not listed."""
    from costmodel.strategy.advisor import fit_suggestions

    fa = fit_suggestions(arch="llama-2-7b", cluster="dgx-h100", nodes=1, model="lesson")
    said = [c.change for c in fa.changes]
    fits = {c.change for c in fa.changes if c.fits}
    assert "a larger card: gb200-nvl72 (gb200)" in fits and "fsdp" in fits, said
    for words in said:
        if words.endswith(" and recompute full"):
            assert words.removesuffix(" and recompute full") not in fits, said
    assert not any(w.endswith("with fsdp") for w in said), said
    # nothing left that a fitting change's keywords are part of
    for w in fa.changes:
        for p in fa.changes:
            if p.fits and p is not w:
                sub = all(k in w.updates and w.updates[k] == v for k, v in p.updates.items())
                assert not (sub and len(p.updates) < len(w.updates)), (p.change, w.change)


def test_fit_suggestions_drop_a_combination_whose_part_fits_cli():
    """`costmodel step` lists the same changes (text and JSON) as the API: no dominated one."""
    args = ["step", "--arch", "llama-2-7b", "--cluster", "dgx-h100", "--strategy", "ddp"]
    res = run(*args, "--json")
    assert res.exit_code == 0, res.output
    changes = json.loads(res.stdout)["fit_suggestions"]["changes"]
    said = [c["change"] for c in changes]
    assert "a larger card: gb200-nvl72 (gb200)" in said, said
    assert "a larger card: gb200-nvl72 (gb200) and recompute full" not in said, said
    text = run(*args)
    assert text.exit_code == 0, text.output
    assert "(gb200) and recompute full" not in text.output, text.output
    assert "  a larger card: gb200-nvl72 (gb200): " in text.output, text.output
    # `costmodel memory` asks the same function: the same list
    mem = run("memory", "--arch", "llama-2-7b", "--ranks", "8", "--cluster", "dgx-h100", "--json")
    assert mem.exit_code == 0, mem.output
    listed = [c["change"] for c in json.loads(mem.stdout)["fit_suggestions"]["changes"]]
    assert listed == said, (listed, said)


def test_step_page_fit_suggestions_leave_out_dominated_changes():
    """The step page listed "a larger card: gb200-nvl72 (gb200) and recompute full" beside
    "a larger card: gb200-nvl72 (gb200)"; it lists the API's changes, without it."""
    from costmodel.strategy.advisor import fit_suggestions
    from tests.test_app import _text, assert_clean, open_page

    at = open_page(
        "page_ddp.py", {"ddp_arch": "llama-2-7b", "ddp_nodes": "1", "ddp_strategy": "ddp"}
    )
    assert_clean(at)
    (said,) = [_text(m.value) for m in at.markdown if "Changes that make it fit" in m.value]
    assert "and recompute full" not in said and "with fsdp" not in said, said
    fa = fit_suggestions(arch="llama-2-7b", cluster="dgx-h100", nodes=1, model="lesson")
    assert "- **fsdp**:" in said and "- **a larger card: gb200-nvl72 (gb200)**:" in said, said
    assert [c.change for c in fa.changes if c.fits][:5] == [
        line[4 : line.index("**:")] for line in said.splitlines() if line.startswith("- **")
    ]


# --- the Validate page ---------------------------------------------------------------------------
LOG_16B = "16b_aws-2x-p5-8xH100-EFA3200G_allreduce.txt"


def _validate(reference: str = LOG_16B):
    from tests.test_app import assert_clean, open_page

    at = open_page(
        "page_validate.py", {"val_source": "A reference run", "val_reference": reference}
    )
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    return at


def _cli_compare(reference: str = LOG_16B):
    from costmodel.reference import reference_dir

    res = run("validate", "compare", str(reference_dir("nccl-tests") / reference))
    assert res.exit_code in (0, 1), res.output
    return res


def test_validate_rows_compared_names_one_thing():
    """ "Rows compared" labelled both the in-place/out-of-place choice and the "56 of 64" metric.
    The choice says the CLI's word for it now (`validate compare --placement`)."""
    from tests.test_app import metrics

    at = _validate()
    assert at.radio(key="val_placement").label == "Placement"
    labels = [w.label for w in at.radio] + [w.label for w in at.selectbox]
    assert "Rows compared" not in labels, labels
    assert metrics(at)["Rows compared"].endswith(" of 64")


def test_validate_page_shows_the_cli_verdict_line():
    """`validate compare` prints "FAIL: docs/fidelity.md goal; ..." after its table (16b: the
    median from 1 MiB passes, the one over all sizes fails); the page showed no verdict. It
    shows the same line now, from the same function."""
    from tests.test_app import _text

    cli_line = _cli_compare().stdout.strip().splitlines()[-1]
    assert cli_line.startswith("FAIL: docs/fidelity.md goal for multi-node-cloud; "), cli_line
    at = _validate()
    shown = [_text(m.value) for m in at.markdown]
    assert cli_line in shown, (cli_line, shown)


def test_validate_page_shows_a_missing_footer_openly():
    """16b's run ends without nccl-tests' footer: the CLI warns on stderr, the page put it in
    the collapsed "Findings in the log" expander. It is an open warning now, before the
    comparison's metrics, with the CLI's words."""
    from tests.test_app import _text

    warned = [
        line.removeprefix("costmodel: warning: ")
        for line in _cli_compare().stderr.splitlines()
        if "footer" in line
    ]
    assert len(warned) == 1, warned
    at = _validate()
    assert not [e for e in at.expander if "Findings" in e.label]
    (box,) = [_text(w.value) for w in at.warning if "footer" in w.value]
    assert warned[0][1:] in box, (warned, box)  # the page's sentence capitalises the first word


# --- the step page: one number format for tokens/s ---------------------------------------------
def test_step_page_writes_tokens_per_second_one_way():
    """The scaling table wrote tokens/s as "7,878" where the strategy table above it writes
    "61.2 k": both tables write it with the strategy table's formatter (units.format_count);
    the CSV keeps the number."""
    from costmodel.units import format_count
    from tests.test_app import _text, assert_clean, open_page, open_tables

    at = open_page("page_ddp.py", {"ddp_arch": "llama-3.1-8b", "ddp_nodes": "4"})
    assert_clean(at)
    texts = [_text(m.value).replace("\u00a0", " ") for m in at.markdown]
    scaling = next(t for t in texts if "| scaling efficiency |" in t)
    header, _, *rows = scaling.splitlines()
    names = [c.strip() for c in header.strip("|").split("|")]
    col = names.index("tokens/s")
    cells = [[c.strip() for c in r.strip("|").split("|")][col] for r in rows]
    open_tables(at)
    grid = next(d.value for d in at.dataframe if "scaling efficiency [fraction]" in d.value)
    numbers = grid["tokens/s"].tolist()  # the CSV's numbers, unformatted
    assert all(isinstance(v, float) for v in numbers), numbers
    assert cells == [format_count(v) for v in numbers], (cells, numbers)
    assert any(c.endswith(" k") or c.endswith(" M") for c in cells), cells
    strategy = next(t for t in texts if "| tokens/s |" in t and t is not scaling)
    assert " k |" in strategy or " M |" in strategy, strategy
