"""Engine auto-detection: one rule, fed a log's lines in order, that the live daemon and `kvwatch replay`
both follow, so that both choose the same engine for the same file (replay is the daemon's golden
harness).

The rule, after each of the first EVERY lines and then after every EVERY-th (its text as the source
decodes it; the sniffs read the whole head, so asking them after every line of a long one costs its
square):
1. the ranked sniff (`kvwatch.engines.detect_engine`) of the lines so far names an engine that no
   other engine's log carries (a layer, `layers`) or embeds (`reuses`): that engine, at once. A
   carried engine's lines can come before its carrier's (LMCache's first record before the first line
   naming vLLM), so its sniff alone is never conclusive this early;
2. else, once the head is full (HEAD_LINES lines or HEAD_BYTES of text): the ranked sniff of the
   head, or none;
3. else, at the end of the input: the ranked sniff of every line, or none.

The answer is a function of the line sequence alone, not of when the lines arrive: replay feeds a
file's lines until the rule decides; the daemon feeds them as they come. Only a followed file that
falls quiet before the rule decides needs more (the daemon's `AutoParser` decides on what it holds
after a quiet spell: the answer replay gives for the file as it stands then).
"""

from __future__ import annotations

from kvwatch.engines import ENGINES, detect_engine, layers_of, reuses_of

#: The head the rule decides on at the latest: this many lines, or this much text (characters, each
#: line's newline counted).
HEAD_LINES = 2000
HEAD_BYTES = 64 * 1024
#: How often the sniffs are asked past the first lines (see above).
EVERY = 64


def carried() -> frozenset[str]:
    """The engines whose lines another engine's log carries or embeds (their sniff is not conclusive
    before the head is full)."""
    out: set[str] = set()
    for name in ENGINES:
        out.update(layers_of(name))
        reused = reuses_of(name)
        if reused:
            out.add(reused)
    return frozenset(out)


class Detector:
    """The rule above, fed one line at a time: `feed` until `decided`, or `end` at the end of input."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._size = 0
        self._carried = carried()
        self.decided = False
        self.engine: str | None = None  # (once decided: None when no engine recognised the head)
        #: What the sniffs said of the lines at the last asking (an engine they name before the rule
        #: decides is the one the daemon parses with meanwhile, provisionally).
        self.found: str | None = None

    @property
    def lines(self) -> int:
        """How many lines it was fed."""
        return len(self._parts)

    def feed(self, text: str) -> bool:
        """Take the next line; whether the rule has decided (then `engine` holds its answer)."""
        if self.decided:
            return True
        self._parts.append(text + "\n")
        self._size += len(text) + 1
        count = len(self._parts)
        full = count >= HEAD_LINES or self._size >= HEAD_BYTES
        if not (full or count <= EVERY or count % EVERY == 0):
            return False
        found = self.found = detect_engine("".join(self._parts))
        if full or (found is not None and found not in self._carried):
            return self._decide(found)
        return False

    def now(self) -> str | None:
        """What the rule says of the lines fed so far if they were the whole input (not deciding)."""
        if self.decided:
            return self.engine
        return detect_engine("".join(self._parts)) if self._parts else None

    def end(self) -> str | None:
        """The end of input: decide on every line fed (if not yet decided)."""
        if not self.decided:
            self._decide(self.now())
        return self.engine

    def _decide(self, engine: str | None) -> bool:
        self.decided = True
        self.engine = engine
        self._parts = []
        return True


def detect_lines(lines: list[str]) -> str | None:
    """The rule's answer for a whole input's lines (None: no engine recognised them)."""
    detector = Detector()
    for text in lines:
        if detector.feed(text):
            break
    return detector.end()
