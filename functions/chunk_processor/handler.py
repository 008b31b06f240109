"""chunk_processor: convert one chunk (primed batch results first, on-demand otherwise).

Runs only once admitted for its owner (ChunkNotAdmitted otherwise: retried later by the state machine,
filejob/admission.py). Raises ChunkRetryLater (the state machine retries it with backoff) when pages hit
throttling past the client's own retries, and ChunkContinue (retried at once) when the
invocation nears its timeout with pages left: the deadline is the Lambda's remaining
time less BATCHLANE_CHUNK_STOP_MARGIN_S.
"""

import time
from typing import Any

from batchlane.filejob.chunk import process_admitted_chunk
from batchlane.handlers import ChunkRef, lambda_handler, parse
from batchlane.runtime import services


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    ref = parse(event, ChunkRef)
    worker = getattr(context, "aws_request_id", None)
    svc = services()
    deadline = time.monotonic() + context.get_remaining_time_in_millis() / 1000 - svc.settings.batchlane_chunk_stop_margin_s
    ttl_s = context.get_remaining_time_in_millis() / 1000 + 60
    return process_admitted_chunk(svc, str(ref.jobId), ref.chunkIndex, worker_id=worker, deadline=deadline, ttl_s=ttl_s)
