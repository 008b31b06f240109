"""The page form a conversion sends, wired from the setting and the recorded forms (domain/page_form.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from batchlane.claude import ConverterConfig, FormFallbackTransport, FormMemory, Transport
from batchlane.domain import page_form as forms
from batchlane.domain.file_types import IMAGES
from batchlane.observability import logger
from batchlane.ports import PageFormRepository

IMAGE_TYPE_NAMES = frozenset(t.name for t in IMAGES)


def auto(settings: Any) -> bool:
    return str(settings.batchlane_page_form) == forms.AUTO


def converter_config(page_forms: PageFormRepository, settings: Any, options: Mapping[str, Any] | None, *, source_type: str = "pdf") -> ConverterConfig:
    """The converter's config with the page form resolved (one short read when the setting is auto). A job whose
    file was a picture (a scan wrapped as a PDF at the split) is always sent in the image form: a PDF document block
    of a scan would reach Claude as text extraction only (docs/formats.md)."""
    if source_type in IMAGE_TYPE_NAMES:
        return replace(ConverterConfig.from_settings(settings, options, recorded_forms={}), page_form=forms.IMAGE)
    recorded = page_forms.recorded_forms() if auto(settings) else {}
    return ConverterConfig.from_settings(settings, options, recorded_forms=recorded)


def with_form_fallback(page_forms: PageFormRepository, settings: Any, config: ConverterConfig, transport: Transport) -> Transport:
    """``transport`` itself unless the setting is auto; then a refused form switches and is recorded for both lanes."""
    if not auto(settings):
        return transport

    def record(model_id: str, form: str, detail: str) -> None:
        logger.warning("page form refused: switching", model_id=model_id, page_form=form, detail=detail[:200])
        page_forms.record_form(model_id, form, source="refusal", detail=detail)

    return FormFallbackTransport(transport, FormMemory({config.model_id: config.page_form}, record))
