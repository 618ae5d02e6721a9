"""QA pass 23: a new user's CLI and API session planning multi-GPU training (collectives on
a cluster, fit and step per strategy, days and dollars, batch in tokens, sweeps, own
config.json), odd inputs included."""

from __future__ import annotations

import pytest

import costmodel as cm
from tests._cli import one_line_error, run


# --- a preset path that is a folder is named as a folder, not as missing -----------------------
def test_a_cluster_path_that_is_a_folder_says_so(tmp_path):
    folder = tmp_path / "mycluster.toml"
    folder.mkdir()
    line = one_line_error(
        run("collective", "all_reduce", "--size", "14GB", "--cluster", str(folder)),
        "--cluster: ",
        "is a folder, not a preset file",
    )
    assert "does not exist" not in line
    with pytest.raises(cm.presets.PresetError, match="is a folder, not a preset file"):
        cm.presets.load(folder, "cluster")


def test_a_missing_cluster_path_still_says_it_does_not_exist(tmp_path):
    one_line_error(
        run("collective", "all_reduce", "--size", "1GB", "--cluster", str(tmp_path / "no.toml")),
        "--cluster: ",
        "preset file does not exist",
    )
