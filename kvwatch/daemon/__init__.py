"""`kvwatch run`: the long-running daemon, its threads, signals, reloads and self-metrics."""

from kvwatch.daemon.daemon import Daemon, Options
from kvwatch.daemon.log import setup_logging
from kvwatch.daemon.setup import Prepared, prepare

__all__ = ["Daemon", "Options", "Prepared", "prepare", "setup_logging"]
