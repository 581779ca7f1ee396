"""`kvwatch check-config --try LINE`: what each configured engine makes of a line, pattern by pattern."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields, replace

from kvwatch.engines.custom import make_events
from kvwatch.engines.custom.parser import CustomParser
from kvwatch.engines.custom.spec import EngineSpec
from kvwatch.model import LogLine
from kvwatch.parsers.base import ParseError, ParserSettings
from kvwatch.times import iso

_SKIP = ("source", "time")


def describe(specs: Sequence[EngineSpec], lines: Sequence[str]) -> str:
    """One paragraph per line: per engine and pattern, the event and its fields, or why nothing."""
    if not specs:
        return "the config defines no [[engine]]\n"
    out: list[str] = []
    for text in lines:
        out.append(f"line: {text}")
        for spec in specs:
            if not any(m in text for m in spec.markers):
                out.append(f"  {spec.name}: holds none of its markers ({', '.join(map(repr, spec.markers))})")
                continue
            for pattern in spec.patterns:
                alone = replace(spec, patterns=(pattern,))
                result = CustomParser(alone, make_events(alone), "try", ParserSettings()).parse(
                    LogLine("try", text)
                )
                head = f"  {spec.name} / {pattern.name}:"
                if result is None:
                    out.append(f"{head} no match")
                elif isinstance(result, ParseError):
                    out.append(f"{head} matched, but {result.reason}")
                elif not result:
                    out.append(
                        f"{head} matched; no {pattern.event} yet (a cumulative number's first reading?)"
                    )
                for event in result if isinstance(result, list) else ():
                    shown = ", ".join(
                        f"{f.name}={getattr(event, f.name)!r}"
                        for f in fields(event)  # type: ignore[arg-type]
                        if f.name not in _SKIP
                    )
                    kind = getattr(event, "kind", None) if not hasattr(event, "labels") else pattern.event
                    out.append(f"{head} {kind} at {iso(event.time)}: {shown}")
    return "\n".join(out) + "\n"
