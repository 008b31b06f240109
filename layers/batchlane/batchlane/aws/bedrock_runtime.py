"""ModelRuntime over boto3 ``bedrock-runtime``: InvokeModel with a read timeout per request, errors translated once.

botocore's own retries are off for these clients (``max_attempts`` 0, set by the composition
root): the governed transport retries under the global limit (docs/ondemand.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, ReadTimeoutError

from batchlane.ports import ModelCallFailed, ModelReadTimeout, ModelResponse


class BedrockRuntime:
    """``client_for(seconds)`` gives a client with that read timeout (aws.clients caches them)."""

    def __init__(self, client_for: Callable[[float], Any]) -> None:
        self._client_for = client_for

    def invoke_model(self, request: Mapping[str, Any], *, read_timeout: float) -> ModelResponse:
        try:
            response = self._client_for(read_timeout).invoke_model(**request)
            return ModelResponse(bytes(response["body"].read()), response.get("serviceTier"))
        except ReadTimeoutError as exc:
            raise ModelReadTimeout("ReadTimeout", f"no answer within {read_timeout:g} s") from exc
        except ClientError as exc:
            error = exc.response.get("Error", {})
            raise ModelCallFailed(str(error.get("Code", "ClientError")), str(error.get("Message", str(exc)))) from exc
        except BotoCoreError as exc:
            raise ModelCallFailed(type(exc).__name__, str(exc), transient=True) from exc
