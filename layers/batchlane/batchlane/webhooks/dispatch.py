"""From a published job state change to the job's webhook deliveries (one row + one execution each).

Runs in ``webhook_dispatch`` (the EventBridge target). The delivery id is derived from the
event's id and the webhook event name, so EventBridge delivering the same event twice
creates one delivery, while a later state change of the same job is a new one.
"""

from __future__ import annotations

import uuid
from typing import Any

from batchlane.db import deliveries
from batchlane.db import folder_jobs as folder_repo
from batchlane.db import jobs as job_repo
from batchlane.observability import logger
from batchlane.runtime import Services
from batchlane.webhooks import subscription
from batchlane.webhooks.events import webhook_body, webhook_events
from batchlane.webhooks.subscription import NotificationsSpec

_NAMESPACE = uuid.UUID("5b0e6a51-61c2-4d1c-9a8e-2f1f3c7d9b10")
TEST_EVENT = "webhook.test"


def dispatch(svc: Services, event: dict[str, Any]) -> list[str]:
    """The deliveries of one state change: a conversion job's (uuid) or a folder job's (``fj-`` id)."""
    detail = event.get("detail") or {}
    job_id = str(detail["jobId"])
    if job_id.startswith("fj-"):
        folder = folder_repo.get_job(svc.db, job_id)
        notes = (folder["spec"] or {}).get("notifications") if folder else None
        callback = subscription.from_options(NotificationsSpec.model_validate(notes).as_options()) if notes else None
        job = {"id": job_id, "owner_id": folder["owner_id"]} if folder else None
    else:
        row = job_repo.get_job(svc.db, job_id)
        callback = subscription.from_options(row.options) if row else None
        job = {"id": row.id, "owner_id": row.owner_id} if row else None
    if job is None or callback is None:
        return []
    source_id = str(event.get("id") or uuid.uuid4())
    started = []
    for name in webhook_events(detail):
        if name not in callback.events:
            continue
        delivery_id = str(uuid.uuid5(_NAMESPACE, f"{source_id}:{name}"))
        deliveries.insert(
            svc.db,
            delivery_id=delivery_id,
            owner_id=job["owner_id"],
            job_id=None if job_id.startswith("fj-") else job_id,
            folder_job_id=job_id if job_id.startswith("fj-") else None,
            event=name,
            url=callback.url,
            headers=callback.headers,
            payload=webhook_body(delivery_id, name, detail),
        )
        svc.workflows.start_webhook_delivery(delivery_id)  # idempotent by name
        started.append(delivery_id)
    logger.info("webhooks dispatched", job_id=job_id, status=detail.get("status"), deliveries=len(started))
    return started


def send_test(svc: Services, owner_id: str, *, url: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """A signed ``webhook.test`` delivery to ``url`` (validated like a job's callbackUrl)."""
    url = subscription.check_url(url, allow_private=svc.settings.batchlane_webhook_allow_private)
    clean = subscription.check_headers(headers)
    delivery_id = str(uuid.uuid4())
    body = webhook_body(delivery_id, TEST_EVENT, {"scope": "test", "jobId": None, "status": None, "message": "A test delivery from batchlane."})
    deliveries.insert(svc.db, delivery_id=delivery_id, owner_id=owner_id, job_id=None, event=TEST_EVENT, url=url, headers=clean, payload=body)
    svc.workflows.start_webhook_delivery(delivery_id)
    row = deliveries.get(svc.db, delivery_id)
    assert row is not None
    return deliveries.view(row)
