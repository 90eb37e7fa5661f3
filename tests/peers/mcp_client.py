"""Asks `fleetdash mcp` with the official MCP Python SDK's own client (mcp 2.3.0): it starts the
server over stdio (--command, then --args), or talks Streamable HTTP to --url with --token as
its bearer (the intake's /mcp), initializes, and runs the steps read as a JSON array
on stdin, printing one JSON line per step: {"ok": <the SDK's parsed result>} or
{"error": {"type", "message"}}. Steps: {"op": "list_tools"},
{"op": "call", "name": ..., "arguments": {...}}, {"op": "list_resources"} and
{"op": "read_resource", "uri": ...}."""

import argparse
import asyncio
import json
import sys

import contextlib

import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


def as_dict(obj) -> dict:
    return obj.model_dump(mode='json', by_alias=True, exclude_none=True)


@contextlib.asynccontextmanager
async def transport(args):
    if args.url:
        headers = {'Authorization': f'Bearer {args.token}'} if args.token else {}
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            async with streamable_http_client(args.url, http_client=http) as streams:
                yield streams
    else:
        server = StdioServerParameters(command=args.command, args=args.args)
        async with stdio_client(server) as streams:
            yield streams


async def run(args, steps):
    out = []
    async with transport(args) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            out_init = as_dict(init)
            for step in steps:
                try:
                    if step['op'] == 'initialize':
                        out.append({'ok': out_init})
                    elif step['op'] == 'list_tools':
                        out.append({'ok': as_dict(await session.list_tools())})
                    elif step['op'] == 'list_resources':
                        out.append({'ok': as_dict(await session.list_resources())})
                    elif step['op'] == 'read_resource':
                        out.append({'ok': as_dict(await session.read_resource(step['uri']))})
                    elif step['op'] == 'call':
                        result = await session.call_tool(step['name'], step.get('arguments') or {})
                        out.append({'ok': as_dict(result)})
                    else:
                        out.append({'error': {'type': 'BadStep', 'message': step['op']}})
                except Exception as e:  # the test asserts on what the SDK raised
                    out.append({'error': {'type': type(e).__name__, 'message': str(e)}})
    return out


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--command')
    parser.add_argument('--url')
    parser.add_argument('--token')
    parser.add_argument('args', nargs='*')
    parsed = parser.parse_args()
    steps = json.load(sys.stdin)
    for line in asyncio.run(run(parsed, steps)):
        print(json.dumps(line))
