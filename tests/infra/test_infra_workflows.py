"""Both state machines are the files in statemachines/, fully substituted, logged and traced."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from infra_testlib import Synth, as_list, camel, context_of_cdk_json, statements_of

from deployment import topology
from infra.workflows import PLACEHOLDER


def _machine(synth: Synth, spec: topology.StateMachineSpec) -> dict[str, Any]:
    return synth.resources[synth.logical_id(f"Workflows/{camel(spec.name)}")]


@pytest.mark.parametrize("spec", topology.STATE_MACHINES, ids=lambda s: s.name)
def test_definition_is_the_file_with_every_placeholder_filled(synth: Synth, spec: topology.StateMachineSpec) -> None:
    props = _machine(synth, spec)["Properties"]
    text, variables = props["DefinitionString"]["Fn::Sub"]
    assert text == topology.load_definition(spec)  # the file with its shared blocks written in, as the offline stack runs it
    placeholders = set(PLACEHOLDER.findall(text))
    assert placeholders <= set(variables), placeholders - set(variables)
    for fn in spec.functions:
        expected = {"Fn::GetAtt": [synth.logical_id(f"Compute/{camel(fn)}"), "Arn"]}
        assert variables[f"{fn}_arn"] == expected
    # Rendered as CloudFormation would: valid JSON with nothing left to substitute.
    rendered = PLACEHOLDER.sub(
        lambda m: f"arn:aws:lambda:us-east-1:123456789012:function:{m.group(1)}" if isinstance(variables[m.group(1)], dict) else variables[m.group(1)],
        text,
    )
    assert "${" not in rendered
    definition = json.loads(rendered)
    assert definition["States"]


@pytest.mark.parametrize("spec", topology.STATE_MACHINES, ids=lambda s: s.name)
def test_settings_default_to_the_topology_values(synth: Synth, spec: topology.StateMachineSpec) -> None:
    _, variables = _machine(synth, spec)["Properties"]["DefinitionString"]["Fn::Sub"]
    overrides = context_of_cdk_json().get("stateMachineSettings", {}).get(spec.name, {})
    for key, default in spec.settings.items():
        if key == "batch_wait_seconds":  # derived from the quotas: Bedrock timeout + grace
            quotas = context_of_cdk_json()["quotas"]
            assert variables[key] == str(int((quotas["timeoutHours"] + quotas["graceHours"]) * 3600))
        else:
            assert variables[key] == str(overrides.get(key, default))


@pytest.mark.parametrize("spec", topology.STATE_MACHINES, ids=lambda s: s.name)
def test_logs_all_transitions_without_execution_data_with_retention_and_traces(synth: Synth, spec: topology.StateMachineSpec) -> None:
    props = _machine(synth, spec)["Properties"]
    logging = props["LoggingConfiguration"]
    # ALL transitions, but no inputs/outputs: they carry task tokens (issue 15, "Leaks")
    assert logging["Level"] == "ALL" and logging["IncludeExecutionData"] is False
    group_id = logging["Destinations"][0]["CloudWatchLogsLogGroup"]["LogGroupArn"]["Fn::GetAtt"][0]
    assert synth.resources[group_id]["Properties"]["RetentionInDays"] > 0
    assert props["TracingConfiguration"] == {"Enabled": True}
    assert props["StateMachineType"] == "STANDARD"


@pytest.mark.parametrize("spec", topology.STATE_MACHINES, ids=lambda s: s.name)
def test_role_may_invoke_only_its_own_functions(synth: Synth, spec: topology.StateMachineSpec) -> None:
    role_id = synth.logical_id(f"Workflows/{camel(spec.name)}Role")
    statements = [s for p in synth.of_type("AWS::IAM::Policy").values() if {"Ref": role_id} in p["Properties"]["Roles"] for s in statements_of(p)]
    invoke = [s for s in statements if "lambda:InvokeFunction" in as_list(s["Action"])]
    targets = {json.dumps(r) for s in invoke for r in as_list(s["Resource"])}
    assert targets == {json.dumps({"Fn::GetAtt": [synth.logical_id(f"Compute/{camel(fn)}"), "Arn"]}) for fn in spec.functions}
    other = {a for s in statements for a in as_list(s["Action"])} - {"lambda:InvokeFunction"}
    assert all(a.startswith(("logs:", "xray:")) for a in other), other


def test_state_machine_names_match_the_arns_functions_are_given(synth: Synth) -> None:
    """Functions get constructed ARNs (no dependency cycle); they must name the real machines."""
    env_arns = set()
    for fn in synth.of_type("AWS::Lambda::Function").values():
        env = fn["Properties"].get("Environment", {}).get("Variables", {})
        for key in (
            "CONVERSION_STATE_MACHINE_ARN",
            "BATCH_LANE_STATE_MACHINE_ARN",
            "INTAKE_STATE_MACHINE_ARN",
            "WEBHOOK_DELIVERY_STATE_MACHINE_ARN",
            "FOLDER_JOB_STATE_MACHINE_ARN",
            "ESTIMATE_STATE_MACHINE_ARN",
        ):
            if key in env:
                env_arns.add(re.sub(r".*stateMachine:", "", env[key]["Fn::Join"][1][-1]))
    names = {m["Properties"]["StateMachineName"] for m in synth.of_type("AWS::StepFunctions::StateMachine").values()}
    assert env_arns == names
