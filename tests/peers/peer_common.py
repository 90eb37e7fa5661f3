"""SDK-independent plumbing shared by peer_v1.py and peer_v03.py.

Only stdlib + starlette/uvicorn here: the two peers run in different venvs
(a2a-sdk 1.3.0 vs 0.3.26), so nothing a2a-specific may be imported.
"""

import argparse
import asyncio
import contextlib
import json
import logging
import signal
import socket
import sys

import uvicorn

log = logging.getLogger('peer')


def parse_args(default_name: str) -> argparse.Namespace:
    p = argparse.ArgumentParser(description='A2A test peer for fleetdash')
    p.add_argument('--port', type=int, default=0, help='0 = pick a free port')
    p.add_argument('--name', default=default_name)
    p.add_argument('--skills', type=int, default=1,
                   help='skills on the card; 0 serves "skills": []')
    p.add_argument('--model')
    p.add_argument('--lane')
    p.add_argument('--in-flight', action='append', default=[], dest='in_flight',
                   metavar='ID', help='repeatable; also seeded as a working task')
    p.add_argument('--last-activity-at', metavar='ISO8601')
    p.add_argument('--window-percent', type=float)
    p.add_argument('--window-model')
    p.add_argument('--window-status')
    p.add_argument('--window-resets-at', metavar='ISO8601')
    p.add_argument('--plant-secret', metavar='STR')
    p.add_argument('--require-token', metavar='TOKEN')
    p.add_argument('--never-complete', action='store_true')
    p.add_argument('--delay-ms', type=int, default=0)
    p.add_argument('--record', metavar='PATH',
                   help='append each message received as a JSON line (a hub agent)')
    return p.parse_args()


def status_metadata(a: argparse.Namespace) -> dict:
    """Fleet status block for the heartbeat reply. A key is present only when
    its flag was given, so a flagless peer behaves like a vanilla A2A agent
    (no metadata at all)."""
    md: dict = {}
    if a.last_activity_at is not None:
        md['last_activity_at'] = a.last_activity_at
    if a.in_flight:
        md['in_flight'] = list(a.in_flight)
    if a.model is not None:
        md['model'] = a.model
    if a.lane is not None:
        md['lane'] = a.lane
    if a.window_percent is not None:
        w: dict = {'percent': a.window_percent}
        for key in ('model', 'status', 'resets_at'):
            val = getattr(a, f'window_{key}')
            if val is not None:
                w[key] = val
        md['window'] = w
    if a.plant_secret is not None:
        # Unrelated key: fleetdash must not surface arbitrary metadata.
        md['note'] = a.plant_secret
    return md


def record(a: argparse.Namespace, message_id: str, context_id: str, text: str) -> None:
    """With --record: what the peer was sent, one JSON line per message."""
    if a.record:
        with open(a.record, 'a', encoding='utf-8') as f:
            f.write(json.dumps({'message_id': message_id, 'context_id': context_id,
                                'text': text}) + '\n')


def reply_text(a: argparse.Namespace) -> str:
    return 'alive' if a.plant_secret is None else f'alive {a.plant_secret}'


def card_description(a: argparse.Namespace, sdk: str) -> str:
    d = f'fleetdash test peer ({sdk})'
    return d if a.plant_secret is None else f'{d} {a.plant_secret}'


def skill_specs(a: argparse.Namespace) -> list[dict]:
    """Plain dicts; each peer turns them into its SDK's AgentSkill."""
    out = []
    for i in range(a.skills):
        desc = f'test skill {i}'
        if i == 0 and a.plant_secret is not None:
            desc = f'{desc} {a.plant_secret}'
        out.append({'id': f'skill-{i}', 'name': f'Skill {i}',
                    'description': desc, 'tags': ['test']})
    return out


class BearerAuth:
    """Pure ASGI middleware: 401 for every HTTP request (card and JSON-RPC)
    lacking `Authorization: Bearer <token>`. Done outside the SDK so both
    SDK versions reject identically, before any A2A parsing."""

    def __init__(self, app, token: str):
        self.app = app
        self.expected = f'Bearer {token}'.encode()

    async def __call__(self, scope, receive, send):
        if scope['type'] == 'http':
            got = dict(scope['headers']).get(b'authorization')
            if got != self.expected:
                body = json.dumps({'error': 'unauthorized'}).encode()
                await send({'type': 'http.response.start', 'status': 401,
                            'headers': [(b'content-type', b'application/json'),
                                        (b'www-authenticate', b'Bearer'),
                                        (b'content-length', str(len(body)).encode())]})
                await send({'type': 'http.response.body', 'body': body})
                return
        await self.app(scope, receive, send)


def bind(port: int) -> socket.socket:
    """Bind before building the app so the card can carry the real URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(('127.0.0.1', port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


class _Server(uvicorn.Server):
    # uvicorn re-raises SIGTERM/SIGINT after shutdown (exit 143 / a
    # KeyboardInterrupt traceback). We install our own handlers instead so a
    # stopped peer exits 0 quietly.
    @contextlib.contextmanager
    def capture_signals(self):
        yield


def setup_logging() -> None:
    # stdout is reserved for the single READY line.
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format='%(asctime)s %(name)s %(levelname)s %(message)s')


def serve(app, sock: socket.socket, token: str | None = None,
          on_startup=None) -> None:
    """Serve on the pre-bound socket until SIGTERM/SIGINT; READY goes to
    stdout only once uvicorn accepts connections."""
    if token:
        app = BearerAuth(app, token)
    config = uvicorn.Config(app, log_config=None, timeout_graceful_shutdown=2,
                            lifespan='off')
    server = _Server(config)

    async def main():
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, lambda: setattr(server, 'should_exit', True))
        if on_startup:
            await on_startup()
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started:
            if task.done():
                await task  # startup failed: surface the error
                sys.exit(1)
            await asyncio.sleep(0.01)
        print(f'READY {sock.getsockname()[1]}', flush=True)
        await task

    asyncio.run(main())
