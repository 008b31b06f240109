"""The web console on AWS (issue 25): private bucket behind CloudFront with OAC, /api/* to API Gateway on the
same origin, security headers, the console's own Cognito client (code + PKCE), the upload bucket's CORS rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from infra_testlib import Synth


def _one(synth: Synth, kind: str) -> dict[str, Any]:
    [found] = [r for r in synth.template["Resources"].values() if r["Type"] == kind]
    return found["Properties"]


def test_the_console_bucket_is_private_and_read_by_cloudfront_through_origin_access_control(synth: Synth) -> None:
    dist = _one(synth, "AWS::CloudFront::Distribution")["DistributionConfig"]
    site = synth.resources[synth.logical_id("Console/Site")]["Properties"]
    assert site["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    s3_origin = next(o for o in dist["Origins"] if "S3OriginConfig" in o)
    assert "OriginAccessControlId" in s3_origin and s3_origin["S3OriginConfig"].get("OriginAccessIdentity", "") == ""
    assert _one(synth, "AWS::CloudFront::OriginAccessControl")["OriginAccessControlConfig"]["SigningBehavior"] == "always"
    policy = json.dumps(synth.resources[synth.logical_id("Console/Site/Policy")]["Properties"]["PolicyDocument"])
    assert "cloudfront.amazonaws.com" in policy and "AWS:SourceArn" in policy  # only this distribution may read


def test_api_paths_go_to_api_gateway_on_the_same_origin_uncached_without_the_viewers_host(synth: Synth) -> None:
    dist = _one(synth, "AWS::CloudFront::Distribution")["DistributionConfig"]
    [api] = [b for b in dist["CacheBehaviors"] if b["PathPattern"] == "/api/*"]
    origin = next(o for o in dist["Origins"] if o["Id"] == api["TargetOriginId"])
    assert "execute-api" in json.dumps(origin["DomainName"]) and origin["OriginPath"] == "/v1"
    assert origin["CustomOriginConfig"]["OriginProtocolPolicy"] == "https-only"
    assert set(api["AllowedMethods"]) >= {"GET", "POST", "PUT", "DELETE"}
    assert api["CachePolicyId"] == "4135ea2d-6df8-44a3-9df3-4b5a84be39ad"  # Managed-CachingDisabled
    assert api["OriginRequestPolicyId"] == "b689b0a8-53d0-40ab-baf2-68738e2966ac"  # Managed-AllViewerExceptHostHeader
    assert dist["DefaultCacheBehavior"]["ViewerProtocolPolicy"] == "redirect-to-https"


def _text(value: Any) -> str:
    """A template string that may be an Fn::Join of tokens, as text: ``{Ref: X}`` → ``<X>``, GetAtt → ``<X.Attr>``."""
    if isinstance(value, str):
        return value
    if "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return str(separator).join(_text(p) for p in parts)
    if "Ref" in value:
        return f"<{value['Ref']}>"
    if "Fn::GetAtt" in value:
        return f"<{'.'.join(value['Fn::GetAtt'])}>"
    raise AssertionError(f"unexpected token {value}")


def test_the_console_may_connect_to_exactly_the_bucket_and_cognito_hosts_it_needs(synth: Synth) -> None:
    """Issue 40.5: ``connect-src https://*.amazonaws.com`` let the console's scripts reach any AWS endpoint; it names
    the working bucket's regional endpoint (where the API's presigned URLs point), Cognito's user pool endpoint and
    the console's sign-in domain, no wildcard."""
    headers = _one(synth, "AWS::CloudFront::ResponseHeadersPolicy")["ResponseHeadersPolicyConfig"]["SecurityHeadersConfig"]
    csp = _text(headers["ContentSecurityPolicy"]["ContentSecurityPolicy"])
    connect = next(d for d in csp.split(";") if d.strip().startswith("connect-src")).split()[1:]
    bucket = synth.logical_id("Storage/Bucket")
    assert connect == [
        "'self'",
        f"https://<{bucket}.RegionalDomainName>",
        "https://cognito-idp.<AWS::Region>.<AWS::URLSuffix>",
        "https://batchlane-<AWS::AccountId>.auth.<AWS::Region>.amazoncognito.com",
    ], connect
    assert "*" not in " ".join(connect)
    domain = _one(synth, "AWS::Cognito::UserPoolDomain")
    assert _text(domain["Domain"]) == "batchlane-<AWS::AccountId>"  # the sign-in host the policy names


def test_every_console_answer_carries_csp_hsts_and_frame_ancestors_none(synth: Synth) -> None:
    headers = _one(synth, "AWS::CloudFront::ResponseHeadersPolicy")["ResponseHeadersPolicyConfig"]["SecurityHeadersConfig"]
    csp = _text(headers["ContentSecurityPolicy"]["ContentSecurityPolicy"])
    assert "default-src 'self'" in csp and "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
    assert headers["StrictTransportSecurity"]["AccessControlMaxAgeSec"] >= 31_536_000
    assert headers["FrameOptions"]["FrameOption"] == "DENY"
    dist = _one(synth, "AWS::CloudFront::Distribution")["DistributionConfig"]
    assert all("ResponseHeadersPolicyId" in b for b in [dist["DefaultCacheBehavior"], *dist["CacheBehaviors"]])


def test_the_console_has_its_own_cognito_client_code_grant_with_pkce_and_no_secret(synth: Synth) -> None:
    clients = [r["Properties"] for r in synth.template["Resources"].values() if r["Type"] == "AWS::Cognito::UserPoolClient"]
    assert len(clients) == 2  # the CLI's and the console's
    [console] = [c for c in clients if c.get("AllowedOAuthFlows")]
    assert console["AllowedOAuthFlows"] == ["code"] and console["AllowedOAuthFlowsUserPoolClient"] is True
    assert console.get("GenerateSecret", False) is False  # a public client: PKCE, not a secret
    assert "implicit" not in console["AllowedOAuthFlows"] and set(console["AllowedOAuthScopes"]) == {"openid", "email"}
    assert "CloudFront" in json.dumps(console["CallbackURLs"]) or "Distribution" in json.dumps(console["CallbackURLs"])


def test_the_upload_bucket_allows_the_presigned_post_and_ranged_reads_from_the_console_origin_only(synth: Synth) -> None:
    """Set once the bucket and the distribution exist (a custom resource's PutBucketCors): as the bucket's own property
    it would close a cycle with the console's CSP, which names the bucket's host."""
    assert "CorsConfiguration" not in synth.resources[synth.logical_id("Storage/Bucket")]["Properties"]
    [cors] = [r["Properties"] for r in synth.template["Resources"].values() if r["Type"] == "Custom::AWS"]
    call = _text(cors["Create"])
    assert '"action":"putBucketCors"' in call and f"<{synth.logical_id('Storage/Bucket')}>" in call
    origin = call.split('"AllowedOrigins":[')[1].split("]")[0]
    assert "*" not in origin and "Distribution" in origin
    assert '"AllowedMethods":["POST","GET"]' in call and '"ExposeHeaders":["ETag","Content-Range","Accept-Ranges","Content-Length"]' in call
    assert _text(cors["Update"]) == call
    granted = [
        (statement["Action"], statement["Resource"])
        for policy in synth.of_type("AWS::IAM::Policy").values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if "PutBucketCORS" in json.dumps(statement["Action"])
    ]
    assert granted == [("s3:PutBucketCORS", {"Fn::GetAtt": [synth.logical_id("Storage/Bucket"), "Arn"]})]

def test_the_console_client_allows_the_refresh_token_flow_alone(synth: Synth) -> None:
    """Issue 42.3: with ExplicitAuthFlows unset, Cognito allows SRP, custom and refresh-token flows (Cognito's
    "App client" settings); the console signs in through the hosted page only, so refresh is all it may do."""
    clients = [r["Properties"] for r in synth.template["Resources"].values() if r["Type"] == "AWS::Cognito::UserPoolClient"]
    [console] = [c for c in clients if c.get("AllowedOAuthFlows")]
    assert console.get("ExplicitAuthFlows") == ["ALLOW_REFRESH_TOKEN_AUTH"]


# -- issue 42.5 / 42.6: TLS that holds, CloudFront logs, an optional web ACL ------------------------------------
CERTIFICATE = "arn:aws:acm:us-east-1:123456789012:certificate/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"
WEB_ACL = "arn:aws:wafv2:us-east-1:123456789012:global/webacl/batchlane-console/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"


def _console_only(tmp_path: Path, **settings: Any) -> tuple[dict[str, Any], Path]:
    """The Console construct alone in a small stack (seconds, not a whole synth), with the checkov skips applied."""
    from aws_cdk import App, Aspects, Stack
    from aws_cdk import aws_cognito as cognito
    from aws_cdk import aws_s3 as s3
    from aws_cdk.assertions import Template

    from infra.checkov import CheckovSkips
    from infra.config import InfraConfig
    from infra.console import Console

    config = InfraConfig(**settings)
    stack = Stack(App(), "Edge")
    pool = cognito.UserPool(stack, "Pool")
    Console(
        stack,
        "Console",
        config=config,
        rest_api_id="abc123",
        api_stage="v1",
        user_pool=pool,
        upload_bucket=s3.Bucket(stack, "Uploads"),
        access_logs=s3.Bucket(stack, "AccessLogs"),
    )
    Aspects.of(stack).add(CheckovSkips(config))
    template = Template.from_stack(stack).to_json()
    path = tmp_path / "edge.template.json"
    path.write_text(json.dumps(template))
    return template, path


def _distribution(template: dict[str, Any]) -> dict[str, Any]:
    [found] = [r for r in template["Resources"].values() if r["Type"] == "AWS::CloudFront::Distribution"]
    return found


def test_a_custom_domain_gets_its_acm_certificate_at_tls_1_2_2021_and_passes_checkov_unskipped(tmp_path: Path) -> None:
    from test_infra_checkov import run_checkov

    template, path = _console_only(tmp_path, console_domain="console.example.com", console_certificate_arn=CERTIFICATE, console_web_acl_arn=WEB_ACL)
    dist = _distribution(template)
    config = dist["Properties"]["DistributionConfig"]
    assert config["Aliases"] == ["console.example.com"]
    assert config["ViewerCertificate"] == {"AcmCertificateArn": CERTIFICATE, "MinimumProtocolVersion": "TLSv1.2_2021", "SslSupportMethod": "sni-only"}
    assert config["WebACLId"] == WEB_ACL
    assert "checkov" not in dist.get("Metadata", {}), "with a certificate and a web ACL nothing is skipped on the distribution"
    [client] = [r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::Cognito::UserPoolClient"]
    assert client["CallbackURLs"] == ["https://console.example.com/"]  # sign-in comes back to the custom domain
    report = run_checkov(path)
    results = {(c["check_id"], c["resource"].split(".")[0]): c for c in report["results"]["passed_checks"]}
    assert ("CKV_AWS_174", "AWS::CloudFront::Distribution") in results and ("CKV_AWS_68", "AWS::CloudFront::Distribution") in results
    assert not [f for f in report["results"]["failed_checks"] if f["resource"].startswith("AWS::CloudFront")]


def test_the_default_certificate_is_named_for_what_it_gives(synth: Synth) -> None:
    """Without consoleDomain the console is on *.cloudfront.net, whose certificate accepts TLS 1.0: the template says
    so where checkov reads it, and docs/deploy.md tells the operator how to change it."""
    dist = synth.resources[synth.logical_id("Console/Distribution")]
    viewer = dist["Properties"]["DistributionConfig"].get("ViewerCertificate", {"CloudFrontDefaultCertificate": True})  # absent: the default
    assert viewer.get("CloudFrontDefaultCertificate") is True and "AcmCertificateArn" not in viewer
    [skip] = [s for s in dist["Metadata"]["checkov"]["skip"] if s["id"] == "CKV_AWS_174"]
    assert "TLS 1.0" in skip["comment"]
    deploy = (Path(__file__).resolve().parents[2] / "docs" / "deploy.md").read_text()
    assert "consoleCertificateArn" in deploy and "TLS 1.0" in deploy


def test_cloudfront_writes_standard_logs_to_an_acl_enabled_bucket_of_its_own(synth: Synth) -> None:
    config = synth.resources[synth.logical_id("Console/Distribution")]["Properties"]["DistributionConfig"]
    logs_id = synth.logical_id("Console/Logs")
    assert config["Logging"]["Bucket"] == {"Fn::GetAtt": [logs_id, "RegionalDomainName"]} and config["Logging"]["Prefix"] == "console/"
    bucket = synth.resources[logs_id]["Properties"]
    assert bucket["OwnershipControls"]["Rules"] == [{"ObjectOwnership": "BucketOwnerPreferred"}]  # CloudFront's logs need ACLs
    assert bucket["PublicAccessBlockConfiguration"]["BlockPublicAcls"] is True and "LoggingConfiguration" in bucket


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"consoleDomain": "console.example.com"}, "go together"),
        ({"consoleDomain": "console.example.com", "consoleCertificateArn": CERTIFICATE.replace("us-east-1", "eu-west-1")}, "us-east-1"),
        ({"consoleWebAclArn": WEB_ACL.replace("global", "regional")}, "CLOUDFRONT"),
        ({"consoleDomain": "not a domain", "consoleCertificateArn": CERTIFICATE}, "DNS name"),
    ],
)
def test_console_edge_settings_are_checked_before_a_deploy_would_fail(settings: dict[str, str], message: str) -> None:
    from aws_cdk import App

    from infra.config import load

    with pytest.raises(ValueError, match=message):
        load(App(context=settings).node)
