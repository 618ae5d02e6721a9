"""An unknown option is answered with what the command spells for it: SHARP (in-network
reduction) typed as ``--sharp`` names ``--nvls`` and ``--collnet`` on ``collective`` and the
cluster preset elsewhere; click's only guess ``--help`` is not offered as a match."""

from __future__ import annotations

import pytest

from tests._cli import one_line_error, run

COLL = ("collective", "all_reduce", "--size", "1GB", "--cluster", "dgx-h100")


@pytest.mark.parametrize("flag", ["--sharp", "--no-sharp", "--ib-sharp"])
def test_collective_sharp_names_nvls_and_collnet(flag):
    r = run(*COLL, flag)
    assert r.exit_code == 2
    line = one_line_error(r)
    assert f"No such option: {flag};" in line
    assert "--nvls / --no-nvls" in line and "--collnet" in line
    assert "Possible options" not in line
    # each option it names is one the command takes
    assert run(*COLL, "--no-nvls", "--json").exit_code == 0
    assert run(*COLL, "--collnet", "--json").exit_code == 0


@pytest.mark.parametrize("command", [("step", "--arch", "llama-2-7b"), ("train",), ("memory",)])
def test_other_commands_say_sharp_is_the_cluster_preset_s(command):
    r = run(*command, "--sharp")
    assert r.exit_code == 2
    line = one_line_error(r)
    assert "SHARP is the --cluster preset's" in line and "costmodel collective --nvls" in line
    assert f"See 'costmodel {command[0]} --help'." in line


def test_an_unknown_option_is_not_offered_help_as_its_match():
    r = run(*COLL, "--fooo")
    assert r.exit_code == 2
    line = one_line_error(r)
    assert line.endswith("No such option: --fooo. See 'costmodel collective --help'.")


def test_a_close_match_is_still_offered():
    r = run(*COLL, "--rank", "8")
    assert r.exit_code == 2
    assert "(Possible options: --ranks)" in one_line_error(r)
