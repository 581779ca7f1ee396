"""`docker compose logs` (and `docker compose up`) output: `<service, padded> | <line>`.

Compose v2 (`cmd/formatter/logs.go`, `presenter.setPrefix`) writes each line of a container's output
after the prefix `fmt.Sprintf("%-<width>s | ", name)`, `width` one more than the longest name seen so
far (so the padding changes as services join); on a terminal (`--ansi auto`) or with `--ansi always`
the prefix is wrapped in a colour (`colors.go`: `\\x1b[36m` ... `\\x1b[0m`, `36;1` for the intense
ones). With `-t`/`--timestamps` an RFC 3339 time and a space follow the prefix (docker's own stamp in
older releases, compose's `RFC3339NanoFixed` since 2.2x): read as docker logs -t's (one definition,
`docker_json.split_logs_t`). Compose v1 (`docker-compose`, Python) printed the same prefix. The name
(a service's container, `vllm-1`, `llama_1`, or a `container_name`) becomes the line's origin: one file
carries several services' lines, each its own process (kvwatch.model.LogLine). A line without the
prefix (`Attaching to ...`, a `⦿` watch message, a status line) is handed on as it is.
"""

from __future__ import annotations

import re

from kvwatch.model import LogLine
from kvwatch.sources.docker_json import split_logs_t
from kvwatch.sources.sniffing import most_lines_match

#: The prefix: an optional colour, the name, its padding and ` | `, the colour's reset.
_PREFIX = re.compile(rb"(?:\x1b\[[0-9;]*m)?([A-Za-z0-9][\w.-]*)(?:\x1b\[[0-9;]*m)? +\| (?:\x1b\[[0-9;]*m)?")


def split_compose(raw: bytes) -> tuple[bytes, float | None, str | None]:
    """One physical line (without its `\\n`): its message, the `-t` time (None: not printed), the service
    name (None: the line has no compose prefix, and is the message as it is)."""
    found = _PREFIX.match(raw)
    if found is None:
        return raw, None, None
    body, stamp = split_logs_t(raw[found.end() :])
    return body, stamp, found.group(1).decode("ascii")


def compose_line(source: str, raw: bytes) -> LogLine:
    """One physical line as a LogLine: its message, time and service (as the line's origin)."""
    body, stamp, service = split_compose(raw)
    return LogLine(source, body.decode("utf-8", "replace").removesuffix("\r"), stamp, service)


def looks_like_compose(head: bytes) -> bool:
    """Whether most of the first lines of a file carry a compose prefix."""
    return most_lines_match(head, _PREFIX)


def head_text(lines: list[bytes]) -> str:
    """The messages of a head's lines (for engine detection)."""
    return "\n".join(split_compose(line)[0].decode("utf-8", "replace") for line in lines)
