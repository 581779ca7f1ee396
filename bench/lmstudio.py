"""LM Studio bench: `kvwatch replay` against `mtail --one_shot` (bench/lmstudio.mtail) on one generated
LM Studio 0.4.x server log (bench/gen_lmstudio.py); wall and CPU time, the ratio, and equal counts.

    python bench/lmstudio.py --mb 50 --repeat 3

With --repeat N the two take turns N times (kvwatch, mtail, kvwatch, ...): each round's times and ratio
are printed, then the fastest run of each and their ratio, and the load average before and after
(another job's load slows both, not always alike).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_lmstudio import generate
from versus import bench

PAIRS = [
    ("completions", "kvwatch_lmstudio_chat_completions_total", "lmstudio_completions"),
    ("requests", "kvwatch_lmstudio_requests_total", "lmstudio_requests"),
    ("prompt tokens", "kvwatch_lmstudio_prompt_tokens_total", "lmstudio_prompt_tokens"),
    ("cached tokens", "kvwatch_lmstudio_cached_tokens_total", "lmstudio_cached_tokens"),
]

if __name__ == "__main__":
    sys.exit(bench(__doc__ or "", "lmstudio", generate, PAIRS))
