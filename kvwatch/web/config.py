"""The web config file: TLS and basic auth for /metrics, like the Prometheus exporter toolkit's, in TOML.

    [tls_server_config]
    cert_file = "/etc/kvwatch/tls.crt"
    key_file = "/etc/kvwatch/tls.key"

    [basic_auth_users]
    prometheus = "scrypt$16384$8$1$<salt, base64>$<hash, base64>"

Passwords are stored as scrypt hashes (hashlib, no bcrypt dependency): `kvwatch hash-password`
prints one. Relative paths are taken from the web config file's directory.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import ssl
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kvwatch.config.types import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

#: scrypt cost: 16 MiB of memory and ~50 ms per check; verified credentials are cached.
N, R, P = 16384, 8, 1
_KEYS = {"tls_server_config": ("cert_file", "key_file"), "basic_auth_users": ()}


def hash_password(password: str, salt: bytes | None = None) -> str:
    """`scrypt$N$r$p$salt$hash` (base64) of `password`."""
    salt = os.urandom(16) if salt is None else salt
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=N, r=R, p=P, dklen=32)
    b64 = base64.b64encode
    return f"scrypt${N}${R}${P}${b64(salt).decode()}${b64(digest).decode()}"


def check_password(password: str, stored: str) -> bool:
    """Whether `password` matches a `hash_password` result (False for a malformed one)."""
    try:
        kind, n, r, p, salt, digest = stored.split("$")
        want = base64.b64decode(digest, validate=True)
        got = hashlib.scrypt(
            password.encode("utf-8"),
            salt=base64.b64decode(salt, validate=True),
            n=int(n),
            r=int(r),
            p=int(p),
            maxmem=256 << 20,
            dklen=len(want),
        )
    except (ValueError, TypeError):
        return False
    return kind == "scrypt" and hmac.compare_digest(want, got)


@dataclass
class WebConfig:
    """TLS files and basic-auth users; both optional."""

    cert_file: Path | None = None
    key_file: Path | None = None
    users: dict[str, str] = field(default_factory=dict)
    _verified: set[tuple[str, bytes]] = field(default_factory=set, repr=False)

    def ssl_context(self) -> ssl.SSLContext | None:
        """A server TLS context when cert and key are set."""
        if self.cert_file is None or self.key_file is None:
            return None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.cert_file, self.key_file)
        return context

    def authorized(self, header: str | None) -> bool:
        """Whether an `Authorization` header passes (always, when no users are configured)."""
        if not self.users:
            return True
        if not header or not header.startswith("Basic "):
            return False
        try:
            user, _, password = base64.b64decode(header[6:], validate=True).decode("utf-8").partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        stored = self.users.get(user)
        key = (user, hashlib.sha256(f"{stored}\0{password}".encode()).digest())
        if stored is None or key in self._verified:
            return stored is not None
        if not check_password(password, stored):
            return False
        self._verified.add(key)
        return True


def load_web_config(path: Path) -> WebConfig:
    """Read and check the web config; ConfigError names each bad field."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(str(path), [f"cannot read: {exc}"]) from None
    problems = [f"{key}: unknown key" for key in data if key not in _KEYS]
    tls = _table(data, "tls_server_config", problems)
    users = _table(data, "basic_auth_users", problems)
    files: dict[str, Path | None] = {}
    for key in _KEYS["tls_server_config"]:
        value = tls.get(key)
        if value is not None and not isinstance(value, str):
            problems.append(f"tls_server_config.{key}: must be a string")
        files[key] = path.parent / value if isinstance(value, str) else None
    problems += [f"tls_server_config.{k}: unknown key" for k in tls if k not in files]
    if (files["cert_file"] is None) != (files["key_file"] is None):
        problems.append("tls_server_config: give both cert_file and key_file")
    for user, stored in users.items():
        if not isinstance(stored, str) or stored.count("$") != 5 or not stored.startswith("scrypt$"):
            problems.append(f"basic_auth_users.{user}: must be a hash from `kvwatch hash-password`")
    if problems:
        raise ConfigError(str(path), problems)
    config = WebConfig(files["cert_file"], files["key_file"], dict(users))
    try:
        config.ssl_context()
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(str(path), [f"tls_server_config: cannot load the certificate: {exc}"]) from None
    return config


def _table(data: dict[str, Any], key: str, problems: list[str]) -> dict[str, Any]:
    """A sub-table, {} when absent."""
    value = data.get(key, {})
    if not isinstance(value, dict):
        problems.append(f"{key}: must be a table ([{key}])")
        return {}
    return value
