"""Model prices: what a model's tokens cost, from the API's table, else the settings.

Prices are per million tokens in micro-units of a currency (``1.25`` USD a
million input tokens is ``1_250_000``). The instance's table (``/api/prices``,
instance admins) wins over ``PAPERCLIP_MODEL_PRICES``. A provider that says
what a response cost is not priced here: its own cost wins.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.common.activity import record_activity
from paperclip.common.actor import Actor
from paperclip.errors import InvalidInputError, NotFoundError
from paperclip.models import ModelPrice

log = logging.getLogger(__name__)

MILLION = 1_000_000
WARNED_LIMIT = 4096
"""Models without a price that were warned about, remembered per process (then forgotten)."""


@dataclass(frozen=True, slots=True)
class Price:
    model: str
    input_per_million_micros: int
    cached_input_per_million_micros: int
    output_per_million_micros: int
    currency: str = "USD"

    def cost_micros(self, input_tokens: int, cached_input_tokens: int, output_tokens: int) -> int:
        """What these tokens cost; cached input is priced apart from the rest of the input."""
        cached = min(cached_input_tokens, input_tokens)
        total = (
            (input_tokens - cached) * self.input_per_million_micros
            + cached * self.cached_input_per_million_micros
            + output_tokens * self.output_per_million_micros
        )
        return (total + MILLION // 2) // MILLION  # to the nearest micro-unit


def prices_from_settings(configured: Mapping[str, Mapping[str, Any]]) -> dict[str, Price]:
    """``PAPERCLIP_MODEL_PRICES``: model -> {input, cached_input, output (a million tokens, in
    currency units), currency}."""
    prices: dict[str, Price] = {}
    for model, entry in configured.items():
        prices[model] = Price(
            model=model,
            input_per_million_micros=round(float(entry["input"]) * MILLION),
            cached_input_per_million_micros=round(
                float(entry.get("cached_input", entry["input"])) * MILLION
            ),
            output_per_million_micros=round(float(entry["output"]) * MILLION),
            currency=str(entry.get("currency", "USD")),
        )
    return prices


class UnpricedModels:
    """Models that had no price, each warned about once (bounded memory)."""

    def __init__(self) -> None:
        self._seen: OrderedDict[str, None] = OrderedDict()

    def warn_once(self, model: str) -> None:
        if model in self._seen:
            return
        self._seen[model] = None
        if len(self._seen) > WARNED_LIMIT:
            self._seen.popitem(last=False)
        log.warning(
            "model %r has no price: its tokens are recorded without a cost "
            "(set one with PUT /api/prices/{model} or PAPERCLIP_MODEL_PRICES)",
            model,
        )


async def price_of(
    session: AsyncSession, model: str, configured: Mapping[str, Price]
) -> Price | None:
    """The model's price: the table's, else the settings', else None."""
    if not model:
        return None
    row = await session.get(ModelPrice, model)
    if row is not None:
        return Price(
            row.model,
            row.input_per_million_micros,
            row.cached_input_per_million_micros,
            row.output_per_million_micros,
            row.currency,
        )
    return configured.get(model)


class PriceService:
    """The instance's price table, for the API."""

    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], configured: Mapping[str, Price]
    ) -> None:
        self.sessions = sessions
        self.configured = dict(configured)

    async def list(self) -> list[tuple[Price, str]]:
        """Every price in force, with where it comes from (``table`` or ``settings``)."""
        async with self.sessions() as session:
            rows = (await session.execute(select(ModelPrice).order_by(ModelPrice.model))).scalars()
            table = {
                r.model: Price(
                    r.model,
                    r.input_per_million_micros,
                    r.cached_input_per_million_micros,
                    r.output_per_million_micros,
                    r.currency,
                )
                for r in rows
            }
        merged = [(p, "settings") for m, p in self.configured.items() if m not in table]
        merged += [(p, "table") for p in table.values()]
        return sorted(merged, key=lambda item: item[0].model)

    async def put(self, actor: Actor, price: Price) -> Price:
        for name in (
            "input_per_million_micros",
            "cached_input_per_million_micros",
            "output_per_million_micros",
        ):
            if getattr(price, name) < 0:
                raise InvalidInputError(f"{name} may not be negative", field=name)
        async with self.sessions.begin() as session:
            row = await session.get(ModelPrice, price.model, with_for_update=True)
            if row is None:
                row = ModelPrice(model=price.model)
                session.add(row)
            row.input_per_million_micros = price.input_per_million_micros
            row.cached_input_per_million_micros = price.cached_input_per_million_micros
            row.output_per_million_micros = price.output_per_million_micros
            row.currency = price.currency
            record_activity(
                session,
                actor,
                "price.set",
                entity_type="model_price",
                entity_id=price.model,
                company_id=None,
                details={"model": price.model},
            )
        return price

    async def delete(self, actor: Actor, model: str) -> None:
        async with self.sessions.begin() as session:
            row = await session.get(ModelPrice, model, with_for_update=True)
            if row is None:
                raise NotFoundError(
                    f"no price of model {model!r} in the table", code="price_not_found"
                )
            await session.delete(row)
            record_activity(
                session,
                actor,
                "price.deleted",
                entity_type="model_price",
                entity_id=model,
                company_id=None,
                details={"model": model},
            )
