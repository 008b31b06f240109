"""chunk_processor: convert one chunk (primed batch results first, on-demand otherwise).

Raises ChunkRetryLater (the state machine retries it with backoff) when pages hit
throttling past the client's own retries.
"""

from typing import Any

from batchlane.conversion.chunk import process_chunk
from batchlane.handlers import ChunkRef, lambda_handler, parse
from batchlane.runtime import services


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    ref = parse(event, ChunkRef)
    worker = getattr(context, "aws_request_id", None)
    return process_chunk(services(), str(ref.jobId), ref.chunkIndex, worker_id=worker)
