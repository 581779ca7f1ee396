"""Two llama-servers in one journal: each process keeps its own slots, clock and requests."""

from __future__ import annotations

from pathlib import Path

from kvwatch.engines.llamacpp.events import LlamaRequest
from kvwatch.engines.llamacpp.parser import LlamacppParser
from kvwatch.engines.llamacpp.records import Requests
from kvwatch.model import LogLine
from kvwatch.parsers.base import ParserSettings

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
JOURNAL = SAMPLES / "llamacpp-journal-two-servers.log"
#: The journal's two servers (scripts/samples/llamacpp/journal.py) and the real capture each one is.
SERVERS = {
    "llama-server[4101]": SAMPLES / "llamacpp-healthy-two-slots.log",
    "llama-server[4377]": SAMPLES / "llamacpp-varying-header-chat.log",
}


def requests(lines: list[LogLine]) -> list[LlamaRequest]:
    """The request records a fresh parser makes of `lines`, the flush's included."""
    parser = LlamacppParser("s", ParserSettings(year=2026))
    events: list[object] = []
    for line in lines:
        result = parser.parse(line)
        if isinstance(result, list):
            events += result
    events += parser.flush()
    return [event for event in events if isinstance(event, LlamaRequest)]


def figures(records: list[LlamaRequest]) -> list[tuple[int, int, int | None, int | None, str]]:
    """What a request's figures are, in order: slot, task, prompt, reused, pick."""
    return [(r.slot, r.task, r.prompt_tokens, r.reused_tokens, r.selection) for r in records]


def read(path: Path) -> list[LogLine]:
    """A file's lines as a source without transport time gives them."""
    return [LogLine("s", text) for text in path.read_text(encoding="utf-8").splitlines()]


def test_each_server_of_a_journal_gets_the_figures_it_has_alone() -> None:
    """Interleaved in one journal, each `name[pid]` server's requests are what its own log alone gives."""
    mixed = requests(read(JOURNAL))
    assert {r.server for r in mixed} == set(SERVERS)
    for server, alone in SERVERS.items():
        own = figures([r for r in mixed if r.server == server])
        assert own == figures(requests(read(alone))), server
    # the truth of the captures (samples/README.llamacpp.md): 5564 of 7212 and 408 of 7686 reused
    by_server = {s: [r for r in mixed if r.server == s] for s in SERVERS}
    assert [sum(r.reused_tokens or 0 for r in by_server[s]) for s in SERVERS] == [5564, 408]
    assert [sum(r.prompt_tokens or 0 for r in by_server[s]) for s in SERVERS] == [7212, 7686]


def test_a_transport_named_origin_splits_plain_lines() -> None:
    """Lines without a prefix but with a source-named origin (journald's _PID) are kept apart by it."""
    lines: list[LogLine] = []
    for origin, path in SERVERS.items():
        lines += [LogLine("s", line.text, None, origin) for line in read(path)[:260]]
    # the second server's first lines come among the first's, as a journal interleaves them
    first, second = lines[:260], lines[260:]
    mixed = [line for pair in zip(first, second, strict=True) for line in pair]
    got = requests(mixed)
    for origin, path in SERVERS.items():
        alone = requests(read(path)[:260])
        assert figures([r for r in got if r.server == origin]) == figures(alone), origin


def test_conversations_are_numbered_per_server() -> None:
    """Two servers' slot 0 hold two conversations: each record names its server's."""
    adapter = Requests()
    names = set()
    for record in requests(read(JOURNAL)):
        _, converted = adapter.convert(record)
        assert converted is not None
        names.add(converted.conversation)
    assert "llama-server[4101] slot 0 #1" in names and "llama-server[4377] slot 0 #1" in names


def test_a_saved_state_keeps_each_server_stream() -> None:
    """A snapshot taken mid-journal and restored finishes every server's requests as one run does."""
    lines = read(JOURNAL)
    whole = figures(requests(lines))
    cut = len(lines) // 3
    first = LlamacppParser("s", ParserSettings(year=2026))
    events: list[object] = []
    for line in lines[:cut]:
        result = first.parse(line)
        if isinstance(result, list):
            events += result
    second = LlamacppParser("s", ParserSettings(year=2026))
    second.restore(first.snapshot())
    for line in lines[cut:]:
        result = second.parse(line)
        if isinstance(result, list):
            events += result
    events += second.flush()
    assert figures([e for e in events if isinstance(e, LlamaRequest)]) == whole


def test_replay_text_names_each_request_s_server(capsys) -> None:  # type: ignore[no-untyped-def]
    """`kvwatch replay`'s request table notes the server of each request of a journal of several."""
    from kvwatch.cli import main

    assert 0 == main(["replay", "--year", "2026", str(JOURNAL)])
    rows = [line for line in capsys.readouterr().out.splitlines() if " lru " in line or " lcp " in line]
    assert len(rows) == 20
    assert {row.rsplit("server=", 1)[1] for row in rows} == set(SERVERS)
