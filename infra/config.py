"""Deployment settings, read from CDK context (``cdk.json`` or ``cdk deploy -c key=value``).

Every key with its default and meaning: docs/deploy.md "Module notes".
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from aws_cdk import aws_logs as logs
from constructs import Node

import infra  # noqa: F401  (puts the shared package on sys.path)
from batchlane.config import DEFAULT_MODEL_ID, Settings
from batchlane.domain.limits import collect_ephemeral_mb
from deployment import topology

DEFAULT_FALLBACK_SHARE = float(Settings.model_fields["batch_conversion_fallback_warn_share"].default)

# Context key under "quotas" -> the Settings field it sets; the defaults are the fields' own.
QUOTA_FIELDS: dict[str, str] = {
    "minPages": "batch_conversion_min_pages",
    "minRecords": "batch_conversion_min_records",  # Bedrock "minimum number of records per batch inference job"
    "maxRecords": "batch_conversion_max_records",  # Bedrock "records per batch inference job"
    "maxConcurrentJobs": "batch_conversion_max_concurrent_jobs",  # Bedrock "batch inference jobs (submitted + in progress)"
    "maxFileMb": "batch_conversion_max_file_mb",  # Bedrock "batch inference input file size" is 1 GB; smaller shards retry cheaper
    "maxJobMb": "batch_conversion_max_job_mb",  # Bedrock "batch inference job size" (5 GB)
    "timeoutHours": "batch_conversion_timeout_hours",  # timeoutDurationInHours, clamped 24-168
    "graceHours": "batch_conversion_grace_hours",  # the wait gives up this long after the Bedrock timeout
}
DEFAULT_QUOTAS: dict[str, float] = {key: Settings.model_fields[name].default for key, name in QUOTA_FIELDS.items()}

DEFAULT_BUDGET: dict[str, float] = {
    "usdPerMonth": float(Settings.model_fields["batchlane_budget_usd_per_month"].default),
    "maxLiveJobs": int(Settings.model_fields["batchlane_max_live_jobs"].default),
    "maxLivePages": int(Settings.model_fields["batchlane_max_live_pages"].default),
    # Per-user API rate limit and caps outside the budget (issue 21; docs/operations.md "API rate limits").
    "apiRatePerSecond": float(Settings.model_fields["batchlane_api_rate_per_s"].default),
    "apiBurst": int(Settings.model_fields["batchlane_api_burst"].default),
    "maxPendingUploads": int(Settings.model_fields["batchlane_max_pending_uploads"].default),
    "maxLiveFolderJobs": int(Settings.model_fields["batchlane_max_live_folder_jobs"].default),
    "maxTestDeliveriesPerHour": int(Settings.model_fields["batchlane_max_test_deliveries_per_hour"].default),
}

# Reserved concurrency is off by default (issue 21): reserving is both a floor and a ceiling, AWS keeps
# 100 of the account's limit unreserved, and new accounts often start far below 1,000, so a fixed
# reservation failed the first deploy there. Fairness comes from chunk admission per owner instead
# (BATCHLANE_CHUNK_SLOTS, context chunkSlots); `batchlane doctor` compares both with the account's quota.
# Context reservedConcurrency {"chunk_processor": N} reserves N (null for a function: unreserved).
DEFAULT_RESERVED_CONCURRENCY: dict[str, int | None] = {}
# Chunk invocations the deployment admits at once (filejob/admission.py): the reservation when the
# chunk processor has one, else this.
DEFAULT_CHUNK_SLOTS = int(Settings.model_fields["batchlane_chunk_slots"].default)

DEFAULT_AURORA: dict[str, Any] = {
    "minCapacity": 0.5,
    "maxCapacity": 4,
    "natGateways": 1,
    "engineVersion": "17.9",
}


# CloudWatch Logs accepts these retention periods only.
RETENTION_DAYS: dict[int, logs.RetentionDays] = {
    1: logs.RetentionDays.ONE_DAY, 3: logs.RetentionDays.THREE_DAYS, 5: logs.RetentionDays.FIVE_DAYS,
    7: logs.RetentionDays.ONE_WEEK, 14: logs.RetentionDays.TWO_WEEKS, 30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS, 90: logs.RetentionDays.THREE_MONTHS, 120: logs.RetentionDays.FOUR_MONTHS,
    150: logs.RetentionDays.FIVE_MONTHS, 180: logs.RetentionDays.SIX_MONTHS, 365: logs.RetentionDays.ONE_YEAR,
    400: logs.RetentionDays.THIRTEEN_MONTHS, 545: logs.RetentionDays.EIGHTEEN_MONTHS,
    731: logs.RetentionDays.TWO_YEARS, 1096: logs.RetentionDays.THREE_YEARS, 1827: logs.RetentionDays.FIVE_YEARS,
}  # fmt: skip


@dataclass(frozen=True)
class ExistingDatabase:
    secret_arn: str
    vpc_id: str
    subnet_ids: tuple[str, ...]
    security_group_id: str  # the group the Lambdas join; the database must admit it
    availability_zones: tuple[str, ...] = ()
    database_name: str | None = None  # DATABASE_NAME, when the secret has no dbname
    host: str | None = None  # DATABASE_HOST, e.g. an RDS Proxy endpoint in front of the database


@dataclass(frozen=True)
class InfraConfig:
    stack_name: str = "Batchlane"
    batch_conversion_enabled: bool = False
    model_ids: tuple[str, ...] = (DEFAULT_MODEL_ID,)
    prices: dict[str, dict[str, float]] = field(default_factory=dict)
    quotas: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_QUOTAS))
    schedules: dict[str, int] = field(default_factory=lambda: {s.name: s.every_minutes for s in topology.SCHEDULES})
    # Only the overrides given in context; defaults come from the topology.
    state_machine_settings: dict[str, dict[str, str]] = field(default_factory=dict)
    database_mode: Literal["aurora", "existing"] = "aurora"
    existing_database: ExistingDatabase | None = None
    aurora: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_AURORA))
    secret_rotation_days: int = 30
    log_retention_days: int = 30
    api_rate_limit: float = 20
    api_burst_limit: int = 40
    alarm_topic_arn: str | None = None
    retain_data: bool = True
    fallback_alarm_percent: float = DEFAULT_FALLBACK_SHARE * 100
    webhook_allow_private: bool = False
    webhook_grace_hours: float = 24.0
    webhook_migration_days: float = 30.0  # deliveries carry the deployment's signature beside the owner's this long (decision 0037)
    admin_group: str = "batchlane-admins"
    folder_sources: tuple[str, ...] = ()  # "bucket/prefix" (prefix may be empty: the whole bucket)
    priority_group: str = "batchlane-priority"
    page_form: Literal["pdf", "image", "auto"] = "auto"  # BATCHLANE_PAGE_FORM (docs/deploy.md "The page form")
    flex_discount: float | None = None  # BATCHLANE_FLEX_DISCOUNT (docs/deploy.md "Service tiers"): unset, Flex is off
    budget: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_BUDGET))
    reserved_concurrency: dict[str, int | None] = field(default_factory=lambda: dict(DEFAULT_RESERVED_CONCURRENCY))
    chunk_slots: int = DEFAULT_CHUNK_SLOTS
    # The console on a custom domain (docs/deploy.md "The console's domain and TLS"): the domain and an ACM
    # certificate for it in us-east-1 (CloudFront's), both or neither. Only then does CloudFront enforce
    # TLSv1.2_2021: the default *.cloudfront.net certificate accepts TLS 1.0.
    console_domain: str | None = None
    console_certificate_arn: str | None = None
    # An AWS WAF web ACL (scope CLOUDFRONT, made in us-east-1) to put in front of the console; none by default.
    console_web_acl_arn: str | None = None

    def ephemeral_storage_mb(self, spec: topology.FunctionSpec) -> int:
        """Ephemeral storage (MB) of a function: batch_collect's follows the largest lane it may spool (quotas.maxRecords
        records at the answer cap, domain/limits.py); the others' is their topology value."""
        if spec.name == "batch_collect":
            max_tokens = int(Settings.model_fields["batchlane_max_tokens"].default)  # infra does not set BATCHLANE_MAX_TOKENS
            return max(spec.ephemeral_storage_mb, collect_ephemeral_mb(int(self.quotas["maxRecords"]), max_tokens))
        return spec.ephemeral_storage_mb

    @property
    def log_retention(self) -> logs.RetentionDays:
        return RETENTION_DAYS[self.log_retention_days]

    @property
    def model_id(self) -> str:
        return self.model_ids[0]

    @property
    def wait_timeout_seconds(self) -> int:
        """Batch timeout (clamped like Settings) + grace: the WaitForBatch TimeoutSeconds."""
        hours = max(24, min(168, int(self.quotas["timeoutHours"])))
        return int((hours + float(self.quotas["graceHours"])) * 3600)

    def lane_environment(self) -> dict[str, str]:
        """The batch-lane and model settings every function reads (names: batchlane.config.Settings)."""
        q = self.quotas
        return {
            "BATCHLANE_MODEL_ID": self.model_id,
            "BATCHLANE_MODEL_IDS": ",".join(self.model_ids),  # a job may ask for these only (IAM grants only these)
            "BATCHLANE_PRICES": json.dumps(self.prices, sort_keys=True, separators=(",", ":")),
            "BATCH_CONVERSION_ENABLED": "true" if self.batch_conversion_enabled else "false",
            # BATCH_CONVERSION_MIN_PAGES=600, ..., BATCH_CONVERSION_GRACE_HOURS=2.0: each as its field's type
            **{name.upper(): str(type(DEFAULT_QUOTAS[key])(q[key])) for key, name in QUOTA_FIELDS.items()},
            "BATCH_CONVERSION_FALLBACK_WARN_SHARE": str(self.fallback_alarm_percent / 100),
            "BATCHLANE_PAGE_FORM": self.page_form,
            **({"BATCHLANE_FLEX_DISCOUNT": str(self.flex_discount)} if self.flex_discount is not None else {}),
        }

    def webhook_environment(self) -> dict[str, str]:
        """The webhook settings (names: batchlane.config.Settings)."""
        return {
            "BATCHLANE_WEBHOOK_ALLOW_PRIVATE": "true" if self.webhook_allow_private else "false",
            "BATCHLANE_WEBHOOK_GRACE_HOURS": str(float(self.webhook_grace_hours)),
            "BATCHLANE_WEBHOOK_MIGRATION_DAYS": str(float(self.webhook_migration_days)),
            "BATCHLANE_ADMIN_GROUP": self.admin_group,
        }

    def budget_environment(self) -> dict[str, str]:
        """Per-user budget defaults and the on-demand permission (names: batchlane.config.Settings)."""
        b = self.budget
        return {
            "BATCHLANE_BUDGET_USD_PER_MONTH": str(float(b["usdPerMonth"])),
            "BATCHLANE_MAX_LIVE_JOBS": str(int(b["maxLiveJobs"])),
            "BATCHLANE_MAX_LIVE_PAGES": str(int(b["maxLivePages"])),
            "BATCHLANE_API_RATE_PER_S": str(float(b["apiRatePerSecond"])),
            "BATCHLANE_API_BURST": str(int(b["apiBurst"])),
            "BATCHLANE_MAX_PENDING_UPLOADS": str(int(b["maxPendingUploads"])),
            "BATCHLANE_MAX_LIVE_FOLDER_JOBS": str(int(b["maxLiveFolderJobs"])),
            "BATCHLANE_MAX_TEST_DELIVERIES_PER_HOUR": str(int(b["maxTestDeliveriesPerHour"])),
            "BATCHLANE_PRIORITY_GROUP": self.priority_group,
            "BATCHLANE_CHUNK_SLOTS": str(self.chunk_slots),
        }

    def doctor_settings(self) -> dict[str, str]:
        """The lane settings `batchlane doctor` compares with the account's quotas (no prices: they are long)."""
        settings = {k: v for k, v in self.lane_environment().items() if k != "BATCHLANE_PRICES"}
        settings["BATCHLANE_MODEL_IDS"] = ",".join(self.model_ids)
        # What the doctor compares with the account's Lambda concurrency (docs/deploy.md).
        settings["BATCHLANE_CHUNK_SLOTS"] = str(self.chunk_slots)
        reserved = {name: n for name, n in sorted(self.reserved_concurrency.items()) if n is not None}
        settings["BATCHLANE_RESERVED_CONCURRENCY"] = json.dumps(reserved, separators=(",", ":"))
        return settings

    def settings_for(self, machine: topology.StateMachineSpec) -> dict[str, str]:
        """Substitutions for a state machine file's non-ARN ``${...}`` keys."""
        values = dict(machine.settings)
        # Derived from the quotas so the wait and the Bedrock job timeout agree.
        if "batch_wait_seconds" in values:
            values["batch_wait_seconds"] = str(self.wait_timeout_seconds)
        values.update(self.state_machine_settings.get(machine.name, {}))
        return {key: str(value) for key, value in values.items()}


def _parse(value: Any) -> Any:
    """`-c key=value` gives strings: accept JSON there (lists, objects, booleans, numbers)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in {"1", "true", "yes", "on"}
    return bool(value)


def load(node: Node) -> InfraConfig:
    """Build the config from the app's context, failing loudly on a bad value."""

    def ctx(key: str, default: Any = None) -> Any:
        value = node.try_get_context(key)
        return default if value is None else _parse(value)

    base = InfraConfig()
    model_ids = ctx("modelIds", list(base.model_ids))
    if isinstance(model_ids, str):
        model_ids = [m.strip() for m in model_ids.split(",") if m.strip()]
    if not model_ids:
        raise ValueError("context modelIds must name at least one model")

    quotas = dict(DEFAULT_QUOTAS)
    quotas.update(ctx("quotas", {}) or {})
    unknown = set(quotas) - set(DEFAULT_QUOTAS)
    if unknown:
        raise ValueError(f"unknown quota keys in context: {sorted(unknown)}")

    schedules = dict(base.schedules)
    for name, minutes in (ctx("schedules", {}) or {}).items():
        if name not in schedules:
            raise ValueError(f"context schedules.{name}: no such schedule in deployment.topology")
        schedules[name] = int(minutes)

    machines = {sm.name: sm for sm in topology.STATE_MACHINES}
    sm_settings: dict[str, dict[str, str]] = {}
    for name, values in (ctx("stateMachineSettings", {}) or {}).items():
        if name not in machines:
            raise ValueError(f"context stateMachineSettings.{name}: no such state machine")
        unknown_keys = set(values) - set(machines[name].settings)
        if unknown_keys:
            raise ValueError(f"context stateMachineSettings.{name}: unknown keys {sorted(unknown_keys)}")
        sm_settings[name] = {k: str(v) for k, v in values.items()}

    database = ctx("database", "aurora")
    existing = None
    mode: Literal["aurora", "existing"] = "aurora"
    if isinstance(database, dict) and database.get("mode", "existing") == "existing":
        missing = [k for k in ("secretArn", "vpcId", "subnetIds", "securityGroupId") if not database.get(k)]
        if missing:
            raise ValueError(f"context database (existing) is missing {missing}")
        subnets = database["subnetIds"]
        if isinstance(subnets, str):
            subnets = [s.strip() for s in subnets.split(",") if s.strip()]
        existing = ExistingDatabase(
            secret_arn=database["secretArn"],
            vpc_id=database["vpcId"],
            subnet_ids=tuple(subnets),
            security_group_id=database["securityGroupId"],
            availability_zones=tuple(database.get("availabilityZones", ())),
            database_name=database.get("databaseName"),
            host=database.get("host"),
        )
        mode = "existing"
    elif database not in ("aurora", {"mode": "aurora"}):
        raise ValueError(f"context database must be 'aurora' or an existing-database object, not {database!r}")

    retention_days = int(ctx("logRetentionDays", base.log_retention_days))
    if retention_days not in RETENTION_DAYS:
        raise ValueError(f"context logRetentionDays must be one of {sorted(RETENTION_DAYS)}, not {retention_days}")

    aurora = dict(DEFAULT_AURORA)
    aurora.update(ctx("aurora", {}) or {})
    throttle = ctx("apiThrottle", {}) or {}
    budget = dict(DEFAULT_BUDGET)
    budget.update(ctx("budget", {}) or {})
    if set(budget) - set(DEFAULT_BUDGET):
        raise ValueError(f"unknown budget keys in context: {sorted(set(budget) - set(DEFAULT_BUDGET))}")
    reserved = dict(DEFAULT_RESERVED_CONCURRENCY)
    reserved.update(ctx("reservedConcurrency", {}) or {})
    names = {f.name for f in topology.FUNCTIONS}
    if set(reserved) - names:
        raise ValueError(f"context reservedConcurrency: no such function {sorted(set(reserved) - names)}")

    return InfraConfig(
        stack_name=str(ctx("stackName", base.stack_name)),
        batch_conversion_enabled=_bool(ctx("batchConversionEnabled", False)),
        model_ids=tuple(model_ids),
        prices=dict(ctx("prices", {}) or {}),
        quotas=quotas,
        schedules=schedules,
        state_machine_settings=sm_settings,
        database_mode=mode,
        existing_database=existing,
        aurora=aurora,
        secret_rotation_days=int(ctx("secretRotationDays", base.secret_rotation_days)),
        log_retention_days=retention_days,
        api_rate_limit=float(throttle.get("rateLimit", base.api_rate_limit)),
        api_burst_limit=int(throttle.get("burstLimit", base.api_burst_limit)),
        alarm_topic_arn=ctx("alarmTopicArn", None),
        retain_data=_bool(ctx("retainData", True)),
        fallback_alarm_percent=float(ctx("fallbackAlarmPercent", base.fallback_alarm_percent)),
        webhook_allow_private=_bool(ctx("webhookAllowPrivateReceivers", False)),
        webhook_grace_hours=float(ctx("webhookGraceHours", base.webhook_grace_hours)),
        webhook_migration_days=float(ctx("webhookMigrationDays", base.webhook_migration_days)),
        admin_group=str(ctx("adminGroup", base.admin_group)),
        folder_sources=_folder_sources(ctx("folderSources", []) or []),
        priority_group=str(ctx("priorityGroup", base.priority_group)),
        page_form=_page_form(ctx("pageForm", base.page_form)),
        flex_discount=_flex_discount(ctx("flexDiscount", base.flex_discount)),
        budget=budget,
        reserved_concurrency={name: None if value is None else int(value) for name, value in reserved.items()},
        chunk_slots=int(ctx("chunkSlots", reserved.get("chunk_processor") or DEFAULT_CHUNK_SLOTS)),
        **_console_edge(ctx("consoleDomain"), ctx("consoleCertificateArn"), ctx("consoleWebAclArn")),
    )


_DOMAIN = re.compile(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$")
_CLOUDFRONT_CERTIFICATE = re.compile(r"^arn:aws[a-z-]*:acm:us-east-1:\d{12}:certificate/[0-9a-f-]+$")
_CLOUDFRONT_WEB_ACL = re.compile(r"^arn:aws[a-z-]*:wafv2:us-east-1:\d{12}:global/webacl/[\w-]+/[0-9a-f-]+$")


def _console_edge(domain: Any, certificate: Any, web_acl: Any) -> dict[str, str | None]:
    """The console's custom domain and certificate (both or neither) and its optional web ACL, checked now: CloudFront
    takes only a certificate and a CLOUDFRONT-scope web ACL from us-east-1, and would fail the deploy otherwise."""
    domain, certificate, web_acl = (str(v).strip() or None if v is not None else None for v in (domain, certificate, web_acl))
    if bool(domain) != bool(certificate):
        raise ValueError("context consoleDomain and consoleCertificateArn go together: set both (a custom domain needs its certificate) or neither")
    if domain and not _DOMAIN.match(domain.lower()):
        raise ValueError(f"context consoleDomain must be a DNS name like console.example.com, not {domain!r}")
    if certificate and not _CLOUDFRONT_CERTIFICATE.match(certificate):
        raise ValueError(f"context consoleCertificateArn must be an ACM certificate in us-east-1 (CloudFront's), not {certificate!r}")
    if web_acl and not _CLOUDFRONT_WEB_ACL.match(web_acl):
        raise ValueError(f"context consoleWebAclArn must be a WAFv2 web ACL of scope CLOUDFRONT (us-east-1, global/webacl/...), not {web_acl!r}")
    return {"console_domain": domain.lower() if domain else None, "console_certificate_arn": certificate, "console_web_acl_arn": web_acl}


def _flex_discount(value: Any) -> float | None:
    """The operator's Flex discount (a share of the standard rate, 0 <= d < 1), or None: no Flex price, no Flex."""
    if value is None or value == "":
        return None
    discount = float(value)
    if not 0 <= discount < 1:
        raise ValueError(f"context flexDiscount must be a share between 0 and 1, not {value!r}")
    return discount


def _page_form(value: Any) -> Literal["pdf", "image", "auto"]:
    if value not in ("pdf", "image", "auto"):
        raise ValueError(f"context pageForm must be pdf, image or auto, not {value!r}")
    return value  # type: ignore[no-any-return]


def _folder_sources(value: Any) -> tuple[str, ...]:
    """``[group@]bucket/prefix`` entries, the prefix may hold ``{owner}`` as a whole folder (a trailing slash added);
    s3:// and wildcards refused (docs/deploy.md "Folder jobs: folderSources")."""
    items = [v.strip() for v in value.split(",")] if isinstance(value, str) else [str(v).strip() for v in value]
    out = []
    for item in filter(None, items):
        head, _, prefix = item.partition("/")
        group, _, bucket = head.rpartition("@")
        owner_ok = all(part == "{owner}" or ("{" not in part and "}" not in part) for part in prefix.split("/"))
        if item.startswith("s3://") or "*" in item or not bucket or (head.count("@") and not group) or not owner_ok:
            raise ValueError(f"context folderSources: {item!r} must be [group@]bucket/prefix, {{owner}} a whole folder (no s3://, no wildcards)")
        out.append(f"{head}/{prefix.rstrip('/') + '/' if prefix else ''}")
    return tuple(out)
