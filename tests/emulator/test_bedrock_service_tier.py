# ruff: noqa: F811  (the emulator's fixtures are imported from its test module and used as parameters)
"""The emulator's service tiers (issue 22.10): serviceTier flex accepted only by the models the fault
lists, flex shed before default under load, and the tier served reported back (header and counters)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError
from test_bedrock_emulator import BUCKET, MODEL, Harness, error_code, harness, page_pdf, s3  # noqa: F401
from test_bedrock_invoke import CONFIG

from batchlane.claude import build_page_request

FLEX_MODEL = f"time_scale=36000,flex_models={MODEL}"


def _invoke(h: Harness, *, tier: str | None = None, model: str = MODEL, text: str = "Ledger totals.") -> dict[str, Any]:
    request = build_page_request(chunk_index=0, page_number=1, pdf_bytes=page_pdf(text), config=CONFIG)
    kwargs = {**request.invoke_kwargs(), "modelId": model}
    if tier:
        kwargs["serviceTier"] = tier
    return h.runtime.invoke_model(**kwargs)  # type: ignore[no-any-return]


def test_a_model_the_fault_lists_is_served_at_flex_and_says_so(harness: Callable[..., Harness]) -> None:
    h = harness(FLEX_MODEL)
    response = _invoke(h, tier="flex")
    assert response["serviceTier"] == "flex"  # botocore reads X-Amzn-Bedrock-Service-Tier
    assert json.loads(response["body"].read())["content"][0]["text"].startswith("Ledger totals.")
    assert _invoke(h)["serviceTier"] == "default"
    served = h.emu.served_by_tier()
    assert served["flex"]["requests"] == 1 and served["default"]["requests"] == 1
    assert served["flex"]["inputTokens"] > 0


def test_flex_for_a_model_not_listed_is_a_validation_exception_and_default_still_serves(harness: Callable[..., Harness]) -> None:
    h = harness("time_scale=36000")  # no model takes flex: what AWS documents for today's Claude models
    with pytest.raises(ClientError) as refused:
        _invoke(h, tier="flex")
    assert error_code(refused) == "ValidationException"
    assert "service tier flex is not supported" in refused.value.response["Error"]["Message"]
    assert _invoke(h)["serviceTier"] == "default"


def test_under_a_quota_flex_is_shed_before_default(harness: Callable[..., Harness]) -> None:
    h = harness(f"{FLEX_MODEL},throttle_rpm=4")
    assert _invoke(h, tier="flex", text="one")["serviceTier"] == "flex"
    assert _invoke(h, tier="flex", text="two")["serviceTier"] == "flex"
    with pytest.raises(ClientError) as shed:  # half the window used: flex sheds ...
        _invoke(h, tier="flex", text="three")
    assert error_code(shed) == "ThrottlingException"
    assert _invoke(h, text="four")["serviceTier"] == "default"  # ... while default is still served
    assert _invoke(h, text="five")["serviceTier"] == "default"
    with pytest.raises(ClientError):
        _invoke(h, text="six")
    assert h.emu.served_by_tier()["flexThrottled"]["requests"] == 1


def test_flex_throttle_rate_sheds_flex_only(harness: Callable[..., Harness]) -> None:
    h = harness(f"{FLEX_MODEL},flex_throttle_rate=1")
    with pytest.raises(ClientError) as shed:
        _invoke(h, tier="flex")
    assert error_code(shed) == "ThrottlingException"
    assert _invoke(h)["serviceTier"] == "default"
