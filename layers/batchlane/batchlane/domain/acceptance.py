"""When a model answer is good enough to keep: the ONE rule both lanes apply."""

from __future__ import annotations

from dataclasses import dataclass

REJECTED_STOP_REASONS = frozenset({"guardrail_intervened", "content_filtered", "max_tokens"})


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    reason: str | None = None  # why not, when not accepted


def judge(text: str | None, stop_reason: str | None) -> Verdict:
    """Accept only non-empty text whose stop reason is not a refusal or a truncation."""
    if stop_reason in REJECTED_STOP_REASONS:
        return Verdict(False, f"stop_reason={stop_reason}")
    if not text or not text.strip():
        return Verdict(False, "empty_text")
    return Verdict(True)
