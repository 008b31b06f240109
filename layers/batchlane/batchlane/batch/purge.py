"""A deleted member's page content leaves a pooled lane once no Bedrock job reads it (issue 21, point 6).

A lane's files are per member (``<tag>-`` is the member's record-id prefix): its JSONL shards
(``input/<tag>-chunk-…``), what prepare wrote for it (``prepare/<tag>-…``) and what Bedrock wrote for
those shards (``output/<bedrockJobId>/<tag>-….jsonl.out``). Removing them touches no other member.
The lane's own ``manifest.json`` and ``manifest.json.out`` (counts, record ids and hashes, no page
content) stay until the bucket's lifecycle (docs/operations.md, "Deleting").
"""

from __future__ import annotations

import posixpath

from batchlane import keys
from batchlane.observability import logger
from batchlane.ports import Services
from batchlane.rows import PurgeTarget


def member_keys(store: object, lane_id: str, tag: str) -> list[str]:
    """Every object of the lane that holds this member's pages or answers, and nothing of another member."""
    list_keys = store.list_keys  # type: ignore[attr-defined]
    base = f"{keys.BATCH_PREFIX}{lane_id}/"
    own = [*list_keys(f"{base}input/{tag}-"), *list_keys(f"{base}prepare/{tag}-")]
    return own + [k for k in list_keys(keys.batch_output_prefix(lane_id)) if posixpath.basename(k).startswith(f"{tag}-")]


def purge_members(svc: Services, targets: list[PurgeTarget]) -> int:
    """Delete each target's lane files (a refusal raises: it is tried again), then mark it purged; objects deleted."""
    deleted = 0
    for target in targets:
        doomed = member_keys(svc.store, target.lane_id, target.member_tag)
        svc.store.delete_keys(doomed)
        svc.uow().lanes.mark_purged(target)
        deleted += len(doomed)
        logger.info("lane member purged", lane_id=target.lane_id, job_id=target.job_id, member=target.member_tag, objects=len(doomed))
    return deleted


def purge_deleted_members(svc: Services, *, limit: int = 200) -> int:
    """The sweeper's turn: members of deleted files whose lane has closed since the delete; members purged."""
    targets = svc.uow().lanes.members_to_purge(limit=limit)
    purge_members(svc, targets)
    return len(targets)
