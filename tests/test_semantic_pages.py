"""Issue 17: a browser agent sent back to a page it read, told the same thing in other words.

The shape of Who&When Hand-Crafted ``hc-27`` (development half): after a replanning, the
Orchestrator asks WebSurfer again, in other words, to click the PDF link of an article it
already read, and WebSurfer reads the same page back. Each reading is a new OCR
transcription of the same screenshot: it names a fact that the earlier reading lacked (one
that an earlier page of the run had) or fewer facts, so main's novelty test called it
"other facts" or "a list worked off" and never suspected it; and the Orchestrator's ledger
between the rounds is new text, so main never confirmed either side.

Now (``semantic/novelty.py``, ``same_page``; ``rules/semantic.py``, ``_answered_alike``):
a long message that reads an earlier one back (word 3-shingle resemblance >= ``NEAR``)
is new only by a fact that no message of the window had; and a suspicion from the
``semantic_hard_matches``-th on is confirmed when another agent asked again in other words
and nothing new came back between that re-ask and the repeat (the asker's reasoning before
it asked again is not news). The healthy look-alikes: going back to a results page between
new articles, and the same page with a new number each time. Real local model
(all-MiniLM-L6-v2) for the suspicions.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TypedDict

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from liveguard import NoProgressError, Policy, Step, Violation, check_trajectory
from liveguard.core.semantic.novelty import Info, candidates, same_page
from liveguard.integrations.langgraph import guard
from one_step import one_step_per_invoke

SEMANTIC = Policy(semantic=True, max_revisits=50)
ASKER, THOUGHT, SURFER = "Orchestrator (-> WebSurfer)", "Orchestrator (thought)", "WebSurfer"

SEARCH = """I typed 'Leicester paper Can Hiccup Supply Enough Fish dragon diet' into the browser search bar.
Here is a screenshot of [Leicester paper Can Hiccup Supply Enough Fish dragon diet - Search](https://www.bing.com/search?q=leicester+hiccup+fish+dragon). The viewport shows 30% of the webpage, and is positioned at the top of the page.
Automatic OCR of the page screenshot has detected the following text:
Microsoft Bing
Can Hiccup Supply Enough Fish to Maintain a Dragon's Diet? - University of Leicester
journals.le.ac.uk › index.php › jist › article › view
Journal of Interdisciplinary Science Topics, Vol 6 (2017). A paper on the diet of a dragon.
Hiccup would have to supply 716 kg of fish per day to feed the dragon Toothless.
Related searches: how to train your dragon fish, dragon diet fish volume"""  # noqa: E501

_HEAD = """I clicked 'PDF'.
Here is a screenshot of [Can Hiccup Supply Enough Fish to Maintain a Dragon's Diet?](https://journals.le.ac.uk/index.php/jist/article/view/733/684). The viewport shows 100% of the webpage, and is positioned at the top of the page.
Automatic OCR of the page screenshot has detected the following text:
Journal of Interdisciplinary Science Topics
Can Hiccup Supply Enough Fish to Maintain a Dragon's Diet?
Amal Doua, The Centre for Interdisciplinary Science, University of Leicester
Abstract
This paper investigates the feasibility of Hiccup providing enough fish to maintain the diet of Toothless.
It considers the energy needs of a dragon of his size and the fish that a young viking could carry.
Introduction
In the film the dragon eats fish that Hiccup brings him in a basket every day of the week.
"""  # noqa: E501
PDF = [  # the same page transcribed three times: "Vol 6" missing once, "(2017)" read once
    _HEAD + "Vol 6 page 1 of 3\nDownload the full text of the article as a file",
    _HEAD + "page 1 of 3\nDownload the full text of the article as a file (2017)",
    _HEAD + "Vol 6 page 1 of 3\nDownload the full text of this article as a file",
]
ASKS = [
    "Please open the article about the dragon's diet and click on its PDF link to read the paper.",
    "Open the dragon diet article and click the PDF link so that we can read the paper.",
    "Click on the PDF link of the article on the dragon's diet and read the paper, please.",
]
LEDGERS = [  # the Orchestrator's reasoning: new text every round
    "Updated Ledger: the search found the Leicester article; its PDF has the fish volume we need.",
    "Updated Ledger: the PDF did not show the volume of the fish bag; we should look at the paper again.",
    "Updated Ledger: we still have not seen the volume in the paper; trying the PDF link once more.",
]


def rounds(asks: Sequence[str], pages: Sequence[str], first: str = SEARCH) -> list[Step]:
    """search, then (ledger, ask, page) per round, Magentic-One's turn order."""
    steps = [Step(node=ASKER, summary="Search for the Leicester paper about the diet of a dragon."),
             Step(node=SURFER, summary=first)]
    for ledger, ask, page in zip(LEDGERS * 3, asks, pages, strict=False):
        steps += [Step(node=THOUGHT, summary=ledger), Step(node=ASKER, summary=ask),
                  Step(node=SURFER, summary=page)]
    return steps


def findings(steps: list[Step]) -> list[tuple[str, str, int, bool]]:
    return [(v.node or "", v.severity, v.step, bool(v.detail.get("confirmed")))
            for v in check_trajectory(steps, SEMANTIC) if v.code == "semantic_repeat"]


def hard(found: Sequence[Violation]) -> list[tuple[str, int, str | None]]:
    return [(v.code, v.step, v.node) for v in found if v.hard]


def test_the_fixture_is_the_same_page_with_other_facts_and_fewer_facts() -> None:
    """Why main never suspected the readings: the 2nd names "2017" that the 1st lacks (the
    search page had it) and lacks "Vol 6"; the 3rd names "6" that the 2nd lacks."""
    search, first, second, third = (Info(t) for t in (SEARCH, *PDF))
    assert same_page(second, first)
    assert same_page(third, second)
    assert not same_page(first, search)
    assert candidates(second, [search, first]) == [1]  # main: [] ("other facts", a fact the 1st lacks)
    assert candidates(third, [search, first, second]) == [1, 2]  # main: [1]


def test_the_same_page_read_back_to_a_reworded_request_is_a_hard_repeat() -> None:
    """Fails on main: no hard finding (the readings are "other facts", the ledgers are new).
    The Orchestrator's third ask is confirmed by the page read back; WebSurfer's third
    reading by the re-ask with nothing new after it."""
    found = findings(rounds(ASKS, PDF))
    assert (SURFER, "soft", 7, False) in found  # main: no finding at all on WebSurfer
    assert (ASKER, "hard", 9, True) in found
    assert (SURFER, "hard", 10, True) in found
    assert hard(check_trajectory(rounds(ASKS, PDF), Policy(max_revisits=50))) == []  # structural: none


# -- healthy look-alikes --------------------------------------------------------------------
RESULTS = [  # the results page read back, each transcription with its own noise
    SEARCH.replace("Vol 6 (2017)", "Vol 6"),
    SEARCH.replace(" 716 kg", " a lot"),
    SEARCH.replace("Microsoft Bing\n", ""),
]
ARTICLES = [
    """I clicked 'Dragons in medieval bestiaries - British Library'.
Here is a screenshot of [Dragons in medieval bestiaries](https://www.bl.uk/medieval-literature/articles/dragons). The viewport shows 12% of the webpage.
Dragons appear in bestiaries as the largest of all serpents, enemies of the elephant.""",  # noqa: E501
    """I clicked 'How much would a real dragon eat? - Science Focus'.
Here is a screenshot of [How much would a real dragon eat?](https://www.sciencefocus.com/nature/dragon-diet). The viewport shows 20% of the webpage.
A biologist estimates the calories a flying reptile of that size would burn every day.""",  # noqa: E501
    """I clicked 'Fish consumption of large predators - Nature'.
Here is a screenshot of [Fish consumption of large predators](https://www.nature.com/articles/fish-predators). The viewport shows 8% of the webpage.
Seals and dolphins eat between four and ten percent of their body weight in fish daily.""",  # noqa: E501
]
OPEN = [
    "Please open the result 'Dragons in medieval bestiaries' and see what it says about their diet.",
    "Now open the result 'How much would a real dragon eat?' and report its estimate.",
    "Open the result 'Fish consumption of large predators' and note how much fish they eat.",
]
BACK = [
    "Please go back to the search results page.",
    "Go back to the page with the search results, please.",
    "Return to the search results page, please.",
]


def test_going_back_to_the_results_between_new_articles_stays_progress() -> None:
    """The results page read back three times, the request to go back reworded, a new
    article between: would fail if the re-ask confirmed whatever the repeating agent itself
    brought between (``_answered_alike`` without its own-agent test)."""
    asks = [OPEN[0], BACK[0], OPEN[1], BACK[1], OPEN[2], BACK[2]]
    pages = [ARTICLES[0], RESULTS[0], ARTICLES[1], RESULTS[1], ARTICLES[2], RESULTS[2]]
    found = findings(rounds(asks, pages))
    surfer = [(severity, confirmed) for node, severity, _, confirmed in found if node == SURFER]
    assert surfer == [("soft", False), ("soft", False)]  # read back twice: suspected (main: not at all) ...
    assert [f for f in found if f[1] == "hard"] == []  # ... and never hard: new articles came between


STATUS = """I clicked 'Flight status'.
Here is a screenshot of [Flight HAT268 status - Airline](https://www.airline.example/status/HAT268). The viewport shows 100% of the webpage, and is positioned at the top of the page.
Automatic OCR of the page screenshot has detected the following text:
Flight status for flight HAT268 from New York JFK to Atlanta ATL on the morning of the trip
Check in online, choose your seat, add bags and see the boarding gate of your flight
Departure from terminal 4 at gate {} as planned, arrival at terminal S
Sign up for flight alerts by text message or email to hear about changes to this flight"""  # noqa: E501


def test_the_same_page_with_a_new_gate_each_time_stays_progress() -> None:
    """A status page read on a reworded request: the same page, a gate no earlier message
    had each time. Would fail if a page read back were new only by facts that its own
    earlier reading lacked (the window-wide fact test dropped for it too)."""
    pages = [STATUS.format("B22"), STATUS.format("C14"), STATUS.format("D7")]
    asks = ["Please check the status of flight HAT268 again and tell me its departure gate.",
            "Check flight HAT268's status once more and tell me which gate it departs from.",
            "Look at the status of flight HAT268 again and report its departure gate."]
    assert [f for f in findings(rounds(asks, pages)) if f[1] == "hard"] == []


def test_told_one_step_per_invoke_the_decisions_are_the_same_and_hold_no_text() -> None:
    """The page sketches of the window go into the snapshot (hashed): restored step by step,
    the same findings (fails if ``Info.pack`` dropped the page: no suspicion at step 7)."""
    steps = rounds(ASKS, PDF)
    found = one_step_per_invoke(steps, SEMANTIC, ("Hiccup", "dragon", "Leicester", "Toothless", "viking"))
    assert [(v.node, v.severity, v.step) for v in found if v.code == "semantic_repeat"] == [
        (node, severity, step) for node, severity, step, _ in findings(steps)]


# -- live: a real LangGraph graph under guard(), SQLite checkpoints --------------------------
class State(TypedDict, total=False):
    turn: int
    ledger: str
    ask: str
    page: str


def _thought(state: State) -> State:
    return {"ledger": LEDGERS[state["turn"] - 1]}


def _asker(state: State) -> State:
    turn = state.get("turn", 0)
    return {"ask": ASKS[turn - 1] if turn else "Search for the Leicester paper about the diet of a dragon."}


def _surfer(state: State) -> State:
    turn = state.get("turn", 0)
    return {"page": PDF[turn - 1] if turn else SEARCH, "turn": turn + 1}


def _build(path: Path, policy: Policy):  # type: ignore[no-untyped-def]
    """Magentic-One's turn order as a graph: search; then ledger, ask, page, three times."""
    g = StateGraph(State)
    g.add_node(THOUGHT, _thought)
    g.add_node(ASKER, _asker)
    g.add_node(SURFER, _surfer)
    g.add_edge(START, ASKER)
    g.add_edge(THOUGHT, ASKER)
    g.add_edge(ASKER, SURFER)
    g.add_conditional_edges(SURFER, lambda s: END if s["turn"] > len(PDF) else THOUGHT)
    saver = SqliteSaver(sqlite3.connect(path / "cp.sqlite", check_same_thread=False))
    return guard(g.compile(checkpointer=saver), policy=policy)


def test_the_guard_stops_a_browser_sent_back_to_the_same_page(tmp_path: Path) -> None:
    """Live, the same rule (one Monitor path): the third ask, confirmed by the page read back,
    stops the run before WebSurfer reads the page a third time. Fails on main: no finding is
    hard, the run goes to its end."""
    app = _build(tmp_path, SEMANTIC)
    with pytest.raises(NoProgressError) as info:
        app.invoke({"turn": 0}, {"configurable": {"thread_id": "t1"}})
    v = info.value.violation
    assert (v.code, v.severity, v.node) == ("semantic_repeat", "hard", ASKER)


def test_without_the_semantic_layer_the_browser_runs_to_its_end(tmp_path: Path) -> None:
    out = _build(tmp_path, Policy(max_revisits=50)).invoke({"turn": 0}, {"configurable": {"thread_id": "t1"}})
    assert out["turn"] == len(PDF) + 1
