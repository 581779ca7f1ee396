"""What the systemd unit lets the daemon do: its user, writable and hidden paths, credentials.

`check-config` judges the config against the unit that will run it (the installed kvwatch.service,
else the shipped one; for a user other than root, their installed user unit first, else the shipped
user unit): whether that user can write `state_dir` and read the sources, and which notifier URLs
systemd hands over (LoadCredential=). A user unit (`WantedBy=default.target`) runs as the user who
starts it, and its StateDirectory= lies under ~/.local/state. The verdicts are pure functions of the parsed
unit, the path and two lookups (the account, a stat) passed in.
"""

from __future__ import annotations

import glob
import grp
import itertools
import os
import pwd
import shlex
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import MappingProxyType

from kvwatch.assets import asset_bytes
from kvwatch.config.types import Config
from kvwatch.sources.settings import (
    DockerSettings,
    FileSettings,
    JournaldSettings,
    PodsSettings,
    SourceConfig,
)

#: Where an installed unit is looked for, in systemd's order (the first found wins).
INSTALLED = (
    Path("/etc/systemd/system/kvwatch.service"),
    Path("/lib/systemd/system/kvwatch.service"),
    Path("/usr/lib/systemd/system/kvwatch.service"),
)
#: Where a user's own installed unit is looked for (`systemctl --user`), under their home.
USER_INSTALLED = Path(".config/systemd/user/kvwatch.service")
#: Capabilities that let a user read any file.
_READ_ANY = frozenset({"CAP_DAC_READ_SEARCH", "CAP_DAC_OVERRIDE"})
_LISTS = ("StateDirectory", "ReadWritePaths", "AmbientCapabilities", "SupplementaryGroups")


@dataclass(frozen=True)
class Unit:
    """The [Service] settings of kvwatch.service that decide what the daemon can read and write."""

    where: str  # the file it was read from ("the shipped kvwatch.service" for the package's copy)
    user: str | None = None
    dynamic_user: bool = False
    state_directories: tuple[str, ...] = ()
    read_write_paths: tuple[str, ...] = ()
    protect_system: str = "no"
    protect_home: str = "no"
    private_tmp: bool = False
    capabilities: frozenset[str] = frozenset()
    groups: tuple[str, ...] = ()
    credentials: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    config: str | None = None  # ExecStart's --config
    user_unit: bool = False  # a user unit (`systemctl --user`): it runs as `user`, who starts it
    home: str = "/root"  # a user unit's user's home: its StateDirectory= is under ~/.local/state

    def who(self) -> str:
        """The service's user as a sentence names it."""
        if self.user_unit:
            return f"{self.user} (a user unit: the user who starts it)"
        if self.dynamic_user:
            return f"a dynamic user{f' ({self.user})' if self.user else ''} (DynamicUser=yes)"
        return f"User={self.user}" if self.user else "root (no User=)"

    def is_root(self) -> bool:
        """Whether the service runs as root."""
        return not self.dynamic_user and self.user in (None, "root", "0")


def _truthy(value: str) -> bool:
    return value.strip().lower() in ("1", "yes", "true", "on")


def parse_unit(text: str, where: str, owner: tuple[str, str] = ("root", "/root")) -> Unit:
    """The [Service] settings of a unit file (and its drop-ins, appended in order); `owner`: the name
    and home of the user a user unit would run as (the one running check-config)."""
    values: dict[str, str] = {}
    lists: dict[str, list[str]] = {key: [] for key in _LISTS}
    credentials: dict[str, str] = {}
    config = None
    wanted: list[str] = []
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        if (
            section not in ("Service", "Install")
            or not line
            or line.startswith(("#", ";"))
            or "=" not in line
        ):
            continue
        key, value = (part.strip() for part in line.split("=", 1))
        if section == "Install":
            if key == "WantedBy":
                wanted = [*wanted, *value.split()] if value else []
            continue
        if key in lists:
            lists[key] = lists[key] + value.split() if value else []  # (empty: reset, as systemd does)
        elif key == "LoadCredential":
            name, _, source = value.partition(":")
            credentials[name] = source or f"$CREDENTIALS_DIRECTORY/{name}"
        elif key == "ExecStart" and value:
            words = shlex.split(value.lstrip("-@:+!"))
            config = next((b for a, b in itertools.pairwise(words) if a == "--config"), None)
        else:
            values[key] = value
    protect = values.get("ProtectSystem", "no").lower()
    user_unit = "default.target" in wanted  # (a system unit is wanted by multi-user.target)
    return Unit(
        where=where,
        user=owner[0] if user_unit else values.get("User") or None,
        dynamic_user=_truthy(values.get("DynamicUser", "no")),
        state_directories=tuple(d.split(":")[0] for d in lists["StateDirectory"]),
        read_write_paths=tuple(p.lstrip("-+") for p in lists["ReadWritePaths"]),
        protect_system="yes" if _truthy(protect) else protect if protect in ("full", "strict") else "no",
        protect_home=values.get("ProtectHome", "no").lower(),
        private_tmp=_truthy(values.get("PrivateTmp", "no")),
        capabilities=frozenset(c for c in lists["AmbientCapabilities"] if not c.startswith("~")),
        groups=tuple(lists["SupplementaryGroups"]),
        credentials=MappingProxyType(credentials),
        config=config,
        user_unit=user_unit,
        home=owner[1],
    )


def load_unit(path: Path | None = None, uid: int | None = None) -> Unit:
    """The unit at `path`, else the first installed one, else the shipped one; with their drop-ins.
    For a user `uid` other than root, their own installed user unit comes first and the shipped one is
    the user unit (`kvwatch init` writes it as kvwatch-user.service)."""
    uid = os.geteuid() if uid is None else uid
    entry = pwd.getpwuid(uid)
    owner = (entry.pw_name, entry.pw_dir)
    candidates = [path] if path is not None else [p for p in INSTALLED if p.is_file()]
    if path is None and uid != 0:
        candidates = [p for p in (Path(entry.pw_dir) / USER_INSTALLED,) if p.is_file()] + candidates
    if not candidates:
        shipped = "kvwatch.service" if uid == 0 else "kvwatch-user.service"
        return parse_unit(asset_bytes(shipped).decode("utf-8"), f"the shipped {shipped}", owner)
    unit = candidates[0]
    texts = [unit.read_text(encoding="utf-8")]
    dropins = Path(f"{unit}.d")
    if dropins.is_dir():
        texts += [d.read_text(encoding="utf-8") for d in sorted(dropins.glob("*.conf"))]
    return parse_unit("\n".join(texts), str(unit), owner)


@dataclass(frozen=True)
class Account:
    """A fixed user's ids (a dynamic user has none on disk)."""

    uid: int
    gids: frozenset[int]


def account(name: str) -> Account | None:
    """The account `name` from the user database, None if there is none."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return None
    gids = {entry.pw_gid, *(g.gr_gid for g in grp.getgrall() if name in g.gr_mem)}
    return Account(entry.pw_uid, frozenset(gids))


def lstat_or_none(path: Path) -> os.stat_result | None:
    """os.stat of `path`, None if it cannot be stat'ed."""
    try:
        return os.stat(path)
    except OSError:
        return None


Accounts = Callable[[str], Account | None]
Stat = Callable[[Path], "os.stat_result | None"]


def _under(path: PurePosixPath, roots: tuple[str, ...]) -> bool:
    return any(path == PurePosixPath(r) or PurePosixPath(r) in path.parents for r in roots)


def _read_only_by(unit: Unit, path: PurePosixPath) -> str | None:
    """The setting that makes `path` read-only or hidden for the service, if one does."""
    if _under(path, tuple(unit.read_write_paths)):
        return None
    if unit.protect_home in ("yes", "read-only", "tmpfs") and _under(path, ("/home", "/root", "/run/user")):
        return f"ProtectHome={unit.protect_home}"
    strict = unit.protect_system == "strict" and not _under(
        path, ("/dev", "/proc", "/sys", "/tmp", "/var/tmp")
    )
    system = {"yes": ("/usr", "/boot", "/efi"), "full": ("/usr", "/boot", "/efi", "/etc")}
    if strict or _under(path, system.get(unit.protect_system, ())):
        return f"ProtectSystem={unit.protect_system}"
    return None


def _allows(st: os.stat_result, who: Account | None, bits: int) -> bool:
    """Whether the mode of `st` grants `bits` (a combination of 4, 2, 1) to `who` (None: nobody's own)."""
    if who is not None and st.st_uid == who.uid:
        shift = 6
    elif who is not None and st.st_gid in who.gids:
        shift = 3
    else:
        shift = 0
    return (st.st_mode >> shift) & bits == bits


def state_dir_problem(
    unit: Unit, state_dir: Path, accounts: Accounts = account, stat_of: Stat = lstat_or_none
) -> str | None:
    """Why the unit's user cannot keep state in `state_dir` (None: it can), as one sentence."""
    path = PurePosixPath(os.path.abspath(state_dir))
    base = f"{unit.home}/.local/state" if unit.user_unit else "/var/lib"
    managed = tuple(f"{base}/{d}" for d in unit.state_directories)
    head = f"state_dir {path}: the service runs as {unit.who()}, which cannot write it"
    if _under(path, managed):
        return None  # systemd creates it and gives it to the service's user
    fix = f'; set state_dir = "{managed[0]}"' if managed else "; add StateDirectory=kvwatch to the unit"
    if unit.dynamic_user:
        only = ", ".join(managed) or "no directory: the unit has no StateDirectory="
        return f"{head}: a dynamic user may write only its StateDirectory= ({only}){fix}"
    blocked = _read_only_by(unit, path)
    if blocked is not None:
        return f"{head}: {blocked} makes it read-only (add ReadWritePaths={path}){fix}"
    if unit.is_root():
        return None
    who = accounts(unit.user or "")
    if who is None:
        return f"{head}: there is no user {unit.user} on this machine"
    existing = Path(path)
    while stat_of(existing) is None and existing != existing.parent:
        existing = existing.parent
    st = stat_of(existing)
    if st is None or not stat.S_ISDIR(st.st_mode):
        return f"{head}: {existing} is not a directory"
    if not _allows(st, who, 0o3):
        where = "its mode or owner" if existing == Path(path) else f"cannot create it in {existing}"
        return f"{head}: {where} ({stat.filemode(st.st_mode)} {st.st_uid}:{st.st_gid}){fix}"
    return None


def read_problem(
    unit: Unit, path: Path, accounts: Accounts = account, stat_of: Stat = lstat_or_none
) -> str | None:
    """Why the unit's user cannot read `path` (None: it can)."""
    pure = PurePosixPath(os.path.abspath(path))
    if unit.protect_home in ("yes", "tmpfs") and _under(pure, ("/home", "/root", "/run/user")):
        return f"hidden from the service by ProtectHome={unit.protect_home}"
    if unit.private_tmp and _under(pure, ("/tmp", "/var/tmp")):
        return "hidden from the service by PrivateTmp=yes (it sees a /tmp of its own)"
    st = stat_of(Path(pure))
    if st is None:
        return "does not exist (yet)"
    if unit.is_root() or unit.capabilities & _READ_ANY:
        return None
    who = None if unit.dynamic_user else accounts(unit.user or "")
    if who is None and not unit.dynamic_user:
        return f"there is no user {unit.user} on this machine"
    needed = 0o5 if stat.S_ISDIR(st.st_mode) else 0o4
    group_ids = {g.gr_gid for g in _groups(unit.groups)}
    if _allows(st, who, needed) or (st.st_gid in group_ids and (st.st_mode >> 3) & needed == needed):
        return None
    return f"not readable by {unit.who()} ({stat.filemode(st.st_mode)} {st.st_uid}:{st.st_gid})"


def _groups(names: tuple[str, ...]) -> list[grp.struct_group]:
    out = []
    for name in names:
        try:
            out.append(grp.getgrnam(name))
        except KeyError:
            continue
    return out


def deferred_credentials(unit: Unit, config: Config, env: Mapping[str, str]) -> frozenset[str]:
    """Notifiers whose URL or password only systemd will hand over (LoadCredential=): outside the
    service, with no $CREDENTIALS_DIRECTORY, they cannot be resolved now and are not a problem."""
    if env.get("CREDENTIALS_DIRECTORY"):
        return frozenset()
    return frozenset(
        n.name for n in config.notifiers if n.credentials() and n.credentials() <= set(unit.credentials)
    )


def _source_paths(source: SourceConfig) -> list[Path]:
    """What the service must read for `source` (a glob's fixed leading directory)."""
    s = source.settings
    if isinstance(s, FileSettings):
        fixed = Path(s.path)
        while glob.has_magic(str(fixed)):
            fixed = fixed.parent
        return [fixed]
    if isinstance(s, DockerSettings):
        return [s.docker_root / "containers"]
    if isinstance(s, JournaldSettings):
        return [p for p in (s.directory, s.file) if p is not None]
    if isinstance(s, PodsSettings):
        return [s.root]
    return []


def what_the_service_sees(
    unit: Unit, config: Config, accounts: Accounts = account, stat_of: Stat = lstat_or_none
) -> list[str]:
    """For root running check-config: whether the service's user can read each source and credential."""
    lines = [f"  you are root and can read and write anything; the service runs as {unit.who()} and sees:"]
    for source in config.sources:
        for path in _source_paths(source):
            why = read_problem(unit, path, accounts, stat_of)
            lines.append(f"  source {source.name}: {path}: {why or 'readable'}")
        journal = isinstance(source.settings, JournaldSettings) and not _source_paths(source)
        if journal and not unit.is_root() and not {"systemd-journal", "adm"} & set(unit.groups):
            lines.append(
                f"  source {source.name}: the journal: not readable (add SupplementaryGroups=systemd-journal)"
            )
        elif journal:
            lines.append(f"  source {source.name}: the journal: readable")
    for notifier in config.notifiers:
        for name in sorted(notifier.credentials() & set(unit.credentials)):
            path = Path(unit.credentials[name])
            why = "present" if stat_of(path) is not None else "missing: systemd will not start the unit"
            lines.append(f"  notifier {notifier.name}: LoadCredential= {path}: {why}")
    return lines
