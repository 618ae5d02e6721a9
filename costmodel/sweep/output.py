"""Sweep output files: CSV or Parquet by extension, streamed chunk by chunk, written atomically."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
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

    A folder (``-o results/``) and a name without an extension are refused as such, with the
    endings allowed (it said "unknown extension '(none)'").

    >>> output_format("out.parquet"), output_format("runs/out.csv")
    ('parquet', 'csv')
    """
    p = Path(path)
    if str(path).strip() == "-":  # the usual name of stdout: here the rows' CSV without -o
        raise ValueError(
            "output: '-' is no file; for CSV on stdout write the rows yourself "
            "(`cm.sweep(...).to_csv(sys.stdout)`), else give a file name ending in .csv, "
            ".parquet or .pq"
        )
    suffix = p.suffix.lower()
    endings = list(OUTPUT_FORMATS)
    allowed = f"{', '.join(endings[:-1])} or {endings[-1]}"
    refuse_folder_or_bare_name(p, "output", allowed)
    if suffix not in OUTPUT_FORMATS:
        raise ValueError(
            f"output: unknown extension {suffix!r} in {str(path)!r}; allowed: {allowed}"
        )
    return OUTPUT_FORMATS[suffix]


def refuse_folder_or_bare_name(path: Path, option: str, allowed: str) -> None:
    """Refuse an output ``path`` that is a folder (``-o results/``, whatever its name ends
    with) or a name without an extension, naming ``option`` and the endings ``allowed``
    (``".csv, .parquet or .pq"``): the one wording of every command that writes a file."""
    if _is_folder(path):
        raise ValueError(
            f"{option}: {str(path)!r} is a folder; give a file name ending in {allowed}"
        )
    if not path.suffix:
        raise ValueError(
            f"{option}: {str(path)!r} has no extension; give a file name ending in {allowed}"
        )


def _is_folder(path: Path) -> bool:
    """``path.is_dir()``, False where the OS refuses the path (a name too long)."""
    try:
        return path.is_dir()
    except OSError:
        return False


#: The sweeps' boolean columns (their layout's ``reshard_after_forward`` and
#: ``gradient_as_bucket_view``, a step's ``no_sync``
#: and ``fits``, a band's ``band_extrapolated``, a collective launch's ``nvls`` (null: the
#: preset's) and ``collnet``): a CSV keeps no type for a column with no value
#: in any row (``reshard_after_forward`` of a zero1 sweep, null off fsdp/hsdp), so
#: :func:`read_table` reads such a column of these back as booleans with nulls, as the
#: Parquet file and the DataFrame hold it (any other empty column is a number's: NaN).
BOOLEAN_COLUMNS = (
    "reshard_after_forward",
    "gradient_as_bucket_view",
    "no_sync",
    "fits",
    "band_extrapolated",
    "nvls",
    "collnet",
)

#: The sweeps' integer columns that a row may leave empty: ``nodes``, ``gpus_per_node``,
#: ``tokens_per_step`` and ``steps`` of a row refused (``preset=all`` with a ``ranks`` axis: 12
#: GPUs of 8-GPU nodes), ``group_size`` off hsdp, ``bucket_cap_bytes`` off ddp/zero1/zero2. A
#: CSV keeps no type for such a column with no value in any row, so :func:`read_table` reads it
#: back as integers with nulls, as the Parquet file holds it (:func:`to_frame`: pandas'
#: ``Int64``).
NULLABLE_INTEGER_COLUMNS = (
    "nodes",
    "gpus_per_node",
    "group_size",
    "bucket_cap_bytes",
    "tokens_per_step",
    "steps",
)

#: Whole numbers up to this magnitude are exact in a float64 (2**53) and written with one
#: decimal (:func:`csv_ready`).
_EXACT_WHOLE = 2.0**53


def _whole_decimal() -> pa.DataType:
    import pyarrow as pa

    return pa.decimal128(38, 1)  # 2**53 has 16 digits: any whole float below it, exactly


def _is_text(t: pa.DataType) -> bool:
    import pyarrow as pa

    if pa.types.is_dictionary(t):
        t = t.value_type
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def to_frame(table: pa.Table) -> pd.DataFrame:
    """A sweep's Arrow table as the DataFrame every surface gives (:func:`costmodel.sweep.sweep`,
    :func:`read_table` of CSV and Parquet, the Dask engine's frame): an integer column that
    holds a null (a refused row's ``nodes``, ``group_size`` off hsdp) is pandas' nullable
    ``Int64``, its values integers and the empty rows ``<NA>``; pyarrow's own conversion made
    it float64, ``2.0`` beside NaN. An integer column with a value in every row stays
    ``int64``, as before; every other column is pyarrow's conversion.

    >>> import pyarrow as pa
    >>> df = to_frame(pa.table({"nodes": pa.array([2, None]), "ranks": [16, 12]}))
    >>> [str(t) for t in df.dtypes], df["nodes"].tolist()
    (['Int64', 'int64'], [2, <NA>])
    """
    import pandas as pd
    import pyarrow as pa

    nullable = [
        f.name
        for f, col in zip(table.schema, table.columns, strict=True)
        if pa.types.is_integer(f.type) and col.null_count
    ]
    df = table.to_pandas()
    if nullable:  # the sweeps' integers are int64: each such column as Int64
        ints = table.select(nullable).to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get)
        for name in nullable:
            df[name] = ints[name].astype("Int64")
    return df


def text_ready(table: pa.Table) -> pa.Table:
    """A table whose text columns have no missing cell: an empty text is ``""``, in every
    output (CSV, Parquet, the DataFrame) alike.

    A text column (``notes``, ``band_note``, a compare table's ``note``) says "nothing to say"
    with ``""``; a null there (a pandas ``None``, or rows of a column one chunk lacks) would
    read back as ``""`` from one format and as None/NaN from the other. A column with no type
    but null (a pandas column of ``None`` only) is text: it becomes ``""`` too. Number columns
    keep their NaN.

    >>> import pyarrow as pa
    >>> text_ready(pa.table({"note": ["why", None], "x": [1.0, None]})).to_pydict()
    {'note': ['why', ''], 'x': [1.0, None]}
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    fields, columns, changed = [], [], False
    for f, col in zip(table.schema, table.columns, strict=True):
        if pa.types.is_null(f.type):
            f, col = (
                pa.field(f.name, pa.string()),
                pa.chunked_array([pa.array([""] * len(col), type=pa.string())]),
            )
            changed = True
        elif _is_text(f.type) and col.null_count:
            if pa.types.is_dictionary(f.type):
                col = pc.fill_null(col.cast(f.type.value_type), "").dictionary_encode()
                f = pa.field(f.name, col.type)
            else:
                col = pc.fill_null(col, "")
            changed = True
        fields.append(f)
        columns.append(col)
    return pa.Table.from_arrays(columns, schema=pa.schema(fields)) if changed else table


def plain_errors(table: pa.Table) -> pa.Table:
    """``table`` with its ``error`` cells in plain words: each name the library marks
    (`` `gpus_per_node` ``, :data:`costmodel._limits.FIELD_MARK`) said as the name alone, as
    every sweep output written for a reader says it (the CSV and Parquet files, the Dask
    engine's partitions, ``sweep``'s CSV and ``--json`` rows on stdout).

    The one place these cells are worded for a file. The DataFrame of :func:`costmodel.sweep`
    keeps the library's words (each row's error is the API's refusal of that row, word for
    word, as the API's ValueError says it), and the CLI names the ``--set`` the user typed in
    its warning from them; a file is read by people and spreadsheets, where a backtick is noise.

    >>> import pyarrow as pa
    >>> t = plain_errors(pa.table({"error": ["runs 4 GPUs here (`gpus_per_node`)", ""]}))
    >>> t["error"].to_pylist()
    ['runs 4 GPUs here (gpus_per_node)', '']
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from .._limits import FIELD_MARK

    if "error" not in table.column_names:
        return table
    i = table.column_names.index("error")
    col = table.column(i)

    def plain(arr: pa.Array) -> pa.Array:
        if pa.types.is_dictionary(arr.type):  # the few distinct reasons, not every row
            words = pc.replace_substring_regex(
                arr.dictionary, pattern=FIELD_MARK.pattern, replacement=r"\1"
            )
            return pa.DictionaryArray.from_arrays(arr.indices, words)
        if not _is_text(arr.type):
            return arr
        return pc.replace_substring_regex(arr, pattern=FIELD_MARK.pattern, replacement=r"\1")

    words = pa.chunked_array([plain(c) for c in col.chunks], type=col.type)
    return table.set_column(i, table.field(i), words)


def csv_ready(table: pa.Table) -> pa.Table:
    """A chunk as CSV writes it: dictionary columns as plain strings, and a float column whose
    values are all whole numbers (below 2**53; nulls aside) written with one decimal,
    ``70000000000.0`` (text columns as :func:`text_ready`: ``""`` where empty, never a null).

    CSV has no dictionary type. Arrow writes a float in its shortest form, which drops the
    decimal point of a whole number (``2``) and switches to an exponent at 1e10
    (``7000000000`` and ``7e+10`` in one ``params`` column): ``pandas.read_csv`` then read a
    float column of whole numbers (``params``, ``tokens``, ``comm_contention`` 0) as int64
    where the Parquet file of the same sweep holds float64. Written as a one-decimal number
    (an exact decimal of the whole float) it reads back a float, the type the DataFrame and the
    Parquet file have, with every row in one format and no exponent. Integer and boolean
    columns are written as they are (``ranks`` 8, ``fits`` true), so every column of a sweep
    reads back from CSV with its Parquet type (:func:`read_table`; pandas: the numbers).

    >>> import pyarrow as pa
    >>> csv_ready(pa.table({"params": [7e9, 7e10], "t": [0.5, 2.0]})).schema.types
    [Decimal128Type(decimal128(38, 1)), DataType(double)]
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    table = plain_errors(text_ready(table))
    fields, columns = [], []
    for f, col in zip(table.schema, table.columns, strict=True):
        if pa.types.is_dictionary(f.type):
            f, col = pa.field(f.name, pa.string()), col.cast(pa.string())
        elif pa.types.is_floating(f.type) and len(col) > col.null_count:
            x = pc.drop_null(col).to_numpy()  # a null is written empty, whatever the rest
            with np.errstate(invalid="ignore"):  # NaN/inf: not whole, the column stays float
                whole = np.isfinite(x) & (x == np.floor(x)) & (np.abs(x) < _EXACT_WHOLE)
            if bool(np.all(whole)):
                f, col = pa.field(f.name, _whole_decimal()), col.cast(_whole_decimal())
        fields.append(f)
        columns.append(col)
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


class _Writer:
    def __init__(self, path: Path, fmt: str) -> None:
        self.path, self.fmt = path, fmt
        self._writer: Any = None
        self._schema: Any = None

    def write(self, table: pa.Table) -> None:
        if self.fmt == "csv":
            import pyarrow.csv as pacsv

            # one chunk at a time with its own types (csv_ready); the header once
            first = self._writer is None
            if first:
                self._writer = open(self.path, "wb")  # noqa: SIM115 (closed in close())
            pacsv.write_csv(
                csv_ready(table), self._writer, pacsv.WriteOptions(include_header=first)
            )
        else:
            import pyarrow.parquet as pq

            # "" where a text is empty, as the CSV writes it; errors in plain words, as there
            table = plain_errors(text_ready(table))
            if self._writer is None:
                self._schema = table.schema
                self._writer = pq.ParquetWriter(str(self.path), table.schema)
            self._writer.write_table(table.cast(self._schema))

    def bytes_written(self) -> int:
        """The file's size so far (CSV flushed first; Parquet's row groups as written)."""
        if self.fmt == "csv" and self._writer is not None:
            self._writer.flush()
        return os.stat(self.path).st_size

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


def _refuse_no_room(writer: _Writer, rows: int, total_rows: int) -> None:
    """Refuse (ValueError) a file the disk has no room for, estimated from its first chunk:
    a 3e8-row CSV is about 70 GB (about 230 B a row), and a full disk stops it an hour later with a bare
    ``No space left on device`` (the half file removed, nothing to show for it)."""
    from ..units import format_bytes

    done = writer.bytes_written()
    needed = done / rows * (total_rows - rows)  # the same bytes per row for the rest
    try:
        free = shutil.disk_usage(writer.path.parent).free
    except OSError:  # a file system that does not say (some network mounts): not refused
        return
    if needed > free:
        smaller = "write .parquet (several times smaller than CSV) " if writer.fmt == "csv" else ""
        raise ValueError(
            f"output: about {format_bytes(done + needed)} for {total_rows:,} rows (from the "
            f"first {rows:,}), {format_bytes(free)} free in {str(writer.path.parent)!r}; "
            f"allowed: a file that fits: narrow an axis, split the sweep, {smaller}or choose "
            "a folder with room"
        )


def write_table(
    path: str | os.PathLike[str],
    chunks: Iterator[pa.Table] | pa.Table | pd.DataFrame,
    progress: Callable[[int], None] | None = None,
    total_rows: int | None = None,
) -> int:
    """Write a table (or chunks of one) to CSV or Parquet, atomically. Returns rows written.

    With ``total_rows`` (the rows the chunks will add up to), the first chunk's bytes per row
    estimate the file, and one the folder's disk has no room for is refused (ValueError,
    nothing left behind) before the rest is evaluated."""
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
                first = rows == 0
                rows += table.num_rows
                if first and total_rows is not None and 0 < rows < total_rows:
                    _refuse_no_room(writer, rows, total_rows)
                if progress is not None:
                    progress(table.num_rows)
        finally:
            writer.close()
        if rows == 0:
            raise ValueError("output: nothing to write (the grid has no rows)")
    return rows


def read_table(path: str | os.PathLike[str]) -> pd.DataFrame:
    """A sweep file (CSV or Parquet, by extension) read back as the DataFrame :func:`sweep`
    gives: the same columns, text ``""`` where empty, numbers NaN where missing, in both formats.

    ``pandas.read_csv`` reads an empty CSV field as NaN (``notes``, ``band_note`` and any text
    column with nothing to say are ``""``, written ``""``), where ``pandas.read_parquet`` gives
    ``""``; this reader keeps ``""`` (pandas users: ``read_csv(path, keep_default_na=False,
    na_values=["nan"])``). Text columns come back as categoricals, as :func:`sweep` gives them,
    with the same categories from either format (those the rows hold, in the order they first
    hold them: a CSV keeps no others);
    every column comes back with the type the Parquet file gives it: CSV integers stay
    integers, a float column of whole numbers stays a float (:func:`csv_ready` writes it with
    one decimal), and a boolean column with no value in any row stays boolean
    (:data:`BOOLEAN_COLUMNS`), an integer column with no value in any row stays integer
    (:data:`NULLABLE_INTEGER_COLUMNS`), and an integer column with an empty row is ``Int64``
    from either format, as :func:`to_frame` makes the sweep's own DataFrame.
    """
    import pyarrow as pa

    fmt = output_format(path)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(str(path))
    else:
        import pyarrow.csv as pacsv

        # a quoted "" is text (the writer quotes every text cell); an unquoted empty is a
        # missing value (an integer's or a boolean's, a float's null); a float's NaN is written
        # nan and read as NaN, so a float column of whole numbers beside NaN (comm_contention 0
        # of a refused row) stays a float, not integers with nulls
        table = pacsv.read_csv(
            str(path),
            convert_options=pacsv.ConvertOptions(
                null_values=[""], quoted_strings_can_be_null=False
            ),
        )
        fields, columns = [], []
        for f, col in zip(table.schema, table.columns, strict=True):
            if pa.types.is_null(f.type):  # nothing in any row: a boolean or a number
                kind = (
                    pa.bool_()
                    if f.name in BOOLEAN_COLUMNS
                    else pa.int64()
                    if f.name in NULLABLE_INTEGER_COLUMNS
                    else pa.float64()
                )
                f, col = pa.field(f.name, kind), col.cast(kind)
            elif pa.types.is_date(f.type) or pa.types.is_timestamp(f.type):
                # a date written as text (a step sweep's price_date) is text, as the sweep gives
                # it; pyarrow's reader guessed a date type for it
                col = col.cast(pa.string()).fill_null("").dictionary_encode()
                f = pa.field(f.name, col.type)
            elif _is_text(f.type):
                col = col.dictionary_encode()
                f = pa.field(f.name, col.type)
            fields.append(f)
            columns.append(col)
        table = pa.Table.from_arrays(columns, schema=pa.schema(fields))
    return to_frame(text_ready(table))


@dataclass(frozen=True)
class SweepSummary:
    """What :func:`sweep_to_file` wrote."""

    path: str
    rows: int
    seconds: float
    format: str
    failed_rows: int = 0
    """Rows whose answer was refused, kept with the reason in their ``error`` column."""
    errors: dict[str, int] = field(default_factory=dict)
    """Each distinct ``error`` -> how many rows it refused, in the order first met; each
    reason as the file's ``error`` column says it (:func:`plain_errors`)."""
    unfit_rows: int = 0
    """Rows answered whose memory per GPU is more than their GPU has (``fits`` false): their
    step, days and dollars are for a configuration that cannot run."""
    over_memory_rows: int = 0
    """Collective rows whose per-rank buffer is more than their GPU's memory (a non-empty
    ``memory_note``) and that were answered: their times are the model's extrapolation, not a
    run that could be measured (a refused row keeps its note but has no time)."""
    unpriced_rows: int = 0
    """Step rows answered with a token budget and no dollars (``cost_usd`` NaN, ``price``
    empty; their ``cost_note`` says why): beside price presets, the rows of a GPU none of them
    is published for (a GPU is never priced at another GPU's rate); with no price given, every
    row."""
    unpriced_presets: list[str] = field(default_factory=list)
    """The cluster presets of the :attr:`unpriced_rows`, in the order first met."""


class RowErrors:
    """A tally of the ``error`` column (the refused rows of a step sweep or of a collective sweep
    on a preset) over streamed chunks.

    :meth:`watch` passes the chunks on, counting as they go. A sweep whose every row failed
    answers nothing: it is refused with its first row's reason, as a one-row sweep of that row
    always was (an unknown GPU for a recipe, a group size that divides no rank count), and
    nothing is written. So chunks are held back until a row has answered (then none can make
    the whole sweep fail, and the rest stream as they come).
    """

    def __init__(self) -> None:
        self.rows = 0
        self.failed_rows = 0
        self.errors: dict[str, int] = {}
        self.unfit_rows = 0
        self.over_memory_rows = 0
        self.unpriced_rows = 0
        self.unpriced_presets: list[str] = []

    def add(self, table: pa.Table) -> None:
        self.rows += table.num_rows
        if "fits" in table.column_names:  # false, not null: a refused row has no verdict
            self.unfit_rows += sum(1 for f in table.column("fits").to_pylist() if f is False)
        if "memory_note" in table.column_names:  # a collective buffer no GPU of it holds
            notes = table.column("memory_note").to_pylist()
            if "error" in table.column_names:  # a refused row has no time to call extrapolated
                refused = table.column("error").to_pylist()
                notes = [t if not e else "" for t, e in zip(notes, refused, strict=True)]
            self.over_memory_rows += sum(1 for t in notes if t)
        if "cost_usd" in table.column_names and "price" in table.column_names:
            self._add_unpriced(table)
        if "error" not in table.column_names:
            return
        import pyarrow.compute as pc

        # one count per distinct reason, in the order first met (a collective sweep's chunk is
        # a million rows: no Python loop over them)
        for pair in pc.value_counts(table.column("error")).to_pylist():
            text, count = pair["values"], int(pair["counts"])
            if text:
                self.failed_rows += count
                self.errors[text] = self.errors.get(text, 0) + count

    def _add_unpriced(self, table: pa.Table) -> None:
        """Count the answered step rows with a budget and no dollars (no price for their GPU),
        with their presets: a sweep said nothing of them, so a cost column half NaN read as
        priced (``costmodel sweep`` warns with :attr:`SweepSummary.unpriced_rows`)."""
        names = table.column_names
        n = table.num_rows
        costs = table.column("cost_usd").to_pylist()
        prices = table.column("price").to_pylist()
        errors = table.column("error").to_pylist() if "error" in names else [""] * n
        presets = table.column("preset").to_pylist() if "preset" in names else [""] * n
        for cost, price, error, preset in zip(costs, prices, errors, presets, strict=True):
            if error or price or (cost is not None and cost == cost):  # refused, or priced
                continue
            self.unpriced_rows += 1
            if preset and preset not in self.unpriced_presets:
                self.unpriced_presets.append(str(preset))

    def watch(self, tables: Iterator[pa.Table]) -> Iterator[pa.Table]:
        held: list[pa.Table] = []
        for table in tables:
            self.add(table)
            if self.failed_rows == self.rows:  # nothing answered yet: hold it back
                held.append(table)
                continue
            yield from held
            held = []
            yield table
        if held and self.errors:  # every row failed: the sweep's refusal is the first reason
            raise ValueError(next(iter(self.errors)))
        yield from held
