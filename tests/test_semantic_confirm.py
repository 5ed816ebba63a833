"""Issue 17, the layered defence: embeddings suspect, the observations (or a judge) confirm.

Real local model (all-MiniLM-L6-v2). Each healthy look-alike has its looping twin, caught at
the same or an earlier step than before. See docs/detection.md.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from liveguard import Monitor, Policy, Step, check_trajectory
from liveguard.core.semantic.novelty import Info, candidates, facts, list_items, reads_german, shrinks
from one_step import one_step_per_invoke

SEMANTIC = Policy(semantic=True, max_revisits=50)  # leave the content and semantic rules
SNAPSHOT_V1 = Path(__file__).with_name("monitor_snapshot_v1.json")


def run(pairs: Sequence[tuple[str, str]]) -> list[Step]:
    steps = []
    for i, (node, text) in enumerate(pairs):
        if node == "tools":
            steps.append(Step(node=node, tool="search", args={"i": i}, result=text))
        else:
            steps.append(Step(node=node, summary=text))
    return steps


def semantic(steps: list[Step], policy: Policy = SEMANTIC) -> list[tuple[str, int, bool]]:
    return [(v.severity, v.step, v.detail["confirmed"]) for v in check_trajectory(steps, policy)
            if v.code == "semantic_repeat"]


def hard_codes(steps: list[Step], policy: Policy = SEMANTIC) -> list[tuple[str, int]]:
    return [(v.code, v.step) for v in check_trajectory(steps, policy) if v.hard]


# -- suspicion and confirmation ---------------------------------------------------------------
REASK = [
    ("model", "Could you share your booking reference so I can look it up?"),
    ("user", "I'd rather not say yet."),
    ("model", "To proceed I need your booking reference. Could you provide it?"),
    ("user", "It's somewhere in my email, hold on."),
    ("model", "Whenever you're ready, please send me your booking reference."),
]


def test_a_reask_answered_with_new_information_is_a_suspicion_not_a_veto() -> None:
    """main: hard at step 4. The user's replies between the re-asks are new: soft only."""
    assert semantic(run(REASK)) == [("soft", 2, False), ("soft", 4, False)]
    assert hard_codes(run(REASK)) == []


def test_a_reask_answered_the_same_way_each_time_is_confirmed() -> None:
    """The twin: the user's reply brings nothing new; hard at step 4, as on main."""
    twin = [(n, "I'd rather not say." if n == "user" else t) for n, t in REASK]
    assert semantic(run(twin))[-1] == ("hard", 4, True)


LOOKALIKE = [  # a reviewer repeats itself while the tool results it reads change
    ("reviewer", "The build still fails; please fix the failing import before I can approve."),
    ("tools", "ImportError: cannot import name 'parse' from 'utils' (line 3)"),
    ("reviewer", "I cannot approve yet: the build is still failing on an import error."),
    ("tools", "ImportError: cannot import name 'tokenize' from 'lexer' (line 9)"),
    ("reviewer", "Still failing on an import, so the build is not approvable yet; please fix it."),
]


def test_new_tool_results_between_the_repeats_keep_the_finding_soft() -> None:
    assert [s for s, _, _ in semantic(run(LOOKALIKE))] == ["soft", "soft"]
    assert hard_codes(run(LOOKALIKE)) == []


def test_the_same_tool_result_between_the_repeats_confirms() -> None:
    twin = [(n, "ImportError: cannot import name 'parse' from 'utils' (line 3)" if n == "tools" else t)
            for n, t in LOOKALIKE]
    assert ("hard", 4, True) in semantic(run(twin))


def test_volatile_text_in_the_results_between_is_nothing_new() -> None:
    """Who&When: the same page comes back, only 'N seconds ago' differs; still confirmed."""
    twin = [(n, f"You previously visited this page {4 + i} seconds ago. Orders: none." if n == "tools" else t)
            for i, (n, t) in enumerate(LOOKALIKE)]
    assert ("hard", 4, True) in semantic(run(twin))


def test_a_counter_ticking_alone_is_nothing_new_but_changed_counts_are() -> None:
    ticking = [(n, f"Attempt {i // 2 + 1} of 9: cannot import name 'parse'" if n == "tools" else t)
               for i, (n, t) in enumerate(LOOKALIKE)]
    assert ("hard", 4, True) in semantic(run(ticking))
    counts = [(n, f"{30 + i * 3} passed, {9 - i * 2} failed" if n == "tools" else t)
              for i, (n, t) in enumerate(LOOKALIKE)]
    assert hard_codes(run(counts)) == []


def test_a_single_node_rewording_with_nothing_in_between_is_still_hard() -> None:
    loop = [("planner", "Remaining checks: billing, invoices, refunds and payouts."),
            ("planner", "Still to check: billing, invoices, refunds and payouts."),
            ("planner", "Checks left to do: billing, invoices, refunds and payouts.")]
    assert semantic(run(loop)) == [("soft", 1, True), ("hard", 2, True)]


# -- the novelty test: shrinking lists, ids already seen, German nouns ------------------------
def test_a_shrinking_todo_list_is_progress() -> None:
    """main: hard at step 2."""
    shrinking = [("planner", "Remaining checks: billing, invoices, refunds and payouts."),
                 ("planner", "Remaining checks: invoices, refunds and payouts."),
                 ("planner", "Remaining checks: refunds and payouts."),
                 ("planner", "Remaining checks: payouts.")]
    assert semantic(run(shrinking)) == []
    a, b = Info("check A, B, C, D"), Info("check C, D")
    assert list_items("check A, B, C, D") == {"a", "b", "c", "d"}
    assert shrinks(b, a)
    assert not shrinks(a, a)
    assert candidates(b, [a]) == []
    assert candidates(a, [a]) == [0]


def test_an_id_already_seen_in_the_window_is_progress_for_the_message_that_lacked_it() -> None:
    """main: hard at step 2 (R-1002 had appeared in the listing, so it was not 'new')."""
    steps = run([("agent", "Your reservations are R-1001, R-1002 and R-1003."),
                 ("agent", "I have cancelled reservation R-1001 for you."),
                 ("agent", "I have cancelled reservation R-1002 for you."),
                 ("agent", "I have cancelled reservation R-1003 for you.")])
    assert semantic(steps) == []
    listing, first, second = (Info(s.summary or "") for s in steps[:3])
    assert candidates(second, [listing, first]) == []
    again = Info("Reservation R-1001 is cancelled, as you asked.")
    assert candidates(again, [listing, first]) == [1]  # the same id again: it could repeat


def test_a_capitalised_german_noun_is_not_a_new_fact() -> None:
    assert reads_german("Ich prüfe jetzt die Rechnung und melde mich mit dem Ergebnis.")
    assert facts("Ich prüfe jetzt die Rechnung und melde mich mit dem Ergebnis.") == frozenset()
    assert facts("Die Rechnung 4711 ging an Frau Berger.") >= {"4711"}
    assert facts("We sent the invoice to Maria and wait.") == {"maria"}  # English names stay facts


def test_a_reworded_german_loop_is_caught() -> None:
    """main saw every German noun as a new name: never a candidate, never caught."""
    loop = [("agent", "Ich prüfe jetzt die Rechnung und melde mich mit dem Ergebnis."),
            ("agent", "Ich schaue mir die Rechnung noch einmal an und gebe dann Bescheid."),
            ("agent", "Die Rechnung wird gerade geprüft, ich melde mich mit dem Resultat.")]
    assert semantic(run(loop)) == [("soft", 1, True), ("hard", 2, True)]


def test_volatile_numbers_are_not_new_facts() -> None:
    """'9 seconds ago' and '14 seconds ago' used to be new numbers: never a candidate."""
    loop = [("surfer", "You previously visited this page 9 seconds ago. The page shows the list of orders."),
            ("surfer", "This page was visited 14 seconds ago; it still shows the order list."),
            ("surfer", "You visited this page 20 seconds ago. It displays the orders list again.")]
    assert semantic(run(loop)) == [("soft", 1, True), ("hard", 2, True)]
    assert semantic(run(loop), SEMANTIC | {"volatile": ()}) == []


# -- thread state ------------------------------------------------------------------------------
def test_a_reworded_loop_told_one_step_per_invoke_is_one_loop() -> None:
    """main started the semantic layer afresh on every restore: the loop was never caught."""
    loop = run([("planner", "Remaining checks: billing, invoices, refunds and payouts."),
                ("planner", "Still to check: billing, invoices, refunds and payouts."),
                ("planner", "Checks left to do: billing, invoices, refunds and payouts.")])
    found = one_step_per_invoke(loop, SEMANTIC)
    assert [(v.severity, v.step) for v in found if v.code == "semantic_repeat"] == [("soft", 1), ("hard", 2)]


def test_the_semantic_snapshot_holds_no_text_and_confirmation_survives_it() -> None:
    steps = run(LOOKALIKE)
    monitor = Monitor(SEMANTIC)
    for step in steps[:3]:
        monitor.observe(step)
    data = json.dumps(monitor.snapshot())
    assert "SemanticRepeat" in data
    for word in ("build", "import", "approve", "ImportError"):
        assert word not in data
    restored = Monitor.restore(json.loads(data), SEMANTIC)
    rest = [v for step in steps[3:] for v in restored.observe(step) if v.code == "semantic_repeat"]
    assert [(v.severity, v.detail["confirmed"]) for v in rest] == [("soft", False)]


def test_an_old_snapshot_restores_with_the_semantic_layer_on() -> None:
    case = json.loads(SNAPSHOT_V1.read_text(encoding="utf-8"))
    policy = Policy.model_validate({**case["policy"], "semantic": True})
    monitor = Monitor.restore(case["snapshot"], policy)
    assert monitor.steps_seen == case["snapshot"]["n"]
