"""The engine-neutral parse stage: the Parser seam (base), clocks, text helpers, a source's run (run).

Each engine's own parser lives in its package under kvwatch.engines.
"""
