"""Data-parallel strategies end to end: one layout, one module per strategy, one engine.

Modelled on torchtitan's ``distributed/`` (``parallel_dims.py`` plus one module per
parallelism):

- :mod:`.layout`: :class:`Layout`, the frozen description every answer reads (strategy, ranks,
  hsdp group, resharding, wrap units, communication dtypes, buckets, overlap contention);
- :mod:`.ddp`, :mod:`.zero`, :mod:`.fsdp`: each strategy's compute units and communication
  events for one micro-batch;
- :mod:`.comm`: every event's time from ``predict_collective`` on the ranks it spans;
- :mod:`.engine`: the one timeline engine (streams, dependencies, overlap contention);
- :mod:`.accumulate`: the one assembly of a step's micro-batches (accumulation, host time);
- :mod:`.compute`: compute time of a micro-batch (the one function to swap for a fitted
  efficiency);
- :mod:`.memory`: memory per GPU from the same layout;
- :mod:`.step`: :func:`strategy_step`, the public road; :mod:`.advisor`: every strategy ranked,
  and what makes a configuration fit.
"""

from .comm import CollectiveTimer, PredictionCache, span_cluster
from .compute import DEFAULT_MFU, micro_batch_compute_s
from .engine import Schedule, Task, run
from .layout import (
    DEFAULT_COMM_CONTENTION,
    STRATEGIES,
    STRATEGY_OF_STAGE,
    Layout,
    WrapUnit,
    wrap_units,
)
from .memory import StrategyMemory, strategy_memory
from .step import EXPOSED_SIGNIFICANT, Interval, StrategyStep, strategy_step, verdict

__all__ = [
    "DEFAULT_COMM_CONTENTION",
    "DEFAULT_MFU",
    "EXPOSED_SIGNIFICANT",
    "STRATEGIES",
    "STRATEGY_OF_STAGE",
    "CollectiveTimer",
    "Interval",
    "Layout",
    "PredictionCache",
    "Schedule",
    "StrategyMemory",
    "StrategyStep",
    "Task",
    "WrapUnit",
    "micro_batch_compute_s",
    "run",
    "span_cluster",
    "strategy_memory",
    "strategy_step",
    "verdict",
    "wrap_units",
]
