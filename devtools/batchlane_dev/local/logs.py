"""Where handler logs go offline: a file under the stack's workdir, and stderr too with --verbose.

On Lambda, Powertools writes JSON lines to stdout and CloudWatch keeps them. Offline, stdout is
the command's own output (the demo's terminal, `make bench`'s JSON lines), so the handlers'
lines go to ``<workdir>/logs/handlers.log`` instead, still as Powertools formats them.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

LOG_FILE_ENV = "BATCHLANE_LOCAL_LOG_FILE"  # read by worker processes (lambda_runtime._worker_start)
VERBOSE_ENV = "BATCHLANE_LOCAL_LOG_VERBOSE"


def handler_log_path(workdir: Path) -> Path:
    return workdir / "logs" / "handlers.log"


def route_handler_logs(path: Path, *, verbose: bool = False) -> list[logging.Handler]:
    """Point the handlers' Powertools logger at ``path`` (and stderr when ``verbose``); returns the handlers it had."""
    from batchlane.observability import logger as handler_logger

    target = logging.getLogger(handler_logger.name)
    before = list(target.handlers)
    formatter = handler_logger.registered_formatter
    path.parent.mkdir(parents=True, exist_ok=True)
    handlers: list[logging.Handler] = [logging.FileHandler(path, encoding="utf-8")]
    if verbose:
        handlers.append(logging.StreamHandler(sys.stderr))
    for handler in before:
        target.removeHandler(handler)
    for handler in handlers:
        handler.setFormatter(formatter)
        target.addHandler(handler)
    target.propagate = False  # a CLI's root handler would print them again
    return before


def restore_handler_logs(before: list[logging.Handler]) -> None:
    """Undo ``route_handler_logs`` (the stack stopped: the process's own logging is what it was)."""
    from batchlane.observability import logger as handler_logger

    target = logging.getLogger(handler_logger.name)
    for handler in list(target.handlers):
        target.removeHandler(handler)
        handler.close()
    for handler in before:
        target.addHandler(handler)
    target.propagate = True


def route_from_environment() -> None:
    """In a worker process: follow the stack that started it (its environment names the file)."""
    path = os.environ.get(LOG_FILE_ENV)
    if path:
        route_handler_logs(Path(path), verbose=os.environ.get(VERBOSE_ENV) == "1")
