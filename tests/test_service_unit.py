"""check-config against the systemd unit: its user, state_dir, sources, credentials; the example agrees."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import ROOT

from kvwatch.config import load_config
from kvwatch.config.unit import Account, load_unit, parse_unit, read_problem, state_dir_problem

ASSETS = ROOT / "kvwatch" / "assets"
EXAMPLE = ASSETS / "kvwatch.example.toml"
SHIPPED = ROOT / "systemd" / "kvwatch.service"
SLACK_DROP_IN = ROOT / "systemd" / "kvwatch-slack-webhook.conf"
NOBODY = Account(65534, frozenset({65534}))


def unit(text: str) -> str:
    """A [Service] section of `text` lines."""
    return "[Unit]\nDescription=x\n[Service]\n" + text


def test_the_shipped_unit_is_read_as_systemd_reads_it() -> None:
    """User, writable directory, protection, credentials and the config path of kvwatch.service."""
    shipped = load_unit(SHIPPED)
    assert (True, None, ("kvwatch",), "strict", "yes") == (
        shipped.dynamic_user,
        shipped.user,
        shipped.state_directories,
        shipped.protect_system,
        shipped.protect_home,
    )
    assert {} == dict(shipped.credentials)  # LoadCredential= fails a unit whose file is missing
    assert "/etc/kvwatch/kvwatch.toml" == shipped.config


def with_slack_drop_in(tmp_path: Path) -> Path:
    """The shipped unit with the shipped Slack drop-in installed next to it, as README step 3 does."""
    path = tmp_path / "kvwatch.service"
    path.write_bytes(SHIPPED.read_bytes())
    (tmp_path / "kvwatch.service.d").mkdir()
    (tmp_path / "kvwatch.service.d" / "slack-webhook.conf").write_bytes(SLACK_DROP_IN.read_bytes())
    return path


def example_with_slack() -> str:
    """The example config with its commented Slack notifier uncommented."""
    text = EXAMPLE.read_text(encoding="utf-8")
    block = re.search(r'^# \[\[notifier\]\]\n# name = "slack-webhook"\n(?:# .*\n)+', text, re.MULTILINE)
    assert block is not None, "the example's Slack notifier"
    return text.replace(block.group(0), re.sub(r"^# ", "", block.group(0), flags=re.MULTILINE))


def test_the_slack_drop_in_loads_the_credential_a_notifier_of_that_name_reads(tmp_path: Path) -> None:
    """With the drop-in, the unit loads /etc/kvwatch/slack-webhook as the credential `slack-webhook`."""
    loaded = load_unit(with_slack_drop_in(tmp_path))
    assert {"slack-webhook": "/etc/kvwatch/slack-webhook"} == dict(loaded.credentials)
    cfg = tmp_path / "kv.toml"
    cfg.write_text(example_with_slack(), encoding="utf-8")
    assert "slack-webhook" in {n.name for n in load_config(cfg).notifiers}


def test_check_config_passes_on_the_example_with_slack_and_the_drop_in(tmp_path: Path) -> None:
    """The uncommented Slack notifier is taken on trust once the drop-in loads its credential; without
    the drop-in it is a problem naming the credential file."""
    cfg = tmp_path / "kv.toml"
    cfg.write_text(example_with_slack(), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "CREDENTIALS_DIRECTORY"}
    argv = [sys.executable, "-m", "kvwatch", "check-config", str(cfg), "--unit"]
    opts: dict[str, Any] = {"capture_output": True, "text": True, "timeout": 60, "env": env}
    done = subprocess.run([*argv, str(with_slack_drop_in(tmp_path))], check=False, **opts)
    assert (0, "") == (done.returncode, done.stderr)
    assert "  slack-webhook: slack url=$CREDENTIALS_DIRECTORY/slack-webhook" in done.stdout
    bare = subprocess.run([*argv, str(SHIPPED)], check=False, **opts)
    assert 1 == bare.returncode
    assert "url: give url or url_file, or the file $CREDENTIALS_DIRECTORY/slack-webhook\n" in bare.stderr


def test_drop_ins_override_and_an_empty_assignment_resets(tmp_path: Path) -> None:
    """`systemctl edit` drop-ins are read after the unit; `ReadWritePaths=` empties the list."""
    path = tmp_path / "kvwatch.service"
    path.write_text(unit("User=kv\nReadWritePaths=/a\n"))
    (tmp_path / "kvwatch.service.d").mkdir()
    (tmp_path / "kvwatch.service.d" / "override.conf").write_text(
        "[Service]\nReadWritePaths=\nReadWritePaths=-/b /c\nUser=other\n"
    )
    loaded = load_unit(path)
    assert ("other", ("/b", "/c")) == (loaded.user, loaded.read_write_paths)


def test_the_example_config_agrees_with_the_unit() -> None:
    """The unit's StateDirectory= is the example's state_dir, its user can write there, ExecStart reads
    the path the example says to check, and no notifier needs a credential the unit does not load."""
    shipped = load_unit(SHIPPED)
    config = load_config(EXAMPLE)
    assert [Path(f"/var/lib/{d}") for d in shipped.state_directories] == [config.state_dir]
    assert None is state_dir_problem(shipped, config.state_dir)
    assert f"kvwatch check-config {shipped.config}" in EXAMPLE.read_text(encoding="utf-8")
    assert "slack-webhook" not in {n.name for n in config.notifiers}  # it needs the drop-in


def test_check_config_passes_on_the_example_on_a_fresh_machine(tmp_path: Path) -> None:
    """No $CREDENTIALS_DIRECTORY, no credential file, no state_dir yet: exit 0, no problem; the
    summary names the unit's user."""
    env = {k: v for k, v in os.environ.items() if k != "CREDENTIALS_DIRECTORY"}
    argv = [sys.executable, "-m", "kvwatch", "check-config", str(EXAMPLE), "--unit", str(SHIPPED)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, env=env)
    assert (0, "") == (done.returncode, done.stderr)
    assert f"service: {SHIPPED} runs kvwatch as a dynamic user (DynamicUser=yes)\n" in done.stdout


def test_a_credential_the_unit_does_not_load_is_still_a_problem(tmp_path: Path) -> None:
    """Only LoadCredential= names are taken on trust: another URL-less notifier is refused."""
    cfg = tmp_path / "kv.toml"
    cfg.write_text('[[notifier]]\nname = "pager"\ntype = "webhook"\n')
    env = {k: v for k, v in os.environ.items() if k != "CREDENTIALS_DIRECTORY"}
    argv = [sys.executable, "-m", "kvwatch", "check-config", str(cfg), "--unit", str(SHIPPED)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, env=env)
    assert 1 == done.returncode
    assert (
        "  notifier[0].url: give url or url_file, or the file $CREDENTIALS_DIRECTORY/pager\n" in done.stderr
    )


def test_check_config_warns_of_a_state_dir_the_units_user_cannot_write(tmp_path: Path) -> None:
    """A state_dir outside the dynamic user's StateDirectory=: a warning naming both, exit 0."""
    cfg = tmp_path / "kv.toml"
    cfg.write_text(f'state_dir = "{tmp_path}/state"\n')
    argv = [sys.executable, "-m", "kvwatch", "check-config", str(cfg), "--unit", str(SHIPPED)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert 0 == done.returncode
    assert (
        f"kvwatch: warning: state_dir {tmp_path}/state: the service runs as a dynamic user "
        "(DynamicUser=yes), which cannot write it: a dynamic user may write only its StateDirectory= "
        '(/var/lib/kvwatch); set state_dir = "/var/lib/kvwatch"\n'
    ) == done.stderr


@pytest.mark.parametrize(
    ("text", "state_dir", "expected"),
    [
        ("DynamicUser=yes\nStateDirectory=kvwatch\n", "/var/lib/kvwatch", None),
        ("DynamicUser=yes\nStateDirectory=kvwatch\n", "/var/lib/kvwatch/sub", None),
        (
            "DynamicUser=yes\n",
            "/var/lib/kvwatch",
            "state_dir /var/lib/kvwatch: the service runs as a dynamic user (DynamicUser=yes), which cannot "
            "write it: a dynamic user may write only its StateDirectory= (no directory: the unit has no "
            "StateDirectory=); add StateDirectory=kvwatch to the unit",
        ),
        (
            "User=nobody\nProtectSystem=strict\nStateDirectory=kv\n",
            "/srv/kv",
            "state_dir /srv/kv: the service runs as User=nobody, which cannot write it: ProtectSystem=strict "
            'makes it read-only (add ReadWritePaths=/srv/kv); set state_dir = "/var/lib/kv"',
        ),
        (
            "ProtectHome=read-only\n",
            "/run/user/0/state",
            "state_dir /run/user/0/state: the service runs as root (no User=), which cannot write it: "
            "ProtectHome=read-only makes it read-only (add ReadWritePaths=/run/user/0/state); add "
            "StateDirectory=kvwatch to the unit",
        ),
        ("ProtectSystem=full\n", "/srv/kv", None),
        (
            "User=no-such-user-here\n",
            "/srv/kv",
            "state_dir /srv/kv: the service runs as User=no-such-user-here, which cannot write it: there is "
            "no user no-such-user-here on this machine",
        ),
    ],
)
def test_state_dir_verdicts(text: str, state_dir: str, expected: str | None) -> None:
    """What each identity and protection setting means for state_dir, as one sentence."""
    accounts = {"nobody": NOBODY}
    assert expected == state_dir_problem(parse_unit(unit(text), "u"), Path(state_dir), accounts.get)


def test_a_fixed_user_needs_write_permission_where_state_dir_is_made(tmp_path: Path) -> None:
    """Ownership and mode decide for a fixed User=: 0755 root-owned is refused, 0777 or owned is fine."""
    nobody = parse_unit(unit("User=nobody\n"), "u")
    accounts = {"nobody": NOBODY}.get
    parent = tmp_path / "parent"
    parent.mkdir(mode=0o755)
    parent.chmod(0o755)
    st = parent.stat()
    assert (
        f"state_dir {parent}/state: the service runs as User=nobody, which cannot write it: cannot create "
        f"it in {parent} (drwxr-xr-x {st.st_uid}:{st.st_gid}); add StateDirectory=kvwatch to the unit"
    ) == state_dir_problem(nobody, parent / "state", accounts)
    parent.chmod(0o777)
    assert None is state_dir_problem(nobody, parent / "state", accounts)
    owner = {"nobody": Account(st.st_uid, frozenset())}.get
    parent.chmod(0o700)
    assert None is state_dir_problem(nobody, parent / "state", owner)


def test_source_read_verdicts(tmp_path: Path) -> None:
    """Hidden by ProtectHome/PrivateTmp; readable with CAP_DAC_READ_SEARCH; else by mode."""
    secret = tmp_path / "only-root.log"
    secret.write_text("x")
    secret.chmod(0o600)
    capable = parse_unit(
        unit("DynamicUser=yes\nAmbientCapabilities=CAP_DAC_READ_SEARCH\nPrivateTmp=yes\n"), "u"
    )
    plain = parse_unit(unit("DynamicUser=yes\nProtectHome=yes\n"), "u")
    assert "hidden from the service by ProtectHome=yes" == read_problem(plain, Path("/run/user/1000/x.log"))
    assert "hidden from the service by PrivateTmp=yes (it sees a /tmp of its own)" == read_problem(
        capable, Path("/tmp/x.log")
    )
    assert None is read_problem(
        parse_unit(unit("AmbientCapabilities=CAP_DAC_READ_SEARCH\nUser=nobody\n"), "u"), secret
    )
    st = secret.stat()
    assert f"not readable by a dynamic user (DynamicUser=yes) (-rw------- {st.st_uid}:{st.st_gid})" == (
        read_problem(plain, secret)
    )
    secret.chmod(0o644)
    assert None is read_problem(plain, secret)
    assert "does not exist (yet)" == read_problem(plain, tmp_path / "missing.log")


USER_UNIT = ROOT / "systemd" / "kvwatch-user.service"


def test_a_user_unit_runs_as_who_starts_it_and_keeps_state_in_their_home() -> None:
    """`kvwatch init`'s user unit (WantedBy=default.target): its user is the owner, not root, and its
    StateDirectory=kvwatch is ~/.local/state/kvwatch, which systemd makes for it."""
    owner = parse_unit(USER_UNIT.read_text(), "u", ("alice", "/srv/alice"))
    assert owner.user_unit
    assert "alice (a user unit: the user who starts it)" == owner.who()
    assert not owner.is_root()
    nobody: dict[str, Account] = {}
    assert None is state_dir_problem(owner, Path("/srv/alice/.local/state/kvwatch"), nobody.get)
    assert (
        "state_dir /var/lib/kvwatch: the service runs as alice (a user unit: the user who starts it), which "
        "cannot write it: there is no user alice on this machine"
    ) == state_dir_problem(owner, Path("/var/lib/kvwatch"), nobody.get)
    system = parse_unit(SHIPPED.read_text(), "u", ("alice", "/srv/alice"))
    assert not system.user_unit
    assert system.dynamic_user


def test_a_user_other_than_root_is_judged_against_the_user_unit_by_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without --unit, and no unit installed, a user other than root is judged against the shipped
    user unit, root against the shipped system unit."""
    monkeypatch.setattr("kvwatch.config.unit.INSTALLED", ())
    nobody = load_unit(uid=65534)
    assert nobody.user_unit
    assert "the shipped kvwatch-user.service" == nobody.where
    assert nobody.who().startswith("nobody (a user unit")
    root = load_unit(uid=0)
    assert not root.user_unit
    assert root.dynamic_user


def test_check_config_of_the_lm_studio_example_with_the_user_unit(tmp_path: Path) -> None:
    """The workstation steps: check-config --unit kvwatch-user.service warns of nothing about the unit."""
    argv = [sys.executable, "-m", "kvwatch", "check-config", "--unit", str(USER_UNIT),
            str(ROOT / "examples" / "lmstudio" / "kvwatch.toml")]  # fmt: skip
    home = tmp_path / "home"
    (home / ".lmstudio" / "server-logs").mkdir(parents=True)
    env = {**os.environ, "HOME": str(home)}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, env=env)
    assert 0 == done.returncode, done.stderr
    assert "(a user unit: the user who starts it)" in done.stdout
    assert "StateDirectory" not in done.stderr and "dynamic user" not in done.stderr, done.stderr
