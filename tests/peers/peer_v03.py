"""A2A test peer on a2a-sdk 0.3.26: pure v0.3 JSON-RPC on `/`; card at
/.well-known/agent-card.json (the SDK also serves the old /.well-known/agent.json).
Flags: see peer_common.parse_args. Prints `READY <port>` once listening."""

import asyncio
import uuid

from datetime import datetime, timezone

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentSkill,
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
    TextPart,
)

import peer_common as pc


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat().replace('+00:00', 'Z')


def working_status(message: Message | None = None) -> TaskStatus:
    return TaskStatus(state=TaskState.working, message=message, timestamp=now_iso())


class HeartbeatExecutor(AgentExecutor):
    def __init__(self, args):
        self.args = args
        self.metadata = pc.status_metadata(args) or None

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        if self.args.delay_ms:
            await asyncio.sleep(self.args.delay_ms / 1000)
        if context.message is not None:
            pc.record(self.args, context.message.message_id, context.context_id or '',
                      context.get_user_input())
        text = pc.reply_text(self.args)
        if self.args.never_complete:
            # Enqueue a WORKING task and return without a terminal event: the
            # blocking message/send answers with this task once the queue
            # closes, and the store keeps it working forever.
            status_msg = Message(message_id=str(uuid.uuid4()), role=Role.agent,
                                 parts=[Part(root=TextPart(text=text))],
                                 context_id=context.context_id, task_id=context.task_id)
            await event_queue.enqueue_event(Task(
                id=context.task_id, context_id=context.context_id,
                status=working_status(status_msg), metadata=self.metadata))
            return
        await event_queue.enqueue_event(Message(
            message_id=str(uuid.uuid4()), role=Role.agent,
            parts=[Part(root=TextPart(text=text))],
            context_id=context.context_id, metadata=self.metadata))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        pass


def build_card(args, url: str) -> AgentCard:
    return AgentCard(
        name=args.name,
        description=pc.card_description(args, 'a2a-sdk 0.3.26'),
        url=url,
        version='1.0.0',
        protocol_version='0.3.0',
        preferred_transport='JSONRPC',
        capabilities=AgentCapabilities(streaming=False, push_notifications=False),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain'],
        skills=[AgentSkill(**s) for s in pc.skill_specs(args)],
    )


def main() -> None:
    args = pc.parse_args('peer-v03')
    pc.setup_logging()
    sock = pc.bind(args.port)
    port = sock.getsockname()[1]
    card = build_card(args, f'http://127.0.0.1:{port}/')
    store = InMemoryTaskStore()
    handler = DefaultRequestHandler(agent_executor=HeartbeatExecutor(args),
                                    task_store=store)
    app = A2AStarletteApplication(agent_card=card, http_handler=handler).build()

    async def seed():
        # --in-flight ids exist as working tasks so tasks/get on them succeeds.
        for tid in args.in_flight:
            await store.save(Task(id=tid, context_id=f'ctx-{tid}', status=working_status()))

    pc.serve(app, sock, token=args.require_token, on_startup=seed)


if __name__ == '__main__':
    main()
