"""Each owner's webhook signing secret sealed with KMS (port ``batchlane.ports.SecretCipher``).

Encrypt and Decrypt with the deployment's key and an encryption context naming the owner and the purpose: KMS binds
the context to the ciphertext (AWS KMS Developer Guide, "Encryption context"), so a sealed secret copied to another
owner's row does not open, and the key's policy can require the context (deployment/grants.py). Why a column and not
a Secrets Manager secret per owner: docs/decisions/0037-webhook-secret-per-owner.md.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from batchlane.contract import WEBHOOK_OWNER_CONTEXT, WEBHOOK_PURPOSE, WEBHOOK_PURPOSE_CONTEXT
from batchlane.domain.errors import BatchlaneError, StoreUnavailable


class SecretUnreadable(BatchlaneError):
    """A sealed secret that KMS will not open for this owner (another owner's, or damaged)."""

    error_id = "WEBHOOK_SECRET_UNREADABLE"


def context(owner_id: str) -> dict[str, str]:
    return {WEBHOOK_OWNER_CONTEXT: owner_id, WEBHOOK_PURPOSE_CONTEXT: WEBHOOK_PURPOSE}


class KmsSecretCipher:
    def __init__(self, kms: Any, key_id: str | None) -> None:
        self._kms = kms
        self._key = key_id

    def _key_id(self) -> str:
        if not self._key:
            raise StoreUnavailable("No webhook key is configured (WEBHOOK_KEY_ARN).", error_id="WEBHOOK_KEY_MISSING")
        return self._key

    def seal(self, owner_id: str, plaintext: str) -> bytes:
        key = self._key_id()
        try:
            answer = self._kms.encrypt(KeyId=key, Plaintext=plaintext.encode(), EncryptionContext=context(owner_id))
        except ClientError as exc:
            raise StoreUnavailable("The webhook key could not be used.", error_id="WEBHOOK_KEY_UNAVAILABLE") from exc
        return bytes(answer["CiphertextBlob"])

    def open(self, owner_id: str, ciphertext: bytes) -> str:
        key = self._key_id()
        try:
            answer = self._kms.decrypt(KeyId=key, CiphertextBlob=ciphertext, EncryptionContext=context(owner_id))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "InvalidCiphertextException":
                raise SecretUnreadable(f"The signing secret stored for {owner_id} does not open for that owner.") from exc
            raise StoreUnavailable("The webhook key could not be used.", error_id="WEBHOOK_KEY_UNAVAILABLE") from exc
        return bytes(answer["Plaintext"]).decode()
