"""The tools the weather and shopping demos give their agents, scripted or on a provider:
one definition for ``tracer.demo.scenarios`` and ``tracer.demo.providers``."""

from __future__ import annotations

import json
import time

from langchain_core.tools import ToolException, tool


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return {"Oslo": "Light snow, -3°C, wind 4 m/s from the north."}.get(
        city, f"Sunny, 21°C in {city}.")


PRICES = {"laptop": 1299.0, "mouse": 25.0, "keyboard": 89.0}


@tool
def get_price(product: str) -> str:
    """Look up the price of a product in the catalogue (USD)."""
    time.sleep(0.05)  # a catalogue round trip: parallel look-ups visibly overlap
    if product not in PRICES:
        msg = f"unknown product {product!r}: not in the catalogue"
        raise ToolException(msg)
    return json.dumps({"product": product, "price": PRICES[product], "currency": "USD"})


get_price.handle_tool_error = True  # a ToolException comes back as an error ToolMessage


@tool
def apply_discount(total: float, code: str) -> str:
    """Apply a discount code to a total and return the new total."""
    pct = {"SAVE10": 10, "WELCOME5": 5}.get(code.upper(), 0)
    return json.dumps({"code": code, "percent": pct, "total": round(total * (1 - pct / 100), 2)})
