"""The support agent after a change: a warmer prompt and one more tool call (the customer's loyalty tier).

Replay a capture of support_agent.py against it to see where the new code parts ways:

    wop capture -- python3 examples/support_agent.py
    wop replay last -- python3 examples/support_agent_changed.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import support_agent  # noqa: E402

import openwop_cli as wop  # noqa: E402

CHANGED_PROMPT = support_agent.SYSTEM_PROMPT + " Be warm, and thank loyal customers."


@wop.tool
def loyalty_tier(order_id: str) -> dict:
    """The customer's loyalty tier (gold customers get thanked)."""
    return {"order": order_id, "tier": "gold"}


def loyalty_line(order_id: str) -> str:
    return f"The customer is a {loyalty_tier(order_id)['tier']} member."


if __name__ == "__main__":
    sys.exit(support_agent.main(CHANGED_PROMPT, loyalty_line))
