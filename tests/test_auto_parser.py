"""`engine = "auto"`: the held lines count as the chosen parser counts them, and the prefilter follows."""

from __future__ import annotations

from corpora import SAMPLES

from kvwatch.daemon.sources import AutoParser
from kvwatch.engines import make_parser
from kvwatch.model import LogLine, SourceCounts
from kvwatch.parsers.base import ParseResult, ParserSettings
from kvwatch.parsers.run import SourceRun

SETTINGS = ParserSettings(year=2026)
CUT = b"Engine 000: Avg prompt throughput: 1.0 tokens/s, Running: x reqs"


def counts_of(parser: object, lines: list[bytes], batch: int) -> SourceCounts:
    """The counts after feeding `lines` in batches, as the daemon does (settling an auto parser)."""
    run = SourceRun("s", parser, SourceCounts())  # type: ignore[arg-type]
    for start in range(0, len(lines), batch):
        run.feed_raw(lines[start : start + batch], 1.0)
        if isinstance(parser, AutoParser):
            run.counts.add(parser.settle())
    run.parser.flush()
    if isinstance(parser, AutoParser):
        run.counts.add(parser.settle())
    return run.counts


def test_held_lines_are_counted_as_the_chosen_parser_counts_them() -> None:
    """Recognised lines and parse errors among the held lines: the same totals as the engine named."""
    for name, engine in (("vllm-write-only-offload", "vllm"), ("llamacpp-healthy-two-slots", "llamacpp")):
        lines = (SAMPLES / f"{name}.log").read_bytes().splitlines()
        if engine == "vllm":  # (a parse error among the held lines)
            lines.insert(3, b"(APIServer pid=1) INFO 08-18 01:19:40 [loggers.py:310] " + CUT)
        named = counts_of(make_parser(engine, "s", SETTINGS), lines, 7)
        assert named.recognized > 0 and named.errors == (engine == "vllm")
        for batch in (1, 7, len(lines)):  # decided mid-batch, at a batch's end, or only at the end
            auto = counts_of(AutoParser("s", SETTINGS), lines, batch)
            assert (named.lines, named.recognized, named.errors) == (auto.lines, auto.recognized, auto.errors)


def test_a_few_lines_decided_only_at_the_end_are_counted() -> None:
    """Fewer lines than it takes to decide: flush() decides, and settle() counts every one."""
    line = (  # (a stats message without vLLM's header: nothing to tell the engine by)
        b"Engine 000: Avg prompt throughput: 1.0 "
        b"tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache "
        b"usage: 4.0%, Prefix cache hit rate: 50.0%"
    )
    auto = AutoParser("s", SETTINGS)
    run = SourceRun("s", auto, SourceCounts())
    assert [] == run.feed_raw([b"nothing to see", line], 1.0)  # (too little to tell the engine: held)
    events = auto.flush()
    run.counts.add(auto.settle())
    assert (1, 2, 1, 0) == (len(events), run.counts.lines, run.counts.recognized, run.counts.errors)


def test_once_decided_only_the_lines_holding_a_marker_are_parsed() -> None:
    """The raw prefilter takes the chosen parser's markers: other lines are counted, not parsed."""
    lines = (SAMPLES / "vllm-write-only-offload.log").read_bytes().splitlines()
    auto = AutoParser("s", SETTINGS)
    run = SourceRun("s", auto, SourceCounts())
    run.feed_raw(lines[:300], 1.0)
    assert auto.inner is not None and auto.markers
    parsed: list[str] = []
    parse = auto.inner.parse

    def noting(line: LogLine) -> ParseResult:
        parsed.append(line.text)
        return parse(line)

    auto.inner.parse = noting  # type: ignore[method-assign]
    run.feed_raw(lines[300:], 1.0)
    assert parsed and all(any(m in text for m in auto.markers) for text in parsed)
    assert len(parsed) < len(lines[300:]) / 2


def test_the_chosen_engines_options_reach_its_parser() -> None:
    """An auto source's `[source.usage]` mapping is handed to the usage parser once it is chosen."""
    from kvwatch.engines.usage.parser import UsageMapping

    line = (SAMPLES / "usage-anthropic-correct.log").read_text().splitlines()[0]
    mapped = AutoParser("s", SETTINGS, {"usage": UsageMapping(model="route")})
    plain = AutoParser("s", SETTINGS)
    models = []
    for parser in (mapped, plain):
        events = [*(parser.parse(LogLine("s", line)) or []), *parser.flush()]  # type: ignore[misc]
        models += [event.model for event in events]
    assert ["/v1/messages", "claude-sonnet-4-5-20250929"] == models
