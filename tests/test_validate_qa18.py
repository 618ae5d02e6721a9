"""A cluster engineer's logs, as the validation harness reads them: real logs transformed the
way launchers, log collectors and shell habits transform them (every measured number is a
bundled log's own; nothing here is a measurement of its own).

- Tags stacked by two tools (``kubectl logs --prefix`` of an MPI Operator launcher running
  ``mpirun --tag-output``: ``[pod/launcher/mpi] [1,0]<stdout>:``) are stripped as one tag is;
  two launcher tasks' rows under such a collector tag are refused as without it.
"""

from __future__ import annotations

import pytest

from costmodel.validation.nccl_tests import NcclTestsParseError, parse_nccl_tests
from tests._paths import NCCL_TESTS

#: a 2 x 8 H100 all_reduce sweep with its device list (hosts) and footer
H100_2X8 = next(NCCL_TESTS.glob("06a_*")).read_text(encoding="utf-8")
MEASURED = ["size_bytes", "placement", "time_s", "busbw_bytes_per_s", "ranks", "nodes"]


def _tagged(text: str, tag: str) -> str:
    return "".join(f"{tag}{line}\n" for line in text.splitlines())


@pytest.mark.parametrize(
    "tag",
    [
        "[pod/nccl-launcher/mpi] [1,0]<stdout>:",
        "[pod/nccl-launcher/mpi] 2026-12-05T02:00:00.5Z [1,0]<stdout>:",
        "0: 0: ",
    ],
)
def test_tags_stacked_by_a_collector_over_a_launcher_read_as_the_plain_log(tag):
    plain = parse_nccl_tests(H100_2X8, op="all_reduce")
    tagged = parse_nccl_tests(_tagged(H100_2X8, tag), op="all_reduce")
    assert len(tagged) == len(plain) == 64
    assert tagged[MEASURED].equals(plain[MEASURED])
    assert set(tagged["nodes"]) == {2} and set(tagged["gpus_per_node"]) == {8}


def test_two_launcher_tasks_under_a_collector_tag_are_refused_as_without_it():
    lines = H100_2X8.splitlines()
    both = "".join(
        f"[pod/nccl-launcher/mpi] [1,{task}]<stdout>:{line}\n" for line in lines for task in (0, 1)
    )
    with pytest.raises(NcclTestsParseError, match=r"result rows from 2 launcher tasks"):
        parse_nccl_tests(both, op="all_reduce")
