"""Agents on MCP, held-out style, for the MCP tests: a Python server and the programs that use it.

The server (SERVER) has a file tool (`lookup_order`: an order from orders.json) and a clock tool (`now`);
each start appends its pid to server-starts.txt and each tool call a line to server-calls.txt, so a test
can tell that no server ran during a replay. Every agent reads ORDER (the tool argument), PROMPT (the
start of its prompt) and BASE (the fake provider) from its environment, and prints what the model said.
"""

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

SERVER = r'''
"""An MCP server with a file tool and a clock tool (stdio, or streamable HTTP: `server.py http PORT`)."""
import json, os, sys, time
from pathlib import Path
HERE = Path(__file__).resolve().parent
with open(HERE / "server-starts.txt", "a") as marks:
    marks.write(f"{os.getpid()}\n")
http = sys.argv[1:2] == ["http"]
port = int(sys.argv[2]) if http else 0
try:
    from mcp.server.mcpserver import Context, MCPServer  # mcp 2.x
    server = MCPServer("orders")
    run = (lambda: server.run("streamable-http", port=port)) if http else server.run
except ImportError:
    from mcp.server.fastmcp import Context, FastMCP  # mcp 1.x
    server = FastMCP("orders", port=port)
    run = lambda: server.run("streamable-http" if http else "stdio")

def served(tool):
    with open(HERE / "server-calls.txt", "a") as calls:
        calls.write(tool + "\n")


@server.tool()
async def lookup_order(order_id: str, ctx: Context) -> str:
    """Look an order up in the orders file."""
    served("lookup_order")
    await ctx.report_progress(1, 2, "opening the orders file")
    return json.dumps(json.loads((HERE / "orders.json").read_text()).get(order_id))


@server.tool()
def now() -> str:
    """The server's clock."""
    served("now")
    return str(time.time())


if __name__ == "__main__":
    run()
'''

# The model is asked with httpx, which the MCP SDK imports anyway and the openai SDK sends through (the same
# llm_request): the SDK would cost each process of a capture and its replays 0.6 s of CPU to import.
_ASK = '''
def ask(text):
    import httpx
    reply = httpx.post(os.environ["BASE"] + "/v1/chat/completions", headers={"authorization": "Bearer sk-test"},
                       timeout=60, json={"model": "gpt-4o-mini", "messages": [
                           {"role": "user", "content": os.environ.get("PROMPT", "Tell the customer") + ": " + text}]})
    print(reply.json()["choices"][0]["message"]["content"])
'''

SDK_STDIO = '''
import asyncio, os, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
''' + _ASK + '''

async def progress(done, total, message):
    print("progress", done, total, message)

async def main():
    params = StdioServerParameters(command=sys.executable, args=["server.py"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            order = await session.call_tool("lookup_order", {"order_id": os.environ.get("ORDER", "A-1")},
                                            progress_callback=progress)
            clock = await session.call_tool("now", {})
    names = [tool.name for tool in tools.tools]
    ask(f"{order.content[0].text} (tools {names}, at {clock.content[0].text})")

asyncio.run(main())
'''

SDK_HTTP_SPAWNED = '''
import asyncio, os, socket, subprocess, sys, time
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
''' + _ASK + '''
PORT = int(os.environ["PORT"])


def wait_until_it_answers():
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", PORT), timeout=0.5).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


async def main():
    async with streamable_http_client(f"http://127.0.0.1:{PORT}/mcp") as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            order = await session.call_tool("lookup_order", {"order_id": os.environ.get("ORDER", "A-1")})
            clock = await session.call_tool("now", {})
    ask(f"{order.content[0].text} at {clock.content[0].text}")

server = subprocess.Popen([sys.executable, "server.py", "http", str(PORT)], stderr=subprocess.DEVNULL,
                          env={"PATH": os.environ["PATH"]})  # a filtered environment, as MCP's own stdio_client makes
try:
    wait_until_it_answers()
    asyncio.run(main())
finally:
    server.terminate()
    server.wait()
'''

NODE_FILESYSTEM = '''
import asyncio, os, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
''' + _ASK + '''

async def main():
    params = StdioServerParameters(command="./node-server.sh", args=[os.getcwd()])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            order = await session.call_tool("read_text_file", {"path": os.path.join(os.getcwd(), os.environ.get("ORDER", "orders.json"))})
    ask(f"{order.content[0].text} ({len(tools.tools)} tools)")

asyncio.run(main())
'''

OPENAI_AGENTS = '''
import asyncio, os, sys
from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.mcp import MCPServerStdio
from openai import AsyncOpenAI

set_tracing_disabled(True)


async def main():
    client = AsyncOpenAI(base_url=os.environ["BASE"] + "/v1", api_key="sk-test")
    async with MCPServerStdio(params={"command": sys.executable, "args": ["server.py"]}, name="orders") as server:
        direct = await server.call_tool("lookup_order", {"order_id": os.environ.get("ORDER", "A-1")})
        agent = Agent(name="support", instructions="Answer with the order.", mcp_servers=[server],
                      model=OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client))
        result = await Runner.run(agent, os.environ.get("PROMPT", "Tell the customer") + ": where is A-1?")
    print(direct.content[0].text)
    print(result.final_output)

asyncio.run(main())
'''

LANGCHAIN = '''
import asyncio, os, sys
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_openai import ChatOpenAI
from langchain_core.messages import HumanMessage, ToolMessage


async def main():
    client = MultiServerMCPClient({"orders": {"command": sys.executable, "args": ["server.py"], "transport": "stdio"}})
    tools = {tool.name: tool for tool in await client.get_tools()}
    direct = await tools["lookup_order"].ainvoke({"order_id": os.environ.get("ORDER", "A-1")})
    model = ChatOpenAI(model="gpt-4o-mini", base_url=os.environ["BASE"] + "/v1", api_key="sk-test")
    messages = [HumanMessage(os.environ.get("PROMPT", "Tell the customer") + ": where is A-1?")]
    answer = await model.bind_tools(list(tools.values())).ainvoke(messages)
    messages.append(answer)
    for call in answer.tool_calls:
        messages.append(ToolMessage(str(await tools[call["name"]].ainvoke(call["args"])), tool_call_id=call["id"]))
    final = await model.ainvoke(messages)
    print(direct)
    print(final.content)

asyncio.run(main())
'''

NODE_SERVER_PACKAGE = "@modelcontextprotocol/server-filesystem@2026.8.31"
NODE_DIR = ROOT / ".ci" / "node-mcp"
OTHER_MCP_PYTHON = ROOT / ".ci" / "mcp-venv" / "bin" / "python"


def write_agent(directory: Path, program: str) -> None:
    """The server, its orders file and the agent (agent.py) in directory."""
    (directory / "server.py").write_text(SERVER)
    (directory / "orders.json").write_text(json.dumps({"A-1": {"item": "lamp", "status": "shipped"},
                                                       "B-2": {"item": "desk", "status": "packed"}}))
    (directory / "agent.py").write_text(program)


def mcp_version(python: str) -> int | None:
    """The major version of the mcp SDK python imports (None: none)."""
    found = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('mcp'))"],
                           capture_output=True, text=True)
    return int(found.stdout.split(".")[0]) if found.returncode == 0 else None


def pythons() -> list:
    """The Pythons the MCP tests run agents with: this one, with the mcp the test extra installs, and .ci/mcp-venv's,
    which .ci/run makes with the other major version (a venv over this one's packages); a test with the one that
    is missing skips, saying why."""
    try:
        here = int(importlib.metadata.version("mcp").split(".")[0])
    except importlib.metadata.PackageNotFoundError:
        here = None
    other = pytest.param(str(OTHER_MCP_PYTHON), id="mcp-venv", marks=pytest.mark.skipif(
        not OTHER_MCP_PYTHON.exists(), reason="no .ci/mcp-venv (.ci/run makes it): one mcp major version only"))
    return [pytest.param(sys.executable, id=f"mcp{here}", marks=pytest.mark.skipif(
        here is None, reason="mcp is not installed (pip install -e '.[test]')")), other]


def node_server() -> Path:
    """The Node filesystem server's entry point, installed from npm into .ci/node-mcp (by .ci/run, or here on first
    use); skips the test when node or npm is missing or the install fails."""
    entry = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
    if entry.exists() and shutil.which("node"):
        return entry
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the Node MCP server")
    NODE_DIR.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent", "--prefix", str(NODE_DIR),
                           NODE_SERVER_PACKAGE], capture_output=True, text=True, timeout=300)
    if done.returncode != 0 or not entry.exists():
        pytest.skip(f"could not install {NODE_SERVER_PACKAGE} from npm: {done.stderr.strip()[-200:]}")
    return entry


def write_node_launcher(directory: Path, entry: Path) -> None:
    """node-server.sh: marks its start in server-starts.txt, then runs the Node server (a non-Python child)."""
    launcher = directory / "node-server.sh"
    launcher.write_text(f'#!/bin/sh\necho node >> "$(dirname "$0")/server-starts.txt"\nexec node {entry} "$@"\n')
    launcher.chmod(0o755)


def environment(**extra: str) -> dict[str, str]:
    """What the agents need besides BASE: no tracing to the network, no proxy."""
    return {"OPENAI_AGENTS_DISABLE_TRACING": "1", "NO_PROXY": "*", **extra, "PATH": os.environ.get("PATH", "")}
