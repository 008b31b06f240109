"""The web console on AWS (docs/console.md): a private S3 bucket behind CloudFront (origin access control),
``/api/*`` routed to API Gateway on the same origin (no CORS on the API), security headers, a second Cognito
app client (authorization code + PKCE) and the working bucket's CORS rule for the console's presigned POST.

The API origin is named by the REST API's id (not its stage URL): the stage depends on the methods, the
methods on the API Lambda, the Lambda on the working bucket, and that bucket's CORS rule on this
distribution, a cycle the stage URL would close.
"""

from __future__ import annotations

from aws_cdk import Aws, Duration, RemovalPolicy, Stack
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_cloudfront as cloudfront
from aws_cdk import aws_cloudfront_origins as origins
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import custom_resources as cr
from constructs import Construct

from infra.config import InfraConfig
from infra.nag import acknowledge


def console_csp(*hosts: str) -> str:
    """The same policy the offline server sends (devtools/batchlane_dev/local/api_server.py CONSOLE_CSP), plus exactly
    the hosts the console reaches on AWS: the working bucket's regional endpoint (the presigned POST, the page view's
    ranged reads), Cognito's user pool endpoint (the OIDC metadata and keys) and its sign-in domain (the token). Never a
    wildcard: ``https://*.amazonaws.com`` let a script reach any AWS endpoint (issue 40.5)."""
    connect = " ".join(["'self'", *(f"https://{host}" for host in hosts)])
    return (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; font-src 'self' data:; "
        f"connect-src {connect}; worker-src 'self' blob:; object-src 'none'; base-uri 'none'; "
        "form-action 'self'; frame-ancestors 'none'"
    )


CLOUDFRONT_LOG_EXPIRY_DAYS = 90


class Console(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: InfraConfig,
        rest_api_id: str,
        api_stage: str,
        user_pool: cognito.UserPool,
        upload_bucket: s3.Bucket,
        access_logs: s3.IBucket,
    ) -> None:
        super().__init__(scope, construct_id)
        self.bucket = s3.Bucket(
            self,
            "Site",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            server_access_logs_bucket=access_logs,
            server_access_logs_prefix="console/",
            removal_policy=RemovalPolicy.DESTROY,  # built files only: `make deploy` uploads them again
            auto_delete_objects=False,
        )
        sign_in_prefix = f"{config.stack_name.lower()}-{Aws.ACCOUNT_ID}"
        csp = console_csp(
            upload_bucket.bucket_regional_domain_name,  # <bucket>.s3.<region>.amazonaws.com: the API signs for it (aws/clients.py)
            f"cognito-idp.{Aws.REGION}.{Aws.URL_SUFFIX}",
            f"{sign_in_prefix}.auth.{Aws.REGION}.amazoncognito.com",
        )
        headers = cloudfront.ResponseHeadersPolicy(
            self,
            "Headers",
            security_headers_behavior=cloudfront.ResponseSecurityHeadersBehavior(
                content_security_policy=cloudfront.ResponseHeadersContentSecurityPolicy(content_security_policy=csp, override=True),
                strict_transport_security=cloudfront.ResponseHeadersStrictTransportSecurity(
                    access_control_max_age=Duration.days(365), include_subdomains=True, override=True
                ),
                frame_options=cloudfront.ResponseHeadersFrameOptions(frame_option=cloudfront.HeadersFrameOption.DENY, override=True),
                content_type_options=cloudfront.ResponseHeadersContentTypeOptions(override=True),
                referrer_policy=cloudfront.ResponseHeadersReferrerPolicy(referrer_policy=cloudfront.HeadersReferrerPolicy.NO_REFERRER, override=True),
            ),
        )
        # CloudFront's standard logs need a bucket with ACLs enabled (CloudFront, "Configure standard logging"): one of
        # their own, kept 90 days, its S3 access logged like the others; the access-log bucket stays ACL-free.
        self.logs = s3.Bucket(
            self,
            "Logs",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
            server_access_logs_bucket=access_logs,
            server_access_logs_prefix="console-cloudfront-logs/",
            lifecycle_rules=[s3.LifecycleRule(id="expire-cloudfront-logs", expiration=Duration.days(CLOUDFRONT_LOG_EXPIRY_DAYS))],
            removal_policy=RemovalPolicy.RETAIN if config.retain_data else RemovalPolicy.DESTROY,
            auto_delete_objects=False,
        )
        # A custom domain with its ACM certificate is the only way CloudFront enforces a minimum TLS version: with
        # the default *.cloudfront.net certificate, minimum_protocol_version is ignored and TLS 1.0 is accepted.
        certificate = (
            acm.Certificate.from_certificate_arn(self, "Certificate", config.console_certificate_arn) if config.console_certificate_arn else None
        )
        api_origin = origins.HttpOrigin(
            f"{rest_api_id}.execute-api.{Aws.REGION}.{Aws.URL_SUFFIX}",
            origin_path=f"/{api_stage}",
            protocol_policy=cloudfront.OriginProtocolPolicy.HTTPS_ONLY,
        )
        self.distribution = cloudfront.Distribution(
            self,
            "Distribution",
            comment="batchlane web console and its API on one origin",
            default_root_object="index.html",
            domain_names=[config.console_domain] if config.console_domain else None,
            certificate=certificate,
            minimum_protocol_version=cloudfront.SecurityPolicyProtocol.TLS_V1_2_2021,  # in force with the certificate only
            ssl_support_method=cloudfront.SSLMethod.SNI if certificate else None,
            web_acl_id=config.console_web_acl_arn,
            enable_logging=True,
            log_bucket=self.logs,
            log_file_prefix="console/",
            default_behavior=cloudfront.BehaviorOptions(
                origin=origins.S3BucketOrigin.with_origin_access_control(self.bucket),
                viewer_protocol_policy=cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
                response_headers_policy=headers,
            ),
            additional_behaviors={
                "/api/*": cloudfront.BehaviorOptions(
                    origin=api_origin,
                    viewer_protocol_policy=cloudfront.ViewerProtocolPolicy.HTTPS_ONLY,
                    allowed_methods=cloudfront.AllowedMethods.ALLOW_ALL,
                    cache_policy=cloudfront.CachePolicy.CACHING_DISABLED,
                    # The Authorization header and the query reach API Gateway; the viewer's Host must not.
                    origin_request_policy=cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
                    response_headers_policy=headers,
                )
            },
        )
        self.origin = f"https://{config.console_domain or self.distribution.distribution_domain_name}"
        self.domain = user_pool.add_domain("ConsoleSignIn", cognito_domain=cognito.CognitoDomainOptions(domain_prefix=sign_in_prefix))
        self.client = user_pool.add_client(
            "ConsoleClient",
            generate_secret=False,  # a browser app: public client, PKCE instead of a secret
            auth_flows=cognito.AuthFlow(),  # hosted sign-in only: no SRP or password flow from the page (refresh set below)
            o_auth=cognito.OAuthSettings(
                flows=cognito.OAuthFlows(authorization_code_grant=True, implicit_code_grant=False),
                scopes=[cognito.OAuthScope.OPENID, cognito.OAuthScope.EMAIL],
                callback_urls=[f"{self.origin}/"],
                logout_urls=[f"{self.origin}/"],
            ),
            supported_identity_providers=[cognito.UserPoolClientIdentityProvider.COGNITO],
            prevent_user_existence_errors=True,
            access_token_validity=Duration.hours(1),
            id_token_validity=Duration.hours(1),
            refresh_token_validity=Duration.hours(12),
        )
        # CDK leaves ExplicitAuthFlows out when every flow above is off, and Cognito reads an absent list as SRP,
        # custom and refresh allowed (Cognito, "App client" settings): name the refresh flow alone.
        client_resource = self.client.node.default_child
        assert isinstance(client_resource, cognito.CfnUserPoolClient)
        client_resource.explicit_auth_flows = ["ALLOW_REFRESH_TOKEN_AUTH"]
        # The working bucket's CORS rule for the console's origin, set once both exist: as a property of the bucket it
        # would name the distribution, whose headers policy (its CSP) names the bucket's host (a cycle, F3004).
        cors_call = cr.AwsSdkCall(
            service="S3",
            action="putBucketCors",
            parameters={
                "Bucket": upload_bucket.bucket_name,
                "CORSConfiguration": {
                    "CORSRules": [
                        {
                            "AllowedMethods": ["POST", "GET"],  # the presigned upload, the page view's ranged reads
                            "AllowedOrigins": [self.origin],
                            "AllowedHeaders": ["Content-Type", "Range"],
                            "ExposeHeaders": ["ETag", "Content-Range", "Accept-Ranges", "Content-Length"],
                            "MaxAgeSeconds": 3000,
                        }
                    ]
                },
            },
            physical_resource_id=cr.PhysicalResourceId.of("console-cors"),
        )
        self.upload_cors = cr.AwsCustomResource(
            self,
            "UploadCors",
            on_create=cors_call,
            on_update=cors_call,
            policy=cr.AwsCustomResourcePolicy.from_statements([iam.PolicyStatement(actions=["s3:PutBucketCORS"], resources=[upload_bucket.bucket_arn])]),
            install_latest_aws_sdk=False,
            log_group=logs.LogGroup(self, "UploadCorsLogs", retention=config.log_retention, removal_policy=RemovalPolicy.DESTROY),
        )
        framework = Stack.of(self).node.find_child("AWS679f53fac002430cb0da5b7982bd2287")  # the AwsCustomResource singleton (CDK names it so)
        acknowledge(
            framework,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
            "CDK's AwsCustomResource Lambda (not our code) logs with the AWS-maintained basic execution policy; it only puts the bucket's CORS rule.",
        )
        acknowledge(
            framework,
            "AwsSolutions-L1",
            "The AwsCustomResource provider's runtime is chosen and updated by aws-cdk-lib, not by this app.",
        )
        acknowledge(
            self.distribution,
            "AwsSolutions-CFR1",
            "No geo restriction: the console is for the deployment's users wherever they are; sign-in is required for every API call.",
        )
        if not config.console_web_acl_arn:
            acknowledge(
                self.distribution,
                "AwsSolutions-CFR2",
                "No AWS WAF web ACL unless context consoleWebAclArn names one (its fixed monthly cost); static files plus the Cognito-authorized API.",
            )
        if not config.console_certificate_arn:
            acknowledge(
                self.distribution,
                "AwsSolutions-CFR4",
                "The default *.cloudfront.net certificate allows TLSv1 at the viewer; set consoleDomain + consoleCertificateArn to enforce TLS 1.2.",
            )
