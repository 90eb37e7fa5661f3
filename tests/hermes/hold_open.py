"""Holds a Hermes connection to the board open, as a running gateway or dispatcher does, so
that its -wal and -shm exist: prints "open" once a card is written through it, and closes
when its standard input ends.

Run with HERMES_HOME and HERMES_KANBAN_HOME set, as tests/hermes_board.rs does."""

import sys

from hermes_cli import kanban_db as kb

conn = kb.connect()
kb.create_task(conn, title="Written while held open", assignee="tam")
print("open", flush=True)
sys.stdin.read()
conn.close()
