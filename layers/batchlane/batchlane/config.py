"""One validated settings object, read from the environment once per process.

Every knob the handlers, the CLI and the offline stack read lives here, with its default
and its environment name (the field name in upper case). pydantic-settings does the
parsing and validation, so a bad value fails at start-up with the variable's name.

AWS endpoints are not settings of ours: boto3 reads ``AWS_ENDPOINT_URL`` and
``AWS_ENDPOINT_URL_<SERVICE>`` itself, which is how the same code talks to AWS or to the
offline stack.
"""

from __future__ import annotations

import json
from decimal import Decimal
from functools import lru_cache
from typing import Any, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from batchlane.domain.prices import default_prices

DEFAULT_MODEL_ID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"

# USD per million tokens, on-demand (source and date in domain/prices.py).
DEFAULT_PRICES: dict[str, dict[str, float]] = default_prices()


class Settings(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore", case_sensitive=False, populate_by_name=True)

    # --- where things are -------------------------------------------------------------
    database_url: str | None = Field(None, description="postgresql://user:pass@host:port/db (or ?host=/socket/dir)")
    database_secret_arn: str | None = Field(None, description="Secrets Manager secret with host/port/username/password/dbname")
    # With the secret: the database to use (CDK's generated secret has no dbname) and where to
    # connect instead of the secret's host (the RDS Proxy endpoint). docs/deploy.md "Database connections".
    database_name: str | None = None
    database_host: str | None = None
    # migrate only: the application role's secret (migrate sets that password on ``batchlane_app``;
    # every other function signs in with it). docs/deploy.md "Database authentication".
    database_app_secret_arn: str | None = None
    # Offline and tests only: the owner's URL migrate uses while DATABASE_URL is the application role's.
    database_admin_url: str | None = None
    # TLS to PostgreSQL over TCP: verify-full (CA + host name) unless set otherwise; "disable" only
    # for a server on a trusted local link. The CA file is a PEM bundle; unset = the system trust store.
    batchlane_db_ssl_mode: Literal["verify-full", "verify-ca", "disable"] = "verify-full"
    batchlane_db_ssl_ca_file: str | None = None
    batchlane_bucket: str = Field("batchlane-local", description="The one bucket: uploads/, jobs/, batch/")
    aws_region: str = Field("us-east-1", alias="AWS_REGION")
    conversion_state_machine_arn: str | None = None
    batch_lane_state_machine_arn: str | None = None
    intake_state_machine_arn: str | None = None  # the split of a new job (docs/architecture.md)
    event_bus_name: str = "default"
    webhook_delivery_state_machine_arn: str | None = None
    webhook_secret_arn: str | None = None  # the deployment's webhook signing secret (Secrets Manager)

    # --- conversion ---------------------------------------------------------------------
    batchlane_model_id: str = DEFAULT_MODEL_ID
    # The models this deployment configured and granted (comma-separated; infra context modelIds):
    # a job may ask only for one of these (unset: the default model only). docs/deploy.md "Permissions".
    batchlane_model_ids: str = ""
    batchlane_prices: dict[str, dict[str, float]] = Field(default_factory=lambda: dict(DEFAULT_PRICES))
    batchlane_pages_per_chunk: int = Field(50, ge=1, le=500)
    batchlane_max_pages: int = Field(10_000, ge=1)
    batchlane_max_file_mb: int = Field(500, ge=1)
    # A dry run (inside the API's 29 s) fetches and surveys an upload up to this size; a larger one has only
    # its page tree read, by ranged GETs of at most DRY_RUN_RANGED_BYTES (filejob/dryrun.py, issue 21.2).
    batchlane_dry_run_survey_mb: int = Field(64, ge=1)
    batchlane_max_tokens: int = Field(8192, ge=256, le=64_000)
    batchlane_temperature: float = Field(0.0, ge=0.0, le=1.0)
    # A page over the size limit (domain/limits.py) whose images cannot be recompressed under it is
    # rendered to one picture, losing its text layer; off: it fails PAGE_TOO_LARGE instead (pdf/fit.py).
    batchlane_page_render: bool = True
    # How pages go to the model (domain/page_form.py, docs/deploy.md "The page form"): pdf (document
    # blocks), image (pdfium render + text layer), auto (what `batchlane doctor --live` or a refused call recorded).
    batchlane_page_form: Literal["pdf", "image", "auto"] = "auto"
    # Bedrock's Flex service tier (domain/service_tier.py, docs/deploy.md "Service tiers"): the share
    # off the standard rate a Flex call bills, set by the operator from their price sheet (AWS publishes
    # no Flex price for Claude); unset: Flex is off unless BATCHLANE_PRICES carries flex_*_per_mtok.
    batchlane_flex_discount: Decimal | None = Field(None, ge=0, lt=1)
    # Work due sooner than this is urgent: it goes at the default tier, never Flex.
    batchlane_flex_min_deadline_hours: float = Field(1.0, ge=0)
    # On-demand pages per Converse request (docs/ondemand.md). The count actually used is
    # the smallest of this, the API's documents-per-request limit and what fits in
    # max_tokens at the pages' estimated output. Primed pages and batch records stay 1.
    batchlane_pages_per_request: int = Field(5, ge=1, le=20)
    batchlane_max_documents_per_request: int = Field(5, ge=1, le=20)  # Bedrock "API restrictions": 5 documents a request
    batchlane_output_tokens_per_page: int = Field(1200, ge=50)  # estimate for a page with no text layer
    batchlane_output_fill: float = Field(0.75, gt=0, le=1)  # share of max_tokens a multi-page request plans to use
    batchlane_chunk_concurrency: int = Field(4, ge=1, le=64)
    # With pacing on, a chunk whose pages are few next to the starts free right now sends
    # smaller groups in parallel, up to this many at once (ondemand/planner.py); 0 = never.
    batchlane_chunk_max_parallel: int = Field(20, ge=0, le=64)
    # A chunk stops starting requests this long before its Lambda would time out, keeps what
    # it converted and continues in a fresh invocation (ChunkContinue): in-flight answers and
    # the final writes must fit in it.
    batchlane_chunk_stop_margin_s: float = Field(120, ge=0)
    # Read timeout of a model call, sized per request (claude.transports.ReadTimeoutPolicy):
    # time to the first token + max_tokens at the slow end of generation speed, capped, and never
    # past the invocation's end. A call that times out is booked as billed, never re-sent unbooked.
    batchlane_read_timeout_first_byte_s: float = Field(60.0, gt=0)
    batchlane_read_timeout_min_tokens_per_s: float = Field(20.0, gt=0)
    batchlane_read_timeout_max_s: float = Field(3600.0, gt=0)
    # The global on-demand limit, shared by every running Lambda (leases in PostgreSQL).
    batchlane_global_concurrency: int = Field(32, ge=0, le=10_000)  # in-flight Converse requests; 0 = no limit
    batchlane_ondemand_rpm: float = Field(0, ge=0)  # requests a minute to pace at (set ~95% of the quota); 0 = no pacing
    batchlane_ondemand_burst: int = Field(0, ge=0)  # requests that may start ahead of the pace after idling; rpm + burst <= quota
    batchlane_lease_ttl_s: float = Field(600, ge=5)  # a dead worker's slot frees itself after this; keep above the read timeout (465 s at 8,192 tokens)
    batchlane_lease_wait_s: float = Field(300, ge=0)  # longest wait for a slot before the page is retried later
    # Throttling: exponential backoff with full jitter, holding the slot, within a budget per request.
    batchlane_backoff_base_s: float = Field(1.0, gt=0)
    batchlane_backoff_max_s: float = Field(20.0, gt=0)
    batchlane_throttle_budget_s: float = Field(180.0, ge=0)
    batchlane_throttle_max_attempts: int = Field(12, ge=1, le=100)
    # Coverage re-ask: a page whose answer holds less than this share of its text layer's words is asked once more.
    batchlane_coverage_threshold: float = Field(0.6, ge=0, le=1)  # 0 = never re-ask
    batchlane_coverage_min_words: int = Field(20, ge=1)
    # Per-user budget and caps (docs/operations.md "Budgets, caps and fair sharing"); an admin
    # overrides them per user (PUT /api/v1/admin/budgets/{ownerId}). A job's funds hold is its
    # worst case (domain/budget.py), checked against the budget when the job is split.
    batchlane_budget_usd_per_month: float = Field(3500.0, ge=0)  # admits the largest job: 10,000 text pages hold ~3,000 USD at the worst case (issue 21.5)
    batchlane_max_live_jobs: int = Field(20, ge=0)
    # Chunk invocations the deployment runs at once, shared fairly by owner (filejob/admission.py);
    # size it within the account's Lambda concurrency (batchlane doctor compares). 0: no admission.
    batchlane_chunk_slots: int = Field(100, ge=0)
    batchlane_max_live_pages: int = Field(20_000, ge=0)
    batchlane_on_demand_window_hours: float = Field(6.0, gt=0)
    # Per-user API rate limit (docs/operations.md "API rate limits"): a token bucket per caller in
    # PostgreSQL, refilled at this rate up to the burst; a dry run costs more tokens than a read.
    # Past it: 429 RATE_LIMITED with Retry-After. 0 requests a second: no limit.
    batchlane_api_rate_per_s: float = Field(5.0, ge=0)
    batchlane_api_burst: int = Field(60, ge=1)
    batchlane_api_dry_run_cost: int = Field(10, ge=1)  # a file's dry run: it starts up to ~20 s of the estimate worker
    batchlane_api_folder_dry_run_cost: int = Field(20, ge=1)  # a folder's: listing and counting, up to ~40 s of it
    # Dry runs run as estimates in their own worker (api/estimates.py): an owner has at most this many running at
    # once (429 ESTIMATES_LIMIT past it), so a flood of hostile PDFs holds one worker, never the API. One: a second
    # at once took another owner's median API latency offline from 1.6x to 2-2.9x of alone (docs/benchmarks.md).
    batchlane_max_live_estimates: int = Field(1, ge=1)
    estimate_state_machine_arn: str | None = None
    # Per-user caps on what costs outside the budget (docs/operations.md "Per-user caps"): 429 past them.
    batchlane_max_pending_uploads: int = Field(100, ge=1)  # files registered and never converted nor deleted
    batchlane_max_live_folder_jobs: int = Field(10, ge=1)  # folder jobs enumerating or processing
    batchlane_max_test_deliveries_per_hour: int = Field(20, ge=1)  # webhook test deliveries (each a 24 h retry ladder)
    # Offline stack: how many emulated seconds pass per real second (1 in AWS).
    batchlane_time_scale: float = Field(1.0, gt=0)

    # --- signed webhooks (docs/operations.md "Signed webhooks") ---------------------------
    # Off (AWS default): callback URLs must be https to a public host. On: http and private,
    # loopback or link-local receivers are allowed too (the offline stack; a receiver in your VPC).
    batchlane_webhook_allow_private: bool = False
    batchlane_webhook_timeout_s: float = Field(10.0, gt=0, le=25)  # one POST; webhook_deliver's Lambda timeout is 30 s
    # After a rotation, deliveries carry signatures with the owner's new AND old secret for this long.
    batchlane_webhook_grace_hours: float = Field(24.0, ge=0)
    # Each owner's signing secret is sealed with this KMS key (webhooks/owner_secrets.py). For this many days after
    # per-owner signing began (0038_webhook_secrets.sql), deliveries carry the deployment's signature beside the
    # owner's, so receivers still on the deployment secret keep verifying while they move to their own.
    webhook_key_arn: str | None = None
    batchlane_webhook_migration_days: float = Field(30.0, ge=0)
    # The Cognito group whose members may set another user's budget (PUT /api/v1/admin/budgets/{ownerId}).
    batchlane_admin_group: str = "batchlane-admins"
    # The Cognito group whose members may force on-demand (process-now): it skips the half-price
    # batch lane. Empty: everyone may (a single-user deployment). docs/deploy.md "Permissions".
    batchlane_priority_group: str = "batchlane-priority"

    # --- folder jobs (docs/architecture.md "Folder jobs") ---------------------------------
    folder_job_state_machine_arn: str | None = None
    # The role folder functions assume per owner (session tag ``owner``) for every user-bucket call: IAM
    # then confines a folder job to its owner's folder sources. Unset (tests with fakes): the function's role.
    folder_access_role_arn: str | None = None
    # The folders the deployment may read and write: comma-separated ``bucket/prefix`` (cdk.json
    # context ``folderSources``); a folder job outside them is refused with FOLDER_NOT_ALLOWED.
    batchlane_folder_sources: str = ""
    batchlane_folder_max_in_flight: int = Field(50, ge=1, le=10_000)  # a job's documents converting at once
    batchlane_folder_list_pages_per_step: int = Field(2, ge=1, le=100)  # ListObjectsV2 pages per enumerator run
    batchlane_folder_list_page_size: int = Field(1000, ge=1, le=1000)  # MaxKeys (1,000 is S3's most)
    # Loop turns per execution before it hands over to a new one: a Standard execution keeps at most
    # 25,000 history events (Step Functions quotas) and a turn writes ~15.
    batchlane_folder_turns_per_execution: int = Field(1000, ge=1, le=1500)

    # --- the batch lane (README "Configuration") -------------------------------------
    batch_conversion_enabled: bool = False
    batch_conversion_s3_bucket: str | None = None
    batch_conversion_role_arn: str | None = None
    batch_conversion_min_pages: int = Field(600, ge=1)
    batch_conversion_min_records: int = Field(100, ge=1)
    batch_conversion_max_records: int = Field(50_000, ge=1)
    batch_conversion_timeout_hours: int = 24
    batch_conversion_grace_hours: float = Field(2.0, ge=0)
    # MB of 10**6 bytes, as Bedrock's GB quotas are 10**9 (domain/limits.quota_bytes): 1 GB a file, 5 GB a job.
    batch_conversion_max_file_mb: int = Field(200, ge=1, le=1000)
    batch_conversion_max_job_mb: int = Field(5000, ge=1, le=5000)
    batch_conversion_max_concurrent_jobs: int = Field(10, ge=1)
    batch_conversion_fallback_warn_share: float = Field(0.2, ge=0, le=1)
    # The pool (docs/architecture.md "The batch pool"): a Bedrock job that is not full waits until its
    # oldest page has waited this long for more pages to join it.
    batch_pool_window_minutes: float = Field(15.0, ge=0)
    # A job with a deadline leaves the pool (or its lane) for on-demand this long before it, so its
    # pages convert in time; and enters only if a batch turnaround plus this much fits before it.
    batch_deadline_margin_hours: float = Field(2.0, ge=0)

    @property
    def allowed_model_ids(self) -> tuple[str, ...]:
        """The models a job may use: BATCHLANE_MODEL_IDS, else the default model alone."""
        listed = tuple(m.strip() for m in self.batchlane_model_ids.split(",") if m.strip())
        return listed or (self.batchlane_model_id,)

    @field_validator("batch_conversion_timeout_hours")
    @classmethod
    def _clamp_timeout(cls, hours: int) -> int:
        """Bedrock accepts timeoutDurationInHours 24–168; out-of-range values are clamped."""
        return max(24, min(168, hours))

    @field_validator("batchlane_prices", mode="before")
    @classmethod
    def _parse_prices(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = json.loads(value)
        merged = dict(DEFAULT_PRICES)
        merged.update(value or {})
        return merged

    @property
    def folder_sources(self) -> list[str]:
        return [s.strip() for s in self.batchlane_folder_sources.split(",") if s.strip()]

    @property
    def batch_lane_configured(self) -> bool:
        """The lane is on only when enabled AND it has somewhere to write and a role to pass."""
        return bool(self.batch_conversion_enabled and self.batch_conversion_s3_bucket and self.batch_conversion_role_arn)

    @property
    def batch_deadline_hours(self) -> float:
        """Hours from submit until a batch job is overdue (timeout + grace), in (scaled) real time."""
        return (self.batch_conversion_timeout_hours + self.batch_conversion_grace_hours) / self.batchlane_time_scale

    @property
    def batch_pool_window_s(self) -> float:
        """BATCH_POOL_WINDOW_MINUTES in (scaled) real seconds."""
        return self.batch_pool_window_minutes * 60 / self.batchlane_time_scale

    @property
    def batch_deadline_margin_s(self) -> float:
        """BATCH_DEADLINE_MARGIN_HOURS in (scaled) real seconds."""
        return self.batch_deadline_margin_hours * 3600 / self.batchlane_time_scale

    @property
    def batch_wait_seconds(self) -> int:
        """TimeoutSeconds of the WaitForBatch state: batch timeout + grace, in (scaled) real seconds."""
        hours = self.batch_conversion_timeout_hours + self.batch_conversion_grace_hours
        return max(1, int(hours * 3600 / self.batchlane_time_scale))


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()


def reload_settings() -> Settings:
    """Forget the cached settings (the offline stack and tests change the environment)."""
    get_settings.cache_clear()
    return get_settings()
