"""A LangGraph agent streaming its events over two turns of one thread, its checkpoints in a MemorySaver.

LangGraph mints checkpoint ids and timestamps in many asyncio tasks of its own; a replay creates fewer tasks than the
capture (no real I/O), so tasks must be told apart by who made them, not by asyncio's process-wide Task-N.
"""


from tests.conftest import requires
from tests.fake_provider import FakeProvider
from tests.programs import capture, replay

requires("langgraph")
requires("langchain_openai")

AGENT = """
import asyncio, os
from typing import Annotated, TypedDict

from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import MemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

class State(TypedDict):
    messages: Annotated[list, add_messages]

model = ChatOpenAI(model="gpt-4o-mini", base_url=os.environ["BASE"] + "/v1", api_key="sk-test", max_retries=0)

async def think(state: State):
    return {"messages": [await model.ainvoke(state["messages"])]}

async def review(state: State):
    reply = await model.ainvoke(state["messages"] + [HumanMessage("review the last answer")])
    return {"messages": [reply]}

graph = StateGraph(State)
graph.add_node("think", think)
graph.add_node("review", review)
graph.add_edge(START, "think")
graph.add_edge("think", "review")
graph.add_edge("review", END)
app = graph.compile(checkpointer=MemorySaver())

async def main():
    config = {"configurable": {"thread_id": "conversation-1"}}
    for turn, question in enumerate(["what is a checkpoint?", "and a thread?"]):
        async for event in app.astream_events({"messages": [HumanMessage(question)]}, config, version="v2"):
            if event["event"] in ("on_chat_model_end", "on_chain_end") and event.get("name") in ("think", "review"):
                print(turn, event["event"], event["name"])
        snapshot = await app.aget_state(config)
        print(turn, "checkpoint", snapshot.config["configurable"]["checkpoint_id"], snapshot.created_at)
        print(turn, "last", snapshot.values["messages"][-1].content)

asyncio.run(main())
"""


def test_a_langgraph_agent_streaming_events_with_a_memory_saver_replays_exactly(tmp_path):
    with FakeProvider() as provider:
        done, source = capture(tmp_path, AGENT, {"BASE": provider.url})
        assert done.returncode == 0, done.stderr
    printed = done.stdout.splitlines()
    assert sum("checkpoint" in line for line in printed) == 2
    for attempt in range(3):
        replayed, report = replay(tmp_path, source, "--strict", env={"BASE": provider.url}, name=f"replay-{attempt}")
        assert replayed.returncode == 0, (replayed.stderr, report and report["divergences"])
        assert report["compared"]["liveValues"] == 0 and report["liveValues"] == []
        assert [line for line in replayed.stderr.splitlines() if not line.startswith("wop")] == printed
