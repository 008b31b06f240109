"""What was found of a model on this account: the page form it takes (db/page_forms.py) and its service tiers (db/service_tiers.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from batchlane.rows.model_probes import PageForm


class PageFormRepository(Protocol):
    """The page form recorded per model, what ``BATCHLANE_PAGE_FORM=auto`` follows (db/page_forms.py)."""

    def recorded_forms(self) -> dict[str, str]: ...  # model id → recorded form; {} when nothing was recorded
    def get(self, model_id: str) -> PageForm | None: ...
    def record_form(self, model_id: str, page_form: str, *, source: str, accepted: Mapping[str, Any] | None = None, detail: str | None = None) -> None:
        """Insert or replace the model's form (the last finding wins), stamped now; ``page_form`` one of pdf/image,
        ``source`` doctor or refusal (anything else is refused)."""
        ...


class ServiceTierRepository(Protocol):
    """What the chunk processor's Flex rule reads (domain/service_tier.py): the doctor's probe of a model's tier, and
    why a job left the pool or its lane."""

    def probed(self, model_id: str, tier: str = "flex") -> bool | None: ...  # True accepted, False refused, None never probed
    def record_probe(self, model_id: str, tier: str, *, accepted: bool, detail: str) -> None: ...  # the last probe wins
    def job_lane_reason(self, job_id: str) -> str | None: ...  # deadline, pool_too_small, …; None when it never left one
