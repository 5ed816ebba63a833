"""A custom route for `langgraph dev` / the LangGraph server: clear a stopped thread.

``langgraph.json`` mounts it with ``"http": {"app": "./server_app.py:app"}``::

    POST /liveguard/threads/{thread_id}/clear   {"assistant_id": "guarded"}
    -> 200 {"thread_id": ..., "graph_id": ..., "cleared": <the violation that had stopped it> | null}

The route is a thin shell over public APIs: it runs the served ``liveguard_clear`` graph
(``server_graphs.py``) on a thread of its own (deleted afterwards) through ``langgraph_sdk``'s
in-process client (``get_client()`` with no URL, inside the server). That graph's node gets the server's
checkpointer with its run, where both guards keep a thread's liveness (``guard()`` in the
``__liveguard__`` checkpoint namespace, ``LivenessMiddleware`` in the agent state), and
runs :func:`liveguard.clear` there. No function of langgraph-api itself is called, so the
route works on every langgraph-api the ``server`` extra allows.
"""

from __future__ import annotations

from typing import Any

from langgraph_sdk import get_client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

CLEAR_GRAPH = "liveguard_clear"


async def clear_thread(request: Request) -> JSONResponse:
    thread_id = request.path_params["thread_id"]
    try:
        body: Any = await request.json()
    except ValueError:
        body = None
    graph_id = body.get("assistant_id") if isinstance(body, dict) else None
    if not isinstance(graph_id, str) or graph_id == CLEAR_GRAPH:
        return JSONResponse({"error": "body.assistant_id: expected the id of a served graph"},
                            status_code=422)
    client = get_client()  # in-process: the server this route is mounted on
    # a thread of its own (a stateless run gets no checkpointer), deleted once done
    own = (await client.threads.create())["thread_id"]
    try:
        result = await client.runs.wait(own, CLEAR_GRAPH,
                                        input={"thread_id": thread_id, "graph_id": graph_id})
    finally:
        await client.threads.delete(own)
    error = result.get("error") if isinstance(result, dict) else "liveguard_clear: no result"
    if error:
        where = "body.assistant_id" if str(error).startswith("graph_id") else "thread"
        return JSONResponse({"error": f"{where}: {error}"}, status_code=422)
    return JSONResponse({"thread_id": thread_id, "graph_id": graph_id, "cleared": result.get("cleared")})


app = Starlette(routes=[Route("/liveguard/threads/{thread_id}/clear", clear_thread, methods=["POST"])])
