"""The live guards' cost: ``benchmarks/run.py --live`` (and the last section of ``make bench``).

* ``guard()``: a ``create_agent`` run of 20 tool turns (scripted model, real tool), guarded
  vs unguarded, per step; and the same with an InMemorySaver thread (the guard then
  reads and writes its thread record once per call).
* ``LivenessMiddleware``: the same agent with the middleware vs with a no-op middleware
  that has the same hooks (``wrap_model_call``, ``wrap_tool_call``, ``after_model``).
Timings are the median of interleaved repeats, in CPU time of this process.

* The thread record: ``Monitor.snapshot()`` as JSON after 200 steps, the middleware's
  saved state after the run, one Monitor's memory, and the guard's cost per resume
  (load + save of the record) on InMemorySaver and on SqliteSaver on a file.

* ``guard()`` on a plain 2-node ``StateGraph`` (``a -> b -> a ...``, each step a new state,
  ``TWO_NODE_STEPS`` node steps per call): guarded vs unguarded without a saver and with
  SqliteSaver on a file (a new thread per call), and the bytes liveguard keeps per step (its
  records in the checkpoints' metadata plus its ``__liveguard__`` rows) against the bytes of
  the graph's own checkpoints (issue 29: <= 1.15x, <= 1.20x, <= 512 B a step and never more
  than the graph's own).
"""

from __future__ import annotations

import json
import sqlite3
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Mapping
from pathlib import Path
from statistics import median
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TURNS = 20
TWO_NODE_STEPS = 50


def _agent(middleware: list[Any], saver: Any = None) -> Any:
    sys.path.insert(0, str(ROOT))
    from graphs._scripted import ScriptedChatModel
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, ToolCall
    from langchain_core.tools import tool

    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    script = [AIMessage(content="", tool_calls=[ToolCall(name="lookup", args={"key": f"k{i}"},
                                                         id=f"c{i}")]) for i in range(TURNS)]
    script.append(AIMessage(content="done"))
    return create_agent(ScriptedChatModel(script=tuple(script)), [lookup],
                        middleware=middleware, checkpointer=saver)


def _noop() -> Any:
    from langchain.agents.middleware import AgentMiddleware

    class NoOp(AgentMiddleware[Any, Any, Any]):
        def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
            return handler(request)

        def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
            return handler(request)

        def after_model(self, state: Any, runtime: Any) -> None:
            return None

    return NoOp()


def _median_ns(fns: Mapping[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median CPU time (``process_time``: this process only, less noisy on a shared machine)."""
    times: dict[str, list[int]] = {k: [] for k in fns}
    names = list(fns)
    for r in range(repeats):
        for name in names[r % len(names):] + names[: r % len(names)]:
            start = time.process_time_ns()
            fns[name]()
            times[name].append(time.process_time_ns() - start)
    return {k: median(v) for k, v in times.items()}


def _own_per_model_call(inputs: Any, runs: int) -> tuple[float, float]:
    """(µs of the middleware's own ``wrap_model_call`` work per model call, share of the run).

    Times ``wrap_model_call`` minus the model call inside it: less noisy than a ratio of
    two whole runs on a shared machine.
    """
    from liveguard.integrations.langchain import LivenessMiddleware

    middleware = LivenessMiddleware()
    real = middleware.wrap_model_call
    own, calls = [0], [0]

    def timed(request: Any, handler: Callable[[Any], Any]) -> Any:
        inner = [0]

        def call_model(req: Any) -> Any:
            start = time.process_time_ns()
            try:
                return handler(req)
            finally:
                inner[0] += time.process_time_ns() - start

        start = time.process_time_ns()
        result = real(request, call_model)
        own[0] += time.process_time_ns() - start - inner[0]
        calls[0] += 1
        return result

    middleware.wrap_model_call = timed  # type: ignore[method-assign]
    app = _agent([middleware])
    app.invoke(inputs)
    own[0] = calls[0] = 0
    start = time.process_time_ns()
    for _ in range(runs):
        app.invoke(inputs)
    total = time.process_time_ns() - start
    return own[0] / calls[0] / 1e3, own[0] / total


def _two_node(saver: Any = None) -> Any:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    class S(TypedDict, total=False):
        n: int
        text: str

    builder = StateGraph(S)
    builder.add_node("a", lambda s: {"n": s["n"] + 1, "text": f"a saw {s['n']}"})
    builder.add_node("b", lambda s: {"n": s["n"] + 1, "text": f"b saw {s['n']}"})
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_conditional_edges("b", lambda s: "a" if s["n"] < TWO_NODE_STEPS else END)
    return builder.compile(checkpointer=saver)


def _record_bytes(conn: sqlite3.Connection) -> dict[str, int]:
    """Bytes of the graph's own checkpoints and of liveguard's records, in one SQLite file."""
    own = liveguard = 0
    for ns, checkpoint, metadata in conn.execute(
            "SELECT checkpoint_ns, checkpoint, metadata FROM checkpoints"):
        meta = json.loads(metadata) if metadata else {}
        record = meta.pop("liveguard", None)
        size = len(checkpoint) + len(json.dumps(meta, separators=(",", ":")))
        if ns.startswith("__liveguard__"):
            liveguard += len(checkpoint) + len(metadata or b"")
        else:
            own += size
            if record is not None:
                liveguard += len(json.dumps(record, separators=(",", ":")))
    writes = sum(n for (n,) in conn.execute("SELECT length(value) FROM writes"))
    return {"own": own + writes, "liveguard": liveguard}


def two_node_bench(repeats: int) -> dict[str, Any]:
    """guard() on a plain 2-node graph, without a saver and with SqliteSaver on a file."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    from liveguard.integrations.langgraph import guard

    out: dict[str, Any] = {"steps": TWO_NODE_STEPS}
    with tempfile.TemporaryDirectory() as tmp:
        conns = [sqlite3.connect(Path(tmp) / f"{name}.sqlite", check_same_thread=False)
                 for name in ("plain", "guard")]
        plain, guarded = _two_node(), guard(_two_node())
        plain_s, guarded_s = _two_node(SqliteSaver(conns[0])), guard(_two_node(SqliteSaver(conns[1])))
        counter = iter(range(10**9))

        def thread() -> dict[str, Any]:
            return {"configurable": {"thread_id": f"t{next(counter)}"}, "recursion_limit": 10_000}

        start = {"n": 0}
        out["cpu_ns"] = _median_ns({
            "plain": lambda: plain.invoke(start),
            "guard": lambda: guarded.invoke(start),
            "plain+sqlite": lambda: plain_s.invoke(start, thread()),
            "guard+sqlite": lambda: guarded_s.invoke(start, thread()),
        }, repeats)
        sizes = _record_bytes(conns[1])
        calls = conns[1].execute("SELECT count(DISTINCT thread_id) FROM checkpoints").fetchone()[0]
        out["bytes_per_step"] = {k: v / (calls * TWO_NODE_STEPS) for k, v in sizes.items()}
        for conn in conns:
            conn.close()
    return out


def print_two_node(r: dict[str, Any]) -> None:
    t, n = r["cpu_ns"], r["steps"]
    print(f"\nguard() on a plain 2-node graph ({n} node steps per call), median CPU time")
    for name in ("plain", "guard", "plain+sqlite", "guard+sqlite"):
        print(f"  {name:13s} {t[name] / n / 1e3:8.1f} us/step")
    print(f"  guard()          {t['guard'] / t['plain']:.3f}x the plain graph (target <= 1.15x)")
    print(f"  guard()+sqlite   {t['guard+sqlite'] / t['plain+sqlite']:.3f}x (target <= 1.20x)")
    b = r["bytes_per_step"]
    print(f"  liveguard's records {b['liveguard']:.0f} B a step; the graph's own checkpoints and "
          f"writes {b['own']:.0f} B a step (target <= 512 B and <= the graph's own)")


def live_bench(repeats: int) -> dict[str, Any]:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.sqlite import SqliteSaver

    from liveguard import Monitor, Policy, Step
    from liveguard.integrations.langchain import STATE_KEY, LivenessMiddleware
    from liveguard.integrations.langgraph import guard
    from liveguard.live._langgraph._record import ThreadStore

    inputs = {"messages": [{"role": "user", "content": "go"}]}
    steps = 2 * TURNS + 1
    plain = _agent([])
    guarded = guard(_agent([]))
    saver = InMemorySaver()
    plain_t, guarded_t = _agent([], saver), guard(_agent([], saver))
    counter = iter(range(10**9))

    def thread() -> dict[str, Any]:
        return {"configurable": {"thread_id": f"t{next(counter)}"}}

    g = _median_ns({
        "unguarded": lambda: plain.invoke(inputs),
        "guard": lambda: guarded.invoke(inputs),
        "unguarded+saver": lambda: plain_t.invoke(inputs, thread()),
        "guard+saver": lambda: guarded_t.invoke(inputs, thread()),
    }, repeats)
    noop, live = _agent([_noop()]), _agent([LivenessMiddleware()])
    m = _median_ns({"noop": lambda: noop.invoke(inputs), "liveness": lambda: live.invoke(inputs)},
                   repeats)
    own = _own_per_model_call(inputs, repeats)

    # the thread record
    monitor = Monitor(Policy.tool_agent())
    for i in range(100):
        monitor.observe(Step(node="model", output={"tool_calls": [
            {"name": "run_sql", "args": {"q": f"select {i}"}, "id": f"c{i}"}]}))
        monitor.observe(Step(node="tools", tool="run_sql", args={"q": f"select {i}"},
                             result=f"{i} rows"))
    snapshot = len(json.dumps(monitor.snapshot(), separators=(",", ":")))
    live_saved = _agent([LivenessMiddleware()], InMemorySaver())
    cfg = {"configurable": {"thread_id": "size"}}
    live_saved.invoke(inputs, cfg)
    state = len(json.dumps(live_saved.get_state(cfg).values[STATE_KEY], separators=(",", ":")))
    policy = Policy.tool_agent()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    monitors = [Monitor(policy) for _ in range(50)]
    for mon in monitors:
        for i in range(100):
            mon.observe(Step(node="model", output={"tool_calls": [
                {"name": "run_sql", "args": {"q": f"select {i}"}, "id": f"c{i}"}]}))
            mon.observe(Step(node="tools", tool="run_sql", args={"q": f"select {i}"},
                             result=f"{i} rows"))
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    memory = sum(s.size_diff for s in after.compare_to(before, "filename")) / len(monitors)

    resume: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        conn = sqlite3.connect(Path(tmp) / "bench.sqlite", check_same_thread=False)
        for name, store_saver in (("memory", InMemorySaver()), ("sqlite", SqliteSaver(conn))):
            app = guard(_agent([], store_saver))
            store = ThreadStore.of(app, cfg)
            assert store is not None
            value = {"v": 2, "m": monitor.snapshot()}
            store.save_windows("bench", value)  # one checkpoint's row: read and written per call
            resume[name] = _median_ns(
                {"io": lambda s=store, v=value: (s._value("bench"), s.save_windows("bench", v))},
                max(repeats, 20))["io"]
        conn.close()
    return {"steps": steps, "guard": g, "middleware": m, "own": own, "snapshot_bytes": snapshot,
            "middleware_state_bytes": state, "monitor_bytes": memory, "resume_ns": resume,
            "two_node": two_node_bench(repeats)}


def print_live(r: dict[str, Any]) -> None:
    g, m, n = r["guard"], r["middleware"], r["steps"]
    print(f"\nlive guards: create_agent, {TURNS} tool turns ({n} graph steps per run), median CPU time")
    print(f"  unguarded       {g['unguarded'] / n / 1e3:8.1f} us/step")
    print(f"  guard()         {g['guard'] / n / 1e3:8.1f} us/step   "
          f"{g['guard'] / g['unguarded']:.3f}x unguarded")
    print(f"  unguarded+saver {g['unguarded+saver'] / n / 1e3:8.1f} us/step")
    print(f"  guard()+saver   {g['guard+saver'] / n / 1e3:8.1f} us/step   "
          f"{g['guard+saver'] / g['unguarded+saver']:.3f}x (thread record read + written once)")
    print(f"  no-op middleware{m['noop'] / n / 1e3:8.1f} us/step")
    print(f"  Liveness mw     {m['liveness'] / n / 1e3:8.1f} us/step   "
          f"{m['liveness'] / m['noop']:.3f}x the no-op middleware")
    print(f"  the middleware's own wrap_model_call work: {r['own'][0]:.0f} us per model call, "
          f"{100 * r['own'][1]:.1f}% of the run")
    print(f"  snapshot: {r['snapshot_bytes']} B JSON after 200 steps; middleware state "
          f"{r['middleware_state_bytes']} B after the run; one Monitor {r['monitor_bytes'] / 1024:.1f} KiB")
    print("  guard() cost per resume (record load + save): " + ", ".join(
        f"{k} {v / 1e3:.0f} us" for k, v in r["resume_ns"].items()))
    print_two_node(r["two_node"])
