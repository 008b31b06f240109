"""The on-demand price table of the default models: the one place prices are written.

Source: Amazon Bedrock pricing (aws.amazon.com/bedrock/pricing, Anthropic section) and the
Bedrock user guide, "Global cross-Region inference": from Claude Sonnet 4.5 / Haiku 4.5 on,
a ``global.`` inference profile is priced about 10% below the geographic (``us.``, ``eu.``,
``apac.``) profiles and the in-Region model id, on input and output alike. Checked 2026-12-01.
Batch inference bills ``domain.cost.BATCH_PRICE_MULTIPLIER`` (50%) of these.

Operators override or extend the table with ``BATCHLANE_PRICES`` (CDK context ``prices``);
a model missing from it is an error at pricing time, never free.
"""

from __future__ import annotations

from decimal import Decimal

PRICES_SOURCE = "https://aws.amazon.com/bedrock/pricing/ (Anthropic; global vs geographic/in-Region cross-Region inference)"
PRICES_CHECKED = "2026-12-01"

# The premium of geographic and in-Region endpoints over the global profile.
REGIONAL_PREMIUM = Decimal("1.10")

# USD per million tokens on the global profile: (input, output).
_GLOBAL_PER_MTOK: dict[str, tuple[Decimal, Decimal]] = {
    "anthropic.claude-sonnet-4-5-20250929-v1:0": (Decimal("3.00"), Decimal("15.00")),
    "anthropic.claude-haiku-4-5-20251001-v1:0": (Decimal("1.00"), Decimal("5.00")),
}
_GEOGRAPHIC_PREFIXES = ("us.", "eu.", "apac.", "jp.", "au.")


def _entry(input_per_mtok: Decimal, output_per_mtok: Decimal) -> dict[str, float]:
    return {"input_per_mtok": float(input_per_mtok), "output_per_mtok": float(output_per_mtok)}


def default_prices() -> dict[str, dict[str, float]]:
    """Every id a default model is called by: ``global.<model>``, ``<geo>.<model>`` and ``<model>``."""
    table: dict[str, dict[str, float]] = {}
    for model, (inp, out) in _GLOBAL_PER_MTOK.items():
        table[f"global.{model}"] = _entry(inp, out)
        regional = _entry((inp * REGIONAL_PREMIUM).quantize(Decimal("0.01")), (out * REGIONAL_PREMIUM).quantize(Decimal("0.01")))
        table[model] = regional
        for prefix in _GEOGRAPHIC_PREFIXES:
            table[f"{prefix}{model}"] = dict(regional)
    return table
