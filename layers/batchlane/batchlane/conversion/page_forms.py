"""The page form a conversion sends, wired from the setting and the database (domain/page_form.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from batchlane.converter import ConverterConfig, FormFallbackTransport, FormMemory, Transport
from batchlane.db import page_forms as repo
from batchlane.domain import page_form as forms
from batchlane.observability import logger


def auto(settings: Any) -> bool:
    return str(settings.batchlane_page_form) == forms.AUTO


def converter_config(db: Any, settings: Any, options: Mapping[str, Any] | None) -> ConverterConfig:
    """The converter's config with the page form resolved (one short read when the setting is auto)."""
    recorded = repo.recorded_forms(db) if auto(settings) else {}
    return ConverterConfig.from_settings(settings, options, recorded_forms=recorded)


def with_form_fallback(db: Any, settings: Any, config: ConverterConfig, transport: Transport) -> Transport:
    """``transport`` itself unless the setting is auto; then a refused form switches and is recorded for both lanes."""
    if not auto(settings):
        return transport

    def record(model_id: str, form: str, detail: str) -> None:
        logger.warning("page form refused: switching", model_id=model_id, page_form=form, detail=detail[:200])
        repo.record_form(db, model_id, form, source="refusal", detail=detail)

    return FormFallbackTransport(transport, FormMemory({config.model_id: config.page_form}, record))
