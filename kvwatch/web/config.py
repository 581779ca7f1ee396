"""The web config file: the Prometheus exporter toolkit's `web-config.yml`, as node_exporter reads it.

    tls_server_config:
      cert_file: server.crt
      key_file: server.key
      client_auth_type: RequireAndVerifyClientCert
      client_ca_file: clients-ca.crt
    basic_auth_users:
      prometheus: $2y$10$...        # bcrypt: `kvwatch hash-password` or `htpasswd -nBC 10`

Relative paths are taken from the file's directory. A key node_exporter refuses is refused with
its reason; a setting Python's ssl cannot honour is refused, naming the key. The TOML form with
scrypt hashes (a `.toml` file, or content that is TOML and not YAML) still loads, with a
deprecation warning.
"""

from __future__ import annotations

import logging
import ssl
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kvwatch.config.types import ConfigError
from kvwatch.web.auth import BCRYPT
from kvwatch.web.tls import (
    CIPHERS,
    CLIENT_AUTH,
    CURVES,
    TLS13_CIPHERS,
    UNVERIFIED_CLIENT_AUTH,
    VERSIONS,
    TlsServerConfig,
    server_context,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

log = logging.getLogger(__name__)

_TLS_KEYS = (
    "cert_file",
    "key_file",
    "client_auth_type",
    "client_ca_file",
    "min_version",
    "max_version",
    "cipher_suites",
    "curve_preferences",
    "prefer_server_cipher_suites",
)
#: Keys of later toolkit versions than node_exporter 1.5's (which refuses them too).
_LATER_KEYS = {"rate_limit", "tls_server_config.client_allowed_sans", "tls_server_config.cert"}
_LATER_KEYS |= {"tls_server_config.key", "tls_server_config.client_ca"}
#: The response headers the toolkit lets a web config set, with their allowed values (None: any).
HEADERS: dict[str, tuple[str, ...] | None] = {
    "Strict-Transport-Security": None,
    "X-Content-Type-Options": ("nosniff",),
    "X-Frame-Options": ("deny", "sameorigin"),
    "X-XSS-Protection": None,
    "Content-Security-Policy": None,
}
_HASH_ADVICE = "make one with `kvwatch hash-password` or `htpasswd -nBC 10 \"\" | tr -d ':\\n'`"


@dataclass(frozen=True)
class WebConfig:
    """TLS, basic-auth users (name to hash) and extra response headers; all optional."""

    tls: TlsServerConfig | None = None
    users: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)

    def ssl_context(self) -> ssl.SSLContext | None:
        """A server TLS context when TLS is configured."""
        return None if self.tls is None else server_context(self.tls)


def load_web_config(path: Path) -> WebConfig:
    """Read and check a web config (YAML, or the deprecated TOML); ConfigError names each bad key."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(str(path), [f"cannot read: {exc}"]) from None
    if path.suffix != ".toml":
        try:
            data = yaml.load(text, Loader=_StrictLoader)
        except yaml.YAMLError as exc:
            if _is_toml(text):
                return _legacy(path, text)
            raise ConfigError(str(path), [f"not valid YAML: {_one_line(exc)}"]) from None
        if data is None or isinstance(data, dict):
            return _checked(path, _parse_yaml(path, data or {}))
        if _is_toml(text):
            return _legacy(path, text)
        raise ConfigError(str(path), ["must be a YAML mapping (tls_server_config:, basic_auth_users:, ...)"])
    return _legacy(path, text)


def _checked(path: Path, config: WebConfig) -> WebConfig:
    """`config` once its certificate, key and CA files load."""
    try:
        config.ssl_context()
    except ValueError as exc:
        raise ConfigError(str(path), [f"tls_server_config.{exc}"]) from None
    return config


def _parse_yaml(path: Path, data: dict[Any, Any]) -> WebConfig:
    """The toolkit's schema, checked key by key."""
    problems: list[str] = []
    for key in data:
        if key not in ("tls_server_config", "http_server_config", "basic_auth_users"):
            problems.append(_unknown(str(key)))
    tls = _tls(path, _mapping(data, "tls_server_config", problems), problems)
    http = _mapping(data, "http_server_config", problems)
    headers: dict[str, str] = {}
    for key, value in http.items():
        if key == "http2":
            if not isinstance(value, bool):  # kvwatch speaks HTTP/1.1 whatever it says
                problems.append("http_server_config.http2: must be true or false")
        elif key == "headers":
            headers = _headers(value, problems)
        else:
            problems.append(_unknown(f"http_server_config.{key}"))
    users: dict[str, str] = {}
    for user, stored in _mapping(data, "basic_auth_users", problems).items():
        match = BCRYPT.fullmatch(stored) if isinstance(stored, str) else None
        if not isinstance(user, str):
            problems.append(f"basic_auth_users: user name {user!r} must be a string")
        elif match is None:
            problems.append(f"basic_auth_users.{user}: not a bcrypt hash ({_HASH_ADVICE})")
        elif not 4 <= int(match[1]) <= 31:
            problems.append(f"basic_auth_users.{user}: bcrypt cost outside the allowed range (4,31)")
        else:
            users[user] = stored
    if problems:
        raise ConfigError(str(path), problems)
    return WebConfig(tls, users, headers)


def _tls(path: Path, section: dict[Any, Any], problems: list[str]) -> TlsServerConfig | None:
    """The checked `tls_server_config`; None when it turns TLS off (no files, no client auth)."""
    known = {key: value for key, value in section.items() if key in _TLS_KEYS}
    problems += [_unknown(f"tls_server_config.{key}") for key in section if key not in _TLS_KEYS]
    where = "tls_server_config."
    strings: dict[str, str] = {}
    for key in ("cert_file", "key_file", "client_auth_type", "client_ca_file", "min_version", "max_version"):
        value = known.get(key)
        if value is not None and not isinstance(value, (str, int, float)):
            problems.append(f"{where}{key}: must be a string")
        elif value is not None:
            strings[key] = str(value)
    files = {
        key: path.parent / strings[key] if strings.get(key) else None
        for key in ("cert_file", "key_file", "client_ca_file")
    }
    auth = strings.get("client_auth_type") or "NoClientCert"
    if auth in UNVERIFIED_CLIENT_AUTH:
        problems.append(
            f"{where}client_auth_type: {auth} admits any certificate unverified, which Python's ssl "
            "cannot do; use RequireAndVerifyClientCert with client_ca_file"
        )
    elif auth not in CLIENT_AUTH:
        problems.append(
            f"{where}client_auth_type: invalid ClientAuth {auth!r} (one of {', '.join(CLIENT_AUTH)})"
        )
    if files["client_ca_file"] is not None and auth == "NoClientCert":
        problems.append(f"{where}client_ca_file: set without a client_auth_type that asks for certificates")
    versions = {}
    for key, default in (("min_version", "TLS12"), ("max_version", "TLS13")):
        versions[key] = strings.get(key, default)
        if versions[key] not in VERSIONS:
            problems.append(
                f"{where}{key}: unknown TLS version {versions[key]!r} (one of {', '.join(VERSIONS)})"
            )
    if {*versions.values()} <= {*VERSIONS} and VERSIONS[versions["min_version"]] > VERSIONS[
        versions["max_version"]
    ]:
        problems.append(f"{where}min_version: above max_version, no TLS version is left")
    ciphers = _names(known, "cipher_suites", (*CIPHERS, *TLS13_CIPHERS), "cipher", problems)
    curves = _names(known, "curve_preferences", tuple(CURVES), "curve", problems)
    if len(curves) > 1:
        problems.append(
            f"{where}curve_preferences: Python's ssl sets one curve, not a preference list; give one of "
            + ", ".join(CURVES)
        )
    prefer = known.get("prefer_server_cipher_suites", True)
    if not isinstance(prefer, bool):
        problems.append(f"{where}prefer_server_cipher_suites: must be true or false")
        prefer = True
    wanted = (
        files["cert_file"] or files["key_file"] or files["client_ca_file"] or "client_auth_type" in strings
    )
    if not wanted:
        return None
    if files["cert_file"] is None or files["key_file"] is None:
        missing = "cert_file" if files["cert_file"] is None else "key_file"
        problems.append(f"{where}{missing}: missing (TLS needs cert_file and key_file)")
        return None
    return TlsServerConfig(
        files["cert_file"],
        files["key_file"],
        auth,
        files["client_ca_file"],
        versions["min_version"],
        versions["max_version"],
        ciphers,
        curves,
        prefer,
    )


def _names(
    section: dict[Any, Any], key: str, allowed: tuple[str, ...], what: str, problems: list[str]
) -> tuple[str, ...]:
    """A list of names from `allowed`; each other one is a problem."""
    value = section.get(key) or []
    if not isinstance(value, list):
        problems.append(f"tls_server_config.{key}: must be a list")
        return ()
    bad = [name for name in value if name not in allowed]
    problems += [f"tls_server_config.{key}: unknown {what} {name!r}" for name in bad]
    return tuple(str(name) for name in value if name in allowed)


def _headers(value: Any, problems: list[str]) -> dict[str, str]:
    """`http_server_config.headers`: only those the toolkit allows, with allowed values; blank ones unset."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.append("http_server_config.headers: must be a mapping")
        return {}
    headers = {}
    for name, text in value.items():
        where = f"http_server_config.headers.{name}"
        if name not in HEADERS:
            problems.append(
                f"{where}: HTTP header {name!r} can not be configured (one of {', '.join(HEADERS)})"
            )
            continue
        allowed = HEADERS[name]
        if not isinstance(text, str) and text is not None:
            problems.append(f"{where}: must be a string")
        elif allowed is not None and text not in allowed:
            problems.append(f"{where}: must be {' or '.join(allowed)}, not {text!r}")
        elif text:
            headers[str(name)] = text
    return headers


def _unknown(key: str) -> str:
    """The problem of a key the toolkit (as node_exporter 1.5 has it) does not define."""
    if key in _LATER_KEYS:
        return f"{key}: not supported by kvwatch (a later exporter-toolkit key, refused by node_exporter 1.5)"
    return f"{key}: unknown key"


def _mapping(data: dict[Any, Any], key: str, problems: list[str]) -> dict[Any, Any]:
    """A section, {} when absent or empty."""
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.append(f"{key}: must be a mapping")
        return {}
    return value


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice, as Go's yaml.UnmarshalStrict does."""


def _no_duplicates(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    """A mapping, or ConstructorError at a repeated key."""
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} already set", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)


def _one_line(exc: yaml.YAMLError) -> str:
    """A YAML error on one line, with its line number."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    return f"line {mark.line + 1}: {problem}" if mark is not None else " ".join(str(problem).split())


def _is_toml(text: str) -> bool:
    """Whether `text` parses as TOML (the deprecated form)."""
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return False
    return True


def _legacy(path: Path, text: str) -> WebConfig:
    """The deprecated TOML form: cert_file and key_file, scrypt hashes from earlier releases."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), [f"cannot read: {exc}"]) from None
    problems = [f"{key}: unknown key" for key in data if key not in ("tls_server_config", "basic_auth_users")]
    tls = _mapping(data, "tls_server_config", problems)
    users = _mapping(data, "basic_auth_users", problems)
    files: dict[str, Path | None] = {}
    for key in ("cert_file", "key_file"):
        value = tls.get(key)
        if value is not None and not isinstance(value, str):
            problems.append(f"tls_server_config.{key}: must be a string")
        files[key] = path.parent / value if isinstance(value, str) else None
    problems += [f"tls_server_config.{k}: unknown key" for k in tls if k not in files]
    if (files["cert_file"] is None) != (files["key_file"] is None):
        problems.append("tls_server_config: give both cert_file and key_file")
    for user, stored in users.items():
        if not isinstance(stored, str) or stored.count("$") != 5 or not stored.startswith("scrypt$"):
            problems.append(
                f"basic_auth_users.{user}: must be a scrypt hash in this deprecated TOML form "
                "(bcrypt hashes go in a web-config.yml)"
            )
    if problems:
        raise ConfigError(str(path), problems)
    log.warning(
        "web config %s: the TOML form with scrypt hashes is deprecated (a later version may stop reading "
        "it); write the exporter toolkit's web-config.yml (YAML, bcrypt hashes from `kvwatch hash-password` "
        "or `htpasswd -nBC 10`) instead",
        path,
    )
    cert, private = files["cert_file"], files["key_file"]
    config = WebConfig(
        None if cert is None or private is None else TlsServerConfig(cert, private), dict(users)
    )
    try:
        config.ssl_context()
    except ValueError as exc:
        raise ConfigError(str(path), [f"tls_server_config: cannot load the certificate: {exc}"]) from None
    return config
