"""batchlane.aws.clients: every client from one session per process and Region (its loader reads a model once)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from botocore.config import Config

from batchlane.aws import clients


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    clients.reset_clients()
    yield
    clients.reset_clients()


def test_clients_of_every_service_and_timeout_share_one_session_and_its_loaded_models() -> None:
    runtime_a = clients.client("bedrock-runtime", read_timeout=60)
    runtime_b = clients.client("bedrock-runtime", read_timeout=75)
    s3 = clients.client("s3")
    assert runtime_a is not runtime_b and runtime_a is clients.client("bedrock-runtime", read_timeout=60)
    assert list(clients._sessions) == ["eu-west-1"] and s3.meta.region_name == "eu-west-1"
    loader = clients._sessions["eu-west-1"]._session.get_component("data_loader")
    cached = len(loader._cache)
    clients.client("bedrock-runtime", read_timeout=90)
    assert len(loader._cache) == cached, "a third bedrock-runtime client read no model file again"


def test_a_client_with_credentials_signs_with_them_and_is_not_the_shared_one() -> None:
    config = Config(retries={"mode": "standard", "max_attempts": 5})
    assumed = clients.client_with_credentials("s3", config, access_key_id="ASIAOWNER", secret_access_key="secret", session_token="token")
    credentials = assumed._request_signer._credentials
    assert (credentials.access_key, credentials.token) == ("ASIAOWNER", "token")
    assert clients.client("s3")._request_signer._credentials.access_key == "testing"


def test_reset_forgets_the_session_so_a_changed_region_is_seen(monkeypatch: pytest.MonkeyPatch) -> None:
    clients.client("s3")
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    clients.reset_clients()
    assert clients.client("s3").meta.region_name == "us-west-2"


@pytest.mark.parametrize("region", ["us-east-1", "eu-west-1"])
def test_presigned_s3_urls_name_the_buckets_regional_host_the_consoles_policy_allows(monkeypatch: pytest.MonkeyPatch, region: str) -> None:
    """Issue 40.5: the console's CSP names ``<bucket>.s3.<region>.amazonaws.com`` only (infra/console.py); in us-east-1
    botocore signed for the global ``<bucket>.s3.amazonaws.com``, which that policy would refuse."""
    monkeypatch.setenv("AWS_REGION", region)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    clients.reset_clients()
    s3 = clients.client("s3", signature_version="s3v4")
    host = f"https://docs-bucket.s3.{region}.amazonaws.com/"
    assert s3.generate_presigned_url("get_object", Params={"Bucket": "docs-bucket", "Key": "uploads/a.pdf"}, ExpiresIn=60).startswith(host)
    assert s3.generate_presigned_post("docs-bucket", "uploads/a.pdf", ExpiresIn=60)["url"] == host
