"""What the running code and the deployment (deployment/topology.py) must agree on, and all the layer needs of it.

Event names on the bus, the session tag the folder functions assume their role with, and the counts
the state machine files carry that the chunk processor also reads. The deployment description itself
(functions, grants, state machines) stays out of the layer: only infra, devtools and tests read it.
"""

from __future__ import annotations

EVENT_SOURCE = "batchlane"
JOB_PARKED_DETAIL_TYPE = "Conversion Job Parked"
# The public event every job state change a user cares about puts on the bus (docs/operations.md).
JOB_STATE_CHANGE_DETAIL_TYPE = "Conversion Job State Change"
# A folder job's own status changes, on the same bus, delivered by the same webhooks.
FOLDER_JOB_STATE_CHANGE_DETAIL_TYPE = "Folder Job State Change"

OWNER_TAG = "owner"  # the session tag the folder functions set to the job's owner (a Cognito sub)

# The KMS encryption context an owner's webhook signing secret is sealed under (aws/kms.py); the grants require both keys.
WEBHOOK_OWNER_CONTEXT = "batchlane-owner"
WEBHOOK_PURPOSE_CONTEXT = "batchlane-purpose"
WEBHOOK_PURPOSE = "webhook-signing"

# Counts the Python code also reads: conversion.asl.json gets them from here (deployment/topology.py), so the two cannot disagree.
CHUNK_RETRY_LATER_MAX_ATTEMPTS = 2  # ProcessChunk retries a throttled chunk twice (3 attempts in all)
CHUNK_CONTINUE_MAX_ATTEMPTS = 20  # a chunk that ran out of time continues in at most 20 fresh invocations
CHUNKS_IN_FLIGHT = 8  # ProcessChunks' MaxConcurrency: a job's chunks running at once (what its hold carries at a time)
