"""Your own model in the app: an uploaded Hugging Face ``config.json``, read by the CLI's reader.

The Memory and Training step pages take the same upload. The bytes are saved once, by their
hash, under the temporary folder (``costmodel-configs/<sha256>/<file name>``, the upload's
name made safe for a path, written atomically) and read there by :func:`costmodel.hf_config.load_hf_config`: the road
``--arch path/config.json`` takes in the CLI, so the page and the CLI give the same numbers, and
the step page's :class:`~costmodel.scenario.Scenario` gets a path for ``arch`` as the CLI's does.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from pathlib import Path

from costmodel.architecture import Architecture
from costmodel.web.common import error, keep_name, kept_upload, plain

#: The model choice that asks for a config.json upload (Memory and Training step pages).
OWN = "your own (config.json)"
#: The uploader's label: a refused file is named by it (the library says ``arch``, its argument).
LABEL = "config.json"
HELP = (
    "A Hugging Face config.json (Llama, Mistral, Qwen2, Mixtral, DeepSeek-V3, GPT-2, GPT-NeoX): "
    "read offline into the same shape a preset gives, as `--arch path/config.json` in the CLI"
)


def _file_name(filename: str) -> str:
    """The saved copy's file name: the upload's, made safe for a path (``qwen2.5-7b.json``);
    ``config.json`` when it has none left. The reader names the model from it and the file
    (:func:`costmodel.hf_config.config_name`), as ``--arch`` names the same file."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(filename).name.removesuffix(".json"))
    stem = stem.strip(".-")[:60].strip(".-")
    return f"{stem or 'config'}.json"


def read_upload(content: bytes, filename: str) -> tuple[Architecture, str]:
    """``(architecture, path of the saved copy)`` of an uploaded config.json.

    ValueError (naming the box, :data:`LABEL`, the file and the config key) for a file over
    :data:`~costmodel.hf_config.MAX_CONFIG_BYTES`, one that is not JSON text (read by :mod:`costmodel.textfile`: UTF-8, UTF-16 or UTF-32 by its mark), or a shape the
    reader cannot read; the user's file itself is never written to.
    """
    from costmodel import hf_config
    from costmodel.atomic import atomic_path

    if len(content) > hf_config.MAX_CONFIG_BYTES:
        raise ValueError(
            f"{LABEL}: {filename} is {len(content):,} bytes; a config.json is a few kB "
            f"(at most {hf_config.MAX_CONFIG_BYTES:,})"
        )
    digest = hashlib.sha256(content).hexdigest()
    path = Path(tempfile.gettempdir()) / "costmodel-configs" / digest / _file_name(filename)
    if not path.is_file() or path.read_bytes() != content:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            tmp.write_bytes(content)
    try:
        a = hf_config.load_hf_config(path)
    except ValueError as exc:  # named by the box and the upload, not the API's argument
        text = str(exc).replace(str(path.resolve()), filename)  # nor the private copy
        text = re.sub(r"^arch: ", f"{LABEL}: ", text)
        # a plain config.json is the box's own name: said once, not "config.json: config.json:"
        raise ValueError(text.replace(f"{LABEL}: {LABEL}: ", f"{LABEL}: ", 1)) from None
    keep_name(a.name)  # its notes start with its name: written as it is
    return a, str(path)


def upload_arch(col, key: str) -> tuple[Architecture, str] | None:
    """The uploader in ``col``: ``(architecture, saved path)`` with a caption of its shape, or
    None with a message (an invitation to upload, or a red error naming what is wrong)."""
    up = kept_upload(col, LABEL, type=["json"], key=key, help=HELP)  # kept over a switch
    if up is None:
        col.info("Upload a config.json to use your own model.")
        return None
    content, name = up
    try:
        a, path = read_upload(content, name)
    except ValueError as exc:
        with col:
            error(f"{exc}".splitlines()[0])
        return None
    describe(a, col, source=f"{name} (uploaded)")
    return a, path


def describe(a: Architecture, col, source: str | None = None) -> None:
    """One caption under the model choice: parameters and shape, with the source (``source``
    for an upload: its file name, not the saved copy's path, escaped: the browser names it)."""
    from costmodel.units import format_count

    moe = f", {format_count(a.active_params)} active per token" if a.moe else ""
    window = f", sliding window {a.sliding_window:,}" if a.windowed_layers else ""
    col.caption(
        f"{format_count(a.params)} params{moe}; {a.layers} layers, hidden {a.hidden}, "
        f"{a.heads} heads ({a.kv_heads} KV{window}), vocab {a.vocab}. Source: {a.source if source is None else plain(source)}"
    )
