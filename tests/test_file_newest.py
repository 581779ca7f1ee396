"""`follow = "newest"`: LM Studio's dated server-log folders (`~/.lmstudio/server-logs/YYYY-MM/`,
`YYYY-MM-DD.N.log`, a new file per day and per start), the same layout on Linux, real files and polls.

The layout is what public notes of LM Studio users show (samples/README.lmstudio.md); macOS and Windows
themselves are not tested.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_file_source import texts

from kvwatch.cli import main
from kvwatch.sources.file import FileSource, natural
from kvwatch.sources.filetail import StartAt

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "lmstudio" / "kvwatch.toml"


def append(path: Path, *lines: str) -> None:
    """A logging process writing whole lines (creating its folder and file as LM Studio does)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fh.writelines(line + "\n" for line in lines)


def newest(logs: Path, start_at: StartAt = "end", saved: dict[str, object] | None = None) -> FileSource:
    """The source a config with `follow = "newest"` starts."""
    return FileSource("lms", str(logs / "*" / "*.log"), start_at=start_at, saved=saved, newest_only=True)


def test_numbers_in_names_compare_as_numbers() -> None:
    """The tenth start of a day sorts after the ninth; a new month after the last day of the old one."""
    names = [
        "2025-09/2025-09-23.10.log",
        "2025-09/2025-09-23.9.log",
        "2025-10/2025-10-01.1.log",
        "2025-09/2025-09-30.2.log",
    ]
    assert "2025-10/2025-10-01.1.log" == max(names, key=natural)
    assert "2025-09/2025-09-23.10.log" == max(names[:2], key=natural)


def test_only_the_newest_file_is_followed_from_the_start(tmp_path: Path) -> None:
    """A first start opens only the newest file, at its end; older days are not read."""
    logs = tmp_path / ".lmstudio" / "server-logs"
    append(logs / "2025-09" / "2025-09-29.1.log", "old day")
    append(logs / "2025-09" / "2025-09-30.1.log", "earlier today")
    source = newest(logs)
    assert [str(logs / "2025-09" / "2025-09-30.1.log")] == list(source.tails)
    append(logs / "2025-09" / "2025-09-30.1.log", "a")
    append(logs / "2025-09" / "2025-09-29.1.log", "never read")
    assert ["a"] == texts(source.poll())


def test_a_restart_and_a_new_month_move_to_the_new_file_after_draining_the_old(tmp_path: Path) -> None:
    """The old file's last lines come first, then it is closed; the new file is read from its start."""
    logs = tmp_path / "server-logs"
    today = logs / "2025-09" / "2025-09-30.1.log"
    append(today, "start")
    source = newest(logs, "beginning")
    assert ["start"] == texts(source.poll())
    append(today, "last words")
    restart = logs / "2025-09" / "2025-09-30.2.log"
    append(restart, "after restart")
    assert ["last words", "after restart"] == texts(source.poll()) + texts(source.poll())
    assert [str(restart)] == list(source.tails)
    month = logs / "2025-10" / "2025-10-01.1.log"
    append(restart, "before midnight")
    append(month, "new month")
    got = texts(source.poll()) + texts(source.poll())
    assert ["before midnight", "new month"] == got
    assert [str(month)] == list(source.tails)
    append(month, "b")
    assert ["b"] == texts(source.poll())


def test_a_file_begun_while_kvwatch_was_down_is_read_after_the_saved_one(tmp_path: Path) -> None:
    """Saved positions resume the old file; the newer one, unknown to them, is read from its beginning."""
    logs = tmp_path / "server-logs"
    old = logs / "2025-09" / "2025-09-30.1.log"
    append(old, "seen")
    first = newest(logs, "beginning")
    assert ["seen"] == texts(first.poll())
    saved = first.position()
    first.close()
    append(old, "written while down")
    append(logs / "2025-09" / "2025-09-30.2.log", "new start")
    again = newest(logs, "end", saved)
    assert ["written while down", "new start"] == texts(again.poll()) + texts(again.poll())


def test_check_config_accepts_follow_newest_and_names_a_bad_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`follow` takes `all` or `newest`; anything else is refused with its field."""
    good = tmp_path / "good.toml"
    good.write_text(
        '[[source]]\nname = "lmstudio"\nengine = "lmstudio"\ntype = "file"\n'
        'path = "server-logs/*/*.log"\nfollow = "newest"\n'
    )
    assert 0 == main(["check-config", str(good)])
    assert "follow=newest" in capsys.readouterr().out
    bad = tmp_path / "bad.toml"
    bad.write_text(good.read_text().replace('"newest"', '"latest"'))
    assert 1 == main(["check-config", str(bad)])
    assert 'source[0].follow: must be one of all, newest (got "latest")' in capsys.readouterr().err


def test_the_lmstudio_example_is_a_valid_config(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/lmstudio/kvwatch.toml passes check-config and follows the newest server log."""
    assert 0 == main(["check-config", str(EXAMPLE)])
    out = capsys.readouterr().out
    assert "/.lmstudio/server-logs/*/*.log" in out and "follow=newest" in out
