"""Each owner's offline invocations share one CPU weight, as on Lambda no owner's invocations take another's CPU.

On AWS every Lambda invocation runs in an execution environment with CPU of its own (in proportion to its
memory): owner A's twenty splits do not slow owner B's one. Offline, every worker process shares the host's
cores, and Linux shares them per runnable process: B's one split gets 1/21 of the CPU beside A's twenty, a
slowdown no deployment has (docs/benchmarks.md "tenant_isolation"). With :class:`OwnerCpuShares` the stack's
runtime puts a worker, for the time of one invocation, with its whole process tree (the bounded-PDF fork server
and its children), into a cgroup of the invocation's owner; every owner's group has the same ``cpu.shares``, so
the kernel shares the CPU between owners first and within an owner's invocations second. That is not Lambda's
model (a core each) but it is the part of it the offline figures need: one owner's flood cannot take the CPU
another owner's job uses.

cgroup v1's ``cpu`` controller, written as root (``/sys/fs/cgroup/cpu``); where it is not there or not
writable, :meth:`OwnerCpuShares.create` answers None and the stack runs as before, saying so. Opt in with
``StackOptions(owner_cpu_shares=True)``; only the ``tenant_isolation`` figure does.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import uuid
from pathlib import Path
from typing import Any

log = logging.getLogger("batchlane_dev.local.cpu_shares")

CPU_ROOT = Path("/sys/fs/cgroup/cpu")
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


class OwnerCpuShares:
    """One cgroup per owner under this stack's own directory; :meth:`group_for` names (and makes) an owner's."""

    def __init__(self, root: Path, home: Path) -> None:
        self.root = root  # this stack's directory of owner groups
        self.home = home  # where a worker goes back to after an invocation (the cgroup it started in)
        self._groups: dict[str, Path] = {}

    @classmethod
    def create(cls, cpu_root: Path = CPU_ROOT) -> OwnerCpuShares | None:
        """The stack's groups, or None (with a warning) where cgroup v1's cpu controller cannot be written."""
        home = cpu_root / _own_cgroup()
        _remove_stale(cpu_root)
        root = cpu_root / f"batchlane-offline-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        try:
            root.mkdir()
        except OSError as exc:
            log.warning("owner CPU shares are off: %s cannot be made (%s); workers share the host's CPU as processes", root, exc.strerror)
            return None
        return cls(root, home)

    def group_for(self, owner: str | None) -> str | None:
        """The ``cgroup.procs`` file of ``owner``'s group (made on first use), or None for no owner."""
        if owner is None:
            return None
        if owner not in self._groups:
            group = self.root / ("owner-" + hashlib.sha256(owner.encode()).hexdigest()[:16])
            group.mkdir(exist_ok=True)
            self._groups[owner] = group
        return str(self._groups[owner] / "cgroup.procs")

    def home_procs(self) -> str:
        return str(self.home / "cgroup.procs")

    def close(self) -> None:
        """Every process still in a group back home, the groups removed (a cgroup with tasks cannot be)."""
        for group in self._groups.values():
            _move(_read_pids(group / "cgroup.procs"), self.home_procs())
            try:
                group.rmdir()
            except OSError as exc:
                log.warning("cgroup %s not removed: %s", group, exc.strerror)
        try:
            self.root.rmdir()
        except OSError as exc:  # a group still busy: the next stack removes it (_remove_stale)
            log.warning("cgroup %s not removed: %s", self.root, exc.strerror)


def owner_of(name: str, event: Any, job_owner: Any) -> str | None:
    """Whose invocation this is: the API caller's Cognito ``sub``, the estimate's owner, or the owner of the job the event names
    (``job_owner(job_id)``); None for work of several owners (a pooled lane) or of none (a schedule)."""
    if not isinstance(event, dict):
        return None
    if name == "api":
        claims = ((event.get("requestContext") or {}).get("authorizer") or {}).get("claims") or {}
        sub = claims.get("sub")
        return str(sub) if sub else None
    if name == "estimate":  # a dry run's worker: its execution input names the owner (aws/workflows.start_estimate)
        owner = event.get("ownerId")
        return str(owner) if owner else None
    job_id = event.get("jobId")
    if isinstance(job_id, str) and _UUID.match(job_id):
        owner = job_owner(job_id)
        return str(owner) if owner else None
    return None


def enter(procs: str | None) -> None:
    """This process and its descendants into the group whose ``cgroup.procs`` is ``procs`` (in a worker)."""
    if procs is not None:
        _move(_tree(os.getpid()), procs)


def _tree(pid: int) -> list[int]:
    """``pid`` and every descendant (``/proc/<pid>/task/<tid>/children``)."""
    found, stack = [], [pid]
    while stack:
        current = stack.pop()
        found.append(current)
        for children in Path(f"/proc/{current}/task").glob("*/children"):
            try:
                stack.extend(int(child) for child in children.read_text().split())
            except OSError:  # gone meanwhile
                continue
    return found


def _move(pids: list[int], procs: str) -> None:
    for pid in pids:
        try:
            with open(procs, "w") as handle:
                handle.write(str(pid))
        except OSError:  # a child that ended meanwhile
            continue


def _remove_stale(cpu_root: Path) -> None:
    """Groups left by a stack whose process is gone (killed before it stopped): empty by now, removed."""
    for root in cpu_root.glob("batchlane-offline-*"):
        pid = root.name.split("-")[2]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            try:
                for group in root.glob("owner-*"):
                    if not _read_pids(group / "cgroup.procs"):
                        group.rmdir()
                root.rmdir()
            except OSError:  # still busy, or removed meanwhile by another stack: never a reason not to start
                continue


def _read_pids(procs: Path) -> list[int]:
    try:
        return [int(line) for line in procs.read_text().split()]
    except OSError:
        return []


def _own_cgroup() -> str:
    """This process's cgroup of the cpu controller, relative to its mount (``/proc/self/cgroup``)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpu" in controllers.split(","):
            return path.lstrip("/")
    return ""
