"""Every function in the topology is deployed, with exactly its grants (tests/unit/test_topology.py holds topology and functions/ together)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from infra_testlib import Synth, as_list, camel, statements_of

from batchlane import contract
from batchlane.config import Settings
from deployment import topology
from deployment.grants import CAPABILITY_GRANTS
from infra.compute import ASYNC_FUNCTIONS

BASELINE = {"logs:CreateLogStream", "logs:PutLogEvents", "xray:PutTraceSegments", "xray:PutTelemetryRecords"}
VPC_MANAGED = "AWSLambdaVPCAccessExecutionRole"
# From the one mapping (deployment.grants); bedrock_batch comes through the managed caller policy.
CAPABILITY_ACTIONS: dict[str, set[str]] = {
    need: set() if need == "bedrock_batch" else {a for g in grants for a in g.actions} for need, grants in CAPABILITY_GRANTS.items()
}


def _function(synth: Synth, name: str) -> dict[str, Any]:
    return synth.resources[synth.logical_id(f"Compute/{camel(name)}")]


def _role_statements(synth: Synth, name: str) -> list[dict[str, Any]]:
    role_id = synth.logical_id(f"Compute/{camel(name)}Role")
    statements = []
    for policy in synth.of_type("AWS::IAM::Policy").values():
        if {"Ref": role_id} in policy["Properties"]["Roles"]:
            statements += statements_of(policy)
    return statements


@pytest.mark.parametrize("spec", topology.FUNCTIONS, ids=lambda s: s.name)
def test_every_topology_function_is_a_lambda_built_from_its_folder(synth: Synth, spec: topology.FunctionSpec) -> None:
    props = _function(synth, spec.name)["Properties"]
    assert props["Handler"] == "handler.handler"
    assert props["Runtime"] == "python3.12"
    assert props["Architectures"] == ["arm64"]
    assert props["TracingConfig"] == {"Mode": "Active"}
    assert props["Timeout"] == spec.timeout_s and props["MemorySize"] == spec.memory_mb
    if spec.name != "batch_collect":  # collect's follows the largest lane (test_infra_collect_spool.py)
        assert props.get("EphemeralStorage", {"Size": 512})["Size"] == spec.ephemeral_storage_mb
    assert len(props["Layers"]) == 1
    # The code asset is the function's own folder, byte for byte.
    asset = synth.outdir / _function(synth, spec.name)["Metadata"]["aws:asset:path"]
    assert (asset / "handler.py").read_bytes() == topology.handler_path(spec.name).read_bytes()
    env = props["Environment"]["Variables"]
    assert env["POWERTOOLS_SERVICE_NAME"] == "batchlane" and env["POWERTOOLS_METRICS_NAMESPACE"] == "Batchlane"


@pytest.mark.parametrize("spec", topology.FUNCTIONS, ids=lambda s: s.name)
def test_each_function_is_granted_exactly_what_its_needs_name(synth: Synth, spec: topology.FunctionSpec) -> None:
    expected = set(BASELINE)
    for need in spec.needs:
        expected |= CAPABILITY_ACTIONS[need]
    if spec.name in ASYNC_FUNCTIONS:
        expected.add("sqs:SendMessage")  # its dead-letter queue
    granted = {a for st in _role_statements(synth, spec.name) for a in as_list(st["Action"])}
    assert granted == expected

    role = synth.resources[synth.logical_id(f"Compute/{camel(spec.name)}Role")]
    managed = json.dumps(role["Properties"].get("ManagedPolicyArns", []))
    caller_policy_id = synth.logical_id("BedrockBatch/CallerPolicy")
    assert (caller_policy_id in managed) == ("bedrock_batch" in spec.needs)
    assert (VPC_MANAGED in managed) == bool({"db", "db_admin"} & set(spec.needs))


MACHINE_BY_NEED = {
    "start_conversion": "conversion",
    "start_batch_lane": "batch-lane",
    "start_intake": "intake",
    "start_webhook_delivery": "webhook-delivery",
    "start_folder_job": "folder-job",
    "start_estimate": "estimate",
}


@pytest.mark.parametrize("spec", topology.FUNCTIONS, ids=lambda s: s.name)
def test_state_machine_arns_are_given_only_to_functions_that_start_or_answer_them(synth: Synth, spec: topology.FunctionSpec) -> None:
    env = _function(synth, spec.name)["Properties"]["Environment"]["Variables"]
    inspects = "inspect_workflows" in spec.needs  # DescribeExecution of conversion, intake and folder-job executions (recovery)
    assert ("CONVERSION_STATE_MACHINE_ARN" in env) == ("start_conversion" in spec.needs or inspects)
    assert ("BATCH_LANE_STATE_MACHINE_ARN" in env) == bool({"start_batch_lane", "task_response"} & set(spec.needs))
    assert ("INTAKE_STATE_MACHINE_ARN" in env) == ("start_intake" in spec.needs or inspects)
    assert ("FOLDER_JOB_STATE_MACHINE_ARN" in env) == ("start_folder_job" in spec.needs or inspects)
    started = set()
    for statement in _role_statements(synth, spec.name):
        if "states:StartExecution" in as_list(statement["Action"]):
            for target in as_list(statement["Resource"]):
                started.add(re.sub(r".*:stateMachine:Batchlane-", "", target["Fn::Join"][1][-1]))
    assert started == {machine for need, machine in MACHINE_BY_NEED.items() if need in spec.needs}


def test_no_function_may_start_both_lanes_but_the_packer() -> None:
    """A function that starts the conversion never starts the batch lane too (resume vs the lane), except the
    packer: it decides per job, in one transaction, to pack its chunks into lanes or to let it go on-demand
    (the pool's window passed with too few records, or its deadline is near), never both for one chunk."""
    for spec in topology.FUNCTIONS:
        if spec.name != "batch_packer":
            assert not {"start_conversion", "start_batch_lane"} <= set(spec.needs), spec.name


def test_the_split_function_can_take_the_largest_upload_and_nothing_more(synth: Synth) -> None:
    """Issue 10 point 6: 500 MB / 5,000+ pages split in its own function, not behind the API's 29 s."""
    props = _function(synth, "job_split")["Properties"]
    largest_upload_mb = Settings().batchlane_max_file_mb
    assert props["MemorySize"] >= 3008 and props["Timeout"] == 900
    assert props["EphemeralStorage"]["Size"] >= largest_upload_mb + 256, "the upload is streamed to /tmp"
    granted = {a for st in _role_statements(synth, "job_split") for a in as_list(st["Action"])} - BASELINE
    assert granted == {
        "secretsmanager:GetSecretValue",
        "secretsmanager:DescribeSecret",
        "s3:GetObject",
        "s3:ListBucket",
        "s3:PutObject",
        "s3:AbortMultipartUpload",
        "s3:DeleteObject",  # issue 15: a failed split deletes the chunk PDFs it wrote (jobs/*/source/ only)
        "states:StartExecution",
        "events:PutEvents",
        "sts:AssumeRole",  # issue 21: a folder file is read as its owner (the folder-access role)
        "sts:TagSession",
    }
    deletes = [st for st in _role_statements(synth, "job_split") if "s3:DeleteObject" in as_list(st["Action"])]
    assert all(json.dumps(st["Resource"]).count("/jobs/*/source/*") == len(as_list(st["Resource"])) for st in deletes), deletes
    assert not [a for a in granted if a.startswith("bedrock:")]
    api = _function(synth, "api")["Properties"]
    assert api["Timeout"] <= 29, "API Gateway's integration timeout"
    # the API and job_create only open the job and start the intake: neither splits any more
    for name in ("api", "job_create"):
        assert "INTAKE_STATE_MACHINE_ARN" in _function(synth, name)["Properties"]["Environment"]["Variables"]


def test_secrets_never_travel_in_environment_variables(synth: Synth) -> None:
    secret_ids = set(synth.of_type("AWS::SecretsManager::Secret")) | set(synth.of_type("AWS::SecretsManager::SecretTargetAttachment"))
    for logical_id, fn in synth.of_type("AWS::Lambda::Function").items():
        env = fn["Properties"].get("Environment", {}).get("Variables", {})
        dumped = json.dumps(env).lower()
        assert "resolve:secretsmanager" not in dumped and "password" not in dumped, logical_id
        for key, value in env.items():
            if "SECRET" in key:  # an ARN to read at run time (the webhook signing secret's since issue 14)
                assert key in ("DATABASE_SECRET_ARN", "DATABASE_APP_SECRET_ARN", "WEBHOOK_SECRET_ARN"), (logical_id, key)
                assert isinstance(value, dict) and value.get("Ref") in secret_ids, (logical_id, value)


def test_environment_names_are_settings_fields(synth: Synth) -> None:
    """A typo in an env var name would silently fall back to a default in the handler."""
    fields = {name.upper() for name in Settings.model_fields}
    for spec in topology.FUNCTIONS:
        env = _function(synth, spec.name)["Properties"]["Environment"]["Variables"]
        unknown = {k for k in env if not k.startswith("POWERTOOLS_")} - fields
        assert not unknown, (spec.name, unknown)


def test_db_functions_run_in_the_vpc_and_the_database_admits_only_them(synth: Synth) -> None:
    lambda_sg = synth.logical_id("Database/LambdaSg")
    for spec in topology.FUNCTIONS:
        vpc = _function(synth, spec.name)["Properties"].get("VpcConfig")
        if {"db", "db_admin"} & set(spec.needs):
            assert vpc["SecurityGroupIds"] == [{"Fn::GetAtt": [lambda_sg, "GroupId"]}]
        else:
            assert vpc is None
    ingress = [r["Properties"] for r in synth.of_type("AWS::EC2::SecurityGroupIngress").values()]
    assert all(i["FromPort"] == i["ToPort"] for i in ingress)
    sources = {json.dumps(i["SourceSecurityGroupId"]) for i in ingress}
    assert json.dumps({"Fn::GetAtt": [lambda_sg, "GroupId"]}) in sources


def test_event_driven_functions_send_failed_runs_to_a_dlq(synth: Synth) -> None:
    configs = synth.of_type("AWS::Lambda::EventInvokeConfig")
    assert len(configs) == len(ASYNC_FUNCTIONS)
    for name in ASYNC_FUNCTIONS:
        props = _function(synth, name)["Properties"]
        assert "DeadLetterConfig" in props, name


def test_the_layer_is_the_built_folder(synth: Synth, layer_dir: Path) -> None:
    (layer,) = synth.of_type("AWS::Lambda::LayerVersion").values()
    assert layer["Properties"]["CompatibleArchitectures"] == ["arm64"]
    assert layer["Properties"]["CompatibleRuntimes"] == ["python3.12"]
    asset = synth.outdir / layer["Metadata"]["aws:asset:path"]
    assert (asset / "python" / "batchlane" / "contract.py").read_bytes() == Path(contract.__file__).read_bytes()
    assert not (asset / "python" / "batchlane" / "topology.py").exists()


@pytest.mark.parametrize("spec", topology.FUNCTIONS, ids=lambda s: s.name)
def test_traces_never_record_handler_responses(synth: Synth, spec: topology.FunctionSpec) -> None:
    """The api's responses carry presigned URLs (with session tokens): X-Ray must not keep them (issue 15)."""
    env = _function(synth, spec.name)["Properties"]["Environment"]["Variables"]
    assert env.get("POWERTOOLS_TRACER_CAPTURE_RESPONSE") == "false"


def test_split_and_assemble_have_room_for_pandoc(synth: Synth) -> None:
    """pandoc is unpacked to /tmp (174 MB) by the functions that run it (decision 0029): the split beside the
    largest upload, Assemble beside its renderings; Assemble's memory holds pandoc's heap bound too."""
    from batchlane.formats.render import RENDER_MEMORY_MB

    split = _function(synth, "job_split")["Properties"]
    assert split["EphemeralStorage"]["Size"] >= Settings().batchlane_max_file_mb + 174 + 256
    assemble = _function(synth, "assemble")["Properties"]
    assert assemble["EphemeralStorage"]["Size"] >= 174 + 512 and assemble["MemorySize"] >= RENDER_MEMORY_MB + 512
