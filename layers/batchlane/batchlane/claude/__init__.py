"""Asking Claude about pages (was ``converter/``): Anthropic Messages requests (InvokeModel) for one page (batch,
primed) or several (on-demand), sent through a transport seam."""

from batchlane.claude.multipage import MULTI_PAGE_INSTRUCTION, MarkerProblem, build_pages_request, split_by_markers, strip_own_marker
from batchlane.claude.page import PageResult, convert_page, page_result
from batchlane.claude.request import ConverseRequest, ConverterConfig, PageRequest, build_page_request
from batchlane.claude.transports import (
    CaptureTransport,
    FormFallbackTransport,
    FormMemory,
    ModelAnswer,
    ModelCallError,
    OnDemandTransport,
    PrimedResult,
    PrimedTransport,
    ReadTimeoutPolicy,
    Transport,
    answer_from_messages,
)

__all__ = [
    "MULTI_PAGE_INSTRUCTION",
    "CaptureTransport",
    "ConverseRequest",
    "ConverterConfig",
    "FormFallbackTransport",
    "FormMemory",
    "MarkerProblem",
    "ModelAnswer",
    "ModelCallError",
    "OnDemandTransport",
    "PageRequest",
    "PageResult",
    "PrimedResult",
    "PrimedTransport",
    "ReadTimeoutPolicy",
    "Transport",
    "answer_from_messages",
    "build_page_request",
    "build_pages_request",
    "convert_page",
    "page_result",
    "split_by_markers",
    "strip_own_marker",
]
