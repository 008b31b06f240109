"""The API's webhook use cases: the caller's own signing secret (created at their first config read, rotated on
request, shown in those two answers only: webhooks/owner_secrets.py), test deliveries, and the caller's deliveries.
Rotating one owner's secret touches no other's, so every user may rotate their own."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from batchlane.api import usecases
from batchlane.domain.caps import check_cap
from batchlane.folders import usecases as folder_usecases
from batchlane.observability import logger
from batchlane.ports import Services
from batchlane.webhooks import owner_secrets
from batchlane.webhooks.dispatch import TEST_EVENT, delivery_view, send_test


def _grace(svc: Services) -> timedelta:
    return timedelta(hours=svc.settings.batchlane_webhook_grace_hours)


def webhook_config(svc: Services, caller: str) -> dict[str, Any]:
    return owner_secrets.config(svc.uow(), svc.secret_cipher(), caller, grace=_grace(svc), migration_days=svc.settings.batchlane_webhook_migration_days)


def rotate_secret(svc: Services, caller: str) -> dict[str, Any]:
    rotated = owner_secrets.rotate(svc.uow(), svc.secret_cipher(), caller, grace=_grace(svc), migration_days=svc.settings.batchlane_webhook_migration_days)
    logger.info("webhook secret rotated", caller=caller, version=rotated["version"])
    return rotated


def send_test_delivery(svc: Services, caller: str, *, url: str, headers: dict[str, str] | None) -> dict[str, Any]:
    """A test delivery, at most BATCHLANE_MAX_TEST_DELIVERIES_PER_HOUR an hour a user (each may retry for 24 h)."""
    check_cap(
        what="test deliveries in the last hour",
        count=svc.uow().caps.recent_test_deliveries(caller, event=TEST_EVENT, hours=1),
        limit=svc.settings.batchlane_max_test_deliveries_per_hour,
        setting="BATCHLANE_MAX_TEST_DELIVERIES_PER_HOUR",
        error_id="TEST_DELIVERIES_LIMIT",
        wait="Wait a while",
    )
    return send_test(svc.uow(), svc.workflows, caller, url=url, headers=headers, allow_private=svc.settings.batchlane_webhook_allow_private)


def list_deliveries(svc: Services, caller: str, *, job_id: str | None, limit: int) -> dict[str, Any]:
    if job_id is not None and job_id.startswith("fj-"):
        folder_usecases.owned(svc, caller, job_id)  # 404 unless the caller owns the folder job
    elif job_id is not None:
        job_id = usecases.job_conversion(svc, caller, job_id)["jobId"]  # 404 JOB_NOT_FOUND unless the caller owns it
    return {"deliveries": [delivery_view(d) for d in svc.uow().deliveries.for_owner(caller, job_id=job_id, limit=limit)]}
