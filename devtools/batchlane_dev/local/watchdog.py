"""The embedded PostgreSQL never outlives the process that started it (issue 24.10).

``pg_ctl`` daemonises the server, so it survives its starter: a demo killed by a timeout, SIGKILL
or a closed terminal used to leave its server running with its data under /tmp. Two guards:

* :func:`guard` starts a small watchdog process (its own session, so a terminal's SIGHUP does not
  reach it) that waits for its parent to go away, then stops the server and, for a throw-away
  workdir (a demo's), removes it. The stack stops the watchdog when it stops cleanly.
* :func:`reap_leftovers`, called whenever a stack starts an embedded server: any ``batchlane-demo-*``
  / ``batchlane-folder-demo-*`` workdir under the temp folder whose recorded owner is gone (both it and
  its watchdog were killed at once) has its server stopped and its folder removed.

The owner is recorded in ``<workdir>/owner.json`` ({"pid", "watchdogPid"}); a workdir without one
is never touched (an older stack's, or another tool's).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

OWNER_FILE = "owner.json"
THROWAWAY_PREFIXES = ("batchlane-demo-", "batchlane-folder-demo-")


def running(pid: int) -> bool:
    """Running (a zombie is not: where PID 1 reaps nobody, as in some containers, a dead process stays one)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def throwaway(workdir: Path) -> bool:
    """A demo's workdir: removed with its server when its owner dies."""
    return workdir.resolve().parent == Path(tempfile.gettempdir()).resolve() and workdir.name.startswith(THROWAWAY_PREFIXES)


def guard(workdir: Path) -> subprocess.Popen[bytes]:
    """Start the watchdog of this process's server in ``workdir/pgdata``; record the owner."""
    process = subprocess.Popen(
        [sys.executable, "-m", "batchlane_dev.local.watchdog", "--parent", str(os.getpid()), "--workdir", str(workdir.resolve())],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    (workdir / OWNER_FILE).write_text(json.dumps({"pid": os.getpid(), "watchdogPid": process.pid}))
    return process


def release(process: subprocess.Popen[bytes] | None, workdir: Path) -> None:
    """The stack stopped its server itself: end the watchdog and forget the owner."""
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
    (workdir / OWNER_FILE).unlink(missing_ok=True)


def _stop_and_clean(workdir: Path) -> None:
    from batchlane_dev.local import postgres

    postgres.stop(None, workdir / "pgdata")
    if throwaway(workdir):
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        (workdir / OWNER_FILE).unlink(missing_ok=True)


def reap_leftovers(root: Path | None = None) -> list[Path]:
    """Stop the servers, and remove the folders, that killed demos left under ``root`` (the temp folder)."""
    reaped = []
    base = root or Path(tempfile.gettempdir())
    for workdir in sorted(p for prefix in THROWAWAY_PREFIXES for p in base.glob(f"{prefix}*")):
        try:
            owner: dict[str, Any] = json.loads((workdir / OWNER_FILE).read_text())
        except (OSError, ValueError):
            continue  # no owner recorded: not ours to judge
        if any(running(int(owner[key])) for key in ("pid", "watchdogPid") if owner.get(key)):
            continue
        _stop_and_clean(workdir)
        reaped.append(workdir)
    return reaped


def _watch(parent: int, workdir: Path, poll_s: float = 0.5) -> None:
    """Wait until ``parent`` is gone (we are re-parented), then stop its server."""
    stopping = False

    def on_term(*_: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_term)  # released by the stack: exit without touching the server
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while not stopping and os.getppid() == parent:
        time.sleep(poll_s)
    if not stopping:
        _stop_and_clean(workdir)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="stops the offline stack's PostgreSQL when its owner dies")
    parser.add_argument("--parent", type=int, required=True)
    parser.add_argument("--workdir", type=Path, required=True)
    args = parser.parse_args()
    _watch(args.parent, args.workdir)
