"""Dry runs as asynchronous estimates: the API checks and records, a worker of its own reads the PDFs.

``POST …?dry_run=true`` answers 202 at once with the estimate's id (the owner, the options, the folder grants
are checked first, as before); the ``estimate`` state machine runs :func:`run_estimate` in the ``estimate``
function, which writes its progress and its answer; ``GET /api/v1/estimates/{estimateId}`` polls it. The API
never opens, samples or lists a user's files: every request answers from the database (issue 40; decision
docs/decisions/0035-asynchronous-estimates.md). An owner has at most ``batchlane_max_live_estimates`` running.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from batchlane.api.usecases import owned_file
from batchlane.domain import status as st
from batchlane.domain.caps import check_cap
from batchlane.domain.errors import BatchlaneError, Conflict, NotFound, StoreUnavailable
from batchlane.filejob.dryrun import dry_run
from batchlane.folders import dryrun as folder_dryrun
from batchlane.folders.usecases import prepare
from batchlane.naming import api_json
from batchlane.observability import logger
from batchlane.ports import Services
from batchlane.rows import Estimate

# The worker's timeout (deployment/topology.py "estimate") times its tries (HeavyTaskRetry: 3): a row still running
# past this was lost with its execution, and answers failed (ESTIMATE_LOST) rather than running for ever.
WORKER_TIMEOUT_S = 120
LOST_AFTER_S = 4 * WORKER_TIMEOUT_S + 5 * 60
KEEP_S = 24 * 3600  # an owner's estimates older than a day are removed when they start a new one
Progress = Callable[[dict[str, Any]], None]


def start_file_estimate(svc: Services, owner_id: str, file_id: str, *, options: dict[str, Any] | None) -> dict[str, Any]:
    """202: the caller's uploaded file will be estimated by the worker (404 for another's file, 409 before the upload)."""
    file_row = owned_file(svc, owner_id, file_id)
    try:
        svc.store.size(file_row.s3_key)
    except NotFound:
        raise Conflict("The file has not been uploaded yet: PUT it to the upload URL first.", error_id="UPLOAD_MISSING") from None
    return _start(svc, owner_id, "file", {"fileId": file_row.id, "options": options or {}})


def start_folder_estimate(svc: Services, owner_id: str, body: Any, *, groups: Iterable[str] = ()) -> dict[str, Any]:
    """202: the spec is validated and checked against the caller's grants now (400, 403); the worker lists and counts."""
    prepare(svc, body, owner_id=owner_id, groups=groups)
    return _start(svc, owner_id, "folder", {"spec": body, "groups": sorted(groups)})


def _start(svc: Services, owner_id: str, kind: str, request: dict[str, Any]) -> dict[str, Any]:
    estimates = svc.uow().estimates
    estimates.purge(owner_id, older_than_s=KEEP_S)
    check_cap(
        what="estimates running",
        count=estimates.running(owner_id, younger_than_s=LOST_AFTER_S),
        limit=svc.settings.batchlane_max_live_estimates,
        setting="BATCHLANE_MAX_LIVE_ESTIMATES",
        error_id="ESTIMATES_LIMIT",
        wait="Wait for one to finish (GET /api/v1/estimates/{estimateId})",
    )
    row = estimates.add(estimate_id=str(uuid.uuid4()), owner_id=owner_id, kind=kind, request=request)
    try:
        svc.workflows.start_estimate(row.id, owner_id)
    except Exception as exc:  # throttled, a blip: the row must not hold a place of the cap while nothing runs it
        estimates.finish(row.id, st.estimate("fail"), error_id="ESTIMATE_NOT_STARTED", error_message="The estimate could not be started; try again.")
        raise StoreUnavailable("The estimate could not be started.", error_id="ESTIMATE_NOT_STARTED") from exc
    logger.info("estimate started", estimate_id=row.id, kind=kind)
    return view(row)


def owned_estimate(svc: Services, owner_id: str, estimate_id: str) -> dict[str, Any]:
    """GET /api/v1/estimates/{estimateId}: the caller's estimate as it stands (404 for another's, as for a missing one)."""
    row = svc.uow().estimates.get(estimate_id)
    if row is None or row.owner_id != owner_id:
        raise NotFound(f"No estimate {estimate_id}.", error_id="ESTIMATE_NOT_FOUND")
    return view(row)


def view(row: Estimate) -> dict[str, Any]:
    """The estimate's answer: ``running`` with its progress, ``completed`` with ``result`` (the dry run's own
    answer), or ``failed`` with ``error`` {code, message} (the code convert would give: PDF_CORRUPT, ...)."""
    status, error = row.status, ({"code": row.error_id, "message": row.error_message} if row.error_id else None)
    if status == st.EstimateStatus.RUNNING and row.age_s > LOST_AFTER_S:
        status = st.EstimateStatus.FAILED
        error = {"code": "ESTIMATE_LOST", "message": f"The estimate did not finish within {LOST_AFTER_S // 60} minutes; start it again."}
    return {
        "estimateId": row.id,
        "kind": row.kind,
        "status": str(status),
        "progress": row.progress,
        "createdAt": row.created_at.isoformat(),
        "finishedAt": row.finished_at.isoformat() if row.finished_at else None,
        "result": row.result,
        "error": error,
        "poll": f"/api/v1/estimates/{row.id}",
    }


def run_estimate(svc: Services, estimate_id: str) -> dict[str, Any]:
    """The worker: the dry run of a running estimate, its answer written once. A refusal the dry run names
    (PDF_CORRUPT, FOLDER_NOT_ALLOWED, ...) is the estimate's failure; anything else raises, for the state
    machine to retry and then :func:`fail_estimate`."""
    estimates = svc.uow().estimates
    row = estimates.get(estimate_id)
    if row is None or row.status != st.EstimateStatus.RUNNING:  # a retried task after its answer was written
        return {"estimateId": estimate_id, "status": row.status if row else "missing"}

    def progress(step: dict[str, Any]) -> None:
        estimates.report(estimate_id, step)

    try:
        result = _run_file(svc, row, progress) if row.kind == "file" else _run_folder(svc, row, progress)
    except StoreUnavailable:
        raise
    except BatchlaneError as exc:
        estimates.finish(estimate_id, st.estimate("fail"), error_id=exc.error_id, error_message=str(exc))
        logger.info("estimate refused", estimate_id=estimate_id, error_id=exc.error_id)
        return {"estimateId": estimate_id, "status": "failed", "errorId": exc.error_id}
    estimates.finish(estimate_id, st.estimate("complete"), result=result)
    logger.info("estimate completed", estimate_id=estimate_id, kind=row.kind)
    return {"estimateId": estimate_id, "status": "completed"}


def fail_estimate(svc: Services, estimate_id: str, error: dict[str, Any] | None) -> dict[str, Any]:
    """The state machine's end after the worker's tries (out of memory, a timeout): failed, saying which."""
    name = str((error or {}).get("Error") or "an error")
    svc.uow().estimates.finish(
        estimate_id, st.estimate("fail"), error_id="ESTIMATE_FAILED", error_message=f"The estimate stopped before it finished ({name}); try again."
    )
    logger.warning("estimate failed", estimate_id=estimate_id, error=name)
    return {"estimateId": estimate_id, "status": "failed", "errorId": "ESTIMATE_FAILED"}


def _run_file(svc: Services, row: Estimate, progress: Progress) -> dict[str, Any]:
    file_row = owned_file(svc, row.owner_id, str(row.request["fileId"]))  # deleted meanwhile: FILE_NOT_FOUND
    progress({"step": "reading", "done": 0, "total": 1})
    return dry_run(svc, dataclasses.asdict(file_row), row.request.get("options") or None)  # dry_run reads the row's columns by name


def _run_folder(svc: Services, row: Estimate, progress: Progress) -> dict[str, Any]:
    answer = folder_dryrun.estimate(svc, row.request["spec"], owner_id=row.owner_id, groups=row.request.get("groups") or (), progress=progress)
    return api_json(answer)  # type: ignore[no-any-return]  # the shape the synchronous dry run answered
