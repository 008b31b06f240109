"""webhooks/deliver.py on the fake deliveries: what one attempt sends, records and answers, each outcome.

DNS is the one part faked (there is none offline): ``subscription.resolve`` records what it was asked.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from batchlane.webhooks import deliver as deliver_module
from batchlane.webhooks import subscription
from batchlane.webhooks.deliver import USER_AGENT, Answer, DeliveryFailed, deliver
from fakes import FakeUnitOfWork

PUBLIC = "93.184.215.14"


class Posts:
    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.sent: list[dict[str, Any]] = []

    def __call__(self, url: str, body: bytes, headers: dict[str, str], timeout_s: float, address: str) -> Answer:
        self.sent.append({"url": url, "body": body, "headers": headers, "timeout_s": timeout_s, "address": address})
        return self.answers.pop(0)


@pytest.fixture
def resolved(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, bool]]:
    asked: list[tuple[str, int, bool]] = []

    def resolve(host: str, port: int, *, allow_private: bool) -> str:
        asked.append((host, port, allow_private))
        return PUBLIC

    monkeypatch.setattr(subscription, "resolve", resolve)
    return asked


def _add(uow: FakeUnitOfWork, url: str, payload: dict[str, Any] | None = None) -> str:
    delivery_id = str(uuid.uuid4())
    uow.deliveries.add(
        delivery_id=delivery_id, owner_id="alice", job_id=None, event="job.completed", url=url, headers={"X-Team": "legal"}, payload=payload or {"x": 1}
    )
    return delivery_id


def _send(uow: FakeUnitOfWork, delivery_id: str, post: Posts, *, allow_private: bool = False, timeout_s: float = 7.5) -> dict[str, Any]:
    return deliver(
        uow.deliveries, delivery_id, signing_keys=lambda owner: ["k"], post=post, allow_private=allow_private, timeout_s=timeout_s, clock=lambda: 1_700_000_000
    )


@pytest.mark.parametrize(
    ("url", "allow_private", "host_port"),
    [
        ("https://hooks.example.com/in", False, ("hooks.example.com", 443)),
        ("https://hooks.example.com:8443/in", False, ("hooks.example.com", 8443)),
        ("http://hooks.example.com/in", True, ("hooks.example.com", 80)),
        ("http://10.0.0.5:9000/in", True, ("10.0.0.5", 9000)),
    ],
)
def test_the_address_is_resolved_for_the_urls_host_and_port_under_the_deployments_rule(
    resolved, url: str, allow_private: bool, host_port: tuple[str, int]
) -> None:  # type: ignore[no-untyped-def]
    uow = FakeUnitOfWork()
    posts = Posts(Answer(200))
    _send(uow, _add(uow, url), posts, allow_private=allow_private)
    assert resolved == [(*host_port, allow_private)]
    assert posts.sent[0]["address"] == PUBLIC


def test_an_attempt_sends_the_payload_compact_and_key_sorted_with_its_own_headers_and_timeout(resolved) -> None:  # type: ignore[no-untyped-def]
    uow = FakeUnitOfWork()
    delivery_id = _add(uow, "https://hooks.example.com/in", {"b": 1, "a": [1, 2]})
    posts = Posts(Answer(299))
    assert _send(uow, delivery_id, posts) == {"deliveryId": delivery_id, "status": "delivered", "attempts": 1, "responseCode": 299}
    [sent] = posts.sent
    assert sent["body"] == b'{"a":[1,2],"b":1}' and sent["timeout_s"] == 7.5
    assert (sent["headers"]["Content-Type"], sent["headers"]["User-Agent"], sent["headers"]["X-Team"]) == ("application/json", USER_AGENT, "legal")
    row = uow.deliveries.get(delivery_id)
    assert (row.status, row.response_code, row.last_error) == ("delivered", 299, None)


@pytest.mark.parametrize(("took_s", "latency_ms"), [(0.25, 250), (2.5, 2500)])
def test_the_latency_recorded_is_the_posts_in_milliseconds(resolved, monkeypatch: pytest.MonkeyPatch, took_s: float, latency_ms: int) -> None:  # type: ignore[no-untyped-def]
    readings = iter([100.0, 100.0 + took_s])
    monkeypatch.setattr(deliver_module.time, "monotonic", lambda: next(readings))
    uow = FakeUnitOfWork()
    delivery_id = _add(uow, "https://hooks.example.com/in")
    _send(uow, delivery_id, Posts(Answer(204)))
    assert uow.deliveries.get(delivery_id).latency_ms == latency_ms


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (Answer(300, None), "attempt 1: HTTP 300"),
        (Answer(199, None), "attempt 1: HTTP 199"),
        (Answer(None, "URLError: refused"), "attempt 1: URLError: refused"),
    ],
)
def test_anything_but_a_2xx_is_a_failed_attempt_recorded_and_raised_for_the_ladder(resolved, answer: Answer, message: str) -> None:  # type: ignore[no-untyped-def]
    uow = FakeUnitOfWork()
    delivery_id = _add(uow, "https://hooks.example.com/in")
    with pytest.raises(DeliveryFailed) as failed:
        _send(uow, delivery_id, Posts(answer))
    assert str(failed.value) == message
    row = uow.deliveries.get(delivery_id)
    assert (row.status, row.attempts, row.response_code, row.last_error) == ("retrying", 1, answer.status, answer.error)


def test_a_refused_address_fails_the_delivery_for_good_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    def inward(host: str, port: int, *, allow_private: bool) -> str:
        raise subscription.CallbackInvalid(f"{host} resolves to a private address (10.0.0.1)")

    monkeypatch.setattr(subscription, "resolve", inward)
    uow = FakeUnitOfWork()
    delivery_id = _add(uow, "https://inward.example.com/in")
    posts = Posts()
    assert _send(uow, delivery_id, posts) == {"deliveryId": delivery_id, "status": "failed", "attempts": 1}
    row = uow.deliveries.get(delivery_id)
    assert (row.status, row.attempts, row.latency_ms, row.response_code) == ("failed", 1, 0, None)
    assert row.last_error == "inward.example.com resolves to a private address (10.0.0.1)" and posts.sent == []


def test_a_name_that_does_not_resolve_is_a_failed_attempt_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    def nowhere(host: str, port: int, *, allow_private: bool) -> str:
        raise OSError("Name or service not known")

    monkeypatch.setattr(subscription, "resolve", nowhere)
    uow = FakeUnitOfWork()
    delivery_id = _add(uow, "https://nowhere.example.com/in")
    with pytest.raises(DeliveryFailed, match=r"nowhere\.example\.com does not resolve: Name or service not known"):
        _send(uow, delivery_id, Posts())
    row = uow.deliveries.get(delivery_id)
    assert (row.status, row.attempts, row.latency_ms, row.last_error) == ("retrying", 1, 0, "DNS: Name or service not known")


def test_a_missing_delivery_is_named_and_a_finished_one_answered_as_it_is(resolved) -> None:  # type: ignore[no-untyped-def]
    uow = FakeUnitOfWork()
    missing = str(uuid.uuid4())
    with pytest.raises(LookupError, match=f"no webhook delivery {missing}"):
        _send(uow, missing, Posts())
    delivery_id = _add(uow, "https://hooks.example.com/in")
    _send(uow, delivery_id, Posts(Answer(200)))
    assert _send(uow, delivery_id, Posts()) == {"deliveryId": delivery_id, "status": "delivered", "attempts": 1}


def test_a_delivery_given_up_without_a_step_functions_error_says_it_gave_up() -> None:
    uow = FakeUnitOfWork()
    delivery_id = str(uuid.uuid4())
    uow.deliveries.add(delivery_id=delivery_id, owner_id="alice", job_id=None, event="job.completed", url="https://h.example.com/", headers={}, payload={})
    assert deliver_module.give_up(uow.deliveries, delivery_id, None) == {"deliveryId": delivery_id, "status": "failed"}
    row = uow.deliveries.get(delivery_id)
    assert row is not None and row.last_error == "gave up"
    other = str(uuid.uuid4())
    uow.deliveries.add(delivery_id=other, owner_id="alice", job_id=None, event="job.completed", url="https://h.example.com/", headers={}, payload={})
    deliver_module.give_up(uow.deliveries, other, {"Error": "States.Timeout", "Cause": "x"})
    assert uow.deliveries.get(other).last_error == "States.Timeout"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ([], "callbackEvents must be a non-empty list of: job.completed, job.waiting_batch, job.paused, file.error, file.completed."),
        (
            ["job.done", "file.completed"],
            "callbackEvents: unknown event(s) job.done; known: job.completed, job.waiting_batch, job.paused, file.error, file.completed.",
        ),
    ],
)
def test_a_refused_event_list_names_every_event_a_receiver_may_ask_for(events: list[str], message: str) -> None:
    with pytest.raises(subscription.CallbackInvalid) as refused:
        subscription.check_events(events)
    assert str(refused.value) == message


def test_a_delivery_with_no_key_to_sign_is_refused_for_good_once_and_says_why(resolved) -> None:  # type: ignore[no-untyped-def]
    uow = FakeUnitOfWork()
    delivery_id = _add(uow, "https://hooks.example.com/in")
    posts = Posts()
    answer = deliver(uow.deliveries, delivery_id, signing_keys=lambda owner: [], post=posts, allow_private=False, timeout_s=1)
    assert answer == {"deliveryId": delivery_id, "status": "failed", "attempts": 1} and posts.sent == []
    row = uow.deliveries.get(delivery_id)
    assert row is not None and (row.status, row.attempts, row.latency_ms, row.response_code) == ("failed", 1, 0, None)
    assert row.last_error == "WEBHOOK_SECRET_MISSING: the owner has no signing secret yet; `batchlane webhooks config` creates it (shown once)."


def test_a_url_the_rules_refuse_is_failed_for_good_with_the_refusal_as_its_error() -> None:
    uow = FakeUnitOfWork()
    delivery_id = _add(uow, "https://127.0.0.1/in")
    answer = _send(uow, delivery_id, Posts())
    row = uow.deliveries.get(delivery_id)
    assert answer == {"deliveryId": delivery_id, "status": "failed", "attempts": 1}
    refusal = "callbackUrl points to a private, loopback or link-local address, which this deployment does not allow."
    assert row is not None and (row.status, row.attempts, row.last_error) == ("failed", 1, refusal)


def test_an_unresolved_name_is_an_attempt_that_failed_and_is_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    def unresolved(host: str, port: int, *, allow_private: bool) -> str:
        raise OSError("Name or service not known")

    monkeypatch.setattr(subscription, "resolve", unresolved)
    uow = FakeUnitOfWork()
    delivery_id = _add(uow, "https://nowhere.example.com/in")
    with pytest.raises(DeliveryFailed):
        _send(uow, delivery_id, Posts())
    row = uow.deliveries.get(delivery_id)
    assert row is not None and (row.status, row.attempts, row.last_error) == ("retrying", 1, "DNS: Name or service not known")


class PostsBeside(Posts):
    """A POST during which something else moves the delivery (the ladder gave up, or another task's attempt landed)."""

    def __init__(self, meanwhile: Any, *answers: Answer) -> None:
        super().__init__(*answers)
        self.meanwhile = meanwhile

    def __call__(self, url: str, body: bytes, headers: dict[str, str], timeout_s: float, address: str) -> Answer:
        self.meanwhile()
        return super().__call__(url, body, headers, timeout_s, address)


def test_an_attempt_that_lands_after_another_reports_the_rows_count(resolved) -> None:  # type: ignore[no-untyped-def]
    uow = FakeUnitOfWork()
    delivery_id = _add(uow, "https://hooks.example.com/in")

    def other_attempt() -> None:
        uow.deliveries.record_attempt(delivery_id, delivered=False, response_code=503, latency_ms=5, error="HTTP 503")

    with pytest.raises(DeliveryFailed) as failed:
        _send(uow, delivery_id, PostsBeside(other_attempt, Answer(500, "HTTP 500")))

    assert str(failed.value) == "attempt 2: HTTP 500"
    row = uow.deliveries.get(delivery_id)
    assert row is not None and (row.attempts, row.response_code, row.last_error) == (2, 500, "HTTP 500")


def test_an_attempt_whose_delivery_was_given_up_meanwhile_counts_itself_on_the_row_it_read(resolved) -> None:  # type: ignore[no-untyped-def]
    # The ladder's give-up ran while the POST was out: the row takes no attempt any more, the answer still counts this one
    uow = FakeUnitOfWork()
    delivery_id = _add(uow, "https://hooks.example.com/in")
    uow.deliveries.record_attempt(delivery_id, delivered=False, response_code=500, latency_ms=5, error="HTTP 500")

    with pytest.raises(DeliveryFailed) as failed:
        _send(uow, delivery_id, PostsBeside(lambda: uow.deliveries.give_up(delivery_id, "States.Timeout"), Answer(502, "HTTP 502")))

    assert str(failed.value) == "attempt 2: HTTP 502"
    row = uow.deliveries.get(delivery_id)
    assert row is not None and (row.status, row.attempts, row.last_error) == ("failed", 1, "HTTP 500")
