"""CLI papercuts of pass 8 (a new user planning training runs): each test failed before its fix.

No server starts here: the launcher's ``serve`` is replaced by one that records the command.
"""

from __future__ import annotations

import pytest

from costmodel.web import launch

from ._cli import one_line_error, run


# --- the app's address -------------------------------------------------------------------------
def test_an_app_address_of_no_interface_here_is_refused_before_the_server_starts(monkeypatch):
    """`costmodel app --address 192.0.2.1` (an address of no interface of this machine; the
    range is reserved for documentation, RFC 5737) started the server, which failed inside
    Streamlit with a Python traceback and exit 1. Now one line names --address and what is
    allowed, and no server is started."""
    started: list[list[str]] = []
    monkeypatch.setattr(launch, "serve", lambda cmd: started.append(cmd) or 0)
    line = one_line_error(run("app", "--address", "192.0.2.1"), "--address: ", "'192.0.2.1'")
    assert "not an address of this machine" in line and "0.0.0.0" in line and not started


@pytest.mark.parametrize("address", ["127.0.0.1", "0.0.0.0"])
def test_an_app_address_of_this_machine_still_serves(address, monkeypatch):
    started: list[list[str]] = []
    monkeypatch.setattr(launch, "serve", lambda cmd: started.append(cmd) or 0)
    assert run("app", "--address", address).exit_code == 0 and len(started) == 1
    assert started[0][started[0].index("--server.address") + 1] == address


# --- a preset name cut short -------------------------------------------------------------------
def test_a_price_name_cut_short_suggests_the_names_it_begins():
    """`train --price aws-p5` (the p5 instance, without its terms) said "closest:
    aws-p5en-spot", an H200 spot price, and not the two H100 prices named `aws-p5-...`; the
    API's `load_price` said the same, from the one refusal (`_checks.unknown_name`)."""
    import costmodel as cm

    r = run("train", "--arch", "llama-3.1-8b", "--tokens", "1T", "--price", "aws-p5")
    line = one_line_error(r, "--price", "closest: aws-p5-capacity-block, aws-p5-on-demand")
    with pytest.raises(ValueError, match="closest: aws-p5-capacity-block, aws-p5-on-demand"):
        cm.load_price("aws-p5")
    # every name the typed one begins is offered, past three
    assert "gcp-a3-high-spot" in one_line_error(
        run("train", "--arch", "llama-3.1-8b", "--tokens", "1T", "--price", "gcp-a3-high"),
        "--price",
        "gcp-a3-high-cud-1y",
        "gcp-a3-high-on-demand",
    )
    assert line.count(", ") == 2  # still three names where fewer begin with it


# --- an algorithm the cluster cannot run, with the protocol left to NCCL -----------------------
def test_a_pinned_algorithm_that_cannot_run_gives_its_own_reason_not_each_protocols():
    """`collective all_reduce --cluster dgx-h100 --nodes 2 --algorithm nvls` said "(nvls/ll: nvls
    runs only with the simple protocol; nvls/ll128: nvls runs only with the simple protocol;
    nvls/simple: multi-node NVLS needs CollNet (IB SHARP))": with no protocol given, the first
    two are no reason. Now only the algorithm's own; a pinned protocol keeps its reason."""
    where = ("--cluster", "dgx-h100", "--nodes", "2", "--algorithm", "nvls")
    r = run("collective", "all_reduce", "--size", "1GB", *where)
    line = one_line_error(r, "--algorithm: 'nvls'")
    assert "(nvls/simple: multi-node NVLS needs CollNet (IB SHARP))" in line, line
    assert "nvls/ll" not in line and "runs only with the simple protocol" not in line
    pinned = run("predict", "--op", "all_reduce", "--sizes", "1GB", *where, "--protocol", "ll")
    line = one_line_error(pinned, "--protocol 'll'")
    assert "nvls/ll: nvls runs only with the simple protocol" in line


# --- a row its cluster cannot run has no expected error ----------------------------------------
def test_a_row_that_cannot_run_has_no_expected_error_and_no_unknown_error_note():
    """`collective all --cluster dgx-h100 --algorithm all` on one node listed nvls_tree (it needs
    several nodes) with "± ?" as expected error, and the footnote then said "'± ?': no bundled
    run measured this regime ...: the error is unknown", false of every answered row (one node
    of NVLink: 38 runs). A row with no answer shows "-", as its time; the note is not added."""
    r = run("collective", "all", "--size", "1GB", "--cluster", "dgx-h100", "--algorithm", "all")
    assert r.exit_code == 0, r.stderr
    (row,) = [x for x in r.stdout.splitlines() if " all_reduce " in x and " nvls_tree " in x]
    assert "± ?" not in row and row.split()[-2:] == ["-", "-"], row
    assert "'± ?'" not in r.stdout and "the error is unknown" not in r.stdout
    assert "not available: all_reduce nvls_tree" in r.stdout
    # on two nodes the all-to-all's band is unknown: that row keeps "± ?" and the note its reason
    two = run("collective", "all", "--size", "1GB", "--cluster", "dgx-h100", "--nodes", "2")
    (a2a,) = [x for x in two.stdout.splitlines() if " all_to_all " in x]
    assert "± ?" in a2a and "'± ?': all-to-all across nodes" in two.stdout


# --- presets show: an unset field -------------------------------------------------------------
def _shown_fields(name: str) -> dict[str, str]:
    r = run("presets", "show", name)
    assert r.exit_code == 0, r.stderr
    block = r.stdout.split("\n\n")[0].splitlines()[1:]  # the stored fields, before "derived"
    return {line.split(None, 1)[0]: (line.split(None, 1) + [""])[1] for line in block}


@pytest.mark.parametrize("name", ["dgx-h100", "ib-ndr", "h100-sxm"])
def test_presets_show_writes_an_unset_field_as_a_dash_not_python_none(name):
    """`presets show dgx-h100` printed "node.gpu.power_limit_w  None" and "calibration  None"
    (Python's word for a field left unset, `null` in --json) and a blank for an empty source;
    every other table of the CLI writes "-" for a missing value."""
    import json

    shown = _shown_fields(name)
    stored = json.loads(run("presets", "show", name, "--json").stdout)["fields"]
    assert "None" not in shown.values() and "" not in shown.values(), shown
    if name == "dgx-h100":
        assert stored["calibration"] is None and shown["calibration"] == "-"
        assert stored["node"]["gpu"]["power_limit_w"] is None
        assert shown["node.gpu.power_limit_w"] == "-"
    if name == "ib-ndr":
        assert stored["line_rate_bytes_per_s"] is None and shown["line_rate_bytes_per_s"] == "-"


# --- scenario --vs: the DOES NOT FIT line's pointer is runnable --------------------------------
def test_a_side_that_does_not_fit_points_to_a_fit_listing_that_runs():
    """`scenario ... --vs arch=llama-3.1-70b` said of B "(`costmodel scenario --fit` lists the
    changes that make it fit)"; adding --fit to that command line is refused ("with --vs each
    side's header says whether it fits (run --fit on each side alone)"). The pointer now says
    to run it on that side without --vs, and that command answers."""
    args = ("scenario", "--arch", "llama-3.1-8b", "--nodes", "8", "--zero", "3")
    r = run(*args, "--vs", "arch=llama-3.1-70b")
    assert r.exit_code == 0, r.stderr
    (line,) = [x for x in r.stdout.splitlines() if "DOES NOT FIT" in x]
    assert "(`costmodel scenario --fit`, run on that side without --vs, lists the changes" in line
    assert run(*args, "--vs", "arch=llama-3.1-70b", "--fit").exit_code == 2
    alone = run("scenario", "--arch", "llama-3.1-70b", "--nodes", "8", "--zero", "3", "--fit")
    assert alone.exit_code == 0 and "recompute full" in alone.stdout, alone.stderr


def test_a_side_that_does_not_fit_points_to_a_runnable_fit_listing_in_json_too():
    """`scenario ... --vs ... --json` still said "(`costmodel scenario --fit` lists the changes)"
    in B's note after the text output was fixed: --json names the same runnable pointer, and
    a one-configuration --json keeps the plain one (there --fit runs)."""
    import json

    args = ("scenario", "--arch", "llama-3.1-8b", "--nodes", "8", "--zero", "3", "--json")
    r = run(*args, "--vs", "arch=llama-3.1-70b")
    assert r.exit_code == 0, r.stderr
    text = json.dumps(json.loads(r.stdout))
    assert "run on that side without --vs, lists the changes" in text
    assert "`costmodel scenario --fit` lists" not in text
    one = run("scenario", "--arch", "llama-3.1-70b", "--nodes", "8", "--zero", "3", "--json")
    assert one.exit_code == 0, one.stderr
    assert "`costmodel scenario --fit` lists the changes" in one.stdout
    assert "without --vs" not in one.stdout
