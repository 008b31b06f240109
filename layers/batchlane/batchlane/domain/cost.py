"""Token prices and the batch discount."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

BATCH_PRICE_MULTIPLIER = Decimal("0.5")
_MICRO = Decimal("0.000001")


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens)


class PriceTable:
    """USD per million tokens per model; an unknown model is an error, never free.

    The Flex rate (service tier ``flex``, domain/service_tier.py) is the operator's: a model's own
    ``flex_input_per_mtok``/``flex_output_per_mtok``, else ``flex_discount`` off its standard rate.
    AWS publishes none for Claude, so with neither a Flex call has no price and Flex stays off.
    """

    def __init__(self, prices: Mapping[str, Mapping[str, float]], *, flex_discount: Decimal | None = None) -> None:
        self._prices = {model: (Decimal(str(p["input_per_mtok"])), Decimal(str(p["output_per_mtok"]))) for model, p in prices.items()}
        self._flex: dict[str, tuple[Decimal, Decimal]] = {}
        for model, p in prices.items():
            if "flex_input_per_mtok" in p and "flex_output_per_mtok" in p:
                self._flex[model] = (Decimal(str(p["flex_input_per_mtok"])), Decimal(str(p["flex_output_per_mtok"])))
            elif flex_discount is not None:
                keep = Decimal(1) - Decimal(str(flex_discount))
                self._flex[model] = (self._prices[model][0] * keep, self._prices[model][1] * keep)

    def flex_rate(self, model_id: str) -> tuple[Decimal, Decimal] | None:
        """(input, output) USD per million tokens at Flex, or None when none is configured."""
        return self._flex.get(model_id)

    def rate(self, model_id: str, tier: str = "default") -> tuple[Decimal, Decimal]:
        """(input, output) USD per million tokens at ``tier`` (default or flex)."""
        table = self._flex if tier == "flex" else self._prices
        try:
            return table[model_id]
        except KeyError:
            what = "Flex rate (BATCHLANE_FLEX_DISCOUNT or flex_*_per_mtok)" if tier == "flex" else "price"
            raise KeyError(f"no {what} for model {model_id!r}; add it to BATCHLANE_PRICES") from None

    def cost(self, model_id: str, usage: Usage, *, batch: bool = False, tier: str = "default") -> Decimal:
        input_price, output_price = self.rate(model_id, tier)
        usd = (input_price * usage.input_tokens + output_price * usage.output_tokens) / Decimal(1_000_000)
        if batch:
            usd *= BATCH_PRICE_MULTIPLIER
        return usd.quantize(_MICRO, rounding=ROUND_HALF_UP)
