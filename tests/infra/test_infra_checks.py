"""cdk-nag (AwsSolutions) and cfn-lint on the synthesized app."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_s3 as s3
from cfnlint.api import ManualArgs, lint
from infra_testlib import Synth

from infra import nag

# cfn-lint rules we accept, each with why. Nothing else may be reported.
CFN_LINT_IGNORED = {
    # CDK writes DependsOn on a role next to a GetAtt of the same role (and similar) to order
    # policy attachment; the duplicate is harmless and not ours to remove.
    "W3005": "redundant DependsOn emitted by aws-cdk-lib",
}


def test_cdk_nag_ran_and_reported_nothing_unacknowledged(synth: Synth) -> None:
    report_path = synth.outdir / "validation-report.json"
    if report_path.exists():
        report = json.loads(report_path.read_text())
        failing = [p for p in report["pluginReports"] if p.get("conclusion") != "success" or p.get("violations")]
        assert not failing, json.dumps(failing, indent=1)[:4000]
    # The acknowledgments were written to the template: proof that the checks ran, each with its reason.
    acknowledged = [
        rule
        for resource in synth.resources.values()
        for rule in resource.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", [])
        if rule["id"].startswith("AwsSolutions-")
    ]
    assert acknowledged
    for rule in acknowledged:
        assert len(rule["reason"]) >= 20, rule


def test_every_acknowledgment_names_a_rule_and_a_reason(synth: Synth) -> None:
    assert nag.ACKNOWLEDGED
    for path, rule_id, reason in nag.ACKNOWLEDGED:
        assert rule_id.startswith("AwsSolutions-") and reason.strip(), (path, rule_id)
    with pytest.raises(ValueError):
        nag.acknowledge(App(), "AwsSolutions-S1", "because")


def test_cdk_nag_does_fail_a_synth_with_a_finding(tmp_path: Path) -> None:
    """Control: the same wiring rejects an unencrypted, unlogged bucket."""
    app = App(outdir=str(tmp_path))
    stack = Stack(app, "Careless")
    s3.Bucket(stack, "Open")
    nag.enable(app)
    with pytest.raises(Exception, match="AwsSolutions-S1"):
        app.synth()


def test_cfn_lint_reports_nothing_but_the_documented_rules(synth: Synth) -> None:
    template = (synth.outdir / "Batchlane.template.json").read_text()
    matches = lint(template, config=ManualArgs(regions=["us-east-1"], ignore_checks=sorted(CFN_LINT_IGNORED)))
    assert not matches, "\n".join(str(m) for m in matches)
