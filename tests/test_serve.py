"""The app as a package: the wheel serves it, with its server options, and stops cleanly.

A wheel is built from this checkout (the files the Dockerfile copies) and installed with
``--no-deps --target`` into a temporary folder (the shared environment provides streamlit and
the other dependencies); the app is then started from that install in an empty temporary
folder, where no .streamlit/config.toml is read, so every server option comes from the package.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from costmodel.web import launch
from tests._browser import free_port

ROOT = Path(__file__).resolve().parents[1]
UPLOAD_LIMIT_BYTES = launch.MAX_UPLOAD_MB * 1024 * 1024


# --- options and entry, without a server ------------------------------------------------------
def test_every_road_starts_the_packaged_entry_with_the_options():
    cmd = launch.streamlit_command(port=8600, address="0.0.0.0")
    assert cmd[1:4] == ["-m", "streamlit", "run"] and cmd[4] == str(launch.APP_SCRIPT)
    assert launch.APP_SCRIPT.parent == ROOT / "costmodel" / "web"
    flags = dict(zip(cmd[5::2], cmd[6::2], strict=True))
    for name, value in launch.SERVER_OPTIONS.items():
        assert flags[f"--{name}"] == value
    assert flags["--server.port"] == "8600" and flags["--server.address"] == "0.0.0.0"
    assert flags["--server.maxUploadSize"] == "5"
    assert flags["--runner.postScriptGC"] == "false"  # no full collection after every rerun


def test_page_limit_fits_the_server_limit_and_the_checkout_config_agrees():
    from costmodel.web.common import MAX_UPLOAD_BYTES

    assert MAX_UPLOAD_BYTES <= UPLOAD_LIMIT_BYTES < 2 * MAX_UPLOAD_BYTES
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert str(config["server"]["maxUploadSize"]) == launch.SERVER_OPTIONS["server.maxUploadSize"]
    assert (
        str(config["runner"]["postScriptGC"]).lower()
        == launch.SERVER_OPTIONS["runner.postScriptGC"]
    )


def test_the_checkout_app_delegates_to_the_packaged_entry():
    text = (ROOT / "app.py").read_text()
    assert "from costmodel.web.app import main" in text and "st.navigation" not in text


# --- the wheel, installed in a temporary folder -----------------------------------------------
@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A wheel built from this checkout, installed (no dependencies) under ``site``."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "_presets")
    shutil.copytree(ROOT / "costmodel", src / "costmodel", ignore=skip)
    shutil.copytree(ROOT / "presets", src / "presets", ignore=skip)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp / "dist"), str(src)],
        check=True,
        timeout=300,
    )
    (wheel,) = (tmp / "dist").glob("costmodel-*.whl")
    site = tmp / "site"
    subprocess.run(
        [*pip, "install", "--no-deps", "--target", str(site), str(wheel)], check=True, timeout=300
    )
    return site


def _env(site: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(site)}


def _wait_healthy(proc: subprocess.Popen, url: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                return
        except OSError:
            pass
        assert proc.poll() is None, f"the app exited with {proc.returncode}"
        assert time.monotonic() < deadline, "the app did not become healthy"
        time.sleep(0.25)


def _children(pid: int) -> list[int]:
    """Child process ids of ``pid`` (Linux /proc)."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        out += [int(x) for x in (task / "children").read_text().split()]
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


@pytest.fixture
def served(installed, tmp_path) -> Iterator[tuple[subprocess.Popen, str]]:
    """``python -m costmodel.web`` from the wheel install, in an empty folder."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "costmodel.web", "--port", str(port), "--address", "127.0.0.1"],
        cwd=tmp_path,
        env=_env(installed),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(proc, url)
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=30)


def test_the_wheel_ships_the_entry_and_imports_from_the_install(installed, tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", "import costmodel.web.launch as l; print(l.APP_SCRIPT)"],
        cwd=tmp_path,
        env=_env(installed),
        capture_output=True,
        text=True,
        check=True,
    )
    script = Path(out.stdout.strip())
    assert script.is_file() and script.is_relative_to(installed), script
    assert (script.parent / "page_memory.py").is_file()


def _put(url: str, session_id: str, cookie: str, token: str, body: bytes) -> int:
    """PUT ``body`` as a multipart file to Streamlit's upload route; the HTTP status.

    Raw HTTP over a socket, as curl sends a large body: the headers with ``Expect:
    100-continue`` first, the body only after the server's 100 (a server that refuses by
    Content-Length answers at once, before the body)."""
    boundary = uuid.uuid4().hex
    data = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="log.txt"\r\n'
        "Content-Type: text/plain\r\n\r\n".encode()
        + body
        + f"\r\n--{boundary}--\r\n".encode()
    )
    host, port = url.removeprefix("http://").split(":")
    head = (
        f"PUT /_stcore/upload_file/{session_id}/{uuid.uuid4().hex} HTTP/1.1\r\n"
        f"Host: {host}:{port}\r\n"
        f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
        f"Content-Length: {len(data)}\r\n"
        f"X-Xsrftoken: {token}\r\nCookie: {cookie}\r\n"
        "Expect: 100-continue\r\nConnection: close\r\n\r\n"
    )
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(head.encode())
        reader = sock.makefile("rb")
        status = int(reader.readline().split()[1])
        if status == 100:
            reader.readline()  # the blank line after the interim response
            sock.sendall(data)
            status = int(reader.readline().split()[1])
        return status


def test_raw_upload_over_the_limit_is_refused_by_the_installed_app(served):
    """A raw PUT to Streamlit's upload route, from a live session: 6 MB is refused (413), as
    the 5 MiB option says, while 4 MB in the same request form is stored (Streamlit's own
    default would take 200 MB)."""
    from tests._stream import Session

    _, url = served

    async def uploads() -> tuple[int, int]:
        session = Session(url, "validate")
        try:
            first = await session.open()
            assert first.ok and session.session_id, first
            args = (url, session.session_id, session.cookie, session.token)
            big = await asyncio.to_thread(_put, *args, b"x" * 6_000_000)
            small = await asyncio.to_thread(_put, *args, b"x" * 4_000_000)
            return big, small
        finally:
            await session.close()

    assert asyncio.run(uploads()) == (413, 204)  # 204: stored, nothing to return


def test_sigterm_stops_the_server_child(installed, tmp_path):
    """``costmodel app`` (the installed script): SIGTERM stops it and its Streamlit server."""
    port = free_port()
    exe = installed / "bin" / "costmodel"
    proc = subprocess.Popen(
        [sys.executable, str(exe), "app", "--port", str(port), "--address", "127.0.0.1"],
        cwd=tmp_path,
        env=_env(installed),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_healthy(proc, f"http://127.0.0.1:{port}")
        (child,) = _children(proc.pid)
        assert _alive(child)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) is not None
        assert not _alive(child), "the Streamlit server outlived `costmodel app`"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_wheel_ships_every_module_preset_and_data_file(installed):
    """Every source module, preset and bundled data file of the checkout is in the installed
    wheel. Checked by file, not by import: in a venv with an editable install, a subpackage
    missing from the wheel (pyproject's explicit `packages` list) still imports from the
    checkout, so only a plain `pip install` or the image would find it gone."""
    shipped = {p.relative_to(installed).as_posix() for p in installed.rglob("*") if p.is_file()}
    expected = {
        "costmodel/" + p.relative_to(ROOT / "costmodel").as_posix()
        for p in (ROOT / "costmodel").rglob("*")
        if p.is_file()
        and p.suffix in {".py", ".toml", ".md", ".txt"}
        and "__pycache__" not in p.parts
        and "_presets" not in p.relative_to(ROOT / "costmodel").parts
    }
    expected |= {
        "costmodel/_presets/" + p.relative_to(ROOT / "presets").as_posix()
        for p in (ROOT / "presets").rglob("*")
        if p.is_file() and p.suffix in {".toml", ".md"}
    }
    missing = sorted(expected - shipped)
    assert not missing, f"{len(missing)} files not in the wheel, e.g. {missing[:5]}"


def test_the_installed_wheel_imports_every_module_without_the_checkout(installed, tmp_path):
    """Every module outside the app's pages imports from the wheel alone: ``python -S`` skips
    the venv's ``.pth`` files, so the editable install's finder cannot fill a gap from the
    checkout (the dependencies come from the venv's site-packages on PYTHONPATH)."""
    import site

    code = (
        "import importlib, pkgutil, costmodel\n"
        "names = [m.name for m in pkgutil.walk_packages(costmodel.__path__, 'costmodel.')\n"
        "         if not m.name.startswith('costmodel.web.page') and m.name != 'costmodel.web.app'\n"
        "         and not m.name.endswith('__main__')]\n"
        "for n in names:\n"
        "    mod = importlib.import_module(n)\n"
        "    assert mod.__file__.startswith(costmodel.__path__[0]), (n, mod.__file__)\n"
        "print(len(names))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(installed), *site.getsitepackages()])}
    out = subprocess.run(
        [sys.executable, "-S", "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-1500:]
    assert int(out.stdout) > 60  # the package's modules, strategy's among them
