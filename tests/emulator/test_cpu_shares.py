"""Offline owner CPU groups (local/cpu_shares.py): whose invocation it is, the group a worker and its children
enter for it and leave after, and a stack that runs as before where cgroups cannot be written."""

from __future__ import annotations

import logging
import multiprocessing
import os
from pathlib import Path
from typing import Any

import pytest

from batchlane_dev.local import cpu_shares
from batchlane_dev.local.cpu_shares import CPU_ROOT, OwnerCpuShares, owner_of
from batchlane_dev.local.lambda_runtime import HandlerRegistry, Invocation

JOB = "0b8f3c1e-2a4d-4e5f-9a6b-7c8d9e0f1a2b"


def test_the_owner_is_the_api_caller_or_the_owner_of_the_job_the_event_names() -> None:
    asked: list[str] = []

    def job_owner(job_id: str) -> str:
        asked.append(job_id)
        return "owner-of-" + job_id[:4]

    api_event = {"requestContext": {"authorizer": {"claims": {"sub": "alice"}}}, "headers": {}}
    assert owner_of("api", api_event, job_owner) == "alice"
    assert owner_of("api", {"requestContext": {}}, job_owner) is None, "no caller: no group"
    assert owner_of("job_split", {"jobId": JOB}, job_owner) == "owner-of-0b8f"
    assert owner_of("chunk_processor", {"jobId": JOB, "chunkIndex": 3}, job_owner) == "owner-of-0b8f"
    assert owner_of("batch_prepare", {"laneId": "lane-1"}, job_owner) is None, "a pooled lane is several owners' work"
    assert owner_of("job_split", {"jobId": "not-a-uuid'; --"}, job_owner) is None, "only a job id is looked up"
    assert owner_of("recovery", [], job_owner) is None
    assert owner_of("estimate", {"estimateId": JOB, "ownerId": "carol"}, job_owner) == "carol", "a dry run's worker: its owner rides along"
    assert asked == [JOB, JOB]


def test_where_cgroups_cannot_be_written_there_are_no_groups_and_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="batchlane_dev.local.cpu_shares"):
        assert OwnerCpuShares.create(tmp_path / "no-cgroup-mount-here") is None
    assert "owner CPU shares are off" in caplog.text


class _RecordingWorkers:
    functions = frozenset({"job_split"})

    def __init__(self) -> None:
        self.runs: list[dict[str, Any]] = []

    def run(self, account_id: str, region: str, name: str, event: Any, **groups: Any) -> Invocation:
        self.runs.append(groups)
        return Invocation(result={"ok": True})


def test_a_worker_invocation_is_sent_with_its_owner_s_group_and_the_way_home(tmp_path: Path) -> None:
    registry = HandlerRegistry()
    workers = _RecordingWorkers()
    registry.workers = workers  # type: ignore[assignment]
    (tmp_path / "home").mkdir()
    registry.cpu_shares = OwnerCpuShares(tmp_path / "stack", tmp_path / "home")
    (tmp_path / "stack").mkdir()
    registry._owners[JOB] = "alice"  # what the jobs table says (looked up once per job)

    registry.invoke("job_split", {"jobId": JOB})
    registry.invoke("job_split", {"laneId": "lane-1"})

    alice = registry.cpu_shares.group_for("alice")
    assert alice is not None and Path(alice).parent.is_dir() and Path(alice).name == "cgroup.procs"
    assert workers.runs == [
        {"cpu_group": alice, "cpu_home": str(tmp_path / "home" / "cgroup.procs")},
        {"cpu_group": None, "cpu_home": str(tmp_path / "home" / "cgroup.procs")},
    ]


def test_a_worker_stays_in_its_owner_s_group_and_moves_only_when_the_owner_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each move waits on the kernel (~15 ms): B's every request once paid two, which the latency figures counted."""
    from batchlane_dev.local import lambda_runtime

    moves: list[str | None] = []
    monkeypatch.setattr(cpu_shares, "enter", moves.append)
    monkeypatch.setattr(lambda_runtime, "_worker_group", [None])
    monkeypatch.setattr(lambda_runtime, "_worker_registry", lambda *_: type("R", (), {"_run": staticmethod(lambda name, event: Invocation())})())
    for group in ("a/cgroup.procs", "a/cgroup.procs", "b/cgroup.procs", None, None):
        lambda_runtime._worker_invoke("123456789012", "us-east-1", "api", {}, group, "home/cgroup.procs")
    assert moves == ["a/cgroup.procs", "b/cgroup.procs", "home/cgroup.procs"]


def _cpu_cgroup() -> str:
    return next(line.split(":", 2)[2] for line in Path("/proc/self/cgroup").read_text().splitlines() if "cpu" in line.split(":")[1].split(","))


def _in_group_and_back(group: str, home: str, seen: Any) -> None:
    cpu_shares.enter(group)
    seen.put(_cpu_cgroup())
    child = multiprocessing.get_context("fork").Process(target=lambda: seen.put(_cpu_cgroup()))
    child.start()
    child.join()
    cpu_shares.enter(home)
    seen.put(_cpu_cgroup())


@pytest.mark.skipif(not os.access(CPU_ROOT, os.W_OK), reason="cgroup v1's cpu controller is not writable here (not root, or cgroup v2 only)")
def test_a_worker_and_the_children_it_starts_run_in_the_owner_s_group_until_it_goes_home() -> None:
    shares = OwnerCpuShares.create()
    assert shares is not None
    try:
        group = shares.group_for("alice")
        assert group is not None
        seen = multiprocessing.get_context("fork").Queue()
        worker = multiprocessing.get_context("fork").Process(target=_in_group_and_back, args=(group, shares.home_procs(), seen))
        worker.start()
        worker.join(timeout=60)
        in_group, child, back = seen.get(timeout=5), seen.get(timeout=5), seen.get(timeout=5)
        alice = "/" + str(Path(group).parent.relative_to(CPU_ROOT))
        assert in_group == alice and child == alice, "the worker and what it forks share the owner's weight"
        assert back == _cpu_cgroup(), "after the invocation the worker is back where the stack started it"
        bob = shares.group_for("bob")
        assert bob is not None and bob != group
        weights = {(Path(g).parent / "cpu.shares").read_text().strip() for g in (group, bob)}
        assert len(weights) == 1, f"every owner has the same weight: {weights}"
    finally:
        shares.close()
    assert not shares.root.exists(), "the stack's groups are removed when it stops"


@pytest.mark.skipif(not os.access(CPU_ROOT, os.W_OK), reason="cgroup v1's cpu controller is not writable here (not root, or cgroup v2 only)")
def test_groups_left_by_a_stack_whose_process_is_gone_are_removed_by_the_next() -> None:
    dead = multiprocessing.get_context("fork").Process(target=lambda: None)
    dead.start()
    dead.join()
    assert dead.pid is not None and not Path(f"/proc/{dead.pid}").exists()
    stale = CPU_ROOT / f"batchlane-offline-{dead.pid}-deadbeef"
    (stale / "owner-0123456789abcdef").mkdir(parents=True)
    live = OwnerCpuShares.create()
    assert live is not None
    try:
        assert not stale.exists(), "an empty group of a stack that is gone is removed"
    finally:
        live.close()
