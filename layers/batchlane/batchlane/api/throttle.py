"""Per-user rate limit on every API route: a token bucket per Cognito ``sub`` in PostgreSQL.

One user's flood exhausts only that user's bucket (429 RATE_LIMITED with ``Retry-After``), so
the API's instances keep answering everyone else (issue 21.2; docs/operations.md "API rate limits").
"""

from __future__ import annotations

import math

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware

from batchlane.domain.errors import LimitReached
from batchlane.runtime import services


class RateLimited(LimitReached):
    """The caller's requests outran their rate limit: retry after ``retry_after_s`` (HTTP 429)."""

    error_id = "RATE_LIMITED"

    def __init__(self, message: str, *, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


def request_cost(method: str, path: str, query: dict[str, str] | None, *, file_cost: int, folder_cost: int) -> int:
    """Tokens a request takes, following the work it may start: a dry run starts an estimate (up to ~20 s of the
    worker for a file, ~40 s for a folder's listing and sample); every other request answers from the database."""
    dry = ((query or {}).get("dry_run") or "").lower() in ("true", "1")
    if method != "POST" or not dry:
        return 1
    return folder_cost if path.rstrip("/").endswith("/folder-jobs") else file_cost


def rate_limit(app: APIGatewayRestResolver, next_middleware: NextMiddleware) -> Response:
    """Admit the request from the caller's bucket or raise :class:`RateLimited` (no caller: the route answers 401)."""
    settings = services().settings
    context = app.current_event.request_context
    sub = ((context.authorizer.claims or {}) if context.authorizer else {}).get("sub")
    if sub and settings.batchlane_api_rate_per_s > 0:
        cost = min(
            settings.batchlane_api_burst,
            request_cost(
                app.current_event.http_method,
                app.current_event.path,
                app.current_event.query_string_parameters,
                file_cost=settings.batchlane_api_dry_run_cost,
                folder_cost=settings.batchlane_api_folder_dry_run_cost,
            ),
        )
        buckets = services().uow().rate_limits
        wait_s = buckets.take(str(sub), cost=cost, rate_per_s=settings.batchlane_api_rate_per_s, burst=settings.batchlane_api_burst)
        if wait_s > 0:
            retry_after = max(1, math.ceil(wait_s))
            raise RateLimited(
                f"Too many requests: this user may make {settings.batchlane_api_rate_per_s:g} a second (bursts of {settings.batchlane_api_burst}); "
                f"retry after {retry_after} s. An operator raises it with BATCHLANE_API_RATE_PER_S / BATCHLANE_API_BURST.",
                retry_after_s=retry_after,
            )
    return next_middleware(app)
