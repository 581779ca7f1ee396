"""Building llama-server shows progress: build.sh's lines and ninja's steps reach the terminal live."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest
from llama_helpers import BuildProgress, llama_server_binary


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        """At 0 s."""
        self.now = 0.0

    def __call__(self) -> float:
        """The current time."""
        return self.now


def ninja(done: int, total: int = 40) -> str:
    """One of ninja's step lines."""
    return f"[{done}/{total}] Building CXX object tools/server/CMakeFiles/s{done}.cpp.o"


def test_build_sh_lines_each_fifth_percent_and_the_last_step_are_relayed() -> None:
    """Of 40 steps (2.5 % each) every second is shown, and the first and last; compiler chatter is not."""
    shown: list[str] = []
    progress = BuildProgress(shown.append, clock=Clock())
    progress.feed("[build.sh] configuring in build")
    progress.feed("-- The CXX compiler identification is GNU 12.2.0")
    for done in range(1, 41):
        progress.feed(ninja(done))
        progress.feed("warning: unused variable 'x'")
    progress.feed("[build.sh] build took 391 s")
    steps = [ninja(1), *(ninja(done) for done in range(2, 41, 2))]
    assert ["[build.sh] configuring in build", *steps, "[build.sh] build took 391 s"] == shown


def test_a_slow_step_is_shown_after_ten_seconds_without_news() -> None:
    """Between 5 % marks a step is still shown when 10 s passed since the last line shown."""
    shown: list[str] = []
    clock = Clock()
    progress = BuildProgress(shown.append, clock=clock)
    progress.feed(ninja(1, 200))
    clock.now = 9.9
    progress.feed(ninja(2, 200))
    clock.now = 10.0
    progress.feed(ninja(3, 200))
    progress.feed(ninja(4, 200))
    assert [ninja(1, 200), ninja(3, 200)] == shown


def test_the_tail_keeps_every_line_relayed_or_not() -> None:
    """The failure message gets the last 40 lines of the build, compiler errors included."""
    progress = BuildProgress(lambda line: None, clock=Clock())
    for n in range(100):
        progress.feed(f"line {n}")
    assert "\n".join(f"line {n}" for n in range(60, 100)) == progress.tail()


def fake_build(tmp_path: Path, body: str) -> Path:
    """A stand-in for scripts/llamacpp/build.sh: `body` run by bash."""
    script = tmp_path / "build.sh"
    script.write_text("set -eu\n" + body, encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_a_build_script_s_progress_is_relayed_and_its_binary_returned(tmp_path: Path) -> None:
    """The stand-in's stderr lines arrive in order; the path on its last stdout line is the binary."""
    binary = tmp_path / "llama-server"
    binary.write_text("", encoding="utf-8")
    script = fake_build(
        tmp_path,
        'echo "[build.sh] building target llama-server with -j2" >&2\n'
        'for n in $(seq 1 20); do echo "[$n/20] Building CXX object o$n.o" >&2; done\n'
        f'echo "[build.sh] build took 1 s" >&2\necho "{binary}"\n',
    )
    shown: list[str] = []
    assert binary == llama_server_binary(BuildProgress(shown.append, clock=Clock()), script)
    steps = [f"[{n}/20] Building CXX object o{n}.o" for n in range(1, 21)]
    assert ["[build.sh] building target llama-server with -j2", *steps, "[build.sh] build took 1 s"] == shown


def test_a_failed_build_fails_the_test_with_the_end_of_its_output(tmp_path: Path) -> None:
    """Exit status, what the build needs, and its last lines (the compiler's error) are in the failure."""
    script = fake_build(
        tmp_path,
        'echo "[build.sh] building target llama-server with -j2" >&2\n'
        'echo "[1/214] Building CXX object ggml.c.o" >&2\n'
        'echo "server.cpp:12: error: expected ; before }" >&2\nexit 2\n',
    )
    shown: list[str] = []
    with pytest.raises(pytest.fail.Exception) as failed:
        llama_server_binary(BuildProgress(shown.append, clock=Clock()), script)
    started = ["[build.sh] building target llama-server with -j2", "[1/214] Building CXX object ggml.c.o"]
    assert started == shown
    message = str(failed.value)
    assert message.startswith(f"{script} failed (exit 2); it needs pip")
    assert message.endswith(
        "[build.sh] building target llama-server with -j2\n[1/214] Building CXX object ggml.c.o\n"
        "server.cpp:12: error: expected ; before }"
    )


@pytest.mark.slow
def test_relayed_lines_reach_the_terminal_through_pytest_s_output_capture(tmp_path: Path) -> None:
    """An inner pytest, capturing as usual: the relayed line is in its output, the test's print is not."""
    inner = tmp_path / "test_inner.py"
    inner.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from llama_helpers import terminal_lines\n\n\n"
        "def test_relay(pytestconfig):\n"
        "    print('swallowed by capture')\n"
        "    terminal_lines(pytestconfig)('[build.sh] relayed past capture')\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(inner)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert 0 == done.returncode, done.stdout + done.stderr
    assert "[build.sh] relayed past capture\n" in done.stdout
    assert "swallowed by capture" not in done.stdout + done.stderr
