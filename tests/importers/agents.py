"""Programs the OpenTelemetry import tests trace, capture and replay: a LangGraph agent (langchain-openai with a
tool, a MemorySaver checkpointer) against an OpenAI-compatible server at $BASE, and the OpenInference LangChain
instrumentation that traces it to $OTLP."""

LANGGRAPH_AGENT = """
import json
import os
from typing import Annotated, TypedDict

from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import MemorySaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition


@tool
def lookup_order(order_id: str) -> str:
    \"\"\"Find an order by its id.\"\"\"
    return json.dumps({"id": order_id, "status": "shipped"})


class State(TypedDict):
    messages: Annotated[list, add_messages]


model = ChatOpenAI(model="gpt-4o-mini", base_url=os.environ["BASE"] + "/v1", api_key="sk-test-lg-0123456789abcdef",
                   max_retries=0).bind_tools([lookup_order])
graph = StateGraph(State)
graph.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
graph.add_node("tools", ToolNode([lookup_order]))
graph.add_edge(START, "agent")
graph.add_conditional_edges("agent", tools_condition)
graph.add_edge("tools", "agent")
app = graph.compile(checkpointer=MemorySaver())
result = app.invoke({"messages": [HumanMessage(os.environ.get("PROMPT", "Where is order A-1?"))]},
                    {"configurable": {"thread_id": "t1"}})
print(" | ".join(f"{message.type}: {message.content}" for message in result["messages"]))
"""

LANGCHAIN_TRACING = """
import os

from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

provider = TracerProvider()
if os.environ.get("OTLP"):
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=os.environ["OTLP"] + "/v1/traces")))
LangChainInstrumentor().instrument(tracer_provider=provider)
"""
LANGGRAPH_TRACED = LANGCHAIN_TRACING + LANGGRAPH_AGENT
