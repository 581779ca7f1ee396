"""A configured engine's bench: `kvwatch replay --config bench/custom.toml` against `mtail --one_shot`
(bench/custom.mtail, the same pattern) on one generated log of a made-up gateway's usage lines among
its access lines; wall and CPU time, the ratio (target: at least mtail's speed), and equal counts.

    python bench/custom.py --mb 50 --repeat 3
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import TextIO

sys.path.insert(0, str(Path(__file__).resolve().parent))

from versus import bench

HERE = Path(__file__).resolve().parent
PAIRS = [
    ("requests", "kvwatch_gw_requests_total", "gw_requests"),
    ("prompt tokens", "kvwatch_gw_prompt_tokens_total", "gw_prompt_tokens"),
    ("cached tokens", "kvwatch_gw_cached_tokens_total", "gw_cached_tokens"),
]
START = 1772359200  # 2026-03-01T10:00:00Z


def generate(out: TextIO, mb: float) -> dict[str, int]:
    """About `mb` MB of the gateway's log: per usage line, four access lines; seeded."""
    rng = random.Random(41)
    lines = requests = size = 0
    second = 0.0
    while size < mb * 1e6:
        second += rng.random() * 0.2
        stamp = f"{START + second:.3f}"
        conv = f"c{rng.randrange(40)}"
        prompt = rng.randrange(2_000, 120_000)
        cached = prompt - rng.randrange(0, 2_000)
        text = (
            f"ts={stamp} level=info msg=usage route=/v1/chat/completions conv={conv} model=coder-32b "
            f"prompt_tokens={prompt} cached_tokens={cached} completion_tokens={rng.randrange(10, 900)}\n"
        )
        for _ in range(4):
            text += (
                f"ts={stamp} level=info msg=access method=POST path=/v1/chat/completions status=200 "
                f"ms={rng.randrange(5, 9000)} peer=10.0.{rng.randrange(256)}.{rng.randrange(256)}\n"
            )
        out.write(text)
        lines, requests, size = lines + 5, requests + 1, size + len(text)
    return {"lines": lines, "bytes": size, "requests": requests}


if __name__ == "__main__":
    sys.exit(
        bench(__doc__ or "", "custom", generate, PAIRS, 1.0, kv_args=("--config", str(HERE / "custom.toml")))
    )
