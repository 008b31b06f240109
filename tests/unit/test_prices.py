"""The default price table follows AWS's published Bedrock prices (domain/prices.py)."""

from decimal import Decimal

import pytest

from batchlane.config import DEFAULT_MODEL_ID, Settings
from batchlane.domain.cost import PriceTable, Usage
from batchlane.domain.prices import default_prices

SONNET = "anthropic.claude-sonnet-4-5-20250929-v1:0"
HAIKU = "anthropic.claude-haiku-4-5-20251001-v1:0"


@pytest.mark.parametrize(
    ("model", "input_usd", "output_usd"),
    [
        (f"global.{SONNET}", "3.00", "15.00"),
        (f"us.{SONNET}", "3.30", "16.50"),
        (f"eu.{SONNET}", "3.30", "16.50"),
        (SONNET, "3.30", "16.50"),
        (f"global.{HAIKU}", "1.00", "5.00"),
        (f"us.{HAIKU}", "1.10", "5.50"),
    ],
)
def test_global_profile_is_priced_below_geographic_and_in_region(model, input_usd, output_usd):
    """AWS: a global profile costs ~10% less than a geographic one for Claude 4.5 models."""
    prices = PriceTable(default_prices())
    assert prices.cost(model, Usage(1_000_000, 0)) == Decimal(input_usd)
    assert prices.cost(model, Usage(0, 1_000_000)) == Decimal(output_usd)


def test_the_default_model_is_priced_and_an_override_wins():
    assert DEFAULT_MODEL_ID in Settings().batchlane_prices
    overridden = Settings(batchlane_prices={DEFAULT_MODEL_ID: {"input_per_mtok": 1, "output_per_mtok": 2}}).batchlane_prices
    assert overridden[DEFAULT_MODEL_ID] == {"input_per_mtok": 1, "output_per_mtok": 2}
    assert f"global.{SONNET}" in overridden  # an override merges onto the defaults
