"""What the app does not model, said once and shown where a user would look for it."""

from __future__ import annotations

OUT_OF_SCOPE = (
    "Not modelled: tensor, pipeline, context and expert parallelism; inference; fine-tuning "
    "(LoRA). Training here is data parallelism (DDP, ZeRO/FSDP sharding); production runs of "
    "70B-class models add tensor and pipeline parallelism."
)
"""One line for the sidebar and the Memory and step pages' help."""
