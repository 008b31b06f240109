"""The offline Bedrock emulator, driven through boto3's real request path.

S3 is a moto server on loopback; the emulator reads job input from it and writes
output to it, exactly as the offline stack wires them. Jobs run at a large time_scale
so a whole lifecycle takes a fraction of a second; every wait has a deadline.
"""

from __future__ import annotations

import io
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from reportlab.lib.pagesizes import letter
from reportlab.pdfgen import canvas

from batchlane_dev.local.bedrock import (
    EMULATED_MODEL_LABEL,
    BatchQuotas,
    BedrockEmulator,
    Faults,
    model,
    parse_faults,
)

CREDS = {"region_name": "us-east-1", "aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
# botocore counts max_attempts as RETRIES (max_attempts=1 is two calls): 0 means exactly one.
NO_RETRIES = Config(retries={"max_attempts": 0, "mode": "standard"})
ROLE = "arn:aws:iam::123456789012:role/BatchRole"
MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
BUCKET = "emulator-tests"
FAST = "time_scale=200000"  # 24 emulated hours ≈ 0.43 s; a few records at 5,000 an hour pass in well under 0.01 s
TERMINAL = {"Completed", "PartiallyCompleted", "Failed", "Stopped", "Expired"}
SMALL = BatchQuotas(min_records=2, max_records=200, max_concurrent_jobs=5)


# -- fixtures -------------------------------------------------------------------------


@pytest.fixture
def s3(s3_endpoint: str) -> Any:
    return boto3.client("s3", endpoint_url=s3_endpoint, **CREDS)


class Harness:
    """One running emulator with its clients and the events it published."""

    def __init__(self, s3_endpoint: str, faults: str, quotas: BatchQuotas, publish: Callable[[dict[str, Any]], Any] | None = None) -> None:
        self.events: list[dict[str, Any]] = []
        self._events_lock = threading.Lock()

        def record(event: dict[str, Any]) -> None:
            with self._events_lock:
                self.events.append(event)
            if publish is not None:
                publish(event)

        self.emu = BedrockEmulator(
            s3_client_factory=lambda: boto3.client("s3", endpoint_url=s3_endpoint, **CREDS),
            publish_event=record,
            faults=parse_faults(faults),
            quotas=quotas,
        )
        url = self.emu.start()
        self.bedrock = boto3.client("bedrock", endpoint_url=url, config=NO_RETRIES, **CREDS)
        self.loose = boto3.client(  # skips botocore's client-side checks, to reach the server's
            "bedrock", endpoint_url=url, **CREDS, config=Config(retries={"max_attempts": 0, "mode": "standard"}, parameter_validation=False)
        )
        self.runtime = boto3.client("bedrock-runtime", endpoint_url=url, config=NO_RETRIES, **CREDS)

    def statuses(self, arn: str) -> list[str]:
        with self._events_lock:
            details = [json.loads(e["Detail"]) for e in self.events if e["Resources"] == [arn]]
        return [d["status"] for d in details]

    def details(self, arn: str) -> list[dict[str, Any]]:
        with self._events_lock:
            return [json.loads(e["Detail"]) for e in self.events if e["Resources"] == [arn]]

    def wait_terminal(self, arn: str, deadline_s: float = 10.0) -> dict[str, Any]:
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            job = self.bedrock.get_model_invocation_job(jobIdentifier=arn)
            if job["status"] in TERMINAL:
                return dict(job)
            time.sleep(0.02)
        raise AssertionError(f"job {arn} not terminal after {deadline_s}s")

    def wait_events(self, arn: str, count: int, deadline_s: float = 5.0) -> list[str]:
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline and len(self.statuses(arn)) < count:
            time.sleep(0.02)
        return self.statuses(arn)


@pytest.fixture
def harness(s3_endpoint: str) -> Iterator[Callable[..., Harness]]:
    made: list[Harness] = []

    def make(faults: str = FAST, quotas: BatchQuotas = SMALL, publish: Any = None) -> Harness:
        made.append(Harness(s3_endpoint, faults, quotas, publish))
        return made[-1]

    yield make
    for h in made:
        h.emu.stop()


# -- input helpers ----------------------------------------------------------------------


def page_pdf(*lines: str) -> bytes:
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=letter)
    y = 720
    for line in lines:
        pdf.drawString(72, y, line)
        y -= 16
    if not lines:
        pdf.rect(72, 600, 200, 100)  # a page with a drawing and no text layer, like a scan
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def converse_body(*documents: tuple[str, bytes], max_tokens: int = 2048, encode: bool = True) -> dict[str, Any]:
    import base64

    content: list[dict[str, Any]] = [
        {"document": {"format": "pdf", "name": name, "source": {"bytes": base64.b64encode(data).decode() if encode else data}}} for name, data in documents
    ]
    content.append({"text": "Convert this page to Markdown."})
    return {
        "system": [{"text": "You convert PDF pages to Markdown."}],
        "messages": [{"role": "user", "content": content}],
        "inferenceConfig": {"maxTokens": max_tokens},
    }


def records(count: int, prefix: str = "r") -> list[dict[str, Any]]:
    return [{"recordId": f"{prefix}{i:04d}", "modelInput": converse_body((f"page-{i}", page_pdf(f"Record {prefix}{i:04d} says hello.")))} for i in range(count)]


def put_jsonl(s3: Any, key: str, items: list[dict[str, Any]] | list[str]) -> None:
    lines = [i if isinstance(i, str) else json.dumps(i) for i in items]
    s3.put_object(Bucket=BUCKET, Key=key, Body=("\n".join(lines) + "\n").encode())


def submit(h: Harness, input_uri: str, name: str | None = None, **extra: Any) -> str:
    params: dict[str, Any] = {
        "jobName": name or f"job-{uuid.uuid4().hex[:10]}",
        "roleArn": ROLE,
        "modelId": MODEL,
        "inputDataConfig": {"s3InputDataConfig": {"s3Uri": input_uri}},
        "outputDataConfig": {"s3OutputDataConfig": {"s3Uri": f"s3://{BUCKET}/out/"}},
        "modelInvocationType": "Converse",
        "timeoutDurationInHours": 24,
    }
    params.update(extra)
    return str(h.bedrock.create_model_invocation_job(**params)["jobArn"])


def staged(s3: Any, count: int, files: int = 1) -> str:
    """Input of ``count`` records spread over ``files`` files; the prefix URI."""
    prefix = f"in/{uuid.uuid4().hex}/"
    items = records(count)
    for f in range(files):
        put_jsonl(s3, f"{prefix}part-{f}.jsonl", items[f::files])
    return f"s3://{BUCKET}/{prefix}"


def output_of(s3: Any, arn: str) -> tuple[dict[str, list[dict[str, Any]]], dict[str, int] | None]:
    """{file name: lines} and the manifest (None when absent) under out/<jobId>/."""
    job_id = arn.rsplit("/", 1)[-1]
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=f"out/{job_id}/").get("Contents", [])
    files: dict[str, list[dict[str, Any]]] = {}
    manifest = None
    for item in listed:
        body = s3.get_object(Bucket=BUCKET, Key=item["Key"])["Body"].read().decode()
        name = item["Key"].rsplit("/", 1)[-1]
        if name == "manifest.json.out":
            manifest = json.loads(body)
        else:
            files[name] = [json.loads(line) for line in body.splitlines() if line]
    return files, manifest


def error_code(exc: pytest.ExceptionInfo[ClientError]) -> str:
    return str(exc.value.response["Error"]["Code"])


# -- faults -----------------------------------------------------------------------------


def test_parse_faults_reads_every_key_and_names_the_bad_one() -> None:
    faults = parse_faults(" job_outcome=expired, record_error_rate=0.25,drop_terminal_event=1,throttle_rpm=30,time_scale=3600,event_delay_s=0.5 ")
    assert faults == Faults(job_outcome="expired", record_error_rate=0.25, drop_terminal_event=True, throttle_rpm=30, time_scale=3600.0, event_delay_s=0.5)
    assert parse_faults("") == Faults()
    with pytest.raises(ValueError, match=r"unknown emulator fault .throttle.; known: .*throttle_rpm"):
        parse_faults("throttle=3")
    with pytest.raises(ValueError, match="record_error_rate"):
        parse_faults("record_error_rate=1.5")
    with pytest.raises(ValueError, match="job_outcome"):
        parse_faults("job_outcome=exploded")
    with pytest.raises(ValueError, match="time_scale"):
        parse_faults("time_scale=0")


# -- control plane: synchronous validation ------------------------------------------------


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ({"jobName": "-starts-with-dash"}, "jobName"),
        ({"jobName": "has space"}, "jobName"),
        ({"timeoutDurationInHours": 12}, "timeoutDurationInHours"),
        ({"timeoutDurationInHours": 200}, "timeoutDurationInHours"),
        ({"roleArn": "arn:aws:iam::123:role/Short"}, "roleArn"),
        ({"roleArn": "arn:aws:iam::123456789012:user/NotARole"}, "roleArn"),
        ({"inputDataConfig": {"s3InputDataConfig": {"s3Uri": "https://bucket/key"}}}, "s3Uri"),
        ({"outputDataConfig": {"s3OutputDataConfig": {"s3Uri": "s3://UPPER/out/"}}}, "s3Uri"),
        ({"modelInvocationType": "Streaming"}, "modelInvocationType"),
    ],
)
def test_create_rejects_what_aws_rejects(harness: Callable[..., Harness], override: dict[str, Any], field: str) -> None:
    h = harness()
    with pytest.raises(ClientError) as exc:
        submit_params = {
            "jobName": "valid-name",
            "roleArn": ROLE,
            "modelId": MODEL,
            "inputDataConfig": {"s3InputDataConfig": {"s3Uri": f"s3://{BUCKET}/in/x.jsonl"}},
            "outputDataConfig": {"s3OutputDataConfig": {"s3Uri": f"s3://{BUCKET}/out/"}},
            "timeoutDurationInHours": 24,
            **override,
        }
        h.loose.create_model_invocation_job(**submit_params)
    assert error_code(exc) == "ValidationException"
    assert field in exc.value.response["Error"]["Message"]
    assert h.emu.jobs == {}


def test_same_token_adopts_the_job_and_a_taken_name_conflicts(harness: Callable[..., Harness], s3: Any) -> None:
    h = harness(faults="time_scale=1")  # slow: jobs stay Submitted during the test
    uri = staged(s3, 3)
    first = submit(h, uri, name="batchlane-job-1", clientRequestToken="tok1")
    again = submit(h, uri, name="batchlane-job-1", clientRequestToken="tok1")
    assert again == first
    assert len(h.emu.jobs) == 1
    with pytest.raises(ClientError) as exc:
        submit(h, uri, name="batchlane-job-1", clientRequestToken="tok2")
    assert error_code(exc) == "ConflictException"


def test_more_jobs_than_the_concurrent_quota_is_refused(harness: Callable[..., Harness], s3: Any) -> None:
    h = harness(faults="time_scale=1", quotas=BatchQuotas(min_records=2, max_concurrent_jobs=2))
    uri = staged(s3, 3)
    submit(h, uri)
    submit(h, uri)
    with pytest.raises(ClientError) as exc:
        submit(h, uri)
    assert error_code(exc) == "ServiceQuotaExceededException"
    # AWS's quota is per model: another model's job is still accepted
    other = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
    submit(h, uri, modelId=other)
    assert dict(h.emu.control.peak_active_by_model) == {MODEL: 2, other: 1}


def test_create_throttle_answers_throttling_first(harness: Callable[..., Harness], s3: Any) -> None:
    h = harness(faults=f"{FAST},create_throttle=1")
    uri = staged(s3, 3)
    with pytest.raises(ClientError) as exc:
        submit(h, uri, name="throttled", clientRequestToken="same")
    assert error_code(exc) == "ThrottlingException"
    arn = submit(h, uri, name="throttled", clientRequestToken="same")
    assert h.wait_terminal(arn)["status"] == "Completed"
    assert h.emu.stats["create_throttled"] == 1


def test_unknown_job_is_not_found(harness: Callable[..., Harness]) -> None:
    h = harness()
    with pytest.raises(ClientError) as exc:
        h.bedrock.get_model_invocation_job(jobIdentifier="abcdefabcdef")
    assert error_code(exc) == "ResourceNotFoundException"


# -- lifecycle -----------------------------------------------------------------------------


def test_a_job_completes_with_an_event_per_transition_and_aws_shaped_output(harness: Callable[..., Harness], s3: Any) -> None:
    h = harness()
    uri = staged(s3, 12, files=2)
    arn = submit(h, uri, name="complete-me", tags=[{"key": "job", "value": "42"}])

    job = h.wait_terminal(arn)
    assert job["status"] == "Completed"
    assert (job["totalRecordCount"], job["processedRecordCount"], job["successRecordCount"], job["errorRecordCount"]) == (12, 12, 12, 0)
    assert abs(job["jobExpirationTime"] - job["submitTime"] - timedelta(hours=24)) < timedelta(seconds=1)
    assert h.wait_events(arn, 5) == ["Submitted", "Validating", "Scheduled", "InProgress", "Completed"]
    last = h.details(arn)[-1]
    assert last["batchJobArn"] == arn and last["batchJobName"] == "complete-me"
    assert last["batchModelId"] == MODEL and last["accountId"] == "123456789012"
    assert "endTime" in last and last["timeoutDurationInHours"] == 24
    assert all(e["Source"] == "aws.bedrock" and e["DetailType"] == "Batch Inference Job State Change" for e in h.events)

    files, manifest = output_of(s3, arn)
    assert sorted(files) == ["part-0.jsonl.out", "part-1.jsonl.out"]
    assert manifest is not None
    assert manifest["totalRecordCount"] == manifest["processedRecordCount"] == 12
    assert manifest["successRecordCount"] == 12 and manifest["errorRecordCount"] == 0
    lines = [line for name in sorted(files) for line in files[name]]
    assert manifest["inputTokenCount"] == sum(line["modelOutput"]["usage"]["inputTokens"] for line in lines)
    assert manifest["outputTokenCount"] == sum(line["modelOutput"]["usage"]["outputTokens"] for line in lines)
    by_id = {line["recordId"]: line for line in lines}
    assert sorted(by_id) == [f"r{i:04d}" for i in range(12)]
    assert "Record r0007 says hello." in by_id["r0007"]["modelOutput"]["output"]["message"]["content"][0]["text"]
    assert by_id["r0007"]["modelOutput"]["stopReason"] == "end_turn"
    assert by_id["r0007"]["modelInput"]["messages"][0]["role"] == "user"

    tags = h.bedrock.list_tags_for_resource(resourceARN=arn)["tags"]
    assert tags == [{"key": "job", "value": "42"}]


def test_output_order_is_shuffled_but_complete(harness: Callable[..., Harness], s3: Any) -> None:
    h = harness()
    arn = submit(h, staged(s3, 40))
    assert h.wait_terminal(arn)["status"] == "Completed"
    files, _ = output_of(s3, arn)
    ids = [line["recordId"] for line in files["part-0.jsonl.out"]]
    assert sorted(ids) == [f"r{i:04d}" for i in range(40)]
    assert ids != sorted(ids)  # 1 chance in 40! of a false failure


def test_list_filters_and_paginates(harness: Callable[..., Harness], s3: Any) -> None:
    h = harness(faults="time_scale=1")
    uri = staged(s3, 3)
    arns = [submit(h, uri, name=f"listed-{i}") for i in range(3)]
    submit(h, uri, name="other")
    first = h.bedrock.list_model_invocation_jobs(nameContains="listed", maxResults=2, sortOrder="Ascending")
    assert [j["jobArn"] for j in first["invocationJobSummaries"]] == arns[:2]
    rest = h.bedrock.list_model_invocation_jobs(nameContains="listed", maxResults=2, sortOrder="Ascending", nextToken=first["nextToken"])
    assert [j["jobArn"] for j in rest["invocationJobSummaries"]] == arns[2:]
    assert "nextToken" not in rest
    submitted = h.bedrock.list_model_invocation_jobs(statusEquals="Submitted")["invocationJobSummaries"]
    assert len(submitted) == 4
    assert h.bedrock.list_model_invocation_jobs(statusEquals="Completed")["invocationJobSummaries"] == []


def test_record_errors_end_partially_completed(harness: Callable[..., Harness], s3: Any) -> None:
    h = harness(faults=f"{FAST},record_error_rate=0.5")
    arn = submit(h, staged(s3, 30))
    job = h.wait_terminal(arn)
    assert job["status"] == "PartiallyCompleted"
    files, manifest = output_of(s3, arn)
    lines = files["part-0.jsonl.out"]
    errors = [line for line in lines if "error" in line]
    assert 0 < len(errors) < 30
    assert all(e["error"]["errorCode"] == 400 and "modelOutput" not in e for e in errors)
    assert manifest is not None and manifest["errorRecordCount"] == len(errors) == job["errorRecordCount"]
    assert manifest["successRecordCount"] + manifest["errorRecordCount"] == 30


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (2, "fewer than the minimum of 5"),
        ("malformed", "Malformed JSON"),
        ("duplicate", "Duplicate recordId"),
        ("no-model-input", "no modelInput"),
        ("hyphenated-id", "not an alphanumeric string"),  # Bedrock documents recordId as alphanumeric
    ],
)
def test_invalid_input_fails_in_validation_and_writes_nothing(harness: Callable[..., Harness], s3: Any, lines: Any, message: str) -> None:
    h = harness(quotas=BatchQuotas(min_records=5))
    items: list[Any] = records(6)
    if lines == 2:
        items = items[:2]
    elif lines == "malformed":
        items[3] = '{"recordId": "broken", '
    elif lines == "duplicate":
        items[4]["recordId"] = items[1]["recordId"]
    elif lines == "hyphenated-id":
        items[3]["recordId"] = "m0-c0-p4"
    else:
        del items[2]["modelInput"]
    key = f"in/{uuid.uuid4().hex}.jsonl"
    put_jsonl(s3, key, items)
    arn = submit(h, f"s3://{BUCKET}/{key}")
    job = h.wait_terminal(arn)
    assert job["status"] == "Failed"
    assert message in job["message"]
    assert h.wait_events(arn, 3) == ["Submitted", "Validating", "Failed"]
    assert message in h.details(arn)[-1]["failureMessage"]
    assert output_of(s3, arn) == ({}, None)


def test_forced_expiry_keeps_partial_output(harness: Callable[..., Harness], s3: Any) -> None:
    h = harness(faults=f"{FAST},job_outcome=expired")
    arn = submit(h, staged(s3, 10))
    job = h.wait_terminal(arn)
    assert job["status"] == "Expired"
    assert job["endTime"] == job["jobExpirationTime"]
    files, manifest = output_of(s3, arn)
    assert manifest is not None and manifest["processedRecordCount"] == 5 and manifest["totalRecordCount"] == 10
    assert len(files["part-0.jsonl.out"]) == 5
    assert h.wait_events(arn, 5)[-2:] == ["InProgress", "Expired"]


def test_a_lone_job_idling_until_its_expiration_is_ended_by_the_emulated_clock_not_real_seconds(harness: Callable[..., Harness], s3: Any) -> None:
    # At 3,600 emulated seconds a second the idle 24 hours would take ~24 real seconds, longer than wait_terminal allows
    h = harness(faults="time_scale=3600,job_outcome=expired")
    arn = submit(h, staged(s3, 10))
    job = h.wait_terminal(arn)
    assert job["status"] == "Expired" and job["endTime"] == job["jobExpirationTime"]
    assert h.emu.clock.skipped_s > 23 * 3600, "the clock jumped over the idle wait"
    _, manifest = output_of(s3, arn)
    assert manifest is not None and manifest["processedRecordCount"] == 5


def test_an_idle_job_waits_in_real_time_while_another_job_is_live(harness: Callable[..., Harness], s3: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    h = harness(faults=f"{FAST},job_outcome=expired")
    running = submit(h, staged(s3, 10))
    assert h.emu.live_job_count() == 1
    h.wait_terminal(running)
    assert h.emu.live_job_count() == 0
    jumped = h.emu.clock.skipped_s
    # another job live the whole time (held there, not raced for): the idle job must wait its real seconds
    monkeypatch.setattr(h.emu, "live_job_count", lambda: 2)
    arn = submit(h, staged(s3, 10))
    job = h.wait_terminal(arn)
    assert (job["status"], job["endTime"]) == ("Expired", job["jobExpirationTime"])
    assert h.emu.clock.skipped_s == jumped, "another job was live: its pace needs the real seconds"


def test_a_job_longer_than_its_timeout_expires(harness: Callable[..., Harness], s3: Any) -> None:
    h = harness(faults=f"{FAST},job_hours=48")
    arn = submit(h, staged(s3, 10))
    job = h.wait_terminal(arn)
    assert job["status"] == "Expired"
    _, manifest = output_of(s3, arn)
    assert manifest is not None and 0 < manifest["processedRecordCount"] < 10


def test_stop_midway_goes_stopping_then_stopped_with_partial_output(harness: Callable[..., Harness], s3: Any) -> None:
    h = harness(faults="time_scale=3600,job_hours=1")  # InProgress lasts about one real second
    arn = submit(h, staged(s3, 20))
    deadline = time.monotonic() + 10
    while h.bedrock.get_model_invocation_job(jobIdentifier=arn).get("processedRecordCount", 0) < 2:
        assert time.monotonic() < deadline, "job never started processing"
        time.sleep(0.01)
    h.bedrock.stop_model_invocation_job(jobIdentifier=arn)
    assert h.bedrock.get_model_invocation_job(jobIdentifier=arn)["status"] in ("Stopping", "Stopped")

    job = h.wait_terminal(arn)
    assert job["status"] == "Stopped"
    assert h.wait_events(arn, 6) == ["Submitted", "Validating", "Scheduled", "InProgress", "Stopping", "Stopped"]
    files, manifest = output_of(s3, arn)
    assert manifest is not None and 2 <= manifest["processedRecordCount"] < 20
    assert len(files["part-0.jsonl.out"]) == manifest["processedRecordCount"]
    with pytest.raises(ClientError) as exc:
        h.bedrock.stop_model_invocation_job(jobIdentifier=arn)
    assert error_code(exc) == "ValidationException"


def test_stopped_fault_stops_the_job_itself_halfway(harness: Callable[..., Harness], s3: Any) -> None:
    h = harness(faults=f"{FAST},job_outcome=stopped")
    arn = submit(h, staged(s3, 10))
    assert h.wait_terminal(arn)["status"] == "Stopped"
    assert h.wait_events(arn, 6)[-2:] == ["Stopping", "Stopped"]
    _, manifest = output_of(s3, arn)
    assert manifest is not None and manifest["processedRecordCount"] == 5


def test_dropped_terminal_event_leaves_the_status_readable(harness: Callable[..., Harness], s3: Any) -> None:
    h = harness(faults=f"{FAST},drop_terminal_event=1")
    arn = submit(h, staged(s3, 3))
    assert h.wait_terminal(arn)["status"] == "Completed"
    time.sleep(0.2)  # give a wrongly published terminal event time to show up
    assert h.statuses(arn) == ["Submitted", "Validating", "Scheduled", "InProgress"]


def test_duplicated_events_arrive_twice_in_order(harness: Callable[..., Harness], s3: Any) -> None:
    h = harness(faults=f"{FAST},duplicate_events=1")
    arn = submit(h, staged(s3, 3))
    h.wait_terminal(arn)
    assert h.wait_events(arn, 10) == [s for s in ["Submitted", "Validating", "Scheduled", "InProgress", "Completed"] for _ in (0, 1)]


def test_delayed_events_keep_their_order(harness: Callable[..., Harness], s3: Any) -> None:
    h = harness(faults=f"{FAST},event_delay_s=0.2")
    arn = submit(h, staged(s3, 3))
    h.wait_terminal(arn)
    assert h.wait_events(arn, 5) == ["Submitted", "Validating", "Scheduled", "InProgress", "Completed"]


def test_a_failing_publisher_does_not_stop_the_job(harness: Callable[..., Harness], s3: Any) -> None:
    def broken(event: dict[str, Any]) -> None:
        raise RuntimeError("EventBridge is down")

    h = harness(publish=broken)
    arn = submit(h, staged(s3, 3))
    assert h.wait_terminal(arn)["status"] == "Completed"


# -- Converse runtime -----------------------------------------------------------------------


def converse(h: Harness, *documents: tuple[str, bytes], max_tokens: int = 2048) -> dict[str, Any]:
    body = converse_body(*documents, max_tokens=max_tokens, encode=False)  # botocore base64-encodes
    return dict(h.runtime.converse(modelId=MODEL, **body))


def test_converse_answers_with_the_page_text(harness: Callable[..., Harness]) -> None:
    h = harness()
    answer = converse(h, ("page-3", page_pdf("Quarterly results were strong.", "Revenue grew by ten percent.")))
    text = answer["output"]["message"]["content"][0]["text"]
    assert "Quarterly results were strong." in text and "Revenue grew by ten percent." in text
    assert answer["stopReason"] == "end_turn"
    usage = answer["usage"]
    assert usage["inputTokens"] >= model.TOKENS_PER_DOCUMENT
    assert usage["outputTokens"] == -(-len(text) // 4)
    assert usage["totalTokens"] == usage["inputTokens"] + usage["outputTokens"]
    assert "not a model" in EMULATED_MODEL_LABEL


def test_converse_marks_each_document_with_its_page_number(harness: Callable[..., Harness]) -> None:
    h = harness()
    answer = converse(h, ("page-12", page_pdf("Twelfth page.")), ("page-13", page_pdf("Thirteenth page.")))
    text = answer["output"]["message"]["content"][0]["text"]
    assert text.index("<!-- Page 12 -->") < text.index("Twelfth page.") < text.index("<!-- Page 13 -->")
    assert text.index("<!-- Page 13 -->") < text.index("Thirteenth page.")
    assert answer["usage"]["inputTokens"] >= 2 * model.TOKENS_PER_DOCUMENT


def test_converse_cuts_the_answer_at_max_tokens(harness: Callable[..., Harness]) -> None:
    h = harness()
    answer = converse(h, ("page-1", page_pdf("A line long enough to need more than five tokens.")), max_tokens=5)
    assert answer["stopReason"] == "max_tokens"
    assert len(answer["output"]["message"]["content"][0]["text"]) == 20
    assert answer["usage"]["outputTokens"] == 5


def test_a_page_without_text_layer_answers_empty(harness: Callable[..., Harness]) -> None:
    h = harness()
    answer = converse(h, ("page-1", page_pdf()))
    assert answer["output"]["message"]["content"][0]["text"] == ""


@pytest.mark.parametrize(
    ("fault", "reason"), [("truncate_rate", "max_tokens"), ("content_filter_rate", "content_filtered"), ("guardrail_rate", "guardrail_intervened")]
)
def test_answer_faults_set_the_stop_reason(harness: Callable[..., Harness], fault: str, reason: str) -> None:
    h = harness(faults=f"{fault}=1")
    pdf = page_pdf("Some words on the page that the fault will damage.")
    answer = converse(h, ("page-1", pdf))
    assert answer["stopReason"] == reason
    if reason == "content_filtered":
        assert answer["output"]["message"]["content"][0]["text"] == ""


def test_converse_validates_like_aws(harness: Callable[..., Harness]) -> None:
    h = harness()
    pdf = page_pdf("x")
    bad_order = {"messages": [{"role": "assistant", "content": [{"text": "hi"}]}]}
    bad_format = {"messages": [{"role": "user", "content": [{"document": {"format": "docx", "name": "page-1", "source": {"bytes": pdf}}}]}]}
    for body in (bad_order, bad_format):
        with pytest.raises(ClientError) as exc:
            h.runtime.converse(modelId=MODEL, **body)
        assert error_code(exc) == "ValidationException"


def test_throttling_is_a_429_through_botocore(harness: Callable[..., Harness]) -> None:
    h = harness(faults="throttle_rpm=2")
    page = ("page-1", page_pdf("Throttle me."))
    converse(h, page)
    converse(h, page)
    with pytest.raises(ClientError) as exc:
        converse(h, page)
    assert error_code(exc) == "ThrottlingException"
    assert exc.value.response["ResponseMetadata"]["HTTPStatusCode"] == 429
    assert h.emu.stats["converse_requests"] == 3 and h.emu.stats["converse_throttled"] == 1


def test_the_page_model_builds_markdown_from_the_text_layer_deterministically() -> None:
    pdf = page_pdf(
        "Chapter 3",
        "The emulator reads the text layer of the page and groups the",
        "wrapped lines into paragraphs like this one.",
        "It starts a new paragraph after a short closing line like that.",
    )
    body = converse_body(("page-1", pdf))
    first, again = model.answer(body), model.answer(body)
    assert first == again
    assert first["output"]["message"]["content"][0]["text"] == (
        "## Chapter 3\n\n"
        "The emulator reads the text layer of the page and groups the wrapped lines into paragraphs like this one.\n\n"
        "It starts a new paragraph after a short closing line like that."
    )


def test_batch_and_converse_give_the_same_answer_for_the_same_request(harness: Callable[..., Harness], s3: Any) -> None:
    h = harness()
    item = records(2)
    key = f"in/{uuid.uuid4().hex}.jsonl"
    put_jsonl(s3, key, item)
    arn = submit(h, f"s3://{BUCKET}/{key}")
    h.wait_terminal(arn)
    files, _ = output_of(s3, arn)
    batch = {line["recordId"]: line["modelOutput"] for line in files[key.rsplit("/", 1)[-1] + ".out"]}
    online = model.answer(item[0]["modelInput"])
    assert batch["r0000"]["output"] == online["output"]
    assert batch["r0000"]["usage"] == online["usage"]


def test_tokens_served_count_each_lane_as_aws_bills_it(harness: Callable[..., Harness], s3: Any) -> None:
    """The counters tests hold the ledger to: batch tokens = the manifests' counts, runtime tokens = the answers' usage."""
    h = harness(faults=f"{FAST},record_error_rate=0.3")
    arn = submit(h, staged(s3, 6))
    h.wait_terminal(arn)
    _, manifest = output_of(s3, arn)
    answer = converse(h, ("page-1", page_pdf("One page of text.")))
    assert manifest is not None and manifest["errorRecordCount"] > 0
    assert h.emu.tokens_served() == {
        "batch": (manifest["inputTokenCount"], manifest["outputTokenCount"]),
        "runtime": (answer["usage"]["inputTokens"], answer["usage"]["outputTokens"]),
    }


def test_a_text_layer_that_decodes_to_utf16_halves_is_answered_as_valid_unicode(monkeypatch: pytest.MonkeyPatch) -> None:
    """lm-info.pdf (Debian's fonts-lmodern) has pages whose text layer pypdf decodes to a lone surrogate: the emulator
    crashed encoding its answer (UnicodeEncodeError), and 8 pages failed. Bedrock answers in UTF-8 JSON, so a model's
    answer never carries one: a pair is joined, a lone half becomes U+FFFD."""
    from batchlane_dev.local.bedrock import model

    monkeypatch.setattr(model, "_read_page", lambda page, visual, drawing: "ok \ud80c and \ud83d\ude00")
    buffer = io.BytesIO()
    sheet = canvas.Canvas(buffer, pagesize=letter)
    sheet.drawString(72, 720, "x")
    sheet.save()
    text = model.page_markdown(buffer.getvalue())
    assert text == "ok \ufffd and \U0001f600"
    json.dumps({"text": text}).encode()  # what a response body needs
    text.encode("utf-8")
