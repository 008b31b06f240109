"""The Secrets Manager adapter: cached reads, and a forced read that sees a rotation."""

from __future__ import annotations

import json

import boto3
from moto import mock_aws

from batchlane.db.secrets import SecretsManagerSource


@mock_aws
def test_a_forced_fetch_reads_the_rotated_password_the_cache_still_hides() -> None:
    client = boto3.client("secretsmanager", region_name="us-east-1")
    arn = client.create_secret(Name="batchlane-db", SecretString=json.dumps({"username": "batchlane", "password": "v1", "host": "db"}))["ARN"]
    source = SecretsManagerSource(arn, secretsmanager=client)
    assert source.fetch()["password"] == "v1"

    client.put_secret_value(SecretId=arn, SecretString=json.dumps({"username": "batchlane", "password": "v2", "host": "db"}))

    assert source.fetch()["password"] == "v1"  # within max_age: the cached version
    assert source.fetch(force=True)["password"] == "v2"
    assert source.fetch()["password"] == "v2"  # and the cache now holds the new one
