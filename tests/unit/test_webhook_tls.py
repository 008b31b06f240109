"""webhooks/deliver.http_post over TLS and with a receiver that never answers: the pinned connections, on loopback.

The receiver (tests/webhook_receiver.py) speaks HTTPS with a certificate signed by a CA made at test time; the
client trusts that CA through ``SSL_CERT_FILE`` (OpenSSL's variable, read by ``ssl.create_default_context``: how a
deployment trusts a private CA), so verification stays on. It listens on 127.0.0.2 and the URL's host resolves
nowhere: only the pinned address reaches it.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from batchlane.webhooks.deliver import USER_AGENT, Answer, http_post
from tests.webhook_receiver import LocalCa, Receiver, make_ca

HOST = "hooks.example.test"  # .test never resolves (RFC 6761)
PINNED = "127.0.0.2"


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> LocalCa:
    return make_ca(tmp_path_factory.mktemp("webhook-ca"))


@pytest.fixture
def trusted(ca: LocalCa, monkeypatch: pytest.MonkeyPatch) -> LocalCa:
    monkeypatch.setenv("SSL_CERT_FILE", str(ca.ca_file))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    return ca


@pytest.fixture
def receiver() -> Iterator[Callable[..., Receiver]]:
    made: list[Receiver] = []

    def make(*args: object, **kwargs: object) -> Receiver:
        made.append(Receiver(*args, bind=PINNED, **kwargs))  # type: ignore[arg-type]
        return made[-1]

    yield make
    for r in made:
        r.stop()


@pytest.mark.parametrize(("code", "answer"), [(200, Answer(200)), (204, Answer(204)), (500, Answer(500, "HTTP 500")), (302, Answer(302, "HTTP 302"))])
def test_an_https_post_goes_to_the_pinned_address_with_sni_and_the_certificate_checked_for_the_urls_host(
    trusted: LocalCa, receiver: Callable[..., Receiver], code: int, answer: Answer
) -> None:
    r = receiver([code], tls=trusted.server_context(HOST))
    url = f"https://{HOST}:{r.port}/hooks/batchlane?token=a1"

    got = http_post(url, b'{"x":1}', {"Content-Type": "application/json", "User-Agent": USER_AGENT, "X-Team": "legal"}, 5.0, PINNED)

    assert got == answer
    [request] = r.received  # a 302 is answered, never followed (its Location points back here: a GET would show)
    assert (request.method, request.path, request.body) == ("POST", "/hooks/batchlane?token=a1", b'{"x":1}')
    assert request.headers["Host"] == f"{HOST}:{r.port}" and request.headers["X-Team"] == "legal"
    assert request.headers["User-Agent"] == USER_AGENT
    assert r.server_names == [HOST]  # SNI: the URL's host, not the pinned address


def test_a_certificate_for_another_name_is_refused_and_nothing_is_posted(trusted: LocalCa, receiver: Callable[..., Receiver]) -> None:
    r = receiver(tls=trusted.server_context("other.example.test"))

    got = http_post(f"https://{HOST}:{r.port}/in", b"{}", {}, 5.0, PINNED)

    assert got.status is None and got.error is not None
    assert got.error.startswith(
        f"URLError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: Hostname mismatch, certificate is not valid for '{HOST}'."
    )
    assert r.received == []


def test_verification_stays_on_when_something_in_the_process_turned_off_pythons_default(
    trusted: LocalCa, receiver: Callable[..., Receiver], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Some libraries switch http.client's default context to an unverified one for the whole process; the sender's own
    # verified context is what it connects with, so a certificate for another name is still refused
    monkeypatch.setattr(ssl, "_create_default_https_context", ssl._create_unverified_context)
    r = receiver(tls=trusted.server_context("other.example.test"))

    got = http_post(f"https://{HOST}:{r.port}/in", b"{}", {}, 5.0, PINNED)

    assert got.status is None and got.error is not None and got.error.startswith("URLError: [SSL: CERTIFICATE_VERIFY_FAILED]")
    assert r.received == []


def test_a_certificate_from_a_ca_the_sender_does_not_trust_is_refused(
    ca: LocalCa, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Callable[..., Receiver]
) -> None:
    other = make_ca(tmp_path, "some other CA")
    monkeypatch.setenv("SSL_CERT_FILE", str(other.ca_file))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    r = receiver(tls=ca.server_context(HOST))

    got = http_post(f"https://{HOST}:{r.port}/in", b"{}", {}, 5.0, PINNED)

    assert got.status is None and got.error is not None
    assert got.error.startswith("URLError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer certificate")
    assert r.received == []


@pytest.mark.parametrize("scheme", ["https", "http"])
def test_a_receiver_that_never_answers_is_given_up_at_the_timeout(trusted: LocalCa, receiver: Callable[..., Receiver], scheme: str) -> None:
    # The receiver reads the POST and says nothing for 5 s: without the timeout the sender would wait for it (then a
    # 200); with it, the answer is a timeout with no status.
    r = receiver(tls=trusted.server_context(HOST) if scheme == "https" else None, silent=5.0)

    got = http_post(f"{scheme}://{HOST}:{r.port}/in", b"{}", {}, 0.5, PINNED)

    assert got == Answer(None, "TimeoutError: The read operation timed out" if scheme == "https" else "TimeoutError: timed out")
    assert len(r.received) == 1  # it was sent


@pytest.mark.parametrize("scheme", ["https", "http"])
def test_a_proxy_named_in_the_environment_is_not_used(
    trusted: LocalCa, receiver: Callable[..., Receiver], monkeypatch: pytest.MonkeyPatch, scheme: str
) -> None:
    # A proxy would take the request past the address the SSRF check pinned (and see its body)
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, "http://proxy.invalid:3128")
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    r = receiver(tls=trusted.server_context(HOST) if scheme == "https" else None)

    got = http_post(f"{scheme}://{HOST}:{r.port}/in?x=1", b"{}", {}, 5.0, PINNED)

    assert got == Answer(200)
    [request] = r.received
    assert (request.method, request.path) == ("POST", "/in?x=1")  # not a proxy's absolute URL, not a CONNECT
