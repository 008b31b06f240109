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
    """USD per million tokens per model; an unknown model is an error, never free."""

    def __init__(self, prices: Mapping[str, Mapping[str, float]]) -> None:
        self._prices = {model: (Decimal(str(p["input_per_mtok"])), Decimal(str(p["output_per_mtok"]))) for model, p in prices.items()}

    def cost(self, model_id: str, usage: Usage, *, batch: bool = False) -> Decimal:
        try:
            input_price, output_price = self._prices[model_id]
        except KeyError:
            raise KeyError(f"no price for model {model_id!r}; add it to BATCHLANE_PRICES") from None
        usd = (input_price * usage.input_tokens + output_price * usage.output_tokens) / Decimal(1_000_000)
        if batch:
            usd *= BATCH_PRICE_MULTIPLIER
        return usd.quantize(_MICRO, rounding=ROUND_HALF_UP)
