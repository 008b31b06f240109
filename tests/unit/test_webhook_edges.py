"""webhooks/: the POST itself (pinned address, no redirect), the subscription's checks, and a delivery as the API shows it.

The POST goes to a receiver on loopback (tests/webhook_receiver.py: an HTTP server in this process, no stack).
"""

from __future__ import annotations

import socket
from datetime import UTC, datetime

import pytest

from batchlane.domain.errors import InputError
from batchlane.rows import Delivery
from batchlane.webhooks import subscription
from batchlane.webhooks.deliver import USER_AGENT, Answer, http_post
from batchlane.webhooks.dispatch import delivery_view
from tests.webhook_receiver import Receiver


@pytest.fixture
def receiver():  # type: ignore[no-untyped-def]
    made: list[Receiver] = []

    def make(answers: list[int] | None = None) -> Receiver:
        made.append(Receiver(answers))
        return made[-1]

    yield make
    for r in made:
        r.stop()


def _port(url: str) -> int:
    return int(url.split(":")[2].split("/")[0])


def test_the_post_goes_to_the_pinned_address_whatever_the_urls_host_resolves_to(receiver) -> None:  # type: ignore[no-untyped-def]
    # The URL names a host that resolves nowhere; the address the SSRF check pinned is the receiver's
    r = receiver()
    url = f"http://receiver.invalid:{_port(r.url)}/hooks/batchlane?token=a1"
    answer = http_post(url, b'{"x":1}', {"Content-Type": "application/json", "User-Agent": USER_AGENT, "X-Team": "legal"}, 5.0, "127.0.0.1")
    assert answer == Answer(200)
    [got] = r.received
    assert got.body == b'{"x":1}' and got.headers["X-Team"] == "legal" and got.headers["Host"] == f"receiver.invalid:{_port(r.url)}"


@pytest.mark.parametrize(
    ("code", "answer"), [(204, Answer(204)), (500, Answer(500, "HTTP 500")), (302, Answer(302, "HTTP 302")), (404, Answer(404, "HTTP 404"))]
)
def test_a_receivers_status_is_the_answer_and_a_redirect_is_never_followed(receiver, code: int, answer: Answer) -> None:  # type: ignore[no-untyped-def]
    r = receiver([code])
    assert http_post(r.url, b"{}", {"Content-Type": "application/json"}, 5.0, "127.0.0.1") == answer
    assert len(r.received) == 1  # a 3xx is a failure, not a second request elsewhere


def test_no_receiver_listening_is_an_answer_without_a_status() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    answer = http_post(f"http://hooks.example.com:{port}/in", b"{}", {}, 5.0, "127.0.0.1")
    assert answer.status is None and answer.error is not None and answer.error.startswith("URLError: ")
    assert "refused" in answer.error.lower()


def test_an_https_receiver_that_does_not_speak_tls_fails_without_a_status(receiver) -> None:  # type: ignore[no-untyped-def]
    r = receiver()
    answer = http_post(f"https://receiver.invalid:{_port(r.url)}/in", b"{}", {}, 5.0, "127.0.0.1")
    assert answer.status is None and answer.error and r.received == []  # TLS was asked of the pinned address, not plain HTTP


@pytest.mark.parametrize(
    "headers",
    [
        {"Bad Name": "x"}, {"": "x"}, {"x" * 65: "v"}, {"Host": "evil"}, {"content-type": "text/plain"}, {"Batchlane-Signature": "x"},
        {"batchlane-anything": "x"}, {"X-A": "line\r\nInjected: 1"}, {"X-A": "nul\0"}, {"X-A": "v" * 1025}, {"X-A": 5},
        {f"X-{n}": "v" for n in range(11)}, ["X-A"],
    ],
)  # fmt: skip
def test_callback_headers_refused(headers: object) -> None:
    with pytest.raises(InputError) as refused:
        subscription.check_headers(headers)
    assert refused.value.error_id == "CALLBACK_INVALID"


def test_callback_headers_accepted_up_to_the_limits() -> None:
    many = {f"X-{n}": "v" * 1024 for n in range(10)}
    assert subscription.check_headers(many) == many
    assert subscription.check_headers({"x" * 64: "", "X-Api-Key!#$%&'*+.^_`|~": "k"}) == {"x" * 64: "", "X-Api-Key!#$%&'*+.^_`|~": "k"}
    assert subscription.check_headers(None) == {}
    assert subscription.check_headers({"Authorization": "Bearer XYZ-token\t2"}) == {"Authorization": "Bearer XYZ-token\t2"}  # any letter, a tab


def test_callback_header_refusals_say_which_header_and_why() -> None:
    for headers, words in (
        ({"Host": "x"}, "Host is set by batchlane"),
        ({"Bad Name": "x"}, "'Bad Name' is not a valid header name"),
        ({"X-A": "a\nb"}, "the value of X-A must be one line of at most 1,024 characters"),
        ({f"X-{n}": "v" for n in range(11)}, "at most 10 headers"),
    ):
        with pytest.raises(InputError, match=words):
            subscription.check_headers(headers)


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        (None, subscription.DEFAULT_EVENTS),
        ("file.error, job.completed", ("file.error", "job.completed")),
        (" job.waiting_batch ,", ("job.waiting_batch",)),
        (["file.completed", "file.completed", "job.completed"], ("file.completed", "job.completed")),
        (("file.error",), ("file.error",)),
    ],
)
def test_callback_events_are_normalised(events: object, expected: tuple[str, ...]) -> None:
    assert subscription.check_events(events) == expected


@pytest.mark.parametrize(
    ("events", "words"),
    [([], "non-empty list"), ("", "non-empty list"), (5, "non-empty list"), (["job.done", "x"], "unknown event(s) job.done, x; known: job.completed")],
)
def test_callback_events_refused(events: object, words: str) -> None:
    with pytest.raises(InputError) as refused:
        subscription.check_events(events)
    assert words in str(refused.value) and refused.value.error_id == "CALLBACK_INVALID"


def test_a_jobs_subscription_is_read_back_from_its_options() -> None:
    assert subscription.from_options(None) is None and subscription.from_options({"callbackUrl": ""}) is None
    assert subscription.from_options({"callbackUrl": "https://h.example.com/x"}) == subscription.Callback("https://h.example.com/x", subscription.DEFAULT_EVENTS, {})
    full = {"callbackUrl": "https://h.example.com/x", "callbackEvents": ["file.error"], "callbackHeaders": {"X-A": "1"}}
    assert subscription.from_options(full) == subscription.Callback("https://h.example.com/x", ("file.error",), {"X-A": "1"})


def test_a_folder_jobs_notifications_read_as_the_single_file_options() -> None:
    spec = subscription.NotificationsSpec.model_validate({"callbackUrl": "https://h.example.com/x", "callbackHeaders": {"X-A": "1"}})
    assert spec.as_options() == {"callbackUrl": "https://h.example.com/x", "callbackEvents": ["job.completed"], "callbackHeaders": {"X-A": "1"}}
    by_name = subscription.NotificationsSpec.model_validate({"callback_url": "https://h.example.com/y", "callback_events": ["file.error"]})
    assert by_name.as_options()["callbackEvents"] == ["file.error"] and by_name.as_options()["callbackUrl"] == "https://h.example.com/y"


def _delivery(**fields: object) -> Delivery:
    base: dict[str, object] = {
        "id": "d-1", "owner_id": "alice", "job_id": None, "folder_job_id": None, "event": "job.completed", "url": "https://h.example.com/x",
        "headers": {"X-Secret": "s"}, "payload": {"secret": 1}, "status": "pending", "attempts": 0, "response_code": None, "latency_ms": None,
        "last_error": None, "created_at": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), "last_attempt_at": None, "delivered_at": None,
    }  # fmt: skip
    return Delivery(**{**base, **fields})  # type: ignore[arg-type]


def test_a_delivery_through_the_api_shows_its_progress_never_its_headers_or_body() -> None:
    at = datetime(2026, 1, 2, 3, 5, 0, tzinfo=UTC)
    view = delivery_view(
        _delivery(job_id="j-1", status="delivered", attempts=2, response_code=204, latency_ms=35, last_error="HTTP 500", last_attempt_at=at, delivered_at=at)
    )
    assert view == {
        "deliveryId": "d-1", "jobId": "j-1", "event": "job.completed", "url": "https://h.example.com/x", "status": "delivered", "attempts": 2,
        "responseCode": 204, "latencyMs": 35, "lastError": "HTTP 500", "createdAt": "2026-01-02T03:04:05+00:00",
        "lastAttemptAt": "2026-01-02T03:05:00+00:00", "deliveredAt": "2026-01-02T03:05:00+00:00",
    }  # fmt: skip
    fresh = delivery_view(_delivery(folder_job_id="fj-9"))
    assert (fresh["jobId"], fresh["lastAttemptAt"], fresh["deliveredAt"]) == ("fj-9", None, None)


_URL_RULES = (
    ("callbackUrl must be a URL of at most 2,048 characters.", ["https://h.example.com/" + "a" * 2027, 5]),
    ("callbackUrl must be an https:// URL.", ["ftp://h.example.com/x", "https:///nohost", "h.example.com/x"]),
    (
        "callbackUrl must not carry credentials; send them in callbackHeaders.",
        ["https://user@h.example.com/x", "https://:pw@h.example.com/x", "https://u:p@h.example.com/x"],
    ),
    ("callbackUrl must not have a #fragment.", ["https://h.example.com/x#top"]),
    ("callbackUrl must use https (plain http is allowed only where the deployment allows private receivers).", ["http://h.example.com/x"]),
    (
        "callbackUrl points to a private, loopback or link-local address, which this deployment does not allow.",
        [
            "https://127.0.0.1/x",
            "https://10.1.2.3/x",
            "https://localhost/x",
            "https://a.localhost/x",
            "https://db.internal/x",
            "https://printer.local/x",
            "https://[::1]/x",
        ],
    ),
)


@pytest.mark.parametrize(("message", "url"), [(message, url) for message, urls in _URL_RULES for url in urls])
def test_a_callback_url_refused_says_why_in_the_users_words(message: str, url: object) -> None:
    with pytest.raises(InputError) as refused:
        subscription.check_url(url, allow_private=False)  # type: ignore[arg-type]
    assert str(refused.value) == message and refused.value.error_id == "CALLBACK_INVALID"


def test_a_callback_url_of_2048_characters_and_private_ones_where_allowed_are_accepted() -> None:
    longest = "https://h.example.com/" + "a" * 2026
    assert len(longest) == 2048 and subscription.check_url(longest, allow_private=False) == longest
    for url in ("http://127.0.0.1:9/x", "https://db.internal/x", "http://printer.local/x?x=1"):
        assert subscription.check_url(url, allow_private=True) == url


def test_resolving_asks_for_the_hosts_tcp_addresses_on_its_port(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = []

    def getaddrinfo(host: str, port: int, *args: object, **kwargs: object) -> list[tuple[object, ...]]:
        asked.append((host, port, args, kwargs))
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.215.14", port)), (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.215.15", port))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    assert subscription.resolve("hooks.example.com", 8443, allow_private=False) == "93.184.215.14"
    assert asked == [("hooks.example.com", 8443, (), {"proto": socket.IPPROTO_TCP})]
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: [])
    with pytest.raises(OSError, match=r"hooks\.example\.com has no address"):
        subscription.resolve("hooks.example.com", 443, allow_private=True)


def test_a_change_without_a_scope_is_a_jobs_and_a_body_without_a_time_is_stamped_in_utc() -> None:
    from batchlane.webhooks.events import webhook_body, webhook_events

    assert webhook_events({"status": "waiting_batch"}) == ["job.waiting_batch"]
    assert webhook_events({"status": "completed"}) == ["job.completed", "file.completed"]
    body = webhook_body("d-1", "job.completed", {"status": "completed", "ownerId": "alice"})
    assert body["timestamp"].endswith("+00:00") and "ownerId" not in body and body["status"] == "completed"


def test_signing_with_no_secret_is_refused() -> None:
    from batchlane.webhooks.signing import signature_header

    with pytest.raises(ValueError, match=r"^no signing secret$"):
        signature_header([], 1, "https://h.example.com/x", b"{}")
