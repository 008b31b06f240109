"""The Secrets Manager adapter: cached reads, and a forced read that sees a rotation."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws

from batchlane.db.database_secret import SecretsManagerSource
from batchlane.domain.errors import StoreUnavailable


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


@mock_aws
def test_a_function_connects_to_the_named_database_at_the_proxy_with_verified_tls(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment CDK gives a `db` function, with a secret shaped like CDK's generated one (no dbname)."""
    from batchlane import runtime
    from batchlane.aws.clients import reset_clients
    from batchlane.config import Settings

    client = boto3.client("secretsmanager", region_name="us-east-1")
    secret = {"username": "batchlane", "password": "pw", "host": "cluster.example", "port": 5432, "engine": "postgres"}
    arn = client.create_secret(Name="batchlane-db", SecretString=json.dumps(secret))["ARN"]
    monkeypatch.delenv("DATABASE_URL", raising=False)
    env = {"DATABASE_SECRET_ARN": arn, "DATABASE_NAME": "batchlane", "DATABASE_HOST": "proxy.example", "AWS_REGION": "us-east-1"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    reset_clients()
    try:
        db = runtime._database(Settings())
    finally:
        reset_clients()
    params = db.params
    assert (params.database, params.host, params.user) == ("batchlane", "proxy.example", "batchlane")
    assert params.ssl_mode == "verify-full" and params.ssl_ca_file is None  # the system trust store: the proxy's ACM chain
    assert params.credentials is not None  # can read the secret again after a rotation


@mock_aws
def test_an_unreadable_secret_is_a_clear_store_error() -> None:
    client = boto3.client("secretsmanager", region_name="us-east-1")
    source = SecretsManagerSource("arn:aws:secretsmanager:us-east-1:123456789012:secret:missing-AbCdEf", secretsmanager=client)
    with pytest.raises(StoreUnavailable, match="cannot read the database secret"):
        source.fetch(force=True)
