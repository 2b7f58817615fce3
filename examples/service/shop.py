"""The shop the service's plans use: a price list, and orders appended to a file (the effect a person approves).

Orders go to $SHOP_ORDERS, else orders.jsonl beside this file: one JSON line per order placed.
"""

import json
import os
from pathlib import Path

PRICES = {"paper": 4.5, "toner": 61.0, "stapler": 12.25}


def price(item: str) -> dict:
    return {"item": item, "euros": PRICES.get(item, 0.0)}


def order(item: str, quantity: int) -> dict:
    orders = Path(os.environ.get("SHOP_ORDERS") or Path(__file__).with_name("orders.jsonl"))
    with orders.open("a", encoding="utf-8") as placed:
        placed.write(json.dumps({"item": item, "quantity": quantity}) + "\n")
    number = len(orders.read_text(encoding="utf-8").splitlines())
    return {"order": number, "item": item, "quantity": quantity}
