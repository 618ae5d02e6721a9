"""Shipped hardware presets (TOML data), installed as the package ``costmodel._presets``.

Read them through :mod:`costmodel.presets`; see ``README.md`` in this folder for the format and
for which preset describes each bundled measured run (``costmodel/data/reference/nccl-tests``).
"""
