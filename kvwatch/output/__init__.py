"""What `kvwatch replay` prints: the Prometheus exposition (exposition.py) and the per-source text
report (text.py, summary.py, cells.py)."""
