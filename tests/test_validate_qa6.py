"""Sixth QA pass of the validation harness: the DDP rows' shared compute, an nccl-tests log saved
as .jsonl, and logs in UTF-16 (a Windows PowerShell redirect). Each test names the defect it
guards against; tests/test_validate_qa.py to _qa5.py hold the earlier passes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests._cli import one_line_error, run

TORCHRUN = Path(sys.executable).with_name("torchrun")


def _log() -> Path:
    from costmodel.reference import reference_path

    return reference_path("09a")  # a bundled nccl-tests log: provenance lines, then the run


# --- 1. the no_sync and the plain DDP step of one setting timed their compute apart ---------------
@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(150)
def test_the_no_sync_and_plain_ddp_rows_of_a_setting_share_one_compute(tmp_path):
    """`validate torch --ddp` timed the no-communication compute once per row, so the
    `no_sync` true and false rows of one bucket cap and accumulation carried two measurements
    of the same compute (10 ms and 19 ms on a loaded machine), and the no_sync step could be
    predicted slower than the plain one: noise, not the model. Now both rows carry one value,
    the median over the samples timed beside each of them (`compute_iters`: both sets). A real
    2-rank gloo job on CPU, two bucket caps, accumulation 2."""
    torchrun = str(TORCHRUN) if TORCHRUN.exists() else shutil.which("torchrun")
    if torchrun is None:
        pytest.fail("torchrun not found next to the interpreter or on PATH")
    out = tmp_path / "ddp.jsonl"
    steps = 3
    cmd = [
        torchrun,
        "--standalone",
        "--nproc_per_node",
        "2",
        "-m",
        "costmodel.validation.torch_bench",
        "-o",
        str(out),
        "--backend",
        "gloo",
        "--ops",
        "none",
        "--ddp",
        "--ddp-params",
        "64K",
        "--ddp-width",
        "64",
        "--ddp-steps",
        str(steps),
        "--accumulation",
        "2",
        "--bucket-cap-mb",
        "1,25",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=140)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 6  # 2 caps x (acc 1; acc 2 with and without no_sync)
    for cap in (1.0, 25.0):
        pair = [r for r in rows if r["bucket_cap_mb"] == cap and r["accumulation"] == 2]
        assert sorted(r["no_sync"] for r in pair) == [False, True]
        assert pair[0]["compute_time_s"] == pair[1]["compute_time_s"] > 0, pair
        assert [r["compute_iters"] for r in pair] == [2 * steps] * 2
        assert [r["iters"] for r in pair] == [steps] * 2
        (alone,) = [r for r in rows if r["bucket_cap_mb"] == cap and r["accumulation"] == 1]
        assert alone["compute_iters"] == steps and alone["compute_time_s"] > 0
    # one compute per setting: the two rows' predicted compute is the same, so their predicted
    # steps differ by the communication only (no_sync: one all-reduce round instead of two)
    from costmodel.validation.compare import predict_ddp
    from costmodel.validation.runner import load_results

    df = load_results(out)
    pred = predict_ddp(df, lambda op, m, n, k=1: 1e-4 + m / 1e9)
    acc2 = pred[pred.accumulation == 2]
    for _, pair in acc2.groupby("bucket_cap_mb"):
        plain, quiet = pair[~pair.no_sync].iloc[0], pair[pair.no_sync].iloc[0]
        assert plain.predicted_compute_s == quiet.predicted_compute_s
        assert quiet.predicted_step_s < plain.predicted_step_s


# --- 2. an nccl-tests log saved as .jsonl: "line 1 is not JSON" and nothing else ----------------
NCCL_HEADS = (
    "# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20\n",
    "# Collective test starting: all_reduce_perf\n",
    "#                                                              out-of-place"
    "                       in-place          \n",
    "0: # nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor)\n",  # srun -l
)


@pytest.mark.parametrize("head", NCCL_HEADS)
def test_an_nccl_tests_log_saved_as_jsonl_is_named_as_one(tmp_path, head):
    """A .jsonl file is read as results by its suffix (every command dispatches so); an
    nccl-tests log saved under that suffix got "line 1 is not JSON" with no hint. Now the
    refusal says it looks like an nccl-tests log and to rename it .log or .txt; renamed, it
    reads."""
    from costmodel.validation.runner import load_results

    path = tmp_path / "allreduce.jsonl"
    path.write_text(head + _log().read_text())
    with pytest.raises(ValueError, match=r"line 1 is not JSON; the file looks like an nccl-tests"):
        load_results(path)
    line = one_line_error(
        run("validate", "compare", str(path), "--cluster", "pcie3-2x-rtx2080ti-nop2p"),
        "allreduce.jsonl: line 1 is not JSON",
        "looks like an nccl-tests log: rename it .log or .txt",
    )
    assert "Traceback" not in line
    one_line_error(run("calibrate", str(path), "-o", str(tmp_path / "c.toml")), "rename it .log")
    # the bundled log itself (provenance lines first, the run's head below them)
    bundled = tmp_path / "09a.jsonl"
    shutil.copyfile(_log(), bundled)
    with pytest.raises(ValueError, match=r"line 1 is not JSON; the file looks like an nccl-tests"):
        load_results(bundled)


def test_a_damaged_results_file_is_not_called_a_log(tmp_path):
    """The hint is for nccl-tests text only: a results file with a broken line in the middle is
    still "line 2 is not JSON", and its cut last line still only a warning."""
    from costmodel.validation.runner import load_results

    row = json.dumps({"op": "all_reduce", "size_bytes": 1024, "time_s": 1e-5, "ranks": 2})
    path = tmp_path / "r.jsonl"
    path.write_text(f"{row}\n# a comment, not JSON\n{row}\n")
    with pytest.raises(ValueError, match=r"line 2 is not JSON$"):
        load_results(path)
    path.write_text(f"{row}\n{row[:20]}")
    with pytest.warns(UserWarning, match="line 2 is cut off"):
        assert len(load_results(path)) == 1


# --- 3. UTF-16 logs (Windows PowerShell 5's `>`) were refused -------------------------------------
ENCODINGS = (
    ("utf-16", b""),  # Python writes the platform's BOM: FF FE on little-endian machines
    ("utf-16-le", b"\xff\xfe"),
    ("utf-16-be", b"\xfe\xff"),
    ("utf-8", b"\xef\xbb\xbf"),
)


@pytest.mark.parametrize(("codec", "bom"), ENCODINGS)
def test_a_log_in_utf16_reads_as_the_same_log_in_utf8(tmp_path, codec, bom):
    """A log redirected by Windows PowerShell 5 is UTF-16 LE with a BOM (FF FE); it was
    refused ("not UTF-8 text: byte 0xff at offset 0"). Decoded by its BOM now, it reads as the
    same log saved as UTF-8: the parser, the CLI and a folder of logs alike."""
    from costmodel.validation.logread import read_log
    from costmodel.validation.nccl_tests import read_nccl_tests

    text = _log().read_text()
    plain, encoded = tmp_path / "utf8" / "ar.txt", tmp_path / codec / "ar.txt"
    plain.parent.mkdir()
    encoded.parent.mkdir()
    plain.write_bytes(text.encode())
    encoded.write_bytes(bom + text.encode(codec))
    assert encoded.read_bytes()[:2] in (b"\xff\xfe", b"\xfe\xff", b"\xef\xbb")
    want = read_nccl_tests(plain, op="all_reduce")
    got = read_nccl_tests(encoded, op="all_reduce")
    assert len(want) > 10 and got.time_s.tolist() == want.time_s.tolist()
    a = read_log(plain.read_bytes(), "ar.txt", cluster="pcie3-2x-rtx2080ti-nop2p")
    b = read_log(encoded.read_bytes(), "ar.txt", cluster="pcie3-2x-rtx2080ti-nop2p")
    assert b.rows.drop(columns="source", errors="ignore").equals(
        a.rows.drop(columns="source", errors="ignore")
    )
    outs = []
    for path in (plain, encoded, encoded.parent):  # the file, and its folder as a folder of logs
        done = run(
            "validate", "compare", str(path), "--cluster", "pcie3-2x-rtx2080ti-nop2p", "--json"
        )
        assert done.exit_code in (0, 1), (done.exit_code, done.stderr)
        assert "UTF" not in done.stderr, done.stderr
        outs.append(json.loads(done.stdout))
    assert outs[1]["summary"] == outs[0]["summary"]
    assert outs[2]["summary"] == outs[0]["summary"]


def test_nccl_debug_lines_of_a_utf16_log_are_read(tmp_path):
    """The socket-fallback check reads NCCL's debug lines out of the raw log's bytes; a UTF-16
    log's bytes decoded as UTF-8 (bad bytes replaced) hid them behind a NUL between every two
    characters."""
    from costmodel.validation.fallback import _text

    line = "node01:1234:1234 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
    assert "NCCL INFO NET/Socket" in _text(line.encode("utf-16"))
    assert "NCCL INFO NET/Socket" in _text(b"\xef\xbb\xbf" + line.encode())
    assert _text(b"\xff\xfe" + line.encode("utf-16-le") + b"\x00").startswith("node01")


def test_a_results_file_in_utf16_loads_as_in_utf8(tmp_path):
    """A results file copied through a PowerShell redirect (UTF-16 LE, BOM) failed with
    Python's own "'utf-8' codec can't decode byte 0xff in position 0" naming no file; one
    saved by an editor as UTF-8 with a BOM had its first row refused as not JSON."""
    from costmodel.validation.runner import load_results

    rows = [
        {"op": "all_reduce", "size_bytes": 2**k, "time_s": 1e-5 * k, "ranks": 2} for k in (10, 20)
    ]
    text = "".join(json.dumps(r) + "\n" for r in rows)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(text)
    b.write_bytes(text.encode("utf-16"))
    assert load_results(b).equals(load_results(a))
    b.write_bytes(b"\xff\xfe" + text.encode("utf-16-le").replace(b"\n\x00", b"\r\x00\n\x00"))
    assert load_results(b).equals(load_results(a))  # CRLF line ends, as PowerShell writes
    b.write_bytes(b"\xef\xbb\xbf" + text.encode())  # UTF-8 with a BOM (Notepad): was "line 1
    assert load_results(b).equals(load_results(a))  # is not JSON", the BOM glued to the row


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        # Latin-1 in a result row (one in a comment is read replaced: tests/test_validate_qa12.py)
        (
            b"  1024  256  fl\xe9at  sum  -1  5.0  0.2  0.4  0  5.0  0.2  0.4  0\n",
            "not UTF-8 text: byte 0xe9 at offset 15",
        ),
        (
            b"\xff\xfe#\x00 \x00\x00\xd8#\x00",
            "not UTF-16 text: byte 0x00 at offset 6",
        ),  # lone surrogate
        (b"\xff\xfe#\x00 \x00n", "not UTF-16 text: byte 0x6e at offset 6"),  # odd length
        # UTF-16 without its BOM is read now (tests/test_validate_qa7.py); NULs throughout are not
        (b"\x00" * 64, "not text: NUL bytes throughout"),
    ],
)
def test_undecodable_logs_are_still_refused_clearly(tmp_path, data, fragment):
    """What no BOM explains is refused as before, in one line naming the byte and its offset
    (or, for UTF-16 without its BOM, which decodes as UTF-8 into NULs, saying that), by the
    log reader, the results reader and the CLI."""
    from costmodel.validation.nccl_tests import NcclTestsParseError, decode_log
    from costmodel.validation.runner import load_results

    with pytest.raises(NcclTestsParseError, match=fragment):
        decode_log(data, "x.log")
    log = tmp_path / "x.log"
    log.write_bytes(data)
    one_line_error(
        run("validate", "compare", str(log), "--cluster", "pcie3-2x-rtx2080ti-nop2p"), fragment
    )
    results = tmp_path / "x.jsonl"
    results.write_bytes(data)
    with pytest.raises(ValueError, match=fragment.replace("(", r"\(")):
        load_results(results)
    one_line_error(
        run("validate", "compare", str(results), "--cluster", "pcie3-2x-rtx2080ti-nop2p"),
        "x.jsonl",
        fragment,
        "save the results file as UTF-8",
    )
