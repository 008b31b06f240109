"""AWS-shaped API errors.

botocore's rest-json parser takes the error code from the ``x-amzn-ErrorType`` header
and the message from the body's ``message``, so raising :class:`ApiError` anywhere in a
request handler is enough for the caller to get a ``ClientError`` with the right
``Error.Code``. HTTP statuses follow the service models (ValidationException,
ConflictException and ServiceQuotaExceededException are 400; throttling 429).
"""

from __future__ import annotations

_STATUS = {
    "ValidationException": 400,
    "ConflictException": 400,
    "ServiceQuotaExceededException": 400,
    "ResourceNotFoundException": 404,
    "AccessDeniedException": 403,
    "ThrottlingException": 429,
    "InternalServerException": 500,
    "UnknownOperationException": 404,
}


class ApiError(Exception):
    """An error answered to the client as AWS would."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = _STATUS.get(code, 400)


def validation(message: str) -> ApiError:
    return ApiError("ValidationException", message)
