"""costmodel: what data-parallel training costs on a GPU cluster, and how it compares with measurements.

``import costmodel as cm`` gives the notebook API. Names are resolved lazily (PEP 562), so
``import costmodel`` imports numpy and pydantic only; pandas, plotly, streamlit and torch are
imported by the parts that need them, when first used.

>>> import costmodel as cm
>>> round(cm.allreduce_time(14e9, 64, 50e9), 3)   # the lesson's 7B-model gradient all-reduce
0.551
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> "module:attribute" (module relative to this package)
_EXPORTS: dict[str, str] = {
    # units
    "parse_bytes": "units:parse_bytes",
    "parse_rate": "units:parse_rate",
    "parse_duration": "units:parse_duration",
    "parse_count": "units:parse_count",
    "parse_tokens": "units:parse_tokens",
    "format_bytes": "units:format_bytes",
    "format_rate": "units:format_rate",
    "format_duration": "units:format_duration",
    # collectives (textbook alpha-beta-gamma); the dispatching front accepts a Cluster too
    "allreduce_time": "api:allreduce_time",
    "collective_time": "api:collective_time",
    "bytes_per_rank": "collectives:bytes_per_rank",
    "bus_bandwidth": "collectives:bus_bandwidth",
    "algorithm_bandwidth": "collectives:algorithm_bandwidth",
    "busbw_factor": "collectives:busbw_factor",
    "allreduce_lower_bound_bytes": "collectives:allreduce_lower_bound_bytes",
    "crossover_bytes": "collectives:crossover_bytes",
    "OPS": "collectives:OPS",
    "ALGORITHMS": "collectives:ALGORITHMS",
    # topology
    "hierarchical_allreduce_time": "topology:hierarchical_allreduce_time",
    "flat_ring_allreduce_time": "topology:flat_ring_allreduce_time",
    # memory, batch, ddp
    "training_memory": "memory:training_memory",
    "max_params": "memory:max_params",
    "min_ranks": "memory:min_ranks",
    "RECIPES": "memory:RECIPES",
    "global_batch": "batch:global_batch",
    "solve_batch": "batch:solve_batch",
    "scale_learning_rate": "batch:scale_learning_rate",
    "global_batch_from_tokens": "batch:global_batch_from_tokens",
    "ddp_step": "ddp:ddp_step",
    "bucket_assignment": "ddp:bucket_assignment",
    # architectures, time and cost to train
    "Architecture": "architecture:Architecture",
    "load_arch": "architecture:load_arch",
    "arch_names": "architecture:arch_names",
    "training_cost": "training:training_cost",
    "load_price": "training:load_price",
    "price_names": "training:price_names",
    "prices_for_gpu": "training:prices_for_gpu",
    "billed_gpus_per_node": "training:billed_gpus_per_node",
    "load_hf_config": "hf_config:load_hf_config",
    # hardware and presets
    "GPU": "hardware:GPU",
    "Link": "hardware:Link",
    "Node": "hardware:Node",
    "Cluster": "hardware:Cluster",
    "cluster": "presets:cluster",
    # realistic prediction
    "predict_collective": "predict:predict_collective",
    "predict_all_algorithms": "predict:predict_all_algorithms",
    # data-parallel strategies (ddp, zero1, zero2, fsdp, hsdp): step, memory, advisor, fit
    "Layout": "strategy:Layout",
    "strategy_step": "strategy:strategy_step",
    "strategy_memory": "strategy:strategy_memory",
    "advise_strategy": "strategy.advisor:advise",
    "advise_strategy_nodes": "strategy.advisor:advise_nodes",
    "fit_suggestions": "strategy.advisor:fit_suggestions",
    "DEFAULT_COMM_CONTENTION": "strategy:DEFAULT_COMM_CONTENTION",
    # scenario and sweeps
    "Scenario": "scenario:Scenario",
    "ScenarioError": "scenario:ScenarioError",
    # the module, which is callable as its sweep function: cm.sweep(...) and
    # cm.sweep.read_table(path) both work, whichever was imported first (see __getattr__)
    "sweep": "sweep:sweep",
}

_SUBMODULES = {
    "units",
    "collectives",
    "topology",
    "tables",
    "memory",
    "batch",
    "ddp",
    "architecture",
    "training",
    "hardware",
    "presets",
    "nccl",
    "predict",
    "scenario",
    "strategy",
    "sweep",
    "plots",
    "validation",
    "api",
}

__all__ = sorted({*_EXPORTS, *_SUBMODULES, "__version__"})  # sweep is both: listed once


def __getattr__(name: str) -> Any:
    # a name that is both a submodule and one of its functions (sweep) resolves to the module:
    # ``import costmodel.sweep`` binds the module here anyway, so the function alone would make
    # ``cm.sweep.read_table`` work or fail by import order (the module is callable as the function)
    if name in _SUBMODULES:
        module = importlib.import_module(f".{name}", __name__)
        globals()[name] = module
        return module
    if name in _EXPORTS:
        module_name, attr = _EXPORTS[name].split(":")
        value = getattr(importlib.import_module(f".{module_name}", __name__), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'costmodel' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
