"""A small DevTools-protocol client for Debian's headless chromium, over `--remote-debugging-pipe` (no
websocket, no port): open a page, read what it rendered, its console errors and the requests it made,
take screenshots."""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from test_landing_browser import CHROMIUM_FLAGS

#: The suite's flags for chromium (headless, no sandbox, nothing reaching out), and quieter drawing.
FLAGS = (*CHROMIUM_FLAGS, "--disable-extensions", "--hide-scrollbars", "--font-render-hinting=none")


def _high(fd: int) -> int:
    """`fd` moved above the descriptors the child's pipe takes (3 and 4)."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return moved


class Browser:
    """One headless chromium, driven over its DevTools pipe (fd 3: commands in, fd 4: replies out)."""

    def __init__(self, profile: Path, timeout: float = 60.0) -> None:
        chromium = shutil.which("chromium")
        assert chromium is not None, "Debian's chromium is a test dependency"
        to_child, to_us = os.pipe(), os.pipe()
        child_in, self._write = _high(to_child[0]), _high(to_child[1])
        self._read, child_out = _high(to_us[0]), _high(to_us[1])

        def wire() -> None:
            os.dup2(child_in, 3)
            os.dup2(child_out, 4)

        argv = [chromium, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"]
        self.process = subprocess.Popen(
            argv,
            pass_fds=(3, 4),
            preexec_fn=wire,  # noqa: PLW1509 (no thread runs in the child)
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(child_in)
        os.close(child_out)
        self.timeout = timeout
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []

    def close(self) -> None:
        """End the browser (and wait for it)."""
        with contextlib.suppress(OSError, AssertionError):
            self.send("Browser.close")
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._write)
        os.close(self._read)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _message(self, deadline: float) -> dict[str, Any]:
        """The next message from the browser."""
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            assert left > 0, "chromium did not answer in time"
            ready, _, _ = select.select([self._read], [], [], left)
            if ready:
                chunk = os.read(self._read, 1 << 20)
                assert chunk, "chromium closed its DevTools pipe"
                self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> Any:
        """A command's result (events meanwhile are kept in `events`)."""
        self._next += 1
        ask: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            ask["sessionId"] = session
        os.write(self._write, json.dumps(ask).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            message = self._message(deadline)
            if message.get("id") == self._next:
                assert "error" not in message, f"{method}: {message['error']}"
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    def wait_event(self, method: str, session: str, after: int, deadline: float) -> dict[str, Any]:
        """The first event `method` of `session` from the `after`th kept on (kept or still to come)."""
        for event in self.events[after:]:
            if event["method"] == method and event.get("sessionId") == session:
                return event
        while True:
            message = self._message(deadline)
            if "method" in message:
                self.events.append(message)
                if message["method"] == method and message.get("sessionId") == session:
                    return message


class Page:
    """One tab of a Browser, its console and network watched from before it loads anything."""

    def __init__(self, browser: Browser, width: int = 1280, height: int = 900) -> None:
        self.browser = browser
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")
        self.width = width
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )

    def send(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """A command to this tab."""
        return self.browser.send(method, params, self.session)

    def load(self, url: str) -> None:
        """Navigate to `url` and wait for its load event."""
        after = len(self.browser.events)
        self.send("Page.navigate", {"url": url})
        deadline = time.monotonic() + self.browser.timeout
        self.browser.wait_event("Page.loadEventFired", self.session, after, deadline)

    def evaluate(self, expression: str) -> Any:
        """`expression`'s value in the page (JSON-able)."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def wait_for(self, expression: str, deadline: float) -> Any:
        """`expression`'s value once it is truthy (polled until `deadline`)."""
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            assert time.monotonic() < deadline, f"never true: {expression}"
            time.sleep(0.05)

    def screenshot(
        self, path: Path, *, scale: float = 1.0, top: float = 0, height: float | None = None
    ) -> None:
        """A PNG of the page from `top` (CSS pixels) for `height` (or to its end), scaled by `scale`."""
        size = self.send("Page.getLayoutMetrics")["cssContentSize"]
        tall = min(height or size["height"], size["height"] - top)
        clip = {"x": 0, "y": top, "width": self.width, "height": tall, "scale": scale}
        shot = self.send(
            "Page.captureScreenshot", {"format": "png", "clip": clip, "captureBeyondViewport": True}
        )
        path.write_bytes(base64.b64decode(shot["data"]))

    def _events(self, keep: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        return [e for e in self.browser.events if e.get("sessionId") == self.session and keep(e)]

    def console_errors(self) -> list[str]:
        """Uncaught exceptions, console.error calls and error log entries, as text."""
        found = []
        for event in self._events(lambda e: True):
            method, params = event["method"], event.get("params", {})
            if method == "Runtime.exceptionThrown":
                found.append(json.dumps(params["exceptionDetails"])[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(json.dumps(params.get("args"))[:500])
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                found.append(params["entry"].get("text", "")[:500])
        return found

    def requests(self) -> list[str]:
        """The URL of every request the page made (the page's own included)."""
        return [
            e["params"]["request"]["url"]
            for e in self._events(lambda e: e["method"] == "Network.requestWillBeSent")
        ]
