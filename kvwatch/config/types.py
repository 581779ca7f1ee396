"""The validated configuration as frozen dataclasses; `config.load` builds them from the TOML file.

A `[[source]]`'s values (`SourceConfig` and its settings) are the sources' own: kvwatch.sources.settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from kvwatch import DEFAULT_PORT
from kvwatch.model import Severity
from kvwatch.notify.runbook import RUNBOOK_BASE_URL
from kvwatch.notify.secrets import Secret, SecretError, load_secret
from kvwatch.notify.transport import Transport, basic_authorization, host_trust_store
from kvwatch.probe.conversation import NonceForm
from kvwatch.sources.settings import SourceConfig

NotifierType = Literal["slack", "webhook", "alertmanager"]
Scalar = str | int | float | bool

NOTIFIER_TYPES: tuple[NotifierType, ...] = ("slack", "webhook", "alertmanager")
SEVERITIES: tuple[Severity, ...] = ("info", "warning", "critical")

DEFAULT_STATE_DIR = Path("/var/lib/kvwatch")


class ConfigError(ValueError):
    """An invalid config: `problems` holds one exact sentence per problem, naming the field."""

    def __init__(self, where: str, problems: list[str]) -> None:
        """Build the message: a header, then one problem per line."""
        self.where = where
        self.problems = list(problems)
        count = f"{len(problems)} problem" + ("s" if len(problems) != 1 else "")
        lines = [f"{where}: {count} (lists are indexed from 0):", *(f"  {p}" for p in problems)]
        super().__init__("\n".join(lines))


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """`[server]`: where /metrics listens; `web_config` adds TLS and basic auth."""

    listen_address: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    web_config: Path | None = None


@dataclass(frozen=True, slots=True)
class DetectorConfig:
    """One `[detectors.<name>]` table: `enabled` plus the detector's own scalar settings."""

    name: str
    enabled: bool = True
    settings: Mapping[str, Scalar] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True, slots=True)
class NotifierConfig:
    """One `[[notifier]]`. The URL is a secret: given inline, in `url_file`, or by systemd credential."""

    name: str
    type: NotifierType
    url: Secret | None = None
    url_file: Path | None = None
    alerts: tuple[str, ...] = ()  # empty: every alert
    min_severity: Severity = "info"
    ca_file: Path | None = None  # None: the host's trust store
    basic_auth_username: str | None = None
    basic_auth_password_file: Path | None = None
    basic_auth_password_credential: str | None = None
    bearer_token_file: Path | None = None
    bearer_token_credential: str | None = None

    def resolve_url(self, env: Mapping[str, str] | None = None) -> Secret:
        """The URL from `url`, `url_file` or `$CREDENTIALS_DIRECTORY/<name>`; SecretError if none."""
        value = self.url.reveal() if self.url is not None else None
        secret = load_secret(self.name, value=value, file=self.url_file, env=env, setting="url")
        if secret is None:
            raise SecretError(f"url: give url or url_file, or the file $CREDENTIALS_DIRECTORY/{self.name}")
        return secret

    def credentials(self) -> frozenset[str]:
        """The systemd credentials this notifier reads (its URL's, by its name, when no URL is given)."""
        names = {self.basic_auth_password_credential, self.bearer_token_credential}
        if self.url is None and self.url_file is None:
            names.add(self.name)
        return frozenset(n for n in names if n)

    def resolve_transport(self, env: Mapping[str, str] | None = None) -> Transport:
        """The CA bundle and Authorization header; SecretError names the setting, never the secret."""
        verify: str | bool = host_trust_store()
        if self.ca_file is not None:
            if not self.ca_file.is_file():
                raise SecretError(f"ca_file: {self.ca_file} is not a readable file")
            verify = str(self.ca_file)
        authorization = None
        if self.basic_auth_username is not None:
            password = _credential(
                "basic_auth.password", self.basic_auth_password_file, self.basic_auth_password_credential, env
            )
            authorization = basic_authorization(self.basic_auth_username, password)
        elif self.bearer_token_file is not None or self.bearer_token_credential is not None:
            token = _credential("bearer_token", self.bearer_token_file, self.bearer_token_credential, env)
            authorization = Secret(f"Bearer {token.reveal()}")
        return Transport(verify, authorization)


def _credential(
    setting: str, file: Path | None, credential: str | None, env: Mapping[str, str] | None
) -> Secret:
    """A secret from `<setting>_file` or the systemd credential `<setting>_credential`."""
    secret = load_secret(credential or "", file=file, env=env, setting=setting)
    if secret is None:
        where = f"$CREDENTIALS_DIRECTORY/{credential}" if credential else "nowhere"
        raise SecretError(
            f"{setting}_credential: no file {where} (systemd's LoadCredential={credential}:...)"
        )
    return secret


@dataclass(frozen=True, slots=True)
class SilenceConfig:
    """One `[[silence]]`: alerts whose labels equal all `matchers` are not notified in the window."""

    matchers: Mapping[str, str]
    ends_at: float
    starts_at: float | None = None
    comment: str = ""


@dataclass(frozen=True, slots=True)
class ProbeConfig:
    """One `[[probe]]`: an endpoint probed every `interval` seconds (+ up to `jitter`); the API key
    comes from the environment variable `api_key_env` or the file `api_key_file`, never the config."""

    name: str
    url: str
    api: Literal["openai", "anthropic"] | None = None
    model: str | None = None
    interval: int = 900
    jitter: int = 60
    prefix_tokens: int = 4096
    stream: bool = False
    attribution_header: bool = True
    nonce_form: NonceForm = "billing-header"
    timeout: int = 60
    ca_file: Path | None = None
    api_key_env: str | None = None
    api_key_file: Path | None = None
    headers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True, slots=True)
class AlertingConfig:
    """`[alerting]`: the alert lifecycle's timings, in seconds."""

    resolve_after: float = 120.0  # a firing alert resolves once its condition is absent this long
    repeat_interval: float = 4 * 3600.0  # a firing alert is notified again this often
    suppress_older_than: float = 15 * 60.0  # first start: older transitions are recorded, not notified
    runbook_base_url: str = RUNBOOK_BASE_URL  # runbook_url = this + "#" + the alert's name


LogLevel = Literal["debug", "info", "warn", "error"]
LogFormat = Literal["logfmt", "json"]
LOG_LEVELS: tuple[LogLevel, ...] = ("debug", "info", "warn", "error")
LOG_FORMATS: tuple[LogFormat, ...] = ("logfmt", "json")


@dataclass(frozen=True, slots=True)
class LogConfig:
    """`[log]`: the daemon's log level and format (None: the journal's shape under systemd, else plain);
    `--log.level` and `--log.format` override them."""

    level: LogLevel = "info"
    format: LogFormat | None = None


@dataclass(frozen=True, slots=True)
class Config:
    """The whole validated config file."""

    server: ServerConfig = ServerConfig()
    state_dir: Path = DEFAULT_STATE_DIR
    sources: tuple[SourceConfig, ...] = ()
    detectors: Mapping[str, DetectorConfig] = field(default_factory=lambda: MappingProxyType({}))
    notifiers: tuple[NotifierConfig, ...] = ()
    silences: tuple[SilenceConfig, ...] = ()
    alerting: AlertingConfig = AlertingConfig()
    probes: tuple[ProbeConfig, ...] = ()
    log: LogConfig = LogConfig()
    path: Path | None = None  # the file it was loaded from; None for `run --stdin`
    engines: tuple[Any, ...] = ()  # engines its [[engine]] tables define (kvwatch.engines.configure)
