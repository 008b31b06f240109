"""IAM, enforced offline: a handler's AWS calls pass only where its function's grants allow them.

moto checks no permission, so a missing grant would pass every offline test and fail on
AWS. Every boto3 API call in the process passes one check (botocore's
``BaseClient._make_api_call``, so a client created before :func:`install` is checked as
well as one created after); while a handler runs (:func:`acting_as`, set per invocation by the in-process Lambda runtime and
carried into the threads it starts), each call is turned into the IAM requests AWS would
evaluate (action, resource ARN, condition keys) and checked against the grants that
``deployment.grants`` maps the function's ``needs`` to — the same data CDK writes the
policies from. A refused call answers 403 AccessDenied(Exception), shaped so botocore
raises the ClientError it would raise on AWS. A call with no identity at all is refused too
(:func:`identity_of`): only the identities named in ``UNCHECKED`` (the operator, AWS itself)
pass unchecked, and the Bedrock emulator's S3 calls act as the Bedrock service role.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import dataclasses
import functools
import logging
import re
import sys
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import botocore.client

from batchlane.contract import OWNER_TAG
from deployment import topology
from deployment.grants import (
    BATCH_PREFIX,
    OWNER_VARIABLE,
    Grant,
    folder_access_grants,
    folder_source_resource,
    grants_for,
    is_inference_profile,
    owner_folder_resource,
)

log = logging.getLogger("batchlane_dev.local.iam")

_current_function: contextvars.ContextVar[str | None] = contextvars.ContextVar("batchlane_offline_function", default=None)


@contextmanager
def acting_as(function: str) -> Iterator[None]:
    """AWS calls made inside run with ``function``'s grants (its execution role on AWS)."""
    token = _current_function.set(function)
    try:
        yield
    finally:
        _current_function.reset(token)


def current_function() -> str | None:
    return _current_function.get()


# -- identities that are no function (issue 22, point 7) ------------------------------------
OPERATOR = "operator"  # the test harness and the CLI: whoever started the stack, with the account's own credentials
AWS_SERVICE = "aws"  # moto's server threads (Step Functions invoking Lambda with the machine's role, EventBridge delivering), the API's front
BEDROCK_SERVICE = "bedrock.amazonaws.com"  # the emulator's HTTP side and the events Bedrock publishes
BEDROCK_SERVICE_ROLE = "bedrock-service-role"  # a batch job's S3 reads and writes: the role Bedrock assumes for it
UNCHECKED = frozenset({OPERATOR, AWS_SERVICE, BEDROCK_SERVICE})
NO_IDENTITY = "(no identity)"

# The Bedrock service role's policy as infra.iam.BedrockBatchAccess writes it (batch/ objects, ListBucket on batch/).
SERVICE_ROLE_GRANTS: tuple[Grant, ...] = (
    Grant(("s3:AbortMultipartUpload", "s3:GetObject", "s3:PutObject"), ("objects",), prefix=BATCH_PREFIX),
    Grant(("s3:ListBucket",), ("bucket",), prefix=BATCH_PREFIX),
)


def become(identity: str) -> None:
    """The calling thread acts as ``identity`` from now on (a stack's caller becomes the operator)."""
    _current_function.set(identity)


def bind(client: Any, identity: str) -> Any:
    """``client``'s calls act as ``identity`` whoever makes them (the emulator's S3 client: the service role)."""
    client._batchlane_identity = identity
    return client


def identity_of(client: Any) -> str:
    """Who a call acts as: the client's bound identity, else the thread's (inherited from its creator)."""
    return getattr(client, "_batchlane_identity", None) or _current_function.get() or NO_IDENTITY


def _patch_threads() -> None:
    """A thread acts as the identity of the thread that created it, as a handler's threads share its role."""
    original_init, original_bootstrap = threading.Thread.__init__, threading.Thread._bootstrap_inner  # type: ignore[attr-defined]

    def init(self: threading.Thread, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        self._batchlane_identity = _current_function.get()  # type: ignore[attr-defined]

    def bootstrap_inner(self: threading.Thread) -> None:
        if getattr(self, "_batchlane_identity", None) is not None:
            _current_function.set(self._batchlane_identity)  # type: ignore[attr-defined]
        original_bootstrap(self)

    threading.Thread.__init__ = init  # type: ignore[method-assign]
    threading.Thread._bootstrap_inner = bootstrap_inner  # type: ignore[attr-defined]


def token_state_machine(token: str, t: Targets) -> str | None:
    """The state machine whose running execution waits on ``token`` (moto's callback pools), None if none does.

    Only the stack's process runs moto: in a worker process no execution can hold the token, and importing
    moto's Step Functions backends there to find none cost 1.5 s of CPU at each worker's first SendTask*
    call (a storm of them on two cores when a flood starts twenty workers at once)."""
    models = sys.modules.get("moto.stepfunctions.parser.models")
    if models is None:
        return None
    stepfunctions_parser_backends = models.stepfunctions_parser_backends

    for machine in list(stepfunctions_parser_backends[t.account_id][t.region].state_machines):
        for execution in list(machine.executions):
            worker = getattr(execution, "exec_worker", None)
            if worker is not None and worker.env.callback_pool_manager.get(token) is not None:
                return str(machine.arn)
    return None


@dataclass(frozen=True)
class Request:
    """One authorisation AWS evaluates for a call: an action on a resource, with condition keys."""

    action: str
    resource: str | None  # None: no resource to check (SendTask* with a token no running execution holds)
    context: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Targets:
    """The offline stack's ARN for each resource kind of ``deployment.grants``."""

    account_id: str
    region: str
    bucket: str
    conversion_state_machine_arn: str
    batch_lane_state_machine_arn: str
    bedrock_service_role_arn: str
    model_ids: tuple[str, ...]
    database_secret_arn: str | None = None
    database_master_secret_arn: str | None = None
    intake_state_machine_arn: str = ""
    webhook_delivery_state_machine_arn: str = ""
    webhook_secret_arn: str = ""
    webhook_key_arn: str = ""
    folder_job_state_machine_arn: str = ""
    folder_sources: tuple[str, ...] = ()  # "bucket/prefix", as BATCHLANE_FOLDER_SOURCES
    partition: str = "aws"
    folder_access_role_arn: str = ""  # the role folder functions assume per owner (scoped sessions)
    estimate_state_machine_arn: str = ""

    def arns(self, grant: Grant) -> list[str]:
        return [arn for kind in grant.resources for arn in self._arns(kind, grant.prefix)]

    def _arns(self, kind: str, prefix: str) -> list[str]:
        p, region, account = self.partition, self.region, self.account_id
        table: dict[str, list[str]] = {
            "objects": [f"arn:{p}:s3:::{self.bucket}/{prefix}*"],
            "bucket": [f"arn:{p}:s3:::{self.bucket}"],
            "database_secret": [f"{self.database_secret_arn}*"] if self.database_secret_arn else [],
            "database_master_secret": [f"{self.database_master_secret_arn}*"] if self.database_master_secret_arn else [],
            "models": [arn for model_id in self.model_ids for arn in granted_model_arns(model_id, self)],
            "batch_jobs": [f"arn:{p}:bedrock:{region}:{account}:model-invocation-job/*"],
            "bedrock_service_role": [self.bedrock_service_role_arn],
            "conversion_state_machine": [self.conversion_state_machine_arn],
            "batch_lane_state_machine": [self.batch_lane_state_machine_arn],
            "intake_state_machine": [self.intake_state_machine_arn],
            "webhook_delivery_state_machine": [self.webhook_delivery_state_machine_arn],
            "webhook_secret": [f"{self.webhook_secret_arn}*"] if self.webhook_secret_arn else [],
            "webhook_key": [self.webhook_key_arn] if self.webhook_key_arn else [],
            "default_event_bus": [f"arn:{p}:events:{region}:{account}:event-bus/default"],
            "any": ["*"],
            "folder_objects": sorted({f"arn:{p}:s3:::{folder_source_resource(source)}*" for source in self.folder_sources}),
            "folder_buckets": sorted({f"arn:{p}:s3:::{folder_source_resource(source).split('/', 1)[0]}" for source in self.folder_sources}),
            "folder_job_state_machine": [self.folder_job_state_machine_arn] if self.folder_job_state_machine_arn else [],
            "estimate_state_machine": [self.estimate_state_machine_arn] if self.estimate_state_machine_arn else [],
            "workflow_executions": [
                f"{arn.replace(':stateMachine:', ':execution:')}:*"
                for arn in (self.conversion_state_machine_arn, self.intake_state_machine_arn, self.folder_job_state_machine_arn)
                if arn
            ],
            "folder_access_role": [self.folder_access_role_arn] if self.folder_access_role_arn else [],
            "owner_folder_objects": sorted({f"arn:{p}:s3:::{owner_folder_resource(source)}*" for source in self.folder_sources}),
        }
        return table[kind]


def granted_model_arns(model_id: str, t: Targets) -> list[str]:
    """As infra.iam.model_resource_arns: a profile and its model in any region, or the model here."""
    if is_inference_profile(model_id):
        base = model_id.split(".", 1)[1]
        return [f"arn:{t.partition}:bedrock:{t.region}:{t.account_id}:inference-profile/{model_id}", f"arn:{t.partition}:bedrock:*::foundation-model/{base}"]
    return [f"arn:{t.partition}:bedrock:{t.region}::foundation-model/{model_id}"]


def called_model_arns(model_id: str, t: Targets) -> list[str]:
    """What invoking ``model_id`` is authorised against: the profile and the model it routes to, or the model."""
    if model_id.startswith("arn:"):
        return [model_id]
    if is_inference_profile(model_id):
        base = model_id.split(".", 1)[1]
        return [
            f"arn:{t.partition}:bedrock:{t.region}:{t.account_id}:inference-profile/{model_id}",
            f"arn:{t.partition}:bedrock:{t.region}::foundation-model/{base}",
        ]
    return [f"arn:{t.partition}:bedrock:{t.region}::foundation-model/{model_id}"]


# -- botocore operation → IAM requests (Service Authorization Reference) ------------------
def _s3(operation: str, params: Mapping[str, Any], t: Targets) -> list[Request] | None:
    bucket = f"arn:{t.partition}:s3:::{params.get('Bucket', '')}"
    obj = f"{bucket}/{params.get('Key', '')}"
    if operation in ("GetObject", "HeadObject", "GetObjectAttributes", "GetObjectTagging"):
        return [Request("s3:GetObject", obj)]
    if operation in ("PutObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload"):
        return [Request("s3:PutObject", obj)]
    if operation == "AbortMultipartUpload":
        return [Request("s3:AbortMultipartUpload", obj)]
    if operation == "DeleteObject":
        return [Request("s3:DeleteObject", obj)]
    if operation == "DeleteObjects":
        return [Request("s3:DeleteObject", f"{bucket}/{o['Key']}") for o in params.get("Delete", {}).get("Objects", [])]
    if operation == "CopyObject":
        source = params.get("CopySource", "")
        source_arn = (
            f"arn:{t.partition}:s3:::{source['Bucket']}/{source['Key']}" if isinstance(source, dict) else f"arn:{t.partition}:s3:::{source.split('?')[0]}"
        )
        return [Request("s3:GetObject", source_arn), Request("s3:PutObject", obj)]
    if operation in ("ListObjectsV2", "ListObjects"):
        return [Request("s3:ListBucket", bucket, {"s3:prefix": params["Prefix"]} if "Prefix" in params else {})]
    if operation == "HeadBucket":
        return [Request("s3:ListBucket", bucket)]
    return None


def _bedrock(operation: str, params: Mapping[str, Any], t: Targets) -> list[Request] | None:
    jobs = f"arn:{t.partition}:bedrock:{t.region}:{t.account_id}:model-invocation-job/"
    if operation == "CreateModelInvocationJob":
        job = f"{jobs}{params.get('jobName', '')}"  # the id is Bedrock's; any job ARN of this account matches
        out = [Request("bedrock:CreateModelInvocationJob", arn) for arn in [job, *called_model_arns(params.get("modelId", ""), t)]]
        out.append(Request("iam:PassRole", params.get("roleArn", ""), {"iam:PassedToService": "bedrock.amazonaws.com"}))
        if params.get("tags"):
            out.append(Request("bedrock:TagResource", job))
        return out
    if operation in ("GetModelInvocationJob", "StopModelInvocationJob"):
        ident = str(params.get("jobIdentifier", ""))
        return [Request(f"bedrock:{operation}", ident if ident.startswith("arn:") else f"{jobs}{ident}")]
    if operation == "ListModelInvocationJobs":
        return [Request("bedrock:ListModelInvocationJobs", "*")]
    return None


def _bedrock_runtime(operation: str, params: Mapping[str, Any], t: Targets) -> list[Request] | None:
    # Converse is authorised by bedrock:InvokeModel, ConverseStream by …WithResponseStream (AWS API reference).
    action = {
        "InvokeModel": "bedrock:InvokeModel",
        "Converse": "bedrock:InvokeModel",
        "InvokeModelWithResponseStream": "bedrock:InvokeModelWithResponseStream",
        "ConverseStream": "bedrock:InvokeModelWithResponseStream",
    }.get(operation)
    return None if action is None else [Request(action, arn) for arn in called_model_arns(str(params.get("modelId", "")), t)]


def _states(operation: str, params: Mapping[str, Any], t: Targets) -> list[Request] | None:
    if operation in ("StartExecution", "StartSyncExecution", "ListExecutions", "DescribeStateMachine"):
        return [Request(f"states:{operation}", params.get("stateMachineArn", ""))]
    if operation in ("DescribeExecution", "StopExecution", "GetExecutionHistory"):
        return [Request(f"states:{operation}", params.get("executionArn", ""))]
    if operation in ("SendTaskSuccess", "SendTaskFailure", "SendTaskHeartbeat"):
        return [Request(f"states:{operation}", token_state_machine(str(params.get("taskToken", "")), t))]  # the token's machine
    return None


def _events(operation: str, params: Mapping[str, Any], t: Targets) -> list[Request] | None:
    if operation != "PutEvents":
        return None
    out = []
    for entry in params.get("Entries", []):
        bus = entry.get("EventBusName") or "default"
        arn = bus if bus.startswith("arn:") else f"arn:{t.partition}:events:{t.region}:{t.account_id}:event-bus/{bus}"
        out.append(Request("events:PutEvents", arn, {"events:source": entry.get("Source", "")}))
    return out


def _secretsmanager(operation: str, params: Mapping[str, Any], t: Targets) -> list[Request] | None:
    if operation in ("GetSecretValue", "DescribeSecret", "ListSecretVersionIds", "PutSecretValue"):
        return [Request(f"secretsmanager:{operation}", str(params.get("SecretId", "")))]
    return None


def _kms(operation: str, params: Mapping[str, Any], t: Targets) -> list[Request] | None:
    """Encrypt and Decrypt on the key named (KeyId, which batchlane.aws.kms always passes), with the encryption
    context as condition keys (``kms:EncryptionContext:<key>``, AWS KMS Developer Guide "Condition keys")."""
    if operation not in ("Encrypt", "Decrypt"):
        return None
    key = str(params.get("KeyId", ""))
    arn = key if key.startswith("arn:") else f"arn:{t.partition}:kms:{t.region}:{t.account_id}:key/{key}"
    context = {f"kms:EncryptionContext:{k}": str(v) for k, v in (params.get("EncryptionContext") or {}).items()}
    return [Request(f"kms:{operation}", arn, context)]


def _servicequotas(operation: str, params: Mapping[str, Any], t: Targets) -> list[Request] | None:
    if operation in ("GetServiceQuota", "ListServiceQuotas", "GetAWSDefaultServiceQuota"):
        return [Request(f"servicequotas:{operation}", "*")]
    return None


def _lambda(operation: str, params: Mapping[str, Any], t: Targets) -> list[Request] | None:
    if operation != "Invoke":
        return None
    name = str(params.get("FunctionName", ""))
    arn = name if name.startswith("arn:") else f"arn:{t.partition}:lambda:{t.region}:{t.account_id}:function:{name}"
    return [Request("lambda:InvokeFunction", arn)]


def _free(operation: str, params: Mapping[str, Any], t: Targets) -> list[Request] | None:
    if operation == "AssumeRole":
        return _assume_role_requests(params)
    return [] if operation == "GetCallerIdentity" else None  # needs no permission


REQUESTS: dict[str, Callable[[str, Mapping[str, Any], Targets], list[Request] | None]] = {
    "s3": _s3,
    "bedrock": _bedrock,
    "bedrock-runtime": _bedrock_runtime,
    "stepfunctions": _states,
    "events": _events,
    "secretsmanager": _secretsmanager,
    "kms": _kms,
    "service-quotas": _servicequotas,
    "lambda": _lambda,
    "sts": _free,
}


def requests_for(service: str, operation: str, params: Mapping[str, Any], targets: Targets) -> list[Request] | None:
    """The IAM requests a call makes; None when the call is not mapped (then it is refused)."""
    mapper = REQUESTS.get(service)
    return None if mapper is None else mapper(operation, params, targets)


# -- evaluation ---------------------------------------------------------------------------
@functools.lru_cache(maxsize=512)
def _glob(pattern: str) -> re.Pattern[str]:
    """IAM's ARN wildcards: ``*`` any run of characters, ``?`` one character."""
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern) + r"\Z")


def _conditions_hold(grant: Grant, context: Mapping[str, str]) -> bool:
    for op, block in grant.all_conditions().items():
        for key, value in block.items():
            values = (value,) if isinstance(value, str) else value
            if key not in context:  # a missing key fails StringEquals / StringLike (no IfExists here)
                return False
            if op == "StringEquals" and context[key] not in values:
                return False
            if op == "StringLike" and not any(_glob(v).match(context[key]) for v in values):
                return False
            if op not in ("StringEquals", "StringLike"):
                raise ValueError(f"condition operator {op} is not evaluated offline: add it to batchlane_dev.local.iam")
    return True


def allowed(request: Request, grants: tuple[Grant, ...], targets: Targets) -> bool:
    """True when one grant has the action, a matching resource and its conditions hold."""
    for grant in grants:
        if request.action not in grant.actions:
            continue
        resources = targets.arns(grant)
        if request.resource is not None and not any(_glob(r).match(request.resource) for r in resources):
            continue
        if _conditions_hold(grant, request.context):
            return True
    return False


class GrantEnforcer:
    """Checks handler calls against their function's grants; keeps every refusal for tests to read."""

    def __init__(self, targets: Targets) -> None:
        self.targets = targets
        self._needs: dict[str, tuple[str, ...]] = {spec.name: spec.needs for spec in topology.FUNCTIONS}
        self.denials: list[tuple[str, str, str | None]] = []  # (function, action, resource)
        self._lock = threading.Lock()

    def set_needs(self, function: str, needs: tuple[str, ...] | None) -> None:
        """Test seam: give ``function`` other capabilities (None: back to the topology's)."""
        self._needs[function] = topology.function(function).needs if needs is None else needs

    def grants_of(self, identity: str) -> tuple[Grant, ...]:
        """The grants ``identity`` acts with: the service role's policy, or a function's needs (none without identity)."""
        return SERVICE_ROLE_GRANTS if identity == BEDROCK_SERVICE_ROLE else grants_for(self._needs.get(identity, ()))

    def refusal(self, function: str, service: str, operation: str, params: Mapping[str, Any]) -> str | None:
        """None when the call is allowed; else the message AWS would give."""
        principal = f"arn:{self.targets.partition}:sts::{self.targets.account_id}:assumed-role/batchlane-{function}/batchlane-{function}"
        requests = requests_for(service, operation, params, self.targets)
        if requests is None:
            self._record(function, f"{service}:{operation}", None)
            return f"User: {principal} is not authorized to perform: {service}:{operation} (no IAM mapping offline: add it to batchlane_dev.local.iam)"
        grants = self.grants_of(function)
        for request in requests:
            if not allowed(request, grants, self.targets):
                self._record(function, request.action, request.resource)
                on = f' on resource: "{request.resource}"' if request.resource else ""
                return (
                    f"User: {principal} is not authorized to perform: {request.action}{on} because no identity-based policy allows the {request.action} action"
                )
        return None

    def scoped_refusal(self, session: ScopedSession, service: str, operation: str, params: Mapping[str, Any]) -> str | None:
        """A call signed with assumed-role credentials: that role's policy decides, not the function's."""
        return _scoped_refusal(self, session, service, operation, params)

    def _record(self, function: str, action: str, resource: str | None) -> None:
        with self._lock:
            self.denials.append((function, action, resource))
        log.warning("offline IAM refused a call: function=%s action=%s resource=%s", function, action, resource)


# -- scoped sessions: the folder-access role assumed with an owner tag ----------------------
@dataclass(frozen=True)
class ScopedSession:
    """Credentials AssumeRole handed out offline: the role they act as and the session tags IAM evaluates."""

    role_arn: str
    tags: Mapping[str, str]


_sessions: dict[str, ScopedSession] = {}  # access key id → its session (moto's STS issues a fresh key per call)
_sessions_lock = threading.Lock()


def _assume_role_requests(params: Mapping[str, Any]) -> list[Request]:
    """sts:AssumeRole on the role, and sts:TagSession when the call sets session tags (AWS requires both)."""
    role = str(params.get("RoleArn", ""))
    return [Request("sts:AssumeRole", role)] + ([Request("sts:TagSession", role)] if params.get("Tags") else [])


def _remember_session(parsed: Mapping[str, Any], params: Mapping[str, Any]) -> None:
    """After AssumeRole answers: which role and tags the new access key carries."""
    key = (parsed.get("Credentials") or {}).get("AccessKeyId")
    if key:
        tags = {t["Key"]: t["Value"] for t in params.get("Tags", [])}
        with _sessions_lock:
            _sessions[key] = ScopedSession(str(params.get("RoleArn", "")), tags)


def scoped_session(request_signer: Any) -> ScopedSession | None:
    """The assumed-role session a client signs with, None for the function's own role."""
    credentials = getattr(request_signer, "_credentials", None)  # botocore keeps no public accessor
    key = getattr(credentials, "access_key", None) if credentials is not None else None
    with _sessions_lock:
        return _sessions.get(key) if key else None


def _with_tags(grant: Grant, arns: list[str], tags: Mapping[str, str]) -> tuple[Grant, list[str]] | None:
    """The grant with ``${aws:PrincipalTag/owner}`` replaced by the session's tag; None without the tag (IAM: no match)."""
    text = repr((arns, grant.conditions))
    if OWNER_VARIABLE in text and OWNER_TAG not in tags:
        return None
    owner = tags.get(OWNER_TAG, "")
    conditions = {
        op: {k: (v.replace(OWNER_VARIABLE, owner) if isinstance(v, str) else tuple(x.replace(OWNER_VARIABLE, owner) for x in v)) for k, v in block.items()}
        for op, block in grant.conditions.items()
    }
    return dataclasses.replace(grant, conditions=conditions), [a.replace(OWNER_VARIABLE, owner) for a in arns]


def scoped_allowed(request: Request, session: ScopedSession, targets: Targets) -> bool:
    """As :func:`allowed`, for the folder-access role's policy with the session's tags substituted."""
    if session.role_arn != targets.folder_access_role_arn:
        return False  # no other role is assumed offline
    for grant in folder_access_grants(targets.folder_sources):
        resolved = _with_tags(grant, targets.arns(grant), session.tags)
        if resolved is None or request.action not in grant.actions:
            continue
        tagged, resources = resolved
        if request.resource is not None and not any(_glob(r).match(request.resource) for r in resources):
            continue
        if _conditions_hold(tagged, request.context):
            return True
    return False


def _scoped_refusal(enforcer: GrantEnforcer, session: ScopedSession, service: str, operation: str, params: Mapping[str, Any]) -> str | None:
    """None when the scoped session may make the call; else AWS's message, the refusal recorded."""
    owner = session.tags.get(OWNER_TAG, "")
    principal = f"{session.role_arn.replace(':iam::', ':sts::').replace(':role/', ':assumed-role/')}/owner={owner}"
    requests = requests_for(service, operation, params, enforcer.targets)
    for request in requests if requests is not None else [Request(f"{service}:{operation}", None)]:
        if requests is None or not scoped_allowed(request, session, enforcer.targets):
            enforcer._record(f"folder-access:{owner}", request.action, request.resource)
            on = f' on resource: "{request.resource}"' if request.resource else ""
            return f"User: {principal} is not authorized to perform: {request.action}{on} because no identity-based policy allows the {request.action} action"
    return None


# -- the botocore hook ----------------------------------------------------------------------
_state: dict[str, GrantEnforcer | None] = {"enforcer": None}
_installed = False


def _check(client: Any, operation: str, params: Mapping[str, Any]) -> None:
    """Raise what AWS would (the client's modelled AccessDenied ClientError, 403) for a refused call."""
    enforcer, function = _state["enforcer"], identity_of(client)
    if enforcer is None or function in UNCHECKED:
        return
    service = client.meta.service_model.service_name
    session = scoped_session(getattr(client, "_request_signer", None))
    if session is not None:
        message = enforcer.scoped_refusal(session, service, operation, params)
    else:
        message = enforcer.refusal(function, service, operation, params)
    if message is None:
        return
    code = "AccessDenied" if service == "s3" else "AccessDeniedException"
    parsed = {
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"RequestId": uuid.uuid4().hex, "HTTPStatusCode": 403, "HTTPHeaders": {}, "RetryAttempts": 0},
    }
    raise client.exceptions.from_code(code)(parsed, operation)


def _submit_in_context(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def submit(self: concurrent.futures.ThreadPoolExecutor, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        return original(self, contextvars.copy_context().run, fn, *args, **kwargs)

    return submit


def active() -> GrantEnforcer | None:
    return _state["enforcer"]


def install_in_worker(targets: Targets) -> None:
    """A worker process's own enforcer (a picklable ``StackOptions.worker_setup`` hook): a refused
    call fails there exactly as in the stack's process; the refusal is logged in the worker."""
    install(GrantEnforcer(targets))


def install(enforcer: GrantEnforcer | None) -> None:
    """Check handler calls against ``enforcer`` (None: stop checking). Idempotent.

    Every client's calls are checked, whenever it was created (a module-level client made at
    import, before the stack installed this, included); worker threads a handler starts through
    a ThreadPoolExecutor act with its grants, as they share its role on Lambda.
    """
    global _installed
    _state["enforcer"] = enforcer
    if _installed:
        return
    original_call = botocore.client.BaseClient._make_api_call

    @functools.wraps(original_call)
    def make_api_call(self: botocore.client.BaseClient, operation_name: str, api_params: dict[str, Any]) -> Any:
        _check(self, operation_name, api_params)
        answer = original_call(self, operation_name, api_params)
        if operation_name == "AssumeRole" and self.meta.service_model.service_name == "sts":
            _remember_session(answer, api_params)  # which role and owner tag the new access key acts with
        return answer

    botocore.client.BaseClient._make_api_call = make_api_call  # type: ignore[method-assign]
    concurrent.futures.ThreadPoolExecutor.submit = _submit_in_context(concurrent.futures.ThreadPoolExecutor.submit)  # type: ignore[method-assign]
    _patch_threads()
    _installed = True
