"""Issue 15 "Cost and fairness" in the template: reserved concurrency, the priority group, budget settings."""

from __future__ import annotations

from typing import Any

from infra_testlib import Synth, camel, context_of_cdk_json

from batchlane.config import Settings
from infra.config import DEFAULT_BUDGET, DEFAULT_RESERVED_CONCURRENCY


def _function(synth: Synth, name: str) -> dict[str, Any]:
    return synth.resources[synth.logical_id(f"Compute/{camel(name)}")]


def test_no_function_reserves_concurrency_by_default_so_a_low_quota_account_can_deploy(synth: Synth) -> None:
    """Issue 21: reserving 120 failed the first deploy on an account whose limit is under 220 (AWS keeps 100
    unreserved). Fairness is chunk admission per owner: the chunk slots reach the functions and the doctor."""
    assert context_of_cdk_json()["reservedConcurrency"] == DEFAULT_RESERVED_CONCURRENCY == {}
    reserving = [k for k, r in synth.of_type("AWS::Lambda::Function").items() if "ReservedConcurrentExecutions" in r["Properties"]]
    assert reserving == []
    env = _function(synth, "chunk_processor")["Properties"]["Environment"]["Variables"]
    assert env["BATCHLANE_CHUNK_SLOTS"] == str(context_of_cdk_json()["chunkSlots"]) == "100"
    assert Settings(**{k.lower(): v for k, v in env.items() if k.startswith("BATCHLANE_CHUNK_SLOTS")}).batchlane_chunk_slots == 100


def test_a_reservation_asked_for_is_deployed_and_sizes_the_chunk_slots() -> None:
    from aws_cdk import App

    from infra.config import load

    config = load(App(context={"reservedConcurrency": {"chunk_processor": 40}}).node)
    assert config.reserved_concurrency == {"chunk_processor": 40}
    assert config.budget_environment()["BATCHLANE_CHUNK_SLOTS"] == "40", "admission never plans past the reservation"
    lane = config.doctor_settings()
    assert (lane["BATCHLANE_CHUNK_SLOTS"], lane["BATCHLANE_RESERVED_CONCURRENCY"]) == ("40", '{"chunk_processor":40}')


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
