"""A batch job's S3 side: find and validate the input, stream records, write output.

Nothing here holds a whole job in memory: input is read line by line from the S3
stream (twice: once to validate, once to process, as AWS validates before it
schedules), and each output file is spooled to a temporary file, shuffled by offsets
and uploaded when its input file is done. Validation keeps only the set of recordIds.
"""

from __future__ import annotations

import json
import random
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from batchlane.domain.records import BEDROCK_RECORD_ID

from .quotas import BatchQuotas

S3_URI = re.compile(r"s3://[a-z0-9][-.a-z0-9]{1,61}[a-z0-9](?:/[-!_*'().a-zA-Z0-9]+(?:/[-!_*'().a-zA-Z0-9]+)*)?/?")


class JobInputError(Exception):
    """The input is unusable: the job ends Failed with this message as failureMessage."""


@dataclass(frozen=True)
class InputFile:
    bucket: str
    key: str
    size: int
    output_name: str  # the input's name relative to the input prefix, plus ".out" later


def split_s3_uri(uri: str) -> tuple[str, str]:
    rest = uri[len("s3://") :]
    bucket, _, key = rest.partition("/")
    return bucket, key


def list_input_files(s3: Any, uri: str) -> list[InputFile]:
    """A single .jsonl object, or every .jsonl under a prefix ending in "/"."""
    bucket, key = split_s3_uri(uri)
    try:
        if key and not key.endswith("/"):
            if not key.endswith(".jsonl"):
                raise JobInputError(f"The input file {uri} must be a .jsonl file.")
            head = s3.head_object(Bucket=bucket, Key=key)
            return [InputFile(bucket, key, int(head["ContentLength"]), key.rsplit("/", 1)[-1])]
        files = []
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=key):
            for item in page.get("Contents", []):
                if item["Key"].endswith(".jsonl"):
                    files.append(InputFile(bucket, item["Key"], int(item["Size"]), item["Key"][len(key) :]))
    except (ClientError, BotoCoreError) as exc:
        raise JobInputError(f"Unable to read the input at {uri}: {exc}") from exc
    if not files:
        raise JobInputError(f"No .jsonl input files were found at {uri}.")
    return sorted(files, key=lambda f: f.key)


def iter_lines(s3: Any, file: InputFile) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, line) for every non-blank line, streamed."""
    try:
        body = s3.get_object(Bucket=file.bucket, Key=file.key)["Body"]
        for number, line in enumerate(body.iter_lines(chunk_size=65536), start=1):
            if line.strip():
                yield number, line
    except (ClientError, BotoCoreError) as exc:
        raise JobInputError(f"Unable to read s3://{file.bucket}/{file.key}: {exc}") from exc


def parse_record(file: InputFile, number: int, line: bytes) -> dict[str, Any]:
    where = f"line {number} of s3://{file.bucket}/{file.key}"
    try:
        record = json.loads(line)
    except ValueError as exc:
        raise JobInputError(f"Malformed JSON at {where}: {exc}") from exc
    if not isinstance(record, dict):
        raise JobInputError(f"The record at {where} is not a JSON object.")
    if not isinstance(record.get("recordId"), str) or not record["recordId"]:
        raise JobInputError(f"The record at {where} has no recordId.")
    if not BEDROCK_RECORD_ID.match(record["recordId"]):
        # Bedrock documents the recordId as an alphanumeric string ("Format and upload your batch inference data"):
        # the emulator holds the lane to that, so an id with separators fails offline before it can on AWS.
        raise JobInputError(f"The recordId {record['recordId']!r} at {where} is not an alphanumeric string.")
    if not isinstance(record.get("modelInput"), dict):
        raise JobInputError(f"The record at {where} has no modelInput object.")
    return record


def validate_input(s3: Any, files: list[InputFile], quotas: BatchQuotas) -> int:
    """Check sizes and every record; the number of records, or JobInputError."""
    for file in files:
        if file.size > quotas.max_file_bytes:
            raise JobInputError(f"The input file s3://{file.bucket}/{file.key} is {file.size} bytes, over the quota of {quotas.max_file_bytes} bytes per file.")
    job_bytes = sum(f.size for f in files)
    if job_bytes > quotas.max_job_bytes:
        raise JobInputError(f"The job's input is {job_bytes} bytes, over the quota of {quotas.max_job_bytes} bytes per job.")
    seen: set[str] = set()
    for file in files:
        for number, line in iter_lines(s3, file):
            record_id = parse_record(file, number, line)["recordId"]
            if record_id in seen:
                raise JobInputError(f"Duplicate recordId {record_id!r} at line {number} of s3://{file.bucket}/{file.key}.")
            seen.add(record_id)
            if len(seen) > quotas.max_records:
                raise JobInputError(f"The job has more than {quotas.max_records} records, the maximum per batch inference job.")
    if len(seen) < quotas.min_records:
        raise JobInputError(f"The job has {len(seen)} records, fewer than the minimum of {quotas.min_records} records per batch inference job.")
    return len(seen)


def output_prefix(output_uri: str, job_id: str) -> tuple[str, str]:
    """(bucket, "<prefix>/<jobId>/") under the job's output URI."""
    bucket, key = split_s3_uri(output_uri)
    key = key.rstrip("/")
    return bucket, f"{key}/{job_id}/" if key else f"{job_id}/"


class ShuffledOutput:
    """One ``<name>.jsonl.out``: lines spooled to disk, uploaded in shuffled order.

    AWS does not keep input order in its output; shuffling makes sure nothing
    downstream quietly depends on it.
    """

    def __init__(self, bucket: str, key: str, seed: str) -> None:
        self.bucket, self.key = bucket, key
        self._random = random.Random(seed)
        self._spool = tempfile.TemporaryFile()
        self._offsets: list[tuple[int, int]] = []

    def __len__(self) -> int:
        return len(self._offsets)

    def add(self, line: dict[str, Any]) -> None:
        data = (json.dumps(line, separators=(",", ":")) + "\n").encode()
        self._offsets.append((self._spool.tell(), len(data)))
        self._spool.write(data)

    def upload(self, s3: Any) -> None:
        order = list(self._offsets)
        self._random.shuffle(order)
        with tempfile.TemporaryFile() as shuffled:
            for offset, length in order:
                self._spool.seek(offset)
                shuffled.write(self._spool.read(length))
            shuffled.seek(0)
            s3.upload_fileobj(shuffled, self.bucket, self.key)
        self.close()

    def close(self) -> None:
        self._spool.close()


def write_manifest(s3: Any, bucket: str, prefix: str, manifest: dict[str, int]) -> None:
    s3.put_object(Bucket=bucket, Key=f"{prefix}manifest.json.out", Body=json.dumps(manifest).encode(), ContentType="application/json")
