"""Every command's `--help`: a one-line purpose, examples that parse, each option's default and unit."""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import typing
from collections.abc import Iterator
from typing import Any

import pytest

from kvwatch.cli import build_parser

#: The units a numeric option may be given in (its metavar or its help names one).
UNITS = ("SECONDS", "MiB", "KiB", "BYTES", "YEAR", "PROCESSES", "FACTOR", "TOKENS", "PERCENT")
#: Command-line syntax that ends the kvwatch part of an example (a pipe, a redirection).
SHELL = ("|", ">", "<", "2>&1", "&&")


class Listed(argparse.ArgumentParser):
    """An argument parser that lists the options and arguments added to it (`added`, --help's and
    --version's left out), and each parser made, in order (`MADE`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.added: list[argparse.Action] = []
        super().__init__(*args, **kwargs)
        MADE.append(self)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        if kwargs.get("action") not in ("help", "version") and args[:1] not in (("-h",), ("--version",)):
            self.added.append(action)
        return action

    def add_mutually_exclusive_group(self, *args: Any, **kwargs: Any) -> Any:
        group = super().add_mutually_exclusive_group(*args, **kwargs)
        add = group.add_argument

        def listed(*names: Any, **options: Any) -> argparse.Action:
            action = add(*names, **options)
            self.added.append(action)
            return action

        group.add_argument = listed  # type: ignore[method-assign]
        return group


MADE: list[Listed] = []


def commands() -> Iterator[tuple[str, Listed]]:
    """`kvwatch` itself ("") and each subcommand, whatever subcommands there are."""
    MADE.clear()
    build_parser(Listed)
    for parser in MADE:
        yield parser.prog.removeprefix("kvwatch").strip(), parser


def options(parser: Listed) -> list[argparse.Action]:
    """The parser's options and positional arguments, but for --help and --version."""
    return parser.added


def numeric(action: argparse.Action) -> bool:
    """Whether the option takes a number: its type is int or float, or a function returning one."""
    kind = action.type
    if kind in (int, float):
        return True
    if not callable(kind) or isinstance(kind, type):
        return False
    return typing.get_type_hints(kind).get("return") in (int, float)


def examples(epilog: str) -> list[list[str]]:
    """The kvwatch command lines of an epilog's examples, as argv (from `kvwatch` to a pipe or `#`)."""
    found = []
    for line in epilog.splitlines():
        at = line.find("kvwatch ")
        if not line.startswith("  ") or at < 0:
            continue
        words = shlex.split(line[at:], comments=True)
        cut = next((i for i, word in enumerate(words) if word in SHELL), len(words))
        found.append(words[1:cut])
    return found


ALL = list(commands())


def test_every_subcommand_is_walked() -> None:
    """The walk finds the subcommands (so that a later one is checked too, not a list kept here)."""
    names = {name for name, _ in ALL}
    assert {"", "replay", "run", "demo", "check-config", "test-alert", "hash-password"} <= names


@pytest.mark.parametrize(("name", "parser"), ALL, ids=[name or "kvwatch" for name, _ in ALL])
def test_purpose_and_examples(name: str, parser: argparse.ArgumentParser) -> None:
    """A one-line purpose; an epilog of examples, kept as written, that are real command lines: each
    one parses, and one at least runs this very command."""
    assert parser.description and "\n" not in parser.description, name
    assert parser.description.rstrip().endswith("."), name
    assert issubclass(parser.formatter_class, argparse.RawDescriptionHelpFormatter), name
    epilog = parser.epilog or ""
    assert epilog.startswith(("example:\n", "examples:\n")), name
    argvs = examples(epilog)
    assert any(argv[:1] == [name] or not name for argv in argvs), (name, argvs)
    for argv in argvs:
        if argv[-1:] == ["--help"]:
            continue
        build_parser().parse_args(argv)  # (a bad one exits 2: the test fails with its message)


@pytest.mark.parametrize(("name", "parser"), ALL, ids=[name or "kvwatch" for name, _ in ALL])
def test_each_option_says_its_default_and_unit(name: str, parser: argparse.ArgumentParser) -> None:
    """Every option's help ends with its default, `(default: X)`, or says when it is required; a default
    that is a plain string or number is the one stated; a numeric option names its unit."""
    for action in options(parser):
        flag = f"{name} {action.option_strings or action.dest}"
        text = action.help or ""
        required = action.required or (not action.option_strings and action.nargs != "?")
        if required or "(default: " not in text:  # (an option may be required with another's absence)
            assert "required" in text, flag
        else:
            assert text.endswith(")"), flag
            stated = text[text.rindex("(default: ") + len("(default: ") : -1]
            if isinstance(action.default, str):
                assert action.default == stated, flag
            elif action.type in (int, float) and action.default is not None:
                assert f"{action.default:g}" == stated, flag
        if numeric(action):
            assert any(unit in f"{action.metavar} {text}" for unit in UNITS), flag


def test_every_help_exits_0_in_a_real_process() -> None:
    """`python -m kvwatch [COMMAND] --help` prints the purpose and examples, status 0."""
    for name, parser in ALL:
        argv = [sys.executable, "-m", "kvwatch", *([name] if name else []), "--help"]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        assert (0, "", True) == (done.returncode, done.stderr, "example" in done.stdout), name
        assert str(parser.description).split(";")[0] in done.stdout.replace("\n", " "), name
