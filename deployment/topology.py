"""The deployment's shape, written once and read by both the CDK app and the offline stack.

Every Lambda in ``functions/``, every state machine in ``statemachines/``, every
EventBridge rule and schedule is listed here. ``infra/`` turns this into CloudFormation;
``batchlane_dev.local`` "deploys" the same list into the emulated services. A test checks
that this list and the folders agree, so neither side can drift from the other.

``needs`` names the capabilities a function uses; ``deployment.grants`` says which IAM
actions on which resources each one is. The CDK app grants exactly those (least privilege)
and the offline stack refuses every other call a handler makes, as AWS would.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from batchlane.contract import (
    CHUNK_CONTINUE_MAX_ATTEMPTS,
    CHUNK_RETRY_LATER_MAX_ATTEMPTS,
    CHUNKS_IN_FLIGHT,
    EVENT_SOURCE,
    FOLDER_JOB_STATE_CHANGE_DETAIL_TYPE,
    JOB_PARKED_DETAIL_TYPE,
    JOB_STATE_CHANGE_DETAIL_TYPE,
)

Capability = Literal[
    "db",  # PostgreSQL as the application role batchlane_app (its secret + network): DML only
    "db_admin",  # PostgreSQL as the master user (master secret + network) and the app secret to set: migrate only
    "s3_read_uploads",  # read users' uploads (uploads/)
    "s3_read_jobs",  # read chunk sources, chunk results, the Markdown (jobs/)
    "s3_read_batch",  # read batch inputs, outputs, results (batch/)
    "s3_write_uploads",  # sign the upload's presigned POST (uploads/)
    "s3_write_jobs",  # write chunk sources, chunk results, the Markdown (jobs/)
    "s3_write_batch",  # write batch inputs and results (batch/)
    "s3_delete_chunk_sources",  # delete the chunk PDFs a failed split wrote (jobs/*/source/ only)
    "s3_delete_batch_inputs",  # delete the records of a member that left a lane before submit (batch/*/input/ only)
    "s3_delete_batch_members",  # delete a deleted file's lane files once the lane closed (batch/*/input|prepare|output/)
    "s3_delete",  # delete what a deleted file left: uploads/, jobs/, batch/ objects
    "bedrock_runtime",  # bedrock:InvokeModel on the configured models (InvokeModel with the Anthropic Messages body)
    "bedrock_batch",  # Create/Get/Stop/List model invocation jobs (+ iam:PassRole to Bedrock)
    "stop_batch_jobs",  # bedrock:StopModelInvocationJob only (cancel, process now)
    "inspect_batch_jobs",  # bedrock:GetModelInvocationJob and ListModelInvocationJobs (find, read a job's status)
    "start_conversion",  # states:StartExecution on the conversion state machine
    "start_batch_lane",  # states:StartExecution on the batch-lane state machine
    "start_intake",  # states:StartExecution on the intake state machine (a new job's split)
    "inspect_workflows",  # states:DescribeExecution on conversion, intake and folder-job executions (recovery)
    "task_response",  # states:SendTaskSuccess/Failure/Heartbeat on the batch-lane machine
    "publish_events",  # events:PutEvents on the default bus (job parked, public job state changes)
    "start_webhook_delivery",  # states:StartExecution on the webhook-delivery state machine
    "webhook_secret_read",  # secretsmanager:GetSecretValue on the deployment's signing secret (signs beside the owner's during the migration)
    "webhook_secret_seal",  # kms:Encrypt with the webhook key, an owner's encryption context only (create, rotate an owner's secret)
    "webhook_secret_open",  # kms:Decrypt with the webhook key, an owner's encryption context only (sign an owner's delivery)
    "cloudwatch_metrics",  # Powertools metrics (EMF through logs: no extra grant in AWS)
    "folder_read",  # list and read the configured folder sources of users' buckets (cdk.json folderSources)
    "folder_write",  # write Markdown, manifest and report into those folder sources
    "start_folder_job",  # states:StartExecution on the folder-job state machine
    "folder_access",  # assume the folder-access role tagged with the job's owner: S3 only under that owner's folder sources
    "start_estimate",  # states:StartExecution on the estimate state machine (a dry run's worker)
]

REPO_ROOT = Path(__file__).resolve().parents[1]
FUNCTIONS_DIR = REPO_ROOT / "functions"
STATEMACHINES_DIR = REPO_ROOT / "statemachines"

BEDROCK_EVENT_SOURCE = "aws.bedrock"
BEDROCK_BATCH_DETAIL_TYPE = "Batch Inference Job State Change"


@dataclass(frozen=True)
class FunctionSpec:
    name: str  # folder under functions/, and the logical name everywhere
    description: str
    needs: tuple[Capability, ...]
    timeout_s: int = 60
    memory_mb: int = 512
    ephemeral_storage_mb: int = 512  # /tmp; Lambda's default (512) up to 10,240


@dataclass(frozen=True)
class StateMachineSpec:
    name: str  # statemachines/<name>.asl.json
    description: str
    functions: tuple[str, ...]  # substituted as ${<function>_arn}
    # Other ${...} substitutions with their AWS defaults. They are numbers (intervals,
    # concurrency) the offline stack shrinks, so retries don't sleep in real time there.
    settings: dict[str, str] = field(default_factory=dict)

    @property
    def path(self) -> Path:
        return STATEMACHINES_DIR / f"{self.name}.asl.json"


@dataclass(frozen=True)
class RuleSpec:
    name: str
    description: str
    source: str
    detail_type: str
    target: str  # function name


@dataclass(frozen=True)
class ScheduleSpec:
    name: str
    description: str
    every_minutes: int
    target: str  # function name


FUNCTIONS: tuple[FunctionSpec, ...] = (
    FunctionSpec("migrate", "Applies the SQL migrations, keeps the application role (CloudFormation custom resource).", ("db_admin",), 300),
    FunctionSpec(
        "job_create",
        "Opens a conversion job (status splitting) for an uploaded PDF and starts its intake; answers at once.",
        ("db", "s3_read_uploads", "start_intake", "publish_events"),
    ),
    # The largest upload (BATCHLANE_MAX_FILE_MB 500, 10,000 pages) streams to /tmp (hence 1 GB
    # of it) and is split there: pypdf holds the page tree and one chunk; 3,008 MB also buys the
    # CPU (memory scales vCPUs) to split 5,000 real pages well inside 900 s (docs/benchmarks.md:
    # ~90 pages/s on a real book).
    FunctionSpec(
        "job_split",
        "Intake: streams the upload to /tmp, validates and splits it into chunk PDFs, writes the chunk rows, parks or starts the job.",
        (
            "db",
            "s3_read_uploads",
            "s3_write_jobs",
            "s3_delete_chunk_sources",
            "start_conversion",
            "publish_events",
            "folder_access",
        ),  # folder files are read where they lie, as their owner
        900,
        3008,
        # the upload (BATCHLANE_MAX_FILE_MB) + a picture's PDF or a document's figures + pandoc unpacked (174 MB; decision 0029)
        2048,
    ),
    FunctionSpec("conversion_start", "Marks a job processing and lists its chunks.", ("db",)),
    FunctionSpec(
        "chunk_processor",
        "Converts one chunk's pages (primed batch results first, on-demand otherwise).",
        ("db", "s3_read_jobs", "s3_read_batch", "s3_write_jobs", "bedrock_runtime", "cloudwatch_metrics"),
        900,
        1536,
    ),
    FunctionSpec(
        "assemble",
        "Joins chunk results in page order into the Markdown file, and renders the DOCX / HTML / per-block JSON asked for.",
        ("db", "s3_read_jobs", "s3_write_jobs"),
        300,
        2048,  # pandoc's heap bound for a rendering (formats/render.py RENDER_MEMORY_MB) beside the process
        1024,  # pandoc unpacked to /tmp (174 MB) and the renderings as they are written
    ),
    FunctionSpec("settle", "Writes the job's totals, settles the funds hold, ends the job (and says so on the bus).", ("db", "publish_events")),
    FunctionSpec(
        "batch_packer",
        "Packs the pool into lanes (Bedrock jobs) under the concurrent-job quota and starts their executions; "
        "sends on-demand the jobs the pool lets go and those whose deadline is near.",
        # counts in-flight jobs in the database; asks Bedrock only to stop a lane a deadline emptied
        ("db", "start_batch_lane", "start_conversion", "stop_batch_jobs"),
    ),
    FunctionSpec(
        "batch_prepare",
        "Captures one InvokeModel record per non-blank page of a lane's member chunks into JSONL shards and a manifest.",
        ("db", "s3_read_jobs", "s3_read_batch", "s3_write_batch", "s3_delete_batch_inputs"),
        900,
        2048,
    ),
    FunctionSpec("batch_submit", "CreateModelInvocationJob, idempotent by name and token.", ("db", "bedrock_batch")),
    FunctionSpec(
        "batch_wait",
        "Stores the wait task token on the lane; ends the wait at once when the terminal event came first.",
        ("db", "task_response"),
    ),
    FunctionSpec(
        "batch_callback",
        "EventBridge target: Bedrock batch state change → task success for terminal states; bills a stopped job's manifest.",
        ("db", "s3_read_batch", "task_response"),
    ),
    FunctionSpec(
        "batch_sweeper",
        "Asks Bedrock about rows still waiting, so a lost event strands nothing; collects orphans, bills stopped jobs.",
        ("db", "s3_read_batch", "s3_write_batch", "s3_delete_batch_members", "bedrock_batch", "task_response", "start_conversion"),  # resumes stuck jobs on-demand
    ),
    FunctionSpec(
        "batch_collect",
        "Streams the .jsonl.out files, accepts records, writes results, the lane's ledger row and its members' shares; "
        "may form and start a retry batch of the records a second try can cure.",
        ("db", "s3_read_batch", "s3_write_batch", "s3_delete_batch_inputs", "bedrock_batch", "cloudwatch_metrics", "start_batch_lane"),
        900,
        1024,
    ),
    FunctionSpec(
        "batch_stop",
        "StopModelInvocationJob for a wait past its timeout (StopOverdue); best effort, the row keeps the reason.",
        ("db", "stop_batch_jobs"),
    ),
    # Finds a job created before a failure (List), reads its status, stops it and bills its manifest.json.out (batch/).
    FunctionSpec(
        "batch_abandon",
        "Leaves the lane without results (skip, prepare/submit/collect failed): closes the row, stops and bills a submitted job.",
        ("db", "inspect_batch_jobs", "stop_batch_jobs", "s3_read_batch"),
    ),
    FunctionSpec(
        "batch_resume",
        "Puts each member job the lane was the last to carry back to pending (primed or not) and starts its conversion.",
        ("db", "start_conversion"),
        900,  # a lane of a few thousand small documents resumes each: a transaction and a StartExecution apiece
    ),
    FunctionSpec(
        "recovery",
        "Resumes stranded jobs (lane closed, job still waiting); ends jobs and folder jobs whose workflow ended without recording their end.",
        ("db", "start_conversion", "publish_events", "inspect_workflows", "folder_access"),  # folder_access: the ended folder job's record
    ),
    # s3_read_jobs also signs the download URLs of jobs/<id>/output.md (a presigned GET carries the
    # signer's permissions); s3_write_jobs keeps the Markdown before a retry; start_conversion starts
    # retries (the conversion machine, retry-<jobId>-<n>). A dry run is an estimate the API only records
    # and starts (start_estimate): no request of the API reads, lists or opens a user's files (issue 40).
    FunctionSpec(
        "api",
        "Owner-only HTTP API: upload, convert (and start a dry run's estimate), list files, progress, cancel, process now, delete, download, failed pages, retry, webhooks.",
        (
            "db",
            "s3_read_uploads",  # the upload's size (HEAD) before convert and a dry run
            "s3_read_jobs",  # chunk results of a retry; the Markdown's presigned GET
            "s3_write_uploads",  # the upload's presigned POST
            "s3_write_jobs",  # the Markdown kept before a retry
            "s3_delete",
            "stop_batch_jobs",  # cancel / process now stop a batch job; the API creates none
            "start_conversion",
            "start_intake",
            "publish_events",
            "start_webhook_delivery",
            "webhook_secret_seal",  # the caller's own signing secret, created and rotated (shown once), stored sealed
            "start_folder_job",  # folder jobs: submit, retry, resume
            "start_estimate",  # dry runs: the estimate worker reads the files
            "folder_access",  # a folder file's source PDF: a GET presigned in its own bucket, as its owner
        ),
        29,  # API Gateway's integration timeout; every request answers from the database in well under it (3 s p99)
        1024,
    ),
    # A dry run's worker (api/estimates.py): the upload downloaded to /tmp (up to BATCHLANE_DRY_RUN_SURVEY_MB) and
    # surveyed in the bounded child; a folder listed and a sample counted as its owner (folder_access), within
    # COUNT_DEADLINE_S. Its own bounds end it well inside the timeout, which answers the estimate failed.
    FunctionSpec(
        "estimate",
        "Runs a dry run's estimate (a file's survey, a folder's listing and sample) within its bounds and writes its answer.",
        ("db", "s3_read_uploads", "folder_access"),
        120,
        1536,
        1024,
    ),
    FunctionSpec(
        "webhook_dispatch",
        "EventBridge target: a job state change → the job's subscribed webhook deliveries (row + execution each).",
        ("db", "start_webhook_delivery"),
    ),
    # Folder jobs (docs/architecture.md "Folder jobs"): the folder_job machine's loop.
    FunctionSpec(
        "folder_enumerate",
        "Lists a few ListObjectsV2 pages of a folder job from its checkpoint and inserts the files it finds.",
        ("db", "folder_access", "publish_events"),  # publishes the job's processing/error change
        300,
    ),
    FunctionSpec(
        "folder_advance",
        "One turn of a folder job: settles files whose conversion ended (Markdown to its output key), starts queued files within the cap, writes the report part.",
        ("db", "s3_read_jobs", "folder_access", "start_intake", "publish_events", "start_folder_job"),  # reads jobs/<id>/output.md; hands over
        300,
    ),
    FunctionSpec(
        "folder_finish", "Ends a folder job: final status, report.jsonl and manifest.json in the output folder.", ("db", "folder_access", "publish_events"), 300
    ),  # publishes the job's end
    # Short on purpose: one POST with a 10 s timeout, so a slow receiver holds nothing else.
    FunctionSpec(
        "webhook_deliver",
        "POSTs one signed webhook delivery and records the attempt; a failure raises so the workflow retries.",
        ("db", "webhook_secret_open", "webhook_secret_read"),  # the owner's secret; the deployment's during the migration
        30,
        256,
    ),
)

# The throttle ladder every Lambda task starts its Retry with (see LAMBDA_THROTTLE_RETRY): AWS values, shrunk offline.
THROTTLE_SETTINGS = {"throttle_interval_seconds": "2", "throttle_max_delay_seconds": "60"}

STATE_MACHINES: tuple[StateMachineSpec, ...] = (
    StateMachineSpec(
        "conversion",
        "One execution per job: map over chunks → chunk processor → assemble → settle.",
        ("conversion_start", "chunk_processor", "assemble", "settle"),
        {
            **THROTTLE_SETTINGS,
            "chunk_admission_interval_seconds": "5",
            "chunk_admission_max_delay_seconds": "120",
            "map_max_concurrency": str(CHUNKS_IN_FLIGHT),
            "retry_interval_seconds": "2",
            "chunk_retry_interval_seconds": "30",
        },
    ),
    StateMachineSpec(
        "batch_lane",
        "One execution per parked job: prepare → submit → wait for the event or a timeout → collect → resume.",
        ("batch_prepare", "batch_submit", "batch_wait", "batch_stop", "batch_collect", "batch_abandon", "batch_resume"),
        {
            **THROTTLE_SETTINGS,
            "prepare_fanout_concurrency": "8",
            "retry_interval_seconds": "2",
            "submit_retry_interval_seconds": "60",
            "collect_retry_interval_seconds": "30",
        },
    ),
    StateMachineSpec(
        "intake",
        "One execution per new job: split the upload (job_split); any failure marks the job failed (settle).",
        ("job_split", "settle"),
        {**THROTTLE_SETTINGS, "retry_interval_seconds": "2"},
    ),
    # The retry ladder (docs/operations.md "Signed webhooks"): 30 s doubling, capped at 4 h,
    # full jitter, 14 retries (15 POSTs): at most ~24 h 15 min of waiting before the delivery is given up.
    StateMachineSpec(
        "webhook_delivery",
        "One execution per webhook delivery: POST, retried with backoff and jitter; given up after the ladder.",
        ("webhook_deliver",),
        {
            **THROTTLE_SETTINGS,
            "delivery_interval_seconds": "30",
            "delivery_backoff_rate": "2",
            "delivery_max_attempts": "14",
            "delivery_max_delay_seconds": "14400",
        },
    ),
    # The folder loop's Wait: long enough that a turn is cheap next to the files converting meanwhile.
    StateMachineSpec(
        "estimate",
        "One execution per dry run: the estimate worker reads the file or folder within its bounds and answers the estimate.",
        ("estimate",),
        {**THROTTLE_SETTINGS, "retry_interval_seconds": "2"},
    ),
    StateMachineSpec(
        "folder_job",
        "One execution per folder-job run: enumerate a page → start queued files within the cap → wait → … → report and manifest.",
        ("folder_enumerate", "folder_advance", "folder_finish"),
        {**THROTTLE_SETTINGS, "retry_interval_seconds": "2", "poll_interval_seconds": "10"},
    ),
)

RULES: tuple[RuleSpec, ...] = (
    RuleSpec(
        "bedrock_batch_state_change",
        "Bedrock batch inference job state changes push the batch-lane wait on.",
        BEDROCK_EVENT_SOURCE,
        BEDROCK_BATCH_DETAIL_TYPE,
        "batch_callback",
    ),
    RuleSpec("job_parked", "A job parked for the batch lane wakes the packer.", EVENT_SOURCE, JOB_PARKED_DETAIL_TYPE, "batch_packer"),
    RuleSpec(
        "job_state_change_webhooks",
        "A public job state change starts the job's webhook deliveries.",
        EVENT_SOURCE,
        JOB_STATE_CHANGE_DETAIL_TYPE,
        "webhook_dispatch",
    ),
    RuleSpec(
        "folder_job_state_change_webhooks",
        "A public folder job state change starts the folder job's webhook deliveries.",
        EVENT_SOURCE,
        FOLDER_JOB_STATE_CHANGE_DETAIL_TYPE,
        "webhook_dispatch",
    ),
)

SCHEDULES: tuple[ScheduleSpec, ...] = (
    ScheduleSpec("packer_safety_net", "Claims parked jobs even if a parked event was lost.", 1, "batch_packer"),
    ScheduleSpec("batch_sweeper", "Ends waits whose terminal event was lost.", 15, "batch_sweeper"),
    ScheduleSpec("stranded_recovery", "Resumes jobs whose lane closed but which still wait; ends jobs whose workflow ended without them.", 10, "recovery"),
)


def function(name: str) -> FunctionSpec:
    for spec in FUNCTIONS:
        if spec.name == name:
            return spec
    raise KeyError(f"no function named {name!r} in the topology")


def handler_path(name: str) -> Path:
    return FUNCTIONS_DIR / name / "handler.py"


# --- What the state machine files share (docs/architecture.md "State machines: shared blocks and counts") ---

# AWS Step Functions Developer Guide, "Handle Lambda service exceptions": retry these on every
# Lambda task; out-of-memory and function timeouts surface as Lambda.Unknown.
LAMBDA_SERVICE_ERRORS: tuple[str, ...] = (
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
    "Lambda.ClientExecutionTimeoutException",
    "Lambda.Unknown",
)
# Ours, retried alike: the database blipped (StoreUnavailable), the runtime timed out (Sandbox.Timedout).
# Step Functions matches the raised class's own name, never a parent's: StoreUnavailable's subclasses
# are named one by one (a rotation half done refuses the password; a proxy's certificate rotates).
# tests/unit/test_transient_retries.py walks the class tree so a new subclass cannot be missed.
TRANSIENT_ERRORS: tuple[str, ...] = ("StoreUnavailable", "DatabaseAuthFailed", "DatabaseTlsError", "Sandbox.Timedout")

# Counts the Python code also reads: the file gets them from here, so the two cannot disagree.
# A chunk refused admission (its owner at its fair share) waits: 5 s doubling to 120 s, 500 tries, ~16 h.
# Each try is 3 history events: a job's chunks must stay within Step Functions' 25,000 (docs/operations.md).
CHUNK_ADMISSION_MAX_ATTEMPTS = 500


def _service_retry(max_attempts: int, comment: str) -> dict[str, object]:
    return {
        "ErrorEquals": [*LAMBDA_SERVICE_ERRORS, *TRANSIENT_ERRORS],
        "Comment": comment,
        "IntervalSeconds": "${retry_interval_seconds}",
        "MaxAttempts": max_attempts,
        "BackoffRate": 2,
        "JitterStrategy": "FULL",
    }


# A throttle (the function's concurrency, reserved or the account's, is full) is a wait, never a failure
# (issue 21): the first retrier of EVERY Lambda task, ahead of the file's own, so no later retrier with
# few attempts (or States.ALL) takes it. 2 s doubling to 60 s, full jitter, 40 retries: up to ~36 min
# (15, ~11 min, ran out under one owner's flood on a limited account: tests/e2e/test_tenant_isolation.py).
# Each try is ~3 events of the execution's history, as the chunk admission's (CHUNK_ADMISSION_MAX_ATTEMPTS).
THROTTLE_MAX_ATTEMPTS = 40
LAMBDA_THROTTLE_RETRY: dict[str, object] = {
    "ErrorEquals": ["Lambda.TooManyRequestsException"],
    "Comment": "A throttle waits, never fails the job (topology.LAMBDA_THROTTLE_RETRY).",
    "IntervalSeconds": "${throttle_interval_seconds}",
    "MaxAttempts": THROTTLE_MAX_ATTEMPTS,
    "BackoffRate": 2,
    "MaxDelaySeconds": "${throttle_max_delay_seconds}",
    "JitterStrategy": "FULL",
}
_RETRY_LIST = re.compile(r'"Retry": \[')

_QUOTED_PLACEHOLDER = re.compile(r'"\$\{([a-z0-9_]+)\}"')

# A JSON block a file names with a string placeholder, e.g. "Retry": ["${LambdaServiceRetry}", ...].
DEFINITION_BLOCKS: dict[str, dict[str, object]] = {
    "LambdaServiceRetry": _service_retry(4, "Lambda service errors and our transient ones (topology.LambdaServiceRetry)."),
    # Tasks that run long or near their memory (split, prepare, a chunk, assemble): an out-of-memory
    # run is likely to repeat, and each try is long, so one try fewer.
    "HeavyTaskRetry": _service_retry(3, "Lambda service errors and our transient ones, one try fewer for a long task (topology.HeavyTaskRetry)."),
}
# A number a file names with a bare placeholder, e.g. "MaxAttempts": ${chunk_continue_max_attempts}.
DEFINITION_CONSTANTS: dict[str, int] = {
    "chunk_retry_later_max_attempts": CHUNK_RETRY_LATER_MAX_ATTEMPTS,
    "chunk_continue_max_attempts": CHUNK_CONTINUE_MAX_ATTEMPTS,
    "chunk_admission_max_attempts": CHUNK_ADMISSION_MAX_ATTEMPTS,
}


def load_definition(spec: StateMachineSpec) -> str:
    """The file with the shared blocks and counts written in: what CDK deploys and the offline stack runs.

    ASL cannot include a block by reference and CDK's substitutions are strings, so the blocks are
    written in here, before either side fills the remaining ``${...}`` (ARNs, intervals). Every
    ``Retry`` list starts with :data:`LAMBDA_THROTTLE_RETRY` (every task of these files invokes a Lambda).
    """
    text = spec.path.read_text(encoding="utf-8")
    throttle = _QUOTED_PLACEHOLDER.sub(r"${\1}", json.dumps(LAMBDA_THROTTLE_RETRY, ensure_ascii=False))
    text = _RETRY_LIST.sub(lambda _: f'"Retry": [{throttle}, ', text)
    for name, block in DEFINITION_BLOCKS.items():
        # json.dumps quotes "${retry_interval_seconds}"; the number placeholders must stay bare.
        block_text = _QUOTED_PLACEHOLDER.sub(r"${\1}", json.dumps(block, ensure_ascii=False))
        text = text.replace(f'"${{{name}}}"', block_text)
    for name, value in DEFINITION_CONSTANTS.items():
        text = text.replace(f"${{{name}}}", str(value))
    return text
