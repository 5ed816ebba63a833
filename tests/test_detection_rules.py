"""Issue 17, rule side: a loop is the same state coming back with nothing new in between.

Each case has its healthy look-alike (must stay silent) and its looping twin (still caught,
at the same or an earlier step than before). See docs/detection.md.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from liveguard import Monitor, Policy, Step, check_trajectory
from liveguard.core.allowset import AllowSet
from liveguard.core.fingerprint import DEFAULT_VOLATILE, VOLATILE_PATTERNS, Fingerprinter, fingerprint
from liveguard.errors import PolicyError


def hard(steps: list[Step], policy: Policy | None = None) -> list[tuple[str, int]]:
    return [(v.code, v.step) for v in check_trajectory(steps, policy or Policy.workflow()) if v.hard]


# -- a reply is judged with what it answers -------------------------------------------------
def _chat(pairs: list[tuple[Any, Any]], *, user_node: str = "user") -> list[Step]:
    steps: list[Step] = []
    for request, reply in pairs:
        if isinstance(request, str):
            steps.append(Step(node=user_node, output=request))
        else:
            steps.append(Step(node="input", output=request))
        steps.append(Step(node="model", output=reply))
    return steps


def test_the_same_short_answer_to_three_different_requests_is_progress() -> None:
    """ "Done." to three different requests: three states (main fired repeated_content)."""
    steps = _chat([("rename the file", "Done."), ("add a test", "Done."), ("push it", "Done.")])
    assert hard(steps) == []


@pytest.mark.parametrize("shape", ["human_message", "user_dict", "human_node"])
def test_user_input_is_recognised_by_message_shape_and_node(shape: str) -> None:
    texts = ["rename the file", "add a test", "push it"]
    if shape == "human_message":
        steps = _chat([(HumanMessage(t), AIMessage("Done.")) for t in texts])
    elif shape == "user_dict":
        steps = _chat([({"role": "user", "content": t}, {"role": "assistant", "content": "Done."})
                       for t in texts])
    else:
        steps = _chat([(t, "Done.") for t in texts], user_node="human")
    assert hard(steps) == []


def test_the_same_request_answered_the_same_way_is_still_a_repeat() -> None:
    """The looping twin: caught at the same step as before keying (a cycle at step 3)."""
    steps = _chat([("status?", "Working on it.")] * 3)
    assert hard(steps) == [("content_cycle", 3), ("repeated_content", 5)]
    # without user steps (main's only way to see it) the agent's replies alone: same step
    assert hard(_chat([("status?", "Working on it.")] * 3)[:4])[0] == ("content_cycle", 3)


def test_a_reply_repeated_within_one_request_still_stalls() -> None:
    steps = [Step(node="user", output="fix the bug"), *[Step(node="model", output="Retrying.")] * 2]
    assert hard(steps) == [("no_progress_stall", 2)]


def test_a_user_saying_yes_to_three_questions_is_not_a_repeat() -> None:
    steps: list[Step] = []
    for item in ("A", "B", "C"):
        steps += [Step(node="model", output=f"Book flight {item}?"), Step(node="user", output="yes")]
    assert hard(steps) == []


def test_the_request_survives_a_snapshot() -> None:
    """Thread state: the request a reply answers is restored with the Monitor."""
    first = _chat([("rename the file", "Done.")])
    monitor = Monitor(Policy.workflow())
    for step in first:
        monitor.observe(step)
    restored = Monitor.restore(json.loads(json.dumps(monitor.snapshot())), Policy.workflow())
    assert restored.digest(Step(node="model", output="Done.")) == monitor.digest(
        Step(node="model", output="Done."))
    assert restored.digest(Step(node="model", output="Done.")) != Monitor(Policy.workflow()).digest(
        Step(node="model", output="Done."))


def test_runs_without_requests_or_inputs_keep_their_digests() -> None:
    step = Step(node="model", output="Done.")
    assert Monitor(Policy.workflow()).digest(step) == fingerprint("Done.")


# -- a step that carries its input ---------------------------------------------------------
def test_identical_outputs_of_different_send_inputs_are_not_a_stall() -> None:
    """Two parallel Sends, different documents, the same label: main fired no_progress_stall."""
    steps = [Step(node="classify", args={"doc": d}, output={"label": "invoice"}) for d in ("a.pdf", "b.pdf")]
    assert hard(steps) == []


def test_the_same_send_input_with_the_same_output_still_stalls() -> None:
    steps = [Step(node="classify", args={"doc": "a.pdf"}, output={"label": "invoice"})] * 2
    assert hard(steps) == [("no_progress_stall", 1)]


# -- an identical failing call counts whatever else its turn did -----------------------------
def _turn(turn: int, calls: list[tuple[str, dict[str, Any], str]]) -> list[Step]:
    request = {"role": "assistant", "content": "", "tool_calls": [
        {"id": f"c{turn}_{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
        for i, (n, a, _) in enumerate(calls)]}
    return [Step(node="model", output=request),
            *[Step(node="tools", tool=n, args=a, result=r) for n, a, r in calls]]


def test_an_identical_nonretryable_failure_beside_a_progressing_call_fires_at_two() -> None:
    """Main never flagged it: the sibling's progress made the failing call not count."""
    failing = ("charge", {"card": "4242"}, '{"error": "card declined", "retryable": false}')
    steps: list[Step] = []
    for turn in range(4):
        steps += _turn(turn, [failing, ("search", {"page": turn}, f'{{"rows": {turn}}}')])
    found = check_trajectory(steps, Policy.tool_agent())
    fired = [(v.code, v.step, v.detail["tool"]) for v in found if v.hard]
    assert fired == [("tool_no_progress", 4, "charge")]


def test_an_identical_retryable_error_beside_a_progressing_call_fires_at_three() -> None:
    steps: list[Step] = []
    for turn in range(4):
        steps += _turn(turn, [("search", {"page": turn}, f"rows {turn}"), ("fetch", {"url": "u"}, "")])
        steps[-1] = Step(node="tools", tool="fetch", args={"url": "u"}, error="timeout")
    found = [v for v in check_trajectory(steps, Policy.tool_agent()) if v.hard]
    assert [(v.code, v.step, v.detail["tool"]) for v in found] == [("tool_no_progress", 7, "fetch")]


def test_a_constant_successful_side_call_beside_progress_is_still_not_counted() -> None:
    """The healthy look-alike: ``whoami()`` succeeding every turn beside new searches."""
    steps: list[Step] = []
    for turn in range(5):
        steps += _turn(turn, [("whoami", {}, '{"user": "ann"}'), ("search", {"page": turn}, f"rows {turn}")])
    assert hard(steps, Policy.tool_agent()) == []


def test_a_failure_that_changes_is_progress() -> None:
    steps: list[Step] = []
    for turn in range(4):
        failure = f'{{"error": "attempt {turn}", "retryable": false}}'
        steps += _turn(turn, [("charge", {"card": "4242"}, failure),
                              ("search", {"page": turn}, f"rows {turn}")])
    assert hard(steps, Policy.tool_agent()) == []


# -- volatile text ---------------------------------------------------------------------------
_VISITS = "You previously visited this page {} seconds ago. Title: Orders. Showing results."


def test_elapsed_time_in_a_result_is_not_progress() -> None:
    """Who&When's WebSurfer: the same page again, only the 'seconds ago' differs."""
    steps = [Step(node="surfer", output=_VISITS.format(s)) for s in (9, 14)]
    assert hard(steps) == [("no_progress_stall", 1)]
    assert hard(steps, Policy.workflow(volatile=())) == []  # masking off: main's behaviour


def test_a_page_count_that_moves_is_progress() -> None:
    steps = [Step(node="reader", output=f"Showing page {n} of 10 (fetched 2026-12-01T10:0{n}:00Z)")
             for n in (3, 4, 5)]
    assert hard(steps) == []
    twin = [Step(node="reader", output=f"Showing page 3 of 10 (fetched 2026-12-01T10:0{n}:00Z)")
            for n in (3, 4)]
    assert hard(twin) == [("no_progress_stall", 1)]


@pytest.mark.parametrize(("a", "b"), [
    ("request id 7f3a9c2e11 failed: quota", "request id 0b1c2d3e44 failed: quota"),
    ("trace_id=4bf92f3577b34da6a3ce929d0e0e4736 error", "trace_id=00f067aa0ba902b7aaaa0e0e47361234 error"),
    ("job 123e4567-e89b-12d3-a456-426614174000 queued", "job 9b2e4567-e89b-12d3-a456-426614170000 queued"),
    ("tests: 3 failed, 5 passed in 1.23s", "tests: 3 failed, 5 passed in 0.98s"),
    ("last run at 13:56:16, still failing", "last run at 14:02:51, still failing"),
    ("search took 340 ms: no rows", "search took 1.2 s: no rows"),
])
def test_volatile_fragments_are_masked_in_tool_results(a: str, b: str) -> None:
    steps = [Step(node="tools", tool="run", args={"x": 1}, result=r) for r in (a, b, a)]
    assert hard(steps) == [("tool_no_progress", 2)]
    assert hard(steps, Policy.workflow(volatile=())) == []


@pytest.mark.parametrize(("a", "b"), [
    ("tests: 3 failed, 5 passed in 1.23s", "tests: 2 failed, 6 passed in 1.23s"),
    ("commit 4bf92f3577b34da6a3ce929d0e0e4736aaaaaaaa pushed",
     "commit 5cf92f3577b34da6a3ce929d0e0e4736aaaaaaaa pushed"),
    ("page 3 of 10", "page 4 of 10"),
    ("order #W2378156 cancelled", "order #W4817420 cancelled"),
])
def test_counts_and_ids_that_carry_progress_are_kept(a: str, b: str) -> None:
    fp = Fingerprinter(volatile=DEFAULT_VOLATILE)
    assert fp(a) != fp(b)


def test_text_without_volatile_fragments_digests_exactly_as_before() -> None:
    fp = Fingerprinter(volatile=DEFAULT_VOLATILE)
    for value in ("page 3 of 10", {"rows": [1, 2], "q": "x"}, ["Done."], AIMessage("ok")):
        assert fp(value) == fingerprint(value)
        assert fp.raw_digest(value) == bytes.fromhex(fingerprint(value))


def test_the_volatile_list_is_configurable_by_name_and_regex() -> None:
    only_ids = Policy.workflow(volatile=("uuid",))
    steps = [Step(node="surfer", output=_VISITS.format(s)) for s in (9, 14)]
    assert hard(steps, only_ids) == []  # relative_time not in the list
    ticket = Policy.workflow(volatile=(*DEFAULT_VOLATILE, r"re:TICKET-\d+"))
    steps = [Step(node="m", output=f"filed TICKET-{n}, waiting") for n in (1, 2)]
    assert hard(steps) == []
    assert hard(steps, ticket) == [("no_progress_stall", 1)]


def test_bad_volatile_names_are_typed_errors_naming_the_field() -> None:
    with pytest.raises(PolicyError, match=r"volatile.*unknown volatile pattern 'nope'"):
        Policy.build(volatile=("nope",))
    with pytest.raises(PolicyError, match="volatile"):
        Policy.build(volatile=("re:(",))
    assert set(DEFAULT_VOLATILE) == set(VOLATILE_PATTERNS)


def test_an_allow_set_sets_the_volatile_list() -> None:
    allow = AllowSet.parse({"graph": "g", "transitions": {"__start__": ["surfer"], "surfer": ["surfer"]},
                            "volatile": ["uuid"]})
    assert Monitor(Policy.workflow(), allow).policy.volatile == ("uuid",)
    steps = [Step(node="surfer", output=_VISITS.format(s)) for s in (9, 14)]
    assert [v.code for v in check_trajectory(steps, Policy.workflow(), allow) if v.hard] == []


# -- repeated content: what came back between the repeats ------------------------------------
def _magentic(pages: list[str], *, same_instruction: bool = False) -> list[Step]:
    steps: list[Step] = []
    for i, page in enumerate(pages):
        ask = "Please open the result and read it." if same_instruction else f"Please open result {i}."
        steps += [Step(node="Orchestrator (-> WebSurfer)", output=ask),
                  Step(node="Orchestrator (thought)", output="Next speaker WebSurfer"),
                  Step(node="WebSurfer", output=page)]
    return steps


def test_a_routing_message_with_a_new_page_between_each_is_progress() -> None:
    """Who&When: "Next speaker WebSurfer" three times, a new page each time (main: repeated_content)."""
    assert hard(_magentic(["page about A", "page about B", "page about C"]), Policy(max_revisits=50)) == []


def test_a_routing_message_with_the_same_page_between_is_a_repeat() -> None:
    """The twin: the orchestrator's own new instructions are not news to it (one agent, two
    channels); the same page coming back is nothing new."""
    steps = [Step(node="WebSurfer", output="page about A"), *_magentic(["page about A"] * 3)]
    assert ("repeated_content", 8) in hard(steps, Policy(max_revisits=50))


def test_the_whole_round_coming_back_is_caught_as_early_as_on_main() -> None:
    """The same instruction, routing and page again: a cycle at step 5, main's first finding."""
    steps = [Step(node="WebSurfer", output="page about A"),
             *_magentic(["page about A"] * 3, same_instruction=True)]
    assert hard(steps, Policy(max_revisits=50))[0] == ("content_cycle", 5)


def test_a_bad_volatile_name_in_an_allow_set_names_file_and_key(tmp_path: Any) -> None:
    from liveguard.core.allowset import AllowSetError, load_allowset

    path = tmp_path / "g.yaml"
    path.write_text("graph: g\ntransitions:\n  __start__: [a]\n  a: [__end__]\nvolatile: [uuid, nope]\n")
    with pytest.raises(AllowSetError) as info:
        load_allowset(path)
    assert (info.value.source, info.value.key) == (f"{path}:5", "volatile.1")
    assert "unknown volatile pattern 'nope'" in info.value.reason


@pytest.mark.parametrize("text", [
    "You previously visited this page 9 seconds ago", "at 2026-12-01T13:56:16Z ok", "took 340 ms",
    "5 passed in 0.53s", "request id: 7f3a9c2e11", "trace 4bf92f3577b34da6a3ce929d0e0e4736 x",
    "job 123e4567-e89b-12d3-a456-426614174000", "page 3 of 10", "RUN-ID=abcdef12", "no digits here",
])
def test_the_guarded_byte_masking_equals_the_plain_patterns(text: str) -> None:
    """The matcher's pre-filter only skips patterns that cannot match: the bytes are the same as
    with every pattern applied."""
    import re

    from liveguard.core.fingerprint import canonical_bytes, volatile_mask

    mask = volatile_mask(DEFAULT_VOLATILE)
    assert mask is not None
    data = canonical_bytes({"text": text, "n": 1})
    plain = data
    for name in DEFAULT_VOLATILE:
        plain = re.sub(VOLATILE_PATTERNS[name].encode(), b"\x00~", plain)
    assert mask.bytes(data) == plain


def test_a_loop_counter_is_not_progress_but_what_it_counts_is() -> None:
    """Loop counters (``rounds``, ``attempt``, ...) are dropped like request ids: a state that
    differs from the last only by its counter is the same state; new content is still new."""
    assert fingerprint({"answer": "again", "rounds": 1}) == fingerprint({"answer": "again", "rounds": 2})
    assert fingerprint({"q": "x", "attempt": 1}) == fingerprint({"q": "x", "attempt": 7})
    assert fingerprint({"answer": "a", "rounds": 1}) != fingerprint({"answer": "b", "rounds": 2})
    loop = [Step(node=n, output=o) for r in range(1, 5)
            for n, o in (("retrieve", {"docs": ["d"]}), ("generate", {"answer": "again", "rounds": r}))]
    healthy = [Step(node=n, output=o) for r in range(1, 5)
               for n, o in (("retrieve", {"docs": [f"d{r}"]}),
                            ("generate", {"answer": f"a{r}", "rounds": r}))]
    policy = Policy.workflow(max_revisits=100, max_visits=1000)
    assert [v.code for v in check_trajectory(loop, policy) if v.severity == "hard"][:1] == ["content_cycle"]
    assert [v for v in check_trajectory(healthy, policy) if v.severity == "hard"] == []


def test_a_failing_call_counts_across_requests_a_successful_one_does_not() -> None:
    """The same successful lookup for three different questions is progress; the same call
    failing the same way ("retryable": false) is the same state whatever was asked."""
    def run(result: Any) -> list[tuple[str, int]]:
        steps = []
        for q in ("total per region?", "and per month?", "and per product?"):
            steps += [Step(node="user", output=q),
                      Step(node="tools", tool="whoami", args={}, result=result)]
        found = check_trajectory(steps, Policy.tool_agent())
        return [(v.code, v.step) for v in found if v.severity == "hard"]

    assert run({"user": "ann"}) == []
    assert run({"error": "boom", "retryable": False})[:1] == [("tool_no_progress", 3)]


def test_a_users_turns_are_not_revisits_offline_as_live() -> None:
    """Six user turns of a chat: the user's node is never a node_revisit_cycle (the live guards
    never act on the user's turn either); the agent's own revisits still count."""
    steps = []
    for turn in range(6):
        steps += [Step(node="user", output=f"question {turn}"), Step(node="model", output=f"answer {turn}")]
    found = [(v.code, v.node) for v in check_trajectory(steps, Policy.workflow()) if v.severity == "hard"]
    assert ("node_revisit_cycle", "user") not in found
    assert ("node_revisit_cycle", "model") in found  # the workflow ceiling still applies to the agent's node
