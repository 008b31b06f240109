"""Signed webhooks and public events on the offline stack (issues 14 and 40).

A real HTTP receiver on 127.0.0.1 (http.server, in this process) takes the deliveries; the
signature is checked with exactly the snippet README.md documents, with the owner's own secret (each owner has one,
sealed by the offline KMS; the stack runs past the migration, so the deployment's secret signs nothing). The retry ladder is the
state machine's own, shrunk by the offline settings (1 s, 3 retries): no test asserts a time.
Public events are seen on the bus through a rule with an SQS target, as an AWS user would.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from typing import Any

import pytest

from batchlane.aws.clients import client
from batchlane.db import jobs as job_repo
from batchlane.runtime import services
from batchlane.webhooks.deliver import Answer, deliver
from batchlane.webhooks.events import publish_job_change
from batchlane_dev.cli.jobs_commands import post_upload
from batchlane_dev.local.jobs import wait_until
from batchlane_dev.local.lambda_runtime import Invocation
from batchlane_dev.local.pdfgen import make_pdf
from deployment.topology import EVENT_SOURCE, JOB_STATE_CHANGE_DETAIL_TYPE
from tests.conftest import start_stack
from tests.webhook_receiver import Receiver, readme_verify

PAGES = 4
PDF = make_pdf(PAGES)


@pytest.fixture(scope="module")
def stack(migrated_url):  # type: ignore[no-untyped-def]
    # Past the migration to per-owner secrets: a delivery carries its owner's signature only (issue 40.4).
    stack = start_stack(migrated_url, faults="time_scale=36000", batch_lane=True, schedules=False, extra_env={"BATCHLANE_WEBHOOK_MIGRATION_DAYS": "0"})
    # Parked jobs stay parked: the packer is not what these tests are about.
    stack.registry.intercept("batch_packer", lambda event, call_real: Invocation(result={"claimed": []}))
    yield stack
    stack.stop()


@pytest.fixture(scope="module")
def public_events(stack):  # type: ignore[no-untyped-def]
    """An SQS queue behind a rule on the bus, as an AWS user would integrate."""
    sqs, events = client("sqs"), client("events")
    queue_url = sqs.create_queue(QueueName="public-job-events")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="my-job-events", EventPattern=json.dumps({"source": [EVENT_SOURCE], "detail-type": [JOB_STATE_CHANGE_DETAIL_TYPE]}))
    events.put_targets(Rule="my-job-events", Targets=[{"Id": "queue", "Arn": arn}])
    seen: list[dict[str, Any]] = []

    def of_job(job_id: str, count: int) -> list[dict[str, Any]]:
        def drained() -> list[dict[str, Any]] | None:
            for message in sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", []):
                seen.append(json.loads(message["Body"]))
                sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
            mine = [e for e in seen if e["detail"]["jobId"] == job_id]
            return mine if len(mine) >= count else None

        return list(wait_until(drained, timeout_s=60, what=f"{count} public events of job {job_id}"))

    return of_job


@pytest.fixture
def owner(stack):  # type: ignore[no-untyped-def]
    name = f"user-{uuid.uuid4().hex[:8]}"
    SECRETS[name] = own_secret(stack, name)
    yield name
    services().db.run("DELETE FROM webhook_deliveries WHERE owner_id = :owner", owner=name)
    services().db.run("DELETE FROM files WHERE owner_id = :owner", owner=name)


@pytest.fixture
def receiver():  # type: ignore[no-untyped-def]
    made: list[Receiver] = []

    def make(answers: list[int] | None = None, then: int = 200) -> Receiver:
        made.append(Receiver(answers, then))
        return made[-1]

    yield make
    for r in made:
        r.stop()


def call(stack: Any, method: str, path: str, body: Any = None, *, user: str, groups: str | None = None) -> tuple[int, Any]:
    token = f"local:{user}" + (f";groups={groups}" if groups else "")
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        stack.env["BATCHLANE_API_URL"] + path, data=data, method=method, headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def convert(stack: Any, owner: str, options: dict[str, Any], data: bytes = PDF) -> tuple[int, dict[str, Any]]:
    status, registered = call(stack, "POST", "/api/v1/files", {"name": "book.pdf", "sizeBytes": len(data)}, user=owner)
    assert status == 201, registered
    assert post_upload(registered["upload"], data) == 204
    return call(stack, "POST", f"/api/v1/files/{registered['fileId']}/convert", {"options": options}, user=owner)


def job_status(job_id: str) -> str:
    row = job_repo.PgJobs(services().db).get_job(job_id)
    assert row is not None
    return str(row.status)


SECRETS: dict[str, str] = {}  # each test owner's own signing secret, as their first config read showed it


def own_secret(stack: Any, owner: str) -> str:
    """The owner's first ``webhooks config``: it creates their secret and is the one answer that shows it."""
    status, config = call(stack, "GET", "/api/v1/webhook-config", user=owner)
    assert status == 200 and config["shownOnce"] is True and config["version"] == 1, config
    return str(config["secret"])


def deployment_secret(stage: str = "AWSCURRENT") -> str:
    return str(client("secretsmanager").get_secret_value(SecretId=services().settings.webhook_secret_arn, VersionStage=stage)["SecretString"])


def deliveries(stack: Any, owner: str, job_id: str | None = None) -> list[dict[str, Any]]:
    status, answer = call(stack, "GET", "/api/v1/deliveries" + (f"?job_id={job_id}" if job_id else ""), user=owner)
    assert status == 200, answer
    return list(answer["deliveries"])


def settled_delivery(stack: Any, owner: str, delivery_id: str) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        found = [d for d in deliveries(stack, owner) if d["deliveryId"] == delivery_id]
        return found[0] if found and found[0]["status"] in ("delivered", "failed") else None

    return dict(wait_until(done, timeout_s=120, what=f"delivery {delivery_id} to settle"))


def test_a_converted_job_posts_signed_webhooks_and_publishes_its_event(stack, owner, receiver, public_events):
    # Given a receiver, and a job subscribed to job.completed and file.completed with a header of its own
    hook = receiver()
    options = {"callbackUrl": hook.url, "callbackEvents": ["job.completed", "file.completed"], "callbackHeaders": {"X-Receiver-Token": "t0k"}}
    status, created = convert(stack, owner, options)
    assert status == 202, created
    job_id = created["jobId"]
    wait_until(lambda: job_status(job_id) == "completed", timeout_s=120, what="the conversion")

    # Then the receiver gets one POST per event, each verified by the README's snippet with the owner's own secret
    verify, secret = readme_verify(), SECRETS[owner]
    got = hook.wait_for(2)
    assert sorted(r.json["event"] for r in got) == ["file.completed", "job.completed"]
    for r in got:
        header = r.headers["Batchlane-Signature"]
        assert verify(secret, hook.url, r.body, header)
        body = r.json
        assert r.headers["Batchlane-Delivery"] == body["deliveryId"] and r.headers["Batchlane-Event"] == body["event"]
        assert r.headers["X-Receiver-Token"] == "t0k"
        assert (body["jobId"], body["status"], body["outcome"], body["pages"]["total"]) == (job_id, "completed", "completed", PAGES)
        assert body["costUsd"] is not None and body["outputs"]["markdown"].startswith("s3://") and body["timestamp"]
        # A replay of the same request six minutes later, or a changed body, is rejected
        sent_at = int(header.split(",")[0].removeprefix("t="))
        assert verify(secret, hook.url, r.body, header, now=sent_at + 60)
        assert not verify(secret, hook.url, r.body, header, now=sent_at + 301)
        assert not verify(secret, hook.url, r.body.replace(b"completed", b"c0mpleted"), header)
        assert not verify("another-secret", hook.url, r.body, header)
        assert not verify(deployment_secret(), hook.url, r.body, header)  # past the migration: the owner's signature only
        # Nor is it valid at another receiver: the URL it was sent to is signed (issue 21: a replay to another user)
        assert not verify(secret, hook.url.replace("/hooks/", "/other-user/"), r.body, header)

    # And the deliveries list says so, to the owner only
    listed = deliveries(stack, owner, job_id)
    assert sorted((d["event"], d["status"], d["attempts"], d["responseCode"]) for d in listed) == [
        ("file.completed", "delivered", 1, 200),
        ("job.completed", "delivered", 1, 200),
    ]
    assert all(isinstance(d["latencyMs"], int) for d in listed)
    assert {d["deliveryId"] for d in listed} == {r.json["deliveryId"] for r in got}
    stranger = f"other-{uuid.uuid4().hex[:6]}"
    assert call(stack, "GET", f"/api/v1/deliveries?job_id={job_id}", user=stranger)[0] == 404
    assert deliveries(stack, stranger) == []

    # And the public event is on the bus, where a rule's target sees it
    (event,) = public_events(job_id, 1)
    assert event["source"] == "batchlane" and event["detail-type"] == "Conversion Job State Change"
    detail = event["detail"]
    assert (detail["status"], detail["outcome"], detail["ownerId"], detail["pages"]["failed"]) == ("completed", "completed", owner, 0)
    assert detail["outputs"]["markdown"] == got[0].json["outputs"]["markdown"]


def test_a_receiver_failing_twice_gets_the_delivery_on_the_third_attempt(stack, owner, receiver):
    # Given a receiver that answers 500 and 503 before it takes anything
    hook = receiver([500, 503])
    # When a test delivery is sent
    status, sent = call(stack, "POST", "/api/v1/webhook-config/test", {"url": hook.url}, user=owner)
    assert status == 202 and sent["event"] == "webhook.test", sent
    # Then the state machine's ladder retries it until the receiver takes it
    done = settled_delivery(stack, owner, sent["deliveryId"])
    assert (done["status"], done["attempts"], done["responseCode"]) == ("delivered", 3, 200)
    got = hook.wait_for(3)
    assert len(got) == 3
    # The same delivery each time (the receiver's idempotency key), freshly signed each time
    assert {r.headers["Batchlane-Delivery"] for r in got} == {sent["deliveryId"]}
    assert len({r.body for r in got}) == 1
    verify, secret = readme_verify(), SECRETS[owner]
    assert all(verify(secret, hook.url, r.body, r.headers["Batchlane-Signature"]) for r in got)


def test_a_dead_receiver_never_blocks_the_conversion_and_is_given_up(stack, owner, receiver, public_events):
    hook = receiver(then=500)
    status, created = convert(stack, owner, {"callbackUrl": hook.url})
    assert status == 202, created
    wait_until(lambda: job_status(created["jobId"]) == "completed", timeout_s=120, what="the conversion")
    public_events(created["jobId"], 1)

    def given_up() -> list[dict[str, Any]] | None:
        listed = deliveries(stack, owner, created["jobId"])
        return listed if listed and listed[0]["status"] == "failed" else None

    (delivery,) = wait_until(given_up, timeout_s=120, what="the delivery to be given up")
    # 1 attempt + the offline ladder's 3 retries (AWS: 14 retries over ~24 h)
    assert (delivery["event"], delivery["attempts"], delivery["responseCode"]) == ("job.completed", 4, 500)
    assert len(hook.received) == 4
    assert job_status(created["jobId"]) == "completed"


def test_each_owner_signs_with_their_own_secret_and_rotates_it_alone(stack, owner, receiver):
    """Issue 40.4. Review: Bob's webhook-config/test to Alice's receiver arrived correctly signed (every user held the
    deployment's one secret, so any of them could forge deliveries to another's receiver)."""
    alice, bob = owner, f"bob-{uuid.uuid4().hex[:8]}"
    alice_first, bob_secret = SECRETS[alice], own_secret(stack, bob)
    assert alice_first != bob_secret
    # The config shows the secret once: a second read has dates and a version, never a value
    status, again = call(stack, "GET", "/api/v1/webhook-config", user=alice)
    assert status == 200 and "secret" not in again and again["version"] == 1 and alice_first not in json.dumps(again)
    # Stored sealed: the row holds KMS ciphertext, not the value
    row = services().db.one("SELECT ciphertext FROM webhook_secrets WHERE owner_id = :o AND version = 1", o=alice)
    assert row is not None and alice_first.encode() not in bytes(row["ciphertext"])
    verify = readme_verify()

    # Bob's test delivery to Alice's receiver verifies with Bob's secret only: Alice's receiver rejects it
    hook = receiver()
    status, sent = call(stack, "POST", "/api/v1/webhook-config/test", {"url": hook.url}, user=bob)
    assert status == 202
    (r,) = hook.wait_for(1)
    header = r.headers["Batchlane-Signature"]
    assert verify(bob_secret, hook.url, r.body, header)
    assert not verify(alice_first, hook.url, r.body, header) and not verify(deployment_secret(), hook.url, r.body, header)

    # Alice rotates hers (no group needed: it is hers): the new value shown once, Bob's untouched
    status, rotated = call(stack, "POST", "/api/v1/webhook-config/secret", {}, user=alice)
    assert status == 200 and rotated["shownOnce"] is True and rotated["version"] == 2 and rotated["previousValidUntil"], rotated
    alice_new = rotated["secret"]
    assert alice_new not in (alice_first, bob_secret)
    assert call(stack, "GET", "/api/v1/webhook-config", user=bob)[1]["version"] == 1
    # During the grace period Alice's deliveries carry both of her signatures: receivers on either accept them
    status, sent = call(stack, "POST", "/api/v1/webhook-config/test", {"url": hook.url}, user=alice)
    assert status == 202
    (_, r) = hook.wait_for(2)
    header = r.headers["Batchlane-Signature"]
    assert header.count("v2=") == 2
    assert verify(alice_new, hook.url, r.body, header) and verify(alice_first, hook.url, r.body, header)
    assert not verify(bob_secret, hook.url, r.body, header)
    assert settled_delivery(stack, alice, sent["deliveryId"])["status"] == "delivered"


def test_parked_failed_and_cancelled_jobs_notify_and_publish(stack, owner, receiver, public_events):
    hook = receiver()
    # A job parked for the batch lane, then cancelled
    events = ["job.waiting_batch", "job.completed", "file.error"]
    status, parked = convert(stack, owner, {"batchLane": True, "callbackUrl": hook.url, "callbackEvents": events})
    assert status == 202, parked
    wait_until(lambda: job_status(parked["jobId"]) == "waiting_batch", timeout_s=120, what="the job to park")
    (waiting,) = hook.wait_for(1)
    assert (waiting.json["event"], waiting.json["status"]) == ("job.waiting_batch", "waiting_batch")
    file_id = waiting.json["fileId"]
    assert call(stack, "POST", f"/api/v1/files/{file_id}/cancel", {}, user=owner)[0] == 200
    got = hook.wait_for(2)
    assert (got[1].json["event"], got[1].json["status"], got[1].json["outcome"]) == ("job.completed", "cancelled", "cancelled")
    assert [e["detail"]["status"] for e in public_events(parked["jobId"], 2)] == ["waiting_batch", "cancelled"]

    # A file that is no PDF: the job fails, file.error and job.completed (status failed)
    status, broken = convert(stack, owner, {"callbackUrl": hook.url, "callbackEvents": events}, data=b"not a pdf at all")
    assert status == 202, broken
    got = hook.wait_for(4)
    failed = {r.json["event"]: r.json for r in got[2:]}
    assert set(failed) == {"job.completed", "file.error"}
    assert failed["file.error"]["status"] == "failed" and failed["file.error"]["error"]["code"]
    (event,) = public_events(broken["jobId"], 1)
    assert (event["detail"]["status"], event["detail"]["outcome"]) == ("failed", "failed")


@pytest.mark.parametrize(
    ("options", "why"),
    [
        ({"callbackUrl": "ftp://example.com/hook"}, "https"),
        ({"callbackUrl": "https://user:secret@example.com/hook"}, "credentials"),
        ({"callbackUrl": "https://example.com/hook", "callbackEvents": ["job.exploded"]}, "unknown event"),
        ({"callbackUrl": "https://example.com/hook", "callbackHeaders": {"Batchlane-Signature": "forged"}}, "cannot be overridden"),
        ({"callbackEvents": ["job.completed"]}, "need a callbackUrl"),
    ],
)
def test_a_bad_callback_is_a_clear_400_and_nothing_is_created(stack, owner, options, why):
    status, answer = convert(stack, owner, options)
    assert (status, answer["error"]["code"]) == (400, "CALLBACK_INVALID"), answer
    assert why in answer["error"]["message"]
    assert services().db.one("SELECT count(*) AS n FROM large_conversion_jobs j JOIN files f ON f.id = j.file_id WHERE f.owner_id = :o", o=owner)["n"] == 0


def test_a_completed_job_with_failed_pages_is_a_file_error_and_its_own_outcome(stack, owner, receiver, public_events):
    # Given a converted job, as settle leaves it when some pages failed (marked in the Markdown)
    hook = receiver()
    status, created = convert(stack, owner, {"callbackUrl": hook.url, "callbackEvents": ["file.error"]})
    assert status == 202, created
    job_id = created["jobId"]
    wait_until(lambda: job_status(job_id) == "completed", timeout_s=120, what="the conversion")
    public_events(job_id, 1)
    services().db.run(
        "UPDATE large_conversion_jobs SET pages_failed = 2, error_id = 'PAGES_FAILED', error_message = '2 of 4 pages could not be converted' WHERE id = CAST(:id AS uuid)",
        id=job_id,
    )
    # When that state is published
    assert publish_job_change(services(), job_id, "completed")
    # Then the bus says completed_with_failed_pages, and the file.error subscriber is told
    second = public_events(job_id, 2)[-1]["detail"]
    assert (second["status"], second["outcome"], second["pages"]["failed"], second["error"]["code"]) == (
        "completed",
        "completed_with_failed_pages",
        2,
        "PAGES_FAILED",
    )
    (r,) = hook.wait_for(1)
    assert (r.json["event"], r.json["outcome"]) == ("file.error", "completed_with_failed_pages")


# An inward address refused for good, an unresolvable name retried: tests/unit/usecases/test_webhook_usecases.py (no server).


def test_the_post_connects_to_the_address_the_check_resolved_not_a_rebound_one(stack, owner, monkeypatch):
    """DNS rebinding: a name that answers a public address to the SSRF check and 127.0.0.1 to the connect.
    The resolver is the one part faked (there is no DNS offline); the POST is real HTTP on loopback."""
    import socket

    from batchlane.webhooks import deliver as deliver_module

    answers = iter(["93.184.215.14", "127.0.0.1"])  # the check's answer (public), then the rebound one
    lookups: list[str] = []

    def rebinding(host: str, port: int, *args: Any, **kwargs: Any) -> list[Any]:
        lookups.append(host)
        address = next(answers, "127.0.0.1")
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port))]

    connected: list[str] = []

    def post(url: str, body: bytes, headers: dict[str, str], timeout_s: float, address: str) -> Answer:
        connected.append(address)
        return Answer(200)

    original_getaddrinfo = socket.getaddrinfo
    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    rows = services().uow().deliveries
    delivery_id = str(uuid.uuid4())
    url = "https://hooks.rebind.example/batchlane"
    rows.add(delivery_id=delivery_id, owner_id=owner, job_id=None, event="webhook.test", url=url, headers={}, payload={"x": 1})
    assert deliver(rows, delivery_id, signing_keys=lambda owner: ["k"], post=post, allow_private=False, timeout_s=1)["status"] == "delivered"
    assert (lookups, connected) == (["hooks.rebind.example"], ["93.184.215.14"])  # resolved once; that address, pinned
    # The real POST goes to the pinned address whatever the name resolves to now (here: nothing at all)

    def names_unresolvable(host: str, *args: Any, **kwargs: Any) -> Any:
        if host.replace(".", "").isdigit():  # a numeric address needs no DNS (socket.create_connection asks anyway)
            return original_getaddrinfo(host, *args, **kwargs)
        raise socket.gaierror("no such name")

    monkeypatch.setattr(socket, "getaddrinfo", names_unresolvable)
    hook = Receiver()
    try:
        port = hook.url.split(":")[2].split("/")[0]
        answer = deliver_module.http_post(f"http://pinned.rebind.example:{port}/hooks/batchlane", b"{}", {"Content-Type": "application/json"}, 10, "127.0.0.1")
        assert answer.status == 200, answer
        (got,) = hook.wait_for(1)
        assert got.headers["Host"] == f"pinned.rebind.example:{port}"
    finally:
        hook.stop()
