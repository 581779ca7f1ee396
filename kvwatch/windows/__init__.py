"""The windows: what the detectors read, kept per source over the logs' own time (window.py), the
offload counters' history (offloads.py) and gateway usage in bounded bytes (usages.py)."""
