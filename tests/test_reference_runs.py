"""The bundled runs' index (costmodel.validation.reference_runs): one source for the fit, the
CLI and the Validate page, and the defaults it gives a bundled log, which any input set wins."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from costmodel import cli, presets
from costmodel.reference import reference_id, reference_path, reference_runs
from costmodel.validation import reference_runs as idx
from costmodel.validation.logread import read_log
from tests._paths import load_script
from tests.test_app import _text, assert_clean, open_page


def test_the_fit_reads_the_package_index():
    fit = load_script("fit_corrections")
    assert fit.RUNS is idx.RUNS and fit.RunSpec is idx.BundledRun  # one source, not a copy
    assert {r.prefix for r in idx.RUNS} | set(idx.NOT_FITTED) == {
        reference_id(n) for n in reference_runs("nccl-tests")
    }
    for run in idx.RUNS:  # every preset named is one the package loads
        assert presets.cluster(run.preset).name


def test_a_bundled_log_is_found_by_its_bytes_or_its_name():
    path = reference_path("16a")
    raw = path.read_bytes()
    assert idx.find_bundled_run(raw, "upload.txt").preset == "aws-p4de"  # bytes, any name
    # other line ends: the same run
    crlf = raw.replace(b"\n", b"\r\n")
    assert idx.find_bundled_run(crlf, "upload.txt").preset == "aws-p4de"
    # an edited copy under the bundled file's own name: that run
    assert idx.find_bundled_run(b"# edited\n" + raw, path.name).preset == "aws-p4de"
    assert idx.find_bundled_run(b"# edited\n" + raw, "mine.log") is None  # the user's own
    # a user's own log whose name only starts with a run's short id is the user's own (it was
    # read as that run, its index's cluster and launch applied; tests/test_qa_pass62.py)
    assert idx.find_bundled_run(b"# edited\n" + raw, "16a_mine.log") is None
    assert idx.run_spec("27") is None  # two headline numbers, not a run


def test_the_reader_defaults_a_bundled_log_and_what_the_user_sets_wins():
    path = reference_path("16a")  # 2 x 8 A100 on EFA: no GPU named, no host lines
    read = read_log(path.read_bytes(), path.name)
    assert (read.cluster, read.nodes, read.gpus_per_node) == ("aws-p4de", 2, 8)
    assert "cluster = aws-p4de (the bundled run's preset)" in read.assumed_lines()
    assert "GPUs per node = 8 (the bundled run 16a's index)" in read.assumed_lines()
    mine = read_log(path.read_bytes(), path.name, cluster="aws-p5", gpus_per_node=4)
    assert (mine.cluster, mine.nodes, mine.gpus_per_node) == ("aws-p5", 4, 4)
    assert not any(line.startswith("cluster") for line in mine.assumed_lines())
    assert read_log(path.read_bytes(), path.name, nodes=16).nodes == 16
    # a device list cut to rank 0 (23a: the curator kept rank 0's line only) is not host lines
    # (its busbw/algbw ratio says 16 ranks), so the index's 2 x 8 fills what it leaves unknown
    cut = reference_path("23a")
    read = read_log(cut.read_bytes(), cut.name)
    spec = idx.run_spec("23a")
    assert (read.nodes, read.gpus_per_node) == (spec.nodes, spec.gpus_per_node) == (2, 8)
    assert "nodes = 2 (the bundled run 23a's index)" in read.assumed_lines()


def test_validate_compare_reference_needs_no_cluster():
    result = CliRunner().invoke(
        cli.app, ["validate", "compare", "--reference", "22", "--json", "--tolerance", "100"]
    )
    assert result.exit_code in (0, 1), result.output
    assumed = json.loads(result.stdout)["assumed"]
    assert "cluster = dgx-h100 (the bundled run's preset)" in assumed
    assert "nodes = 2 (the bundled run 22's index)" in assumed
    assert "assumed: cluster = dgx-h100 (the bundled run's preset)" in result.stderr


def test_the_page_defaults_a_picked_or_uploaded_bundled_log_and_says_so():
    name = reference_path("16b").name  # picked from the list (a link to it: the same run)
    at = open_page("page_validate.py", {"val_source": "A reference run", "val_reference": name})
    assert_clean(at)
    assert at.selectbox(key="val_cluster").value == "aws-p5"
    caption = " ".join(_text(c.value) for c in at.caption)
    assert "cluster = aws-p5 (the bundled run's preset)" in caption
    assert "nodes = 2 (ranks / 8 GPUs per node (the bundled run 16b's index))" in caption
    at.selectbox(key="val_cluster").set_value("aws-p4de").run()  # the user's choice wins
    assert at.selectbox(key="val_cluster").value == "aws-p4de"
    assert "the bundled run's preset" not in " ".join(_text(c.value) for c in at.caption)
    # the same bytes uploaded under another name: the same default (the uploader's path)
    from costmodel.web import data, page_validate

    raw = reference_path("20").read_bytes()
    clusters = data.preset_names("cluster")
    assert page_validate._default_cluster(raw, "tcpx.txt", clusters) == "gcp-a3-high"
    # a line of its own added: the user's own log (a lost last newline is the same text now)
    assert page_validate._default_cluster(b"# mine\n" + raw, "tcpx.txt", clusters) == "dgx-h100"
    assert page_validate._default_cluster(raw[:-1], "tcpx.txt", clusters) == "gcp-a3-high"


def test_a_bundled_run_whose_rows_imply_another_rank_count_is_read_as_the_fit_reads_it():
    """04b's header says 144 GPUs, its rows imply 128 (the index's ``ranks``, which the fit
    uses): `validate compare` and the page compare it at the index's count and say so."""
    for prefix in ("04b", "03"):
        path = reference_path(prefix)
        read = read_log(path.read_bytes(), path.name)
        spec = idx.run_spec(prefix)
        assert spec.ranks is not None and set(read.rows["ranks"]) == {spec.ranks}
        assert f"ranks = {spec.ranks} (the bundled run {prefix}'s index)" in read.assumed_lines()
    # a copy of yours (one byte added, another name) keeps the count its own log gives
    path = reference_path("04b")
    mine = read_log(path.read_bytes() + b"\n# a copy\n", "mine.txt", cluster="gb200-nvl72")
    assert set(mine.rows["ranks"]) == {144}
    assert not any(line.startswith("ranks") for line in mine.assumed_lines())
