"""The app under load: many sessions rerunning back to back against one served app.

    .venv/bin/python benchmarks/bench_load.py                       # this checkout
    .venv/bin/python benchmarks/bench_load.py --tree /tmp/old --tree .   # old vs new, one run

Client: a websocket client per session speaking Streamlit's own protocol on ``/_stcore/stream``
(protobuf ``BackMsg``/``ForwardMsg`` from the installed streamlit package; tests/_stream.py),
not chromium pages. A browser tab costs the server the same work per rerun (script run,
marshalling every element, sending the messages); the websocket client leaves out only the
drawing, which happens in the browser, and lets one 2-core machine hold 30 sessions (30
chromium tabs would take the CPU the server is measured on).

Workload: sessions are spread over five pages in turn (Memory, DDP step, Collectives, Batch,
Cluster). Each session opens its page (first load, reported apart), then reruns back to back,
each rerun moving one input of its page to the next of four values (Memory: data-parallel
ranks; DDP step: nodes; Collectives: ranks; Batch: sequence length; Cluster: nodes), as a user
moving a control; a session waits for its rerun to finish before the next. Phases: 1, 10 and
30 sessions, ``--seconds`` each. Reported per phase: rerun wall time p50/p95/max as the client
sees it, reruns per second over all sessions, errors (an exception element, a run that did not
finish, a dropped connection or a timeout; red messages listed apart). The server's resident
memory is read after 1, 100 and 1,000 reruns in all (and 2,000 and 3,000 when
``--memory-reruns`` asks for them; 10-session phases run on until that count when the three
phases did not reach it) and at the end. The server's CPU time per rerun is reported per phase.

Each ``--tree`` is a source checkout (for an old commit: ``git archive <commit> | tar -x -C
/tmp/old`` and a ``costmodel/_presets -> ../presets`` link)
served with ``streamlit run <tree>/app.py`` and that tree's own server options (:func:`tree_options`), on a free port, one tree after
the other in the same run, so a before/after ratio is measured on the same machine minutes
apart. Goals (README): >= 3x the reruns per second of the baseline, 10 sessions at p95 <= 1.5 s,
30 sessions without an error, memory flat after warm-up.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests._browser import free_port  # noqa: E402
from tests._stream import RunResult, Session  # noqa: E402

#: (page url path, widget key, values a session steps through)
WORKLOAD: tuple[tuple[str, str, tuple], ...] = (
    ("memory", "dp_ranks", (16, 32, 64, 8)),
    ("ddp", "ddp_nodes", (8, 16, 2, 4)),
    ("collectives", "ranks", (16, 32, 128, 64)),
    ("batch", "seq_len", (4096, 1024, 8192, 2048)),
    ("cluster", "cl_nodes", (8, 16, 2, 4)),
)
MEMORY_AT = (1, 100, 1000, 2000, 3000)
#: Server flags for every tree; a tree that ships costmodel.web.launch adds its SERVER_OPTIONS
#: (what `costmodel app` passes), an older tree is served as its image was (no file watcher, no
#: usage statistics) and reads its own .streamlit/config.toml (the server runs in the tree).
FLAGS = {
    "server.headless": "true",
    "server.address": "127.0.0.1",
    "server.fileWatcherType": "none",
    "browser.gatherUsageStats": "false",
}


def tree_options(tree: Path) -> dict[str, str]:
    """The server options ``tree``'s own launcher passes (none before it had one)."""
    if not (tree / "costmodel" / "web" / "launch.py").is_file():
        return {}
    code = "import json; from costmodel.web import launch; print(json.dumps(launch.SERVER_OPTIONS))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def rss_bytes(pid: int) -> int:
    """Resident memory of process ``pid`` [B] (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def cpu_s(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far [s] (Linux /proc; every thread)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_server(tree: Path, port: int) -> subprocess.Popen:
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(tree / "app.py"),
        "--server.port",
        str(port),
    ]
    for name, value in {**FLAGS, **tree_options(tree)}.items():
        cmd += [f"--{name}", value]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.Popen(
        cmd, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                return proc
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"server for {tree} did not start")
        time.sleep(0.25)


class Load:
    """Counters shared by every session of one tree's run."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.reruns = 0
        self.memory: dict[int, int] = {}

    def count(self) -> None:
        self.reruns += 1
        if self.reruns in MEMORY_AT:
            self.memory[self.reruns] = rss_bytes(self.pid)


async def session_loop(
    url: str,
    index: int,
    until: Callable[[], float],
    load: Load,
    runs: list[RunResult],
    opens: list[RunResult],
) -> None:
    page, key, values = WORKLOAD[index % len(WORKLOAD)]
    session = Session(url, page)
    try:
        first = await session.open()
        opens.append(first)
        if not first.ok:
            return
        step = 0
        while time.monotonic() < until():
            changes = {key: values[step % len(values)]} if key in session.widgets else None
            step += 1
            r = await session.rerun(changes)
            runs.append(r)
            load.count()
            if r.status in ("closed", "timeout"):
                return
    finally:
        await session.close()


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def phase(url: str, sessions: int, seconds: float, load: Load) -> dict:
    runs: list[RunResult] = []
    opens: list[RunResult] = []
    state = {"end": float("inf")}

    def until() -> float:
        return state["end"]

    tasks = [
        asyncio.create_task(session_loop(url, i, until, load, runs, opens)) for i in range(sessions)
    ]
    while len(opens) < sessions and not all(t.done() for t in tasks):  # every tab has loaded
        await asyncio.sleep(0.05)
    start_count, start, cpu_start = len(runs), time.monotonic(), cpu_s(load.pid)
    state["end"] = start + seconds
    await asyncio.gather(*tasks)
    elapsed = time.monotonic() - start
    cpu = cpu_s(load.pid) - cpu_start
    timed = runs[start_count:]
    walls = [r.wall_s for r in runs]
    bad = [r for r in runs + opens if not r.ok]
    return {
        "sessions": sessions,
        "reruns": len(runs),
        "reruns_per_s": len(timed) / elapsed,
        # the server's CPU per rerun: what a rerun costs, whatever else the machine runs
        "server_cpu_per_rerun_s": cpu / len(timed) if timed else float("nan"),
        "p50_s": pct(walls, 0.5),
        "p95_s": pct(walls, 0.95),
        "max_s": max(walls, default=float("nan")),
        "first_load_p50_s": pct([r.wall_s for r in opens], 0.5),
        "errors": len(bad),
        "error_samples": sorted({e for r in bad for e in (r.exceptions or [r.status])})[:5],
        "red_messages": sum(len(r.errors) for r in runs + opens),
    }


async def run_tree(tree: Path, sessions: list[int], seconds: float, memory_reruns: int) -> dict:
    port = free_port()
    proc = start_server(tree, port)
    url = f"http://127.0.0.1:{port}"
    load = Load(proc.pid)
    try:
        rss_start = rss_bytes(proc.pid)
        phases = [await phase(url, n, seconds, load) for n in sessions]
        extra_s = 0.0
        while load.reruns < memory_reruns:  # on to 1,000 reruns in all, 10 sessions
            t = time.monotonic()
            await phase(url, 10, min(60.0, 5.0 + (memory_reruns - load.reruns) / 5), load)
            extra_s += time.monotonic() - t
        return {
            "tree": str(tree),
            "commit": subprocess.run(
                ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
                capture_output=True,
                text=True,
            ).stdout.strip()
            or tree.name,
            "phases": phases,
            "rss_start_bytes": rss_start,
            "rss_after_reruns_bytes": {str(k): v for k, v in sorted(load.memory.items())},
            "rss_end_bytes": rss_bytes(proc.pid),
            "reruns_total": load.reruns,
            "extra_seconds_to_reach_memory_reruns": round(extra_s, 1),
        }
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


def report(result: dict) -> None:
    print(f"\n{result['tree']} ({result['commit']})")
    print(
        f"{'sessions':>8} {'reruns':>7} {'reruns/s':>9} {'p50 s':>7} {'p95 s':>7} {'max s':>7}"
        f" {'1st load':>8} {'errors':>6} {'CPU/rerun':>9}"
    )
    for p in result["phases"]:
        print(
            f"{p['sessions']:>8} {p['reruns']:>7} {p['reruns_per_s']:>9.2f} {p['p50_s']:>7.3f}"
            f" {p['p95_s']:>7.3f} {p['max_s']:>7.3f} {p['first_load_p50_s']:>8.2f}"
            f" {p['errors']:>6} {p['server_cpu_per_rerun_s']:>9.3f}"
        )
        for sample in p["error_samples"]:
            print(f"{'':>10}error: {sample[:160]}")
    mem = ", ".join(
        f"{k} reruns {v / 1e6:.0f} MB" for k, v in result["rss_after_reruns_bytes"].items()
    )
    print(
        f"server memory: start {result['rss_start_bytes'] / 1e6:.0f} MB; {mem}; "
        f"end ({result['reruns_total']} reruns) {result['rss_end_bytes'] / 1e6:.0f} MB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", action="append", type=Path, help="source tree(s) to serve")
    parser.add_argument("--sessions", default="1,10,30", help="session counts, comma-separated")
    parser.add_argument("--seconds", type=float, default=20.0, help="rerun time per phase [s]")
    parser.add_argument("--memory-reruns", type=int, default=1000, help="reruns in all")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    trees = [t.resolve() for t in (args.tree or [ROOT])]
    sessions = [int(x) for x in args.sessions.split(",")]
    results = []
    for tree in trees:
        result = asyncio.run(run_tree(tree, sessions, args.seconds, args.memory_reruns))
        report(result)
        results.append(result)
    if len(results) > 1:
        base = results[0]
        print("\nratios to the first tree (same phase):")
        for r in results[1:]:
            for a, b in zip(base["phases"], r["phases"], strict=True):
                ratio = b["reruns_per_s"] / a["reruns_per_s"] if a["reruns_per_s"] else float("nan")
                cpu = a["server_cpu_per_rerun_s"] / b["server_cpu_per_rerun_s"]
                print(
                    f"  {r['commit']} {b['sessions']:>3} sessions: reruns/s x{ratio:.2f}, "
                    f"server CPU per rerun x{1 / cpu:.2f} (reruns per CPU-second x{cpu:.2f})"
                )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
