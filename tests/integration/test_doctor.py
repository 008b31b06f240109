"""`batchlane doctor --json` against the offline stack: the operator's preflight, end to end.

The offline stack publishes the outputs a deployed stack has (state.json); the doctor
reads them and checks the emulated account through boto3 (moto for STS, IAM, S3,
EventBridge and Lambda; our Bedrock emulator for models, Service Quotas and batch jobs).
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from batchlane.db.migrate import migration_status
from batchlane_dev.cli.main import main
from batchlane_dev.contract import component_errors
from batchlane_dev.local.daemon import write_state

STATIC_CHECKS = {
    "credentials",
    "region",
    "model us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    "service role trust",
    "service role policy",
    "bucket encryption",
    "bucket TLS only",
    "bucket lifecycle",
    "batch state-change rule",
    "database migrations",
    "database TLS",
    "lambda concurrency",
    "quota min_records",
    "quota max_records",
    "quota max_concurrent_jobs",
    "quota max_file_gb",
    "quota max_job_gb",
}


def doctor(stack, tmp_path, *args: str):  # type: ignore[no-untyped-def]
    write_state(tmp_path, stack)
    result = CliRunner().invoke(main, ["doctor", "--workdir", str(tmp_path), "--json", *args], catch_exceptions=False)
    report = json.loads(result.stdout)
    assert component_errors(report, "DoctorReport") == []  # its --json is described (docs/api/openapi.yaml)
    return result, {check["name"]: check for check in report["checks"]}


def test_doctor_passes_every_check_on_a_healthy_offline_stack(stack_factory, tmp_path):
    stack = stack_factory(schedules=False)
    result, checks = doctor(stack, tmp_path)
    assert set(checks) == STATIC_CHECKS
    assert [name for name, check in checks.items() if not check["ok"]] == []
    assert result.exit_code == 0 and result.stderr == ""
    assert "Claude Sonnet 4.5" in checks["model us.anthropic.claude-sonnet-4-5-20250929-v1:0"]["detail"]
    assert "account limit 1000" in checks["lambda concurrency"]["detail"] and "chunk slots 100" in checks["lambda concurrency"]["detail"]


def test_a_setting_over_the_account_quota_is_a_warning_and_a_non_zero_exit(stack_factory, tmp_path):
    # Given an account that allows 2 concurrent batch jobs and a deployment set to 10
    stack = stack_factory(schedules=False, extra_env={"BATCHLANE_EMULATED_QUOTAS": '{"max_concurrent_jobs": 2}', "BATCH_CONVERSION_MAX_CONCURRENT_JOBS": "10"})
    result, checks = doctor(stack, tmp_path)
    concurrent = checks["quota max_concurrent_jobs"]
    assert concurrent["ok"] is False and concurrent["severity"] == "warning"
    assert "BATCH_CONVERSION_MAX_CONCURRENT_JOBS=10 exceeds the account's quota of 2" in concurrent["detail"]
    assert result.exit_code == 1
    assert "problem: quota max_concurrent_jobs: " in result.stderr
    assert [name for name, check in checks.items() if not check["ok"]] == ["quota max_concurrent_jobs"]


def test_an_unknown_model_fails_model_access_and_skips_the_live_calls(stack_factory, tmp_path):
    stack = stack_factory(schedules=False, extra_env={"BATCHLANE_MODEL_ID": "us.anthropic.claude-nonexistent-v1:0"})
    result, checks = doctor(stack, tmp_path, "--live")
    model = checks["model us.anthropic.claude-nonexistent-v1:0"]
    assert model["ok"] is False and "ResourceNotFoundException" in model["detail"]
    assert checks["live"]["ok"] is False and "skipped" in checks["live"]["detail"]
    assert result.exit_code == 1


@pytest.fixture(scope="module")
def live_checks(tmp_path_factory, migrated_url, stack_starter):  # type: ignore[no-untyped-def]
    stack = stack_starter(migrated_url, faults="time_scale=36000", extra_env={"BATCH_CONVERSION_MIN_RECORDS": "5"}, schedules=False)
    try:
        yield doctor(stack, tmp_path_factory.mktemp("doctor-live"), "--live", "--quality")[1]
    finally:
        stack.stop()


def test_live_runs_a_pilot_batch_job_of_the_minimum_record_count_on_the_emulator(live_checks):
    pilot = live_checks["live: pilot batch job"]
    assert pilot["ok"] is True, pilot["detail"]
    assert pilot["detail"].startswith("Completed in ") and "5/5 records accepted from 3 input files; $" in pilot["detail"]


def test_live_on_demand_call_sees_the_picture_on_the_page(live_checks):
    """Fails while pages go to Converse as citation-less documents (text extraction only, issue 10 point 1)."""
    for form in ("pdf", "image"):
        visual = live_checks[f"live: visual on-demand call ({form})"]
        assert visual["ok"] is True and "describes the picture" in visual["detail"], visual["detail"]


def test_live_on_a_healthy_account_records_the_pdf_form_both_lanes_accept(live_checks, db):
    forms = live_checks["live: page forms"]
    assert forms["ok"] is True, forms["detail"]
    assert forms["data"]["pageForms"]["accepted"] == {"pdf": {"onDemand": True, "batch": True}, "image": {"onDemand": True, "batch": True}}
    assert forms["data"]["pageForms"]["chosen"] == "pdf"


def test_live_json_reports_the_refused_pdf_form_and_auto_records_the_image_form(stack_factory, tmp_path, db):
    """Issue 22.1: an account where InvokeModel refuses document blocks (Bedrock "API restrictions")."""
    stack = stack_factory("time_scale=36000,invoke_model_documents=refused", extra_env={"BATCH_CONVERSION_MIN_RECORDS": "4"}, schedules=False)
    write_state(tmp_path, stack)
    result = CliRunner().invoke(main, ["doctor", "--workdir", str(tmp_path), "--json", "--live"], catch_exceptions=False)
    report = json.loads(result.stdout)
    assert component_errors(report, "DoctorReport") == []  # its --json is described (docs/api/openapi.yaml)
    assert report["pageForms"]["accepted"] == {"pdf": {"onDemand": False, "batch": False}, "image": {"onDemand": True, "batch": True}}
    assert report["pageForms"]["chosen"] == "image" and report["pageForms"]["recorded"] is True
    assert result.exit_code == 0, result.stderr  # a refused form is a finding, not a broken deployment
    assert "refused for their page form: pdf (2)" in {c["name"]: c for c in report["checks"]}["live: pilot batch job"]["detail"]
    row = db.one("SELECT page_form, source FROM page_forms WHERE model_id = :m", m=report["pageForms"]["modelId"])
    assert row == {"page_form": "image", "source": "doctor"}


def test_migration_status_reports_without_applying(db):
    status = migration_status(db)
    assert status["pending"] == [] and status["applied"]
    assert status["tls"] is False and status["loopback"] is True  # the embedded server on a Unix socket


def test_stack_name_reads_the_outputs_from_cloudformation(stack_factory, monkeypatch):
    """`--stack-name` takes the DescribeStacks path (moto's CloudFormation holds the offline outputs);
    as a deployed stack, the bucket must refuse plain HTTP, which the offline bucket does not."""
    import boto3

    stack = stack_factory(schedules=False)
    template = {
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},  # a stack needs one resource
        "Outputs": {key: {"Value": value} for key, value in stack.outputs.items() if value},
    }
    boto3.client("cloudformation").create_stack(StackName="Batchlane", TemplateBody=json.dumps(template))
    result = CliRunner().invoke(main, ["doctor", "--stack-name", "Batchlane", "--json"], catch_exceptions=False)
    report = json.loads(result.stdout)
    assert component_errors(report, "DoctorReport") == []  # its --json is described (docs/api/openapi.yaml)
    assert report["target"] == "Batchlane"
    assert [c["name"] for c in report["checks"] if not c["ok"]] == ["bucket TLS only"]
    assert result.exit_code == 1 and "problem: bucket TLS only: " in result.stderr

    missing = CliRunner().invoke(main, ["doctor", "--stack-name", "NoSuchStack", "--json"], catch_exceptions=False)
    assert missing.exit_code == 1 and "problem: stack outputs: stack 'NoSuchStack'" in missing.stderr


def test_the_table_keeps_every_model_and_rule_name_whole_when_piped(stack_factory, tmp_path):
    """Issue 24.9: piped (a log, a script), rich's 80 columns used to cut model ids and rule names."""
    stack = stack_factory(schedules=False)
    _, checks = doctor(stack, tmp_path)
    table = CliRunner().invoke(main, ["doctor", "--workdir", str(tmp_path)], catch_exceptions=False).stdout
    lines = table.splitlines()
    for name, check in checks.items():
        assert any(name in line and check["detail"] in line for line in lines), (name, check["detail"])


def test_live_json_reports_flex_refused_for_todays_claude_model_and_records_it(live_checks):
    """Issue 22.10: the emulator, like AWS's documentation for Claude, does not take flex by default."""
    probe = live_checks["live: service tier flex"]
    assert probe["ok"] is True, probe["detail"]  # a refusal is a finding
    tiers = probe["data"]["serviceTiers"]
    assert tiers["flex"]["accepted"] is False and "ValidationException" in tiers["flex"]["detail"]
    assert (tiers["flexOn"], tiers["why"], tiers["documented"], tiers["recorded"]) == (False, "rate_missing", "not_documented", True)


def test_live_json_on_a_flex_capable_model_with_a_flex_rate_turns_the_flex_lane_on(stack_factory, tmp_path, db, monkeypatch):
    model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    # the stack sets BATCHLANE_FLEX_DISCOUNT (extra_env) and restores the environment when it stops; a monkeypatch
    # here was undone before that stop, which then put the discount back for every later test of the process
    stack = stack_factory(
        f"time_scale=36000,flex_models={model}", extra_env={"BATCH_CONVERSION_MIN_RECORDS": "4", "BATCHLANE_FLEX_DISCOUNT": "0.5"}, schedules=False
    )
    write_state(tmp_path, stack)
    result = CliRunner().invoke(main, ["doctor", "--workdir", str(tmp_path), "--json", "--live"], catch_exceptions=False)
    report = json.loads(result.stdout)
    assert component_errors(report, "DoctorReport") == []  # its --json is described (docs/api/openapi.yaml)
    assert report["serviceTiers"]["flex"] == {"accepted": True, "detail": "accepted"}
    assert report["serviceTiers"]["flexOn"] is True and report["serviceTiers"]["why"] == "probe_accepted"
    assert report["serviceTiers"]["recorded"] is True and result.exit_code == 0, result.stderr
    assert stack.bedrock.served_by_tier()["flex"]["requests"] == 1
    assert db.one("SELECT accepted FROM service_tiers WHERE model_id = :m AND tier = 'flex'", m=model) == {"accepted": True}


def test_live_quality_scores_the_sample_through_both_lanes_and_says_the_score_is_the_emulators(live_checks):
    """Issue 42.7 offline: the quality probe runs against the emulator, which reads the text layer: its score is
    printed as the emulator's, never as Claude's, and a low one (it keeps running heads) does not fail the doctor."""
    quality = live_checks["live: quality"]
    assert quality["ok"] is True, quality["detail"]
    report = quality["data"]["quality"]
    assert report["emulated"] is True and report["scoredBy"].endswith("the emulator's score, not Claude's")
    assert "not Claude's" in quality["detail"] and quality["detail"].startswith("scored by batchlane offline emulator")
    lanes = report["lanes"]
    assert set(lanes) == {"onDemand", "batch"}
    for lane in lanes.values():
        assert set(lane["byKind"]) == {"text", "furniture", "order", "table", "equation"}
        assert lane["byKind"]["text"]["passRate"] == "1.00"  # the emulator reads every sentence of the text layer
        assert lane["byKind"]["furniture"]["passRate"] == "0.00"  # ...and keeps the running heads: no model here
        assert lane["costUsd"] is not None and float(lane["costUsd"]) > 0
    assert lanes["batch"]["byKind"]["text"]["total"] > lanes["onDemand"]["byKind"]["text"]["total"]  # repeated to the minimum records
    assert "Completed" in lanes["batch"]["note"]


def test_quality_needs_live(tmp_path):
    result = CliRunner().invoke(main, ["doctor", "--workdir", str(tmp_path), "--quality"], catch_exceptions=False)
    assert result.exit_code == 2 and "--quality needs --live" in result.output
