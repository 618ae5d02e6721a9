"""Benchmark: costmodel's training memory vs DeepSpeed's and llm-analysis' estimators, same configs.

One run, side by side, on the same ``--configs`` (default 1e5) random transformer configurations
(layers 4..128, hidden 1024..16384 in steps of 128, heads = hidden / 128, vocabulary 32k..256k,
data-parallel ranks 1..4096 in powers of two, ZeRO stage 2 or 3, mixed-precision Adam, no
offload). The parameter count ``P`` of each configuration is llm-analysis' own
(``LLMAnalysis.get_num_params_total``), so all three estimators see the same model.

Estimators (model state per GPU: weights, gradients, optimizer states; no activations):

- **costmodel**: :func:`costmodel.memory.training_memory` (16 B/param sharded as ZeRO says),
  once on arrays of all configurations (vectorized) and once per configuration with Python
  scalars (the scalar loop of the same function);
- **DeepSpeed** (``pip install deepspeed``, pure Python, no CUDA needed with ``DS_BUILD_OPS=0``):
  ``estimate_zero2_model_states_mem_needs`` / ``estimate_zero3_model_states_mem_needs`` with
  ``cpu_offload=False``; the largest layer for ZeRO-3 is the larger of the embedding
  (``vocab x hidden``) and one MLP matrix (``4 hidden x hidden``);
- **llm-analysis** (``pip install llm-analysis``): one ``LLMAnalysis`` object per
  configuration, summing its per-layer, embedding and last-layernorm weight, gradient and
  optimizer-state memory for the ZeRO stage.

Both are in the ``bench`` extra (``pip install -e '.[bench]'``), never a runtime dependency.
Times are CPU (process) seconds, best of ``--repeat`` for the fast ones; llm-analysis and the
scalar loops run once over ``--loop-configs`` configurations (default: all), and rows/s are per
core. The agreement columns give each reference's estimate over costmodel's, per ZeRO stage.

Usage: ``python benchmarks/bench_memory_estimators.py [--configs 100000] [--loop-configs N]``
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import math
import time

import numpy as np

from costmodel import memory


def _cpu_s(fn) -> tuple[float, object]:
    t0 = time.process_time()
    out = fn()
    return time.process_time() - t0, out


def _configs(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    hidden = 128 * rng.integers(8, 129, n)
    return {
        "layers": rng.integers(4, 129, n),
        "hidden": hidden,
        "heads": hidden // 128,
        "vocab": rng.integers(32_000, 256_001, n),
        "ranks": 2 ** rng.integers(0, 13, n),
        "zero": rng.choice([2, 3], n),
    }


def _llm_analysis(cfg: dict[str, np.ndarray], idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(params, model-state bytes per GPU) from llm-analysis for configurations ``idx``."""
    from llm_analysis.analysis import DSZeRO, LLMAnalysis
    from llm_analysis.config import (
        ModelConfig,
        ParallelismConfig,
        get_gpu_config_by_name,
    )

    # llm-analysis logs to a logger named "__name__" (llm_analysis/logger.py); quiet it
    logging.getLogger("__name__").setLevel(logging.ERROR)
    gpu = get_gpu_config_by_name("a100-sxm-80gb")  # memory estimates do not depend on the GPU
    params = np.empty(len(idx))
    state = np.empty(len(idx))
    for j, i in enumerate(idx):
        la = LLMAnalysis(
            ModelConfig(
                name="bench",
                num_layers=int(cfg["layers"][i]),
                n_head=int(cfg["heads"][i]),
                hidden_dim=int(cfg["hidden"][i]),
                vocab_size=int(cfg["vocab"][i]),
            ),
            gpu,
            parallelism_config=ParallelismConfig(dp_size=int(cfg["ranks"][i])),
        )
        z = DSZeRO(int(cfg["zero"][i]))
        n_layers = int(cfg["layers"][i])
        weights = (
            n_layers * la.get_weight_memory_per_layer(ds_zero=z)
            + la.get_memory_embedding(ds_zero=z)
            + la.get_weight_memory_last_layernorm(ds_zero=z)
        )
        opt_l, grad_l = la.get_memory_optimizer_state_and_gradient_per_layer(ds_zero=z)
        opt_e, grad_e = la.get_memory_optimizer_state_and_gradient_embedding(ds_zero=z)
        opt_n, grad_n = la.get_memory_optimizer_state_and_gradient_last_layernorm(ds_zero=z)
        state[j] = weights + n_layers * (opt_l + grad_l) + opt_e + grad_e + opt_n + grad_n
        params[j] = la.get_num_params_total()
    return params, state


#: the reference estimators this benchmark compares with: (import name, package name)
REFERENCES = (("deepspeed", "deepspeed"), ("llm_analysis", "llm-analysis"))


def missing_references() -> list[str]:
    """The packages of ``REFERENCES`` not installed here (package names, in order)."""
    return [pkg for mod, pkg in REFERENCES if importlib.util.find_spec(mod) is None]


def _deepspeed(params, cfg, idx) -> np.ndarray:
    from deepspeed.runtime.zero.stage3 import estimate_zero3_model_states_mem_needs
    from deepspeed.runtime.zero.stage_1_and_2 import estimate_zero2_model_states_mem_needs

    out = np.empty(len(idx))
    for j, i in enumerate(idx):
        p, n = int(params[i]), int(cfg["ranks"][i])
        if cfg["zero"][i] == 2:
            out[j] = estimate_zero2_model_states_mem_needs(p, n, 1, cpu_offload=False)[1]
        else:
            h = int(cfg["hidden"][i])
            largest = max(int(cfg["vocab"][i]) * h, 4 * h * h)
            out[j] = estimate_zero3_model_states_mem_needs(
                p, largest, n, 1, cpu_offload=False, cpu_offload_params=False
            )[1]
    return out


def _costmodel_loop(params, cfg, idx) -> np.ndarray:
    return np.array(
        [
            memory.training_memory(
                float(params[i]), zero_stage=int(cfg["zero"][i]), dp_ranks=int(cfg["ranks"][i])
            ).total_bytes
            for i in idx
        ]
    )


def _costmodel_vec(params, cfg) -> np.ndarray:
    """One vectorized call per ZeRO stage (the stage is a scalar argument)."""
    out = np.empty(len(params))
    for z in (2, 3):
        m = cfg["zero"] == z
        out[m] = memory.training_memory(
            params[m], zero_stage=z, dp_ranks=cfg["ranks"][m]
        ).total_bytes
    return out


def main(configs: int = 100_000, loop_configs: int = 0, repeat: int = 3) -> dict[str, float]:
    cfg = _configs(configs)
    idx = np.arange(configs)
    loop_idx = idx[: loop_configs or configs]
    print(
        f"{configs:.0e} configurations (layers 4..128, hidden 1024..16384, vocab 32k..256k, "
        f"ranks 1..4096, ZeRO 2/3); loops over {len(loop_idx)}"
    )
    # imports and first calls (DeepSpeed's pulls in torch) outside the timed runs
    _deepspeed(np.ones(1) * 1e9, cfg, idx[:1])
    _llm_analysis(cfg, idx[:1])
    t_la, (params, la_state) = _cpu_s(lambda: _llm_analysis(cfg, idx))
    t_vec = t_cm_loop = t_ds = math.inf
    for _ in range(repeat):  # interleaved, best of `repeat`
        dt, cm_vec = _cpu_s(lambda: _costmodel_vec(params, cfg))
        t_vec = min(t_vec, dt)
        dt, ds_state = _cpu_s(lambda: _deepspeed(params, cfg, idx))
        t_ds = min(t_ds, dt)
    t_cm_loop, cm_loop = _cpu_s(lambda: _costmodel_loop(params, cfg, loop_idx))
    np.testing.assert_allclose(cm_loop, cm_vec[loop_idx], rtol=1e-12)
    rates = {
        "costmodel vectorized": configs / t_vec,
        "costmodel scalar loop": len(loop_idx) / t_cm_loop,
        "DeepSpeed estimator loop": configs / t_ds,
        "llm-analysis loop": configs / t_la,
    }
    base = rates["costmodel vectorized"]
    print(f"\n{'estimator':<28}{'configs/s':>12}{'us/config':>11}{'costmodel vec. is':>20}")
    for name, r in rates.items():
        print(f"{name:<28}{r:>12.3g}{1e6 / r:>11.3g}{base / r:>18.3g}x")
    ratio = rates["DeepSpeed estimator loop"] / rates["costmodel scalar loop"]
    print(f"\none costmodel scalar call takes {ratio:.2g}x the time of one DeepSpeed estimate")
    print("\nagreement, reference / costmodel (model state per GPU):")
    print(f"{'':<14}{'ZeRO':>5}{'min':>9}{'median':>9}{'p99':>9}{'max':>9}")
    for name, ref in (("DeepSpeed", ds_state), ("llm-analysis", la_state)):
        for z in (2, 3):
            r = ref[cfg["zero"] == z] / cm_vec[cfg["zero"] == z]
            q = np.quantile(r, [0.0, 0.5, 0.99, 1.0])
            print(f"{name:<14}{z:>5}" + "".join(f"{v:>9.3f}" for v in q))
    return rates


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=100_000)
    parser.add_argument("--loop-configs", type=int, default=0, help="0: all")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for flag, least in (("--configs", 1), ("--loop-configs", 0), ("--repeat", 1)):
        value = getattr(args, flag[2:].replace("-", "_"))
        if not value >= least:  # NaN too
            parser.error(f"{flag} must be at least {least} (got {value:g})")
    missing = missing_references()
    if missing:
        parser.error(
            f"needs {' and '.join(missing)} (the bench extra): "
            "make bench-estimators, or pip install -e '.[bench]'"
        )
    main(args.configs, args.loop_configs, args.repeat)
