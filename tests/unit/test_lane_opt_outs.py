"""The options that keep a job out of the batch lane whatever its size (domain/eligibility.lane_opt_outs): each one
needs the priority permission, so each must be named, and the defaults name none."""

from __future__ import annotations

from typing import Any

import pytest

from batchlane.domain.eligibility import lane_opt_outs


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({}, []),
        ({"highFidelity": True, "parser": "auto", "mathpix": False}, []),
        ({"parser": None}, []),
        ({"highFidelity": False}, ["highFidelity"]),
        ({"highFidelity": None}, []),  # only an explicit False opts out
        ({"parser": "pymupdf"}, ["parser"]),
        ({"mathpix": True}, ["mathpix"]),
        ({"routeToMathpix": True}, ["mathpix"]),
        ({"highFidelity": False, "parser": "pymupdf", "routeToMathpix": True}, ["highFidelity", "parser", "mathpix"]),
    ],
    ids=["defaults", "defaults-spelled-out", "parser-none", "low-fidelity", "fidelity-none", "parser", "mathpix", "route-to-mathpix", "all-three"],
)
def test_each_option_that_forces_on_demand_is_named_and_the_defaults_name_none(options: dict[str, Any], named: list[str]) -> None:
    assert lane_opt_outs(options) == named
