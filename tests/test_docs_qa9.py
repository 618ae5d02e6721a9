"""Figures README.md and docs/*.md quote as what a call or a command gives, recomputed now.

The other readers of the docs check the README's Python comments that start with a literal
(``tests/test_readme.py``), the lesson's figures (``tests/test_docs_qa5.py``), the generated
reports (docs/step-fidelity.md, docs/fidelity.md, by their scripts) and names, signatures and
constants (``tests/test_docs_audit.py``, ``tests/test_docs_current.py``). What they left is
read here, each figure from the doc's own text and compared to the code at the doc's rounding
(``534 ms`` holds 533.5-534.5 ms, ``7.0 %`` 6.95-7.05 %), so a model change that moves a
quoted figure fails until the doc says the new one:

- **figures in prose** (:data:`FIGURES`): the strategy advisor's tie on 8 DGX H100 (it said
  "zero2 (+8.4 % under ±7.9 %)" after zero1/zero2's one parameter all-gather made it
  +7.3 % under ±7.0 %), the side-by-side verdicts, the step band, memory and loss examples,
  the README's Python comments that begin with words (``# + (N-1)/N M gamma: 0.689 s``) and
  the step scores it quotes from docs/step-fidelity.md (a report its own test keeps current);
- **a shell line's comment** (``costmodel batch ...  # 512 GPUs: accumulation 2``): the
  command as the README writes it is run with ``--json`` and each figure of its comment read
  back from the keys :data:`SHELL_KEYS` names;
- **a CLI row quoted** (:data:`CLI_ROWS`): the command's text output has the row with that
  value (the README quoted `lesson total (no buffers)` 112 GB for one rank, a row one rank no
  longer prints), or has no such row where the doc says so, and **an output quoted in words**
  (:data:`QUOTES`: a band's extrapolation line) is in what the command prints;
- **docs/gpu-checks.md's tables**: the predictions printed beside each recorded run (the
  compute `costmodel step` shows for one H200 and its band, the memory model's parts, the
  optimizer step) are what ``costmodel.validation.compute_bench`` prices for that
  configuration now;
- **the README's regime tables** ("Goal and measured gap", "Per regime and op class"): runs,
  sources, grouped-CV and in-sample medians and band of each regime (and op class) are
  docs/fidelity.md's, the report scripts/fit_corrections.py writes.

Each reader is checked on a planted stale figure (the last test).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import pytest

import costmodel as cm
from tests._cli import run
from tests._paths import ROOT

GB = 1e9
NUMBER = r"(\d[\d,]*(?:\.\d+)?)"


@cache
def _text(doc: str) -> str:
    """A doc with every run of white space one space (a sentence may wrap anywhere)."""
    return re.sub(r"\s+", " ", (ROOT / doc).read_text(encoding="utf-8"))


def _agrees(written: str, value: float) -> bool:
    """``value`` rounds to ``written`` at its last digit (``1.2`` holds 1.15-1.25)."""
    digits = written.replace(",", "")
    decimals = len(digits.partition(".")[2])
    half = 0.5 * 10.0**-decimals
    return abs(value - float(digits)) <= half * (1 + 1e-9)


@dataclass(frozen=True)
class Figure:
    """Figures a doc states as what the code gives: ``pattern`` (on the doc's text, white
    space collapsed) captures each number, ``compute`` gives them now, in the doc's units."""

    name: str
    doc: str
    pattern: str
    compute: Callable[[], tuple[float, ...]]


def _wrong(fig: Figure, text: str) -> list[str]:
    """What of ``fig`` the text does not say as computed (empty: all of it agrees)."""
    m = re.search(fig.pattern, text)
    if m is None:
        return [f"{fig.doc}: no longer says {fig.pattern!r}: update or drop this figure"]
    values = fig.compute()
    assert len(values) == len(m.groups()), (fig.name, values)
    return [
        f"{fig.doc}: {fig.name}: says {w} where the code gives {v:.6g}"
        for w, v in zip(m.groups(), values, strict=True)
        if not _agrees(w, v)
    ]


# --- what each figure is ------------------------------------------------------------------------
@cache
def _advice() -> list[dict]:
    return cm.advise_strategy(arch="llama-3.1-8b", cluster="dgx-h100", nodes=8).rows()


def _advisor_tie() -> tuple[float, ...]:
    """README, "A winner only when it wins": the four layouts tied with fsdp."""
    tied = [r for r in _advice() if r["within_expected_error"]]
    assert [r["layout"] for r in tied] == ["fsdp", "fsdp (no reshard)", "hsdp g=32", "hsdp g=16"]
    steps = [r["step_time_s"] * 1e3 for r in tied]
    last = max(tied[1:], key=lambda r: r["gap_to_best"])
    return min(steps), max(steps), 100 * last["gap_to_best"], 100 * last["half_width_vs_best"]


def _advisor_zero() -> tuple[float, ...]:
    """The same table's zero2 and zero1: one step (one all-gather of the weights each), told
    apart from fsdp."""
    rows = {r["layout"]: r for r in _advice()}
    z1, z2 = rows["zero1"], rows["zero2"]
    assert z1["step_time_s"] == z2["step_time_s"] and not z2["within_expected_error"]
    return 100 * z2["gap_to_best"], 100 * z2["half_width_vs_best"]


def _ring_vs_nvls_tree() -> tuple[float, ...]:
    (v,) = cm.predict_all_algorithms("all_reduce", 14e9, "dgx-h100", nodes=8).verdicts
    assert (v.best, v.runner_up, v.winner) == ("ring", "nvls_tree", None)
    return 100 * v.gap, 100 * v.half_width


def _sides(changes: str, **kw) -> tuple:
    a = cm.Scenario(**kw)
    return a.evaluate(scaling=False, flips=False), a.with_changes(changes).evaluate(
        scaling=False, flips=False
    )


def _fsdp_8_vs_16() -> tuple[float, ...]:
    from costmodel.verdict import decide_scenarios

    ra, rb = _sides("nodes=16", arch="llama-2-7b", cluster="dgx-h100", nodes=8, strategy="fsdp")
    v = decide_scenarios(ra, rb)
    assert v.winner is None
    return 100 * v.gap, 100 * v.half_width


def _h100_vs_a100() -> tuple[float, ...]:
    from costmodel.verdict import decide_scenarios

    ra, rb = _sides("cluster=dgx-a100", arch="llama-3.1-70b", nodes=8, zero_stage=3)
    v = decide_scenarios(ra, rb)
    assert v.winner == "A"
    return (100 * v.half_width,)


def _two_clusters_1gb() -> tuple[float, ...]:
    from costmodel.verdict import pair_half_width

    a = cm.predict_collective("all_reduce", 1e9, "dgx-h100", nodes=2).error_band.half_width
    b = cm.predict_collective("all_reduce", 1e9, "dgx-a100", nodes=4).error_band.half_width
    return 100 * pair_half_width(a, b, same_error=False), 100 * max(a, b)


def _band_70b() -> tuple[float, ...]:
    s = cm.strategy_step(
        arch="llama-3.1-70b", cluster="dgx-h100", nodes=8, strategy="fsdp", recompute="full"
    )
    lo, hi = s.step_time_band_s
    return lo, hi, s.step_time_s


def _memory_70b() -> tuple[float, ...]:
    m = cm.strategy_memory(cm.Layout(strategy="fsdp", ranks=64), arch="llama-3.1-70b")
    return m.total_bytes / GB, m.base.total_bytes / GB, m.gathered_bytes / GB


def _tight_405b() -> tuple[float, ...]:
    layout = cm.Layout(strategy="hsdp", ranks=256, group_size=64)
    m = cm.strategy_memory(layout, arch="llama-3.1-405b", recompute="full")
    card = float(cm.presets.load("h200-sxm").memory_bytes)
    return m.total_bytes / GB, card / GB, 100 * (1 - m.total_bytes / card)


def _loss_8b() -> tuple[float, ...]:
    from costmodel.architecture import loss_logits_bytes

    a = cm.load_arch("llama-3.1-8b")
    tokens = 2 * 8192
    fp32, _ = loss_logits_bytes(tokens, a.vocab, "fp32")
    fused, _ = loss_logits_bytes(tokens, a.vocab, "fused")
    return fp32 / 2**30, fused / 2**30


def _shape_7b() -> tuple[float, ...]:
    from costmodel.architecture import architecture_for_params

    a = architecture_for_params(7e9)
    return a.layers, a.hidden


def _b200_recompute() -> tuple[float, ...]:
    _, rb = _sides("cluster=dgx-b200", params="7B", recompute="full")
    return (rb.compute_s * 1e3,)


def _crossover_8_nodes() -> tuple[float, ...]:
    r = cm.predict_all_algorithms("all_reduce", [2.0**k for k in range(3, 36)], "dgx-h100", nodes=8)
    first = r.crossovers.iloc[0]
    assert (first.faster_below, first.faster_above) == ("tree", "nvls_tree")
    return (first.message_bytes / 1e6,)


def _busbw(time_s: float, size: float = 8 * 2**30, ranks: int = 16) -> float:
    return cm.bus_bandwidth("all_reduce", size, ranks, time_s) / GB


def _cluster_2() -> object:
    return cm.cluster("dgx-h100", nodes=2)


def _memory_comment() -> tuple[float, ...]:
    m = cm.training_memory("llama-3.1-70b", zero_stage=3, dp_ranks=64)
    full = cm.training_memory("llama-3.1-70b", zero_stage=3, dp_ranks=64, recompute="full")
    return m.total_bytes / GB, m.activations_bytes / GB, full.total_bytes / GB


def _fsdp_fit_comment() -> tuple[float, ...]:
    r = cm.Scenario(arch="llama-2-7b", cluster="dgx-h100", nodes=8, strategy="fsdp").evaluate()
    assert r.training_cost(2e12, price="aws-p5-on-demand").fit_warning == ""
    return (r.memory_total_bytes / GB,)


@cache
def _step_report() -> dict[str, float]:
    """docs/step-fidelity.md's summary (the report ``tests/test_step_fidelity.py`` keeps current
    with the code): the figures the README quotes from it, by name."""
    text = _text("docs/step-fidelity.md")
    got = {}
    for key, pattern in {
        "median": rf"\| absolute, nothing measured: median \(\d+ rows\) \| [^|]* \| {NUMBER} %",
        "p90": rf"\| absolute: 90th percentile \| [^|]* \| {NUMBER} %",
        "covers": rf"\| absolute: step band covers, held out [^|]* \| [^|]* \| {NUMBER} %",
        "one node": rf"\| 75-85 % \| [\d.]+ % \(one node {NUMBER} %",
        "beyond": rf"beyond one node {NUMBER} %; in-sample",
        "in-sample": rf"; in-sample {NUMBER} %\); scaling band without",
        "source": rf"scaling band without the row's source {NUMBER} %;",
        "per family": rf"the per-family compute band before {NUMBER} %",
    }.items():
        m = re.search(pattern, text)
        assert m, f"docs/step-fidelity.md: no {key} ({pattern!r})"
        got[key] = float(m[1])
    return got


def _report(*keys: str) -> Callable[[], tuple[float, ...]]:
    return lambda: tuple(_step_report()[k] for k in keys)


def _band_14gb() -> tuple[float, ...]:
    p = cm.predict_collective("all_reduce", 14e9, "dgx-h100", nodes=8)
    lo, hi = p.error_band.time_bounds(p.time_s)
    return float(lo) * 1e3, float(hi) * 1e3


def _ddp_overhead_us() -> tuple[float, ...]:
    from costmodel.compute import ddp_step_overhead_s

    return (ddp_step_overhead_s(1) * 1e6,)


R = "README.md"
FIGURES = [
    Figure(
        "advisor tie",
        R,
        r"Llama 3\.1 8B on 8 DGX H100: fsdp, fsdp \(no reshard\), hsdp g=32 "
        rf"and hsdp g=16 \({NUMBER}-{NUMBER} ms\) are within the expected error of each other "
        rf"\(up to {NUMBER} % apart under ±{NUMBER} %",
        _advisor_tie,
    ),
    Figure(
        "advisor zero1/zero2",
        R,
        rf"zero2 and zero1 \(\+{NUMBER} % under ±{NUMBER} %\) are told apart",
        _advisor_zero,
    ),
    Figure(
        "14 GB ring vs nvls_tree",
        R,
        rf"14 GB on 8 DGX H100: ring is {NUMBER}% ahead of NVLS-tree under ±{NUMBER}%",
        _ring_vs_nvls_tree,
    ),
    Figure(
        "fsdp 8 vs 16 nodes",
        R,
        rf"Llama-2-7B FSDP on 8 vs 16 DGX H100 \({NUMBER} % apart\) "
        rf"is within the expected error \(±{NUMBER} %\)",
        _fsdp_8_vs_16,
    ),
    Figure(
        "70B H100 vs A100",
        R,
        rf"Llama 3\.1 70B on 64 H100 vs A100 is decided under ±{NUMBER}%",
        _h100_vs_a100,
    ),
    Figure(
        "1 GB on two clusters",
        R,
        rf"1 GB on 2 DGX H100 against 4 DGX A100: decided under "
        rf"±{NUMBER}%, where the wider band alone said ±{NUMBER}%",
        _two_clusters_1gb,
    ),
    Figure(
        "70B step band",
        R,
        r"Llama 3\.1 70B FSDP with full recomputation on 8 DGX H100: "
        rf"[\d.]+-[\d.]+ s, now {NUMBER}-{NUMBER} s around {NUMBER} s",
        _band_70b,
    ),
    Figure(
        "70B ZeRO-3 memory",
        R,
        rf"Llama 3\.1 70B, ZeRO-3 on 64 ranks: {NUMBER} GB per GPU "
        rf"everywhere \(the lesson's {NUMBER} GB \+ {NUMBER} GB gathered\)",
        _memory_70b,
    ),
    Figure(
        "405B tight fit",
        R,
        rf"405B in hsdp groups of 64 on 256 H200 with full recompute "
        rf'fits at {NUMBER} of {NUMBER} GB, "fits with {NUMBER}% headroom',
        _tight_405b,
    ),
    Figure(
        "loss logits",
        R,
        rf"Llama 3\.1 8B at 2 x 8192 tokens: {NUMBER} GiB vs {NUMBER} GiB",
        _loss_8b,
    ),
    Figure("7B shape", R, rf"e\.g\. {NUMBER} layers, hidden {NUMBER} for 7B", _shape_7b),
    Figure("B200 recompute", R, rf"\(B's compute \d+ ms, now {NUMBER} ms\)", _b200_recompute),
    Figure(
        "crossover on 8 nodes",
        R,
        rf'"tree → nvls_tree at {NUMBER} MB" on 8 DGX H100 nodes',
        _crossover_8_nodes,
    ),
    Figure(
        "gamma comment",
        R,
        rf"gamma_s_per_byte=1e-11\) # \+ \(N-1\)/N M gamma: {NUMBER} s",
        lambda: (cm.allreduce_time(14e9, 64, 50e9, gamma_s_per_byte=1e-11),),
    ),
    Figure(
        "flat ring comment",
        R,
        rf"# 2x8 H100, 8x NDR: {NUMBER} GB/s busbw",
        lambda: (_busbw(cm.flat_ring_allreduce_time(8e9, 2, 8, 450e9, 8, 50e9), 8e9),),
    ),
    Figure(
        "textbook busbw comment",
        R,
        rf"NIC-limited ring, ~{NUMBER} GB/s busbw",
        lambda: (_busbw(cm.allreduce_time(8 * 2**30, _cluster_2())),),
    ),
    Figure(
        "lesson busbw comment",
        R,
        rf"the lesson's one-NIC-per-GPU ring: {NUMBER} GB/s",
        lambda: (_busbw(cm.allreduce_time(8 * 2**30, _cluster_2(), model="lesson")),),
    ),
    Figure(
        "70B memory comment",
        R,
        rf"# {NUMBER} GB \({NUMBER} GB activations\); "
        rf'recompute="full": {NUMBER} GB',
        _memory_comment,
    ),
    Figure("fsdp fit comment", R, rf'\(strategy="fsdp": {NUMBER} GB, ""\)', _fsdp_fit_comment),
    Figure(
        "own config's params",
        R,
        rf"mistral-7b/config\.json\"\) # {NUMBER} params",
        lambda: (cm.load_arch("tests/data/hf_configs/mistral-7b/config.json").params,),
    ),
    Figure(
        "architecture count",
        R,
        rf"cm\.arch_names\(\) lists all {NUMBER}",
        lambda: (len(cm.arch_names()),),
    ),
    Figure(
        "14 GB band",
        R,
        rf"the asymmetric time `band`, e\.g\. {NUMBER} ms-{NUMBER} ms for 14 GB on 8 DGX H100",
        _band_14gb,
    ),
    Figure(
        "textbook busbw on the Cluster page",
        R,
        rf"the Cluster page shows the textbook's {NUMBER} GB/s",
        lambda: (_busbw(cm.allreduce_time(8 * 2**30, _cluster_2())),),
    ),
    Figure(
        "zero1/zero2 left the step scores",
        R,
        rf"absolute median {NUMBER} %, p90 {NUMBER} %, step band coverage held out {NUMBER} %",
        _report("median", "p90", "covers"),
    ),
    Figure(
        "step band coverage",
        R,
        rf"It covers {NUMBER} % of the 317 published rows \(one node {NUMBER} %\)",
        _report("covers", "one node"),
    ),
    Figure(
        "step band in-sample",
        R,
        rf"\(in-sample {NUMBER} %; scaling band without the row's source {NUMBER} %; goal 75-85 %",
        _report("in-sample", "source"),
    ),
    Figure(
        "per-family compute band",
        R,
        rf"per family it covered {NUMBER} % held out",
        _report("per family"),
    ),
    Figure(
        "step fidelity table",
        R,
        rf"\| 75-85 % \| {NUMBER} % \(one node {NUMBER} %, beyond one node {NUMBER} %; "
        rf"in-sample {NUMBER} %\)",
        _report("covers", "one node", "beyond", "in-sample"),
    ),
    Figure(
        "step fidelity median and p90",
        R,
        rf"compute fit held out\): median \| <= 10 % \| {NUMBER} % .*?"
        rf"\| absolute: 90th percentile \| <= 20 % \| {NUMBER} %",
        _report("median", "p90"),
    ),
    Figure("ddp overhead", R, rf"as about {NUMBER} us per parameter tensor", _ddp_overhead_us),
    Figure(
        "ddp overhead, 3.7",
        "docs/design.md",
        rf"ddp_step_overhead_s` \(about {NUMBER} us",
        _ddp_overhead_us,
    ),
    Figure(
        "ddp overhead, fitted",
        "docs/design.md",
        rf"~{NUMBER} us per parameter tensor",
        _ddp_overhead_us,
    ),
]


@pytest.mark.parametrize("fig", FIGURES, ids=[f"{f.doc}:{f.name}" for f in FIGURES])
def test_each_figure_quoted_is_what_the_code_gives_now(fig):
    wrong = _wrong(fig, _text(fig.doc))
    assert not wrong, "\n".join(wrong)


# --- a shell line's comment ------------------------------------------------------------------------
def _results_time(data: dict, unit: float) -> float:
    (row,) = [r for r in data["results"] if r.get("chosen", True)]
    return row["time_s"] / unit


# a figure in a comment -> where the command's --json has it (in the comment's unit)
SHELL_KEYS: list[tuple[str, Callable[[dict], float]]] = [
    (rf"^{NUMBER} s \(the lesson's ring\)", lambda d: _results_time(d, 1.0)),
    (rf"realistic: {NUMBER} ms", lambda d: _results_time(d, 1e-3)),
    (rf"accumulation =? ?{NUMBER}", lambda d: d["accumulation"]),
    (rf"{NUMBER} GPUs:", lambda d: d["ranks"]),
]


def _shell_figures() -> list[tuple[str, str, str, Callable[[dict], float]]]:
    """(line, command, figure written, reader) for each figure of a README shell comment."""
    from tests.test_readme import SHELL_LINES

    out = []
    for _, line in SHELL_LINES:
        command, _, comment = line.partition("  # ")
        for pattern, read in SHELL_KEYS:
            for m in re.finditer(pattern, comment.strip()):
                out.append((line, command, m[1], read))
    return out


SHELL_FIGURES = _shell_figures()


def test_the_shell_comments_with_figures_are_found():
    assert len(SHELL_FIGURES) >= 7, [f[:3] for f in SHELL_FIGURES]


@pytest.mark.parametrize(
    ("line", "command", "written", "read"), SHELL_FIGURES, ids=[f[2] for f in SHELL_FIGURES]
)
def test_a_shell_comment_says_what_its_command_gives(line, command, written, read):
    args = shlex.split(command)[1:]
    r = run(*args, *([] if "--json" in args else ["--json"]))
    assert r.exit_code == 0, (line, r.stderr)
    value = read(json.loads(r.stdout))
    assert _agrees(written, value), (
        f"README.md: {line!r}: says {written}, the command gives {value}"
    )


# --- a CLI row quoted --------------------------------------------------------------------------------
ONE_GPU = "memory --params 7B --gpu-memory 80GB --ranks 1"
SHARDED_30B = "memory --params 30B --zero-stage 3 --ranks 16"
BATCH_4MI = "train --arch llama-2-7b --tokens 2T --nodes 64 --zero 1 --global-tokens 4Mi --seq 4096"
# (doc, what it says, the command it says it of, the row's label, its value as printed, None:
# no such row); the command is written in the doc, beside the words or in a shell block
CLI_ROWS = [
    (R, f"`{ONE_GPU}` (`total per GPU` 112 GB", ONE_GPU, "total per GPU", "112 GB"),
    (R, "with no `lesson total (no buffers)` row", ONE_GPU, "lesson total (no buffers)", None),
    (R, "`4.19 M tokens per step = 1,024 sequences x 4,096 tokens (micro-batch 1 x accumulation "
     "2 x 512 GPUs)`", BATCH_4MI, "global batch", "4.19 M tokens per step = 1,024 sequences x "
     "4,096 tokens (micro-batch 1 x accumulation 2 x 512 GPUs)"),
    ("docs/lesson.md", f"`costmodel {SHARDED_30B}` prints `lesson total (no buffers)` 30 GB",
     SHARDED_30B, "lesson total (no buffers)", "30 GB"),
    ("docs/lesson.md", "30 GB beside `total per GPU` 33.9 GB", SHARDED_30B, "total per GPU",
     "33.9 GB"),
]  # fmt: skip


def _rows(stdout: str) -> dict[str, str]:
    """A text output's ``label   value`` rows (two or more spaces apart)."""
    return dict((m[1], m[2]) for m in re.finditer(r"^(\S.*?\S) {2,}(\S.*?)\s*$", stdout, re.M))


@pytest.mark.parametrize(
    ("doc", "said", "command", "label", "value"), CLI_ROWS, ids=[r[1][:40] for r in CLI_ROWS]
)
def test_a_cli_row_quoted_is_what_the_command_prints(doc, said, command, label, value):
    text = _text(doc)
    assert said in text, f"{doc} no longer says {said!r}"
    assert command in text, f"{doc} no longer writes `{command}`"
    r = run(*shlex.split(command))
    assert r.exit_code == 0, r.stderr
    assert _rows(r.stdout).get(label) == value, r.stdout


# --- docs/gpu-checks.md: the memory model beside the device's memory ---------------------------------
def test_the_memory_tables_model_column_is_the_memory_model_now():
    """Each row of "Memory the device holds beyond the model": the model's parts at their
    defaults (as ``tests/test_compute_shape_h200.py`` sums them) and their ratio to the
    device's used memory, from the recorded run."""
    from tests.test_compute_shape_h200 import MEMORY, _model_parts
    from tests.test_compute_shape_h200 import _rows as recorded

    text = (ROOT / "docs" / "gpu-checks.md").read_text(encoding="utf-8")
    section = text.split("### Memory the device holds beyond the model", 1)[1]
    table = [ln for ln in section.split("\n\n")[2].splitlines() if ln.startswith("| llama")]
    runs = recorded(MEMORY / "compute.jsonl")
    assert len(table) == len(runs) == 4
    wrong = []
    for line, row in zip(table, runs, strict=True):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[0].startswith(row["arch"].partition("[")[0]), (cells[0], row["arch"])
        assert cells[1] == f"{row['seq']} x {row['micro_batch']}", cells[1]
        model = _model_parts(row)
        said_model, said_ratio = cells[-2].removesuffix(" GB"), cells[-1]
        if not _agrees(said_model, model / GB):
            wrong.append(f"{cells[:3]}: model {said_model} GB, now {model / GB:.2f}")
        if not _agrees(said_ratio, model / row["device_used_bytes"]):
            wrong.append(
                f"{cells[:3]}: ratio {said_ratio}, now {model / row['device_used_bytes']:.3f}"
            )
    assert not wrong, "\n".join(wrong)


# --- the readers, on planted stale figures -----------------------------------------------------------
def test_the_readers_catch_planted_stale_figures():
    assert _agrees("534", 534.4) and not _agrees("534", 534.6)
    assert _agrees("7.0", 7.012) and not _agrees("7.0", 7.06)
    assert _agrees("7,241,732,096", 7241732096) and not _agrees("140", 140.6)
    # the advisor sentence as it stood before zero1/zero2 gathered the weights once
    stale = "named; zero2 and zero1 (+8.4 % under ±7.9 %) are told apart."
    (zero,) = [f for f in FIGURES if f.name == "advisor zero1/zero2"]
    assert len(_wrong(zero, stale)) == 2
    assert _wrong(zero, "zero2 (+8.4 % under ±7.9 %) is told apart")[0].endswith(
        "update or drop this figure"
    )
    fake = Figure("planted", R, rf"takes {NUMBER} ms", lambda: (551.4,))
    assert _wrong(fake, "takes 551 ms") == [] and _wrong(fake, "takes 552 ms")
    # a shell comment's figure is found where the README writes one
    line = "costmodel batch --local 1 --ranks 512  # 512 GPUs: accumulation 2"
    found = [m[1] for p, _ in SHELL_KEYS for m in re.finditer(p, line.partition("  # ")[2].strip())]
    assert found == ["2", "512"]
    assert _rows("total per GPU            112 GB\nfits   no (32 GB over)\n") == {
        "total per GPU": "112 GB",
        "fits": "no (32 GB over)",
    }


# --- docs/gpu-checks.md: every table's prediction columns, priced again ---------------------------
GPU_CHECKS = "docs/gpu-checks.md"
COMPUTE_HEAD = "`costmodel step` compute"
PARTS_HEADS = ("weights + gradients + activations", "model (")


def _md_tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every Markdown table of ``text``: its header cells and its rows' cells."""
    tables, block = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            block.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif block:
            tables.append((block[0], block[2:]))
            block = []
    return tables


def _row_of(cells: dict[str, str]) -> dict:
    """A table row as a compute_bench row: ``llama-3.1-70b, first 8 layers (h 8192)`` and
    ``4096 x 1`` -> ``{"arch": "llama-3.1-70b[8 layers]", "layers": 8, "seq": 4096, ...}``."""
    name, _, rest = cells["architecture"].partition(",")
    cut = re.search(r"first (\d+) layers", rest)
    seq, _, micro_batch = cells["seq x micro-batch"].partition(" x ")
    row = {"arch": name.strip(), "seq": int(seq), "micro_batch": int(micro_batch)}
    row["recompute"] = cells.get("recompute", "none")
    if cut:
        row |= {"arch": f"{row['arch']}[{cut[1]} layers]", "layers": int(cut[1])}
    return row


def _gpu_checks_wrong(text: str) -> tuple[int, list[str]]:
    """(figures checked, those that are not what the code gives) over every table of
    docs/gpu-checks.md with a ``costmodel step`` compute or a memory model column."""
    from costmodel.memory import training_memory
    from costmodel.validation import compute_bench as cb

    checked, wrong = 0, []
    for head, rows in _md_tables(text):
        if head[:3] == ["parameters", "measured", "predicted"]:  # the optimizer step
            for cells in rows:
                params = int(cells[0].split()[0].replace(",", ""))
                said = cells[2].removesuffix(" ms")
                v = cb.predicted_optimizer(params, "hgx-h200")["predicted_optimizer_s"] * 1e3
                checked += 1
                if not _agrees(said, v):
                    wrong.append(f"optimizer of {cells[0]}: {said} ms, now {v:.4g}")
            continue
        compute = [h for h in head if h.startswith(COMPUTE_HEAD)]
        parts = [h for h in head if h.startswith(PARTS_HEADS) and "/" not in h]
        if not (compute or parts) or "architecture" not in head:
            continue
        for cells in rows:
            cell = dict(zip(head, cells, strict=True))
            row = _row_of(cell)
            arch = cb.row_arch(row)
            for h in compute:
                said = re.fullmatch(rf"{NUMBER} ms(?: \({NUMBER}-{NUMBER}\))?", cell[h])
                assert said, cell[h]
                p = cb.predicted(arch, "hgx-h200", row["seq"], row["micro_batch"], row["recompute"])
                values = [p["predicted_compute_s"] * 1e3]
                if said[2]:
                    values += [p["band_low_s"] * 1e3, p["band_high_s"] * 1e3]
                for w, v in zip([g for g in said.groups() if g], values, strict=True):
                    checked += 1
                    if not _agrees(w, v):
                        wrong.append(f"{cells[:2]} {h}: {w} ms, now {v:.4g}")
            for h in parts:
                m = training_memory(
                    arch=arch,
                    sequence_length=row["seq"],
                    micro_batch=row["micro_batch"],
                    recompute=row["recompute"],
                )
                values = [m.weights_bytes, m.gradients_bytes, m.activations_bytes]
                figures = re.findall(NUMBER, cell[h])
                if len(figures) == 1:  # the sum alone
                    figures, values = figures, [sum(values)]
                else:
                    values.append(sum(values))
                for w, v in zip(figures, values, strict=True):
                    checked += 1
                    if not _agrees(w, v / GB):
                        wrong.append(f"{cells[:2]} {h}: {w} GB, now {v / GB:.4g}")
    return checked, wrong


def test_gpu_checks_tables_price_each_run_as_the_code_does_now():
    """The `costmodel step` compute (and its band), the memory model's parts and the optimizer
    step each table of docs/gpu-checks.md prints beside a measured run are what compute_bench
    prices for that configuration today, to the digits written."""
    checked, wrong = _gpu_checks_wrong((ROOT / GPU_CHECKS).read_text(encoding="utf-8"))
    assert not wrong, "\n".join(wrong)
    assert checked >= 80, checked


def test_the_gpu_checks_reader_catches_planted_stale_cells():
    text = (ROOT / GPU_CHECKS).read_text(encoding="utf-8")
    planted = text.replace("| 476.2 ms (432-533) |", "| 476.2 ms (432-540) |", 1).replace(
        "16.1 + 16.1 + 56.8 = 88.92 GB", "16.1 + 16.1 + 56.8 = 88.82 GB", 1
    )
    _, wrong = _gpu_checks_wrong(planted)
    assert len(wrong) == 2, wrong
    assert "540 ms" in wrong[0] and "88.82 GB" in wrong[1]


# --- the README's regime table against docs/fidelity.md's -------------------------------------------
# the README's regime (its first words) -> docs/fidelity.md's regime
REGIMES = {
    "single-node NVSwitch/NVLink": "single-node-nvlink",
    "multi-node InfiniBand": "multi-node-infiniband",
    "cloud fabrics": "multi-node-cloud",
    "Slingshot": "multi-node-slingshot",
    "PCIe": "single-node-pcie",
}


def _regime_table_wrong(readme: str, fidelity: str) -> tuple[int, list[str]]:
    """(regimes compared, cells of the README's "Goal and measured gap" table that are not
    docs/fidelity.md's "Per regime" figures: runs, sources, grouped CV and in-sample >= 1 MiB /
    all, the band from 1 MiB)."""
    (report,) = [rows for head, rows in _md_tables(fidelity) if head[:2] == ["regime", "runs"]]
    by_regime = {r[0]: r for r in report}
    (readme_rows,) = [
        rows for head, rows in _md_tables(readme) if head[:3] == ["regime", "goal", "grouped CV"]
    ]
    seen, wrong = 0, []
    for cells in readme_rows:
        (name,) = [k for k in REGIMES if cells[0].startswith(k)]
        r = by_regime[REGIMES[name]]
        seen += 1
        counts = re.search(r"\((\d+) runs, (\d+) sources", cells[0])
        assert counts, cells[0]
        said = {
            "runs, sources": list(counts.groups()),
            "grouped CV": re.findall(r"(\d+)%", cells[2])[:2],
            "in-sample": re.findall(r"(\d+)%", cells[3])[:2],
        }
        report_cells = {
            "runs, sources": [r[1], r[2]],
            "grouped CV": [r[3].rstrip("%"), r[4].rstrip("%")],
            "in-sample": [r[5].rstrip("%"), r[6].rstrip("%")],
        }
        band = re.match(r"±(\d+)%", cells[4])
        if band:  # a regime whose band is said in words ("asymmetric, wide") has no figure
            said["band"] = [band[1]]
            report_cells["band"] = re.findall(r"±(\d+)%", r[8])[:1]
        for key, values in said.items():
            if values != report_cells[key]:
                wrong.append(f"{name}: {key} {values}, docs/fidelity.md {report_cells[key]}")
    return seen, wrong


def test_the_readme_regime_table_quotes_the_fidelity_report():
    """README, "Goal and measured gap": each regime's runs, sources, grouped-CV and in-sample
    medians and band are docs/fidelity.md's (written by scripts/fit_corrections.py)."""
    readme = (ROOT / R).read_text(encoding="utf-8")
    fidelity = (ROOT / "docs" / "fidelity.md").read_text(encoding="utf-8")
    seen, wrong = _regime_table_wrong(readme, fidelity)
    assert seen == len(REGIMES), seen
    assert not wrong, "\n".join(wrong)
    planted = readme.replace(
        "| **8% / 14%** | 8% / 15% | ±83% |", "| **8% / 13%** | 8% / 15% | ±80% |"
    )
    assert len(_regime_table_wrong(planted, fidelity)[1]) == 2


# the README's words for a regime and an op class in its per-op table -> docs/fidelity.md's
OP_REGIMES = {
    "one node, NVLink": "single-node-nvlink",
    "one node, PCIe": "single-node-pcie",
    "multi-node InfiniBand": "multi-node-infiniband",
    "cloud (RoCE, EFA, TCPX)": "multi-node-cloud",
    "Slingshot": "multi-node-slingshot",
    "socket fallback (other)": "multi-node-other",
}
OP_CLASSES = {
    "all-reduce": "all-reduce",
    "all-gather, reduce-scatter": "all-gather/reduce-scatter",
    "all-gather": "all-gather/reduce-scatter",
    "all-to-all": "all-to-all",
}


def _op_table_wrong(readme: str, fidelity: str) -> tuple[int, list[str]]:
    """(cells compared, those of the README's "Per regime and op class" table that are not
    docs/fidelity.md's: runs (sources) and grouped CV >= 1 MiB / all)."""
    (report,) = [r for h, r in _md_tables(fidelity) if h[:3] == ["regime", "op class", "runs"]]
    by_cell = {(r[0], r[1]): r for r in report}
    (rows,) = [
        r for h, r in _md_tables(readme) if h[:3] == ["regime", "op class", "runs (sources)"]
    ]
    seen, wrong = 0, []
    for cells in rows:
        op = OP_CLASSES.get(cells[1])
        if op is None:  # a row of ops with no run ("AG/RS, all-to-all, bcast/reduce"), or a summary
            continue
        r = by_cell[(OP_REGIMES[cells[0]], op)]
        said = [*re.findall(r"\d+", cells[2]), *re.findall(r"(\d+)%", cells[4])[:2]]
        written = [r[2], r[3], r[4].rstrip("%"), r[5].rstrip("%")]
        seen += 1
        if said != written:
            wrong.append(f"{cells[0]} / {cells[1]}: {said}, docs/fidelity.md {written}")
    return seen, wrong


def test_the_readme_per_op_table_quotes_the_fidelity_report():
    readme = (ROOT / R).read_text(encoding="utf-8")
    fidelity = (ROOT / "docs" / "fidelity.md").read_text(encoding="utf-8")
    seen, wrong = _op_table_wrong(readme, fidelity)
    assert seen >= 9, seen
    assert not wrong, "\n".join(wrong)
    planted = readme.replace("| 11 (2) | <= 15% | 27% / 32% |", "| 11 (2) | <= 15% | 26% / 32% |")
    assert len(_op_table_wrong(planted, fidelity)[1]) == 1


# --- an output line quoted in words ---------------------------------------------------------------
STEP_8B = "step --arch llama-3.1-8b --cluster dgx-h100 --strategy fsdp --nodes"
# (doc, the words it quotes, the command whose stdout or stderr prints them)
QUOTES = [
    (R, "the all-gather and reduce-scatter from 1 MiB over 21 nodes (168 GPUs) are beyond their "
     "collective band (multi-node-infiniband), fitted to runs of up to 20 nodes", f"{STEP_8B} 21"),
    (R, "extrapolated beyond the collective band's 20 nodes", f"{STEP_8B} 21"),
    (R, "100,000 nodes and 800,000 GPUs are beyond the largest published run the step band was "
     "checked on (64 nodes, 512 GPUs at most, over 317 runs from 2 sources)", f"{STEP_8B} 100000"),
    (R, "64 nodes is beyond the largest measured run in this regime (20 nodes, 1,440 GPUs at most, "
     "over 6 runs from 5 sources): the band is extrapolated, not measured at this scale",
     "collective all_reduce --size 1GB --cluster dgx-h100 --nodes 64"),
    (R, "a collective of each lies beyond the collective band's 20 nodes",
     "step --arch llama-3.1-8b --cluster dgx-h100 --nodes 21 --strategy all"),
]  # fmt: skip


@pytest.mark.parametrize(("doc", "quote", "command"), QUOTES, ids=[q[1][:40] for q in QUOTES])
def test_an_output_quoted_is_what_the_command_prints(doc, quote, command):
    assert quote in _text(doc), f"{doc} no longer quotes {quote!r}"
    r = run(*shlex.split(command))
    assert r.exit_code == 0, r.stderr
    printed = re.sub(r"\s+", " ", r.stdout + "\n" + r.stderr)
    assert quote in printed, printed[-2000:]
