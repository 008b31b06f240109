"""`batchlane local up | down | status`: the offline stack as a background process.

``up`` starts ``python -m batchlane_dev.local.daemon`` in its own session; the daemon starts
the stack and writes ``<workdir>/state.json`` (pid, endpoints, the environment a client
needs, and ``forgottenRows``: what an earlier run left in the database, dropped because the
emulated services keep nothing across a restart). ``down`` sends SIGTERM and waits; the
daemon stops the stack cleanly.

It also records its workdir in a per-user file (:func:`user_state_file`), so a command run
from any directory without ``--workdir`` finds the running stack (:func:`find_stack`).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

STATE_FILE = "state.json"
DEFAULT_WORKDIR = Path(".batchlane/local")
# `batchlane local up` is for people: an emulated batch job takes about two minutes of
# real time (a fixed 1 emulated hour InProgress at 30x, plus the short phases), long
# enough to watch a job wait for its batch and act on it, whatever its size (the
# calibrated pace would end a 60-page job in seconds). A --faults value with its own
# time_scale wins.
DEFAULT_LOCAL_FAULTS = "time_scale=30,job_hours=1"


def with_default_faults(faults: str) -> str:
    return ",".join(f for f in (DEFAULT_LOCAL_FAULTS if "time_scale" not in (faults or "") else "", faults) if f)


def _alive(pid: int) -> bool:
    try:  # our own child (tests start the daemon in-process) stays a zombie that answers kill 0 until reaped
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_state(workdir: Path) -> dict[str, Any] | None:
    path = workdir / STATE_FILE
    if not path.exists():
        return None
    state = json.loads(path.read_text())
    if not _alive(int(state["pid"])):
        path.unlink(missing_ok=True)
        return None
    return state if state.get("status") == "ready" else None


def user_state_file() -> Path:
    """The per-user record of the running stack's workdir: $BATCHLANE_STATE_HOME, else $XDG_STATE_HOME, else ~/.local/state."""
    base = os.environ.get("BATCHLANE_STATE_HOME") or os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "batchlane" / "local-stack.json"


def find_stack(workdir: Path | None) -> tuple[dict[str, Any] | None, Path, list[Path]]:
    """The running stack's state, its workdir and every state file looked at.

    An explicit ``workdir`` is the only place looked; without one, ``./.batchlane/local`` first,
    then the workdir the per-user state file records (a stack started from another directory)."""
    if workdir is not None:
        chosen = workdir.resolve()
        return read_state(chosen), chosen, [chosen / STATE_FILE]
    here = DEFAULT_WORKDIR.resolve()
    looked = [here / STATE_FILE]
    state = read_state(here)
    if state:
        return state, here, looked
    pointer = user_state_file()
    looked.append(pointer)
    try:
        recorded = Path(json.loads(pointer.read_text())["workdir"])
    except (OSError, ValueError, KeyError, TypeError):
        return None, here, looked
    if recorded != here:
        looked.append(recorded / STATE_FILE)
        state = read_state(recorded)
        if state:
            return state, recorded, looked
    return None, here, looked


def not_running_message(looked: list[Path]) -> str:
    return f"the offline stack is not running (looked at {', '.join(map(str, looked))}): start it with `batchlane local up`"


def start_daemon(workdir: Path, *, faults: str = "", timeout_s: float = 90) -> dict[str, Any]:
    workdir = workdir.resolve()
    existing = read_state(workdir)
    if existing:
        return existing
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / STATE_FILE).unlink(missing_ok=True)
    log = (workdir / "stack.log").open("ab")
    process = subprocess.Popen(
        [sys.executable, "-m", "batchlane_dev.local.daemon", "--workdir", str(workdir), "--faults", faults],
        stdout=log,
        stderr=log,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        state = read_state(workdir)
        if state:
            return state
        if process.poll() is not None:
            raise RuntimeError(f"the offline stack exited with code {process.returncode}; see {workdir / 'stack.log'}:\n{_log_tail(workdir)}")
        time.sleep(0.2)
    process.terminate()
    raise RuntimeError(f"the offline stack did not start within {timeout_s:.0f} s; see {workdir / 'stack.log'}")


def _log_tail(workdir: Path, lines: int = 15) -> str:
    """The end of the daemon's log: why it exited, where the caller sees it (a test's temp folder may be gone later)."""
    try:
        return "\n".join((workdir / "stack.log").read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def stop_daemon(workdir: Path, *, timeout_s: float = 30) -> bool:
    state = read_state(workdir.resolve())
    if not state:
        return False
    pid = int(state["pid"])
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)
    (workdir / STATE_FILE).unlink(missing_ok=True)
    return True


def restart_notice(state: dict[str, Any]) -> str:
    """What `local up` tells a person about state from an earlier run (there is never any)."""
    dropped = state.get("forgottenRows") or {}
    head = "starting from empty tables: the emulated S3, Step Functions and Bedrock keep nothing across `local down`, so neither does the database"
    if not dropped:
        return head
    jobs = dropped.get("large_conversion_jobs", 0)
    return f"{head} ({jobs} job(s) and {sum(dropped.values())} row(s) in all from the earlier run were dropped)"


def use_running_stack(workdir: Path | None) -> dict[str, Any]:
    """Point this process's clients at a running offline stack (its environment); None: find it (:func:`find_stack`)."""
    state, _, looked = find_stack(workdir)
    if not state:
        raise RuntimeError(not_running_message(looked))
    os.environ.update(state["env"])
    from batchlane.runtime import reset_services

    reset_services()
    return state


def write_state(workdir: Path, stack: Any, *, faults: str = "") -> None:
    """Publish a started stack to clients: ``state.json`` (pid, env, the outputs a deployed stack would have)."""
    state = {
        "pid": os.getpid(),
        "status": "ready",
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "faults": faults,
        "env": stack.env,
        "outputs": stack.outputs,
        "forgottenRows": stack.forgotten_rows,
    }
    tmp = workdir / (STATE_FILE + ".tmp")
    tmp.unlink(missing_ok=True)
    # The env holds the database password: readable by this user only.
    with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as out:
        out.write(json.dumps(state, indent=2))
    tmp.replace(workdir / STATE_FILE)
    _record_for_user(workdir)


def _record_for_user(workdir: Path) -> None:
    """Point the per-user state file at this stack's workdir (best effort: an unwritable home only loses the lookup)."""
    pointer = user_state_file()
    try:
        pointer.parent.mkdir(parents=True, exist_ok=True)
        tmp = pointer.with_name(f".{pointer.name}.{os.getpid()}")
        tmp.write_text(json.dumps({"workdir": str(workdir.resolve()), "pid": os.getpid()}))
        tmp.replace(pointer)
    except OSError:
        pass


def _forget_for_user(workdir: Path) -> None:
    pointer = user_state_file()
    try:
        if Path(json.loads(pointer.read_text())["workdir"]) == workdir.resolve():
            pointer.unlink(missing_ok=True)
    except (OSError, ValueError, KeyError, TypeError):
        pass


def _run(workdir: Path, faults: str) -> None:
    from batchlane_dev.local.stack import OfflineStack, StackOptions

    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    stack = OfflineStack(StackOptions(workdir=workdir, faults=with_default_faults(faults))).start()
    try:
        write_state(workdir, stack, faults=faults)
        stopping.wait()
    finally:
        stack.stop()
        (workdir / STATE_FILE).unlink(missing_ok=True)
        _forget_for_user(workdir)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="batchlane offline stack daemon (use `batchlane local up`)")
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--faults", default="")
    args = parser.parse_args()
    _run(args.workdir, args.faults)
