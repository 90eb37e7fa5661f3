"""Builds a Hermes kanban board with Hermes' own code (hermes-agent 0.19.0), for
tests/hermes_board.rs and the hermes_writes bench.

Statuses come from Hermes' CLI (`hermes kanban create/claim/block/schedule/complete/
archive/reclaim/promote`); worker events come from Hermes' dispatcher (`dispatch_once`) over
real child processes (`sh -c 'exit N'`, `sleep`), each scenario with its own profile so that a
tick only spawns the card it is about. Nothing here writes the database but Hermes.

Run with HERMES_HOME and HERMES_KANBAN_HOME pointing at a scratch folder. Prints one JSON
object on stdout: card title -> task id. Progress goes to stderr.

`review` is a valid status that nothing in 0.19.0 writes, and `reconciled` an event it never
writes: neither is built here.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from hermes_cli import kanban_db as kb

HERMES = str(Path(sys.executable).with_name("hermes"))
WORKERS: list[subprocess.Popen] = []
IDS: dict[str, str] = {}


def cli(*args: str) -> str:
    """`hermes kanban ARGS`, which must succeed; its stdout."""
    out = subprocess.run(
        [HERMES, "kanban", *args], capture_output=True, text=True, timeout=120
    )
    if out.returncode != 0 or "error" in out.stderr.lower():
        sys.exit(f"hermes kanban {' '.join(args)}: {out.returncode}\n{out.stdout}{out.stderr}")
    return out.stdout


def create(title: str, *args: str) -> str:
    task = json.loads(cli("create", title, "--json", *args))
    IDS[title] = task["id"]
    return task["id"]


def status(task_id: str) -> str:
    with kb.connect_closing() as conn:
        return kb.get_task(conn, task_id).status


def profile(name: str, present: bool) -> None:
    """A profile folder is what makes an assignee dispatchable in 0.19.0."""
    folder = Path(os.environ["HERMES_HOME"]) / "profiles" / name
    if present:
        folder.mkdir(parents=True, exist_ok=True)
    else:
        shutil.rmtree(folder, ignore_errors=True)


def exits(code: int):
    def spawn(task, workspace):
        p = subprocess.Popen(["sh", "-c", f"exit {code}"])
        WORKERS.append(p)
        return p.pid

    return spawn


def sleeps(task, workspace):
    p = subprocess.Popen(["sleep", "600"])
    WORKERS.append(p)
    return p.pid


def cannot_start(task, workspace):
    raise RuntimeError("worker binary not found")


def tick(spawn=None, **kwargs) -> None:
    with kb.connect_closing() as conn:
        kb.dispatch_once(conn, spawn_fn=spawn, **kwargs)


def wait_exit() -> None:
    """Until the last worker has exited. It is left unreaped: Hermes' next tick reaps it and
    reads its exit status (clean exit, rate limit, error), as it does its own workers."""
    stat = Path(f"/proc/{WORKERS[-1].pid}/stat")
    while stat.exists() and stat.read_text().split(") ", 1)[1][0] != "Z":
        time.sleep(0.05)


def scenario(name: str, title: str, *create_args: str) -> str:
    print(f"build_board: {name}", file=sys.stderr)
    profile(name, True)
    return create(title, "--assignee", name, *create_args)


def main() -> None:
    # Crashes are seen at once, not after Hermes' 30 s grace.
    os.environ["HERMES_KANBAN_CRASH_GRACE_SECONDS"] = "0"
    cli("init")

    # First, while no other card runs: a dispatcher tick with a stale timeout takes back every
    # running card without a heartbeat.
    scenario("stale", "Went stale")
    tick(sleeps)
    profile("stale", False)
    time.sleep(2.2)
    tick(None, stale_timeout_seconds=1)

    # A worker that survives being stopped: the dispatcher holds the claim.
    scenario("deferred", "Reclaim deferred")
    tick(sleeps)
    profile("deferred", False)
    time.sleep(2.2)
    with kb.connect_closing() as conn:
        kb.detect_stale_running(conn, stale_timeout_seconds=1, signal_fn=lambda pid, sig: None)

    # Statuses, by the CLI.
    create("Triage card", "--triage")
    parent = create("Parent not done", "--assignee", "tam")
    create("Child waits on its parent", "--assignee", "tam", "--parent", parent)
    dep = create("Blocked on a dependency", "--assignee", "tam")
    cli("block", dep, "waits on the image build", "--kind", "dependency")
    cli("link", parent, dep)
    sched = create("Scheduled card", "--assignee", "tam")
    cli("schedule", sched, "after the freeze")
    create("Ready card", "--assignee", "tam")
    running = create("Running card", "--assignee", "tam")
    cli("claim", running)
    blocked = create("Blocked needs input", "--assignee", "tam")
    cli("block", blocked, "which region?", "--kind", "needs_input")
    done = create("Done card", "--assignee", "tam")
    cli("claim", done)
    cli("complete", done, "--result", "shipped")
    archived = create("Archived card", "--assignee", "tam")
    cli("archive", archived)

    # A person reclaims a running card, with a reason.
    manual = create("Reclaimed by hand", "--assignee", "tam")
    cli("claim", manual)
    cli("reclaim", manual, "--reason", "wrong repository")

    # A claim expires with no worker behind it (taken back by the "extend" tick below).
    expired = create("Claim expired", "--assignee", "tam")
    cli("claim", expired, "--ttl", "1")

    # A claim on a card whose parent is not done is refused.
    rejected = create("Claim rejected", "--assignee", "tam", "--parent", parent)
    cli("promote", rejected, "--force")
    subprocess.run([HERMES, "kanban", "claim", rejected], capture_output=True, timeout=120)

    # Worker events, by the dispatcher over real child processes.
    scenario("crash", "Crashed then retried")
    tick(exits(3))
    wait_exit()
    tick(sleeps)
    profile("crash", False)

    scenario("gaveup", "Gave up")
    tick(exits(3))
    wait_exit()
    tick(None, failure_limit=1)
    profile("gaveup", False)

    scenario("timeout", "Timed out", "--max-runtime", "1")
    tick(sleeps)
    time.sleep(2.2)
    profile("timeout", False)
    tick()

    scenario("spawnfail", "Could not spawn")
    tick(cannot_start)
    profile("spawnfail", False)

    scenario("protocol", "Exited without completing")
    tick(exits(0))
    wait_exit()
    profile("protocol", False)
    tick()

    scenario("ratelimit", "Rate limited")
    tick(exits(kb.KANBAN_RATE_LIMIT_EXIT_CODE))
    wait_exit()
    tick(sleeps)
    profile("ratelimit", False)

    scenario("extend", "Claim extended")
    tick(sleeps, ttl_seconds=1)
    profile("extend", False)
    time.sleep(2.2)
    tick()

    for p in WORKERS:
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            p.wait()
    for title, task_id in IDS.items():
        print(f"build_board: {title}: {status(task_id)}", file=sys.stderr)
    json.dump(IDS, sys.stdout)


if __name__ == "__main__":
    main()
