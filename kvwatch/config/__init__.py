"""The config file: read, validated and summarized; what the daemon and check-config are handed."""

from kvwatch.config.load import config_for_stdin, load_config, parse_config
from kvwatch.config.types import Config, ConfigError
from kvwatch.config.view import silence_warnings, summarize

__all__ = [
    "Config",
    "ConfigError",
    "config_for_stdin",
    "load_config",
    "parse_config",
    "silence_warnings",
    "summarize",
]
