"""The webhook use cases on the in-memory unit of work (no server): dispatch turns a folder job's end into one delivery
(once, however often the event arrives), a test delivery is recorded and started, and one attempt signs, posts and
records what happened; an inward address is refused for good, an unresolvable name retried, an ended delivery not sent."""

from __future__ import annotations

import hashlib
import hmac
import socket
import uuid
from typing import Any

import pytest
from usecase_fakes import FakeWorkflows

from batchlane.domain.errors import InputError
from batchlane.pdf.split import plan_chunks
from batchlane.webhooks import deliver as deliver_module
from batchlane.webhooks.deliver import Answer, DeliveryFailed, deliver, give_up
from batchlane.webhooks.dispatch import TEST_EVENT, dispatch, send_test
from batchlane.webhooks.signing import signature
from fakes import FakeUnitOfWork

OWNER = "alice"
PUBLIC = "93.184.215.14"


class Posts:
    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.sent: list[tuple[str, bytes, dict[str, str], str]] = []

    def __call__(self, url: str, body: bytes, headers: dict[str, str], timeout_s: float, address: str) -> Answer:
        self.sent.append((url, body, headers, address))
        return self.answers.pop(0)


@pytest.fixture
def public_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one part faked: there is no DNS offline; every name answers a public address."""
    monkeypatch.setattr(socket, "getaddrinfo", lambda host, port, *a, **k: [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (PUBLIC, port))])


def _folder_job(uow: FakeUnitOfWork, notifications: dict[str, Any] | None) -> str:
    job_id = "fj-" + uuid.uuid4().hex[:24]
    spec = {"notifications": notifications} if notifications else {}
    uow.folder_jobs.add(job_id=job_id, owner_id=OWNER, name=None, spec=spec, source=("in", "a/"), target=("out", "b/"))
    return job_id


def _event(job_id: str, status: str, event_id: str = "ev-1") -> dict[str, Any]:
    return {"id": event_id, "detail": {"scope": "folder_job", "jobId": job_id, "status": status, "changedAt": "2026-01-05T12:00:00+00:00"}}


def _add(uow: FakeUnitOfWork, url: str) -> str:
    delivery_id = str(uuid.uuid4())
    uow.deliveries.add(delivery_id=delivery_id, owner_id=OWNER, job_id=None, event=TEST_EVENT, url=url, headers={"X-Team": "legal"}, payload={"x": 1})
    return delivery_id


def test_a_folder_jobs_end_is_one_delivery_to_its_callback_however_often_the_event_arrives() -> None:
    uow, workflows = FakeUnitOfWork(), FakeWorkflows()
    job_id = _folder_job(uow, {"callback_url": "https://hooks.example.com/in", "callback_headers": {"X-Team": "legal"}})
    assert dispatch(uow, workflows, _event(job_id, "processing")) == []  # not an end: no webhook event
    first = dispatch(uow, workflows, _event(job_id, "completed"))
    again = dispatch(uow, workflows, _event(job_id, "completed"))  # EventBridge delivers at least once
    assert len(first) == 1 and again == first
    (delivery,) = uow.deliveries.for_owner(OWNER, job_id=job_id)
    assert (delivery.event, delivery.url, delivery.headers, delivery.folder_job_id, delivery.job_id) == (
        "job.completed", "https://hooks.example.com/in", {"X-Team": "legal"}, job_id, None,
    )  # fmt: skip
    assert delivery.payload["deliveryId"] == delivery.id and delivery.payload["event"] == "job.completed"


def _conversion_job(uow: FakeUnitOfWork, options: dict[str, Any]) -> str:
    file_row = uow.jobs.insert_file(owner_id=OWNER, name="a.pdf", s3_key=f"uploads/{OWNER}/a.pdf", size_bytes=10)
    job = uow.jobs.insert_job(
        file_id=str(file_row.id), owner_id=OWNER, status="processing", options=options, model_id="m", total_pages=3, pages_per_chunk=3, chunks=plan_chunks(3, 3)
    )
    return str(job.id)


def test_a_conversion_jobs_end_is_a_delivery_per_subscribed_event_to_its_callback() -> None:
    # Given a single-file job subscribed to file.error only (not to job.completed, the first name its failure means)
    uow, workflows = FakeUnitOfWork(), FakeWorkflows()
    job_id = _conversion_job(uow, {"callbackUrl": "https://hooks.example.com/in?t=1", "callbackEvents": ["file.error"], "callbackHeaders": {"X-A": "1"}})
    detail = {"scope": "job", "jobId": job_id, "status": "failed", "changedAt": "2026-01-05T12:00:00+00:00"}
    # When its failure is published
    started = dispatch(uow, workflows, {"id": "ev-9", "detail": detail})
    # Then one delivery, of the event it subscribed to, attributed to the conversion job, and its execution started
    (delivery,) = uow.deliveries.for_owner(OWNER, job_id=job_id)
    assert started == [delivery.id] and workflows.started == [("delivery", delivery.id)]
    assert (delivery.event, delivery.job_id, delivery.folder_job_id, delivery.url, delivery.headers) == (
        "file.error", job_id, None, "https://hooks.example.com/in?t=1", {"X-A": "1"},
    )  # fmt: skip
    assert delivery.id == str(uuid.uuid5(uuid.UUID("5b0e6a51-61c2-4d1c-9a8e-2f1f3c7d9b10"), "ev-9:file.error"))  # the event's id: a repeat is the same delivery
    # A job without a callback, or no job: nothing
    quiet = _conversion_job(uow, {})
    assert dispatch(uow, workflows, {"id": "ev-10", "detail": {**detail, "jobId": quiet}}) == []
    assert dispatch(uow, workflows, {"id": "ev-11", "detail": {**detail, "jobId": str(uuid.uuid4())}}) == []


def test_an_event_without_an_id_still_gets_a_delivery_of_its_own() -> None:
    uow, workflows = FakeUnitOfWork(), FakeWorkflows()
    job_id = _conversion_job(uow, {"callbackUrl": "https://hooks.example.com/in"})
    detail = {"scope": "job", "jobId": job_id, "status": "completed"}
    first, second = dispatch(uow, workflows, {"detail": detail}), dispatch(uow, workflows, {"detail": detail})
    assert len(first) == len(second) == 1 and first != second


def test_a_folder_job_without_notifications_or_unknown_gets_no_delivery() -> None:
    uow, workflows = FakeUnitOfWork(), FakeWorkflows()
    quiet = _folder_job(uow, None)
    assert dispatch(uow, workflows, _event(quiet, "completed")) == []
    assert dispatch(uow, workflows, _event("fj-" + "0" * 24, "completed")) == []
    assert uow.deliveries.for_owner(OWNER, job_id=None) == []


def test_a_test_delivery_is_recorded_pending_and_its_private_address_refused(public_dns: None) -> None:
    uow, workflows = FakeUnitOfWork(), FakeWorkflows()
    sent = send_test(uow, workflows, OWNER, url="https://hooks.example.com/t", headers={"X-Team": "legal"}, allow_private=False)
    assert (sent["event"], sent["status"], sent["attempts"], sent["jobId"]) == (TEST_EVENT, "pending", 0, None)
    assert "headers" not in sent and uow.deliveries.get(sent["deliveryId"]).headers == {"X-Team": "legal"}
    with pytest.raises(InputError):
        send_test(uow, workflows, OWNER, url="https://127.0.0.1/t", allow_private=False)
    assert len(uow.deliveries.for_owner(OWNER, job_id=None)) == 1


def test_an_attempt_is_signed_posted_to_the_checked_address_and_recorded(public_dns: None) -> None:
    uow = FakeUnitOfWork()
    delivery_id = _add(uow, "https://hooks.example.com/in")
    posts = Posts(Answer(500, "HTTP 500"), Answer(204))
    with pytest.raises(DeliveryFailed, match="attempt 1"):
        deliver(uow.deliveries, delivery_id, signing_keys=lambda owner: ["k1"], post=posts, allow_private=False, timeout_s=1, clock=lambda: 1_700_000_000)
    assert (uow.deliveries.get(delivery_id).status, uow.deliveries.get(delivery_id).response_code) == ("retrying", 500)
    done = deliver(uow.deliveries, delivery_id, signing_keys=lambda owner: ["k1"], post=posts, allow_private=False, timeout_s=1, clock=lambda: 1_700_000_000)
    assert done == {"deliveryId": delivery_id, "status": "delivered", "attempts": 2, "responseCode": 204}
    url, body, headers, address = posts.sent[-1]
    assert (address, headers["X-Team"], headers["Batchlane-Delivery"], headers["Batchlane-Event"]) == (PUBLIC, "legal", delivery_id, TEST_EVENT)
    assert headers["Batchlane-Signature"] == f"t=1700000000,v2={signature('k1', 1_700_000_000, url, body)}"
    assert body == b'{"x":1}'  # the payload as recorded, compact and key-sorted (what was signed)
    # delivered: a retried task does not send it again
    assert deliver(uow.deliveries, delivery_id, signing_keys=lambda owner: ["k1"], post=posts, allow_private=False, timeout_s=1)["status"] == "delivered"
    assert len(posts.sent) == 2


def _receiver_verifies(secret: str, url: str, body: bytes, header: str) -> bool:
    """The README's receiver check (section "Webhooks"): HMAC over ``<t>.<url>.<body>`` with the URL as subscribed."""
    fields = [part.split("=", 1) for part in header.split(",")]
    timestamp = next(value for key, value in fields if key == "t")
    expected = hmac.new(secret.encode(), f"{timestamp}.{url}.".encode() + body, hashlib.sha256).hexdigest()
    return any(hmac.compare_digest(expected, value) for key, value in fields if key == "v2")


@pytest.mark.parametrize(
    "url",
    ["https://hooks.example.com/in?token=abc123", "https://hooks.example.com/in?team=legal&token=a%2Fb", "https://hooks.example.com:8443/in/?x=1&x=2"],
)
def test_a_receiver_url_with_a_query_is_posted_and_signed_whole(public_dns: None, url: str) -> None:
    # Given a folder job whose callback URL carries a query (a receiver's routing token)
    uow, workflows = FakeUnitOfWork(), FakeWorkflows()
    job_id = _folder_job(uow, {"callback_url": url})
    dispatch(uow, workflows, _event(job_id, "completed"))
    (delivery,) = uow.deliveries.for_owner(OWNER, job_id=job_id)
    assert delivery.url == url
    # When it is delivered
    posts = Posts(Answer(200))
    deliver(uow.deliveries, delivery.id, signing_keys=lambda owner: ["k1", "k0"], post=posts, allow_private=False, timeout_s=1, clock=lambda: 1_700_000_000)
    # Then it goes to the URL as subscribed, query and all, and the receiver's check over that URL passes
    ((posted_url, body, headers, _address),) = posts.sent
    assert posted_url == url
    assert _receiver_verifies("k1", url, body, headers["Batchlane-Signature"])
    assert _receiver_verifies("k0", url, body, headers["Batchlane-Signature"])
    # (signed without its query, a delivery to one token could be replayed to another: the query is part of what is signed)
    assert not _receiver_verifies("k1", url.split("?", 1)[0], body, headers["Batchlane-Signature"])


def test_an_inward_address_is_refused_for_good_and_an_unresolvable_name_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    uow, posts = FakeUnitOfWork(), Posts()
    refused, unresolved = _add(uow, "https://localhost/hook"), _add(uow, "https://no-such-host.invalid/hook")

    def no_such_name(host: str, port: int, *args: Any, **kwargs: Any) -> Any:
        if host == "localhost":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_such_name)
    assert deliver(uow.deliveries, refused, signing_keys=lambda owner: ["k"], post=posts, allow_private=False, timeout_s=1)["status"] == "failed"
    with pytest.raises(DeliveryFailed, match="does not resolve"):
        deliver(uow.deliveries, unresolved, signing_keys=lambda owner: ["k"], post=posts, allow_private=False, timeout_s=1)
    assert (uow.deliveries.get(refused).status, uow.deliveries.get(unresolved).status) == ("failed", "retrying")
    assert posts.sent == []


def test_giving_up_ends_an_open_delivery_and_leaves_a_delivered_one() -> None:
    uow = FakeUnitOfWork()
    open_one, delivered = _add(uow, "https://h.example.com/a"), _add(uow, "https://h.example.com/b")
    uow.deliveries.record_attempt(delivered, delivered=True, response_code=200, latency_ms=1, error=None)
    assert give_up(uow.deliveries, open_one, {"Error": "DeliveryFailed"}) == {"deliveryId": open_one, "status": "failed"}
    assert uow.deliveries.get(open_one).last_error == "DeliveryFailed"
    assert give_up(uow.deliveries, delivered, None) == {"deliveryId": delivered, "status": "delivered"}
    assert give_up(uow.deliveries, str(uuid.uuid4()), None)["status"] == "missing"
    assert deliver_module.USER_AGENT  # the module under test is the runtime's, not a copy


def test_a_test_delivery_carries_a_test_body_to_the_url_given(public_dns: None) -> None:
    uow, workflows = FakeUnitOfWork(), FakeWorkflows()
    sent = send_test(uow, workflows, OWNER, url="https://hooks.example.com/t?k=1", headers=None, allow_private=False)
    row = uow.deliveries.get(sent["deliveryId"])
    assert (row.url, row.headers, row.event, sent["url"]) == ("https://hooks.example.com/t?k=1", {}, TEST_EVENT, "https://hooks.example.com/t?k=1")
    assert row.payload.pop("timestamp")
    assert row.payload == {
        "deliveryId": row.id,
        "event": TEST_EVENT,
        "scope": "test",
        "jobId": None,
        "status": None,
        "message": "A test delivery from batchlane.",
    }
    assert workflows.started == [("delivery", row.id)]
