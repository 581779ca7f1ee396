"""CI runs what the README tells a new user to run: the same test command, with the packages it needs."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CI = ROOT / ".ci" / "run"
#: The README's test command: its own virtual environment (Debian's python3 refuses a system-wide pip,
#: PEP 668), the whole suite.
TEST_COMMAND = "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && .venv/bin/python -m pytest"
#: Debian package of each program the tests run, and the venv module the test command needs.
PACKAGES = {
    "python3 -m venv": "python3-venv",
    "prometheus, promtool": "prometheus",
    "amtool": "prometheus-alertmanager",
    "mtail": "mtail",
    "rg": "ripgrep",
    "systemd-analyze, journalctl": "systemd",
    "systemd-journal-remote": "systemd-journal-remote",
    "openssl": "openssl",
    "chromium": "chromium",
    "cmake": "cmake",
    "ninja": "ninja-build",
    "g++": "g++",
}


def commands(script: str) -> list[str]:
    """The shell commands of a script: comments and blank lines dropped, `\\` continuations joined."""
    joined = re.sub(r"\\\n\s*", "", script)
    return [
        line.strip() for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]


def sh_block_lines(markdown: str) -> list[str]:
    """The lines inside the ```sh blocks of a Markdown text."""
    return [
        line
        for block in re.findall(r"^```sh\n(.*?)^```", markdown, re.M | re.S)
        for line in block.splitlines()
    ]


#: How CI runs it: in a new user's bare environment (nothing of CI's own, no PYTHONDONTWRITEBYTECODE).
BARE = 'env -i PATH=/usr/bin:/bin HOME="$HOME" sh -c "{}"'


def test_ci_ends_with_the_test_command_in_a_bare_environment() -> None:
    """`.ci/run`'s last command is the README's test command, verbatim, under `env -i` with only PATH
    and HOME: what Python and pytest leave in the checkout there is what a user's run leaves."""
    script = CI.read_text(encoding="utf-8")
    assert BARE.format(TEST_COMMAND) == commands(script)[-1]
    assert "PYTHONDONTWRITEBYTECODE" not in "".join(commands(script))


def test_the_readme_shows_the_test_command_ci_runs() -> None:
    """A new user copies the same line from a ```sh block of the README."""
    assert TEST_COMMAND in sh_block_lines((ROOT / "README.md").read_text(encoding="utf-8"))


def test_ci_installs_the_debian_package_of_each_program_the_tests_run() -> None:
    """One `apt-get install` names every package, python3-venv and chromium included."""
    installs = [
        c.split() for c in commands(CI.read_text(encoding="utf-8")) if c.startswith("apt-get install")
    ]
    assert 1 == len(installs), installs
    missing = {tool: pkg for tool, pkg in PACKAGES.items() if pkg not in installs[0]}
    assert {} == missing


def test_ci_is_an_executable_bash_script() -> None:
    """Bash parses it, and it can be run as `.ci/run`."""
    assert os.access(CI, os.X_OK)
    done = subprocess.run(["bash", "-n", str(CI)], capture_output=True, text=True, check=False)
    assert (0, "") == (done.returncode, done.stderr)


def test_the_helpers_find_each_command_and_block_line() -> None:
    """Continuations are joined and comments dropped; only ```sh blocks count."""
    script = "#!/bin/sh\n# a comment\napt-get install -y \\\n    a b \\\n    c\n\necho done  # trailing\n"
    assert ["apt-get install -y a b c", "echo done  # trailing"] == commands(script)
    markdown = "text\n```sh\nmake test\n```\n```toml\nx = 1\n```\n```sh\nrun it\n```\n"
    assert ["make test", "run it"] == sh_block_lines(markdown)
