"""A folder's files start their pool window together, once the folder has started its last file.

Before, each file's window started when its own conversion parked: on a slow listing (or the
offline demo's fast clock) the first files waited it out alone and went on-demand while the
pool was still small, though the rest of the folder was on its way.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from decimal import Decimal
from typing import Any

from usecase_fakes import MODEL

from batchlane.batch.packer import pack_pool
from batchlane.domain import status as st
from batchlane.pdf import plan_chunks
from batchlane.ports import Services
from batchlane.rows import NewFolderFile
from fakes import FakeUnitOfWork

FOLDER = "fj-" + "a" * 24
FILES = [f"in/doc-{n}.pdf" for n in range(4)]
OWNER = "owner-1"


def _svc(svc: Services) -> Services:
    update = {"batch_conversion_min_records": 1, "batch_pool_window_minutes": 1.0, "batchlane_time_scale": 1.0}
    return dataclasses.replace(svc, settings=svc.settings.model_copy(update=update))


def _folder(uow: FakeUnitOfWork) -> None:
    spec: dict[str, Any] = {"input": {"bucket": "b", "prefix": "in/"}}
    assert uow.folder_jobs.add(job_id=FOLDER, owner_id=OWNER, name=None, spec=spec, source=("b", "in/"), target=("b", "out/")) is not None
    uow.folder_jobs.add_files(FOLDER, [NewFolderFile(key, 10, key.replace("in/", "out/")) for key in FILES])


def _start(uow: FakeUnitOfWork, count: int, *, splitting: bool = False) -> list[str]:
    """The folder loop's turn: claim queued files and open each one's conversion of 60 pages (parked in the pool, or
    still splitting), with its funds hold."""
    jobs = []
    for f in uow.folder_jobs.claim_queued(FOLDER, count):
        file_row = uow.jobs.insert_file(owner_id=OWNER, name="a.pdf", s3_key=f"uploads/{OWNER}/a.pdf", size_bytes=10)
        job = uow.jobs.insert_job(
            file_id=file_row.id, owner_id=OWNER, status="splitting" if splitting else "waiting_batch", options={}, model_id=MODEL,
            total_pages=0 if splitting else 60, pages_per_chunk=50, chunks=[] if splitting else plan_chunks(60, 50),
        )  # fmt: skip
        uow.ledger.place_hold(job_id=job.id, owner_id=OWNER, amount_usd=Decimal(5), hours=30)
        uow.folder_jobs.attach_conversion(FOLDER, f.source_key, file_id=file_row.id, conversion_job_id=job.id)
        jobs.append(job.id)
    return jobs


def _pooled(uow: FakeUnitOfWork, jobs: list[str]) -> list[bool]:
    """Whether each job's pool window has started: a moment later, its chunks have waited."""
    uow.state.clock.at += timedelta(milliseconds=1)
    waited = {c.job_id: c.waited_s for c in uow.lanes.pool_chunks()}
    return [waited.get(job, 0.0) > 0 for job in jobs]


def test_every_file_of_a_folder_reaches_the_pool_and_rides_one_bedrock_job(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    svc = _svc(svc_on_fakes)
    _folder(fake_uow)
    first = _start(fake_uow, 3)  # listing not complete yet, one file still to start

    assert pack_pool(svc)["lanes"] == []
    assert _pooled(fake_uow, first) == [False] * 3, "the window waits while the folder is still listing"

    fake_uow.folder_jobs.save_checkpoint(FOLDER, token=None, listed=len(FILES), excluded=0, done=True)
    assert fake_uow.folder_jobs.move(FOLDER, st.folder_job("enumerated")) is not None
    pack_pool(svc)
    assert _pooled(fake_uow, first) == [False] * 3, "listed, but its last file has not started"

    last = _start(fake_uow, 1, splitting=True)
    pack_pool(svc)
    assert _pooled(fake_uow, first) == [False] * 3, "the last file has started but is still splitting: not in the pool yet"

    assert fake_uow.jobs.finish_split(last[0], parked=True, total_pages=60, chunks=plan_chunks(60, 50)) is not None
    pack_pool(svc)
    everyone = first + last
    assert _pooled(fake_uow, everyone) == [True] * 4, "the last file started: every window starts now, together"

    fake_uow.state.clock.at += timedelta(seconds=61)  # the window passes
    result = pack_pool(svc)

    assert result["letGo"] == [], "no file left the pool for on-demand"
    [lane] = result["lanes"]
    assert sorted(lane["jobs"]) == sorted(everyone), "every file of the folder in one Bedrock job"


def test_a_folder_that_starts_nothing_for_a_while_lets_its_files_windows_start(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    # Its owner's places may be full of its own parked files: waiting on for the last file would never end.
    # A stall is a window, at least FOLDER_STALL_S of real time (offline the window is milliseconds).
    svc = _svc(svc_on_fakes)
    _folder(fake_uow)
    first = _start(fake_uow, 2)
    fake_uow.state.clock.at += timedelta(seconds=121)  # the folder starts nothing more

    pack_pool(svc)

    assert _pooled(fake_uow, first) == [True, True]


def test_on_a_scaled_clock_a_folder_still_arriving_is_not_a_stalled_one(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    # Offline the demo's window is milliseconds: files started seconds ago must still wait for the rest.
    svc = _svc(svc_on_fakes)
    svc = dataclasses.replace(svc, settings=svc.settings.model_copy(update={"batchlane_time_scale": 36_000.0}))
    _folder(fake_uow)
    first = _start(fake_uow, 2)
    fake_uow.state.clock.at += timedelta(seconds=5)

    pack_pool(svc)

    assert _pooled(fake_uow, first) == [False, False]
