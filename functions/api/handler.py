"""api: the owner-only HTTP API (API Gateway REST proxy → Powertools' resolver).

Identity comes from the Cognito authorizer (``requestContext.authorizer.claims.sub``);
routes and error codes are in ``batchlane.api.app`` and docs/api/openapi.yaml.
"""

from typing import Any

from batchlane.api.app import app
from batchlane.handlers import lambda_handler


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
