"""Bedrock service tiers: which configured models may take Flex, and which work goes there.

InvokeModel takes ``serviceTier`` (header ``X-Amzn-Bedrock-Service-Tier``: priority | default |
flex | reserved; botocore 1.44, API reference "ServiceTier"). Flex is discounted and sheds load
first; the on-demand quota is shared across tiers. docs/architecture.md "Service tiers".

Flex is used for a model only when all three hold: the table below (or the doctor's live probe)
says the model takes it, the probe did not see it refused, and the operator configured a Flex rate
(``BATCHLANE_FLEX_DISCOUNT`` or ``flex_*_per_mtok`` in ``BATCHLANE_PRICES``): no price is invented.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

DEFAULT = "default"
FLEX = "flex"
TIERS = ("priority", DEFAULT, FLEX, "reserved")

SUPPORTED = "supported"
UNSUPPORTED = "unsupported"
NOT_DOCUMENTED = "not_documented"

# Per base model (the id without its ``global.``/``us.`` profile prefix): what AWS documents about Flex.
# Sources, checked 2026-12-02:
# * AWS, "Service tiers for optimizing performance and cost" (Bedrock user guide): Flex is the
#   "discounted standard model rate"; "Supported models: Check the documentation" (no list for Claude).
# * re:Post, "Flex Service Tier for Bedrock models": the Flex rollout varies by provider; for Claude
#   models the discounted route is batch inference.
# * aws.amazon.com/bedrock/pricing: no Flex price published for Anthropic models.
# So today's Claude models are "not documented": Flex stays off unless the doctor's probe finds it
# accepted AND a Flex rate is configured.
FLEX_SOURCES = (
    "https://docs.aws.amazon.com/bedrock/latest/userguide/service-tiers-inference.html",
    "https://repost.aws/questions (Flex Service Tier for Bedrock models)",
    "https://aws.amazon.com/bedrock/pricing/",
)
FLEX_DOCUMENTED: dict[str, str] = {
    "anthropic.claude-sonnet-4-5-20250929-v1:0": NOT_DOCUMENTED,
    "anthropic.claude-haiku-4-5-20251001-v1:0": NOT_DOCUMENTED,
}

# Errors on a Flex call that mean "Flex is shedding load now": the same request goes at default.
FLEX_SHED_CODES = frozenset({"ThrottlingException", "ServiceUnavailableException"})

# Why a chunk converting on-demand is not urgent (it left the batch lane or the pool for one of these).
FLEX_REASONS = ("deadline", "pool_too_small", "retry", "batch_fallback")


_PROFILE_PREFIXES = ("global.", "us-gov.", "us.", "eu.", "apac.", "jp.", "au.")


def base_model(model_id: str) -> str:
    """``global.anthropic.x`` / ``us.anthropic.x`` → ``anthropic.x`` (the table's key)."""
    return next((model_id[len(p) :] for p in _PROFILE_PREFIXES if model_id.startswith(p)), model_id)


def documented(model_id: str) -> str:
    return FLEX_DOCUMENTED.get(base_model(model_id), NOT_DOCUMENTED)


@dataclass(frozen=True)
class FlexVerdict:
    on: bool
    why: str  # rate_missing | probe_refused | not_documented | documented | probe_accepted


def flex_for_model(model_id: str, *, probe: bool | None, rate_configured: bool) -> FlexVerdict:
    """Whether the chunk processor may send ``model_id`` work at Flex (``probe``: the doctor's recorded
    answer, None when never probed)."""
    if not rate_configured:
        return FlexVerdict(False, "rate_missing")
    if probe is False:
        return FlexVerdict(False, "probe_refused")
    if probe:
        return FlexVerdict(True, "probe_accepted")
    if documented(model_id) == SUPPORTED:
        return FlexVerdict(True, "documented")
    return FlexVerdict(False, "not_documented")


def flex_reason(
    options: Mapping[str, Any],
    *,
    lane_reason: str | None,
    retrying: bool,
    now: datetime,
    min_deadline_hours: float,
    process_now: bool = False,
    batch_primed: bool = False,
) -> str | None:
    """Why this job's on-demand work may go Flex (cannot wait a batch turnaround, but is not urgent), or None.

    Urgent: "process now", or a deadline closer than ``min_deadline_hours`` (Flex tolerates minutes of
    latency and sheds first). Not urgent: a deadline hours away, a pool lane too small, a retry of
    failed pages, the records a batch job did not answer.
    """
    if process_now:
        return None
    deadline = _deadline(options.get("deadline"))
    if deadline is not None and deadline - now < timedelta(hours=min_deadline_hours):
        return None
    if retrying:
        return "retry"
    if batch_primed:
        return "batch_fallback"
    if lane_reason in ("deadline", "pool_too_small"):
        return lane_reason
    if deadline is not None:
        return "deadline"
    return None


def _deadline(value: object) -> datetime | None:
    if not value:
        return None
    try:
        parsed = value if isinstance(value, datetime) else datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def tier_breakdown(results: Iterable[Any], rates: Mapping[str, tuple[Decimal, Decimal]]) -> dict[str, dict[str, Any]]:
    """Pages, tokens and money per service tier of on-demand page results, with each tier's rate (USD
    per million tokens): what the chunk's ledger row says about its tiers."""
    out: dict[str, dict[str, Any]] = {}
    for result in results:
        if result.served_by != "on_demand":
            continue
        tier = result.service_tier or DEFAULT
        row = out.setdefault(tier, {"pages": 0, "inputTokens": 0, "outputTokens": 0, "costUsd": Decimal(0)})
        row["pages"] += 1
        row["inputTokens"] += result.usage.input_tokens
        row["outputTokens"] += result.usage.output_tokens
        row["costUsd"] += result.cost_usd
    for tier, row in out.items():
        row["costUsd"] = str(row["costUsd"])
        if tier in rates:
            row["inputPerMtok"], row["outputPerMtok"] = (str(v) for v in rates[tier])
    return out
