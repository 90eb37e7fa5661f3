"""Reports to the fleetdash intake with a2a-sdk 1.3.0's own client (v1.0: SendMessage with
A2A-Version: 1.0, GetTask, ListTasks, CancelTask). The card is resolved by the SDK, which picks
the v1.0 interface; every reply is parsed by the SDK (protobuf) and printed back as JSON."""

import uuid

import httpx
from google.protobuf import json_format
from google.protobuf.struct_pb2 import Value

from a2a.client import ClientConfig, ClientFactory
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)

import report_common as rc


def message(step: dict) -> Message:
    parts = []
    if 'text' in step:
        parts.append(Part(text=step['text']))
    if 'data' in step:
        v = Value()
        json_format.ParseDict(step['data'], v)
        parts.append(Part(data=v))
    m = Message(message_id=step.get('message_id') or str(uuid.uuid4()),
                role=Role.ROLE_USER, parts=parts)
    if step.get('task_id'):
        m.task_id = step['task_id']
    if step.get('context_id'):
        m.context_id = step['context_id']
    return m


def as_dict(msg) -> dict:
    return json_format.MessageToDict(msg)


async def steps_runner(args, steps):
    headers = {'Authorization': f'Bearer {args.token}'} if args.token else {}
    out = []
    async with httpx.AsyncClient(headers=headers, timeout=60) as http:
        factory = ClientFactory(ClientConfig(httpx_client=http, streaming=False))
        client = await factory.create_from_url(args.url)
        for step in steps:
            try:
                op = step['op']
                if op == 'card':
                    card = client._card  # what the SDK resolved and chose from
                    out.append({'ok': as_dict(card)})
                elif op == 'send':
                    events = [as_dict(e) async for e in
                              client.send_message(SendMessageRequest(message=message(step)))]
                    out.append({'ok': events[-1]})
                elif op == 'get':
                    out.append({'ok': as_dict(await client.get_task(GetTaskRequest(id=step['id'])))})
                elif op == 'list':
                    req = ListTasksRequest()
                    if step.get('status'):
                        req.status = TaskState.Value(step['status'])
                    if step.get('page_size'):
                        req.page_size = step['page_size']
                    out.append({'ok': as_dict(await client.list_tasks(req))})
                elif op == 'cancel':
                    out.append({'ok': as_dict(await client.cancel_task(CancelTaskRequest(id=step['id'])))})
                else:
                    out.append({'error': {'type': 'BadStep', 'message': op}})
            except Exception as e:  # the test asserts on what the SDK raised
                out.append({'error': {'type': type(e).__name__, 'message': str(e),
                                      'data': getattr(e, 'data', None)}})
    return out


if __name__ == '__main__':
    rc.run(steps_runner)
