"""From a published job state change to the job's webhook deliveries (one row + one execution each).

Runs in ``webhook_dispatch`` (the EventBridge target). The delivery id is derived from the
event's id and the webhook event name, so EventBridge delivering the same event twice
creates one delivery, while a later state change of the same job is a new one.
"""

from __future__ import annotations

import uuid
from typing import Any

from batchlane.observability import logger
from batchlane.ports import UnitOfWork, Workflows
from batchlane.rows import Delivery
from batchlane.webhooks import subscription
from batchlane.webhooks.events import webhook_body, webhook_events
from batchlane.webhooks.subscription import NotificationsSpec

_NAMESPACE = uuid.UUID("5b0e6a51-61c2-4d1c-9a8e-2f1f3c7d9b10")
TEST_EVENT = "webhook.test"


def dispatch(uow: UnitOfWork, workflows: Workflows, event: dict[str, Any]) -> list[str]:
    """The deliveries of one state change: a conversion job's (uuid) or a folder job's (``fj-`` id)."""
    detail = event.get("detail") or {}
    job_id = str(detail["jobId"])
    found = _folder_subscription(uow, job_id) if job_id.startswith("fj-") else _job_subscription(uow, job_id)
    if found is None:
        return []
    owner_id, callback = found
    source_id = str(event.get("id") or uuid.uuid4())
    started = []
    for name in webhook_events(detail):
        if name not in callback.events:
            continue
        delivery_id = str(uuid.uuid5(_NAMESPACE, f"{source_id}:{name}"))
        uow.deliveries.add(
            delivery_id=delivery_id,
            owner_id=owner_id,
            job_id=None if job_id.startswith("fj-") else job_id,
            folder_job_id=job_id if job_id.startswith("fj-") else None,
            event=name,
            url=callback.url,
            headers=callback.headers,
            payload=webhook_body(delivery_id, name, detail),
        )
        workflows.start_webhook_delivery(delivery_id)  # idempotent by name
        started.append(delivery_id)
    logger.info("webhooks dispatched", job_id=job_id, status=detail.get("status"), deliveries=len(started))
    return started


def _folder_subscription(uow: UnitOfWork, job_id: str) -> tuple[str, subscription.Callback] | None:
    """The folder job's owner and its spec's notifications; None without a job or a callback."""
    folder = uow.folder_jobs.get(job_id)
    notes = folder.spec.get("notifications") if folder else None
    if folder is None or not notes:
        return None
    callback = subscription.from_options(NotificationsSpec.model_validate(notes).as_options())
    return (folder.owner_id, callback) if callback else None


def _job_subscription(uow: UnitOfWork, job_id: str) -> tuple[str, subscription.Callback] | None:
    """The conversion job's owner and its options' callback; None without a job or a callback."""
    row = uow.jobs.get_job(job_id)
    callback = subscription.from_options(row.options) if row else None
    return (row.owner_id, callback) if row and callback else None


def send_test(uow: UnitOfWork, workflows: Workflows, owner_id: str, *, url: str, headers: dict[str, str] | None = None, allow_private: bool) -> dict[str, Any]:
    """A signed ``webhook.test`` delivery to ``url`` (validated like a job's callbackUrl)."""
    url = subscription.check_url(url, allow_private=allow_private)
    clean = subscription.check_headers(headers)
    delivery_id = str(uuid.uuid4())
    body = webhook_body(delivery_id, TEST_EVENT, {"scope": "test", "jobId": None, "status": None, "message": "A test delivery from batchlane."})
    uow.deliveries.add(delivery_id=delivery_id, owner_id=owner_id, job_id=None, event=TEST_EVENT, url=url, headers=clean, payload=body)
    workflows.start_webhook_delivery(delivery_id)
    row = uow.deliveries.get(delivery_id)
    assert row is not None
    return delivery_view(row)


def delivery_view(d: Delivery) -> dict[str, Any]:
    """How a delivery looks through the API (never its headers or body)."""

    def iso(value: Any) -> str | None:
        return value.isoformat() if value is not None else None

    return {
        "deliveryId": d.id,
        "jobId": d.job_id or d.folder_job_id,
        "event": d.event,
        "url": d.url,
        "status": d.status,
        "attempts": d.attempts,
        "responseCode": d.response_code,
        "latencyMs": d.latency_ms,
        "lastError": d.last_error,
        "createdAt": iso(d.created_at),
        "lastAttemptAt": iso(d.last_attempt_at),
        "deliveredAt": iso(d.delivered_at),
    }
