"""`summarize(config)`: the human summary `kvwatch check-config` prints (it never shows a URL), and the
warnings it adds (`silence_warnings`)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from urllib.parse import urlsplit

from kvwatch.config.alerting import detector_settings
from kvwatch.config.types import Config, NotifierConfig, ProbeConfig, SilenceConfig
from kvwatch.notify.secrets import MASK
from kvwatch.sources.settings import (
    DockerSettings,
    FileSettings,
    JournaldSettings,
    PodsSettings,
    SourceConfig,
    SqlSettings,
)


def summarize(config: Config) -> str:
    """A few lines per section: what will be read, detected and notified where."""
    server = config.server
    security = f"web_config {server.web_config}" if server.web_config else "no TLS, no auth"
    lines = [
        f"config: {config.path or '(none: stdin)'}",
        f"server: http://{server.listen_address}:{server.port}/metrics ({security})",
        f"state_dir: {config.state_dir}",
        *([f"engines: {len(config.engines)} defined by [[engine]]"] if config.engines else []),
        *(
            f"  {e.name}: {len(e.patterns)} pattern(s) yielding {', '.join(e.events)}; markers "
            + ", ".join(map(repr, e.markers))
            for e in config.engines
        ),
        f"sources: {len(config.sources)}",
        *(f"  {_source(s)}" for s in config.sources),
        *_detectors(config),
        f"notifiers: {len(config.notifiers)}",
        *(f"  {_notifier(n)}" for n in config.notifiers),
        f"silences: {len(config.silences)}",
        *(f"  {_silence(s)}" for s in config.silences),
        *([f"probes: {len(config.probes)}"] if config.probes else []),
        *(f"  {_probe(p)}" for p in config.probes),
    ]
    return "\n".join(lines) + "\n"


def _detectors(config: Config) -> list[str]:
    """Which built-in detectors will run (with the config applied to their defaults), then each
    `[detectors.<name>]` table as given."""
    settings = detector_settings(config, [])  # (prepare() reports its problems; check-config ran it)
    enabled = {f.name: getattr(settings, f.name).enabled for f in dataclasses.fields(settings)}
    return [
        detectors_line(enabled),
        *(
            f"  {d.name}: {'enabled' if d.enabled else 'disabled'}"
            + "".join(f" {k}={v!r}" for k, v in sorted(d.settings.items()))
            for d in config.detectors.values()
        ),
    ]


def detectors_line(enabled: Mapping[str, bool]) -> str:
    """`detectors: 6 of 7 enabled: a, b, ...; disabled: c`, in the detectors' order."""
    on = [name for name, is_on in enabled.items() if is_on]
    off = [name for name, is_on in enabled.items() if not is_on]
    line = f"detectors: {len(on)} of {len(enabled)} enabled: {', '.join(on) or 'none'}"
    return line + (f"; disabled: {', '.join(off)}" if off else "")


def _source(source: SourceConfig) -> str:
    """One source on one line."""
    s = source.settings
    if isinstance(s, FileSettings):
        detail = f"path={s.path} start_at={s.start_at}" + (" follow=newest" if s.follow == "newest" else "")
    elif isinstance(s, DockerSettings):
        detail = f"container={s.container} docker_root={s.docker_root} start_at={s.start_at}"
    elif isinstance(s, JournaldSettings):
        which = f"unit={s.unit}" if s.unit else f"container_name={s.container_name}"
        journal = f" directory={s.directory}" if s.directory else f" file={s.file}" if s.file else ""
        detail = f"{which}{journal} start_at={s.start_at}"
    elif isinstance(s, PodsSettings):
        chosen = [
            f"{c.namespace}/{c.pod}/{c.container}" + (f"={c.engine}" if c.engine else "") for c in s.select
        ]
        detail = f"root={s.root} select={','.join(chosen)} start_at={s.start_at}"
    elif isinstance(s, SqlSettings):
        password = " password=<secret>" if s.password_file or s.password_credential else ""
        detail = f"{s.where()} key={','.join(s.key)} batch={s.batch} poll_interval={s.poll_interval:g}s"
        detail += f"{password} start_at={s.start_at}"
    else:
        detail = "standard input"
    clock = "".join(f" {k}={v}" for k, v in (("year", source.year), ("tz", source.tz)) if v is not None)
    return f"{source.name}: {source.type} engine={source.engine} {detail}{clock}"


def _notifier(notifier: NotifierConfig) -> str:
    """One notifier on one line; where the URL comes from, never the URL."""
    if notifier.url is not None:
        url = f"url={notifier.url}"  # Secret prints as <secret>
    elif notifier.url_file is not None:
        url = f"url_file={notifier.url_file}"
    else:
        url = f"url=$CREDENTIALS_DIRECTORY/{notifier.name}"
    alerts = ",".join(notifier.alerts) or "all"
    line = f"{notifier.name}: {notifier.type} {url} alerts={alerts} min_severity={notifier.min_severity}"
    if notifier.ca_file is not None:
        line += f" ca_file={notifier.ca_file}"
    if notifier.basic_auth_username is not None:
        line += f" basic_auth={notifier.basic_auth_username}:{MASK}"
    elif notifier.bearer_token_file is not None or notifier.bearer_token_credential is not None:
        line += f" bearer_token={MASK}"
    return line


def _probe(probe: ProbeConfig) -> str:
    """One probe on one line: its endpoint without user or query, where its key comes from, never the key."""
    split = urlsplit(probe.url)
    url = f"{split.scheme}://{split.hostname}{f':{split.port}' if split.port else ''}{split.path}"
    key = (
        f"api_key_env=${probe.api_key_env}"
        if probe.api_key_env
        else f"api_key_file={probe.api_key_file}"
        if probe.api_key_file
        else "no api key"
    )
    headers = f" headers={','.join(sorted(probe.headers))}" if probe.headers else ""
    return (
        f"{probe.name}: {url} api={probe.api or 'auto'} model={probe.model or 'auto'} "
        f"every {probe.interval} s (jitter {probe.jitter} s) prefix_tokens={probe.prefix_tokens} "
        f"stream={str(probe.stream).lower()} "
        f"attribution_header={str(probe.attribution_header).lower()}"
        f"{f' nonce_form={probe.nonce_form}' if probe.attribution_header else ''} "
        f"timeout={probe.timeout} s {key}{headers}"
    )


def silence_warnings(config: Config, now: float) -> list[str]:
    """A warning per silence in force at `now` or still to come: which alerts it keeps from every
    notifier, and until when (a silence copied from an example must not mute a real alert unseen)."""
    warnings = []
    for index, silence in enumerate(config.silences):
        if silence.ends_at <= now:
            continue
        matchers = ", ".join(f'{k}="{v}"' for k, v in sorted(silence.matchers.items()))
        comment = f" ({silence.comment})" if silence.comment else ""
        until = _utc(silence.ends_at)
        if silence.starts_at is None or silence.starts_at <= now:
            when = f"is in force: alerts with {matchers} are not notified until {until}"
        else:
            when = (
                f"starts {_utc(silence.starts_at)}: alerts with {matchers} will not be notified until {until}"
            )
        warnings.append(f"silence[{index}] {when}{comment}")
    return warnings


def _silence(silence: SilenceConfig) -> str:
    """One silence on one line, times in UTC."""
    matchers = ", ".join(f'{k}="{v}"' for k, v in sorted(silence.matchers.items()))
    start = _utc(silence.starts_at) if silence.starts_at is not None else "now"
    comment = f" ({silence.comment})" if silence.comment else ""
    return f"{{{matchers}}} from {start} until {_utc(silence.ends_at)}{comment}"


def _utc(when: float) -> str:
    """RFC 3339 in UTC."""
    return dt.datetime.fromtimestamp(when, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
