"""When a model answer is good enough to keep: the ONE rule both lanes apply.

Stop reasons come in two vocabularies: the Anthropic Messages API's (what InvokeModel and
batch InvokeModel records answer, which batchlane sends) and Bedrock Converse's (kept so
an answer of either shape is judged alike). Sources: Anthropic "Stop reasons and fallback"
(platform.claude.com/docs/en/build-with-claude/handling-stop-reasons) and the Bedrock
Converse API reference (stopReason). A truncation keeps its text under a visible marker;
a refusal or an answer that is not the page is rejected outright.
"""

from __future__ import annotations

from dataclasses import dataclass

# The answer stopped before the page was done: what is there is real but incomplete.
TRUNCATED_STOP_REASONS = frozenset(
    {
        "max_tokens",  # both vocabularies: the output hit max_tokens
        "model_context_window_exceeded",  # both: generation ran into the context window
    }
)
# The answer is not (all of) the page: a refusal, a filter, or a turn that expects a tool/continuation.
REFUSED_STOP_REASONS = frozenset(
    {
        "refusal",  # Messages: declined for safety/policy reasons
        "pause_turn",  # Messages: a paused server-tool turn; the answer is unfinished
        "tool_use",  # both: we define no tools, so a tool call is not the page's Markdown
        "guardrail_intervened",  # Converse
        "content_filtered",  # Converse
        "malformed_model_output",  # Converse: the model's output could not be parsed
        "malformed_tool_use",  # Converse
    }
)
REJECTED_STOP_REASONS = TRUNCATED_STOP_REASONS | REFUSED_STOP_REASONS


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    reason: str | None = None  # why not, when not accepted
    truncated: bool = False  # rejected as incomplete: a single page keeps its text, marked


def judge(text: str | None, stop_reason: str | None) -> Verdict:
    """Accept only non-empty text whose stop reason is not a refusal or a truncation."""
    if stop_reason in REJECTED_STOP_REASONS:
        return Verdict(False, f"stop_reason={stop_reason}", truncated=stop_reason in TRUNCATED_STOP_REASONS)
    if not text or not text.strip():
        return Verdict(False, "empty_text")
    return Verdict(True)
