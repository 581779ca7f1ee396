"""What `kvwatch replay --config` and `kvwatch report --config` take from a config file: its engines
(registered as it loads) and its detector settings."""

from __future__ import annotations

from typing import Any

from kvwatch.config.alerting import detector_settings
from kvwatch.config.load import load_config
from kvwatch.config.types import ConfigError


def config_detectors(path: str | None) -> tuple[Any, str | None]:
    """The detector settings of a `--config` file, whose engines it registers (None: no file); or what
    is wrong with it."""
    if not path:
        return None, None
    try:
        config = load_config(path)
        problems: list[str] = []
        detectors = detector_settings(config, problems)
        if problems:
            raise ConfigError(path, problems)
    except ConfigError as err:
        return None, f"kvwatch: {err}"
    return detectors, None
