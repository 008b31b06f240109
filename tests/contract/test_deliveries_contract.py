"""DeliveryRepository's contract, on the fake and on PostgreSQL: ids are idempotent, every status move is one of the
table's DELIVERY moves (an ended delivery never moves again), and an owner sees only their own deliveries."""

from __future__ import annotations

import uuid
from typing import Any


def _add(uow: Any, owner: str, *, job_id: str | None = None, folder_job_id: str | None = None, event: str = "webhook.test") -> str:
    delivery_id = str(uuid.uuid4())
    assert uow.deliveries.add(
        delivery_id=delivery_id, owner_id=owner, job_id=job_id, folder_job_id=folder_job_id, event=event,
        url="https://hooks.example.com/in", headers={"X-Team": "legal"}, payload={"event": event, "n": 1},
    )  # fmt: skip
    return delivery_id


def test_a_delivery_is_added_once_and_read_back_as_it_was_given(uow: Any) -> None:
    owner = f"u-{uuid.uuid4().hex[:8]}"
    delivery_id = _add(uow, owner)
    again = uow.deliveries.add(
        delivery_id=delivery_id, owner_id=owner, job_id=None, event="webhook.test", url="https://other.example.com/", headers={}, payload={}
    )
    row = uow.deliveries.get(delivery_id)
    assert again is False
    assert (row.id, row.owner_id, row.status, row.attempts, row.url) == (delivery_id, owner, "pending", 0, "https://hooks.example.com/in")
    assert (row.headers, row.payload, row.job_id, row.folder_job_id, row.delivered_at) == (
        {"X-Team": "legal"},
        {"event": "webhook.test", "n": 1},
        None,
        None,
        None,
    )
    assert uow.deliveries.get(str(uuid.uuid4())) is None


def test_failed_attempts_retry_and_a_2xx_delivers_once(uow: Any) -> None:
    delivery_id = _add(uow, f"u-{uuid.uuid4().hex[:8]}")
    first = uow.deliveries.record_attempt(delivery_id, delivered=False, response_code=500, latency_ms=12, error="HTTP 500" * 100)
    assert (first.status, first.attempts, first.response_code, first.latency_ms, len(first.last_error)) == ("retrying", 1, 500, 12, 500)
    done = uow.deliveries.record_attempt(delivery_id, delivered=True, response_code=204, latency_ms=3, error=None)
    assert (done.status, done.attempts, done.response_code, done.last_error) == ("delivered", 2, 204, None)
    assert done.delivered_at is not None and done.last_attempt_at is not None
    # delivered is final: a late attempt or give-up changes nothing
    assert uow.deliveries.record_attempt(delivery_id, delivered=False, response_code=500, latency_ms=1, error="late") is None
    assert uow.deliveries.give_up(delivery_id, "ladder spent") is None
    assert uow.deliveries.get(delivery_id).status == "delivered"


def test_giving_up_keeps_the_first_error_and_ends_the_delivery(uow: Any) -> None:
    delivery_id = _add(uow, f"u-{uuid.uuid4().hex[:8]}")
    uow.deliveries.record_attempt(delivery_id, delivered=False, response_code=None, latency_ms=0, error="DNS: no such host")
    failed = uow.deliveries.give_up(delivery_id, "States.Timeout")
    assert (failed.status, failed.last_error, failed.attempts) == ("failed", "DNS: no such host", 1)
    assert uow.deliveries.record_attempt(delivery_id, delivered=True, response_code=200, latency_ms=1, error=None) is None
    untried = _add(uow, f"u-{uuid.uuid4().hex[:8]}")
    assert uow.deliveries.give_up(untried, "gave up").last_error == "gave up"


def test_an_owner_lists_only_their_deliveries_newest_first_and_by_job(uow: Any) -> None:
    owner, other = f"u-{uuid.uuid4().hex[:8]}", f"u-{uuid.uuid4().hex[:8]}"
    folder_id = "fj-" + uuid.uuid4().hex[:24]
    with uow:
        uow.folder_jobs.add(job_id=folder_id, owner_id=owner, name=None, spec={}, source=("in", "a/"), target=("out", "b/"))
    mine = {_add(uow, owner), _add(uow, owner, folder_job_id=folder_id, event="job.completed")}
    _add(uow, other)
    listed = uow.deliveries.for_owner(owner, job_id=None)
    assert {d.id for d in listed} == mine
    assert [d.created_at for d in listed] == sorted((d.created_at for d in listed), reverse=True)
    (folder_delivery,) = uow.deliveries.for_owner(owner, job_id=folder_id)
    assert (folder_delivery.event, folder_delivery.folder_job_id) == ("job.completed", folder_id)
    assert uow.deliveries.for_owner(other, job_id=folder_id) == []
    assert len(uow.deliveries.for_owner(owner, job_id=None, limit=1)) == 1


def test_a_raising_block_adds_no_delivery(uow: Any) -> None:
    delivery_id = str(uuid.uuid4())
    try:
        with uow:
            uow.deliveries.add(delivery_id=delivery_id, owner_id="u-x", job_id=None, event="webhook.test", url="https://h.example.com/", headers={}, payload={})
            raise RuntimeError("the use case failed after the insert")
    except RuntimeError:
        pass
    assert uow.deliveries.get(delivery_id) is None
