"""Secret URLs: a value printing as `<secret>`, where it is read from, and scrubbing text of it.

A webhook URL is a credential (Slack's path is the token). It comes from the config, a `*_file`
setting or `$CREDENTIALS_DIRECTORY/<name>` (systemd `LoadCredential=`), never from argv, and only
its scheme and host (`receiver`) ever appear in logs, errors, metrics or reprs. requests puts the
path in its exception text, so every error message that may hold one goes through `scrub` before it
is logged or kept.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

MASK = "<secret>"


class SecretError(ValueError):
    """A secret setting that cannot be resolved; the message names the setting, never the value."""


class Secret:
    """A string that never prints itself: `repr`, `str` and f-strings all show `<secret>`."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        """Wrap `value`."""
        self._value = value

    def reveal(self) -> str:
        """The secret value itself, for the one place that must use it (the HTTP request)."""
        return self._value

    def __repr__(self) -> str:
        """Mask."""
        return MASK

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        """Equal when the wrapped values are equal (config comparisons)."""
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        """Hash of the wrapped value."""
        return hash(self._value)


def load_secret(
    name: str,
    *,
    value: str | None = None,
    file: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    setting: str | None = None,
) -> Secret | None:
    """Resolve `name` from its value, `<setting>_file` or `$CREDENTIALS_DIRECTORY/name`, else None;
    errors name the setting (default: `name`) as the config spells it."""
    key = setting or name
    if value is not None and file is not None:
        raise SecretError(f"{key}: set {key} or {key}_file, not both")
    if value is not None:
        if not value.strip():
            raise SecretError(f"{key}: empty")
        return Secret(value.strip())
    if file is not None:
        return _read(f"{key}_file", Path(file))
    creds = (os.environ if env is None else env).get("CREDENTIALS_DIRECTORY")
    if creds and "/" not in name and (Path(creds) / name).is_file():
        return _read(f"$CREDENTIALS_DIRECTORY/{name}", Path(creds) / name)
    return None


def _read(setting: str, path: Path) -> Secret:
    """Read a secret file, stripped; errors name the setting and the path, never the content."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise SecretError(f"{setting}: cannot read {path}: {reason}") from None
    if not text:
        raise SecretError(f"{setting}: {path} is empty")
    return Secret(text)


def receiver(secret: Secret) -> str:
    """What may name the receiver of a URL: `scheme://host[:port]` (no user, path or query)."""
    try:
        split = urlsplit(secret.reveal())
        host, port = split.hostname, split.port
    except ValueError:
        return MASK
    if not split.scheme or not host:
        return MASK
    host = f"[{host}]" if ":" in host else host
    return f"{split.scheme}://{host}" + ("" if port is None else f":{port}")


def fragments(secret: Secret) -> list[str]:
    """Substrings that give a URL away: itself, its user part, path, query and fragment; longest
    first (the scheme and host name the receiver and are not secret)."""
    url = secret.reveal()
    parts = {url}
    try:
        split = urlsplit(url)
    except ValueError:
        return [url]
    path_query = split.path + ("?" + split.query if split.query else "")
    user = split.netloc.rpartition("@")[0]
    for piece in (user, path_query, split.path, split.query, split.fragment):
        if len(piece) > 1:
            parts.add(piece)
    return sorted(parts, key=len, reverse=True)


def scrub(text: str, *secrets: Secret) -> str:
    """Replace every fragment of each secret in `text` by `<secret>`."""
    for secret in secrets:
        for piece in fragments(secret):
            text = text.replace(piece, MASK)
    return text
