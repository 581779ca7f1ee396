"""kvwatch: prefix-cache and KV-offload health from inference-engine logs, as metrics and alerts."""

__version__ = "0.1.0"

#: 7433: outside 9100-9999 (the Prometheus exporters' default-port block), away from vLLM's 8000,
#: llama.cpp's 8080, VictoriaMetrics' 8428, the OTel collector's 8888/8889 and Alloy's 12345, and
#: not assigned in /etc/services.
DEFAULT_PORT = 7433
