"""A folder's files start their pool window together, once the folder has started its last file.

Before, each file's window started when its own conversion parked: on a slow listing (or the
offline demo's fast clock) the first files waited it out alone and went on-demand while the
pool was still small, though the rest of the folder was on its way.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from usecase_fakes import new_job

from batchlane.batch.packer import pack_pool
from batchlane.db import folder_jobs as folders
from batchlane.db import jobs as job_repo
from batchlane.runtime import Services

FOLDER = "fj-" + "a" * 24
FILES = [f"in/doc-{n}.pdf" for n in range(4)]


def _svc(svc: Services) -> Services:
    tables = [r["tablename"] for r in svc.db.run("SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'schema_migrations'")]
    svc.db.run(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")  # the pool is the whole database's
    update = {"batch_conversion_min_records": 1, "batch_pool_window_minutes": 1.0, "batchlane_time_scale": 1.0}
    return dataclasses.replace(svc, settings=svc.settings.model_copy(update=update))


def _folder(svc: Services) -> None:
    spec: dict[str, Any] = {"input": {"bucket": "b", "prefix": "in/"}}
    folders.insert_job(svc.db, job_id=FOLDER, owner_id="owner-1", name=None, spec=spec, source=("b", "in/"), target=("b", "out/"))
    folders.insert_files(svc.db, FOLDER, [folders.NewFile(key, 10, key.replace("in/", "out/")) for key in FILES])


def _start(svc: Services, count: int) -> list[str]:
    """The folder loop's turn: claim queued files and open each one's conversion (parked in the pool)."""
    jobs = []
    for row in folders.claim_queued(svc.db, FOLDER, count):
        job_id = new_job(svc, pages=60, owner="owner-1")
        job = job_repo.get_job(svc.db, job_id)
        assert job is not None
        folders.attach_conversion(svc.db, FOLDER, row["source_key"], file_id=str(job.file_id), conversion_job_id=job_id)
        jobs.append(job_id)
    return jobs


def _pooled(svc: Services, jobs: list[str]) -> list[bool]:
    found = svc.db.run("SELECT id, pooled_at FROM large_conversion_jobs WHERE id = ANY(CAST(:ids AS uuid[]))", ids=jobs)
    by_id = {str(r["id"]): r["pooled_at"] for r in found}
    return [by_id[j] is not None for j in jobs]


def test_every_file_of_a_folder_reaches_the_pool_and_rides_one_bedrock_job(svc: Services) -> None:
    svc = _svc(svc)
    _folder(svc)
    first = _start(svc, 3)  # listing not complete yet, one file still to start

    assert pack_pool(svc)["lanes"] == []
    assert _pooled(svc, first) == [False] * 3, "the window waits while the folder is still listing"

    svc.db.run("UPDATE folder_jobs SET enumeration_done = true, status = 'processing' WHERE id = :id", id=FOLDER)
    pack_pool(svc)
    assert _pooled(svc, first) == [False] * 3, "listed, but its last file has not started"

    last = _start(svc, 1)
    svc.db.run("UPDATE large_conversion_jobs SET status = 'splitting' WHERE id = CAST(:id AS uuid)", id=last[0])
    pack_pool(svc)
    assert _pooled(svc, first) == [False] * 3, "the last file has started but is still splitting: not in the pool yet"

    svc.db.run("UPDATE large_conversion_jobs SET status = 'waiting_batch' WHERE id = CAST(:id AS uuid)", id=last[0])
    pack_pool(svc)
    everyone = first + last
    assert _pooled(svc, everyone) == [True] * 4, "the last file started: every window starts now, together"

    svc.db.run("UPDATE large_conversion_jobs SET pooled_at = pooled_at - interval '61 seconds'")  # the window passes
    result = pack_pool(svc)

    assert result["letGo"] == [], "no file left the pool for on-demand"
    [lane] = result["lanes"]
    assert sorted(lane["jobs"]) == sorted(everyone), "every file of the folder in one Bedrock job"


def test_a_folder_that_starts_nothing_for_a_while_lets_its_files_windows_start(svc: Services) -> None:
    # Its owner's places may be full of its own parked files: waiting on for the last file would never end.
    # A stall is a window, at least FOLDER_STALL_S of real time (offline the window is milliseconds).
    svc = _svc(svc)
    _folder(svc)
    first = _start(svc, 2)
    svc.db.run("UPDATE folder_job_files SET started_at = now() - interval '121 seconds' WHERE started_at IS NOT NULL")

    pack_pool(svc)

    assert _pooled(svc, first) == [True, True]


def test_on_a_scaled_clock_a_folder_still_arriving_is_not_a_stalled_one(svc: Services) -> None:
    # Offline the demo's window is milliseconds: files started seconds ago must still wait for the rest.
    svc = _svc(svc)
    svc = dataclasses.replace(svc, settings=svc.settings.model_copy(update={"batchlane_time_scale": 36_000.0}))
    _folder(svc)
    first = _start(svc, 2)
    svc.db.run("UPDATE folder_job_files SET started_at = now() - interval '5 seconds' WHERE started_at IS NOT NULL")

    pack_pool(svc)

    assert _pooled(svc, first) == [False, False]
