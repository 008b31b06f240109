"""The synthesized policies are exactly what deployment.grants maps each function's needs to.

The offline stack enforces the same mapping on every handler call (batchlane_dev.local.iam),
so what the e2e tests prove offline is what the template grants on AWS.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from infra_testlib import Synth, as_list, camel, statements_of

from deployment import topology
from deployment.grants import CAPABILITY_GRANTS, grants_for

Entry = tuple[str, str, str, str]  # (action, resource kind, prefix, conditions as JSON)


def _conditions(block: dict[str, Any] | None) -> str:
    return json.dumps(
        {op: {k: sorted(v if isinstance(v, (list, tuple)) else [v]) for k, v in keys.items()} for op, keys in (block or {}).items()}, sort_keys=True
    )


def _kind(synth: Synth, resource: Any) -> tuple[str, str]:
    """Which resource kind of deployment.grants a template resource is (and its key prefix)."""
    bucket_arn = {"Fn::GetAtt": [synth.logical_id("Storage/Bucket"), "Arn"]}
    if resource == "*":
        return "any", ""
    if resource == bucket_arn:
        return "bucket", ""
    if resource == {"Fn::GetAtt": [synth.logical_id("BedrockBatch/ServiceRole"), "Arn"]}:
        return "bedrock_service_role", ""
    if resource == {"Fn::GetAtt": [synth.logical_id("Compute/FolderAccess/Role"), "Arn"]}:
        return "folder_access_role", ""
    parts = resource.get("Fn::Join", ["", []])[1] if isinstance(resource, dict) else []
    if len(parts) == 2 and parts[0] == bucket_arn and parts[1].startswith("/") and parts[1].endswith("*"):
        return "objects", parts[1][1:-1]
    if resource == {"Fn::GetAtt": [synth.logical_id("Webhooks/SecretKey"), "Arn"]}:
        return "webhook_key", ""
    if isinstance(resource, dict) and synth.resources.get(resource.get("Ref", ""), {}).get("Type", "").startswith("AWS::SecretsManager::"):
        ref = resource["Ref"]
        return ("webhook_secret" if "SigningSecret" in ref else "database_secret" if "AppSecret" in ref else "database_master_secret"), ""
    text = json.dumps(resource)
    if "s3:::customer-docs/contracts/*" in text:  # conftest.FOLDER_SOURCE
        return "folder_objects", ""
    if text.endswith('s3:::customer-docs"]]}'):
        return "folder_buckets", ""
    for marker, kind in (
        (":stateMachine:Batchlane-folder-job", "folder_job_state_machine"),
        (":stateMachine:Batchlane-estimate", "estimate_state_machine"),
        ("foundation-model/", "models"),
        ("inference-profile/", "models"),
        (":model-invocation-job/*", "batch_jobs"),
        (":stateMachine:Batchlane-conversion", "conversion_state_machine"),
        (":stateMachine:Batchlane-batch-lane", "batch_lane_state_machine"),
        (":stateMachine:Batchlane-intake", "intake_state_machine"),
        (":stateMachine:Batchlane-webhook-delivery", "webhook_delivery_state_machine"),
        (":event-bus/default", "default_event_bus"),
        (":execution:Batchlane-", "workflow_executions"),  # executions of the conversion, intake and folder-job machines
    ):
        if marker in text:
            return kind, ""
    raise AssertionError(f"a granted resource no capability maps to: {text}")


def _granted(synth: Synth, name: str) -> set[Entry]:
    """Every statement of the function's role (inline and its own managed policies), baseline left out."""
    role_id = synth.logical_id(f"Compute/{camel(name)}Role")
    statements = [st for p in synth.of_type("AWS::IAM::Policy").values() if {"Ref": role_id} in p["Properties"]["Roles"] for st in statements_of(p)]
    for arn in synth.resources[role_id]["Properties"].get("ManagedPolicyArns", []):
        if isinstance(arn, dict) and "Ref" in arn:
            statements += statements_of(synth.resources[arn["Ref"]])
    baseline = {
        json.dumps({"Fn::GetAtt": [synth.logical_id(f"Compute/{camel(name)}Logs"), "Arn"]}),  # its own log group
        json.dumps({"Fn::GetAtt": [synth.logical_id("Compute/AsyncFailuresDlq"), "Arn"]}),  # its dead-letter queue
    }
    entries: set[Entry] = set()
    for st in statements:
        if json.dumps(st["Resource"]) in baseline or all(a.startswith("xray:") for a in as_list(st["Action"])):
            continue
        for resource in as_list(st["Resource"]):
            kind, prefix = _kind(synth, resource)
            entries |= {(action, kind, prefix, _conditions(st.get("Condition"))) for action in as_list(st["Action"])}
    return entries


def _mapped(needs: tuple[str, ...]) -> set[Entry]:
    return {
        (action, kind, grant.prefix if kind == "objects" else "", _conditions({op: dict(v) for op, v in grant.all_conditions().items()}))
        for grant in grants_for(needs)
        for action in grant.actions
        for kind in grant.resources
    }


@pytest.mark.parametrize("spec", topology.FUNCTIONS, ids=lambda s: s.name)
def test_the_synthesized_policies_equal_the_capability_mapping(synth: Synth, spec: topology.FunctionSpec) -> None:
    assert _granted(synth, spec.name) == _mapped(spec.needs)


def test_every_capability_the_topology_can_name_is_mapped() -> None:
    assert set(topology.Capability.__args__) == set(CAPABILITY_GRANTS)  # type: ignore[attr-defined]


def test_job_split_may_write_the_chunk_pdfs_it_splits() -> None:
    """The grant the offline IAM uncovered (job_create split in-process then; job_split does now): chunk sources under jobs/."""
    assert ("s3:PutObject", "objects", "jobs/", "{}") in _mapped(topology.function("job_split").needs)


# Where each function's code writes to S3 (read from the call sites: filejob/source.py store_chunk_sources,
# filejob/chunk.py, filejob/assemble.py, filejob/retry.py, batch/prepare.py, batch/collect.py,
# aws/s3.py S3Uploads, the presigned POST). The offline IAM hook refuses any other write in the e2e tests.
S3_WRITES = {
    "job_split": {"jobs/"},  # chunk sources
    "chunk_processor": {"jobs/"},  # chunk results and partial results
    "assemble": {"jobs/"},  # the Markdown
    "batch_prepare": {"batch/"},  # JSONL shards, prepare summaries, the manifest
    "batch_collect": {"batch/"},  # accepted batch results
    "batch_sweeper": {"batch/"},  # collects orphans: accepted batch results
    "api": {"uploads/", "jobs/"},  # the upload's presigned POST; the Markdown kept before a retry
    # Writes nothing itself, but the caller policy it holds is also exported for application roles that
    # submit their own jobs, which write their JSONL input under batch/ (infra/iam.py).
    "batch_submit": {"batch/"},
}


@pytest.mark.parametrize("name", sorted(S3_WRITES))
def test_every_s3_write_in_the_code_has_its_grant(synth: Synth, name: str) -> None:
    granted = {prefix for action, kind, prefix, _ in _granted(synth, name) if action == "s3:PutObject" and kind == "objects"}
    assert S3_WRITES[name] <= granted, (name, granted)


@pytest.mark.parametrize("spec", topology.FUNCTIONS, ids=lambda s: s.name)
def test_no_function_may_write_the_whole_bucket_or_a_prefix_it_does_not_write(synth: Synth, spec: topology.FunctionSpec) -> None:
    granted = {prefix for action, kind, prefix, _ in _granted(synth, spec.name) if action in ("s3:PutObject", "s3:GetObject") and kind == "objects"}
    assert "" not in granted, f"{spec.name} is granted S3 objects on the whole bucket"
    written = {prefix for action, kind, prefix, _ in _granted(synth, spec.name) if action == "s3:PutObject" and kind == "objects"}
    assert written <= S3_WRITES.get(spec.name, set()), (spec.name, written)


def test_the_api_may_only_stop_batch_jobs_never_create_them_or_pass_the_role(synth: Synth) -> None:
    """Cancel and process now stop a Bedrock job; the whole caller policy (create, PassRole) was more (issue 15)."""
    granted = {action for action, *_ in _granted(synth, "api")}
    assert {a for a in granted if a.startswith(("bedrock:", "iam:"))} == {"bedrock:StopModelInvocationJob"}


@pytest.mark.parametrize("spec", topology.FUNCTIONS, ids=lambda s: s.name)
def test_the_api_deletes_what_a_deleted_file_leaves_and_nothing_else_deletes_more(synth: Synth, spec: topology.FunctionSpec) -> None:
    """No role had s3:DeleteObject, so a deleted file's objects stayed (issue 15): the api deletes exactly these prefixes;
    only a failed split may also remove the chunk PDFs it wrote (jobs/*/source/, harden-pdf), prepare the
    records of a member that left a lane before it was submitted, and collect a lane's records once it is
    billed (batch/*/input/, issue 13)."""
    deletable = {prefix for action, kind, prefix, _ in _granted(synth, spec.name) if action == "s3:DeleteObject" and kind == "objects"}
    if spec.name == "api":
        assert deletable == {"uploads/", "jobs/", "batch/"}
    else:
        allowed = {
            "job_split": {"jobs/*/source/"},
            "batch_prepare": {"batch/*/input/"},
            "batch_collect": {"batch/*/input/"},
            "batch_sweeper": {"batch/*/input/", "batch/*/prepare/", "batch/*/output/"},
        }
        assert deletable <= allowed.get(spec.name, set()), (spec.name, deletable)


def test_folder_jobs_reach_only_the_configured_folder_sources(synth: Synth) -> None:
    """Least privilege over users' buckets: no function holds a grant of its own on them (issue 40: the API's dry run
    listed and sampled with the api's role; its estimate worker now reads as the owner, through the folder-access role)."""
    for spec in topology.FUNCTIONS:
        assert not any(kind in ("folder_objects", "folder_buckets") for _, kind, _, _ in _granted(synth, spec.name)), spec.name
    assert ("states:StartExecution", "folder_job_state_machine", "", "{}") in _granted(synth, "api")
    assert ("states:StartExecution", "estimate_state_machine", "", "{}") in _granted(synth, "api")
    assert "estimate" in FOLDER_FUNCTIONS


FOLDER_FUNCTIONS = sorted(spec.name for spec in topology.FUNCTIONS if "folder_access" in spec.needs)


def test_folder_functions_reach_users_buckets_only_as_the_jobs_owner(synth: Synth) -> None:
    """Issue 21: the folder functions hold no S3 grant on users' buckets; they assume the folder-access role with an
    owner tag, whose policy names ${aws:PrincipalTag/owner} for {owner} and which trusts only them."""
    assert set(FOLDER_FUNCTIONS) >= {"folder_enumerate", "folder_advance", "folder_finish", "job_split"}
    role_id = synth.logical_id("Compute/FolderAccess/Role")
    for name in FOLDER_FUNCTIONS:
        granted = _granted(synth, name)
        assert not any(kind in ("folder_objects", "folder_buckets") for _, kind, _, _ in granted), name
        assert {("sts:AssumeRole", "folder_access_role", "", "{}"), ("sts:TagSession", "folder_access_role", "", "{}")} <= granted, name
        env = synth.resources[synth.logical_id(f"Compute/{camel(name)}")]["Properties"]["Environment"]["Variables"]
        assert env["FOLDER_ACCESS_ROLE_ARN"] == {"Fn::GetAtt": [role_id, "Arn"]}

    trust = synth.resources[role_id]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert len(trust) == 1 and sorted(as_list(trust[0]["Action"])) == ["sts:AssumeRole", "sts:TagSession"]
    trusted = sorted(p["Fn::GetAtt"][0] for p in as_list(trust[0]["Principal"]["AWS"]))
    assert trusted == sorted(synth.logical_id(f"Compute/{camel(n)}Role") for n in FOLDER_FUNCTIONS)
    assert trust[0]["Condition"] == {"ForAllValues:StringEquals": {"aws:TagKeys": ["owner"]}}

    role_policy = [st for p in synth.of_type("AWS::IAM::Policy").values() if {"Ref": role_id} in p["Properties"]["Roles"] for st in statements_of(p)]
    text = json.dumps(role_policy)
    assert "customer-docs/contracts/*" in text  # conftest.FOLDER_SOURCE (no {owner}): the whole prefix
    listing = next(st for st in role_policy if st["Action"] == "s3:ListBucket")
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["contracts/*"]}}
    assert not any(a in text for a in ("s3:DeleteObject", "s3:*", '"*"'))


def test_an_owner_placeholder_becomes_the_principal_tag_in_the_role_policy() -> None:
    """``users/{owner}/`` is granted as users/${aws:PrincipalTag/owner}/*: each session reaches its own home only."""
    from deployment.grants import folder_access_grants, owner_folder_resource

    assert owner_folder_resource("docs/users/{owner}/") == "docs/users/${aws:PrincipalTag/owner}/"
    assert owner_folder_resource("team-a@docs/teams/a/") == "docs/teams/a/"
    listing = next(g for g in folder_access_grants(["docs/users/{owner}/"]) if g.actions == ("s3:ListBucket",))
    assert listing.conditions == {"StringLike": {"s3:prefix": ("users/${aws:PrincipalTag/owner}/*",)}}
