"""Errors a user sees, each with a stable id a script can match on."""

from __future__ import annotations


class BatchlaneError(Exception):
    """Base class: ``error_id`` is stable, ``str(err)`` is one line for a person."""

    error_id = "INTERNAL"

    def __init__(self, message: str, *, error_id: str | None = None) -> None:
        super().__init__(message)
        if error_id:
            self.error_id = error_id


class InputError(BatchlaneError):
    """The user's input cannot be converted (bad PDF, too large, ...)."""

    error_id = "INPUT_INVALID"


class NotFound(BatchlaneError):
    error_id = "NOT_FOUND"


class ObjectUnreadable(BatchlaneError):
    """One object of a user's bucket cannot be read or written (AccessDenied under KMS, a key too long): that file fails."""

    error_id = "OBJECT_UNREADABLE"


class Conflict(BatchlaneError):
    """The request does not fit the current state (HTTP 409)."""

    error_id = "CONFLICT"


class StoreUnavailable(BatchlaneError):
    """The database or object store could not be reached after retries."""

    error_id = "STORE_UNAVAILABLE"


class Unauthorized(BatchlaneError):
    """No caller identity on the request (HTTP 401): the API's routes and its folder routes raise it alike."""

    error_id = "UNAUTHORIZED"


class Forbidden(BatchlaneError):
    """The caller lacks the permission the action needs (HTTP 403)."""

    error_id = "FORBIDDEN"


class BudgetExceeded(BatchlaneError):
    """The owner's open holds and this month's spend leave too little of the budget (HTTP 402)."""

    error_id = "BUDGET_EXCEEDED"


class LimitReached(BatchlaneError):
    """A per-user cap (live jobs, live pages) is reached: wait for a job to end (HTTP 429)."""

    error_id = "LIMIT_REACHED"
