"""The offline IAM: a handler's boto3 calls pass only where its topology grants allow them.

S3 and EventBridge are moto in-process; refused calls never reach it (the hook answers
403 the way AWS does), allowed ones do.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from batchlane_dev.local import iam
from batchlane_dev.local.iam import GrantEnforcer, Targets, acting_as
from tests.interpreter import in_a_fresh_interpreter

REGION = "us-east-1"
BUCKET = "offline-bucket"
MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
ROLE = "arn:aws:iam::123456789012:role/batchlane-bedrock-batch"
TARGETS = Targets(
    account_id="123456789012",
    region=REGION,
    bucket=BUCKET,
    conversion_state_machine_arn="arn:aws:states:us-east-1:123456789012:stateMachine:batchlane-conversion",
    batch_lane_state_machine_arn="arn:aws:states:us-east-1:123456789012:stateMachine:batchlane-batch_lane",
    bedrock_service_role_arn=ROLE,
    model_ids=(MODEL,),
)


@pytest.fixture
def enforcer(monkeypatch: pytest.MonkeyPatch) -> Iterator[GrantEnforcer]:
    for key, value in {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x", "AWS_DEFAULT_REGION": REGION}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    enforcer = GrantEnforcer(TARGETS)
    iam.install(enforcer)
    with acting_as(iam.OPERATOR), mock_aws():  # the test's own setup calls (buckets, objects): the operator's
        yield enforcer
    iam.install(None)


def _s3() -> Any:
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket=BUCKET)
    s3.put_object(Bucket=BUCKET, Key="uploads/a.pdf", Body=b"%PDF")
    s3.put_object(Bucket=BUCKET, Key="jobs/x/chunks/chunk-0.json", Body=b"{}")
    return s3


def _code(exc: pytest.ExceptionInfo[ClientError]) -> tuple[str, int]:
    return exc.value.response["Error"]["Code"], exc.value.response["ResponseMetadata"]["HTTPStatusCode"]


def test_a_function_without_s3_write_is_refused_put_object_like_on_aws_and_allowed_get(enforcer: GrantEnforcer) -> None:
    s3 = _s3()  # as the operator: not checked
    with acting_as("assemble"):  # db, s3_read_jobs, s3_write_jobs
        assert s3.get_object(Bucket=BUCKET, Key="jobs/x/chunks/chunk-0.json")["Body"].read() == b"{}"
        s3.put_object(Bucket=BUCKET, Key="jobs/x/out.md", Body=b"#")
    with acting_as("assemble"), pytest.raises(ClientError) as other_prefix:  # jobs/ only: never a user's upload
        s3.get_object(Bucket=BUCKET, Key="uploads/a.pdf")
    assert _code(other_prefix) == ("AccessDenied", 403)
    enforcer.denials.clear()
    with acting_as("settle"), pytest.raises(ClientError) as refused:  # db only
        s3.put_object(Bucket=BUCKET, Key="jobs/x/chunk-1.pdf", Body=b"%PDF")
    assert _code(refused) == ("AccessDenied", 403)
    assert "s3:PutObject" in str(refused.value) and f"arn:aws:s3:::{BUCKET}/jobs/x/chunk-1.pdf" in str(refused.value)
    assert "jobs/x/chunk-1.pdf" not in [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])]
    assert enforcer.denials == [("settle", "s3:PutObject", f"arn:aws:s3:::{BUCKET}/jobs/x/chunk-1.pdf")]
    with acting_as("settle"), pytest.raises(ClientError) as copy_refused:  # CopyObject is read + write
        s3.copy_object(Bucket=BUCKET, Key="jobs/x/copy.pdf", CopySource={"Bucket": BUCKET, "Key": "uploads/a.pdf"})
    assert _code(copy_refused) == ("AccessDenied", 403)


def test_prefix_scoped_grants_allow_the_batch_prefix_only(enforcer: GrantEnforcer) -> None:
    s3 = _s3()
    s3.put_object(Bucket=BUCKET, Key="batch/j/input/0.jsonl", Body=b"{}")
    with acting_as("batch_submit"):  # db, bedrock_batch: S3 on batch/* only
        s3.get_object(Bucket=BUCKET, Key="batch/j/input/0.jsonl")
        s3.list_objects_v2(Bucket=BUCKET, Prefix="batch/j/")
        with pytest.raises(ClientError) as outside:
            s3.get_object(Bucket=BUCKET, Key="uploads/a.pdf")
        with pytest.raises(ClientError) as whole_bucket:
            s3.list_objects_v2(Bucket=BUCKET)  # no s3:prefix: the condition does not hold
    assert _code(outside) == ("AccessDenied", 403) and _code(whole_bucket) == ("AccessDenied", 403)


def test_events_are_allowed_only_with_the_granted_source(enforcer: GrantEnforcer) -> None:
    events = boto3.client("events", region_name=REGION)
    entry = {"DetailType": "Conversion Job Parked", "Detail": "{}"}
    with acting_as("job_create"):
        assert events.put_events(Entries=[{**entry, "Source": "batchlane"}])["FailedEntryCount"] == 0
        with pytest.raises(events.exceptions.ClientError) as refused:
            events.put_events(Entries=[{**entry, "Source": "aws.bedrock"}])
    assert _code(refused) == ("AccessDeniedException", 403)
    with acting_as("batch_submit"), pytest.raises(ClientError):  # no publish_events at all
        events.put_events(Entries=[{**entry, "Source": "batchlane"}])


def test_bedrock_calls_follow_models_and_pass_role(enforcer: GrantEnforcer) -> None:
    runtime = boto3.client("bedrock-runtime", region_name=REGION)
    bedrock = boto3.client("bedrock", region_name=REGION)
    converse = {"messages": [{"role": "user", "content": [{"text": "hi"}]}]}
    job = {"jobName": "j1", "inputDataConfig": {"s3InputDataConfig": {"s3Uri": f"s3://{BUCKET}/batch/j1/input/"}}}
    job["outputDataConfig"] = {"s3OutputDataConfig": {"s3Uri": f"s3://{BUCKET}/batch/j1/output/"}}
    with acting_as("chunk_processor"):  # bedrock_runtime on the configured model only
        with pytest.raises(runtime.exceptions.AccessDeniedException):
            runtime.converse(modelId="us.anthropic.claude-opus-4-1-20250805-v1:0", **converse)
        assert enforcer.refusal("chunk_processor", "bedrock-runtime", "Converse", {"modelId": MODEL}) is None
        assert enforcer.refusal("chunk_processor", "bedrock-runtime", "InvokeModel", {"modelId": MODEL}) is None
    with acting_as("batch_submit"), pytest.raises(bedrock.exceptions.AccessDeniedException):
        bedrock.create_model_invocation_job(modelId=MODEL, roleArn="arn:aws:iam::123456789012:role/admin", **job)
    assert enforcer.denials[-1] == ("batch_submit", "iam:PassRole", "arn:aws:iam::123456789012:role/admin")
    assert enforcer.refusal("batch_submit", "bedrock", "CreateModelInvocationJob", {"modelId": MODEL, "roleArn": ROLE, **job}) is None
    assert enforcer.refusal("batch_callback", "bedrock", "CreateModelInvocationJob", {"modelId": MODEL, "roleArn": ROLE, **job})


def test_threads_a_handler_starts_act_with_its_grants_and_removed_grants_refuse(enforcer: GrantEnforcer) -> None:
    s3 = _s3()
    with acting_as("settle"), concurrent.futures.ThreadPoolExecutor(2) as pool:
        future = pool.submit(s3.put_object, Bucket=BUCKET, Key="jobs/y.md", Body=b"#")
        with pytest.raises(ClientError):
            future.result()
    enforcer.set_needs("assemble", ("db", "s3_read_jobs"))
    with acting_as("assemble"), pytest.raises(ClientError):
        s3.put_object(Bucket=BUCKET, Key="jobs/y.md", Body=b"#")
    enforcer.set_needs("assemble", None)
    with acting_as("assemble"):
        s3.put_object(Bucket=BUCKET, Key="jobs/y.md", Body=b"#")


def test_an_unmapped_operation_is_refused_so_a_new_call_cannot_slip_through(enforcer: GrantEnforcer) -> None:
    s3 = _s3()
    with acting_as("assemble"), pytest.raises(ClientError) as refused:
        s3.put_bucket_policy(Bucket=BUCKET, Policy="{}")
    assert "no IAM mapping offline" in str(refused.value)


EARLY_CLIENT = """
import boto3
from botocore.exceptions import ClientError
from moto import mock_aws
from batchlane_dev.local import iam
from batchlane_dev.local.iam import GrantEnforcer, acting_as
import tests_iam_targets as t

with mock_aws():
    early = boto3.client("s3", region_name=t.REGION)  # a module-level client, made before the stack installs the hook
    early.create_bucket(Bucket=t.BUCKET)
    iam.install(GrantEnforcer(t.TARGETS))
    try:
        with acting_as("settle"):  # db only
            early.put_object(Bucket=t.BUCKET, Key="jobs/x/chunk-1.pdf", Body=b"%PDF")
        print("allowed")
    except ClientError as exc:
        print(exc.response["Error"]["Code"], exc.response["ResponseMetadata"]["HTTPStatusCode"])
"""


def test_a_client_created_before_the_hook_was_installed_is_checked_too(tmp_path: Any) -> None:
    # A fresh process, as a Lambda's: a client made at import (before install) must not slip past.
    import os
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "tests_iam_targets.py").write_text(
        f"REGION = {REGION!r}\nBUCKET = {BUCKET!r}\nfrom batchlane_dev.local.iam import Targets\nTARGETS = {TARGETS!r}\n"
    )
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x", "AWS_DEFAULT_REGION": REGION}
    env.pop("AWS_ENDPOINT_URL", None)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), *sys.path])
    out = subprocess.run([sys.executable, "-c", EARLY_CLIENT], env=env, capture_output=True, text=True, check=True, cwd=Path(tmp_path))
    assert out.stdout.split() == ["AccessDenied", "403"], out.stdout + out.stderr


def test_a_call_with_no_identity_is_refused_and_a_handlers_own_thread_acts_with_its_grants(enforcer: GrantEnforcer) -> None:
    import contextvars
    import threading

    s3 = _s3()
    # A call made where no function, no operator and no AWS service acts (a handler's call that lost its identity)
    with pytest.raises(ClientError) as anonymous:
        contextvars.Context().run(s3.put_object, Bucket=BUCKET, Key="jobs/x/anon.pdf", Body=b"%PDF")
    assert _code(anonymous) == ("AccessDenied", 403)
    assert (iam.NO_IDENTITY, "s3:PutObject", f"arn:aws:s3:::{BUCKET}/jobs/x/anon.pdf") in enforcer.denials
    # A plain thread a handler starts acts as that handler (settle: db only), not unchecked
    errors: list[ClientError] = []

    def write() -> None:
        try:
            s3.put_object(Bucket=BUCKET, Key="jobs/x/thread.pdf", Body=b"%PDF")
        except ClientError as exc:
            errors.append(exc)  # AccessDenied, as the handler would see it on AWS

    with acting_as("settle"):
        thread = threading.Thread(target=write)
    thread.start()
    thread.join()
    assert [e.response["Error"]["Code"] for e in errors] == ["AccessDenied"] and ("settle", "s3:PutObject") in {(f, a) for f, a, _ in enforcer.denials}


WAIT_FOR_TOKEN = {
    "StartAt": "Wait",
    "States": {
        "Wait": {
            "Type": "Task",
            "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
            "Parameters": {"QueueUrl.$": "$.queue", "MessageBody": {"token.$": "$$.Task.Token"}},
            "End": True,
        }
    },
}


def _token_of(machine: str, states: Any, sqs: Any, queue: str) -> str:
    import json
    import time

    states.start_execution(stateMachineArn=machine, input=json.dumps({"queue": queue}))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # waits on the message the task sends, not a fixed time
        messages = sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=1).get("Messages", [])
        if messages:
            return str(json.loads(messages[0]["Body"])["token"])
    raise AssertionError("the task never sent its token")


def test_send_task_success_is_checked_against_the_tokens_state_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    for key, value in {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x", "AWS_DEFAULT_REGION": REGION}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    enforcer = GrantEnforcer(TARGETS)
    iam.install(enforcer)
    try:
        with acting_as(iam.OPERATOR), mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
            states, sqs = boto3.client("stepfunctions", region_name=REGION), boto3.client("sqs", region_name=REGION)
            queue = sqs.create_queue(QueueName="tokens")["QueueUrl"]
            role = "arn:aws:iam::123456789012:role/states"
            machines = {
                name: states.create_state_machine(name=f"batchlane-{name}", definition=json.dumps(WAIT_FOR_TOKEN), roleArn=role)["stateMachineArn"]
                for name in ("conversion", "batch_lane")
            }
            assert machines["batch_lane"] == TARGETS.batch_lane_state_machine_arn
            other, own = _token_of(machines["conversion"], states, sqs, queue), _token_of(machines["batch_lane"], states, sqs, queue)
            # batch_wait may answer the batch lane's tokens only (task_response: the batch-lane machine)
            with acting_as("batch_wait"), pytest.raises(ClientError) as refused:
                states.send_task_success(taskToken=other, output="{}")
            assert _code(refused) == ("AccessDeniedException", 403)
            assert ("batch_wait", "states:SendTaskSuccess", machines["conversion"]) in enforcer.denials
            with acting_as("batch_wait"):
                states.send_task_success(taskToken=own, output="{}")
    finally:
        iam.install(None)


def test_in_a_process_without_moto_no_execution_holds_a_token_and_moto_is_not_imported_to_find_none() -> None:
    """A worker process (the stack's Lambda environments) runs no moto: its SendTask* calls go to the stack's
    process. Importing moto's Step Functions backends there, to look in the empty ones, cost each worker 1.5 s
    of CPU at its first SendTask* call; twenty at once (a flood's splits) starved every other environment."""
    code = (
        "import sys\n"
        "from batchlane_dev.local.iam import Targets, token_state_machine\n"
        f"assert token_state_machine('any-token', {TARGETS!r}) is None\n"
        "assert 'moto.stepfunctions.parser.models' not in sys.modules, 'moto imported to look for the token'\n"
    )
    in_a_fresh_interpreter(code)
