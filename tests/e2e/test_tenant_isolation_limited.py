"""Two owners on the offline stack with an account concurrency limit on its Lambda runtime (issue 21, "Done
when": "With a concurrency limit set on the offline Lambda runtime, the same holds"): the scenario and the
assertions of :mod:`tests.e2e.test_tenant_isolation`, variant ``lambda-concurrency-limit``. The runtime must
have refused invocations (the limit was reached), the throttled tasks waited and none failed. In a file of
its own so that `make test`, which distributes tests by file, runs the two floods side by side."""

from __future__ import annotations

from typing import Any

from tests.e2e.test_tenant_isolation import flood_and_check


def test_under_a_lambda_concurrency_limit_a_flood_by_one_owner_leaves_another_owners_conversion_and_calls_answered(stack_factory: Any) -> None:
    flood_and_check(stack_factory, "lambda-concurrency-limit")
