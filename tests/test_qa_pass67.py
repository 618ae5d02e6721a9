"""The sixty-seventh QA pass (a planner pricing training runs), through the API:

- ``Scenario.with_changes`` moved A's measured compute time to a B on another GPU: B priced at
  A's GPU's speed and B's GPU's price (a B200 at an H100's 430 ms, 2.07x A's dollars), the
  caveat only in the answer's words; now refused unless the changes give B's own compute time
  or none (B's predicted compute), by one rule (``measured_on_another_gpu``).
"""

from __future__ import annotations

import pytest

import costmodel as cm
from costmodel.scenario import measured_on_another_gpu

A = dict(arch="llama-2-7b", nodes=8, strategy="fsdp", compute_time_s="430ms")


def test_a_change_of_gpu_beside_a_measured_compute_is_refused():
    a = cm.Scenario(**A)
    with pytest.raises(ValueError, match=r"^cluster: B runs on b200, not A's h100-sxm") as e:
        a.with_changes("cluster=dgx-b200")
    said = str(e.value)
    assert "430 ms" in said and "`compute_time_s`" in said and "--" not in said
    with pytest.raises(ValueError, match="B runs on b200"):
        a.with_changes({"cluster": "dgx-b200"})


def test_b_with_its_own_or_a_predicted_compute_on_another_gpu_is_answered():
    a = cm.Scenario(**A)
    predicted = a.with_changes("cluster=dgx-b200,compute_time=none")
    assert predicted.compute_time_s is None
    own = a.with_changes({"cluster": "dgx-b200", "compute_time_s": 0.25})
    assert own.compute_time_s == 0.25
    # the same GPU (another node count, another H100 cluster) keeps A's measured time
    same = a.with_changes("nodes=4")
    assert same.compute_time_s == pytest.approx(0.43)
    assert measured_on_another_gpu(a, same) is None
    rb = predicted.evaluate(scaling=False, flips=False)
    assert rb.compute_source != "measured"
    assert rb.compute_s < 0.43 * 0.8  # a B200's own compute, not the H100's measured one


def test_the_rule_names_both_gpus_only_where_b_shares_as_measured_time():
    a = cm.Scenario(**A)
    b = cm.Scenario(**{**A, "cluster": "dgx-b200"})  # built directly: the rule still sees it
    assert measured_on_another_gpu(a, b) == ("h100-sxm", "b200")
    assert measured_on_another_gpu(a, b.model_copy(update={"compute_time_s": 0.2})) is None
    plain = cm.Scenario(arch="llama-2-7b", nodes=8, strategy="fsdp")
    assert measured_on_another_gpu(plain, plain.with_changes("cluster=dgx-b200")) is None
