"""Issue 15 "Cost and fairness" in the template: reserved concurrency, the priority group, budget settings."""

from __future__ import annotations

from typing import Any

from infra_testlib import Synth, camel, context_of_cdk_json

from batchlane.config import Settings
from infra.config import DEFAULT_BUDGET, DEFAULT_RESERVED_CONCURRENCY


def _function(synth: Synth, name: str) -> dict[str, Any]:
    return synth.resources[synth.logical_id(f"Compute/{camel(name)}")]


def test_the_api_and_the_chunk_processor_have_reserved_concurrency(synth: Synth) -> None:
    reserved = context_of_cdk_json()["reservedConcurrency"]
    assert reserved == DEFAULT_RESERVED_CONCURRENCY
    for name in ("api", "chunk_processor"):
        assert _function(synth, name)["Properties"]["ReservedConcurrentExecutions"] == reserved[name], name
    # Everything else draws on the account's unreserved pool
    assert "ReservedConcurrentExecutions" not in _function(synth, "assemble")["Properties"]


def test_the_priority_group_exists_and_the_api_knows_it(synth: Synth) -> None:
    groups = {g["Properties"]["GroupName"] for g in synth.of_type("AWS::Cognito::UserPoolGroup").values()}
    assert {"batchlane-admins", "batchlane-priority"} <= groups
    env = _function(synth, "api")["Properties"]["Environment"]["Variables"]
    assert env["BATCHLANE_PRIORITY_GROUP"] == "batchlane-priority"


def test_budget_defaults_reach_the_functions_and_parse_as_settings(synth: Synth) -> None:
    assert context_of_cdk_json()["budget"] == DEFAULT_BUDGET
    for name in ("api", "job_split", "chunk_processor"):
        env = _function(synth, name)["Properties"]["Environment"]["Variables"]
        settings = Settings(**{k.lower(): v for k, v in env.items() if k.startswith(("BATCHLANE_BUDGET", "BATCHLANE_MAX_LIVE"))})
        assert float(settings.batchlane_budget_usd_per_month) == DEFAULT_BUDGET["usdPerMonth"], name
        assert settings.batchlane_max_live_jobs == DEFAULT_BUDGET["maxLiveJobs"]
        assert settings.batchlane_max_live_pages == DEFAULT_BUDGET["maxLivePages"]
