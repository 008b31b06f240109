"""Context → configuration: defaults documented in cdk.json, bad values fail the synth."""

from __future__ import annotations

import pytest
from aws_cdk import App
from infra_testlib import context_of_cdk_json

from batchlane.config import DEFAULT_MODEL_ID, Settings
from deployment import topology
from infra.config import DEFAULT_QUOTAS, InfraConfig, load


def _load(**context: object) -> InfraConfig:
    return load(App(context=context).node)


def test_defaults_keep_the_lane_off_and_match_the_package_settings() -> None:
    config = _load()
    assert config.batch_conversion_enabled is False
    assert config.model_id == DEFAULT_MODEL_ID
    env = config.lane_environment()
    assert env["BATCH_CONVERSION_ENABLED"] == "false"
    settings = Settings(**{k.lower(): v for k, v in env.items()})  # the handlers' parser accepts every value
    assert settings.batch_conversion_min_pages == DEFAULT_QUOTAS["minPages"]
    assert settings.batch_conversion_max_records == DEFAULT_QUOTAS["maxRecords"]


def test_cdk_json_documents_every_default() -> None:
    context = context_of_cdk_json()
    assert context["batchConversionEnabled"] is False
    assert context["quotas"] == DEFAULT_QUOTAS
    assert context["schedules"] == {s.name: s.every_minutes for s in topology.SCHEDULES}
    assert context["database"] == "aurora"


def test_command_line_context_strings_are_parsed() -> None:
    config = _load(batchConversionEnabled="true", modelIds="a.b,c.d", quotas='{"maxConcurrentJobs": 3}')
    assert config.batch_conversion_enabled is True
    assert config.model_ids == ("a.b", "c.d")
    assert config.lane_environment()["BATCH_CONVERSION_MAX_CONCURRENT_JOBS"] == "3"


@pytest.mark.parametrize(
    "context",
    [
        {"quotas": {"maxRecord": 1}},
        {"schedules": {"nope": 5}},
        {"database": {"mode": "existing", "secretArn": "x"}},
        {"database": "dynamodb"},
        {"logRetentionDays": 31},
        {"modelIds": []},
        {"stateMachineSettings": {"conversion": {"not_a_setting": 1}}},
    ],
)
def test_bad_context_fails_loudly(context: dict) -> None:
    with pytest.raises(ValueError):
        _load(**context)


def test_wait_timeout_is_the_clamped_batch_timeout_plus_grace() -> None:
    assert _load(quotas={"timeoutHours": 12}).wait_timeout_seconds == (24 + 2) * 3600
    assert _load(quotas={"timeoutHours": 200, "graceHours": 1}).wait_timeout_seconds == (168 + 1) * 3600


def test_the_page_form_context_reaches_every_function_and_a_bad_value_stops_the_synth() -> None:
    assert _load().lane_environment()["BATCHLANE_PAGE_FORM"] == "auto"
    env = _load(pageForm="image").lane_environment()
    assert Settings(**{k.lower(): v for k, v in env.items()}).batchlane_page_form == "image"
    with pytest.raises(ValueError, match="pageForm"):
        _load(pageForm="tiff")


def test_the_flex_discount_context_reaches_the_functions_only_when_the_operator_sets_it() -> None:
    """Issue 22.10: AWS publishes no Flex price for Claude, so none is sent unless configured."""
    assert "BATCHLANE_FLEX_DISCOUNT" not in _load().lane_environment()
    env = _load(flexDiscount=0.4).lane_environment()
    assert str(Settings(**{k.lower(): v for k, v in env.items()}).batchlane_flex_discount) == "0.4"
    with pytest.raises(ValueError, match="flexDiscount"):
        _load(flexDiscount=1.5)
