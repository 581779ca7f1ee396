"""How a notifier reaches its receiver: the CA bundle its TLS is verified against, and its credentials.

Without `ca_file`, TLS is verified against the host's trust store (what `ssl` finds: Debian's
/etc/ssl/certs/ca-certificates.crt, where an internal CA installed by `update-ca-certificates` is),
not the list bundled with requests. Basic auth and bearer tokens become one `Authorization` header,
held as a Secret: it never prints, and no error quotes it.
"""

from __future__ import annotations

import base64
import os
import ssl
from dataclasses import dataclass, field

from kvwatch.notify.secrets import Secret


def host_trust_store() -> str | bool:
    """The host's CA bundle file (or directory) as requests' `verify` takes it; True (requests' own
    list) only on a host that has neither."""
    paths = ssl.get_default_verify_paths()
    if paths.cafile and os.path.isfile(paths.cafile):
        return paths.cafile
    if paths.capath and os.path.isdir(paths.capath):
        return paths.capath
    return True


def basic_authorization(username: str, password: Secret) -> Secret:
    """The `Authorization: Basic …` header value of RFC 7617 (UTF-8)."""
    pair = f"{username}:{password.reveal()}".encode()
    return Secret("Basic " + base64.b64encode(pair).decode("ascii"))


@dataclass(frozen=True)
class Transport:
    """`verify` for requests (a CA file or directory, or True) and the Authorization header, if any."""

    verify: str | bool = field(default_factory=host_trust_store)
    authorization: Secret | None = field(default=None, repr=False)

    def headers(self) -> dict[str, str]:
        """The request headers it adds."""
        return {} if self.authorization is None else {"Authorization": self.authorization.reveal()}

    def secrets(self) -> tuple[Secret, ...]:
        """What an error text must be scrubbed of."""
        if self.authorization is None:
            return ()
        value = self.authorization.reveal()
        return (self.authorization, Secret(value.partition(" ")[2]))
