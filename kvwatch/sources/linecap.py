"""The one line-length cap, the same live and in replay, and how a longer line is cut.

A line longer than LINE_CAP keeps its first LINE_CAP // 2 and its last LINE_CAP - LINE_CAP // 2
bytes, joined, the middle dropped, and is counted once (`kvwatch_lines_truncated_total`): request
logs put their numbers at the end of very long lines, and a JSON row cut inside one long string (a
prompt) is still JSON once its head and tail are joined. Reading such a line holds at most about
LINE_CAP bytes plus one read, however long it is.
"""

from __future__ import annotations

#: The longest line handed on whole (bytes of a physical line; characters of a joined docker line).
LINE_CAP = 1 << 20


def join_cut(head: bytes, tail: bytes) -> bytes:
    """Head and tail of a cut line as one; the head's trailing backslashes go, so that a cut inside a
    JSON string does not leave an escape that swallows the tail's first character."""
    return head.rstrip(b"\\") + tail


class Clip:
    """A line read piece by piece, kept as its head and tail once it passes `cap`."""

    __slots__ = ("_head", "_tail", "cap", "dropped", "half")

    def __init__(self, cap: int = LINE_CAP) -> None:
        self.cap, self.half = cap, cap // 2
        self._head = bytearray()
        self._tail = bytearray()
        self.dropped = 0  # bytes of the middle dropped so far

    def __bool__(self) -> bool:
        """Whether any of a line is held."""
        return bool(self._head) or bool(self._tail) or self.dropped > 0

    @property
    def held(self) -> int:
        """How many bytes of the input the held line stands for (kept and dropped)."""
        return len(self._head) + len(self._tail) + self.dropped

    def add(self, piece: bytes | memoryview) -> None:
        """Append the next piece of the line."""
        if not self._tail and not self.dropped and len(self._head) + len(piece) <= self.cap:
            self._head += piece
            return
        if not self._tail and not self.dropped:  # the first overflow: split at half the cap
            if len(self._head) < self.half:
                room = self.half - len(self._head)
                self._head += piece[:room]
                piece = piece[room:]
            else:
                self._tail += self._head[self.half :]
                del self._head[self.half :]
        self._tail += piece
        excess = len(self._tail) - (self.cap - self.half)
        if excess > 0:
            del self._tail[:excess]
            self.dropped += excess

    def take(self) -> tuple[bytes, bool]:
        """The line (head and tail joined when cut) and whether it was cut; the clip is emptied."""
        cut = self.dropped > 0
        line = join_cut(bytes(self._head), bytes(self._tail)) if cut else bytes(self._head + self._tail)
        self._head.clear()
        self._tail.clear()
        self.dropped = 0
        return line, cut


def clip_bytes(line: bytes, cap: int = LINE_CAP) -> bytes:
    """A whole line cut as Clip cuts one (its head and tail), if longer than `cap`."""
    if len(line) <= cap:
        return line
    half = cap // 2
    return join_cut(line[:half], line[len(line) - (cap - half) :])


def clip_text(text: str, cap: int = LINE_CAP) -> str:
    """clip_bytes() for a line already decoded (characters, not bytes)."""
    if len(text) <= cap:
        return text
    half = cap // 2
    return text[:half].rstrip("\\") + text[len(text) - (cap - half) :]


class TextClip:
    """Clip for a line joined from decoded pieces (docker's 16 KiB entries): characters, not bytes."""

    __slots__ = ("_head", "_parts", "_size", "cap", "half")

    def __init__(self, cap: int = LINE_CAP) -> None:
        self.cap, self.half = cap, cap // 2
        self._head: str | None = None  # set once the line passes the cap
        self._parts: list[str] = []
        self._size = 0

    def add(self, text: str) -> None:
        """Append the next piece of the line."""
        self._parts.append(text)
        self._size += len(text)
        keep = self.cap - self.half
        if self._head is None and self._size > self.cap:
            whole = "".join(self._parts)
            self._head, self._parts, self._size = (
                whole[: self.half],
                [whole[self.half :]],
                len(whole) - self.half,
            )
        if self._head is not None and self._size > 2 * keep:  # (trimmed now and then, not per piece)
            rest = "".join(self._parts)[-keep:]
            self._parts, self._size = [rest], keep

    def take(self) -> tuple[str, bool]:
        """The line (head and tail joined when cut) and whether it was cut; the clip is emptied."""
        rest, head = "".join(self._parts), self._head
        self._head, self._parts, self._size = None, [], 0
        if head is None:
            return rest, False
        return head.rstrip("\\") + rest[len(rest) - (self.cap - self.half) :], True
