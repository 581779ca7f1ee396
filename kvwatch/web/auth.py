"""Basic auth for the web endpoints: bounded hash checks, cached successes, unknown users cost the same.

A bcrypt check (cost 10) is ~70 ms of one core, a legacy scrypt one 16 MiB as well: checks run on
MAX_CHECKS threads of their own (one, as the exporter toolkit's mutex), and a request that waits
CHECK_WAIT seconds for one is refused with 429. Their own threads, not the request's: glibc keeps
a freed 16 MiB buffer in the arena of the thread that used it, so scrypt on every request thread
grew the process by 16 MiB per thread.
Only successes are cached: a cache of failures would let a flood of wrong passwords evict the
scraper's entry (making its next scrape pay, and wait, behind the flood), and would save nothing
against a flood of different passwords. A success stays valid as long as the users do, and those
are fixed for a BasicAuth's life.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import secrets
import threading
from collections import Counter as Tally
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor

import bcrypt
from prometheus_client import CollectorRegistry, Counter

#: Why a request was refused (the label of kvwatch_web_auth_failures_total).
REASONS = ("missing", "malformed", "unknown_user", "wrong_password", "throttled")
MAX_CHECKS = 1
CHECK_WAIT = 0.25
CACHE_SIZE = 64
BCRYPT_COST = 10
#: A bcrypt hash as Go's bcrypt.Cost takes it (htpasswd writes $2y$, Python's bcrypt $2b$).
BCRYPT = re.compile(r"\$2[aby]?\$(\d\d)\$[./A-Za-z0-9]{53}")
#: scrypt cost of the legacy TOML form: 16 MiB of memory and ~50 ms per check.
N, R, P = 16384, 8, 1
_ALPHABET = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def count_failures(registry: CollectorRegistry) -> Callable[[str], None]:
    """What counts a refusal in `kvwatch_web_auth_failures_total{reason}` (every reason from 0)."""
    counter = Counter(
        "kvwatch_web_auth_failures",
        "Requests refused by basic auth, by reason (" + ", ".join(REASONS) + ").",
        ["reason"],
        registry=registry,
    )
    for reason in REASONS:
        counter.labels(reason)
    return lambda reason: counter.labels(reason).inc()


def hash_password(password: str) -> str:
    """A bcrypt hash of `password` (cost 10, as `htpasswd -nBC 10`); ValueError over 72 bytes."""
    return bcrypt.hashpw(password.encode("utf-8"), bcrypt.gensalt(BCRYPT_COST)).decode("ascii")


def scrypt_hash(password: str, salt: bytes | None = None) -> str:
    """`scrypt$N$r$p$salt$hash` (base64) of `password`: the legacy TOML form's hash."""
    salt = os.urandom(16) if salt is None else salt
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=N, r=R, p=P, dklen=32)
    b64 = base64.b64encode
    return f"scrypt${N}${R}${P}${b64(salt).decode()}${b64(digest).decode()}"


def check_password(password: bytes, stored: str) -> bool:
    """Whether `password` matches a bcrypt or legacy scrypt hash (False for a malformed one)."""
    if stored.startswith("$2"):
        try:  # bcrypt reads 72 bytes, as htpasswd and Go's bcrypt do
            return bcrypt.checkpw(password[:72], stored.encode("ascii"))
        except ValueError:
            return False
    try:
        kind, n, r, p, salt, digest = stored.split("$")
        want = base64.b64decode(digest, validate=True)
        got = hashlib.scrypt(
            password,
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


def dummy_hash(hashes: Iterable[str]) -> str:
    """A hash no password matches, of the kind and cost most of `hashes` have, for unknown users."""
    costs = Tally(_cost(stored) for stored in hashes)
    cost = max(costs, key=lambda c: (costs[c], c)) if costs else f"bcrypt${BCRYPT_COST}"
    kind, _, params = cost.partition("$")
    if kind == "bcrypt":
        # gensalt draws a well-formed salt; the digest part is never computed, only compared.
        digest = "".join(secrets.choice(_ALPHABET) for _ in range(31))
        return bcrypt.gensalt(int(params)).decode("ascii") + digest
    b64 = base64.b64encode
    return f"scrypt${params}${b64(os.urandom(16)).decode()}${b64(os.urandom(32)).decode()}"


def _cost(stored: str) -> str:
    """`bcrypt$10` or `scrypt$16384$8$1`: what a check of `stored` costs."""
    match = BCRYPT.fullmatch(stored)
    if match:
        return f"bcrypt${int(match[1])}"
    return "scrypt$" + "$".join(stored.split("$")[1:4])


class BasicAuth:
    """Checks `Authorization` headers against users' hashes; thread-safe."""

    def __init__(
        self,
        users: Mapping[str, str],
        failed: Callable[[str], None] = lambda reason: None,
        *,
        max_checks: int = MAX_CHECKS,
        wait: float = CHECK_WAIT,
        cache_size: int = CACHE_SIZE,
        check: Callable[[bytes, str], bool] = check_password,
    ) -> None:
        """`failed(reason)` is called for each refusal (a counter's inc, in the daemon)."""
        self.users = dict(users)
        self._failed, self._wait, self._size, self._check = failed, wait, cache_size, check
        self._dummy = dummy_hash(self.users.values())
        self._slots = threading.BoundedSemaphore(max_checks)
        self._hasher = ThreadPoolExecutor(max_checks, thread_name_prefix="kvwatch-auth")
        # Cache keys are HMACs under a per-process key: the cache never holds a password, nor
        # anything a password can be tested against offline; a dict lookup on them leaks nothing.
        self._key = os.urandom(32)
        self._ok: OrderedDict[bytes, None] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        """Whether any user is configured (else every request passes)."""
        return bool(self.users)

    def known(self, header: str | None) -> bool:
        """Whether this `Authorization` passes without a hash check: no users, or verified already."""
        if not self.users:
            return True
        scheme, _, token = (header or "").strip().partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            raw = base64.b64decode(token.strip(), validate=True)
        except ValueError:
            return False
        key = hmac.new(self._key, raw, hashlib.sha256).digest()
        with self._lock:
            return key in self._ok

    def check(self, header: str | None) -> str:
        """`ok`, or the reason (one of REASONS) the request with this `Authorization` is refused."""
        reason = self._verdict(header)
        if reason != "ok":
            self._failed(reason)
        return reason

    def _verdict(self, header: str | None) -> str:
        """The verdict, uncounted."""
        if not self.users:
            return "ok"
        if not header:
            return "missing"
        scheme, _, token = header.strip().partition(" ")
        if scheme.lower() != "basic":
            return "malformed"
        try:
            raw = base64.b64decode(token.strip(), validate=True)
            user_bytes, colon, password = raw.partition(b":")
            user = user_bytes.decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return "malformed"
        if not colon:
            return "malformed"
        key = hmac.new(self._key, raw, hashlib.sha256).digest()
        with self._lock:
            if key in self._ok:
                self._ok.move_to_end(key)
                return "ok"
        stored = self.users.get(user)
        # An unknown user is checked against a hash of the same cost: its answer takes as long.
        if not self._slots.acquire(timeout=self._wait):
            return "throttled"
        try:
            good = self._hasher.submit(
                self._check, password, self._dummy if stored is None else stored
            ).result()
        finally:
            self._slots.release()
        if stored is None:
            return "unknown_user"
        if not good:
            return "wrong_password"
        with self._lock:
            self._ok[key] = None
            while len(self._ok) > self._size:
                self._ok.popitem(last=False)
        return "ok"
