"""The records the repositories store and return: one frozen dataclass per row (or per read of several), one module per
concern, named as the port that returns it (``batchlane.ports``); every name is re-exported here.

A record holds data and, where PostgreSQL hands back a dict, the ``of`` that reads it; no behaviour. The domain does
not import them (it takes values); the use cases, the adapters and the fakes do.
"""

from batchlane.rows.estimates import Estimate
from batchlane.rows.folder_jobs import EndedConversion, FolderCounts, FolderFile, FolderJob, NewFolderFile
from batchlane.rows.jobs import ChunkRow, FileRow, JobRow
from batchlane.rows.lanes import Lane, LaneOutcome, Member, PooledChunk, PoolRead, PurgeTarget
from batchlane.rows.model_probes import PageForm
from batchlane.rows.money import BudgetOverride, Hold, JobMoney, LedgerRow
from batchlane.rows.reads import FileJob, HoldView, JobLanes, JobProgress, ModelSpend, OwnerFile
from batchlane.rows.retries import JobRetry
from batchlane.rows.webhooks import Delivery, StoredSecret
