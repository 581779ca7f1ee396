"""The windows: what the detectors read, kept per source over the logs' own time (window.py) and the
offload counters' history (offloads.py)."""
