"""Fault injection for the offline Bedrock emulator (``BATCHLANE_EMULATOR_FAULTS``, parsed into :class:`Faults`).

Every key and what it does: docs/offline.md "Module notes".
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from .clock import BATCH_RECORDS_PER_HOUR, auto_time_scale

JOB_OUTCOMES = ("completed", "partially_completed", "failed", "expired", "stopped")


@dataclass(frozen=True)
class Faults:
    """The parsed fault setting; the defaults are a healthy, real-time Bedrock."""

    job_outcome: str = "completed"
    record_error_rate: float = 0.0
    truncate_rate: float = 0.0
    content_filter_rate: float = 0.0
    guardrail_rate: float = 0.0
    drop_terminal_event: bool = False
    duplicate_events: bool = False
    event_delay_s: float = 0.0
    throttle_rpm: int = 0
    converse_latency_ms: int = 0
    throttle_rate: float = 0.0
    output_ms_per_token: float = 0.0
    omit_rate: float = 0.0
    marker_fault_rate: float = 0.0
    create_throttle: int = 0
    time_scale: float = 1.0
    records_per_hour: float = BATCH_RECORDS_PER_HOUR
    job_hours: float = 0.0
    record_cost_ms: float = 0.0
    stopping_s: float = 30.0
    refuse_pages: frozenset[int] = frozenset()
    # "refused": InvokeModel (and batch InvokeModel records) answer a PDF document block with the
    # ValidationException of Bedrock's "API restrictions" page (docs/offline.md, "InvokeModel and the two PDF modes").
    invoke_model_documents: str = "accepted"
    # The refusal's wording when set (AWS publishes none, so code must not read it): any text without a comma.
    document_refusal_message: str = ""
    # PDF document blocks of these pages (title page-N) answer ValidationException naming the document, as a
    # page whose PDF the model cannot parse would; its image form passes (issue 42.1: no form switch on it).
    corrupt_pdf_pages: frozenset[int] = frozenset()
    # Bedrock service tiers (docs/architecture.md "Service tiers"): the model ids that accept serviceTier flex
    # (joined by +, or * for every model); any other model answers flex with ValidationException.
    flex_models: frozenset[str] = frozenset()
    # Share of flex calls shed (ThrottlingException) whatever the load; under a throttle_rpm quota flex
    # is also shed once half the window is used, before any default call is.
    flex_throttle_rate: float = 0.0
    # Share of flex calls answered at the default tier instead: Bedrock's service-tiers page says the response's
    # serviceTier (X-Amzn-Bedrock-Service-Tier, ResolvedServiceTier) is the tier actually used, which is what bills.
    flex_served_as_default_rate: float = 0.0

    def accepts_flex(self, model_id: str) -> bool:
        return "*" in self.flex_models or model_id in self.flex_models

    def in_progress_s(self, records: int) -> float:
        """Emulated seconds a job of ``records`` records spends InProgress."""
        if self.job_hours:
            return self.job_hours * 3600
        return records * 3600 / self.records_per_hour


def _rate(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise ValueError("must be between 0 and 1")
    return value


def _flag(text: str) -> bool:
    if text not in ("0", "1", "true", "false"):
        raise ValueError("must be 0 or 1")
    return text in ("1", "true")


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError("must be >= 0")
    return value


def _non_negative(text: str) -> float:
    value = float(text)
    if not value >= 0.0:  # also rejects nan
        raise ValueError("must be >= 0")
    return value


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0.0 or value == float("inf"):
        raise ValueError("must be a finite number > 0")
    return value


def _pages(text: str) -> frozenset[int]:
    pages = frozenset(int(part) for part in text.split("+") if part.strip())
    if not pages or min(pages) < 1:
        raise ValueError("must be page numbers >= 1 joined by + (3+7)")
    return pages


def _documents(text: str) -> str:
    if text not in ("accepted", "refused"):
        raise ValueError("must be accepted or refused")
    return text


def _models(text: str) -> frozenset[str]:
    models = frozenset(part.strip() for part in text.split("+") if part.strip())
    if not models:
        raise ValueError("must be model ids joined by + (or *)")
    return models


def _outcome(text: str) -> str:
    if text not in JOB_OUTCOMES:
        raise ValueError(f"must be one of {', '.join(JOB_OUTCOMES)}")
    return text


_PARSERS: dict[str, Callable[[str], Any]] = {
    "job_outcome": _outcome,
    "record_error_rate": _rate,
    "truncate_rate": _rate,
    "content_filter_rate": _rate,
    "guardrail_rate": _rate,
    "drop_terminal_event": _flag,
    "duplicate_events": _flag,
    "event_delay_s": _non_negative,
    "throttle_rpm": _count,
    "converse_latency_ms": _count,
    "throttle_rate": _rate,
    "output_ms_per_token": _non_negative,
    "omit_rate": _rate,
    "marker_fault_rate": _rate,
    "create_throttle": _count,
    "time_scale": _positive,
    "records_per_hour": _positive,
    "job_hours": _non_negative,
    "record_cost_ms": _non_negative,
    "stopping_s": _non_negative,
    "refuse_pages": _pages,
    "invoke_model_documents": _documents,
    "document_refusal_message": str,
    "corrupt_pdf_pages": _pages,
    "flex_models": _models,
    "flex_throttle_rate": _rate,
    "flex_served_as_default_rate": _rate,
}
assert set(_PARSERS) == {f.name for f in fields(Faults)}
_VERBATIM = frozenset({"document_refusal_message"})  # taken as written, case kept


def parse_faults(text: str) -> Faults:
    """Parse ``"key=value,key=value"``; empty text gives the defaults."""
    values: dict[str, Any] = {}
    for item in (part.strip() for part in (text or "").split(",")):
        if not item:
            continue
        key, sep, raw = item.partition("=")
        key, raw = key.strip(), raw.strip()
        if key not in _PARSERS:
            known = ", ".join(sorted(_PARSERS))
            raise ValueError(f"unknown emulator fault {key!r}; known: {known}")
        if not sep or not raw:
            raise ValueError(f"emulator fault {key!r} needs a value ({key}=...)")
        if key == "time_scale" and raw.lower() == "auto":
            values[key] = "auto"  # resolved below, once records_per_hour and record_cost_ms are known
            continue
        try:
            values[key] = _PARSERS[key](raw if key in _VERBATIM else raw.lower())
        except ValueError as exc:
            raise ValueError(f"bad value {raw!r} for emulator fault {key!r}: {exc}") from None
    if values.get("time_scale") == "auto":
        values["time_scale"] = auto_time_scale(values.get("records_per_hour", BATCH_RECORDS_PER_HOUR), values.get("record_cost_ms", 0.0))
    return Faults(**values)


def draw(seed: str, fault: str) -> float:
    """A uniform number in [0, 1) fixed by ``seed`` and the fault's name.

    Each fault gets its own draw, so raising one rate never changes which records
    another fault hits.
    """
    digest = hashlib.sha256(f"{fault}\x00{seed}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def answer_fault(faults: Faults, seed: str, pages: frozenset[int] = frozenset()) -> str | None:
    """Which answer-level fault (if any) hits the call identified by ``seed`` holding ``pages``."""
    if faults.refuse_pages & pages:
        return "content_filter"
    for name, rate in (
        ("content_filter", faults.content_filter_rate),
        ("guardrail", faults.guardrail_rate),
        ("truncate", faults.truncate_rate),
        ("omit", faults.omit_rate),
    ):
        if rate and draw(seed, name) < rate:
            return name
    if faults.marker_fault_rate and draw(seed, "markers") < faults.marker_fault_rate:
        kinds = ("markers_skip", "markers_repeat", "markers_reorder")
        return kinds[int(draw(seed, "marker_kind") * len(kinds))]
    return None
