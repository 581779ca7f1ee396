"""Ollama bench: `kvwatch replay` against `mtail --one_shot` (bench/ollama.mtail) on one generated
Ollama >= 0.30 journald log (bench/gen_ollama.py); wall and CPU time, the ratio, and equal counts.

    python bench/ollama.py --mb 50 --repeat 3

With --repeat N the two take turns N times (kvwatch, mtail, kvwatch, ...): each round's times and ratio
are printed, then the fastest run of each and their ratio, and the load average before and after
(another job's load slows both, not always alike).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_ollama import generate
from versus import bench

PAIRS = [
    ("requests", "kvwatch_ollama_requests_total", "ollama_requests"),
    ("prompt tokens", "kvwatch_ollama_prompt_tokens_total", "ollama_prompt_tokens"),
    ("cached tokens", "kvwatch_ollama_cached_tokens_total", "ollama_cached_tokens"),
]

if __name__ == "__main__":
    sys.exit(bench(__doc__ or "", "ollama", generate, PAIRS))
