"""Sweep output files: CSV or Parquet by extension, streamed chunk by chunk, written atomically."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Atomic output (temporary file + rename) lives in costmodel.atomic, shared with validation/;
# re-exported by costmodel.sweep for the CLI and existing callers.
from ..atomic import atomic_path

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pyarrow as pa

OUTPUT_FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
"""File extension -> format written by :func:`sweep_to_file` and :func:`write_table`."""


# --- files -----------------------------------------------------------------------------------
def output_format(path: str | os.PathLike[str]) -> str:
    """The format for an output path from its extension: ``"csv"`` or ``"parquet"``.

    >>> output_format("out.parquet"), output_format("runs/out.csv")
    ('parquet', 'csv')
    """
    suffix = Path(path).suffix.lower()
    if suffix not in OUTPUT_FORMATS:
        allowed = ", ".join(OUTPUT_FORMATS)
        raise ValueError(
            f"output: unknown extension {suffix or '(none)'!r} in {str(path)!r}; allowed: {allowed}"
        )
    return OUTPUT_FORMATS[suffix]


class _Writer:
    def __init__(self, path: Path, fmt: str) -> None:
        self.path, self.fmt = path, fmt
        self._writer: Any = None
        self._schema: Any = None

    def write(self, table: pa.Table) -> None:
        import pyarrow as pa

        if self.fmt == "csv":
            import pyarrow.csv as pacsv

            # CSV has no dictionary type: write plain strings
            table = table.cast(
                pa.schema(
                    [
                        pa.field(f.name, pa.string()) if pa.types.is_dictionary(f.type) else f
                        for f in table.schema
                    ]
                )
            )
            if self._writer is None:
                self._schema = table.schema
                self._writer = pacsv.CSVWriter(str(self.path), table.schema)
            self._writer.write_table(table.cast(self._schema))
        else:
            import pyarrow.parquet as pq

            if self._writer is None:
                self._schema = table.schema
                self._writer = pq.ParquetWriter(str(self.path), table.schema)
            self._writer.write_table(table.cast(self._schema))

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


def write_table(
    path: str | os.PathLike[str],
    chunks: Iterator[pa.Table] | pa.Table | pd.DataFrame,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Write a table (or chunks of one) to CSV or Parquet, atomically. Returns rows written."""
    import pandas as pd
    import pyarrow as pa

    fmt = output_format(path)
    if isinstance(chunks, pd.DataFrame):
        chunks = iter([pa.Table.from_pandas(chunks, preserve_index=False)])
    elif isinstance(chunks, pa.Table):
        chunks = iter([chunks])
    rows = 0
    with atomic_path(path) as tmp:
        writer = _Writer(tmp, fmt)
        try:
            for table in chunks:
                writer.write(table)
                rows += table.num_rows
                if progress is not None:
                    progress(table.num_rows)
        finally:
            writer.close()
        if rows == 0:
            raise ValueError("output: nothing to write (the grid has no rows)")
    return rows


@dataclass(frozen=True)
class SweepSummary:
    """What :func:`sweep_to_file` wrote."""

    path: str
    rows: int
    seconds: float
    format: str
