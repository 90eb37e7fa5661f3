"""SDK-independent plumbing of the report clients (report_v1.py, report_v03.py): read the
steps, run each with the SDK's own client, print one JSON line per step. Stdlib only: the two
clients run in different venvs."""

import argparse
import asyncio
import json
import sys


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description='A2A report client for fleetdash tests: reads a JSON list of steps on stdin '
                    '({"op": "send"|"get"|"list"|"cancel"|"card", ...}) and prints one JSON '
                    'line per step: {"ok": <the SDK\'s parsed result>} or {"error": {...}}')
    p.add_argument('--url', required=True, help='the intake, e.g. http://127.0.0.1:8470/')
    p.add_argument('--token', help='the agent\'s report token (Authorization: Bearer)')
    return p.parse_args()


def run(steps_runner) -> None:
    args = parse_args()
    steps = json.load(sys.stdin)
    results = asyncio.run(steps_runner(args, steps))
    for r in results:
        print(json.dumps(r), flush=True)
