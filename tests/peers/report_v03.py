"""Reports to the fleetdash intake with a2a-sdk 0.3.26's own client (v0.3: message/send,
tasks/get, tasks/cancel, no A2A-Version header). The card is resolved by the SDK; every reply
is parsed by the SDK (pydantic) and printed back as JSON."""

import uuid

import httpx

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientHTTPError, A2AClientJSONRPCError
from a2a.types import DataPart, Message, Part, Role, TaskIdParams, TaskQueryParams, TextPart

import report_common as rc


def message(step: dict) -> Message:
    parts = []
    if 'text' in step:
        parts.append(Part(root=TextPart(text=step['text'])))
    if 'data' in step:
        parts.append(Part(root=DataPart(data=step['data'])))
    return Message(message_id=step.get('message_id') or str(uuid.uuid4()), role=Role.user,
                   parts=parts, task_id=step.get('task_id'), context_id=step.get('context_id'))


def as_dict(obj) -> dict:
    return obj.model_dump(mode='json', by_alias=True, exclude_none=True)


async def steps_runner(args, steps):
    headers = {'Authorization': f'Bearer {args.token}'} if args.token else {}
    out = []
    async with httpx.AsyncClient(headers=headers, timeout=60) as http:
        card = await A2ACardResolver(http, args.url).get_agent_card()
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        for step in steps:
            try:
                op = step['op']
                if op == 'card':
                    out.append({'ok': as_dict(card)})
                elif op == 'send':
                    events = [e async for e in client.send_message(message(step))]
                    last = events[-1]
                    # A Task comes as (task, update); a Message by itself.
                    out.append({'ok': as_dict(last[0] if isinstance(last, tuple) else last)})
                elif op == 'get':
                    out.append({'ok': as_dict(await client.get_task(TaskQueryParams(id=step['id'])))})
                elif op == 'cancel':
                    out.append({'ok': as_dict(await client.cancel_task(TaskIdParams(id=step['id'])))})
                else:
                    out.append({'error': {'type': 'BadStep', 'message': op}})
            except A2AClientJSONRPCError as e:
                out.append({'error': {'type': type(e).__name__, 'code': e.error.code,
                                      'message': e.error.message, 'data': e.error.data}})
            except A2AClientHTTPError as e:
                out.append({'error': {'type': type(e).__name__, 'status': e.status_code,
                                      'message': e.message}})
            except Exception as e:
                out.append({'error': {'type': type(e).__name__, 'message': str(e)}})
    return out


if __name__ == '__main__':
    rc.run(steps_runner)
