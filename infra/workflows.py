"""The state machines, loaded from ``statemachines/<name>.asl.json`` (through ``topology.load_definition``) with substitutions.

Why an inline ``Fn::Sub`` and fixed names: docs/deploy.md "Module notes".
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from aws_cdk import ArnFormat, Fn, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from deployment import topology
from infra.config import InfraConfig
from infra.nag import acknowledge

PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_]+)\}")
LAMBDA_INTEGRATIONS = frozenset({"arn:aws:states:::lambda:invoke", "arn:aws:states:::lambda:invoke.waitForTaskToken"})


def state_machine_name(stack_name: str, machine: str) -> str:
    return f"{stack_name}-{machine.replace('_', '-')}"


def state_machine_arn(stack: Stack, stack_name: str, machine: str) -> str:
    return stack.format_arn(
        service="states",
        resource="stateMachine",
        resource_name=state_machine_name(stack_name, machine),
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )


def substitution_keys(spec: topology.StateMachineSpec) -> set[str]:
    return {f"{fn}_arn" for fn in spec.functions} | set(spec.settings)


def _task_resources(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if node.get("Type") == "Task" and isinstance(node.get("Resource"), str):
            yield node["Resource"]
        for value in node.values():
            yield from _task_resources(value)
    elif isinstance(node, list):
        for value in node:
            yield from _task_resources(value)


def check_definition(spec: topology.StateMachineSpec) -> str:
    """The file's text, after checking every placeholder and Task resource is one we handle."""
    if not spec.path.is_file():
        raise FileNotFoundError(f"{spec.path} is missing: topology names state machine {spec.name!r}")
    text = topology.load_definition(spec)
    unknown = set(PLACEHOLDER.findall(text)) - substitution_keys(spec)
    if unknown:
        raise ValueError(f"{spec.path.name}: placeholders with no value: {sorted(unknown)}")
    parsed = json.loads(PLACEHOLDER.sub("0", text))  # the file must be JSON once substituted
    for resource in _task_resources(parsed):
        if resource != "0" and resource not in LAMBDA_INTEGRATIONS:
            raise ValueError(
                f"{spec.path.name}: Task resource {resource!r} needs a grant that infra/workflows.py does not give; "
                "add it there (least privilege) before using it"
            )
    if '"DISTRIBUTED"' in text:
        raise ValueError(f"{spec.path.name}: a distributed Map needs states:StartExecution grants not given here")
    return text


class Workflows(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: InfraConfig,
        functions: dict[str, lambda_.Function],
    ) -> None:
        super().__init__(scope, construct_id)
        self.machines: dict[str, sfn.StateMachine] = {}
        for spec in topology.STATE_MACHINES:
            text = check_definition(spec)
            construct_id_ = "".join(part.title() for part in spec.name.split("_"))
            name = state_machine_name(config.stack_name, spec.name)
            log_group = logs.LogGroup(
                self,
                f"{construct_id_}Logs",
                log_group_name=f"/aws/vendedlogs/states/{name}",
                retention=config.log_retention,
                removal_policy=RemovalPolicy.DESTROY,
            )
            role = iam.Role(self, f"{construct_id_}Role", assumed_by=iam.ServicePrincipal("states.amazonaws.com"))
            role.add_to_policy(
                iam.PolicyStatement(
                    actions=["lambda:InvokeFunction"],
                    resources=[functions[fn].function_arn for fn in spec.functions],
                )
            )
            substitutions = {f"{fn}_arn": functions[fn].function_arn for fn in spec.functions}
            substitutions.update(config.settings_for(spec))
            machine = sfn.StateMachine(
                self,
                construct_id_,
                state_machine_name=name,
                state_machine_type=sfn.StateMachineType.STANDARD,
                # Inline Fn::Sub of the file's exact text (see the module docstring for why not from_file).
                definition_body=sfn.DefinitionBody.from_string(Fn.sub(text, substitutions)),
                role=role,
                # Every transition is logged, but not its input and output: they carry task tokens
                # (the batch wait's callback token) that anyone reading the logs could use to end the wait.
                logs=sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ALL, include_execution_data=False),
                tracing_enabled=True,
                comment=spec.description,
            )
            acknowledge(
                role,
                "AwsSolutions-IAM5[Resource::*]",
                "Step Functions log delivery (logs:CreateLogDelivery etc.) and X-Ray trace submission support no "
                "resource-level permissions; Lambda invocation is granted on this machine's functions only.",
            )
            self.machines[spec.name] = machine
