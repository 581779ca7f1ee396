"""The HTTP side: the exporter (`/metrics`, `/`, `/healthz`), the landing page and the web config file."""
