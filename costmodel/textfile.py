"""Decoding the bytes of a text file a user gives us: nccl-tests logs, results files (.jsonl),
the runner's runs.jsonl, sweep grid files, calibrations and user presets (TOML). One helper for
every reader, so a file reads alike wherever it is given.

UTF-8 with or without a byte-order mark (Notepad writes one), UTF-16 or UTF-32 by its mark
(Windows PowerShell 5's ``>`` redirect writes UTF-16 LE with the mark ``FF FE``), the mark
dropped. UTF-16 *without* a mark (``iconv -t UTF-16LE``, .NET's ``UnicodeEncoding(false,
false)``) is recognised by its NULs and read, with a :class:`GuessedEncodingWarning` saying so:

- ASCII text in UTF-16 has a NUL at every other byte (the high byte of each code unit: odd
  offsets little-endian, even offsets big-endian). In the first :data:`SNIFF_BYTES` bytes at
  least :data:`NUL_SHARE` of one parity must be NUL and at most ``1 - NUL_SHARE`` of the other
  (a file of NULs throughout is binary, not text).
- The files these readers take (nccl-tests output, JSON lines, TOML) are ASCII in practice and
  never contain a NUL as UTF-8 text, so the pattern does not occur by chance in a file that is
  really UTF-8; the whole file must then decode as UTF-16 of that byte order, or it is refused.
- Text that is mostly outside ASCII (CJK in UTF-16) has no such pattern; it is decoded as UTF-8,
  fails, and is refused naming the byte offset, with the advice to save it as UTF-8.

Any other file with NULs in at least ``NUL_SHARE / 2`` of its first bytes (both parities, or
one parity with non-ASCII text between) is refused (``not text``): a binary file, or UTF-16
that is not recognisable without its mark; as UTF-8 it would decode into NULs.

>>> decode_text("# nThread 1\\n".encode("utf-16"))  # with its mark (PowerShell 5)
'# nThread 1\\n'
>>> import warnings
>>> with warnings.catch_warnings(record=True) as w:
...     warnings.simplefilter("always")
...     decode_text("# nThread 1 nGpus 2\\n".encode("utf-16-le"), "x.log")
...     print(w[0].message)
'# nThread 1 nGpus 2\\n'
x.log: read as UTF-16 LE without a byte-order mark (a NUL at every other byte); save it as UTF-8 to read it without this guess
"""

from __future__ import annotations

import codecs
import warnings
from dataclasses import dataclass

__all__ = [
    "NUL_SHARE",
    "SNIFF_BYTES",
    "Decoded",
    "GuessedEncodingWarning",
    "TextDecodeError",
    "decode",
    "decode_lenient",
    "decode_text",
    "encoding_name",
]

# byte-order marks a text file may start with, longest first (UTF-32's LE mark begins with
# UTF-16's): Windows PowerShell 5's ``>`` writes UTF-16 LE with its mark, Notepad UTF-8 with one
_BOMS: tuple[tuple[bytes, str, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32"),
    (codecs.BOM_UTF8, "utf-8", "UTF-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16"),
)
SNIFF_BYTES = 256
"""How many leading bytes are looked at to recognise UTF-16 without a byte-order mark."""
NUL_SHARE = 0.9
"""Share of one byte parity that must be NUL (and at most 1 - this of the other) in the first
:data:`SNIFF_BYTES` bytes for UTF-16 without a mark: ASCII text gives 1.0 and 0.0."""


class TextDecodeError(ValueError):
    """Bytes that do not decode as text; ``message`` without the file, ``source`` the file."""

    def __init__(self, message: str, source: str = "<bytes>") -> None:
        self.message = message
        self.source = source
        super().__init__(f"{source}: {message}")


class GuessedEncodingWarning(UserWarning):
    """A file read in an encoding its bytes imply but do not state (UTF-16 without its mark)."""


@dataclass(frozen=True)
class Decoded:
    """A file's text, the encoding it was read in (``"UTF-8"``, ``"UTF-16 LE"``, ...) and the
    note to show the user when that encoding was guessed (None when the file states it)."""

    text: str
    encoding: str
    note: str | None = None


def _utf16_order(head: bytes) -> str | None:
    """``"le"`` or ``"be"`` when ``head`` looks like UTF-16 without a mark (see the module
    docstring), else None."""
    if len(head) < 8:
        return None
    even, odd = head[0::2], head[1::2]
    share_even, share_odd = even.count(0) / len(even), odd.count(0) / len(odd)
    if share_odd >= NUL_SHARE and share_even <= 1 - NUL_SHARE:
        return "le"  # 'A\0': the high byte second
    if share_even >= NUL_SHARE and share_odd <= 1 - NUL_SHARE:
        return "be"
    return None


def _encoding(data: bytes) -> tuple[str, str, int, bool]:
    """(codec, its name, the length of its byte-order mark, guessed) of ``data``: the mark's
    encoding when it starts with one, UTF-16 when its NULs say so (guessed), else UTF-8."""
    for bom, codec, name in _BOMS:
        if data.startswith(bom):
            return codec, name, len(bom), False
    order = _utf16_order(data[:SNIFF_BYTES])
    if order is not None:
        return f"utf-16-{order}", f"UTF-16 {order.upper()}", 0, True
    return "utf-8", "UTF-8", 0, False


def encoding_name(data: bytes) -> str:
    """The encoding :func:`decode` reads ``data`` in, from its first bytes: ``"UTF-8"``,
    ``"UTF-16"`` or ``"UTF-32"`` by its mark, ``"UTF-16 LE"``/``"UTF-16 BE"`` guessed from its
    NULs. For a writer that appends UTF-8 to a file: anything but ``"UTF-8"`` would leave it in
    two encodings.

    >>> encoding_name(b'{"op": 1}\\n'), encoding_name('{"op": 1}'.encode("utf-16"))
    ('UTF-8', 'UTF-16')
    """
    return _encoding(data[:SNIFF_BYTES])[1]


def decode(data: bytes, source: str = "<bytes>", *, what: str = "file") -> Decoded:
    """Decode a text file's bytes (the module docstring says how the encoding is chosen).

    Raises :class:`TextDecodeError` (a ValueError) naming the byte offset when the bytes do not
    decode in that encoding (a Latin-1 or cp1252 file must be converted first), and for NULs
    in its first bytes that no guess explains (a binary file, UTF-32 without its mark).
    ``what`` names the file in the advice ("log", "results file", "grid file").
    """
    codec, name, skip, guessed = _encoding(data)
    advice = f"save the {what} as UTF-8 or ASCII"
    if guessed:
        advice += f", e.g. iconv -f {name.replace(' ', '')} -t UTF-8"
    head = data[:SNIFF_BYTES]
    if not skip and not guessed and len(head) >= 8 and head.count(0) >= NUL_SHARE * len(head) / 2:
        # NULs in both parities (or UTF-16 with non-ASCII between): decodes as UTF-8 into text
        # with NULs throughout, which no reader would recognise
        raise TextDecodeError(
            f"not text: NUL bytes throughout its first {len(head)} bytes (a binary file, or "
            f"UTF-16 not recognisable without its byte-order mark; {advice})",
            source,
        )
    try:
        text = data[skip:].decode(codec)
    except UnicodeDecodeError as exc:
        offset = skip + exc.start
        shown = f"{name} text without a byte-order mark" if guessed else f"{name} text"
        raise TextDecodeError(
            f"not {shown}: byte 0x{data[offset]:02x} at offset {offset} cannot be decoded "
            f"({advice})",
            source,
        ) from exc
    note = (
        f"read as {name} without a byte-order mark (a NUL at every other byte); save it as "
        "UTF-8 to read it without this guess"
        if guessed
        else None
    )
    return Decoded(text, name, note)


def decode_text(data: bytes, source: str = "<bytes>", *, what: str = "file") -> str:
    """:func:`decode`'s text; its note, when the encoding was guessed, as a
    :class:`GuessedEncodingWarning` naming ``source`` (the CLI prints it as one
    ``costmodel: warning:`` line)."""
    decoded = decode(data, source, what=what)
    if decoded.note is not None:
        warnings.warn(f"{source}: {decoded.note}", GuessedEncodingWarning, stacklevel=2)
    return decoded.text


def decode_lenient(data: bytes) -> str:
    """:func:`decode`'s encoding, undecodable bytes replaced (U+FFFD) instead of refused and no
    note: for reading NCCL's debug lines out of logs, where one bad byte must not hide the rest.

    >>> decode_lenient(b"ok \\xe9")
    'ok \\ufffd'
    """
    codec, _, skip, _ = _encoding(data)
    return data[skip:].decode(codec, "replace")
