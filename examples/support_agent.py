"""A small support agent: looks up an order, asks a model for the answer, sends the reply.

It marks its nondeterministic boundaries with the wop SDK: two tools, a clock read, a random
choice, state writes and an LLM call (to a local fake model, so it runs offline).

    wop capture -- python examples/support_agent.py A-1001
    python examples/support_agent.py A-1001 --warm     # a prompt change, to diff against
"""

import argparse
import random
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fake_model  # noqa: E402

import openwop_cli as wop  # noqa: E402

SYSTEM_PROMPT = "You are a concise support agent for Acme. Answer in one sentence."
GREETINGS = ("Hi", "Hello", "Good day")
ORDERS = {
    "A-1001": {"id": "A-1001", "status": "shipped", "eta": "2025-11-25"},
    "A-1002": {"id": "A-1002", "status": "packing", "eta": "2025-11-27"},
}


@wop.tool
def lookup_order(order_id: str) -> dict:
    """The order record, or an error the agent can explain."""
    if order_id not in ORDERS:
        raise KeyError(f"no order {order_id}")
    return dict(ORDERS[order_id])


@wop.tool
def send_reply(ticket: str, text: str) -> dict:
    """Pretend to send the reply to the customer."""
    print(f"[{ticket}] {text}")
    return {"sent": True, "chars": len(text)}


def answer(order_id: str, system_prompt: str, extra_context: Callable[[str], str] | None = None) -> str:
    """Handle one ticket; extra_context(order_id) may add a line to the model's context."""
    received_at = wop.now()
    order = lookup_order(order_id)
    wop.state.write("ticket", {"order": order_id, "topic": "shipping", "receivedAt": received_at.isoformat()},
                    reducer="merge", node_id="triage")
    greeting = GREETINGS[wop.randint(0, len(GREETINGS) - 1, key="greeting")]
    messages = [
        {"role": "system", "content": system_prompt},
        {"role": "user", "content": f"Where is my order {order_id}?"},
        {"role": "tool", "content": f"order {order['id']} status={order['status']} eta={order['eta']}",
         "tool_call_id": "lookup-1"},
    ]
    if extra_context is not None:
        messages.append({"role": "user", "content": extra_context(order_id)})
    request = {"messages": messages, "temperature": 0.2, "max_tokens": 200}
    reply = wop.llm_call("openai", "fake-gpt", request, lambda: fake_model.complete("fake-gpt", **request))
    text = f"{greeting}! {reply['choices'][0]['message']['content']}"
    send_reply(order_id, text)
    wop.state.write("replies", text, reducer="append", node_id="reply")
    return text


def main(system_prompt: str = SYSTEM_PROMPT, extra_context: Callable[[str], str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("order_id", nargs="?", default="A-1001")
    parser.add_argument("--warm", action="store_true", help="use the warmer system prompt")
    parser.add_argument("--seed", type=int, help="seed the random greeting (to compare two runs)")
    args = parser.parse_args()
    if args.seed is not None:
        random.seed(args.seed)
    prompt = system_prompt + (" Be warm." if args.warm else "")
    try:
        answer(args.order_id, prompt, extra_context)
    except KeyError as exc:
        print(f"cannot help: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
