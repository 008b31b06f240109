"""The dead-letter queue, written once: encrypted, TLS only, 14 days, and no DLQ of its own (cdk-nag told why)."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.nag import acknowledge


def dead_letter_queue(scope: Construct, construct_id: str, *, holds: str) -> sqs.Queue:
    """A DLQ for ``holds`` (e.g. "the event-driven Lambdas"); the monitoring alarms on its depth."""
    queue = sqs.Queue(
        scope,
        construct_id,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        retention_period=Duration.days(14),
    )
    acknowledge(queue, "AwsSolutions-SQS3", f"This queue IS the dead-letter queue of {holds}; a DLQ of a DLQ would hide failures.")
    return queue
