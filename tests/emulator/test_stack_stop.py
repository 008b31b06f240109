"""A stopped offline stack leaves nothing running into the next one started in the same process."""

from __future__ import annotations

import json

import boto3

from batchlane_dev.local.jobs import wait_until

WAIT = json.dumps({"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 600, "End": True}}})


def test_executions_still_running_are_stopped_with_the_stack(stack_factory):
    # moto runs each execution in a thread of this process that its server's reset does not end: a
    # job's workflow left running would call the next stack's functions against that stack's database
    stack = stack_factory(schedules=False)
    sfn = boto3.client("stepfunctions", endpoint_url=stack.env["AWS_ENDPOINT_URL"], region_name="us-east-1")
    machine = sfn.create_state_machine(name="left-running", definition=WAIT, roleArn="arn:aws:iam::123456789012:role/x")["stateMachineArn"]
    running = sfn.start_execution(stateMachineArn=machine)["executionArn"]
    assert sfn.describe_execution(executionArn=running)["status"] == "RUNNING"
    stack._stop_executions()
    # (the execution's thread sees the stop at its next step: moto stops executions asynchronously)
    wait_until(lambda: sfn.describe_execution(executionArn=running)["status"] == "ABORTED", what="the execution aborted")
