"""The exporter toolkit's web-config.yml: the files node_exporter accepts kvwatch accepts, mTLS, bcrypt."""

from __future__ import annotations

import base64
import logging
import shutil
import ssl
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from daemon_helpers import Kvwatch, file_source, free_port, wait_until, write_config
from pki_helpers import Pki, make_pki
from prometheus_helpers import query, start_prometheus, stop_prometheus, wait_for
from test_http import get, serve

from kvwatch.cli import main
from kvwatch.config.types import ConfigError
from kvwatch.web.auth import BasicAuth, hash_password, scrypt_hash
from kvwatch.web.config import load_web_config

HTPASSWD = "$2y$10$mDwo.lAisC94iLAyP81MCesa29IzH37oigHC/42V2pdJlUprsJPze"  # in the toolkit's example
SECRET = hash_password("secret")


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A CA with a server and a client certificate."""
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def stranger(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """Another CA, whose client certificate kvwatch must not trust."""
    return make_pki(tmp_path_factory.mktemp("stranger"), ("intruder",))


def basic(user: str, password: str) -> dict[str, str]:
    """An Authorization header."""
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def write(home: Path, text: str, pki: Pki | None = None) -> Path:
    """`web-config.yml` in `home`, next to copies of the server certificate, its key and the CA."""
    home.mkdir(parents=True, exist_ok=True)
    if pki is not None:
        for src in (pki.cert("server"), pki.key("server"), pki.ca):
            shutil.copy(src, home / src.name)
    path = home / "web-config.yml"
    path.write_text(text)
    return path


MTLS = """\
tls_server_config:
  cert_file: server.crt
  key_file: server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.crt
  min_version: TLS12
  max_version: TLS13
  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256]
  curve_preferences: [CurveP256]
  prefer_server_cipher_suites: false
http_server_config:
  http2: false
  headers:
    X-Frame-Options: deny
    X-Content-Type-Options: nosniff
    Strict-Transport-Security: max-age=31536000
basic_auth_users:
  alice: {alice}
"""

#: Files node_exporter accepts, each with what kvwatch reads from it.
ACCEPTED = {
    "mtls": MTLS.format(alice=HTPASSWD),
    "empty": "",
    "basic auth only": f"basic_auth_users:\n  alice: '{SECRET}'\n",
    "verify if given, the host's roots": (
        "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
        "  client_auth_type: VerifyClientCertIfGiven\n"
    ),
    "empty sections": "tls_server_config:\nhttp_server_config:\nbasic_auth_users:\n",
    "TLS 1.3 suite names (ignored, as Go does)": (
        "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
        "  cipher_suites: [TLS_AES_128_GCM_SHA256]\n  min_version: TLS13\n"
    ),
}
TLS = "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
#: Files node_exporter refuses, each with the problem kvwatch names.
REFUSED = {  # file: the problem kvwatch names
    "foo: 1\n": "foo: unknown key",
    TLS + "  cert_fil: x\n": "tls_server_config.cert_fil: unknown key",
    "tls_server_config:\n  cert_file: server.crt\n": "tls_server_config.key_file: missing",
    "tls_server_config:\n  client_auth_type: NoClientCert\n": "tls_server_config.cert_file: missing",
    TLS + "  client_auth_type: Sometimes\n": "client_auth_type: invalid ClientAuth 'Sometimes'",
    TLS + "  client_ca_file: ca.crt\n": "tls_server_config.client_ca_file: set without a client_auth_type",
    TLS + "  min_version: TLS14\n": "tls_server_config.min_version: unknown TLS version 'TLS14'",
    TLS + "  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]\n": "tls_server_config.cipher_suites: unknown cipher",
    TLS + "  curve_preferences: [CurveP999]\n": "curve_preferences: unknown curve 'CurveP999'",
    TLS.replace("server.crt", "nope.crt"): "tls_server_config.cert_file, key_file: cannot load",
    "http_server_config:\n  headers:\n    X-Frame-Options: allow\n": "X-Frame-Options: must be deny or",
    "http_server_config:\n  headers:\n    Server: kvwatch\n": "headers.Server: HTTP header 'Server' can",
    "basic_auth_users:\n  alice: plaintext\n": "basic_auth_users.alice: not a bcrypt hash",
    f"basic_auth_users:\n  alice: '{scrypt_hash('pw')}'\n": "basic_auth_users.alice: not a bcrypt hash",
    f"basic_auth_users:\n  alice: '{HTPASSWD}'\n  alice: '{HTPASSWD}'\n": "key 'alice' already set",
    "rate_limit:\n  interval: 1s\n  burst: 20\n": "rate_limit: not supported by kvwatch",
}

#: Settings node_exporter takes that kvwatch refuses (Python's ssl cannot honour them, or nothing can).
DIVERGENT = {
    "  client_auth_type: RequireAnyClientCert\n": "client_auth_type: RequireAnyClientCert admits any",
    "  curve_preferences: [X25519, CurveP256]\n": "curve_preferences: Python's ssl sets one curve",
    "  min_version: TLS13\n  max_version: TLS12\n": "min_version: above max_version",
}


def kvwatch_verdict(path: Path) -> str | None:
    """None when kvwatch loads the web config, else its problems on one line."""
    try:
        load_web_config(path)
    except ConfigError as err:
        return "; ".join(err.problems)
    return None


def node_exporter_verdict(path: Path) -> str | None:
    """None when the real node_exporter serves with `--web.config.file=path`, else its error."""
    exe = shutil.which("prometheus-node-exporter")
    assert exe is not None, "Debian's prometheus-node-exporter is a test dependency"
    log = path.with_suffix(".node_exporter.log")
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [exe, f"--web.config.file={path}", f"--web.listen-address=127.0.0.1:{free_port()}",
             "--collector.disable-defaults"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    try:
        wait_until(lambda: proc.poll() is not None or b"TLS is" in log.read_bytes(), 20.0, "node_exporter")
        if proc.poll() is not None:
            return log.read_text(errors="replace").strip().splitlines()[-1]
        return None
    finally:
        proc.kill()
        proc.wait(10)


@pytest.mark.slow  # runs the real node_exporter once per file
def test_kvwatch_accepts_and_refuses_the_files_node_exporter_does(tmp_path: Path, pki: Pki) -> None:
    """The same web-config.yml files go to node_exporter and kvwatch: the same verdicts, with the key."""
    for i, (name, text) in enumerate(ACCEPTED.items()):
        path = write(tmp_path / f"ok{i}", text, pki)
        assert (name, None, None) == (name, node_exporter_verdict(path), kvwatch_verdict(path))
    for i, (text, problem) in enumerate(REFUSED.items()):
        path = write(tmp_path / f"bad{i}", text, pki)
        refused_by_node_exporter = node_exporter_verdict(path)
        assert refused_by_node_exporter is not None, text
        assert problem in (kvwatch_verdict(path) or ""), (
            text,
            kvwatch_verdict(path),
            refused_by_node_exporter,
        )


def test_files_node_exporter_refuses_are_refused_with_the_key(tmp_path: Path, pki: Pki) -> None:
    """Each refused file names its key and reason (the quick half of the parity test)."""
    for i, (text, problem) in enumerate(REFUSED.items()):
        assert problem in (kvwatch_verdict(write(tmp_path / f"bad{i}", text, pki)) or ""), text


def test_settings_pythons_ssl_cannot_honour_are_refused_by_name(tmp_path: Path, pki: Pki) -> None:
    """Unverified client certificates and curve preference lists: a clear refusal naming the key."""
    for i, (extra, problem) in enumerate(DIVERGENT.items()):
        assert "tls_server_config." + problem in (
            kvwatch_verdict(write(tmp_path / f"c{i}", TLS + extra, pki)) or ""
        )


def test_what_the_mtls_file_sets(tmp_path: Path, pki: Pki) -> None:
    """The full file: TLS settings, users and headers as given, paths from the file's directory."""
    config = load_web_config(write(tmp_path, MTLS.format(alice=HTPASSWD), pki))
    assert config.tls is not None
    assert (tmp_path / "ca.crt", "RequireAndVerifyClientCert", ("CurveP256",), False) == (
        config.tls.client_ca_file,
        config.tls.client_auth_type,
        config.tls.curve_preferences,
        config.tls.prefer_server_cipher_suites,
    )
    assert {"alice": HTPASSWD} == config.users
    assert "deny" == config.headers["X-Frame-Options"]
    context = config.ssl_context()
    assert context is not None and ssl.CERT_REQUIRED == context.verify_mode
    assert not context.options & ssl.OP_CIPHER_SERVER_PREFERENCE
    tls12 = {c["name"] for c in context.get_ciphers() if c["protocol"] == "TLSv1.2"}
    assert {"ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305"} == tls12


def test_mtls_refuses_a_client_without_a_certificate_and_serves_one_with(
    tmp_path: Path, pki: Pki, stranger: Pki
) -> None:
    """RequireAndVerifyClientCert: no certificate or one from another CA fails the handshake; ours scrapes."""
    ex = serve(load_web_config(write(tmp_path, MTLS.format(alice=SECRET), pki)))
    url = ex.url + "metrics"
    try:
        for context in (pki.client_context(None), stranger.client_context("intruder")):
            context.load_verify_locations(cafile=str(pki.ca))
            with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
                get(url, basic("alice", "secret"), context)
        status, _, body = get(url, basic("alice", "secret"), pki.client_context())
        assert (200, True) == (status, "kvwatch_test_things_total 3.0" in body)
        assert 401 == get(url, basic("alice", "wrong"), pki.client_context())[0]
    finally:
        ex.stop()


def test_configured_headers_are_on_every_response(tmp_path: Path) -> None:
    """http_server_config.headers go on 200s and 401s alike."""
    path = write(
        tmp_path, "http_server_config:\n  headers:\n    X-Frame-Options: deny\n" + ACCEPTED["basic auth only"]
    )
    ex = serve(load_web_config(path))
    try:
        for headers in ({}, basic("alice", "secret")):
            request = urllib.request.Request(ex.url + "healthz", headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=5) as resp:
                    frame = resp.headers["X-Frame-Options"]
            except urllib.error.HTTPError as err:
                frame = err.headers["X-Frame-Options"]
            assert "deny" == frame
    finally:
        ex.stop()


def test_htpasswd_hashes_are_accepted(tmp_path: Path) -> None:
    """A hash from the real `htpasswd -nBC 10` (apache2-utils) checks its password, and only it."""
    exe = shutil.which("htpasswd")
    assert exe is not None, "apache2-utils' htpasswd is a test dependency"
    done = subprocess.run(
        [exe, "-inBC", "10", "prom"], input="s3cret\n", capture_output=True, text=True, check=True
    )
    user, _, stored = done.stdout.strip().partition(":")
    assert stored.startswith("$2y$10$")
    path = write(tmp_path, f"basic_auth_users:\n  {user}: '{stored}'\n")
    auth = BasicAuth(load_web_config(path).users)
    assert ["ok", "wrong_password"] == [
        auth.check(basic("prom", p)["Authorization"]) for p in ("s3cret", "nope")
    ]


def test_hash_password_prints_a_bcrypt_hash_of_cost_10(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`kvwatch hash-password` reads stdin and prints `$2b$10$...`, which checks that password."""
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("s3cret\n"))
    assert 0 == main(["hash-password"])
    stored = capsys.readouterr().out.strip()
    assert stored.startswith("$2b$10$") and 60 == len(stored)
    assert "ok" == BasicAuth({"u": stored}).check(basic("u", "s3cret")["Authorization"])
    monkeypatch.setattr("sys.stdin", io.StringIO("x" * 73 + "\n"))
    assert 1 == main(["hash-password"])
    assert "72 bytes" in capsys.readouterr().err


def test_the_toml_form_still_loads_with_a_deprecation_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A TOML web config (by extension or content) loads its scrypt users and warns, naming the new form."""
    toml = f'[basic_auth_users]\nprom = "{scrypt_hash("pw")}"\n'
    for name in ("web.toml", "web.yml"):
        (tmp_path / name).write_text(toml)
        with caplog.at_level(logging.WARNING, "kvwatch.web.config"):
            auth = BasicAuth(load_web_config(tmp_path / name).users)
        assert "ok" == auth.check(basic("prom", "pw")["Authorization"])
        assert "deprecated" in caplog.text and "web-config.yml" in caplog.text
        caplog.clear()


def test_a_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    """Neither YAML nor TOML: the YAML error and its line."""
    with pytest.raises(ConfigError) as err:
        load_web_config(write(tmp_path, "basic_auth_users:\n  alice: [unclosed\n"))
    assert err.value.problems[0].startswith("not valid YAML: line ")


def test_check_config_reads_the_web_config_as_run_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A web config `kvwatch run` would refuse fails check-config with its key; a good one passes."""
    unit = Path(__file__).resolve().parents[1] / "systemd" / "kvwatch.service"
    (tmp_path / "web-config.yml").write_text("basic_auth_users:\n  prom: notahash\n")
    config = tmp_path / "kvwatch.toml"
    config.write_text(f'state_dir = "{tmp_path / "state"}"\n[server]\nweb_config = "web-config.yml"\n')
    assert 1 == main(["check-config", str(config), "--unit", str(unit)])
    err = capsys.readouterr().err
    assert "server.web_config: " in err and "basic_auth_users.prom: not a bcrypt hash" in err
    (tmp_path / "web-config.yml").write_text(f"basic_auth_users:\n  prom: '{hash_password('pw')}'\n")
    assert 0 == main(["check-config", str(config), "--unit", str(unit)])


@pytest.mark.slow  # a real Prometheus server
def test_a_real_prometheus_scrapes_kvwatch_over_mtls_with_basic_auth(tmp_path: Path, pki: Pki) -> None:
    """The daemon with a web-config.yml (mTLS, a bcrypt user): Prometheus scrapes it with its client cert."""
    web = write(tmp_path / "web", MTLS.format(alice=SECRET), pki)
    log = tmp_path / "app.log"
    log.write_text("".join(f"line {i}\n" for i in range(42)))
    body = f'[server]\nweb_config = "{web}"\n' + file_source("app", log)
    kv = Kvwatch(["--config", str(write_config(tmp_path / "kv.toml", body))], tmp_path / "kv.err")
    assert kv.url.startswith("https://127.0.0.1:")
    (tmp_path / "password").write_text("secret\n")
    tls = {"ca_file": str(pki.ca), "cert_file": str(pki.cert("client")), "key_file": str(pki.key("client"))}
    scrape = {
        "scheme": "https",
        "tls_config": tls,
        "basic_auth": {"username": "alice", "password_file": str(tmp_path / "password")},
    }
    url, prom = start_prometheus(tmp_path, [kv.url.removeprefix("https://")], scrape=scrape)
    try:
        found = wait_for(lambda: query(url, 'kvwatch_lines_total{source="app"}') or None, 30.0, "a sample")
        assert "42" == found[0]["value"][1]
        assert "1" == query(url, 'up{job="kvwatch"}')[0]["value"][1]
    finally:
        stop_prometheus(prom)
        assert 0 == kv.stop()
