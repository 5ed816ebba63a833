"""The verdict on the thread so far, and the request a person sees when it does not clear."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from liveguard.core.model import Step, Trajectory, Verdict
from liveguard.live import hitl
from liveguard.live.approval._common import log
from liveguard.live.approval._reasons import reasons_for
from liveguard.readers.stream import steps_from_updates

if TYPE_CHECKING:
    from liveguard.settings import Settings


def trajectory_of(
    thread: str, chunks: Sequence[Mapping[str, Any]], node: str | None, graph_name: str | None
) -> Trajectory:
    """The thread's steps so far (``chunks``: its history), ending on this visit of ``node``."""
    steps = steps_from_updates(chunks)
    if node:
        # This visit itself (contentless: counted, never compared): the path so far ends
        # here, not on the previous node, and revisit limits of the approval node apply.
        steps.append(Step(node=node))
    return Trajectory(run_id=thread, graph=graph_name, steps=steps, status="interrupted",
                      metadata={"source": "checkpoint"})


def evaluate(trajectory: Trajectory, settings: Settings, allow_set: Any, policy: Any) -> Verdict:
    """The eval graph's verdict, in a fresh thread: its own event loop, none of the caller's context."""
    from liveguard.evaluate.eval_graph import evaluate_trajectory

    def run() -> Verdict:
        return evaluate_trajectory(trajectory, allow_set=allow_set, policy=policy, settings=settings)

    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="liveguard-eval") as pool:
        return pool.submit(contextvars.Context().run, run).result()


async def aevaluate(trajectory: Trajectory, settings: Settings, allow_set: Any, policy: Any) -> Verdict:
    """Async :func:`evaluate`: a fresh task with an empty context and its own judge client."""
    from liveguard.evaluate.eval_graph import aevaluate_trajectory, build_eval_graph
    from liveguard.evaluate.judges import JudgeClient, JudgeConfig

    async def run() -> Verdict:
        client = JudgeClient(JudgeConfig.from_settings(settings))
        try:
            return await aevaluate_trajectory(
                trajectory, allow_set=allow_set, policy=policy, settings=settings,
                graph=build_eval_graph(client=client, settings=settings),
            )
        finally:
            await client.aclose()

    return await asyncio.create_task(run(), context=contextvars.Context())


def hold_request(
    thread: str, draft: Any, verdict: Verdict | None, *, error: str | None, settings: Settings,
    graph_name: str | None, digest: str | None = None, recipient: Any = None, pinned_only: bool = False,
) -> dict[str, Any]:
    """The interrupt value (:func:`liveguard.live.hitl.approval_request`), plus ``_cleared``."""
    from liveguard.evaluate.gate import verdict_clears_autoapprove
    from liveguard.evaluate.scoring import RunRow

    try:
        switch = settings.autoapprove
        cleared = verdict_clears_autoapprove(verdict, enabled=switch)
        reasons = reasons_for(verdict, cleared, autoapprove=switch)
    except Exception as exc:  # a bad setting: the check cannot clear anything
        log.warning("approval thread=%s autoapprove_check_error=%s", thread, type(exc).__name__)
        cleared, reasons = False, ["autoapprove_check_error"]
    if error is not None:
        reasons = [r for r in reasons if r != "unjudged:no_verdict"] + [f"unjudged:{error}"]
    row = RunRow(source="checkpoint", run_id=thread, graph=graph_name, verdict=verdict,
                 error=None if verdict is not None else f"unjudged:{error or 'no_verdict'}").as_json()
    request: dict[str, Any] = dict(hitl.approval_request(draft, reasons=reasons, verdict=row, digest=digest,
                                                         recipient=recipient, pinned_only=pinned_only))
    request["_cleared"] = cleared
    return request
