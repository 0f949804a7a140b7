"""Cost of recording an MCP call (runtime/adapters/mcp_adapter.py): target (issue 34) <= 50 us per call.

A client makes CALLS `tools/call` requests to a Python MCP server over stdio (the server in its own process),
timed inside the client: plain (no wop), then under a real `wop capture`, REPEATS times each, interleaved.
Inside the captured client, the recording work itself (the request's tool_call and the reply's tool_result,
as the transport's streams see them) is also timed alone over the same messages. Times are the client
process's CPU time (all its threads: the channel's sender builds the events on its own), which a loaded
machine moves far less than wall time; wall time is shown beside. Run: python bench/bench_mcp.py [CALLS] [REPEATS]
"""

import asyncio
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.abspath(__file__)


def serve() -> None:
    try:
        from mcp.server.mcpserver import MCPServer as Server
    except ImportError:
        from mcp.server.fastmcp import FastMCP as Server
    server = Server("bench")

    @server.tool()
    def lookup_order(order_id: str) -> str:
        """An order's status."""
        return f'{{"id": "{order_id}", "status": "shipped"}}'

    server.run()


async def client(calls: int) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=[HERE, "server"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for _ in range(50):
                await session.call_tool("lookup_order", {"order_id": "A-1"})
            start, cpu = time.perf_counter(), time.process_time()
            for index in range(calls):
                await session.call_tool("lookup_order", {"order_id": f"A-{index}"})
            per_call = (time.process_time() - cpu) / calls * 1e6
            wall = (time.perf_counter() - start) / calls * 1e6
    print(f"PER_CALL {per_call:.2f}")
    print(f"WALL {wall:.2f}")
    if os.environ.get("WOP_MODE") == "capture":
        print(f"HOOKS {recording_alone(calls):.2f}")


def recording_alone(calls: int) -> float:
    """Microseconds the adapter's recording takes per call (request written, reply read), on real SDK messages."""
    from mcp.shared.message import SessionMessage

    from openwop_cli.runtime.adapters.mcp_adapter import _Connection, _message_parser
    from openwop_cli.runtime.session import current

    parse = _message_parser()
    connection = _Connection(current(), {"command": sys.executable, "args": [HERE, "server"]})
    requests = [SessionMessage(parse({"jsonrpc": "2.0", "id": index, "method": "tools/call",
                                      "params": {"name": "lookup_order", "arguments": {"order_id": f"A-{index}"}}}))
                for index in range(calls)]
    replies = [SessionMessage(parse({"jsonrpc": "2.0", "id": index, "result": {
        "content": [{"type": "text", "text": '{"id": "A-1", "status": "shipped"}'}], "isError": False}}))
               for index in range(calls)]
    current().flush()
    start = time.process_time()
    for request, reply in zip(requests, replies):
        connection.sent(request)
        connection.got(reply)
    current().flush()  # the events built and sent: their whole cost is in
    return (time.process_time() - start) / calls * 1e6


def run(command: list[str], env: dict[str, str]) -> dict[str, float]:
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return {line.split()[0]: float(line.split()[1]) for line in done.stdout.splitlines()
            if line.startswith(("PER_CALL", "WALL", "HOOKS"))}


def main() -> None:
    if sys.argv[1:2] == ["server"]:
        serve()
        return
    if sys.argv[1:2] == ["client"]:
        asyncio.run(client(int(sys.argv[2])))
        return
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    env = {**os.environ, "WOP_HOME": os.environ.get("WOP_HOME", "/tmp/wop-bench-home")}
    client_command = [sys.executable, HERE, "client", str(calls)]
    plain, captured, hooks, walls = [], [], [], {"plain": [], "captured": []}
    for _ in range(repeats):
        found = run(client_command, env)
        plain.append(found["PER_CALL"])
        walls["plain"].append(found["WALL"])
        found = run([sys.executable, "-m", "openwop_cli", "capture", "--name", "bench-mcp", "--", *client_command], env)
        captured.append(found["PER_CALL"])
        walls["captured"].append(found["WALL"])
        hooks.append(found["HOOKS"])
    plain_us, captured_us, hooks_us = (statistics.median(values) for values in (plain, captured, hooks))
    print(f"{calls} tools/call over stdio, client CPU per call, median of {repeats} runs (spread):")
    print(f"  plain     {plain_us:8.1f} us ({min(plain):.1f}-{max(plain):.1f}; wall {statistics.median(walls['plain']):.0f} us)")
    print(f"  captured  {captured_us:8.1f} us ({min(captured):.1f}-{max(captured):.1f}; wall "
          f"{statistics.median(walls['captured']):.0f} us), ratio {captured_us / plain_us:.3f}x, "
          f"added {captured_us - plain_us:+.1f} us")
    print(f"  recording alone {hooks_us:.1f} us per call ({min(hooks):.1f}-{max(hooks):.1f}; target <= 50), "
          f"{hooks_us / plain_us:.1%} of a plain call")


if __name__ == "__main__":
    main()
