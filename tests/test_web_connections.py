"""kvwatch.web.connections: a verified request goes ahead of those already waiting for a worker."""

from __future__ import annotations

import socket
import threading
from typing import Any

from daemon_helpers import wait_until

from kvwatch.web import connections
from kvwatch.web.connections import Server, bind, send_all


def test_an_urgent_request_overtakes_the_queue(monkeypatch: Any) -> None:
    """With the one worker held, requests queue; the urgent one is answered before the others."""
    monkeypatch.setattr(connections, "WORKERS", 1)
    gate, order = threading.Event(), []

    def answer(request: bytes, sock: socket.socket, peer: tuple[Any, ...]) -> bool:
        path = request.split(b" ")[1].decode()
        if path == "/hold":
            gate.wait(10)
        order.append(path)
        send_all(sock, b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
        return False

    server = Server([bind("127.0.0.1", 0)], answer, urgent=lambda head: b"X-Urgent" in head)
    server.start()
    port = server.listeners[0].getsockname()[1]
    clients = []
    try:
        for path, extra in [("/hold", ""), ("/a", ""), ("/b", ""), ("/urgent", "X-Urgent: 1\r\n")]:
            client = socket.create_connection(("127.0.0.1", port), timeout=10)
            client.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n{extra}\r\n".encode())
            clients.append(client)
            wait_until(lambda: server.in_work == len(clients), what=f"{path} handed to the workers")
        gate.set()
        wait_until(lambda: len(order) == 4, what="every request answered")
        assert ["/hold", "/urgent", "/a", "/b"] == order
    finally:
        for client in clients:
            client.close()
        server.stop()
