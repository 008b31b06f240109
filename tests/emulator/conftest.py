"""A moto S3 server on loopback for the emulator's unit tests (each module names its BUCKET)."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from moto.server import ThreadedMotoServer

CREDS = {"region_name": "us-east-1", "aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


@pytest.fixture(scope="module")
def s3_endpoint(request: pytest.FixtureRequest) -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    boto3.client("s3", endpoint_url=endpoint, **CREDS).create_bucket(Bucket=request.module.BUCKET)
    yield endpoint
    server.stop()
