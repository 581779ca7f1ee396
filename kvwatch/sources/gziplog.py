"""A gzip-compressed log read for replay: every complete line before any damage, then where it is.

Python's `gzip.GzipFile` loses a whole read's output when the data ends early or is corrupt: a log
rotated and compressed while the host lost power replayed as empty. `GzipLog` decodes member by member
with zlib itself, so it knows the compressed byte where reading stopped (the file's end for a cut
file, the first bad byte for corrupt data, found by trying the failing read's prefixes on a copy of
the decoder), keeps what came before, and drops the partial line the damage cut.

Reads hand out exactly the bytes asked for (fewer only at the end, as a file's `read`), each ending
where a line ends when that is known: before handing out bytes that end mid-line, the decoder reads on
to that line's end (a line of at most `LOOKAHEAD` bytes), so the damage can still drop all of it.
"""

from __future__ import annotations

import zlib
from typing import BinaryIO

#: Compressed bytes read at a time.
READ = 64 << 10
#: Decompressed bytes made from them at a time (a small file that decompresses to gigabytes stays
#: bounded in memory).
OUT = 1 << 20
#: How far past a read's end the decoder looks for the end of the line it cuts.
LOOKAHEAD = 1 << 20
_GZIP = 16 + zlib.MAX_WBITS  # zlib's gzip mode: the header, then the trailer's CRC-32 and length checked


class CompressedDataError(Exception):
    """The compressed data ends early (`cut`) or is corrupt at compressed byte `offset` (0-based: the
    first byte not decoded)."""

    def __init__(self, offset: int, cut: bool, reason: str) -> None:
        super().__init__(offset, cut, reason)
        self.offset, self.cut, self.reason = offset, cut, reason

    def __str__(self) -> str:
        if self.cut:
            return f"the gzip data ends early: the file stops at byte {self.offset}, inside compressed data"
        return f"the gzip data is corrupt at byte {self.offset} ({self.reason})"


class GzipLog:
    """A gzip file (one member or several, zero padding allowed) read as its decompressed bytes."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self._restart()

    def _restart(self) -> None:
        self._raw.seek(0)
        self._at = 0  # compressed bytes decoded (or skipped as padding) so far
        self._in = b""  # compressed bytes read and not yet decoded
        self._member: zlib._Decompress | None = None  # the decoder of the member being read
        self._out = bytearray()  # decompressed bytes not yet handed out
        self._ended = False
        self.damage: CompressedDataError | None = None

    @property
    def closed(self) -> bool:
        """Whether the file is closed."""
        return self._raw.closed

    def close(self) -> None:
        """Close the file."""
        self._raw.close()

    def __enter__(self) -> GzipLog:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def seek(self, offset: int, whence: int = 0) -> int:
        """Back to the start (the only place a compressed stream can go back to cheaply)."""
        if (offset, whence) != (0, 0):
            raise OSError("a gzip log can only be sought back to its start")
        self._restart()
        return 0

    def read(self, size: int = -1, /) -> bytes:
        """Up to `size` bytes (all of them: -1); fewer only at the end of the data, or of the lines
        before its damage (see `damage`); after that the damage is raised."""
        out = self._out
        while not self._ended and (size < 0 or len(out) < size or (size and self._mid_line(size))):
            self._step()
        if not out and self.damage is not None:
            raise self.damage
        data = bytes(out if size < 0 else out[:size])
        del out[: len(data)]
        return data

    def _mid_line(self, size: int) -> bool:
        """Whether handing out `size` bytes would end mid-line and more may end that line in reach."""
        out = self._out
        return out[size - 1 : size] != b"\n" and out.find(b"\n", size) < 0 and len(out) < size + LOOKAHEAD

    def _step(self) -> None:
        """Decode some more into _out; at the end of the data (clean or damaged), set _ended."""
        if not self._in:
            self._in = self._raw.read(READ)
            if not self._in:
                if self._member is not None:
                    self._fail(self._at, True, "cut")
                self._ended = True
                return
        if self._member is None:  # between members: gzip's zero padding, or the next member's header
            data = self._in.lstrip(b"\0")
            self._at += len(self._in) - len(data)
            self._in = data
            if not data:
                return
            self._member = zlib.decompressobj(_GZIP)
        member, data = self._member, self._in
        before = member.copy()
        try:
            self._out += member.decompress(data, OUT)
        except zlib.error as err:
            self._out += _good(before, data, bad := _first_bad(before, data))
            self._fail(self._at + bad, False, str(err).removeprefix("Error -3 while decompressing data: "))
            return
        rest = member.unused_data if member.eof else member.unconsumed_tail
        self._at += len(data) - len(rest)
        self._in = rest
        if member.eof:
            self._member = None

    def _fail(self, offset: int, cut: bool, reason: str) -> None:
        """Stop at `offset`: keep the complete lines decoded before it, drop the partial one."""
        del self._out[self._out.rfind(b"\n") + 1 :]
        self.damage = CompressedDataError(offset, cut, reason)
        self._ended = True


def _decodes(member: zlib._Decompress, data: bytes) -> bool:
    """Whether `data` decodes without error after what `member` has decoded (output discarded)."""
    decoder = member.copy()
    try:
        while data:
            decoder.decompress(data, OUT)
            data = b"" if decoder.eof else decoder.unconsumed_tail
    except zlib.error:
        return False
    return True


def _first_bad(member: zlib._Decompress, data: bytes) -> int:
    """The index of the byte of `data` at which decoding it after `member` fails (it does fail)."""
    low, high = 0, len(data)  # data[:low] decodes, data[:high] does not
    while high - low > 1:
        middle = (low + high) // 2
        if _decodes(member, data[:middle]):
            low = middle
        else:
            high = middle
    return low


def _good(member: zlib._Decompress, data: bytes, stop: int) -> bytes:
    """What data[:stop] decodes to after `member` (it decodes without error)."""
    decoder, out, data = member.copy(), bytearray(), data[:stop]
    while data:
        out += decoder.decompress(data, OUT)
        data = b"" if decoder.eof else decoder.unconsumed_tail
    return bytes(out)
