"""Files kvwatch ships for its users: Grafana dashboard, Prometheus rules, systemd unit, example config."""
