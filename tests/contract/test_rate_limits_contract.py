"""RateLimits' contract, on the fake and on PostgreSQL (api_take_tokens): a new bucket is full, a request that does not
fit takes nothing and answers how long to wait, one owner's bucket never touches another's."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

SLOW = 0.001  # tokens a second: next to nothing refills while a test runs


def _owner() -> str:
    return f"rl-{uuid.uuid4().hex[:8]}"


def test_a_burst_is_admitted_then_the_next_request_waits_for_its_tokens(uow: Any) -> None:
    owner = _owner()
    assert [uow.rate_limits.take(owner, cost=1, rate_per_s=SLOW, burst=3) for _ in range(3)] == [0, 0, 0]
    wait = uow.rate_limits.take(owner, cost=1, rate_per_s=SLOW, burst=3)
    assert wait == pytest.approx(1 / SLOW, rel=0.01)  # one token at 0.001 a second
    assert uow.rate_limits.take(_owner(), cost=3, rate_per_s=SLOW, burst=3) == 0  # another owner's bucket is full


def test_a_refused_request_takes_nothing(uow: Any) -> None:
    owner = _owner()
    assert uow.rate_limits.take(owner, cost=2, rate_per_s=SLOW, burst=3) == 0
    assert uow.rate_limits.take(owner, cost=2, rate_per_s=SLOW, burst=3) == pytest.approx(1 / SLOW, rel=0.01)  # one of two left
    assert uow.rate_limits.take(owner, cost=1, rate_per_s=SLOW, burst=3) == 0  # the refusal kept that one


def test_a_bucket_that_never_refills_answers_an_hour(uow: Any) -> None:
    owner = _owner()
    assert uow.rate_limits.take(owner, cost=1, rate_per_s=0, burst=1) == 0
    assert uow.rate_limits.take(owner, cost=1, rate_per_s=0, burst=1) == 3600
