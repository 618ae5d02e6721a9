"""The model itself where its name is taken: ``strategy_step``, ``strategy_memory`` and
``training_memory`` read an ``Architecture`` object as their first argument as they read its
name, and a name or object beside a different ``arch=`` is refused in every one.

Each test failed before its fix.
"""

from __future__ import annotations

import pytest

import costmodel as cm


def test_an_architecture_object_stands_where_its_name_does() -> None:
    """``strategy_step(cm.load_arch("llama-3.1-8b"))`` was refused as a ``params`` count with
    the whole object's repr in the message; the name was taken."""
    arch = cm.load_arch("llama-3.1-8b")
    assert cm.strategy_step(arch).step_time_s == cm.strategy_step("llama-3.1-8b").step_time_s
    lay = cm.Layout(strategy="fsdp", ranks=8)
    assert (
        cm.strategy_memory(lay, arch).total_bytes
        == cm.strategy_memory(lay, "llama-3.1-8b").total_bytes
    )
    assert float(cm.training_memory(arch).total_bytes) == float(
        cm.training_memory("llama-3.1-8b").total_bytes
    )


@pytest.mark.parametrize("first", ["llama-2-7b", "object"])
def test_a_model_beside_a_different_arch_is_refused_everywhere(first) -> None:
    """``training_memory("llama-2-7b", arch="llama-3.1-8b")`` sized the 8B and dropped the 7B
    without a word, where ``strategy_step`` refuses the pair ("give one of them")."""
    model = "llama-2-7b" if first == "llama-2-7b" else cm.load_arch("llama-2-7b")
    for call in (cm.training_memory, cm.strategy_step):
        with pytest.raises(ValueError, match=r"differs from llama-3\.1-8b's .*give one of them"):
            call(model, arch="llama-3.1-8b")
    # the same model twice is one model
    assert float(cm.training_memory(model, arch="llama-2-7b").total_bytes) == float(
        cm.training_memory("llama-2-7b").total_bytes
    )
