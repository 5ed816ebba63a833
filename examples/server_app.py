"""A custom route for `langgraph dev` / the LangGraph server: clear a stopped thread.

``langgraph.json`` mounts it with ``"http": {"app": "./server_app.py:app"}``::

    POST /liveguard/threads/{thread_id}/clear   {"assistant_id": "guarded"}
    -> 200 {"thread_id": ..., "graph_id": ..., "cleared": <the violation that had stopped it> | null}

It runs :func:`liveguard.clear` on the served graph, compiled with the server's own
checkpointer (where both guards keep a thread's liveness: ``guard()`` in the
``__liveguard__`` checkpoint namespace, ``LivenessMiddleware`` in the agent state).
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

import liveguard


async def clear_thread(request: Request) -> JSONResponse:
    from langgraph_api.graph import get_graph, graph_exists  # the server's own graph registry
    from langgraph_runtime.checkpoint import Checkpointer  # the server's own checkpointer

    thread_id = request.path_params["thread_id"]
    try:
        body: Any = await request.json()
    except ValueError:
        body = None
    graph_id = body.get("assistant_id") if isinstance(body, dict) else None
    if not isinstance(graph_id, str) or not graph_exists(graph_id):
        return JSONResponse({"error": "body.assistant_id: expected the id of a served graph",
                             "got": graph_id}, status_code=422)
    config = {"configurable": {"thread_id": thread_id}}
    async with get_graph(graph_id, config, checkpointer=Checkpointer()) as graph:
        try:
            cleared = await asyncio.to_thread(liveguard.clear, graph, config)
        except ValueError as exc:
            return JSONResponse({"error": str(exc)}, status_code=422)
    return JSONResponse({"thread_id": thread_id, "graph_id": graph_id,
                         "cleared": cleared.model_dump(mode="json") if cleared else None})


app = Starlette(routes=[Route("/liveguard/threads/{thread_id}/clear", clear_thread, methods=["POST"])])
