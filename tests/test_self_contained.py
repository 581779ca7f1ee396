"""The repository stands on its own: no tracked file names a path outside it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Paths of the machines the project was written on, or of a directory beside the clone. Written as
#: patterns whose own text does not match (`wor[k]`), so this file passes its own check.
OUTSIDE = re.compile(
    r"\.\./shared\b"  # a sibling directory of the clone
    r"|\bshared/(?:contrac[t]|format[s])\b"
    r"|(?<![\w.~$-])/(?:wor[k]|roo[t]|hom[e]|User[s])/"  # home and work directories
    r"|(?<![\w.~$-])/tm[p]/kvwatch"  # a build machine's scratch directory
    r"|(?<![\w\\])[A-Za-z]:\\"  # a Windows drive
)


def outside_paths(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every line that names a path outside the repository."""
    return [(n, line) for n, line in enumerate(text.splitlines(), 1) if OUTSIDE.search(line)]


def tracked_texts() -> list[tuple[str, str]]:
    """(path, text) of every text file git tracks or would add (binary samples, e.g. `.gz`, are skipped)."""
    names = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        text=True,
    ).stdout.split("\0")
    texts = []
    for name in filter(None, names):
        if not (ROOT / name).is_file():  # deleted in the work tree, not yet in the index
            continue
        try:
            texts.append((name, (ROOT / name).read_text(encoding="utf-8")))
        except UnicodeDecodeError:
            continue
    return texts


def test_no_tracked_file_names_a_path_outside_the_repository() -> None:
    """Samples, scripts and docs cite their upstream source (project, version, file), never a local path."""
    texts = tracked_texts()
    assert any(name == "tests/test_self_contained.py" for name, _ in texts)
    found = [f"{name}:{n}: {line.strip()}" for name, text in texts for n, line in outside_paths(text)]
    assert [] == found, "paths outside the repository:\n" + "\n".join(found)


def test_the_check_finds_each_kind_of_outside_path() -> None:
    """Each kind is found (with its line number); paths the project really uses are not."""

    def absolute(*parts: str) -> str:  # spelt in parts: this file is checked too
        return "/" + "/".join(parts)

    outside = [
        "see .." + absolute("shared", "formats", "vllm.md"),
        "the notes in shared" + absolute("contract", "metrics.txt"),
        absolute("work", "shared", "x.md"),
        "cp " + absolute("root", ".cache", "x"),
        absolute("home", "me", "src"),
        "(" + absolute("Users", "me", "src") + ")",
        absolute("tmp", "kvwatch-build-3", "llama"),
        "C:" + "\\" + "kvwatch",
    ]
    fine = [
        "${KVWATCH_LLAMA_CACHE:-~/.cache/kvwatch/llama-b11434}",
        'state_dir = "/var/lib/kvwatch"',
        "ExecStart=/opt/kvwatch/bin/kvwatch run --config /etc/kvwatch/kvwatch.toml",
        "https://github.com/ggml-org/llama.cpp/pull/13194",
        "a shared system prompt; formats/ of the era",
        r"re.compile(r'\d+:\s')",
    ]
    text = "\n".join([*fine, *outside])
    assert [(len(fine) + i + 1, line) for i, line in enumerate(outside)] == outside_paths(text)
