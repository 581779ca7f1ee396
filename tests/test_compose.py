"""`docker compose logs` output (a source's framing, for every engine): told by content, the service's
prefix and colour stripped, `-t` times read, the service kept as the line's origin; every sample framed
so replays as the unframed log does."""

from __future__ import annotations

import gzip
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from corpora import sample_logs
from cri_helpers import Line, sample_lines
from test_cri import START, TRANSPORT_TIMED, replay, unframed_replay
from test_wild_framings import replay as replay_json
from test_wild_framings import value

from kvwatch.model import LogLine
from kvwatch.sources.compose import split_compose
from kvwatch.sources.fileframing import FileFraming
from kvwatch.sources.framing import Framer, sniff
from kvwatch.sources.openfile import FileCounters

WHEN = datetime(2026, 8, 20, 9, 30, 1, 500000, tzinfo=timezone.utc)
#: compose's colours (cmd/formatter/colors.go): the rainbow's first, an intense one.
CYAN, INTENSE_YELLOW, RESET = "\x1b[36m", "\x1b[33;1m", "\x1b[0m"


def compose_prefix(service: str, width: int, colour: str | None = None) -> bytes:
    """The prefix compose v2 writes (`presenter.setPrefix`): the name padded to `width`, ` | `, coloured
    on a terminal."""
    prefix = f"{service:<{width}} | "
    return (prefix if colour is None else colour + prefix + RESET).encode()


def compose_stamp(when: datetime) -> bytes:
    """`-t`'s time (jsonmessage.RFC3339NanoFixed, in UTC) and its space."""
    utc = when.astimezone(timezone.utc)
    return (utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond * 1000:09d}Z ").encode()


def composed(lines: list[Line], prefix: bytes, *, stamped: bool) -> bytes:
    """Lines as `docker compose logs` prints them (`-t`: each stamped with its time, or START plus a
    millisecond per line before it)."""
    out = []
    for index, (message, _, when) in enumerate(lines):
        stamp = compose_stamp(when or START + timedelta(milliseconds=index)) if stamped else b""
        out.append(prefix + stamp + message.removesuffix(b"\r") + b"\n")
    return b"".join(out)


def test_the_prefix_its_colour_and_the_time_are_read() -> None:
    """A plain, a coloured and a stamped line give the message, the `-t` time and the service; a line
    without the prefix is the message as it is."""
    assert split_compose(b"vllm-1  | INFO 08-20 hello") == (b"INFO 08-20 hello", None, "vllm-1")
    coloured = compose_prefix("sglang", 8, INTENSE_YELLOW) + b"[2026-08-20 09:30:01] hi"
    assert split_compose(coloured) == (b"[2026-08-20 09:30:01] hi", None, "sglang")
    stamped = compose_prefix("llama_1", 9, CYAN) + compose_stamp(WHEN) + b"slot x"
    assert split_compose(stamped) == (b"slot x", WHEN.timestamp(), "llama_1")
    assert split_compose(b"Attaching to vllm-1, db-1") == (b"Attaching to vllm-1, db-1", None, None)
    assert split_compose(b"db-1  | ") == (b"", None, "db-1")


def test_sniff_tells_compose_from_plain_and_docker_logs_t() -> None:
    """Most of the first lines under a service's prefix make a compose log; engine lines that hold ` | `
    (llama.cpp's slot lines) do not."""
    head = b"Attaching to vllm-1\n" + b"vllm-1  | INFO 08-20 09:30:01 hello\n" * 3
    assert sniff(head) == "compose"
    assert sniff(compose_prefix("ollama", 7, CYAN) + b"time=2026 msg=x\n") == "compose"
    assert sniff(b"slot launch_slot_: id  0 | task 0 | processing task\n" * 3) == "plain"
    assert sniff(b"srv  update_slots: id  0 | task 0 | x\n") == "plain"
    assert sniff(b"2026-08-20T09:30:01.500000000Z INFO hello\n" * 3) == "docker-t"


def test_the_daemon_frames_compose_lines_as_replay_does() -> None:
    """The live framing (a followed file or stdin): a line holding no marker is counted, the rest carry
    their message, `-t` time and service; replay's framer gives the same lines."""
    db = compose_prefix("db-1", 7, CYAN) + compose_stamp(WHEN) + b"LOG:  checkpoint starting"
    raw = [
        b"Attaching to vllm-1, db-1",
        compose_prefix("vllm-1", 7, CYAN) + compose_stamp(WHEN) + b"INFO Avg prompt throughput: 1",
        *[db] * 8,
    ]
    counters = FileCounters()
    framing = FileFraming("s", 1 << 20, counters, markers=("Avg prompt",))
    line = LogLine("s", "INFO Avg prompt throughput: 1", WHEN.timestamp(), "vllm-1")
    assert framing.frame(raw) == [1, line, 8]
    assert framing.framing == "compose" and counters.malformed == 0
    framer = Framer("s", "compose", ("Avg prompt",), 1 << 20)
    assert framer.chunk(b"\n".join(raw) + b"\n") == [1, line, 8]
    assert [*framer.feed(raw[1])] == [line]


def test_two_services_lines_interleaved_are_two_servers(tmp_path: Path) -> None:
    """Two llama-servers under one compose log, their lines interleaved (same slot, same task ids): each
    service's lines are its own stream, so both requests are read whole."""
    lines = [
        "slot launch_slot_: id  0 | task 0 | processing task, is_child = 0",
        "slot print_timing: id  0 | task 0 |",
        "prompt eval time =      68.80 ms /    {n} tokens (    2.29 ms per token,   436.05 tokens"
        " per second)",
        "       eval time =       0.00 ms /     1 tokens (    0.00 ms per token, 1000000.00 tokens"
        " per second)",
        "      total time =      68.80 ms /    {m} tokens",
        "slot      release: id  0 | task 0 | stop processing: n_tokens = {n}, truncated = 0",
    ]  # fmt: skip
    text = "".join(
        compose_prefix(service, 8, CYAN if service == "llama-a" else None).decode()
        + line.format(n=n, m=n + 1)
        + "\n"
        for line in lines
        for service, n in (("llama-a", 30), ("llama-b", 50))
    )
    report = replay_json(tmp_path, text)
    assert value(report, "kvwatch_llamacpp_requests_total") == 2
    assert value(report, "kvwatch_llamacpp_prompt_tokens_total") == 80


@pytest.mark.parametrize("log", sample_logs(), ids=lambda p: p.name)
def test_every_sample_under_compose_replays_as_the_unframed_log(
    log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Printed by `docker compose logs` (monochrome, and coloured with `-t` times as on a terminal), a
    sample replays to the metrics and alerts of the unframed log; compressed too."""
    lines = sample_lines(log)
    assert lines
    name = log.name.removesuffix(".gz").removesuffix(".1")
    expected = unframed_replay(log, lines, tmp_path, capsys)
    variants = {
        "plain": composed(lines, compose_prefix("engine", 8), stamped=False),
        "tty-t": composed(lines, compose_prefix("engine-1", 12, CYAN), stamped=True),
    }
    for variant, data in variants.items():
        path = tmp_path / variant / name
        path.parent.mkdir()
        path.write_bytes(data)
        if variant == "plain" and log.name in TRANSPORT_TIMED:
            continue  # (its lines need a transport time: only the stamped one has it)
        assert replay(path, capsys) == expected, variant
    zipped = tmp_path / "gz" / (name + ".1.gz")
    zipped.parent.mkdir()
    zipped.write_bytes(gzip.compress(variants["tty-t"]))
    assert replay(zipped, capsys) == expected
