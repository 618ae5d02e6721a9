"""QA pass 17: batch refusals in the user's words with every way out, -o given a folder,
collective sweeps that answer the rows that can run, ``memory --nodes``, and one "±"."""

from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from costmodel import batch

from ._cli import one_line_error, run
from ._paths import ROOT

WEB = ROOT / "costmodel" / "web"


# --- 1. a batch that does not split: the user's names, every cheap way out ----------------------
# 4 Mi tokens at seq 4096 = 1,024 sequences on 512 GPUs at local batch 4 (the app's default):
# 2,048 sequences per accumulation step, so no whole accumulation
TOKENS, SEQ, RANKS, LOCAL = 4 * 2**20, 4096, 512, 4


def test_split_refusal_offers_a_smaller_local_batch_fewer_ranks_and_more_tokens():
    with pytest.raises(batch.BatchSplitError) as err:
        batch.solve_batch(local_batch=LOCAL, ranks=RANKS, global_tokens=TOKENS, sequence_length=SEQ)
    text = batch.split_refusal(err.value, {"local_batch": "L", "ranks": "N", "accumulation": "A"})
    assert "L=2 (A=1)" in text  # 1,024 / (2 x 512) = 1: the largest local batch that divides
    assert "N=256 (A=1)" in text  # fewer GPUs
    assert "A=1 (global_tokens=8,388,608" in text  # more tokens
    # every way offered is accepted as written
    assert batch.solve_batch(local_batch=2, ranks=RANKS, global_tokens=TOKENS, sequence_length=SEQ)
    assert batch.solve_batch(
        local_batch=LOCAL, ranks=256, global_tokens=TOKENS, sequence_length=SEQ
    )
    # the largest that divides, not merely one: 1,024 / 3 x 8 -> local batch 8 is past 6, 4 is it
    with pytest.raises(batch.BatchSplitError) as err:
        batch.solve_batch(local_batch=6, ranks=8, global_batch=1024)
    assert "local_batch=4 (accumulation=32)" in str(err.value)


def test_split_refusal_never_offers_a_value_past_a_limit():
    # ranks unknown: 1e12 / 3 is past nothing but not whole; local batch 2 gives 5e11 ranks,
    # past the ranks limit (1e9), so it is not offered
    with pytest.raises(batch.BatchSplitError) as err:
        batch.solve_batch(local_batch=3, accumulation=1, global_batch=10**12)
    assert "at the same global batch" not in str(err.value)


def test_cli_batch_refusal_names_the_options_and_every_way_out():
    line = one_line_error(
        run(
            "batch",
            "--local-batch",
            "4",
            "--ranks",
            "512",
            "--global-tokens",
            "4Mi",
            "--seq",
            "4096",
        ),  # fmt: skip
        "--global-tokens",
    )
    assert not re.search(r"(?<![-\w])(local_batch|global_tokens|sequence_length)\b", line), line
    for way in ("--local-batch=2 (--accumulation=1)", "--ranks=256 (--accumulation=1)",
                "--global-tokens=8,388,608"):  # fmt: skip
        assert way in line, line
    ok = run("batch", "--local-batch", "2", "--ranks", "512", "--global-tokens", "4Mi",
             "--seq", "4096", "--json")  # fmt: skip
    assert ok.exit_code == 0 and '"accumulation": 1' in ok.stdout


def test_train_global_tokens_refusal_names_the_options():
    line = one_line_error(
        run(
            "train",
            "--params",
            "7B",
            "--nodes",
            "64",
            "--global-tokens",
            "4Mi",
            "--seq",
            "4096",
            "--micro-batch",
            "4",
            "--tokens",
            "1T",
        ),  # fmt: skip
        "--global-tokens",
        "--micro-batch=2 (--accumulation=1)",
    )
    assert "local_batch" not in line and "sequence_length" not in line


def test_app_batch_refusal_names_the_boxes_and_every_way_out():
    at = AppTest.from_file(str(WEB / "page_batch.py"), default_timeout=60)
    at.query_params.update({"batch_unit": "tokens", "batch_ranks": "512"})
    at.run()
    assert not at.exception
    errors = [re.sub(r"\\(.)", r"\1", e.value) for e in at.error]
    assert len(errors) == 1, errors
    text = errors[0]
    assert not re.search(r"\b(local_batch|global_tokens|sequence_length)\b", text), text
    assert "Local batch per GPU [samples] = 2 (Accumulation steps A [-] = 1)" in text
    assert "Data-parallel ranks N [GPUs] = 256" in text
    assert "Global batch [tokens per step] = 8,388,608" in text


# --- 2. -o given a folder or a name without an extension ---------------------------------------
SWEEP = ("sweep", "--set", "preset=dgx-h100", "--set", "nodes=1", "--set", "size=1MiB",
         "--no-progress")  # fmt: skip


def test_output_folder_is_refused_as_a_folder(tmp_path):
    line = one_line_error(run(*SWEEP, "-o", str(tmp_path)), "--output", "is a folder",
                          "give a file name ending in .csv, .parquet")  # fmt: skip
    assert "(none)" not in line and "unknown extension" not in line


def test_output_without_an_extension_names_the_allowed_endings(tmp_path):
    line = one_line_error(run(*SWEEP, "-o", str(tmp_path / "grid")), "--output",
                          "has no extension", ".csv, .parquet")  # fmt: skip
    assert "(none)" not in line
    assert not (tmp_path / "grid").exists()
    # validate compare writes its table through the same check
    from costmodel.sweep import output_format

    with pytest.raises(ValueError, match="is a folder"):
        output_format(tmp_path)


# --- 3. a collective sweep answers the rows that can run -----------------------------------------
def test_collective_sweep_answers_rows_that_run_and_refuses_the_others_row_by_row():
    import costmodel as cm

    df = cm.sweep(preset="dgx-h100", nodes="1,2,4", size="1GiB", algorithm="nvls")
    assert df["nodes"].tolist() == [1, 2, 4]
    one = df[df["nodes"] == 1].iloc[0]
    assert one["error"] == "" and one["time_s"] > 0 and one["algorithm_used"] == "nvls"
    # the same number a one-node sweep gives
    alone = cm.sweep(preset="dgx-h100", nodes="1", size="1GiB", algorithm="nvls")
    assert one["time_s"] == alone["time_s"].iloc[0]
    multi = df[df["nodes"] > 1]
    assert multi["time_s"].isna().all() and multi["busbw_GBps"].isna().all()
    assert all("multi-node NVLS needs CollNet (IB SHARP)" in e for e in multi["error"])
    # a GPU without NVLink SHARP: its nvls rows refused, its ring rows answered, in grid order
    df = cm.sweep(preset="dgx-a100", nodes="1,2", size="1GiB", algorithm="nvls,ring")
    assert df["algorithm"].tolist() == ["nvls", "nvls", "ring", "ring"]
    assert df["time_s"].isna().tolist() == [True, True, False, False]
    assert "NVLS needs NVLink SHARP" in df["error"].iloc[0]
    # nothing can run: refused as a whole, with the reason
    with pytest.raises(ValueError, match="NVLink SHARP"):
        cm.sweep(preset="dgx-a100", nodes="1,2", size="1GiB", algorithm="nvls")


def test_cli_collective_sweep_says_how_many_rows_were_refused(tmp_path):
    import pandas as pd

    out = tmp_path / "nvls.csv"
    r = run("sweep", "--set", "preset=dgx-h100", "--set", "nodes=1,2,4", "--set", "size=1GiB",
            "--set", "algorithm=nvls", "-o", str(out), "--no-progress")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert "2 of 3 rows failed" in r.stderr and "--set algorithm" in r.stderr
    back = pd.read_csv(out, keep_default_na=False)
    assert back["error"].tolist()[0] == "" and back["error"].tolist()[1] != ""


# --- 4. memory --nodes (and batch --nodes), as step, scenario and train count nodes -------------
MEM = ("memory", "--arch", "llama-3.1-70b", "--zero", "3", "--cluster", "dgx-h100", "--json")


def test_memory_nodes_is_nodes_times_the_clusters_gpus_per_node():
    import json

    by_nodes = run(*MEM, "--nodes", "8")
    by_ranks = run(*MEM, "--ranks", "64")
    assert by_nodes.exit_code == 0, by_nodes.stderr
    a, b = json.loads(by_nodes.stdout), json.loads(by_ranks.stdout)
    assert a["ranks"] == 64 and a["memory_bytes"] == b["memory_bytes"]
    # a 4-GPU-per-node preset counts 4 per node: the preset's own, not 8
    from costmodel import presets

    four = next(n for n in presets.names("cluster") if presets.cluster(n).gpus_per_node == 4)
    r = run("memory", "--params", "7B", "--zero", "3", "--cluster", four, "--nodes", "2", "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["ranks"] == 8


def test_memory_nodes_with_ranks_or_without_a_cluster_is_refused():
    one_line_error(run(*MEM, "--nodes", "8", "--ranks", "64"), "--ranks, --nodes: give one")
    one_line_error(
        run("memory", "--params", "7B", "--nodes", "8"),
        "--nodes: needs the GPUs per node",
        "--cluster",
    )
    one_line_error(run(*MEM, "--nodes", "0"), "--nodes")


def test_batch_nodes_counts_the_clusters_gpus():
    import json

    r = run("batch", "--local", "1", "--nodes", "64", "--cluster", "dgx-h100", "--global-tokens",
            "4Mi", "--seq", "4096", "--json")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert (json.loads(r.stdout)["ranks"], json.loads(r.stdout)["accumulation"]) == (512, 2)
    # --ranks beside --nodes: the same GPUs are answered (tests/test_cli_qa_pass17.py), others
    # refused naming both
    one_line_error(run("batch", "--local", "1", "--nodes", "2", "--ranks", "24", "--cluster",
                       "dgx-h100", "--global", "64"), "--ranks", "--nodes")  # fmt: skip
    one_line_error(run("batch", "--local", "1", "--nodes", "2", "--global", "64"), "--cluster")


# --- 5. one way to write a band: "±" -----------------------------------------------------------
def test_the_fidelity_report_the_app_shows_writes_plus_minus_as_the_rest_of_the_app():
    from costmodel.web.common import fidelity_text

    text = fidelity_text()
    assert "+-" not in text
    assert re.search(r"\| ±\d+% / ±\d+% \|", text)  # the per-regime band column
    assert (ROOT / "docs" / "fidelity.md").read_text(encoding="utf-8") == text


def test_no_user_visible_ascii_plus_minus_in_the_app_or_the_cli():
    """Strings in the app's and the CLI's modules never write a band as "+-" (a regex's "[+-]"
    sign class, docstrings and comments aside)."""
    import ast

    files = [*sorted((ROOT / "costmodel" / "web").glob("*.py")),
             *sorted((ROOT / "costmodel" / "cli").glob("*.py"))]  # fmt: skip
    found = []
    for f in files:
        tree = ast.parse(f.read_text(encoding="utf-8"))
        docstrings = {  # what a reader of the code reads, not the user
            id(n.body[0].value)
            for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and n.body
            and isinstance(n.body[0], ast.Expr)
        }
        for node in ast.walk(tree):
            if id(node) in docstrings:
                continue
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if re.search(r"(?<!\[)\+-(?!\])|\+/-", node.value):
                    found.append((f.name, node.value[:60]))
    assert not found, found


def test_dask_collective_dataset_counts_its_refused_rows(tmp_path):
    from dask import distributed

    import costmodel as cm
    from costmodel import distributed as dist

    grid = cm.sweep.make_grid(
        {"preset": "dgx-h100", "nodes": "1,2,4", "size": "1MiB,1GiB", "algorithm": "nvls"}
    )
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        summary = dist.sweep_dask(tmp_path / "ds", grid, scheduler=client, partition_rows=2)
    assert (summary.rows, summary.failed_rows) == (6, 4)
    assert list(summary.errors.values()) == [4]
    assert "multi-node NVLS needs CollNet" in next(iter(summary.errors))
