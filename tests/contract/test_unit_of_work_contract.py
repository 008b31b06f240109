"""The unit of work's own contract, on the fake and on PostgreSQL: a block commits, a raising block leaves nothing."""

from __future__ import annotations

from typing import Any

import pytest


def test_blocks_do_not_nest(uow: Any) -> None:
    with uow, pytest.raises(RuntimeError, match="do not nest"), uow:
        pass


def test_a_block_that_raises_can_be_followed_by_another(uow: Any) -> None:
    with pytest.raises(ValueError), uow:
        raise ValueError("the use case failed")
    with uow:
        assert uow.jobs is not None and uow.ledger is not None and uow.budgets is not None
