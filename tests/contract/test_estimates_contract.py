"""EstimateRepository's contract, on the fake and on PostgreSQL: a running row per dry run, its progress while it
runs, one answer (completed with its result, or failed with why), an owner's running ones counted, old ones purged."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from batchlane.domain import status as st
from batchlane.domain.status import EstimateStatus
from batchlane.ports import UniqueViolation

OWNER = "owner-estimates-contract"


def _add(uow: Any, owner: str = OWNER, kind: str = "file") -> str:
    estimate_id = str(uuid.uuid4())
    uow.estimates.add(estimate_id=estimate_id, owner_id=owner, kind=kind, request={"fileId": "f-1", "options": {"modelId": "m"}})
    return estimate_id


def test_a_new_estimate_runs_with_its_request_and_no_answer(uow: Any) -> None:
    estimate_id = _add(uow)
    row = uow.estimates.get(estimate_id)
    assert (row.id, row.owner_id, row.kind, row.status) == (estimate_id, OWNER, "file", EstimateStatus.RUNNING)
    assert row.request == {"fileId": "f-1", "options": {"modelId": "m"}}
    assert (row.progress, row.result, row.error_id, row.finished_at) == ({}, None, None, None)
    assert uow.estimates.get(str(uuid.uuid4())) is None
    with pytest.raises(UniqueViolation):
        uow.estimates.add(estimate_id=estimate_id, owner_id=OWNER, kind="file", request={})


def test_progress_is_kept_while_it_runs_and_refused_once_answered(uow: Any) -> None:
    estimate_id = _add(uow, kind="folder")
    assert uow.estimates.report(estimate_id, {"step": "counting", "done": 3, "total": 24}) is True
    assert uow.estimates.get(estimate_id).progress == {"step": "counting", "done": 3, "total": 24}
    assert uow.estimates.finish(estimate_id, st.estimate("complete"), result={"dryRun": True, "pages": {"total": 7}}) is True
    assert uow.estimates.report(estimate_id, {"step": "late"}) is False
    row = uow.estimates.get(estimate_id)
    assert (row.status, row.result, row.progress) == (EstimateStatus.COMPLETED, {"dryRun": True, "pages": {"total": 7}}, {"step": "counting", "done": 3, "total": 24})
    assert row.finished_at is not None


def test_an_estimate_is_answered_once_and_only_by_an_estimate_move(uow: Any) -> None:
    estimate_id = _add(uow)
    assert uow.estimates.finish(estimate_id, st.estimate("fail"), error_id="PDF_TOO_COMPLEX", error_message="too complex") is True
    assert uow.estimates.finish(estimate_id, st.estimate("complete"), result={"late": True}) is False
    row = uow.estimates.get(estimate_id)
    assert (row.status, row.error_id, row.error_message, row.result) == (EstimateStatus.FAILED, "PDF_TOO_COMPLEX", "too complex", None)
    with pytest.raises(ValueError):
        uow.estimates.finish(_add(uow), st.fail())  # a job's move


def test_an_owners_running_estimates_are_counted_and_old_ones_purged(uow: Any) -> None:
    owner = f"{OWNER}-{uuid.uuid4().hex[:6]}"
    first, second = _add(uow, owner), _add(uow, owner)
    _add(uow, f"{owner}-other")
    assert uow.estimates.running(owner, younger_than_s=3600) == 2
    uow.estimates.finish(first, st.estimate("complete"), result={})
    assert uow.estimates.running(owner, younger_than_s=3600) == 1
    assert uow.estimates.purge(owner, older_than_s=3600) == 0  # nothing a day old yet
    assert uow.estimates.purge(owner, older_than_s=-3600) == 2  # everything of this owner is older than an hour from now
    assert uow.estimates.get(second) is None and uow.estimates.running(f"{owner}-other", younger_than_s=3600) == 1
