"""The owner-only REST API (API Gateway v1 → ``functions/api``, a Powertools APIGatewayRestResolver).

Every method requires a Cognito user-pool token; the handler takes the owner from
``requestContext.authorizer.claims.sub``. The stage has access logging (JSON, to a log
group with retention), execution logging at INFO without request/response bodies,
X-Ray tracing, and throttling from context ``apiThrottle``.

Routes: every operation in docs/api/openapi.yaml (read at synth), so the spec, the handler
and API Gateway cannot drift apart.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.config import InfraConfig
from infra.nag import acknowledge

OPENAPI_SPEC = Path(__file__).resolve().parents[1] / "docs" / "api" / "openapi.yaml"
HTTP_METHODS = ("get", "put", "post", "delete", "patch")


def routes_from_spec(spec_path: Path = OPENAPI_SPEC) -> tuple[tuple[str, str], ...]:
    """(METHOD, path) for every operation of the OpenAPI spec: the one list the handler, the spec
    and API Gateway share (a test checks the handler serves every one of them)."""
    spec = yaml.safe_load(spec_path.read_text())
    return tuple((method.upper(), path) for path, item in spec["paths"].items() for method in item if method in HTTP_METHODS)


ROUTES = routes_from_spec()
STAGE = "v1"


GATEWAY_ERRORS = (
    (apigw.ResponseType.UNAUTHORIZED, "UNAUTHORIZED"),
    (apigw.ResponseType.ACCESS_DENIED, "FORBIDDEN"),
    (apigw.ResponseType.THROTTLED, "THROTTLED"),
    (apigw.ResponseType.DEFAULT_4_XX, "BAD_REQUEST"),
    (apigw.ResponseType.DEFAULT_5_XX, "GATEWAY_ERROR"),
)


class Api(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, config: InfraConfig, handler: lambda_.IFunction) -> None:
        super().__init__(scope, construct_id)
        self.user_pool = cognito.UserPool(
            self,
            "Users",
            self_sign_up_enabled=False,  # an administrator invites users
            sign_in_aliases=cognito.SignInAliases(email=True),
            auto_verify=cognito.AutoVerifiedAttrs(email=True),
            account_recovery=cognito.AccountRecovery.EMAIL_ONLY,
            mfa=cognito.Mfa.REQUIRED,
            mfa_second_factor=cognito.MfaSecondFactor(otp=True, sms=False),
            password_policy=cognito.PasswordPolicy(
                min_length=12,
                require_lowercase=True,
                require_uppercase=True,
                require_digits=True,
                require_symbols=True,
                temp_password_validity=Duration.days(3),
            ),
            deletion_protection=config.retain_data,
            removal_policy=RemovalPolicy.RETAIN if config.retain_data else RemovalPolicy.DESTROY,
        )
        for rule in ("AwsSolutions-COG3", "AwsSolutions-COG8"):
            acknowledge(
                self.user_pool,
                rule,
                "Threat protection (advanced security) needs the Cognito Plus feature plan, billed per active user; "
                "users are invited by an administrator and MFA is required.",
            )
        # Members may rotate the deployment's shared webhook signing secret (BATCHLANE_ADMIN_GROUP).
        self.admin_group = cognito.CfnUserPoolGroup(
            self,
            "AdminGroup",
            user_pool_id=self.user_pool.user_pool_id,
            group_name=config.admin_group,
            description="batchlane administrators: may rotate the webhook signing secret and set users' budgets",
        )
        # Members may force on-demand (process-now), skipping the half-price batch lane (BATCHLANE_PRIORITY_GROUP).
        # An empty name: every user may (no group is created).
        self.priority_group = (
            cognito.CfnUserPoolGroup(
                self,
                "PriorityGroup",
                user_pool_id=self.user_pool.user_pool_id,
                group_name=config.priority_group,
                description="batchlane priority users: may convert on-demand at once (process-now), at full price",
            )
            if config.priority_group
            else None
        )
        self.client = self.user_pool.add_client(
            "CliClient",
            auth_flows=cognito.AuthFlow(user_srp=True),
            # No hosted-UI OAuth: CDK's defaults would enable the implicit and code grants with the
            # placeholder callback https://example.com and the aws.cognito.signin.user.admin scope
            # (a token that may change the user's own attributes). The CLI signs in with SRP only.
            disable_o_auth=True,
            generate_secret=False,  # used by the CLI and a browser: a secret could not stay secret
            prevent_user_existence_errors=True,
            access_token_validity=Duration.hours(1),
            id_token_validity=Duration.hours(1),
            refresh_token_validity=Duration.days(30),
        )

        access_logs = logs.LogGroup(self, "AccessLogs", retention=config.log_retention, removal_policy=RemovalPolicy.DESTROY)
        self.rest_api = apigw.RestApi(
            self,
            "RestApi",
            description="batchlane: owner-only file and conversion API",
            cloud_watch_role=True,  # execution/access logging needs the account's API Gateway logging role
            cloud_watch_role_removal_policy=RemovalPolicy.RETAIN,
            endpoint_types=[apigw.EndpointType.REGIONAL],
            deploy_options=apigw.StageOptions(
                stage_name=STAGE,
                access_log_destination=apigw.LogGroupLogDestination(access_logs),
                access_log_format=apigw.AccessLogFormat.json_with_standard_fields(
                    caller=False,
                    http_method=True,
                    ip=True,
                    protocol=True,
                    request_time=True,
                    resource_path=True,
                    response_length=True,
                    status=True,
                    user=True,
                ),
                logging_level=apigw.MethodLoggingLevel.INFO,
                data_trace_enabled=False,  # never log request/response bodies
                tracing_enabled=True,
                throttling_rate_limit=config.api_rate_limit,
                throttling_burst_limit=config.api_burst_limit,
            ),
        )
        # API Gateway's own answers (the authorizer's 401/403, the stage's throttle, a failed integration) in the
        # API's one error shape, {"error": {"code", "message"}} (decision 0031): a client reads every error alike.
        for response_type, code in GATEWAY_ERRORS:
            self.rest_api.add_gateway_response(
                f"Gateway{code.title().replace('_', '')}",
                type=response_type,
                templates={"application/json": f'{{"error": {{"code": "{code}", "message": $context.error.messageString}}}}'},
            )
        authorizer = apigw.CognitoUserPoolsAuthorizer(self, "Authorizer", cognito_user_pools=[self.user_pool])
        validator = self.rest_api.add_request_validator("Validator", validate_request_parameters=True, validate_request_body=True)
        integration = apigw.LambdaIntegration(handler, proxy=True)
        for method, path in ROUTES:
            resource = self.rest_api.root.resource_for_path(path)
            params = {f"method.request.path.{p}": True for p in re.findall(r"\{(\w+)\}", path)}
            resource.add_method(
                method,
                integration,
                authorizer=authorizer,
                authorization_type=apigw.AuthorizationType.COGNITO,
                request_validator=validator,
                request_parameters=params or None,
            )
        acknowledge(
            self.rest_api,
            "AwsSolutions-APIG3",
            "No AWS WAF web ACL by default (its fixed monthly cost); every method needs a Cognito token and the stage is "
            "throttled. Associate a web ACL with the stage if the API is exposed widely.",
        )
        acknowledge(
            self.rest_api,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]",
            "The account-level API Gateway logging role uses the AWS-maintained policy that API Gateway requires for CloudWatch logging.",
        )
