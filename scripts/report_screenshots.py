"""Rewrite docs/report/*.png, the screenshots docs/report.md shows: each incident sample's report rendered
by headless chromium (tests/cdp.py), its summary and its charts, at 0.6 scale; made smaller by Debian's
pngquant (256 colours) where it is installed.

    python scripts/report_screenshots.py
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from cdp import Browser, Page  # noqa: E402 (tests/ on the path first)

#: docs/report/NAME.png <- the report of samples/SAMPLE
SHOTS = {
    "pinned": "usage-newapi.log",
    "write-only": "vllm-write-only-offload.log",
    "reuse-broken": "llamacpp-synthetic-incident4.log",
    "healthy": "usage-newapi-fixed.log",
}
SCALE = 0.6


def main() -> None:
    """Render each sample's report and write its two screenshots."""
    out = ROOT / "docs" / "report"
    out.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as work, Browser(Path(work) / "chromium") as browser:
        for name, sample in SHOTS.items():
            html = Path(work) / f"{name}.html"
            argv = [
                sys.executable,
                "-m",
                "kvwatch",
                "report",
                "--year",
                "2026",
                f"samples/{sample}",
                "-o",
                str(html),
            ]
            subprocess.run(argv, cwd=ROOT, check=True)
            page = Page(browser)
            page.load(html.as_uri())
            page.wait_for("document.documentElement.dataset.charts", time.monotonic() + 30)
            charts = page.evaluate("document.querySelector('h2.source').getBoundingClientRect().top")
            page.screenshot(out / f"{name}-summary.png", scale=SCALE, height=charts - 10)
            page.screenshot(out / f"{name}-charts.png", scale=SCALE, top=charts - 10)
            shots = [out / f"{name}-summary.png", out / f"{name}-charts.png"]
            if shutil.which("pngquant"):
                subprocess.run(
                    ["pngquant", "--force", "--ext", ".png", "--skip-if-larger", *map(str, shots)],
                    check=False,
                )
            print(", ".join(str(shot.relative_to(ROOT)) for shot in shots))


if __name__ == "__main__":
    main()
