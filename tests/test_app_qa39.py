"""Headless app tests (streamlit.testing AppTest), the step page's verdict:

- its Verdict metric says its rule (comms-bound where the communication outlasts the compute or
  more than 5 % of the step waits on it): "comms-bound" beside an 80 % compute share read as
  "communication dominates";
- a step comms-bound by its exposed share while the all-reduce is shorter than the compute was
  offered "Smallest change that flips the verdict: 1.08x less compute per step makes it
  comms-bound" (the flips move the comm-vs-compute balance, ``Scenario._flips``); the page now
  says so, as ``costmodel scenario`` leaves its flip lines out there.
"""

from __future__ import annotations

import costmodel as cm
from tests.test_app import assert_clean, open_page


def _verdict(at):
    (m,) = [m for m in at.metric if m.label == "Verdict"]
    return m


def test_a_step_comms_bound_by_its_exposed_share_is_not_offered_a_flip_to_comms_bound():
    # the lesson's flat ring on 4 DGX H100 nodes at 700 ms of compute: 591 ms of all-reduce,
    # 14 % of the step exposed
    at = open_page("page_ddp.py", {"ddp_model": "lesson", "ddp_compute": "700ms"})
    assert_clean(at)
    r = cm.Scenario(params=7e9, cluster="dgx-h100", nodes=4, compute_time_s=0.7, model="lesson")
    r = r.evaluate(scaling=False)
    assert r.bound == "comms" and r.comm_s < r.compute_s  # the case: the two rules differ
    share = f"{r.exposed_comm_s / r.step_time_s:.0%}"
    verdict = _verdict(at)
    assert verdict.value == "comms-bound"
    assert "more than 5% of the step waits on it" in verdict.help and share in verdict.help
    said = [x.value for x in at.info if "move that balance, not the verdict" in x.value]
    assert said and share in said[0], [x.value for x in at.info]
    assert not [x for x in [*at.success, *at.warning] if "makes it comms-bound" in x.value]


def test_a_step_where_the_rules_agree_keeps_its_smallest_flip():
    at = open_page("page_ddp.py", {"ddp_model": "lesson", "ddp_compute": "300ms"})
    assert_clean(at)
    assert _verdict(at).value == "comms-bound"
    # a 7B model at ZeRO-0 does not fit an H100: the flip is said as a warning then
    shown = [*at.success, *at.warning]
    flips = [x.value for x in shown if "Smallest change that flips the comm-vs-compute" in x.value]
    assert flips and "makes it comms-bound" not in flips[0], [x.value for x in shown]
    assert not [x for x in at.info if "move that balance" in x.value]


def test_the_memory_pages_largest_model_says_what_it_holds_fixed():
    at = open_page("page_memory.py", {"arch": "llama-3.1-8b", "zero_stage": "3", "dp_ranks": "32",
                                      "act_seq": "8192"})  # fmt: skip
    assert_clean(at)
    (m,) = [m for m in at.metric if m.label.startswith("Largest model that fits")]
    assert m.value.endswith("params")
    assert "this model's activations and gathered units, held fixed" in m.help


def test_the_step_pages_band_says_what_it_spans_beside_a_measured_compute():
    at = open_page("page_ddp.py", {"ddp_compute": "400ms", "ddp_nodes": "1"})
    assert_clean(at)
    said = [c.value for c in at.caption if "Step band (" in c.value]
    assert said and "the measured compute taken as it is" in said[0], said
    fitted = open_page("page_ddp.py", {"ddp_nodes": "1"})
    said = [c.value for c in fitted.caption if "Step band (" in c.value]
    assert said and "Step band (compute, scaling beyond one node" in said[0], said


def test_b_priced_at_as_measured_compute_is_a_warning():
    """The step page's B (another model) beside A's measured compute was priced at A's compute
    and answered in green; the answer now says B's compute is A's, as a warning."""
    q = {"ddp_compute": "400ms", "ddp_pin": "true", "ddp_b_arch": "llama-2-13b"}
    at = open_page("page_ddp.py", q)
    assert_clean(at)
    said = [w.value for w in at.warning if "B changes its work (arch)" in w.value]
    assert said and "give B its own measured compute" in said[0], [w.value for w in at.warning]
    assert not [s for s in at.success if "B changes its work" in s.value]
    # B on more nodes changes no work: the answer stays green, with no caveat
    plain = open_page("page_ddp.py", {"ddp_compute": "400ms", "ddp_pin": "true",
                                      "ddp_b_nodes": "8"})  # fmt: skip
    assert_clean(plain)
    assert [s for s in plain.success if "faster" in s.value or "same step" in s.value]
    assert not [w for w in plain.warning if "B changes its work" in w.value]
