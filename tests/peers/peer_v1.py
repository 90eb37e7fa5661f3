"""A2A test peer on a2a-sdk 1.3.0: speaks v1.0 and (via enable_v0_3_compat)
v0.3 on the same JSON-RPC endpoint `/`; card at /.well-known/agent-card.json.
Flags: see peer_common.parse_args. Prints `READY <port>` once listening."""

import asyncio
import uuid

from google.protobuf.timestamp_pb2 import Timestamp
from starlette.applications import Starlette

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
)

import peer_common as pc


def working_status(text: str | None = None, context_id: str = '',
                   task_id: str = '') -> TaskStatus:
    ts = Timestamp()
    ts.GetCurrentTime()
    st = TaskStatus(state=TaskState.TASK_STATE_WORKING, timestamp=ts)
    if text is not None:
        st.message.CopyFrom(Message(message_id=str(uuid.uuid4()),
                                    role=Role.ROLE_AGENT,
                                    parts=[Part(text=text)],
                                    context_id=context_id, task_id=task_id))
    return st


class HeartbeatExecutor(AgentExecutor):
    def __init__(self, args):
        self.args = args
        self.metadata = pc.status_metadata(args)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        if self.args.delay_ms:
            await asyncio.sleep(self.args.delay_ms / 1000)
        if context.message is not None:
            pc.record(self.args, context.message.message_id, context.context_id or '',
                      context.get_user_input())
        text = pc.reply_text(self.args)
        if self.args.never_complete:
            # Enqueue a WORKING task and return without a terminal event: the
            # blocking SendMessage then answers with this task, and the store
            # keeps it WORKING forever.
            task = Task(id=context.task_id, context_id=context.context_id,
                        status=working_status(text, context.context_id, context.task_id))
            if self.metadata:
                task.metadata.update(self.metadata)
            await event_queue.enqueue_event(task)
            return
        msg = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_AGENT,
                      parts=[Part(text=text)], context_id=context.context_id)
        if self.metadata:
            msg.metadata.update(self.metadata)
        await event_queue.enqueue_event(msg)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        pass  # the framework records CANCELED itself


def build_card(args, url: str) -> AgentCard:
    return AgentCard(
        name=args.name,
        description=pc.card_description(args, 'a2a-sdk 1.3.0'),
        version='1.0.0',
        # 1.0 first; the 0.3 entry is what the SDK projects onto the legacy
        # top-level url/protocolVersion/preferredTransport of the hybrid card.
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding='JSONRPC', protocol_version='1.0'),
            AgentInterface(url=url, protocol_binding='JSONRPC', protocol_version='0.3'),
        ],
        capabilities=AgentCapabilities(streaming=False, push_notifications=False),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain'],
        skills=[AgentSkill(**s) for s in pc.skill_specs(args)],
    )


def main() -> None:
    args = pc.parse_args('peer-v1')
    pc.setup_logging()
    sock = pc.bind(args.port)
    port = sock.getsockname()[1]
    card = build_card(args, f'http://127.0.0.1:{port}/')
    store = InMemoryTaskStore()
    handler = DefaultRequestHandler(agent_executor=HeartbeatExecutor(args),
                                    task_store=store, agent_card=card)
    app = Starlette(routes=[
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, '/', enable_v0_3_compat=True),
    ])

    async def seed():
        # --in-flight ids exist as WORKING tasks so tasks/get / GetTask on
        # them succeeds. Unauthenticated requests share the '' owner scope,
        # which a bare ServerCallContext() also maps to.
        for tid in args.in_flight:
            await store.save(Task(id=tid, context_id=f'ctx-{tid}',
                                  status=working_status()), ServerCallContext())

    pc.serve(app, sock, token=args.require_token, on_startup=seed)


if __name__ == '__main__':
    main()
