"""kvwatch: prefix-cache and KV-offload health from inference-engine logs, as metrics and alerts."""

__version__ = "0.1.0"
