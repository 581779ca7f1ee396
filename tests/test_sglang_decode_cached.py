"""SGLang's new cached-token keys: main's decode `#cached-token` (a snapshot), PR #26976's prefill tiers."""

from __future__ import annotations

from pathlib import Path

from kvwatch.cli import main
from kvwatch.engines.sglang.events import SglangDecode, SglangPrefill
from kvwatch.engines.sglang.parser import SglangParser
from kvwatch.model import LogLine, UnreadFields
from kvwatch.parsers.base import ParserSettings

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
# a PD decode instance with --disaggregation-decode-enable-radix-cache, as main's report_decode_stats
# writes its line (scheduler_components/metrics_reporter.py), and a prefill line of 0.5.23's shape
PREFILL = (
    "[2026-12-05 12:36:35] Prefill batch, #new-seq: 1, #new-token: 300, #cached-token: 1200, "
    "token usage: 0.02, #running-req: 0, #queue-req: 0, input throughput (token/s): 150.00, "
)
DECODES = [
    "[2026-12-05 12:36:36] Decode batch, #running-req: 2, #cached-token: 2400, #token: 3100, "
    "token usage: 0.05, pre-allocated usage: 0.00, #prealloc-req: 0, #transfer-req: 0, "
    "#retracted-req: 0, cuda graph: True, gen throughput (token/s): 88.10, #queue-req: 0",
    "[2026-12-05 12:36:37] Decode batch, #running-req: 1, #cached-token: 1200, #token: 1600, "
    "token usage: 0.03, pre-allocated usage: 0.00, #prealloc-req: 0, #transfer-req: 0, "
    "#retracted-req: 0, cuda graph: True, gen throughput (token/s): 91.40, #queue-req: 0",
]


def events(*texts: str) -> list[object]:
    """What a fresh SGLang parser makes of the lines."""
    parser = SglangParser("s", ParserSettings())
    out: list[object] = []
    for text in texts:
        result = parser.parse(LogLine("s", text))
        out.extend(result if isinstance(result, list) else [result])
    return out


def test_the_decode_cached_token_is_a_known_key_read_as_a_snapshot() -> None:
    """`#cached-token` on a decode line is read (no unread key) and kept apart from the prefill's."""
    got = events(PREFILL, *DECODES)
    decodes = [e for e in got if isinstance(e, SglangDecode)]
    assert [(d.cached_tokens, d.running, d.family) for d in decodes] == [
        (2400, 2, "main>0.5.23"),
        (1200, 1, "main>0.5.23"),
    ]
    assert [p.cached for p in got if isinstance(p, SglangPrefill)] == [1200]
    assert not [e for e in got if isinstance(e, UnreadFields)]


def test_decode_lines_of_0_5_23_carry_no_cached_tokens() -> None:
    """A decode line without the key says nothing of cached tokens (None, not 0)."""
    old = DECODES[0].replace("#cached-token: 2400, ", "")
    (decode,) = [e for e in events(old) if isinstance(e, SglangDecode)]
    assert decode.cached_tokens is None


def test_replay_counts_prefill_hits_once_and_shows_the_decode_snapshot(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Replayed, the prefill counter holds the prefill's 1200 only; the decode gauge its last value."""
    log = tmp_path / "pd.log"
    log.write_text("\n".join([PREFILL, *DECODES]) + "\n", encoding="utf-8")
    assert 0 == main(["replay", "--format", "golden", "--year", "2026", "--engine", "sglang", str(log)])
    out = capsys.readouterr().out
    assert 'kvwatch_sglang_prefill_cached_tokens_total{engine="0",source="pd"} 1200' in out
    assert 'kvwatch_sglang_decode_cached_tokens{engine="0",source="pd"} 1200' in out


def test_the_real_run_in_main_shape_gives_the_real_runs_figures() -> None:
    """samples/sglang-main-decode-cached-token.log (0.5.23's capture in main's decode shape) replays to
    the capture's own golden, plus the decode gauge at 0."""

    def golden(name: str) -> list[str]:
        text = (SAMPLES / f"{name}.golden").read_text(encoding="utf-8").replace(name, "X")
        return text.splitlines()

    main_shape = golden("sglang-main-decode-cached-token")
    gauge = 'kvwatch_sglang_decode_cached_tokens{engine="0",source="X"} 0'
    assert gauge in main_shape
    assert [line for line in main_shape if line != gauge] == golden("sglang-0.5.23-real-healthy")


def test_the_real_run_with_pr_26976_tier_keys_gives_the_real_runs_figures() -> None:
    """samples/sglang-pr26976-tier-keys.log (0.5.23's capture with `#cached-token-device/-host` on every
    prefill line) replays to the capture's own golden: the keys are known, nothing is dropped."""

    def golden(name: str) -> list[str]:
        return (SAMPLES / f"{name}.golden").read_text(encoding="utf-8").replace(name, "X").splitlines()

    assert golden("sglang-pr26976-tier-keys") == golden("sglang-0.5.23-real-healthy")
    text = (SAMPLES / "sglang-pr26976-tier-keys.log").read_text(encoding="utf-8")
    got = events(*text.splitlines())
    assert not [e for e in got if isinstance(e, UnreadFields)]
    assert sum(isinstance(e, SglangPrefill) for e in got) == text.count("#cached-token-device")
