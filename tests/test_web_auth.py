"""Basic auth: bounded hash checks, cached successes, reasons counted, unknown users as slow as known ones."""

from __future__ import annotations

import base64
import gc
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import bcrypt
import pytest
from daemon_helpers import Kvwatch, file_source, wait_until, write_config

from kvwatch.web.auth import BasicAuth, check_password, dummy_hash, hash_password, scrypt_hash


def basic(user: str, password: str) -> str:
    """An Authorization header's value."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def counting(calls: list[str]) -> Callable[[bytes, str], bool]:
    """A check that records each stored hash it is asked about and accepts the password `pw`."""

    def check(password: bytes, stored: str) -> bool:
        calls.append(stored)
        return password == b"pw"

    return check


def test_each_refusal_has_its_reason_and_no_user_name() -> None:
    """missing, malformed, unknown_user, wrong_password: returned and counted by reason alone."""
    refused: list[str] = []
    auth = BasicAuth({"prom": "h"}, refused.append, check=counting([]))
    headers = [None, "Bearer x", "Basic !!!", "Basic " + base64.b64encode(b"no-colon").decode()]
    headers += [basic("eve", "pw"), basic("prom", "nope"), basic("prom", "pw")]
    verdicts = [auth.check(header) for header in headers]
    expected = ["missing", "malformed", "malformed", "malformed", "unknown_user", "wrong_password", "ok"]
    assert (expected, expected[:-1]) == (verdicts, refused)


def test_no_users_lets_everything_through() -> None:
    """Without basic_auth_users there is nothing to check."""
    assert ("ok", False) == (BasicAuth({}).check(None), BasicAuth({}).enabled)


def held_text(obj: object) -> list[bytes | str]:
    """Every str and bytes an object holds, through its containers (what a memory dump would show)."""
    found: list[bytes | str] = []
    seen: set[int] = set()
    todo = [obj]
    while todo:
        item = todo.pop()
        if id(item) in seen or isinstance(item, type):
            continue
        seen.add(id(item))
        if isinstance(item, bytes | str):
            found.append(item)
        elif not callable(item) or item is obj:
            todo.extend(gc.get_referents(item))
    return found


def test_successes_are_cached_by_keyed_hash_failures_are_not() -> None:
    """A right password is hashed once; a wrong one every time; the cache holds no password."""
    calls: list[str] = []
    auth = BasicAuth({"prom": "h"}, check=counting(calls))
    for _ in range(3):
        assert "ok" == auth.check(basic("prom", "pw"))
        assert "wrong_password" == auth.check(basic("prom", "nope"))
    assert 4 == len(calls)
    secrets = (b"prom:pw", basic("prom", "pw").split()[1])  # the credentials, and as the header sends them
    held = held_text(auth)
    assert not [text for text in held for secret in secrets if type(secret) is type(text) and secret in text]
    assert not BasicAuth({"prom": "h"}, check=counting([])).known(basic("prom", "pw")), "its own cache"


def test_known_says_which_requests_need_no_hash_check() -> None:
    """Verified credentials (or none needed) are known; new, wrong or malformed ones are not."""
    calls: list[str] = []
    auth = BasicAuth({"prom": "h"}, check=counting(calls))
    assert not auth.known(basic("prom", "pw"))
    assert "ok" == auth.check(basic("prom", "pw"))
    assert auth.known(basic("prom", "pw"))
    assert not any(auth.known(h) for h in (basic("prom", "nope"), "Basic !!", "Bearer x", None))
    assert 1 == len(calls), "known() never hashes"
    assert BasicAuth({}).known(None)


def test_the_cache_is_bounded() -> None:
    """Past cache_size successes the least recently used one is checked again."""
    calls: list[str] = []
    auth = BasicAuth({"a": "ha", "b": "hb", "c": "hc"}, check=counting(calls), cache_size=2)
    for user in "abcab":
        auth.check(basic(user, "pw"))
    assert ["ha", "hb", "hc", "ha", "hb"] == calls
    assert [True, True, False] == [auth.known(basic(user, "pw")) for user in "abc"]


def test_checks_beyond_the_bound_are_throttled_not_queued() -> None:
    """With one check running and max_checks=1, another waits `wait` seconds, then is refused as throttled."""
    started, release = threading.Event(), threading.Event()

    def slow(password: bytes, stored: str) -> bool:
        started.set()
        release.wait(10)
        return False

    refused: list[str] = []
    auth = BasicAuth({"prom": "h"}, refused.append, max_checks=1, wait=0.05, check=slow)
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(auth.check, basic("prom", "x"))
        assert started.wait(10)
        assert "throttled" == auth.check(basic("eve", "y"))
        release.set()
        assert "wrong_password" == first.result(10)
    assert ["throttled", "wrong_password"] == refused


def test_the_dummy_hash_has_the_users_cost_and_matches_nothing() -> None:
    """Unknown users are checked against a hash of the configured kind and cost that no password matches."""
    users = [bcrypt.hashpw(b"x", bcrypt.gensalt(6)).decode(), hash_password("y")]
    users.append(bcrypt.hashpw(b"z", bcrypt.gensalt(6)).decode())
    dummy = dummy_hash(users)
    assert (dummy.startswith("$2b$06$"), 60) == (True, len(dummy))
    assert not check_password(b"x", dummy) and not check_password(b"", dummy)
    legacy = dummy_hash([scrypt_hash("pw")])
    assert legacy.startswith("scrypt$16384$8$1$") and not check_password(b"pw", legacy)
    assert dummy_hash([]).startswith("$2b$10$")


def test_an_unknown_user_takes_as_long_as_a_wrong_password() -> None:
    """Median times of many interleaved checks (cost 8): an unknown user within 0.6-1.7x of a known one."""
    # Without the dummy check an unknown user would answer in microseconds, a thousandth of a known one.
    auth = BasicAuth({"prom": bcrypt.hashpw(b"right", bcrypt.gensalt(8)).decode()})
    times: dict[str, list[float]] = {"unknown_user": [], "wrong_password": []}
    for _ in range(21):
        for user in ("eve", "prom"):
            start = time.perf_counter()
            verdict = auth.check(basic(user, "guess"))
            times[verdict].append(time.perf_counter() - start)
    unknown, known = statistics.median(times["unknown_user"]), statistics.median(times["wrong_password"])
    assert 0.6 < unknown / known < 1.7, (unknown, known)
    assert known > 0.005, "a real bcrypt check ran"


def rss_mb(pid: int) -> float:
    """The process's resident set, MB, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


#: The attackers, in a process of their own (so their threads do not slow the timed scrape's client):
#: argv = URL CLIENTS TRIES; prints each response's status.
ATTACKERS = """
import base64, sys, threading, urllib.error, urllib.request
url, clients, tries = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
statuses = []
def attack(i):
    for j in range(tries):
        auth = "Basic " + base64.b64encode(f"prom:wrong-{i}-{j}".encode()).decode()
        try:
            urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": auth}), timeout=30)
            statuses.append(200)
        except urllib.error.HTTPError as err:
            statuses.append(err.code)
threads = [threading.Thread(target=attack, args=(i,)) for i in range(clients)]
for t in threads: t.start()
for t in threads: t.join()
print(" ".join(map(str, statuses)))
"""


def flood(kv: Kvwatch, good: str, clients: int = 64, tries: int = 5) -> tuple[float, float, float, int]:
    """(peak RSS MB, slowest correct scrape s, wall s, scrapes) under `clients` x `tries` wrong passwords."""
    argv = [sys.executable, "-c", ATTACKERS, kv.url + "/metrics", str(clients), str(tries)]
    peak, slowest, scrapes = rss_mb(kv.proc.pid), 0.0, 0
    start = time.monotonic()
    attackers = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        while attackers.poll() is None:
            begin = time.monotonic()
            assert 200 == kv.get("/metrics", {"Authorization": good})[0]
            slowest, scrapes = max(slowest, time.monotonic() - begin), scrapes + 1
            peak = max(peak, rss_mb(kv.proc.pid))
            assert time.monotonic() - start < 120, "the flood is bounded"
        wall = time.monotonic() - start
        statuses = attackers.communicate(timeout=10)[0].split()
    finally:
        attackers.kill()
    assert sorted(set(statuses)) in (["401"], ["401", "429"]) and clients * tries == len(statuses)
    return peak, slowest, wall, scrapes


@pytest.mark.slow  # a flood of 320 wrong passwords against the real daemon
@pytest.mark.parametrize("form", ["yaml", "toml"])
def test_a_flood_of_wrong_passwords_leaves_memory_flat_and_scrapes_fast(tmp_path: Path, form: str) -> None:
    """64 clients x 5 wrong passwords: RSS < 150 MB, a correct scrape < 0.5 s, every failure counted."""
    if form == "yaml":
        web = tmp_path / "web-config.yml"
        web.write_text(f"basic_auth_users:\n  prom: '{hash_password('right')}'\n")
    else:  # the deprecated form: scrypt checks of 16 MiB each
        web = tmp_path / "web.toml"
        web.write_text(f'[basic_auth_users]\nprom = "{scrypt_hash("right")}"\n')
    log = tmp_path / "app.log"
    log.write_text("line\n")
    body = f'[server]\nweb_config = "{web}"\n' + file_source("app", log)
    kv = Kvwatch(["--config", str(write_config(tmp_path / "kv.toml", body))], tmp_path / "kv.err")
    good = basic("prom", "right")
    wait_until(lambda: 200 == kv.get("/metrics", {"Authorization": good})[0], what="a correct scrape")
    peak, slowest, wall, scrapes = flood(kv, good)
    print(f"\n{form}: peak RSS {peak:.1f} MB, slowest correct scrape {slowest * 1000:.0f} ms of {scrapes}, "
          f"flood {wall:.1f} s")  # fmt: skip
    _, _, text = kv.get("/metrics", {"Authorization": good})
    counted = {
        reason: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        for reason in ("wrong_password", "throttled")
        if line.startswith(f'kvwatch_web_auth_failures_total{{reason="{reason}"}}')
    }
    assert 320 == counted["wrong_password"] + counted["throttled"], counted
    samples = [line for line in text.splitlines() if line.startswith("kvwatch_web_auth_failures_total")]
    assert all(line.startswith('kvwatch_web_auth_failures_total{reason="') for line in samples), samples
    assert all("prom" not in line for line in samples)
    assert (peak < 150, slowest < 0.5) == (True, True), (peak, slowest)
    assert 0 == kv.stop()
