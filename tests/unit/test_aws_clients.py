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
