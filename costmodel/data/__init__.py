"""Data files shipped inside the package (installed as ``costmodel.data``).

``reference/`` holds the published measurements the project checks itself against, copied
byte-for-byte from their public sources; read them through :mod:`costmodel.reference`, and see
``reference/README.md`` for where each file comes from.
"""
