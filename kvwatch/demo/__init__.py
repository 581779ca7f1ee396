"""`kvwatch demo`: the real daemon tailing the bundled samples, written at an accelerated pace."""

from kvwatch.demo.demo import Demo, run_demo

__all__ = ["Demo", "run_demo"]
