"""Files kvwatch ships for its users: the Grafana dashboard, Prometheus rules, systemd unit, example config."""
