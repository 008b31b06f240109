"""The dead-letter queue, written once: encrypted with the stack's one DLQ key, TLS only, 14 days, and no DLQ of
its own (cdk-nag told why).

The key is a customer-managed KMS key (rotated yearly) rather than SSE-SQS: EventBridge may send to an encrypted
queue only when the key's policy lets ``events.amazonaws.com`` use it (EventBridge, "Using dead-letter queues":
an AWS managed key cannot grant that), and a failed event names jobs and owners, so who may read it is the
key's decision too. One key for every DLQ of the stack (about $1 a month).
"""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.nag import acknowledge

KEY_ID = "DeadLetterKey"


def dead_letter_key(scope: Construct) -> kms.Key:
    """The stack's one key for its dead-letter queues (made on first use)."""
    stack = Stack.of(scope)
    found = stack.node.try_find_child(KEY_ID)
    if isinstance(found, kms.Key):
        return found
    key = kms.Key(stack, KEY_ID, description="batchlane dead-letter queues (EventBridge targets, asynchronous Lambda failures)", enable_key_rotation=True)
    key.add_to_resource_policy(
        iam.PolicyStatement(
            sid="EventBridgeSendsToTheDeadLetterQueues",
            principals=[iam.ServicePrincipal("events.amazonaws.com")],
            actions=["kms:Decrypt", "kms:GenerateDataKey"],
            resources=["*"],
            conditions={"StringEquals": {"aws:SourceAccount": stack.account}},
        )
    )
    return key


def dead_letter_queue(scope: Construct, construct_id: str, *, holds: str) -> sqs.Queue:
    """A DLQ for ``holds`` (e.g. "the event-driven Lambdas"); the monitoring alarms on its depth."""
    queue = sqs.Queue(
        scope,
        construct_id,
        encryption=sqs.QueueEncryption.KMS,
        encryption_master_key=dead_letter_key(scope),
        enforce_ssl=True,
        retention_period=Duration.days(14),
    )
    acknowledge(queue, "AwsSolutions-SQS3", f"This queue IS the dead-letter queue of {holds}; a DLQ of a DLQ would hide failures.")
    return queue
