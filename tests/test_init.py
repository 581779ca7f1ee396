"""`kvwatch init DIR`: the shipped assets written byte for byte, from a wheel installed outside the clone."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from daemon_helpers import ROOT

from kvwatch.assets import ASSETS, SHIPPED, conflicts, next_steps
from kvwatch.cli import main

#: The shipped files in the repository, where a user browsing it finds them (top-level systemd/,
#: grafana/, prometheus/; the example config in kvwatch/assets/).
IN_REPO = {
    name: ROOT / ("kvwatch/assets" if "/" not in where else "") / where for name, where in SHIPPED.items()
}
#: What a build would leave behind in the copy, or must not see.
NOT_SOURCES = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", "*.pyc"
)


def run(exe: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `exe` with `args`; fails on a timeout."""
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=600, check=False)


def assert_written(directory: Path) -> None:
    """Every asset is in `directory`, byte for byte as shipped, and nothing else."""
    assert sorted(ASSETS) == sorted(p.name for p in directory.iterdir())
    for name in ASSETS:
        assert IN_REPO[name].read_bytes() == (directory / name).read_bytes(), name


def test_assets_lists_every_shipped_file() -> None:
    """ASSETS names exactly the files in kvwatch/assets/ and the top-level systemd/, grafana/ and
    prometheus/ folders (so a new one is written out too)."""
    folders = [ROOT / "kvwatch" / "assets", ROOT / "systemd", ROOT / "grafana", ROOT / "prometheus"]
    shipped = {p for folder in folders for p in folder.iterdir() if p.is_file() and p.suffix != ".py"}
    assert shipped == set(IN_REPO.values())
    assert set(ASSETS) == {p.name for p in shipped}


def test_the_package_links_the_top_level_folders() -> None:
    """kvwatch/assets/systemd, grafana and prometheus are links to the repository's top-level folders
    (one copy of each file: what a wheel carries is what a user browsing the repository reads)."""
    for folder in ("systemd", "grafana", "prometheus"):
        link = ROOT / "kvwatch" / "assets" / folder
        assert link.is_symlink() and (ROOT / folder).resolve() == link.resolve(), folder


@pytest.mark.slow
def test_the_installed_wheel_writes_every_asset_refuses_to_overwrite_and_forces(tmp_path: Path) -> None:
    """Built as a wheel (setuptools warning of nothing) and installed into a fresh venv outside the
    clone, `kvwatch init` writes every file byte for byte as the repository has it (systemd/, grafana/,
    prometheus/); run again it names each existing file and writes nothing; --force rewrites."""
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCES)  # (a build writes build/ into the tree it builds)
    built = run(
        Path(sys.executable), "-m", "pip", "wheel", "-v", "--no-deps", "-w", str(tmp_path), str(source)
    )
    assert 0 == built.returncode, built.stderr
    # setuptools says nothing of the project's configuration (a deprecated form, a data folder that
    # is no package): its warnings are Python warnings (`SetuptoolsDeprecationWarning: ...`), unlike
    # distutils' `warning: ...` of the environment (PYTHONDONTWRITEBYTECODE) or pip's `WARNING: ...`
    said = [line.strip() for line in (built.stdout + built.stderr).splitlines()]
    assert [] == [line for line in said if re.search(r"Warning\b|[Dd]eprecat", line)]
    (wheel,) = tmp_path.glob("kvwatch-*.whl")
    venv = tmp_path / "venv"
    made = run(Path(sys.executable), "-m", "venv", str(venv))
    assert 0 == made.returncode, made.stderr
    installed = run(venv / "bin" / "python", "-m", "pip", "install", "-q", str(wheel))
    assert 0 == installed.returncode, installed.stderr
    kvwatch = venv / "bin" / "kvwatch"
    target = tmp_path / "etc" / "kvwatch"

    first = run(kvwatch, "init", str(target))
    assert (0, "") == (first.returncode, first.stderr)
    assert [f"wrote {target / name}" for name in ASSETS] == first.stdout.splitlines()[: len(ASSETS)]
    assert next_steps(target) == first.stdout.splitlines()[len(ASSETS) :]
    assert_written(target)

    (target / "kvwatch.json").write_text("edited\n", encoding="utf-8")
    (target / "kvwatch.service").unlink()
    again = run(kvwatch, "init", str(target))
    assert 1 == again.returncode
    assert "" == again.stdout
    names = [n for n in ASSETS if n != "kvwatch.service"]
    assert [
        *(f"kvwatch init: {target / n} exists already (--force overwrites it)" for n in names),
        "kvwatch init: nothing written",
    ] == again.stderr.splitlines()
    assert "edited\n" == (target / "kvwatch.json").read_text(encoding="utf-8")
    assert not (target / "kvwatch.service").exists()

    forced = run(kvwatch, "init", "--force", str(target))
    assert (0, "") == (forced.returncode, forced.stderr)
    assert_written(target)


def test_conflicts_names_existing_files_and_dangling_links(tmp_path: Path) -> None:
    """A file or a link (even one pointing nowhere) under an asset's name is a conflict; others are not."""
    (tmp_path / "kvwatch.json").write_text("{}", encoding="utf-8")
    (tmp_path / "kvwatch.service").symlink_to(tmp_path / "nowhere")
    (tmp_path / "kvwatch.toml").write_text("", encoding="utf-8")
    assert [tmp_path / "kvwatch.service", tmp_path / "kvwatch.json"] == conflicts(tmp_path)
    assert [] == conflicts(tmp_path / "missing")


def test_init_into_a_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """DIR that is a file: a clear error naming it, exit 1, the file untouched."""
    target = tmp_path / "file"
    target.write_text("keep\n", encoding="utf-8")
    assert 1 == main(["init", str(target)])
    assert f"kvwatch init: cannot write {target}: File exists\n" == capsys.readouterr().err
    assert "keep\n" == target.read_text(encoding="utf-8")
