"""The daemon's endpoints and web flags: /-/healthy, /-/ready, HEAD, `--web.listen-address` (several,
`:PORT` every interface), `--web.config.file`, `--log.level`; with a real daemon."""

from __future__ import annotations

import argparse
import base64
import http.client
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from daemon_helpers import ROOT, Kvwatch, file_source, free_port, wait_until, write_config

from kvwatch.cli.options import LOG_FORMATS, LOG_LEVELS, listen_address
from kvwatch.daemon.log import FORMATS, LEVELS
from kvwatch.web.auth import hash_password


def request(
    host: str, port: int, path: str, method: str = "GET", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """(status, headers but Date, body) of one request on its own connection."""
    conn = http.client.HTTPConnection(host, port, timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        resp = conn.getresponse()
        head = {k: v for k, v in resp.getheaders() if k != "Date"}
        return resp.status, head, resp.read()
    finally:
        conn.close()


def started(tmp_path: Path, *args: str) -> Kvwatch:
    """A daemon following one empty file, with `args`."""
    (tmp_path / "a.log").write_text("")
    config = write_config(tmp_path / "c.toml", file_source("a", tmp_path / "a.log"))
    return Kvwatch(["--config", str(config), *args], tmp_path / "kvwatch.log")


def port_of(daemon: Kvwatch) -> int:
    """The port of the daemon's first listener."""
    return int(daemon.url.rsplit(":", 1)[1])


def test_ready_waits_for_every_source_and_names_those_not_started(tmp_path: Path) -> None:
    """/-/ready is 503 naming a source whose opening has not finished, 200 once it has (naming it while it
    is down); /-/healthy is 200 all along. The docker source's container config is a FIFO: reading it
    blocks until it is written."""
    (tmp_path / "a.log").write_text("")
    box = tmp_path / "docker" / "containers" / "c0ffee"
    box.mkdir(parents=True)
    os.mkfifo(box / "config.v2.json")
    body = file_source("a", tmp_path / "a.log") + (
        f'[[source]]\nname = "gpu0"\nengine = "vllm"\ntype = "docker"\ncontainer = "vllm"\n'
        f'docker_root = "{tmp_path / "docker"}"\n'
    )
    daemon = Kvwatch(["--config", str(write_config(tmp_path / "c.toml", body))], tmp_path / "kvwatch.log")
    port = port_of(daemon)
    blocked = (503, b"sources not started yet: gpu0\n")  # (a, quick to open, may be named at first too)
    wait_until(lambda: request("127.0.0.1", port, "/-/ready")[::2] == blocked, 10.0, "only gpu0 not started")
    assert (200, b"ok\n") == request("127.0.0.1", port, "/-/healthy")[::2]
    assert 200 == request("127.0.0.1", port, "/healthz")[0]
    with open(box / "config.v2.json", "w") as fifo:  # (unblocks the reader; an empty config: no container)
        fifo.write("{}")
    wait_until(lambda: request("127.0.0.1", port, "/-/ready")[0] == 200, 10.0, "ready")
    status, _, text = request("127.0.0.1", port, "/-/ready")  # (started, but down: no such container)
    assert status == 200 and text.startswith(b"ok; down, retrying: gpu0 (") and b"a (" not in text
    assert 0 == daemon.stop()


def test_head_answers_as_get_without_the_body(tmp_path: Path) -> None:
    """HEAD on every endpoint: GET's status and headers (Content-Length included), no body; an unknown
    path is 404 for both; other methods are refused."""
    (tmp_path / "a.log").write_text("")
    daemon = started(tmp_path)
    port = port_of(daemon)
    wait_until(lambda: request("127.0.0.1", port, "/-/ready")[0] == 200, 10.0, "ready")
    for path in ("/-/healthy", "/-/ready", "/healthz", "/nope"):
        get, head = request("127.0.0.1", port, path), request("127.0.0.1", port, path, "HEAD")
        assert (get[0], get[1], b"") == head, path
        assert int(head[1]["Content-Length"]) == len(get[2]) > 0, path
    for path in ("/metrics", "/"):  # (their bodies change from one request to the next)
        get, head = request("127.0.0.1", port, path), request("127.0.0.1", port, path, "HEAD")
        assert (200, get[1]["Content-Type"], b"") == (head[0], head[1]["Content-Type"], head[2]), path
        assert sorted(get[1]) == sorted(head[1]) and int(head[1]["Content-Length"]) > 0, path
    assert 501 == request("127.0.0.1", port, "/metrics", "POST")[0]
    assert 0 == daemon.stop()


def test_basic_auth_guards_the_health_endpoints_too(tmp_path: Path) -> None:
    """`--web.config.file` gives the users; /-/healthy, /-/ready, HEAD and /healthz need them, as
    node_exporter's toolkit guards every path."""
    (tmp_path / "a.log").write_text("")
    (tmp_path / "web-config.yml").write_text(f"basic_auth_users:\n  prom: '{hash_password('pw')}'\n")
    config = write_config(tmp_path / "c.toml", file_source("a", tmp_path / "a.log"))
    daemon = Kvwatch(["--config", str(config), "--web.config.file", str(tmp_path / "web-config.yml")],
                     tmp_path / "kvwatch.log")  # fmt: skip
    port = port_of(daemon)
    good = {"Authorization": "Basic " + base64.b64encode(b"prom:pw").decode()}
    for path in ("/-/healthy", "/-/ready", "/healthz", "/metrics"):
        assert 401 == request("127.0.0.1", port, path)[0], path
        assert (401, b"") == request("127.0.0.1", port, path, "HEAD")[::2], path
    wait_until(lambda: request("127.0.0.1", port, "/-/ready", headers=good)[0] == 200, 10.0, "ready")
    assert (200, b"ok\n") == request("127.0.0.1", port, "/-/healthy", headers=good)[::2]
    assert 0 == daemon.stop()


def test_several_listen_addresses_and_every_interface(tmp_path: Path) -> None:
    """`--web.listen-address` repeats: an explicit IPv6 address, and `:PORT`, which answers on IPv4 and
    IPv6 loopback alike (every interface, as Go's net.Listen) and is warned about without auth."""
    (tmp_path / "a.log").write_text("")
    six, every = free_port(), free_port()
    config = write_config(tmp_path / "c.toml", file_source("a", tmp_path / "a.log"))
    args = [
        "--config",
        str(config),
        "--web.listen-address",
        f"[::1]:{six}",
        "--web.listen-address",
        f":{every}",
    ]
    daemon = Kvwatch(args, tmp_path / "kvwatch.log")
    assert 200 == request("127.0.0.1", port_of(daemon), "/-/healthy")[0]
    assert 200 == request("::1", six, "/-/healthy")[0]
    assert (200, 200) == (
        request("127.0.0.1", every, "/-/healthy")[0],
        request("::1", every, "/-/healthy")[0],
    )
    log = (tmp_path / "kvwatch.log").read_text()
    assert f"http://[::1]:{six}/ http://[::]:{every}/" in log
    assert "listening on every interface beyond loopback WITHOUT authentication" in log
    with pytest.raises(OSError):  # (the port is taken on IPv4 too)
        socket.create_server(("0.0.0.0", every)).close()
    assert 0 == daemon.stop()


def test_listen_address_forms() -> None:
    """ADDRESS:PORT, [IPV6]:PORT and :PORT (every interface: address ""); a bare IPv6 is refused."""
    assert [("127.0.0.1", 7433), ("::1", 7433), ("", 7433), ("localhost", 0)] == [
        listen_address(text) for text in ("127.0.0.1:7433", "[::1]:7433", ":7433", "localhost:0")
    ]
    for text in ("::1:7433", "7433", "127.0.0.1:65536", "[::1]"):
        with pytest.raises(argparse.ArgumentTypeError):
            listen_address(text)


def test_log_level_error_leaves_info_out(tmp_path: Path) -> None:
    """`--log.level error` drops the info lines (the start's "listening on"); the names match the logging
    setup's (`--log.format` too)."""
    assert (set(LOG_LEVELS), set(LOG_FORMATS)) == (set(LEVELS), set(FORMATS))
    (tmp_path / "a.log").write_text("")
    config = write_config(tmp_path / "c.toml", file_source("a", tmp_path / "a.log"))
    port = free_port()
    argv = [sys.executable, "-m", "kvwatch", "run", "--config", str(config), "--listen", f"127.0.0.1:{port}",
            "--log.level", "error"]  # fmt: skip
    with open(tmp_path / "kvwatch.log", "wb") as err:
        proc = subprocess.Popen(argv, cwd=ROOT, stderr=err)
    try:

        def up() -> bool:
            assert proc.poll() is None, (tmp_path / "kvwatch.log").read_text()
            try:
                return request("127.0.0.1", port, "/-/ready")[0] == 200
            except OSError:
                return False

        wait_until(up, 15.0, "ready")
        proc.terminate()
        assert 0 == proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert "" == (tmp_path / "kvwatch.log").read_text()


def test_a_kept_alive_connection_answers_request_after_request(tmp_path: Path) -> None:
    """HTTP/1.1 keep-alive, as Prometheus scrapes: three requests on one connection, answered in order."""
    (tmp_path / "a.log").write_text("")
    daemon = started(tmp_path)
    conn = http.client.HTTPConnection("127.0.0.1", port_of(daemon), timeout=10)
    seen = []
    try:
        for path in ("/-/healthy", "/metrics", "/nope"):
            conn.request("GET", path)
            resp = conn.getresponse()
            resp.read()
            seen.append((resp.status, conn.sock))
    finally:
        conn.close()
    assert [200, 200, 404] == [status for status, _ in seen]
    assert seen[0][1] is not None and all(sock is seen[0][1] for _, sock in seen)  # (one connection)
    assert 0 == daemon.stop()


def raw(port: int, chunks: list[bytes], shut: bool = False) -> bytes:
    """Send `chunks` one by one on a raw connection (then shut the sending side down); all that comes back."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        for chunk in chunks:
            sock.sendall(chunk)
        if shut:
            sock.shutdown(socket.SHUT_WR)
        answer = b""
        while data := sock.recv(65536):
            answer += data
        return answer


def test_requests_in_pieces_half_closed_or_too_large(tmp_path: Path) -> None:
    """A request sent byte by byte is answered; one whose client then shuts its side (`printf … | nc`) too;
    headers over 32 KiB get 431 and the connection closed."""
    daemon = started(tmp_path)
    port = port_of(daemon)
    request_bytes = b"GET /-/healthy HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    assert raw(port, [bytes([b]) for b in request_bytes]).startswith(b"HTTP/1.1 200 ")
    assert raw(port, [b"GET /-/healthy HTTP/1.0\r\n\r\n"], shut=True).endswith(b"\r\n\r\nok\n")
    big = b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * (40 << 10) + b"\r\n\r\n"
    assert raw(port, [big]).startswith(b"HTTP/1.1 431 ")
    assert 0 == daemon.stop()
