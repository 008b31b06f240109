"""A folder job's spec: validated, normalised (every default filled in), and its id.

The id is derived from the normalised spec and the owner (``fj-`` + 24 hex of sha256 over the
canonical JSON), so posting the same spec again finds the same job instead of starting a
second one. ``name`` and ``notifications`` are labels: they do not change what is converted,
so they are left out of the id.

Fields are posted camelCase (``output.onExisting``, ``policy.maxRetries``, ``notifications.callbackUrl``): only
those names (decision 0031 superseded the snake_case aliases). The stored spec and the id keep the Python
field names, read back by name; the API answers the spec camelCase.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from batchlane.domain.errors import InputError
from batchlane.folders.layout import DEFAULT_INCLUDE, Layout, S3Uri, common_folder, parse_s3_uri
from batchlane.naming import camel
from batchlane.validation import first_error
from batchlane.webhooks.subscription import NotificationsSpec

MAX_FILES = 10_000
MAX_OPTIONS_BYTES = 8192  # the options are copied to every file's job: a few KB, never a megabyte
OWNER_PLACEHOLDER = "{owner}"
# An owner id that may stand in a key (a Cognito sub is a UUID; offline users are short names).
_OWNER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$")
_FOLDER_JOB_ID = re.compile(r"^fj-[0-9a-f]{24}$")


class _Strict(BaseModel):
    # posted camelCase (parse_spec: by alias only); a stored spec (field names) is read back by name
    model_config = ConfigDict(extra="forbid", alias_generator=camel, validate_by_name=True, validate_by_alias=True)


class InputSpec(_Strict):
    folder: str | None = None
    files: list[str] | None = Field(None, max_length=MAX_FILES)
    recursive: bool = True
    include: list[str] = Field(default_factory=lambda: list(DEFAULT_INCLUDE))
    exclude: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_source(self) -> InputSpec:
        if (self.folder is None) == (self.files is None):
            raise ValueError("give exactly one of input.folder and input.files")
        return self


class OutputSpec(_Strict):
    folder: str | None = None  # default: the input folder
    layout: Layout = "alongside"
    on_existing: Literal["skip", "replace"] = "skip"


class PolicySpec(_Strict):
    max_pages_per_document: int | None = Field(None, ge=1)
    max_retries: int = Field(2, ge=0, le=10)
    priority: Literal["low", "normal", "high"] = "normal"
    deadline: datetime | None = None


class FileOptions(_Strict):
    """The single-file options a folder job may pass to each file's conversion, each bounded."""

    highFidelity: bool | None = None
    parser: str | None = Field(None, pattern=r"^[A-Za-z0-9_.-]{1,32}$")
    mathpix: bool | None = None
    modelId: str | None = Field(None, min_length=1, max_length=256, pattern=r"^[A-Za-z0-9.:_/-]+$")
    deadline: str | None = Field(None, max_length=64)  # ISO 8601, read by the single-file path (parse_deadline)
    conversionFormats: dict[Literal["md", "docx", "html", "json"], bool] | None = None  # renderings beside each Markdown
    describeFigures: bool | None = None  # a born-digital file's pictures described by Claude (docs/formats.md)
    callbackUrl: str | None = Field(None, min_length=1, max_length=2048)
    callbackEvents: list[str] | None = Field(None, max_length=10)
    callbackHeaders: dict[str, str] | None = Field(None, max_length=10)


class FolderJobSpec(_Strict):
    input: InputSpec
    output: OutputSpec = Field(default_factory=OutputSpec)
    options: dict[str, Any] = Field(default_factory=dict)
    policy: PolicySpec = Field(default_factory=PolicySpec)
    name: str | None = Field(None, max_length=200)
    notifications: NotificationsSpec | None = None

    @field_validator("options")
    @classmethod
    def _no_private_options(cls, value: dict[str, Any]) -> dict[str, Any]:
        private = sorted(k for k in value if k.startswith("_"))
        if private:
            raise ValueError(f"options {', '.join(private)} are internal")
        if len(json.dumps(value, default=str)) > MAX_OPTIONS_BYTES:
            raise ValueError(f"options are larger than {MAX_OPTIONS_BYTES} bytes")
        FileOptions.model_validate(value)  # known keys only, each bounded; the dict is kept as given (the job id)
        return value

    # -- derived ------------------------------------------------------------------------
    @property
    def input_uri(self) -> S3Uri:
        """The folder listed (``files``: the deepest folder holding them all)."""
        if self.input.folder is not None:
            return parse_s3_uri(self.input.folder)
        uris = [parse_s3_uri(u) for u in self.input.files or []]
        return S3Uri(uris[0].bucket, common_folder(u.key for u in uris))

    @property
    def output_uri(self) -> S3Uri:
        assert self.output.folder is not None  # filled in by normalise
        return parse_s3_uri(self.output.folder)

    def canonical_json(self) -> str:
        body = self.model_dump(mode="json", exclude={"name", "notifications"})
        return json.dumps(body, sort_keys=True, separators=(",", ":"))


def _check_folder_uri(uri: str, where: str) -> S3Uri:
    try:
        parsed = parse_s3_uri(uri)
    except ValueError as exc:
        raise InputError(f"{where} must be an s3://bucket/folder/ URI: {exc}.", error_id="FOLDER_URI_INVALID") from None
    if not uri.endswith("/"):
        raise InputError(f"{where} {uri} must end with '/': a folder, not an object.", error_id="FOLDER_URI_NO_SLASH")
    return parsed


def _nul_at(value: Any, where: str = "spec") -> str | None:
    """Where a NUL stands in the posted body (a string or key anywhere), or None: PostgreSQL refuses it in text."""
    if isinstance(value, str):
        return where if "\x00" in value else None
    if isinstance(value, dict):
        return next((found for k, v in value.items() if (found := _nul_at(str(k), where) or _nul_at(v, f"{where}.{k}"))), None)
    if isinstance(value, list):
        return next((found for i, v in enumerate(value) if (found := _nul_at(v, f"{where}[{i}]"))), None)
    return None


def parse_spec(body: Any) -> FolderJobSpec:
    """Validate a posted spec and fill in every default; InputError (SPEC_INVALID, FOLDER_URI_*) otherwise."""
    for part, field in (("input", "folder"), ("input", "files"), ("output", "folder")):
        section = body.get(part) if isinstance(body, dict) else None
        if isinstance(section, dict):
            _check_uris(section.get(field), f"{part}.{field}")  # a URI's own id (FOLDER_URI_INVALID), before anything else
    if (where := _nul_at(body)) is not None:
        raise InputError(f"{where} holds a NUL character.", error_id="SPEC_INVALID")
    try:
        spec = FolderJobSpec.model_validate(body, by_alias=True, by_name=False)
    except ValidationError as exc:
        raise InputError(first_error(exc, where="spec"), error_id="SPEC_INVALID") from None
    return normalise(spec)


def _check_uris(value: Any, where: str) -> None:
    """FOLDER_URI_INVALID for a URI (or a list's) that parse_s3_uri refuses; anything else is left to the model."""
    for uri in value if isinstance(value, list) else [value]:
        if isinstance(uri, str):
            try:
                parse_s3_uri(uri)
            except ValueError as exc:
                raise InputError(f"{where} must be an s3://bucket/folder/ URI: {exc}.", error_id="FOLDER_URI_INVALID") from None


def normalise(spec: FolderJobSpec) -> FolderJobSpec:
    """Sorted, de-duplicated lists; the output folder filled in; URIs checked."""
    data = spec.model_copy(deep=True)
    if data.input.folder is not None:
        _check_folder_uri(data.input.folder, "input.folder")
    else:
        files = sorted(set(data.input.files or []))
        if not files:
            raise InputError("input.files is empty.", error_id="SPEC_INVALID")
        buckets = set()
        for uri in files:
            try:
                parsed = parse_s3_uri(uri)
            except ValueError as exc:
                raise InputError(f"input.files: {exc}.", error_id="FOLDER_URI_INVALID") from None
            if not parsed.key or parsed.key.endswith("/"):
                raise InputError(f"input.files: {uri} names a folder, not an object.", error_id="FOLDER_URI_INVALID")
            buckets.add(parsed.bucket)
        if len(buckets) > 1:
            raise InputError("input.files must all be in one bucket.", error_id="SPEC_INVALID")
        data.input.files = files
    data.input.include = sorted(set(data.input.include)) or list(DEFAULT_INCLUDE)
    data.input.exclude = sorted(set(data.input.exclude))
    if data.output.folder is None:
        data.output.folder = str(data.input_uri)
    else:
        _check_folder_uri(data.output.folder, "output.folder")
    if data.output.layout == "alongside" and data.output.folder != str(data.input_uri):
        raise InputError("layout alongside writes next to the sources: leave output.folder out, or use mirror or flat.", error_id="SPEC_INVALID")
    if data.output.layout == "mirror" and data.output.folder == str(data.input_uri):
        raise InputError("layout mirror needs an output.folder other than the input folder (or use alongside).", error_id="SPEC_INVALID")
    return data


def folder_job_id(spec: FolderJobSpec, owner_id: str) -> str:
    """``fj-`` + 24 hex: the same owner posting the same normalised spec gets the same id."""
    digest = hashlib.sha256(f"{owner_id}\n{spec.canonical_json()}".encode()).hexdigest()
    return f"fj-{digest[:24]}"


def valid_owner_id(owner_id: str) -> bool:
    """An owner id that may be put in a key, a query and an ``{owner}`` grant (no NUL, no ``/``)."""
    return bool(_OWNER_ID.match(owner_id))


def check_folder_job_id(job_id: str) -> str:
    """``fj-`` + 24 hex, or 400 FOLDER_JOB_ID_INVALID (a NUL once reached SQL and answered 500)."""
    if not _FOLDER_JOB_ID.match(job_id):
        raise InputError("A folder job id is fj- and 24 hex digits.", error_id="FOLDER_JOB_ID_INVALID")
    return job_id


@dataclass(frozen=True)
class FolderGrant:
    """One ``folderSources`` entry: ``[group@]bucket/prefix``, the prefix may hold ``{owner}`` (the caller's sub)."""

    bucket: str
    prefix: str
    group: str | None = None

    @classmethod
    def parse(cls, entry: str) -> FolderGrant:
        entry = entry.strip().removeprefix("s3://")
        head, _, rest = entry.partition("/")
        group, at, bucket = head.rpartition("@")  # a bucket name never holds "@"
        return cls(bucket=bucket, prefix=rest, group=group if at else None)

    def prefix_for(self, owner_id: str, groups: Iterable[str]) -> str | None:
        """The prefix this caller is granted, or None (not in the group, or an owner id unfit for a key)."""
        if self.group is not None and self.group not in set(groups):
            return None
        if OWNER_PLACEHOLDER in self.prefix:
            return self.prefix.replace(OWNER_PLACEHOLDER, owner_id) if valid_owner_id(owner_id) else None
        return self.prefix


def granted_prefixes(sources: list[str], owner_id: str, groups: Iterable[str] = ()) -> list[tuple[str, str]]:
    """(bucket, prefix) the caller may use: per-owner (``{owner}``), per-group (``group@``) and shared entries."""
    groups = tuple(groups)
    out = []
    for source in sources:
        grant = FolderGrant.parse(source)
        prefix = grant.prefix_for(owner_id, groups)
        if prefix is not None:
            out.append((grant.bucket, prefix))
    return out


def allowed_source(uri: S3Uri, sources: list[str], owner_id: str, groups: Iterable[str] = ()) -> bool:
    """True when ``uri`` lies in a prefix granted to this caller (cdk.json ``folderSources``)."""
    return any(bucket == uri.bucket and uri.key.startswith(prefix) for bucket, prefix in granted_prefixes(sources, owner_id, groups))


def check_allowed(spec: FolderJobSpec, sources: list[str], *, owner_id: str, groups: Iterable[str] = ()) -> None:
    """FOLDER_NOT_ALLOWED before anything is listed: a caller reads and writes only the folders granted to them."""
    groups = tuple(groups)
    granted = [f"s3://{b}/{p}" for b, p in granted_prefixes(sources, owner_id, groups)]
    for what, uri in (("input", spec.input_uri), ("output", spec.output_uri)):
        if not allowed_source(uri, sources, owner_id, groups):
            raise InputError(
                f"The {what} folder {uri} is outside the folders granted to you ({', '.join(granted) or 'none'}).",
                error_id="FOLDER_NOT_ALLOWED",
            )
