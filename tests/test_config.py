"""The config loader: defaults, the shipped example, and the exact sentence of every problem."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kvwatch.config import ConfigError, config_for_stdin, load_config, summarize
from kvwatch.config.types import ServerConfig
from kvwatch.detectors import ALERTS
from kvwatch.notify.secrets import Secret
from kvwatch.sources.settings import DockerSettings, FileSettings, JournaldSettings, StdinSettings

ROOT = Path(__file__).resolve().parent.parent
SLACK = "https://hooks.slack.com/services/T000/B000/XXXXSECRET"


def write(tmp_path: Path, text: str) -> Path:
    """Write a config file and return its path."""
    path = tmp_path / "kvwatch.toml"
    path.write_text(text)
    return path


def problems(tmp_path: Path, text: str) -> list[str]:
    """The problems load_config reports for `text` (fails if it loads)."""
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text))
    return info.value.problems


def test_example_config_loads() -> None:
    """The shipped, commented example is a valid config that uses every source type but stdin."""
    config = load_config(ROOT / "kvwatch" / "assets" / "kvwatch.example.toml")
    assert ServerConfig("127.0.0.1", 7433, None) == config.server
    assert ["docker", "file", "journald"] == [s.type for s in config.sources]
    assert ["write_only_offload", "pinned_cache"] == list(config.detectors)
    assert ["alertmanager"] == [n.name for n in config.notifiers]  # Slack needs the unit's drop-in
    assert () == config.silences  # (a commented example only: a silence copied unseen would mute alerts)


def test_state_dir_defaults_to_systemds_state_directory(tmp_path: Path) -> None:
    """No state_dir: `$STATE_DIRECTORY` (its first entry) when systemd sets it; a given one wins."""
    from kvwatch.config import parse_config

    env = {"STATE_DIRECTORY": "/var/lib/private/kvwatch:/var/lib/other"}
    assert Path("/var/lib/private/kvwatch") == parse_config({}, tmp_path, env=env).state_dir
    assert Path("/var/lib/kvwatch") == parse_config({}, tmp_path, env={}).state_dir
    assert Path("/var/lib/kvwatch") == parse_config({}, tmp_path, env={"STATE_DIRECTORY": "rel"}).state_dir
    given = parse_config({"state_dir": "/srv/kv"}, tmp_path, env=env)
    assert Path("/srv/kv") == given.state_dir


def test_empty_file_gives_the_defaults(tmp_path: Path) -> None:
    """An empty file is valid: loopback on the default port, state in /var/lib/kvwatch, no sources."""
    config = load_config(write(tmp_path, ""))
    assert (ServerConfig(), Path("/var/lib/kvwatch"), ()) == (
        config.server,
        config.state_dir,
        config.sources,
    )


def test_sources_of_each_type(tmp_path: Path) -> None:
    """Each type gets its settings object; relative paths are taken from the config's directory."""
    config = load_config(
        write(
            tmp_path,
            """
            [[source]]
            name = "a"
            type = "file"
            path = "logs/*.log"
            start_at = "beginning"
            [[source]]
            name = "b"
            engine = "vllm"
            type = "docker"
            container = "vllm"
            [[source]]
            name = "c"
            type = "journald"
            container_name = "gw"
            directory = "journal"
            tz = "Europe/Paris"
            year = 2025
            [[source]]
            name = "d"
            type = "stdin"
            """,
        )
    )
    assert [
        FileSettings(str(tmp_path / "logs/*.log"), "beginning"),
        DockerSettings("vllm"),
        JournaldSettings(None, "gw", tmp_path / "journal", None),
        StdinSettings(),
    ] == [s.settings for s in config.sources]
    assert ("auto", "Europe/Paris", 2025) == (
        config.sources[2].engine,
        config.sources[2].tz,
        config.sources[2].year,
    )


CASES = [
    # (config text, the exact problems)
    ('[[source]]\nname = "v"\ntype = "docker"', ['source[0].container: required for type "docker"']),
    (
        '[[source]]\nname = "v"\nengine = "vlm"\ntype = "stdin"',
        [
            "source[0].engine: must be one of auto, vllm, llamacpp, usage, sglang, ollama,"
            ' lmstudio, lmcache (got "vlm")'
        ],
    ),
    ("[server]\nport = 70000", ["server.port: must be an integer 1-65535"]),
    ("[server]\nport = true", ["server.port: must be an integer 1-65535"]),
    ('[server]\nport = "9100"', ["server.port: must be an integer 1-65535"]),
    (
        '[[source]]\nname = "vllm"\ntype = "stdin"\n[[source]]\nname = "x"\ntype = "stdin"\n'
        '[[source]]\nname = "vllm"\ntype = "stdin"',
        ['source[2].name: duplicate of source[0].name ("vllm")'],
    ),
    (
        '[[notifier]]\nname = "n"\ntype = "slack"\nurl = "https://x"\nurl_file = "f"',
        ["notifier[0].url: give url or url_file, not both"],
    ),
    ("sorce = 1", ['unknown key "sorce" at top level (did you mean "source"?)']),
    ("colour = 1", ['unknown key "colour" at top level']),
    (
        '[[source]]\nname = "v"\ntype = "file"\npth = "/x"',
        [
            'source[0].path: required for type "file"',
            'source[0].pth: unknown key (did you mean "path"?)',
        ],
    ),
    ('[[source]]\ntype = "stdin"', ["source[0].name: required"]),
    (
        '[[source]]\nname = "a b"\ntype = "stdin"',
        ['source[0].name: must match [A-Za-z0-9_-][A-Za-z0-9_.-]* (got "a b")'],
    ),
    ('[[source]]\nname = "v"', ["source[0].type: required"]),
    (
        '[[source]]\nname = "v"\ntype = "file"\npath = "/x"\ncontainer = "c"',
        ['source[0].container: not a setting of type "file"'],
    ),
    (
        '[[source]]\nname = "v"\ntype = "journald"',
        ['source[0].unit: required for type "journald" (or container_name)'],
    ),
    (
        '[[source]]\nname = "v"\ntype = "journald"\nunit = "u"\ncontainer_name = "c"',
        ["source[0].unit: give unit or container_name, not both"],
    ),
    (
        '[[source]]\nname = "v"\ntype = "stdin"\ntz = "Mars/Olympus"\nyear = 26',
        ["source[0].year: must be an integer 1970-2100", 'source[0].tz: unknown time zone "Mars/Olympus"'],
    ),
    (
        '[[source]]\nname = "v"\ntype = "file"\npath = "/x"\nstart_at = "now"',
        ['source[0].start_at: must be one of end, beginning (got "now")'],
    ),
    ('source = { name = "v" }', ["source: must be an array of tables ([[source]])"]),
    ("server = 3", ["server: must be a table ([server])"]),
    ("state_dir = 3", ["state_dir: must be a non-empty string"]),
    (
        "[detectors.pinned]\nenabled = 1\nwindow = [1]",
        [
            "detectors.pinned.enabled: must be true or false",
            "detectors.pinned.window: must be a string, number or boolean",
        ],
    ),
    ("[detectors]\npinned = 1", ["detectors.pinned: must be a table ([detectors.pinned])"]),
    (
        '[[notifier]]\nname = "n"\ntype = "pager"\nalerts = "A"\nmin_severity = "high"',
        [
            'notifier[0].type: must be one of slack, webhook, alertmanager (got "pager")',
            "notifier[0].alerts: must be a list of non-empty strings",
            'notifier[0].min_severity: must be one of info, warning, critical (got "high")',
        ],
    ),
    (
        '[[silence]]\nends_at = "tomorrow"',
        [
            "silence[0].matchers: required (at least one label)",
            "silence[0].ends_at: must be an RFC 3339 time with an offset, e.g. 2026-01-31T18:00:00Z",
        ],
    ),
    (
        "[[silence]]\nmatchers = { alert = 1 }\nends_at = 2026-01-01T00:00:00",
        [
            'silence[0].matchers: must be a non-empty table of label = "value" strings',
            "silence[0].ends_at: must be an RFC 3339 time with an offset, e.g. 2026-01-31T18:00:00Z",
        ],
    ),
    (
        '[[silence]]\nmatchers = { alert = "no_signal" }\nstarts_at = 2026-02-01T00:00:00Z\n'
        'ends_at = "2026-01-01T00:00:00Z"',
        ["silence[0].ends_at: must be after starts_at"],
    ),
    (
        '[[notifier]]\nname = "n"\ntype = "webhook"\nurl = "http://x"\n'
        'alerts = ["no_signal", "WriteOnlyOffload", "pinned_cache"]',
        [
            'notifier[0].alerts[1]: unknown alert "WriteOnlyOffload"; did you mean "write_only_offload"?',
            'notifier[0].alerts[2]: unknown alert "pinned_cache"; did you mean "pinned_cache_length"?',
        ],
    ),
    (
        '[[silence]]\nmatchers = { alert = "PinnedCacheThrash", source = "llama" }\n'
        "ends_at = 2026-01-01T00:00:00Z",
        ['silence[0].matchers.alert: unknown alert "PinnedCacheThrash"; did you mean "pinned_cache_length"?'],
    ),
    (
        '[[silence]]\nmatchers = { alertname = "zzz" }\nends_at = 2026-01-01T00:00:00Z',
        [
            'silence[0].matchers.alertname: unknown alert "zzz" (known: write_only_offload, '
            "pinned_cache_length, prefix_reuse_broken, no_signal, prefix_hit_rate_low, hit_rate_gap, "
            "usage_double_counting, prefix_cache_disabled, hicache_storage_unused, offload_retrieve_failed, "
            "engine_start_failed, format_drift, probe_prefix_miss)"
        ],
    ),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_problem_sentences(tmp_path: Path, text: str, expected: list[str]) -> None:
    """Each problem is one exact sentence naming the field and why."""
    assert expected == problems(tmp_path, text)


def test_alert_names_are_the_ones_the_detectors_raise() -> None:
    """ALERTS, which the config's alert names are checked against, is every `alert=` a detector sets."""
    raised = set()
    for module in (ROOT / "kvwatch" / "detectors").glob("*.py"):
        raised |= set(re.findall(r'\balert="(\w+)"', module.read_text(encoding="utf-8")))
    assert raised == set(ALERTS)


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    """One error lists all problems, with a header saying how lists are indexed."""
    path = write(tmp_path, '[server]\nport = 0\n[[source]]\nname = "v"\ntype = "docker"\nsorce = 1')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert (
        f"{path}: 3 problems (lists are indexed from 0):\n"
        "  server.port: must be an integer 1-65535\n"
        '  source[0].container: required for type "docker"\n'
        "  source[0].sorce: unknown key"
    ) == str(info.value)


def test_toml_syntax_error_names_line_and_column(tmp_path: Path) -> None:
    """A TOML syntax error is reported with its line and column."""
    assert ["invalid TOML: Invalid value (at line 2, column 8)"] == problems(tmp_path, "[server]\nport = = 1")


def test_missing_file(tmp_path: Path) -> None:
    """A missing file is one problem, not a traceback."""
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "nope.toml")
    assert ["cannot read: No such file or directory"] == info.value.problems


def test_url_is_never_shown(tmp_path: Path) -> None:
    """A notifier URL is a Secret: not in repr, the summary, or an error message."""
    config = load_config(write(tmp_path, f'[[notifier]]\nname = "s"\ntype = "slack"\nurl = "{SLACK}"'))
    assert Secret(SLACK) == config.notifiers[0].url
    shown = repr(config) + summarize(config)
    assert ("XXXXSECRET" in shown, "<secret>" in shown) == (False, True)
    bad = '[[notifier]]\nname = "s"\ntype = "slack"\nurl = "ftp://XXXXSECRET"'
    assert ["notifier[0].url: must be an http:// or https:// URL"] == problems(tmp_path, bad)


def test_url_from_systemd_credentials(tmp_path: Path) -> None:
    """With neither url nor url_file, the URL is read from $CREDENTIALS_DIRECTORY/<name>."""
    (tmp_path / "hook").write_text(SLACK + "\n")
    config = load_config(write(tmp_path, '[[notifier]]\nname = "hook"\ntype = "webhook"'))
    notifier = config.notifiers[0]
    assert (None, None) == (notifier.url, notifier.url_file)
    assert Secret(SLACK) == notifier.resolve_url({"CREDENTIALS_DIRECTORY": str(tmp_path)})


def test_silence_times_accept_toml_datetimes_and_strings(tmp_path: Path) -> None:
    """starts_at/ends_at may be TOML datetimes or RFC 3339 strings; both become Unix seconds."""
    text = (
        '[[silence]]\nmatchers = { alert = "no_signal" }\nstarts_at = 2026-01-01T00:00:00Z\n'
        'ends_at = "2026-01-01T02:00:00+01:00"\ncomment = "c"'
    )
    silence = load_config(write(tmp_path, text)).silences[0]
    assert ({"alert": "no_signal"}, 1767225600.0, 1767229200.0, "c") == (
        dict(silence.matchers),
        silence.starts_at,
        silence.ends_at,
        silence.comment,
    )


def test_detector_settings(tmp_path: Path) -> None:
    """A detector table keeps `enabled` apart from its scalar settings."""
    config = load_config(write(tmp_path, "[detectors.pinned]\nenabled = false\nwindow = 300"))
    detector = config.detectors["pinned"]
    assert (False, {"window": 300}) == (detector.enabled, dict(detector.settings))


def test_config_for_stdin() -> None:
    """`run --stdin --engine E` gets one stdin source named "stdin"; a bad engine is a ConfigError."""
    config = config_for_stdin("llamacpp")
    assert [("stdin", "llamacpp", "stdin")] == [(s.name, s.engine, s.type) for s in config.sources]
    with pytest.raises(ConfigError) as info:
        config_for_stdin("vlm")
    expected = (
        '--engine: must be one of auto, vllm, llamacpp, usage, sglang, ollama, lmstudio, lmcache (got "vlm")'
    )
    assert [expected] == info.value.problems


def test_summary(tmp_path: Path) -> None:
    """check-config's summary: one line per source and notifier."""
    text = (
        '[[source]]\nname = "v"\nengine = "vllm"\ntype = "docker"\ncontainer = "c"\n'
        '[[notifier]]\nname = "s"\ntype = "slack"\nurl_file = "/run/url"\nalerts = ["no_signal"]'
    )
    path = write(tmp_path, text)
    assert (
        f"config: {path}\n"
        "server: http://127.0.0.1:7433/metrics (no TLS, no auth)\n"
        "state_dir: /var/lib/kvwatch\n"
        "sources: 1\n"
        "  v: docker engine=vllm container=c docker_root=/var/lib/docker start_at=end\n"
        "detectors: 12 of 13 enabled: write_only_offload, pinned_cache_length, prefix_reuse_broken, "
        "no_signal, hit_rate_gap, usage_double_counting, prefix_cache_disabled, hicache_storage_unused, "
        "offload_retrieve_failed, engine_start_failed, format_drift, probe_prefix_miss; "
        "disabled: prefix_hit_rate_low\n"
        "notifiers: 1\n"
        "  s: slack url_file=/run/url alerts=no_signal min_severity=info\n"
        "silences: 0\n"
    ) == summarize(load_config(path))


def test_summary_counts_the_detectors_that_really_run(tmp_path: Path) -> None:
    """Off-by-default detectors count as disabled unless enabled; an alias disables its detector."""
    text = (
        "[detectors.hit_rate_low]\nenabled = true\n[detectors.pinned_cache]\nenabled = false\nmin_share = 1\n"
    )
    lines = summarize(load_config(write(tmp_path, text))).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("detectors:"))
    assert [
        "detectors: 12 of 13 enabled: write_only_offload, prefix_reuse_broken, no_signal, "
        "prefix_hit_rate_low, hit_rate_gap, usage_double_counting, prefix_cache_disabled, "
        "hicache_storage_unused, offload_retrieve_failed, engine_start_failed, format_drift, "
        "probe_prefix_miss; disabled: pinned_cache_length",
        "  hit_rate_low: enabled",
        "  pinned_cache: disabled min_share=1",
    ] == lines[start : start + 3]


def test_usage_mapping_table_is_read(tmp_path: Path) -> None:
    """`[source.usage]` gives the usage parser its field paths and label mappings."""
    path = tmp_path / "k.toml"
    path.write_text(
        '[[source]]\nname = "gw"\nengine = "usage"\ntype = "file"\npath = "/tmp/x.log"\n'
        '[source.usage]\nprompt = "a.b"\ncached = "a.c"\nentries = ["/v1/x"]\nclients = { "cli" = "cc" }\n'
    )
    usage = load_config(path).sources[0].options["usage"]
    assert usage is not None
    assert ("a.b", "a.c", ("/v1/x",), {"cli": "cc"}) == (
        usage.prompt,
        usage.cached,
        usage.entries,
        dict(usage.clients),
    )


def test_usage_mapping_errors_name_the_field(tmp_path: Path) -> None:
    """A usage table on a vLLM source and an unknown mapping key are refused with their fields."""
    path = tmp_path / "k.toml"
    path.write_text(
        '[[source]]\nname = "v"\nengine = "vllm"\ntype = "file"\npath = "/tmp/x.log"\n'
        '[source.usage]\nprompt = "a"\npromt = "b"\n'
    )
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert 'source[0].usage: only for engine "usage" (this source has engine "vllm")' in str(err.value)
    assert "source[0].usage.promt: unknown key" in str(err.value)


def test_engine_tables_are_read_by_their_engines_only(tmp_path: Path) -> None:
    """`[source.<engine>]` exists only for an engine that reads options; it must be a table."""
    path = tmp_path / "k.toml"
    path.write_text(
        '[[source]]\nname = "v"\nengine = "vllm"\ntype = "file"\npath = "/tmp/x.log"\n'
        "[source.vllm]\nx = 1\n"
        '[[source]]\nname = "g"\nengine = "usage"\ntype = "file"\npath = "/tmp/y.log"\nusage = 3\n'
        '[[source]]\nname = "a"\ntype = "file"\npath = "/tmp/z.log"\n[source.usage]\nmodel = "m"\n'
    )
    with pytest.raises(ConfigError) as err:
        load_config(path)
    problems = str(err.value)
    assert "source[0].vllm: unknown key" in problems
    assert "source[1].usage: must be a table ([source.usage])" in problems
    assert "source[2]" not in problems  # (an auto source may turn out to be a gateway's)


def test_alerting_timings(tmp_path: Path) -> None:
    """`[alerting]` sets the lifecycle's timings; a bad value names its field."""
    path = tmp_path / "k.toml"
    path.write_text("[alerting]\nresolve_after = 300\nrepeat_interval = 7200\nsuppress_older_than = 0\n")
    timings = load_config(path).alerting
    assert (300.0, 7200.0, 0.0) == (
        timings.resolve_after,
        timings.repeat_interval,
        timings.suppress_older_than,
    )
    path.write_text("[alerting]\nrepeat_interval = 5\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert "alerting.repeat_interval: must be an integer 60-2592000" in str(err.value)


def test_notifier_tls_and_auth_settings_and_their_problems(tmp_path: Path) -> None:
    """ca_file, basic_auth (username; password_file or password_credential) or a bearer token; Slack takes
    no auth; every problem names its field and never a secret."""
    from kvwatch.config import parse_config

    good = {
        "name": "am",
        "type": "alertmanager",
        "url": "https://am.internal:9093",
        "ca_file": "ca.pem",
        "basic_auth": {"username": "kv", "password_credential": "am-password"},
    }
    (notifier,) = parse_config({"notifier": [good]}, tmp_path).notifiers
    assert (tmp_path / "ca.pem", "kv", "am-password") == (
        notifier.ca_file,
        notifier.basic_auth_username,
        notifier.basic_auth_password_credential,
    )
    assert frozenset({"am-password"}) == notifier.credentials()
    bad = [
        {**good, "basic_auth": {"username": "kv"}},
        {
            **good,
            "name": "b",
            "basic_auth": {"username": "kv", "password_credential": "../x"},
            "bearer_token_file": "t",
        },
        {"name": "s", "type": "slack", "bearer_token_credential": "tok"},
        {
            "name": "w",
            "type": "webhook",
            "url": "https://h/x",
            "bearer_token_file": "a",
            "bearer_token_credential": "b",
        },
    ]
    with pytest.raises(ConfigError) as info:
        parse_config({"notifier": bad}, tmp_path)
    assert [
        "notifier[0].basic_auth.password_file: give password_file or password_credential (exactly one)",
        "notifier[1].basic_auth.password_credential: must be a credential name (a file name, no /)",
        "notifier[1].basic_auth.password_file: give password_file or password_credential (exactly one)",
        "notifier[1].basic_auth: give basic_auth or a bearer token, not both",
        'notifier[2].bearer_token_credential: not a setting of type "slack" (the webhook URL is its '
        "credential)",
        "notifier[3].bearer_token_file: give bearer_token_file or bearer_token_credential, not both",
    ] == info.value.problems


def test_a_credential_that_is_not_there_is_named_by_its_setting(tmp_path: Path) -> None:
    from kvwatch.config import parse_config
    from kvwatch.notify.secrets import SecretError

    spec = {"name": "am", "type": "alertmanager", "url": "https://am:9093", "bearer_token_credential": "tok"}
    (notifier,) = parse_config({"notifier": [spec]}, tmp_path).notifiers
    with pytest.raises(SecretError, match=r"^bearer_token_credential: no file \$CREDENTIALS_DIRECTORY/tok "):
        notifier.resolve_transport(env={"CREDENTIALS_DIRECTORY": str(tmp_path)})
    (tmp_path / "tok").write_text("abc\n")
    transport = notifier.resolve_transport(env={"CREDENTIALS_DIRECTORY": str(tmp_path)})
    assert {"Authorization": "Bearer abc"} == transport.headers()
    assert "abc" not in repr(transport)
