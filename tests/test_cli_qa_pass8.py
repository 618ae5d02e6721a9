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
