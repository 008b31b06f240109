"""The page converter: one Converse request per page, sent through a transport seam."""

from batchlane.converter.page import PageResult, convert_page
from batchlane.converter.request import ConverseRequest, ConverterConfig, build_page_request
from batchlane.converter.transports import (
    CaptureTransport,
    ModelAnswer,
    ModelCallError,
    OnDemandTransport,
    PrimedResult,
    PrimedTransport,
    Transport,
)

__all__ = [
    "CaptureTransport",
    "ConverseRequest",
    "ConverterConfig",
    "ModelAnswer",
    "ModelCallError",
    "OnDemandTransport",
    "PageResult",
    "PrimedResult",
    "PrimedTransport",
    "Transport",
    "build_page_request",
    "convert_page",
]
