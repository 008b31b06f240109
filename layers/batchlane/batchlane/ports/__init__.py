"""What the use cases need from the outside, as Protocols, one module per concern; every name is re-exported here.

Adapters translate their errors into the errors here, once (boto3 in ``aws/``, pg8000 in ``db/``); use cases never
see a ``ClientError``. One repository per aggregate (cosmicpython's shape), reached through the ``UnitOfWork``:
the PostgreSQL adapters in ``db/`` (``db/uow.py``), the in-memory fakes in tests/fakes, and tests/contract runs the
same contract tests on both, so the fake cannot drift from the SQL. Repositories return typed rows (frozen
dataclasses in ``batchlane.rows``), never dicts. ``runtime.py`` is the one place that builds the adapters (docs/architecture.md, "Ports
and adapters").
"""

from batchlane.ports.bedrock import (
    BatchJobAlreadyEnded,
    BatchJobNotFound,
    BatchJobRef,
    BatchJobRejected,
    BatchJobs,
    BatchJobsBusy,
    BatchJobsError,
    BatchJobSpec,
    ModelCallFailed,
    ModelReadTimeout,
    ModelResponse,
    ModelRuntime,
)
from batchlane.ports.caps import CapCounts, RateLimits
from batchlane.ports.estimates import EstimateRepository
from batchlane.ports.folder_jobs import FolderJobRepository
from batchlane.ports.jobs import JobRepository
from batchlane.ports.lanes import LaneRepository
from batchlane.ports.model_probes import PageFormRepository, ServiceTierRepository
from batchlane.ports.money import BudgetRepository, LedgerRepository
from batchlane.ports.ondemand import Aborted, Admission, ChunkAdmissions, Lease, LeaseWaitTimeout, Limiter, PageThreadDatabase
from batchlane.ports.reads import ReadModel
from batchlane.ports.retries import RetryRepository
from batchlane.ports.services import Services
from batchlane.ports.storage import (
    DOWNLOAD_URL_TTL_S,
    PDF_CONTENT_TYPE,
    UPLOAD_URL_TTL_S,
    Downloads,
    FolderBuckets,
    ListedPage,
    ObjectHead,
    ObjectStore,
    ObjectStoreError,
    StoredObject,
    Uploads,
)
from batchlane.ports.uow import UniqueViolation, UnitOfWork
from batchlane.ports.webhooks import DeliveryRepository, SecretCipher, SigningSecret, WebhookSecretRepository
from batchlane.ports.workflows import EventBus, Workflows
