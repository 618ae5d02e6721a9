"""Units live in argument names (docs/typing.md): every numeric parameter of the public API
either ends in a unit suffix or is a named dimensionless quantity. mypy cannot tell bytes from
seconds (both are float), so this convention is the guard against unit mix-ups; this test keeps
a new public parameter such as ``bandwidth: float`` from slipping in without its unit."""

from __future__ import annotations

import inspect

import costmodel as cm

# a numeric parameter's name must end with one of these (SI units, DESIGN.md section 2)
UNIT_SUFFIXES = (
    "_bytes", "_s", "_bytes_per_s", "_s_per_byte", "_flops", "_per_token", "_usd",
    "_w",  # watts: a GPU's board power (power_limit_w)
)  # fmt: skip
UNIT_SUFFIXES_EXTRA = ("usd_per_gpu_hour", "bytes_per_param")
# dimensionless quantities and counts [-] (names say what is counted)
DIMENSIONLESS = {
    "accumulation", "base_batch", "base_lr", "chunk_rows", "comm_contention", "critical_batch",
    "digits", "global_tokens",
    "dp_ranks", "fragmentation", "global_batch", "gpus_per_node", "gpus_per_process", "group_size",
    "layer_param_counts", "local_batch", "max_nodes", "mfu", "micro_batch", "new_batch", "nics_per_node", "nodes", "overlap",
    "params", "ranks", "sequence_length", "steps", "tokens", "tokens_per_gpu",
    "tokens_per_step", "zero_stage",
    "whole_node_gpus", "hosts_per_node", "gpus_per_instance",  # GPU and host counts (billing)
    "sync_loss",  # fraction of compute lost per doubling of ranks (costmodel.compute.sync_loss_s)
    # recomputation's extra work over forward + backward (costmodel.strategy.compute.recompute_extra)
    "recompute_extra",
}  # fmt: skip
# parameters whose unit is fixed by the function itself (format_bytes(value), parse_rate(text))
BY_FUNCTION = {"value", "text"}
NUMERIC = ("float", "int", "ArrayLike")


def _numeric_params() -> list[tuple[str, str]]:
    out = []
    for fname in sorted(dir(cm)):
        f = getattr(cm, fname)
        if not inspect.isfunction(f) or fname.startswith("_"):
            continue
        for p in inspect.signature(f).parameters.values():
            ann = str(p.annotation)
            if (
                any(t in ann for t in NUMERIC)
                and "Callable" not in ann
                and not ann.startswith("bool")
            ):
                out.append((fname, p.name))
    return out


def test_the_check_sees_the_formula_parameters():
    names = {p for _, p in _numeric_params()}
    # the check must be looking at something: the central formulas' unit-carrying arguments
    assert {"message_bytes", "bandwidth_bytes_per_s", "latency_s"} <= names


def test_every_numeric_public_parameter_names_its_unit():
    bad = [
        f"{f}({p})"
        for f, p in _numeric_params()
        if not (
            p.endswith(UNIT_SUFFIXES)
            or p.endswith(UNIT_SUFFIXES_EXTRA)
            or p in DIMENSIONLESS
            or p in BY_FUNCTION
        )
    ]
    assert not bad, f"numeric parameters without a unit in their name: {bad}"
