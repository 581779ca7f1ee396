"""`python -m scripts.samples [--out DIR]`: regenerate every synthetic sample (default into samples/)."""

from __future__ import annotations

import argparse
from pathlib import Path

from scripts.samples.makers import make_all

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def main(argv: list[str] | None = None) -> None:
    """Write every made file into --out and print what each maker says about it."""
    parser = argparse.ArgumentParser(prog="python -m scripts.samples", description=__doc__)
    parser.add_argument("--out", type=Path, default=SAMPLES, help="where to write (default: samples/)")
    parser.add_argument("--quiet", action="store_true", help="print only the file names and sizes")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for made in make_all():
        (args.out / made.name).write_bytes(made.data)
        print(f"{made.name}: {len(made.data)} bytes")
        if made.note and not args.quiet and not made.name.startswith("README"):
            print(made.note + "\n")


if __name__ == "__main__":
    main()
