"""Published end-to-end training throughput, parsed from the bundled raw files.

The raw files are verbatim copies of two projects' published benchmark pages, in
``costmodel/data/reference/steps/`` (indexed in ``costmodel/data/reference/README.md``):

* MosaicML llm-foundry, ``scripts/train/benchmarking/README.md`` at two commits: MPT 125M-70B on
  8-512 A100 40 GB, A100 80 GB and H100 80 GB, FSDP FULL_SHARD or SHARD_GRAD_OP, bf16 or fp8;
* PyTorch torchtitan, ``docs/performance.md`` (all versions) and ``benchmarks/``: Llama 2/3/3.1
  on A100 80 GB, H100 96 GB and H200 with FSDP2.

:func:`step_rows` reads every table row from the raw text (no number is retyped here) into one
DataFrame, one row per published configuration. What the tables leave implicit (GPU type of a
torchtitan page, the sequence length of its configs, which preset has the model's shape) is
stated once below in ``_TT_*`` with the page it comes from. Nothing here was measured by this
project.

>>> df = step_rows()
>>> int(df.pure_dp.sum()) >= 300
True
>>> sorted(df.source.unique())
['llm-foundry', 'torchtitan']
"""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from .reference import reference_dir

if TYPE_CHECKING:
    from .hardware import GPU

__all__ = [
    "GPU_TYPES",
    "POWER_LIMIT_W",
    "ROW_LOSS",
    "STEP_FILES",
    "gpu_identity",
    "pure_dp_rows",
    "row_gpu",
    "row_power_limit_w",
    "same_gpu",
    "step_rows",
]

#: The raw files, by short name.
STEP_FILES: dict[str, str] = {
    "llm-foundry-2024-04": "llm-foundry-benchmarking-README_2024-04.txt",
    "llm-foundry-2023-07": "llm-foundry-benchmarking-README_2023-07.txt",
    "torchtitan-performance": "torchtitan-performance-md_all-versions.txt",
    "torchtitan-benchmarks": "torchtitan-benchmarks-folder.txt",
}

#: GPU type of the data -> (GPU preset with its datasheet FLOP/s, device memory [B], note).
#: The memory is the card's own (the A100 40 GB and the 96 GB H100 have no preset of their own;
#: their tensor-core peaks are those of the preset named).
GPU_TYPES: dict[str, tuple[str, float, str]] = {
    "a100-40gb": ("a100-sxm-80gb", 40 * 2**30, "A100 SXM4 40GB: same GA100 peaks as the 80 GB"),
    "a100-80gb": ("a100-sxm-80gb", 80 * 2**30, "A100 SXM4 80GB"),
    "h100-80gb": ("h100-sxm", 81559 * 2**20, "H100 SXM5 80GB HBM3"),
    "h100-96gb": (
        "h100-sxm",
        96 * 2**30,
        "H100 96GB HBM2e at a 500 W limit (torchtitan's Grand Teton): SXM peaks are an upper bound",
    ),
    "h200": ("h200-sxm", 143771 * 2**20, "H200 141GB SXM"),
}

#: GPU types of the data that ran below their datasheet power [W]: torchtitan's Grand Teton H100s
#: "used the default 500W power limit" (torchtitan docs/performance.md and benchmarks/, copied in
#: data/reference/steps/). Each row carries it (column ``power_limit_w``, NaN: the datasheet
#: TDP, :data:`costmodel.compute.GPU_POWER_W`); the compute fit and the fidelity report's steps
#: read it from there (:func:`row_gpu`, :func:`row_power_limit_w`).
POWER_LIMIT_W: dict[str, float] = {"h100-96gb": 500.0}


def row_power_limit_w(row: Any) -> float | None:
    """The power limit [W] a row's source states (its ``power_limit_w`` column), None where it
    ran at its datasheet power (NaN in the column, or no such column)."""
    w = getattr(row, "power_limit_w", None)
    return None if w is None or math.isnan(float(w)) else float(w)


def row_gpu(row: Any) -> GPU:
    """The GPU preset a row ran on (``gpu_preset``), capped at the power limit its source
    states (:func:`row_power_limit_w`; else its datasheet power).

    >>> df = pure_dp_rows()
    >>> row_gpu(df[df.gpu_type == "h100-96gb"].iloc[0]).power_limit_w
    500.0
    >>> row_gpu(df[df.gpu_type == "h100-80gb"].iloc[0]).power_limit_w is None
    True
    """
    from . import presets
    from .hardware import GPU

    gpu = presets.load(str(row.gpu_preset), "gpu")
    assert isinstance(gpu, GPU)
    return gpu.with_power_limit_w(row_power_limit_w(row))


def gpu_identity(gpu: Any) -> tuple[Any, ...]:
    """What makes a GPU the card it is, for matching it to the data's GPU types: its
    architecture, dense fp16/bf16/fp8 peaks [FLOP/s] and device memory [B]. A power limit is a
    setting, not the card: not in it."""
    mem = getattr(gpu, "memory_bytes", None)
    return (
        *(
            getattr(gpu, f, None)
            for f in ("architecture", "fp16_dense_flops", "bf16_dense_flops", "fp8_dense_flops")
        ),
        None if mem is None else float(mem),
    )


@functools.cache
def _type_identity(gpu_type: str) -> tuple[Any, ...]:
    from . import presets

    name, memory, _ = GPU_TYPES[gpu_type]
    return (*gpu_identity(presets.load(name, "gpu"))[:-1], float(memory))


def same_gpu(gpu: Any, gpu_type: str) -> bool:
    """Whether ``gpu`` (a GPU preset, at any power limit) is the card of a data GPU type (a key
    of :data:`GPU_TYPES`): the architecture and peaks of the type's preset (the one
    :func:`row_gpu` loads) and the type's own device memory (:func:`gpu_identity`). The 40 GB
    A100 rows are the ``a100-sxm-40gb`` preset's card (the 80 GB preset's peaks, 40 GiB); an
    H200 is not an H100 (the same peaks, 141 GB).

    >>> from costmodel import presets
    >>> same_gpu(presets.load("a100-sxm-40gb"), "a100-40gb")
    True
    >>> same_gpu(presets.load("h200-sxm"), "h100-80gb"), same_gpu(presets.load("h200-sxm"), "h200")
    (False, True)
    """
    return gpu_identity(gpu) == _type_identity(gpu_type)


_MPT_GPU = {"a100_40gb": "a100-40gb", "a100_80gb": "a100-80gb", "h100_80gb": "h100-80gb"}

# llm-foundry's activation_checkpointing: true wraps every MPTBlock in a checkpoint (the whole
# block is recomputed in backward): full recomputation.
_MPT_AC = {"True": "full", "False": "none"}

# torchtitan pages: facts the tables leave to the text or the configs (stated in the page text or
# the train_configs at the commit named in the index).
_TT_SEQ = {"llama-2": 4096, "llama-3": 8192}  # train_configs llama2_*.toml / llama3_*.toml
_TT_MODEL = {
    ("llama-2", "13B"): "llama-2-13b",
    ("llama-2", "70B"): "llama-2-70b",
    ("llama-3", "8B"): "llama-3-8b",
    ("llama-3", "70B"): "llama-3-70b",
    ("llama-3.1", "8B"): "llama-3.1-8b",
}
_TT_AC = {
    "no": "none",
    "selective layer": "selective-layer",
    "selective op": "selective-op",
    "full": "full",
    "selective": "selective-op",  # Grand Teton / Trainy configs: selective_ac_option = "op"
}

#: How each published run computed its loss, by the ``version`` its rows carry (what the code at
#: that commit does; it sizes the loss's logits, :func:`costmodel.architecture.loss_logits_bytes`):
#: llm-foundry's MPT defaults to ``loss_fn: fused_crossentropy`` (flash-attention's fused kernel;
#: llmfoundry/models/mpt/modeling_mpt.py at both commits, the benchmark yamls do not set it);
#: torchtitan in April 2024 returned ``self.output(h).float()`` from the model and kept it as
#: ``pred`` through ``backward`` (train.py at 395a526 / 157a12c; ``del pred`` came in e29b6b4,
#: 2024-06-12); at 9dec370 (the Grand Teton runs) the loss is ``cross_entropy(pred.float())``
#: after ``del pred``, not compiled ("compiling loss function causes CUDA errors"); at e7c0cae
#: (Trainy, ``--training.compile``) ``build_cross_entropy_loss`` compiles it.
ROW_LOSS: dict[str, str] = {
    "495218376": "fused",
    "c6cfb4284": "fused",
    "395a52627": "fp32-held",
    "157a12c56": "fp32-held",
    "llama3_h100_202412_torchtitan.md": "fp32",
    "llama3-8b_h200_202506_trainy-whitefiber.md": "fused",
}

COLUMNS = [
    "source",
    "file",
    "version",
    "table",
    "model",
    "published_params",
    "seq",
    "gpus",
    "gpu_type",
    "precision",
    "mp_mode",
    "sharding",
    "activation_checkpointing",
    "compile",
    "micro_batch",
    "grad_accum",
    "global_batch",
    "tokens_per_s_per_gpu",
    "mfu",
    "peak_memory_gib",
    "ran",
    "pure_dp",
]


def _raw(key: str) -> str:
    return (reference_dir("steps") / STEP_FILES[key]).read_text(encoding="utf-8")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _tables(text: str) -> list[tuple[str, list[str], list[list[str]], int]]:
    """Every markdown table of ``text``: (heading or caption above it, header, rows, line no)."""
    out: list[tuple[str, list[str], list[list[str]], int]] = []
    lines = text.splitlines()
    caption = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#") or line.startswith("**Table"):
            caption = line.lstrip("#").strip()
        if (
            line.lstrip().startswith("|")
            and i + 1 < len(lines)
            and set(lines[i + 1].replace("|", "").strip()) <= set("-: ")
            and "-" in lines[i + 1]
        ):
            header = _cells(line)
            rows = []
            j = i + 2
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                rows.append(_cells(lines[j]))
                j += 1
            out.append((caption, header, rows, i + 1))
            i = j
            continue
        i += 1
    return out


def _number(cell: str) -> float:
    """A published number: commas, ``%`` and footnote marks (``1[^1]``) removed; OOM -> NaN."""
    c = re.sub(r"\[\^\d+\]", "", cell).replace(",", "").replace("%", "").strip()
    if c.upper() == "OOM":
        return float("nan")
    return float(c)


def _llm_foundry(key: str, only_gpu: str | None = None) -> list[dict[str, object]]:
    text = _raw(key)
    version = re.search(r"@ commit ([0-9a-f]{9})", text)
    out: list[dict[str, object]] = []
    for caption, header, rows, _ in _tables(text):
        if "NumParams" not in header:
            continue
        col = {h: k for k, h in enumerate(header)}
        for r in rows:
            gpu_type = _MPT_GPU[r[col["GPU"]]]
            if only_gpu and gpu_type != only_gpu:
                continue
            gpus = int(r[col["# GPUs"]])
            prec = r[col["Precision"]]
            sharding = r[col["Sharding Strategy"]]
            out.append(
                {
                    "source": "llm-foundry",
                    "file": STEP_FILES[key],
                    "version": version.group(1) if version else "",
                    "table": caption,
                    "model": f"mpt-{r[col['Model']]}",
                    "published_params": float(r[col["NumParams"]]),
                    "seq": int(r[col["SeqLen (T)"]]),
                    "gpus": gpus,
                    "gpu_type": gpu_type,
                    "precision": "fp8" if "fp8" in prec else "bf16",
                    "mp_mode": f"{prec} / {r[col['MP Mode']]}",
                    "sharding": sharding,
                    "activation_checkpointing": _MPT_AC[r[col["Activation Checkpointing"]]],
                    "compile": False,
                    "micro_batch": int(r[col["MicroBatchSize"]]),
                    "grad_accum": int(r[col["GradAccum"]]),
                    "global_batch": int(r[col["GlobalBatchSize"]]),
                    # the total T/s over the GPU count: the T/s/GPU column is rounded to integers
                    "tokens_per_s_per_gpu": float(r[col["Throughput (T/s)"]]) / gpus,
                    "mfu": _number(r[col["MFU"]]) / 100.0,
                    "peak_memory_gib": float("nan"),
                    "ran": True,
                    "pure_dp": sharding in ("FULL_SHARD", "SHARD_GRAD_OP"),
                }
            )
    return out


def _versions(text: str) -> list[tuple[str, str]]:
    """(commit or file name, text) of each verbatim block of a multi-version raw file."""
    parts = re.split(r"<!-- ===== VERBATIM: (.*?) ===== -->", text)
    return [(parts[k], parts[k + 1]) for k in range(1, len(parts) - 1, 2)]


def _tt_a100() -> list[dict[str, object]]:
    """The 64 x A100 80GB FSDP2 tables of docs/performance.md, first version of each row."""
    out: list[dict[str, object]] = []
    seen: set[tuple[str, int, str]] = set()
    for label, block in _versions(_raw("torchtitan-performance")):
        if "64 A100" not in block:
            continue
        commit = re.search(r"@ ([0-9a-f]{9})", label)
        for caption, header, rows, _ in _tables(block):
            if not header[0].startswith("Model size") or "Optimizations" in header:
                continue  # the 405B table is 2D (FSDP + TP) on H100: not pure DP
            family = "llama-3" if "Llama 3" in caption else "llama-2"
            col = {h.split()[0] + h.split()[-1]: k for k, h in enumerate(header)}
            for r in rows:
                model = _TT_MODEL[(family, r[0])]
                batch = int(_number(r[col["Batchsize"]]))
                ac = _TT_AC[r[2]]
                if (model, batch, ac) in seen:
                    continue
                seen.add((model, batch, ac))
                wps = _number(r[col["WPSWPS"]])
                out.append(
                    {
                        "source": "torchtitan",
                        "file": STEP_FILES["torchtitan-performance"],
                        "version": commit.group(1) if commit else "",
                        "table": f"docs/performance.md: {caption or 'FSDP2 on 64 A100'}",
                        "model": model,
                        "published_params": float("nan"),
                        "seq": _TT_SEQ[family],
                        "gpus": 64,  # "FSDP2 on 64 A100 (80GB) GPUs" (page text)
                        "gpu_type": "a100-80gb",
                        "precision": "bf16",  # MixedPrecisionPolicy(param bf16, reduce fp32)
                        "mp_mode": "bf16 params / fp32 reduce",
                        "sharding": "FSDP2",
                        "activation_checkpointing": ac,
                        "compile": False,
                        "micro_batch": batch,
                        "grad_accum": 1,
                        "global_batch": batch * 64,
                        "tokens_per_s_per_gpu": wps,
                        "mfu": _number(r[col["MFUMFU"]]) / 100.0,
                        "peak_memory_gib": float("nan"),
                        "ran": wps == wps,
                        "pure_dp": True,
                    }
                )
    return out


def _tt_benchmarks() -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for label, block in _versions(_raw("torchtitan-benchmarks")):
        name = label.split(" @ ")[0].split("/")[-1]
        if "llama3_h100_202412" in name:
            for caption, header, rows, _ in _tables(block):
                if not caption.startswith("Table") and not caption.startswith("**Table"):
                    continue
                if "1D" not in caption and "FSDP + CP" not in caption:
                    continue  # 2D-4D tables (TP, PP) are not data parallel
                gpus = int(re.search(r"(\d+) GPUs", caption).group(1))  # type: ignore[union-attr]
                batch = int(re.search(r"Local batch size (\d+)", caption).group(1))  # type: ignore[union-attr]
                ac = re.search(r"(Selective|Full) activation", caption).group(1).lower()  # type: ignore[union-attr]
                size = re.search(r"Llama 3.1 (\d+B)", caption).group(1)  # type: ignore[union-attr]
                col = {h: k for k, h in enumerate(header)}
                for r in rows:
                    tech = r[0]
                    seq = (
                        int(_number(r[col["Sequence Length"]]))
                        if "Sequence Length" in col
                        else 8192
                    )
                    out.append(
                        {
                            "source": "torchtitan",
                            "file": STEP_FILES["torchtitan-benchmarks"],
                            "version": name,
                            "table": re.sub(r"\*", "", caption.split(".")[0]) + f": {tech}",
                            "model": _TT_MODEL[("llama-3.1", size)],
                            "published_params": float("nan"),
                            "seq": seq,
                            "gpus": gpus,
                            "gpu_type": "h100-96gb",
                            "precision": "fp8"
                            if "Float8" in tech or "Float8" in caption
                            else "bf16",
                            "mp_mode": "bf16 params / fp32 reduce",
                            "sharding": "FSDP2",
                            "activation_checkpointing": _TT_AC[ac],
                            "compile": "compile" in tech or "compile" in caption,
                            "micro_batch": batch,
                            "grad_accum": 1,
                            "global_batch": batch * gpus,
                            "tokens_per_s_per_gpu": _number(r[col["TPS/GPU"]]),
                            "mfu": float("nan"),
                            "peak_memory_gib": _number(r[col["Memory(GiB)"]]),
                            "ran": True,
                            "pure_dp": "CP" not in tech or "CP 1" in tech,
                        }
                    )
        elif "trainy" in name:
            per_node = int(re.search(r"(\d+) NVIDIA H200", block).group(1))  # type: ignore[union-attr]
            batch = int(re.search(r"local_batch_size=(\d+)", block).group(1))  # type: ignore[union-attr]
            for _, header, rows, _ in _tables(block):
                if header[0] != "NUM_NODES":
                    continue
                col = {h: k for k, h in enumerate(header)}
                for r in rows:
                    gpus = int(r[0]) * per_node
                    out.append(
                        {
                            "source": "torchtitan",
                            "file": STEP_FILES["torchtitan-benchmarks"],
                            "version": name,
                            "table": "Trainy on WhiteFiber H200",
                            "model": "llama-3.1-8b",
                            "published_params": float("nan"),
                            "seq": 8192,  # llama3_8b.toml at e7c0cae: seq_len 8192
                            "gpus": gpus,
                            "gpu_type": "h200",
                            "precision": "fp8" if "float8" in block else "bf16",
                            "mp_mode": "bf16 params / fp32 reduce, fp8 all-gather",
                            "sharding": "FSDP2",
                            "activation_checkpointing": "selective-op",  # config default
                            "compile": "--training.compile" in block,
                            "micro_batch": batch,
                            "grad_accum": 1,
                            "global_batch": batch * gpus,
                            "tokens_per_s_per_gpu": _number(r[col["TPS/GPU"]]),
                            "mfu": float("nan"),
                            "peak_memory_gib": _number(r[col["Memory(GiB)"]]),
                            "ran": True,
                            "pure_dp": True,
                        }
                    )
    return out


@functools.lru_cache(maxsize=1)
def _rows() -> pd.DataFrame:
    rows = _llm_foundry("llm-foundry-2024-04")
    # the 2023-07 page: only its A100 80GB table differs (replaced in 2023-10); its A100 40GB
    # table is identical to 2024-04's. Rows it shares with the 2024-04 table are dropped below.
    rows += _llm_foundry("llm-foundry-2023-07", only_gpu="a100-80gb")
    rows += _tt_a100()
    rows += _tt_benchmarks()
    df = pd.DataFrame(rows, columns=COLUMNS)
    key = [c for c in COLUMNS if c not in ("file", "version", "table")]
    df = df.drop_duplicates(subset=key, keep="first").reset_index(drop=True)
    df["gpu_memory_bytes"] = [GPU_TYPES[g][1] for g in df.gpu_type]
    df["gpu_preset"] = [GPU_TYPES[g][0] for g in df.gpu_type]
    df["power_limit_w"] = [POWER_LIMIT_W.get(g, math.nan) for g in df.gpu_type]
    df["tokens_per_step"] = df.global_batch * df.seq
    df["loss"] = [ROW_LOSS[str(v)] for v in df.version]
    return df


def step_rows() -> pd.DataFrame:
    """Every published row (pure DP and mixed, OOM rows with ``ran`` False), one per config.

    Columns: ``source`` (llm-foundry, torchtitan), ``file``, ``version`` (commit), ``table``,
    ``model`` (architecture preset name), ``published_params`` (MPT's NumParams), ``seq``,
    ``gpus``, ``gpu_type`` (a key of :data:`GPU_TYPES`), ``precision`` (bf16, fp8),
    ``mp_mode``, ``sharding`` (FULL_SHARD, SHARD_GRAD_OP, FSDP2), ``activation_checkpointing``
    (none, selective-op, selective-layer, full), ``compile``, ``micro_batch``, ``grad_accum``,
    ``global_batch`` (sequences), ``tokens_per_s_per_gpu``, ``mfu`` (fraction, NaN if not
    published), ``peak_memory_gib`` (torchtitan's reading), ``ran``, ``pure_dp``,
    ``gpu_memory_bytes``, ``gpu_preset``, ``power_limit_w`` (the board power limit the source
    states [W], :data:`POWER_LIMIT_W`; NaN: the datasheet power), ``tokens_per_step``,
    ``loss`` (how the run computed its loss, :data:`ROW_LOSS`). A copy:
    edit it freely.
    """
    return _rows().copy()


def pure_dp_rows(*, ran: bool = True) -> pd.DataFrame:
    """The pure data-parallel rows (FSDP / FSDP2 only); by default only those that ran."""
    df = step_rows()
    df = df[df.pure_dp & (df.ran if ran else True)]
    return df.reset_index(drop=True)


def raw_path(key: str) -> Path:
    """Path of one bundled raw file, by its key in :data:`STEP_FILES`."""
    if key not in STEP_FILES:
        raise ValueError(f"key: unknown steps file {key!r}; allowed: {', '.join(STEP_FILES)}")
    return reference_dir("steps") / STEP_FILES[key]
