"""The server TLS context of a web config's `tls_server_config`, as the exporter toolkit defines it."""

from __future__ import annotations

import ssl
import warnings
from dataclasses import dataclass
from pathlib import Path

#: The toolkit's `min_version` / `max_version` names.
VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}

#: `client_auth_type` values Python's ssl can honour. RequestClientCert asks for a certificate and
#: never checks it, so it admits every client, as CERT_NONE does.
CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "RequestClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}

#: Values the toolkit takes that need a certificate accepted without verification: Python's ssl
#: has no verify callback to do that.
UNVERIFIED_CLIENT_AUTH = ("RequireAnyClientCert", "RequireClientCert")

#: Go's tls.CipherSuites() for TLS 1.0-1.2 (the only ones `cipher_suites` configures), by the
#: IANA name the toolkit takes, to OpenSSL's name.
CIPHERS = {
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
}

#: TLS 1.3 suites: Go takes their names and ignores them (TLS 1.3 suites are not configurable).
TLS13_CIPHERS = ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256")

#: The toolkit's `curve_preferences` names, to OpenSSL's.
CURVES = {"CurveP256": "prime256v1", "CurveP384": "secp384r1", "CurveP521": "secp521r1", "X25519": "X25519"}


@dataclass(frozen=True)
class TlsServerConfig:
    """A checked `tls_server_config`; paths are absolute or relative to the working directory."""

    cert_file: Path
    key_file: Path
    client_auth_type: str = "NoClientCert"
    client_ca_file: Path | None = None
    min_version: str = "TLS12"
    max_version: str = "TLS13"
    cipher_suites: tuple[str, ...] = ()
    curve_preferences: tuple[str, ...] = ()
    prefer_server_cipher_suites: bool = True


def server_context(tls: TlsServerConfig) -> ssl.SSLContext:
    """The server context; ValueError names the key whose file or setting cannot be used."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with warnings.catch_warnings():  # TLS 1.0 and 1.1 are deprecated, and honoured when asked for
        warnings.simplefilter("ignore", DeprecationWarning)
        context.minimum_version = VERSIONS[tls.min_version]
        context.maximum_version = VERSIONS[tls.max_version]
    try:
        context.load_cert_chain(tls.cert_file, tls.key_file)
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(f"cert_file, key_file: cannot load the certificate and key: {exc}") from None
    context.verify_mode = CLIENT_AUTH[tls.client_auth_type]
    try:
        if tls.client_ca_file is not None:
            context.load_verify_locations(cafile=tls.client_ca_file)
        elif context.verify_mode != ssl.CERT_NONE:
            context.load_default_certs(ssl.Purpose.CLIENT_AUTH)  # as Go verifies with the host's roots
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(f"client_ca_file: cannot load: {exc}") from None
    _ciphers(context, tls.cipher_suites)
    if len(tls.curve_preferences) == 1:
        try:
            context.set_ecdh_curve(CURVES[tls.curve_preferences[0]])
        except ValueError as exc:
            raise ValueError(f"curve_preferences: this OpenSSL cannot use it: {exc}") from None
    if tls.prefer_server_cipher_suites:
        context.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
    else:
        context.options &= ~ssl.OP_CIPHER_SERVER_PREFERENCE
    return context


def _ciphers(context: ssl.SSLContext, names: tuple[str, ...]) -> None:
    """Restrict TLS 1.2 and older to `names` (in that order); ValueError names one OpenSSL lacks."""
    wanted = [CIPHERS[name] for name in names if name in CIPHERS]
    if not wanted:
        return
    try:
        context.set_ciphers(":".join(wanted))
    except ssl.SSLError:
        raise ValueError("cipher_suites: this OpenSSL has none of them") from None
    have = {cipher["name"] for cipher in context.get_ciphers()}
    missing = [name for name in names if name in CIPHERS and CIPHERS[name] not in have]
    if missing:
        raise ValueError(f"cipher_suites: this OpenSSL does not offer {', '.join(missing)}")
