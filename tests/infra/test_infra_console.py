"""The web console on AWS (issue 25): private bucket behind CloudFront with OAC, /api/* to API Gateway on the
same origin, security headers, the console's own Cognito client (code + PKCE), the upload bucket's CORS rule."""

from __future__ import annotations

import json
from typing import Any

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


def test_every_console_answer_carries_csp_hsts_and_frame_ancestors_none(synth: Synth) -> None:
    headers = _one(synth, "AWS::CloudFront::ResponseHeadersPolicy")["ResponseHeadersPolicyConfig"]["SecurityHeadersConfig"]
    csp = headers["ContentSecurityPolicy"]["ContentSecurityPolicy"]
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
    [rule] = synth.resources[synth.logical_id("Storage/Bucket")]["Properties"]["CorsConfiguration"]["CorsRules"]
    assert set(rule["AllowedMethods"]) == {"POST", "GET"}
    [origin] = rule["AllowedOrigins"]
    assert "*" not in json.dumps(origin) and "Distribution" in json.dumps(origin)
    assert {"ETag", "Content-Range", "Accept-Ranges"} <= set(rule["ExposedHeaders"])


def test_the_console_client_allows_the_refresh_token_flow_alone(synth: Synth) -> None:
    """Issue 42.3: with ExplicitAuthFlows unset, Cognito allows SRP, custom and refresh-token flows (Cognito's
    "App client" settings); the console signs in through the hosted page only, so refresh is all it may do."""
    clients = [r["Properties"] for r in synth.template["Resources"].values() if r["Type"] == "AWS::Cognito::UserPoolClient"]
    [console] = [c for c in clients if c.get("AllowedOAuthFlows")]
    assert console.get("ExplicitAuthFlows") == ["ALLOW_REFRESH_TOKEN_AUTH"]
