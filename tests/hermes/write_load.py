"""Hermes writing its board as fast as it can, through its own code (kanban_db.create_task
and add_comment, each in Hermes' own write transaction with its post-commit torn-extend
check), for the hermes_writes bench.

Usage: write_load.py SECONDS. Prints "ready" once connected, then, after SECONDS of writes,
one JSON object: writes, errors by kind, and write latencies in milliseconds."""

import json
import sys
import time

from hermes_cli import kanban_db as kb


def kind_of(exc: BaseException) -> str:
    text = str(exc).lower()
    for kind in ("torn-extend", "readonly", "locked", "busy", "malformed"):
        if kind in text:
            return kind
    return type(exc).__name__


def main() -> None:
    seconds = float(sys.argv[1])
    conn = kb.connect()
    print("ready", flush=True)
    latencies: list[float] = []
    errors: dict[str, int] = {}
    deadline = time.monotonic() + seconds
    i = 0
    while time.monotonic() < deadline:
        started = time.perf_counter()
        try:
            task = kb.create_task(conn, title=f"Load card {i}", assignee="tam", body="x" * 400)
            kb.add_comment(conn, task, "bench", "a comment of some length " * 8)
        except Exception as exc:  # noqa: BLE001 - every failure is a figure here
            errors[kind_of(exc)] = errors.get(kind_of(exc), 0) + 1
        latencies.append((time.perf_counter() - started) * 1000.0)
        i += 1
    conn.close()
    latencies.sort()

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] if latencies else 0.0

    json.dump(
        {
            "writes": len(latencies),
            "errors": errors,
            "p50_ms": pct(0.50),
            "p99_ms": pct(0.99),
            "max_ms": latencies[-1] if latencies else 0.0,
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()
