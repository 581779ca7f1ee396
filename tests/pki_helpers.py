"""Test helpers for TLS: a private CA and certificates it signs, made by the real openssl in a directory."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path


def _openssl(*args: str) -> None:
    """Run openssl; fail with its stderr."""
    exe = shutil.which("openssl")
    assert exe is not None, "openssl makes the test certificates"
    done = subprocess.run([exe, *args], capture_output=True, text=True, check=False)
    assert 0 == done.returncode, done.stderr


@dataclass(frozen=True)
class Pki:
    """A CA (`ca.crt`), a server certificate for 127.0.0.1 and a client certificate, all in `home`."""

    home: Path

    @property
    def ca(self) -> Path:
        """The CA certificate (PEM)."""
        return self.home / "ca.crt"

    def cert(self, name: str) -> Path:
        """`name`'s certificate (PEM)."""
        return self.home / f"{name}.crt"

    def key(self, name: str) -> Path:
        """`name`'s private key (PEM)."""
        return self.home / f"{name}.key"

    def client_context(self, client: str | None = "client") -> ssl.SSLContext:
        """A client context that trusts the CA and presents `client`'s certificate (none if None)."""
        context = ssl.create_default_context(cafile=str(self.ca))
        if client is not None:
            context.load_cert_chain(self.cert(client), self.key(client))
        return context


def make_pki(home: Path, clients: tuple[str, ...] = ("client",)) -> Pki:
    """A fresh CA in `home` that signs a `server` certificate (IP 127.0.0.1, localhost) and `clients`."""
    home.mkdir(parents=True, exist_ok=True)
    pki = Pki(home)
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl(
        "req", "-x509", *ec, "-days", "2", "-subj", "/CN=kvwatch test CA",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        "-keyout", str(home / "ca.key"), "-out", str(pki.ca),
    )  # fmt: skip
    for name, usage in [("server", "serverAuth"), *((client, "clientAuth") for client in clients)]:
        ext = home / f"{name}.ext"
        ext.write_text(
            f"subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage={usage}\n"
            "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
        )
        _openssl(
            "req",
            *ec,
            "-subj",
            f"/CN={name}",
            "-keyout",
            str(pki.key(name)),
            "-out",
            str(home / f"{name}.csr"),
        )
        _openssl(
            "x509", "-req", "-in", str(home / f"{name}.csr"), "-CA", str(pki.ca),
            "-CAkey", str(home / "ca.key"),
            "-CAcreateserial", "-days", "2", "-extfile", str(ext), "-out", str(pki.cert(name)),
        )  # fmt: skip
    return pki
