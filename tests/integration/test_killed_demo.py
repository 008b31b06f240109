"""A killed demo leaves no PostgreSQL running (issue 24.10).

A real offline stack in a child process, in a demo's throw-away workdir, killed with SIGKILL (what a
timeout or a closed terminal does): its watchdog stops the embedded server and removes the folder.
When the watchdog is killed too, the next stack's start (`reap_leftovers`, as `demo` and `local up`
call it) stops and removes what was left.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from batchlane_dev.local.jobs import wait_until

STACK = """
import sys, tempfile, time
from pathlib import Path
from batchlane_dev.local.stack import OfflineStack, StackOptions
workdir = Path(tempfile.mkdtemp(prefix="batchlane-demo-"))
OfflineStack(StackOptions(workdir=workdir, batch_lane=False)).start()
print(workdir, flush=True)
time.sleep(3600)
"""


def alive(pid: int) -> bool:
    from batchlane_dev.local.watchdog import running

    return running(pid)


def start_demo_stack() -> tuple[subprocess.Popen[str], Path, int]:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    process = subprocess.Popen([sys.executable, "-c", STACK], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    workdir = Path(process.stdout.readline().strip())
    assert workdir.name.startswith("batchlane-demo-"), "the stack did not start"
    postmaster = int((workdir / "pgdata" / "postmaster.pid").read_text().split()[0])
    assert alive(postmaster)
    return process, workdir, postmaster


def test_a_killed_demo_s_postgres_stops_and_its_folder_goes():
    process, workdir, postmaster = start_demo_stack()
    process.kill()
    process.wait()
    wait_until(lambda: not alive(postmaster), timeout_s=120, what="the killed demo's PostgreSQL to stop")
    wait_until(lambda: not workdir.exists(), timeout_s=60, what="the killed demo's workdir to go")


def test_the_next_start_cleans_what_a_demo_killed_with_its_watchdog_left():
    from batchlane_dev.local.watchdog import reap_leftovers

    process, workdir, postmaster = start_demo_stack()
    owner = json.loads((workdir / "owner.json").read_text())
    os.kill(owner["watchdogPid"], signal.SIGKILL)
    process.kill()
    process.wait()
    assert alive(postmaster), "nothing left to clean: the test proves nothing"

    reaped = reap_leftovers(Path(tempfile.gettempdir()))
    assert workdir in reaped
    wait_until(lambda: not alive(postmaster), timeout_s=60, what="the left-over PostgreSQL to stop")
    assert not workdir.exists()
