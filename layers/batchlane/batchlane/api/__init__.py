"""The owner-only HTTP API: routes (``app``) over use cases (``usecases``).

The caller is whoever the authorizer says (``requestContext.authorizer.claims.sub``);
another user's file or job answers 404, exactly like one that does not exist. Errors
are JSON ``{"error": {"code": "STABLE_CODE", "message": "one line"}}``; docs/api/openapi.yaml is
the contract.
"""
