"""Outside checkers on the synthesized app (issue 42.6), beside cdk-nag and cfn-lint: checkov 3.3.30 (PyPI, its own
venv: requirements-checkov.lock) reports nothing outside infra/checkov.SKIPS, and asl-validator 4.0.0 (npm,
package.json) passes every state machine as CDK synthesized it. Each has a control that must fail."""

from __future__ import annotations

import fnmatch
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from infra_testlib import Synth

from infra import REPO_ROOT
from infra.checkov import SKIPS

CHECKOV = REPO_ROOT / ".venv-checkov" / "bin" / "checkov"
ASL_VALIDATOR = REPO_ROOT / "node_modules" / ".bin" / "asl-validator"


def run_checkov(template: Path) -> dict[str, Any]:
    """checkov on one CloudFormation template, offline (--skip-download: no Prisma Cloud guidelines), as JSON."""
    if not CHECKOV.exists():
        pytest.fail(f"{CHECKOV} is missing: `make .venv-checkov/.stamp` installs the pinned checkov (make test does)", pytrace=False)
    done = subprocess.run(
        [str(CHECKOV), "-f", str(template), "--framework", "cloudformation", "-o", "json", "--skip-download"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.stdout.strip(), done.stderr[-2000:]
    report: dict[str, Any] = json.loads(done.stdout)
    assert report["summary"]["checkov_version"] == "3.3.30"
    return report


def _path(template: dict[str, Any], result: dict[str, Any]) -> str:
    logical_id = result["resource"].split(".", 1)[1]
    return str(template["Resources"][logical_id]["Metadata"].get("aws:cdk:path", logical_id))


@pytest.fixture(scope="module")
def checkov_report(synth: Synth) -> dict[str, Any]:
    return run_checkov(synth.outdir / "Batchlane.template.json")


def test_checkov_reports_nothing_outside_the_reviewed_list(synth: Synth, checkov_report: dict[str, Any]) -> None:
    results = checkov_report["results"]
    failed = sorted((f["check_id"], _path(synth.template, f)) for f in results["failed_checks"])
    assert failed == [], f"checkov findings outside infra/checkov.SKIPS: fix them, or add a reviewed entry: {failed}"
    assert checkov_report["summary"]["passed"] > 800  # it did check the app
    reasons = {(s.check, s.reason) for s in SKIPS}
    for skipped in results["skipped_checks"]:
        assert (skipped["check_id"], skipped["check_result"]["suppress_comment"]) in reasons, (skipped["check_id"], _path(synth.template, skipped))


def test_every_reviewed_skip_is_written_where_it_applies_and_nowhere_else(synth: Synth) -> None:
    written = {
        (entry["id"], resource["Metadata"]["aws:cdk:path"].removeprefix("Batchlane/"))
        for resource in synth.resources.values()
        for entry in resource.get("Metadata", {}).get("checkov", {}).get("skip", [])
    }
    for skip in SKIPS:
        if skip.unless:
            continue  # written only when its setting is unset (the default synth): checked below through checkov
        used = [path for check, path in written if check == skip.check and any(fnmatch.fnmatchcase(path, p) for p in skip.paths)]
        assert used, f"{skip.check} on {skip.paths}: no such resource any more, drop the entry"


def test_no_function_is_given_reserved_concurrency_to_answer_ckv_aws_115(synth: Synth, checkov_report: dict[str, Any]) -> None:
    functions = synth.of_type("AWS::Lambda::Function")
    assert not [k for k, r in functions.items() if "ReservedConcurrentExecutions" in r["Properties"]], "a reservation can fail a first deploy"
    skipped = [s for s in checkov_report["results"]["skipped_checks"] if s["check_id"] == "CKV_AWS_115"]
    assert len(skipped) == len(functions) and all("fail the first deploy" in s["check_result"]["suppress_comment"] for s in skipped)


def test_the_dead_letter_queues_are_encrypted_with_a_key_eventbridge_may_use(synth: Synth) -> None:
    queues = synth.of_type("AWS::SQS::Queue")
    assert queues and all("KmsMasterKeyId" in q["Properties"] for q in queues.values())
    keys = synth.of_type("AWS::KMS::Key")  # the queues' key, and the key that seals owners' webhook secrets (issue 40.4)
    [key] = [k for logical_id, k in keys.items() if logical_id != synth.logical_id("Webhooks/SecretKey")]
    assert key["Properties"]["EnableKeyRotation"] is True
    statements = key["Properties"]["KeyPolicy"]["Statement"]
    events = [s for s in statements if s.get("Principal") == {"Service": "events.amazonaws.com"}]
    assert events and set(events[0]["Action"]) == {"kms:Decrypt", "kms:GenerateDataKey"} and "aws:SourceAccount" in json.dumps(events[0])


def test_checkov_does_fail_a_finding(tmp_path: Path) -> None:
    """Control: an unencrypted queue and a function without a DLQ are reported."""
    template = {
        "Resources": {
            "Open": {"Type": "AWS::SQS::Queue", "Properties": {}},
            "Fn": {"Type": "AWS::Lambda::Function", "Properties": {"Runtime": "python3.12", "Handler": "h.h", "Role": "arn", "Code": {"ZipFile": "x"}}},
        }
    }
    (tmp_path / "careless.template.json").write_text(json.dumps(template))
    failed = {f["check_id"] for f in run_checkov(tmp_path / "careless.template.json")["results"]["failed_checks"]}
    assert {"CKV_AWS_27", "CKV_AWS_116"} <= failed


def filled_definitions(template: dict[str, Any], folder: Path) -> list[Path]:
    """Each state machine's DefinitionString as deployed: the Fn::Sub's literal variables written in, its references
    (function ARNs) as ARN-shaped placeholders. asl-validator reads JSON, not CloudFormation."""
    paths = []
    for logical_id, resource in sorted(template["Resources"].items()):
        if resource["Type"] != "AWS::StepFunctions::StateMachine":
            continue
        body, variables = resource["Properties"]["DefinitionString"]["Fn::Sub"]

        def fill(match: re.Match[str], variables: dict[str, Any] = variables) -> str:
            value = variables.get(match.group(1))
            return str(value) if isinstance(value, str | int | float) else f"arn:aws:lambda:us-east-1:123456789012:function:{match.group(1)}"

        path = folder / f"{logical_id}.asl.json"
        path.write_text(re.sub(r"\$\{([^}!]+)\}", fill, body))
        paths.append(path)
    return paths


def run_asl_validator(paths: list[Path]) -> subprocess.CompletedProcess[str]:
    if not ASL_VALIDATOR.exists():
        pytest.fail(f"{ASL_VALIDATOR} is missing: `make node_modules/.stamp` installs it (package.json)", pytrace=False)
    args = [str(ASL_VALIDATOR)] + [arg for p in paths for arg in ("--json-path", str(p))]
    return subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)


def test_asl_validator_passes_every_synthesized_state_machine(synth: Synth, tmp_path: Path) -> None:
    paths = filled_definitions(synth.template, tmp_path)
    assert len(paths) == 6  # conversion, batch lane, intake, webhook delivery, folder job, estimate (issue 40)
    for path in paths:
        json.loads(path.read_text())  # every substitution filled
    done = run_asl_validator(paths)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("is valid") == len(paths)


def test_asl_validator_does_fail_a_broken_definition(tmp_path: Path) -> None:
    """Control: a state that names a next state which does not exist."""
    broken = tmp_path / "broken.asl.json"
    broken.write_text(json.dumps({"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "Missing"}}}))
    done = run_asl_validator([broken])
    assert done.returncode != 0 and "is valid" not in done.stdout
