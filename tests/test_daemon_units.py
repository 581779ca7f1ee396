"""The daemon's pure parts: alert state and notification rules, detector settings, logging, the CLI."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from notify_helpers import Receiver

from kvwatch.alerts import AlertBook
from kvwatch.assets import asset_bytes
from kvwatch.cli import main
from kvwatch.config import parse_config
from kvwatch.config.types import ConfigError
from kvwatch.daemon.live_alerts import LiveAlerts
from kvwatch.daemon.log import JournalFormatter, RateLimit
from kvwatch.daemon.setup import prepare
from kvwatch.model import Finding

NOW = 1_800_000_000.0


class Sink:
    """Stands in for a Delivery: records what it is given."""

    name = "sink"

    def __init__(self) -> None:
        """Nothing yet."""
        from kvwatch.notify.routing import Route

        self.route = Route()
        self.got: list[tuple[str, str]] = []

    def enqueue(self, alert: object) -> None:
        """Record the alert."""
        self.got.append((alert.alert, alert.state))  # type: ignore[attr-defined]


def finding() -> Finding:
    """A write_only_offload finding."""
    return Finding("write_only_offload", (("source", "v"),), "warning", "s", "c", "f", {})


def live(tmp_path: Path, now: list[float]) -> tuple[LiveAlerts, AlertBook, Sink]:
    """A LiveAlerts on a fresh book with a recording delivery and a settable clock."""
    book = AlertBook()
    alerts = LiveAlerts(tmp_path, book, clock=lambda: now[0])
    alerts.load()
    sink = Sink()
    alerts.deliveries = [sink]  # type: ignore[list-item]
    return alerts, book, sink


def test_first_start_records_old_transitions_without_notifying(tmp_path: Path) -> None:
    """At first start, an alert whose event time is over 15 min old is recorded, not sent."""
    now = [NOW]
    alerts, book, sink = live(tmp_path, now)
    alerts.handle(book.update([finding()], NOW - 3600))
    assert ([], ["write_only_offload{source=v}"]) == (sink.got, list(alerts.sent))


def test_recent_transitions_are_sent_once_then_repeated_after_the_interval(tmp_path: Path) -> None:
    """A fresh alert is sent; the next tick sends nothing; 4 h later it is sent again."""
    now = [NOW]
    alerts, book, sink = live(tmp_path, now)
    alerts.handle(book.update([finding()], NOW - 60))
    alerts.handle(book.update([finding()], NOW))
    now[0] = NOW + 4 * 3600
    alerts.handle(book.update([finding()], now[0]))
    assert [("write_only_offload", "firing")] * 2 == sink.got


def test_a_restart_neither_resends_nor_forgets(tmp_path: Path) -> None:
    """The state file restores the book and what was sent: no second notification, still firing."""
    now = [NOW]
    alerts, book, _ = live(tmp_path, now)
    alerts.handle(book.update([finding()], NOW - 60))
    again, book2, sink2 = live(tmp_path, now)
    again.handle(book2.update([], NOW + 200))  # windows empty after a restart: held by the grace
    assert ([], False, 1) == (sink2.got, again.first_start, len(book2.firing()))


def test_detector_settings_come_from_the_config_with_exact_errors(tmp_path: Path) -> None:
    """`[detectors.x]` sets fields; unknown detectors, settings and wrong types name the field."""
    good = parse_config({"detectors": {"pinned_cache": {"min_share": 1, "enabled": False}}}, tmp_path)
    settings = prepare(good).detectors.pinned_cache_length
    assert (1.0, False) == (settings.min_share, settings.enabled)
    bad = {"detectors": {"nope": {}, "no_signal": {"silence": "x", "other": 1}}}
    with pytest.raises(ConfigError) as err:
        prepare(parse_config(bad, tmp_path))
    assert [
        'detectors.nope: unknown detector "nope" (known: engine_start_failed, format_drift, '
        "hicache_storage_unused, hit_rate_gap, "
        "hit_rate_low, no_signal, offload_retrieve_failed, pinned_cache, pinned_cache_length, "
        "prefix_cache_disabled, "
        "prefix_hit_rate_low, prefix_reuse, prefix_reuse_broken, probe_prefix_miss, usage_double_counting, "
        "write_only_offload)",
        "detectors.no_signal.silence: must be a number",
        "detectors.no_signal.other: unknown setting",
    ] == err.value.problems
    with pytest.raises(ConfigError) as err:
        prepare(parse_config({"detectors": {"pinned_cash": {}}}, tmp_path))
    assert ['detectors.pinned_cash: unknown detector "pinned_cash"; did you mean "pinned_cache"?'] == (
        err.value.problems
    )


def test_detector_thresholds_are_checked_with_the_field_and_reason(tmp_path: Path) -> None:
    """The waste and conversation rules' keys have defaults, take values, and refuse unusable ones."""
    defaults = prepare(parse_config({}, tmp_path)).detectors
    assert (4096, 3, 3, 2) == (
        defaults.prefix_reuse_broken.large_prompt,
        defaults.prefix_reuse_broken.waste_requests,
        defaults.pinned_cache_length.conversation_requests,
        defaults.pinned_cache_length.same_within,
    )
    good = {"prefix_reuse": {"large_prompt": 8192}, "pinned_cache_length": {"conversation_requests": 4}}
    chosen = prepare(parse_config({"detectors": good}, tmp_path)).detectors
    assert (8192, 4) == (
        chosen.prefix_reuse_broken.large_prompt,
        chosen.pinned_cache_length.conversation_requests,
    )
    bad = {
        "prefix_reuse": {"large_prompt": 0, "waste_requests": 7},
        "pinned_cache": {"conversation_requests": 1, "same_within": -1, "block_size": 2.5},
    }
    with pytest.raises(ConfigError) as err:
        prepare(parse_config({"detectors": bad}, tmp_path))
    assert [
        "detectors.prefix_reuse.large_prompt: must be at least 1 (got 0)",
        "detectors.prefix_reuse.waste_requests: must be at most requests (6), got 7",
        "detectors.pinned_cache.block_size: must be an integer",
        "detectors.pinned_cache.conversation_requests: must be at least 2 (got 1)",
        "detectors.pinned_cache.same_within: must be at least 0 (got -1)",
    ] == err.value.problems


def test_rate_limit_holds_back_a_flood_and_says_how_many() -> None:
    """Over the burst a template is dropped; the first one after the period counts the suppressed."""
    clock = [0.0]
    limit = RateLimit(burst=2, period=10.0, clock=lambda: clock[0])
    record = lambda: logging.LogRecord("k", logging.WARNING, "", 0, "down", None, None)  # noqa: E731
    passed = [limit.filter(record()) for _ in range(5)]
    clock[0] = 11.0
    last = record()
    assert ([True, True, False, False, False], True) == (passed, limit.filter(last))
    assert "down (3 similar messages suppressed)" == last.msg


def test_journal_lines_carry_a_priority_and_no_time() -> None:
    """Under journald a warning is `<4>logger: message`."""
    record = logging.LogRecord("kvwatch", logging.WARNING, "", 0, "source a: down", None, None)
    assert "<4>kvwatch: source a: down" == JournalFormatter("%(name)s: %(message)s").format(record)


def root_unit(tmp_path: Path) -> Path:
    """A unit that runs kvwatch as root, unconfined: check-config judges it not the machine's own."""
    unit = tmp_path / "kvwatch.service"
    unit.write_text("[Service]\nExecStart=/opt/kvwatch/bin/kvwatch run --config /etc/kvwatch/kvwatch.toml\n")
    return unit


def check_config(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> tuple[int, str, str]:
    """`kvwatch check-config` on a config of `text`: (exit status, stdout, stderr)."""
    cfg = tmp_path / "kv.toml"
    cfg.write_text(text)
    status = main(["check-config", str(cfg), "--unit", str(root_unit(tmp_path))])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_check_config_prints_the_summary_or_each_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """check-config: exit 0 and the summary; exit 1 and each problem, never the URL."""
    notifier = '[[notifier]]\nname = "n"\ntype = "webhook"\nurl = "https://hooks.example/SECRET"\n'
    status, out, _ = check_config(tmp_path, capsys, notifier)
    assert 0 == status
    assert ("notifiers: 1" in out, "SECRET" in out) == (True, False)
    bad = '[[source]]\nname = "a"\ntype = "docker"\n[[notifier]]\nname = "n"\ntype = "webhook"\n'
    status, _, err = check_config(tmp_path, capsys, bad)
    assert 1 == status
    assert 'source[0].container: required for type "docker"' in err


def test_check_config_warns_of_each_silence_in_force_or_to_come(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """check-config names each silence that mutes alerts now or will (what, from and until when), and
    none that has ended; the example config's silence is commented out: no warning there."""
    silences = (
        '[[silence]]\nmatchers = { alert = "pinned_cache_length", source = "llama" }\n'
        'ends_at = 2999-12-31T17:00:00Z\ncomment = "upgrade planned"\n'
        '[[silence]]\nmatchers = { alert = "no_signal" }\nends_at = 2001-01-01T00:00:00Z\n'
        '[[silence]]\nmatchers = { alert = "write_only_offload" }\n'
        "starts_at = 2998-01-01T00:00:00Z\nends_at = 2998-01-02T00:00:00+01:00\n"
    )
    status, out, err = check_config(tmp_path, capsys, silences)
    assert 0 == status and "silences: 3" in out
    assert [
        'kvwatch: warning: silence[0] is in force: alerts with alert="pinned_cache_length", source="llama"'
        " are not notified until 2999-12-31T17:00:00Z (upgrade planned)",
        'kvwatch: warning: silence[2] starts 2998-01-01T00:00:00Z: alerts with alert="write_only_offload"'
        " will not be notified until 2998-01-01T23:00:00Z",
    ] == [line for line in err.splitlines() if "silence" in line]
    example = asset_bytes("kvwatch.example.toml").decode()
    _, _, err = check_config(tmp_path, capsys, example)
    assert "silence" not in err


@pytest.mark.slow
def test_an_unusable_state_dir_is_refused_at_start_and_noted_by_check_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """state_dir keeps positions, alert state and queued notifications: `kvwatch run` refuses to
    start without it (exit 1, one line naming it); check-config says so as a warning, exit 0, and
    leaves a state_dir that does not exist yet uncreated."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    cfg = tmp_path / "kv.toml"
    cfg.write_text(f'state_dir = "{blocker / "state"}"\n')
    assert 0 == main(["check-config", str(cfg), "--unit", str(root_unit(tmp_path))])
    captured = capsys.readouterr()
    assert f"state_dir: {blocker / 'state'}" in captured.out
    assert f"cannot create it ({blocker} is not a directory)" in captured.err
    argv = [sys.executable, "-m", "kvwatch", "run", "--config", str(cfg), "--listen", "127.0.0.1:0"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert 1 == done.returncode
    assert done.stderr.startswith(f"kvwatch: cannot start: state_dir {blocker / 'state'}: cannot write there")
    fresh = tmp_path / "new" / "state"
    cfg.write_text(f'state_dir = "{fresh}"\n')
    assert 0 == main(["check-config", str(cfg), "--unit", str(root_unit(tmp_path))])
    assert ("", False) == (capsys.readouterr().err, fresh.parent.exists())


def test_test_alert_prints_each_result_and_fails_if_one_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """test-alert sends the sample through each notifier: one line each; exit 1 when one failed."""
    with Receiver() as hook:
        cfg = tmp_path / "kv.toml"
        good = f'[[notifier]]\nname = "ok"\ntype = "webhook"\nurl = "{hook.base}/a"\n'
        cfg.write_text(good)
        assert 0 == main(["test-alert", "--config", str(cfg)])
        assert ("ok: ok\n", "kvwatch_test_alert") == (capsys.readouterr().out, hook.accepted()[0]["alert"])
        cfg.write_text(good + '[[notifier]]\nname = "bad"\ntype = "webhook"\nurl = "http://127.0.0.1:1/x"\n')
        assert 1 == main(["test-alert", "--config", str(cfg)])
        out = capsys.readouterr().out.splitlines()
        assert ["ok: ok", "bad: failed (connection)"] == [
            line.split(":", 2)[0] + ":" + line.split(":", 2)[1] for line in out
        ]


def test_alertmanager_alerts_outlive_the_repeat_interval(tmp_path: Path) -> None:
    """Firing alerts sent to Alertmanager carry endsAt 1.5 repeat intervals ahead, so they do not expire."""
    from kvwatch.config import load_config
    from kvwatch.daemon.setup import prepare

    path = tmp_path / "k.toml"
    path.write_text(
        '[alerting]\nrepeat_interval = 3600\n[[notifier]]\nname = "am"\ntype = "alertmanager"\n'
        'url = "http://127.0.0.1:9093"\n'
    )
    ((_, notifier),) = prepare(load_config(path)).notifiers
    assert 5400.0 == notifier.firing_ttl  # type: ignore[attr-defined]


def test_source_state_counts_malformed_entries_and_the_sources_own_restarts() -> None:
    """Malformed docker entries and container recreations reach /metrics, across a reopen."""
    from dataclasses import dataclass

    from prometheus_client import CollectorRegistry

    from kvwatch.daemon.feed import Feeder
    from kvwatch.daemon.metrics import SourceStateCollector
    from kvwatch.sources.settings import DockerSettings, SourceConfig

    @dataclass
    class Counters:
        """The counters a docker source keeps."""

        lines: int = 0
        malformed: int = 0

    class Stub:
        """A source that has seen 2 malformed entries and 1 recreation."""

        counters = Counters(lines=5, malformed=2)
        restarts = 1
        bytes_behind = 0
        error = None

    config = SourceConfig("vllm", "vllm", "docker", DockerSettings("vllm"))
    feeder = Feeder(config, lambda: None, lambda item: None)
    feeder.source = Stub()  # type: ignore[assignment]
    feeder.close()  # a reopen: the closed source's counts are kept
    feeder.source = Stub()  # type: ignore[assignment]
    registry = CollectorRegistry()
    registry.register(SourceStateCollector(lambda: [feeder], lambda: 0))
    labels = {"source": "vllm"}
    assert (4.0, 2.0) == (
        registry.get_sample_value("kvwatch_source_malformed_lines_total", labels),
        registry.get_sample_value("kvwatch_source_restarts_total", labels),
    )


def test_check_config_names_the_setting_a_notifier_url_comes_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A URL file that cannot be read is `url_file`'s problem; no URL at all says where one may come from."""
    monkeypatch.delenv("CREDENTIALS_DIRECTORY", raising=False)
    missing = tmp_path / "slack-url"
    notifiers = (
        f'[[notifier]]\nname = "a"\ntype = "slack"\nurl_file = "{missing}"\n'
        '[[notifier]]\nname = "b"\ntype = "webhook"\n'
    )
    status, _, err = check_config(tmp_path, capsys, notifiers)
    assert 1 == status
    assert f"  notifier[0].url_file: cannot read {missing}: No such file or directory\n" in err
    assert "  notifier[1].url: give url or url_file, or the file $CREDENTIALS_DIRECTORY/b\n" in err


def test_check_config_counts_the_detectors_that_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Detectors not listed in the config run with their defaults (prefix_hit_rate_low is off by
    default): the summary counts and names those that run."""
    status, out, _ = check_config(tmp_path, capsys, "")
    assert 0 == status
    assert (
        "detectors: 12 of 13 enabled: write_only_offload, pinned_cache_length, prefix_reuse_broken, "
        "no_signal, hit_rate_gap, usage_double_counting, prefix_cache_disabled, hicache_storage_unused, "
        "offload_retrieve_failed, engine_start_failed, format_drift, probe_prefix_miss; "
        "disabled: prefix_hit_rate_low\n"
    ) in out
    listed = "[detectors.pinned_cache]\nenabled = false\n[detectors.no_signal]\nenabled = true\n"
    status, out, _ = check_config(tmp_path, capsys, listed)
    assert 0 == status
    assert (
        "detectors: 11 of 13 enabled: write_only_offload, prefix_reuse_broken, no_signal, hit_rate_gap, "
        "usage_double_counting, prefix_cache_disabled, hicache_storage_unused, offload_retrieve_failed, "
        "engine_start_failed, format_drift, probe_prefix_miss; "
        "disabled: pinned_cache_length, prefix_hit_rate_low\n"
    ) in out
    assert "  pinned_cache: disabled\n  no_signal: enabled\n" in out


def test_run_exits_78_on_a_refused_config_so_the_unit_does_not_restart(tmp_path: Path) -> None:
    """A config that fails to load, or that prepare() refuses (a notifier without a URL), ends `run`
    with EX_CONFIG, the unit's RestartPreventExitStatus=; the problem is on stderr."""
    from kvwatch.cli import CONFIG_ERROR

    env = {k: v for k, v in os.environ.items() if k != "CREDENTIALS_DIRECTORY"}
    cfg = tmp_path / "kv.toml"
    for text, problem in [
        ("bogus = 1\n", 'unknown key "bogus" at top level'),
        ('[[notifier]]\nname = "pager"\ntype = "webhook"\n', "notifier[0].url: give url or url_file"),
    ]:
        cfg.write_text(f'state_dir = "{tmp_path / "state"}"\n{text}')
        argv = [sys.executable, "-m", "kvwatch", "run", "--config", str(cfg), "--listen", "127.0.0.1:0"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, env=env)
        assert (78, True) == (done.returncode, problem in done.stderr), done.stderr
    assert 78 == CONFIG_ERROR
