"""Issue 17: a page read back re-rendered is nothing new; a scrolled page, new results, a new
id, a list worked off and a grown log are.

The semantic confirmation (``rules/semantic.py``) asks whether the observations between two
reworded repeats brought anything new. A Magentic-One WebSurfer re-reads the same page on
every visit, and the page text comes back re-rendered (other line breaks, bullets, shouted
headings): new by digest, so main never confirmed the Orchestrator's repeats. An
observation that re-reads one of its node's recent observations
(:class:`liveguard.core.semantic.novelty.Sketch`) is nothing new now. Real local model
(all-MiniLM-L6-v2) for the suspicions; the re-read test itself is deterministic.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from liveguard import Policy, Step, check_trajectory
from liveguard.core.semantic.novelty import LONG, NEAR, WEAK, Sketch, candidates, facts
from liveguard.core.semantic.novelty import Info as NoveltyInfo
from one_step import one_step_per_invoke

SEMANTIC = Policy(semantic=True, max_revisits=50)
STRUCTURAL = Policy(max_revisits=50)

ASKS = (  # the planner rewords one request; the observations between decide
    "Please open the county treasury page and find the email address of the department.",
    "Open the treasury page of the county and look for the email address of the department.",
    "Find the email address of the department on the county treasury page, please.",
)


def run(observations: Sequence[str], node: str = "browser") -> list[Step]:
    """planner, observation, planner, observation, planner."""
    steps: list[Step] = []
    for i, ask in enumerate(ASKS):
        steps.append(Step(node="planner", summary=ask))
        if i < len(observations):
            text = observations[i]
            if node == "tools":
                steps.append(Step(node="tools", tool="read_page", args={"visit": i}, result=text))
            else:
                steps.append(Step(node=node, summary=text))
    return steps


def semantic(steps: list[Step], policy: Policy = SEMANTIC) -> list[tuple[str, int, bool]]:
    return [(v.severity, v.step, v.detail["confirmed"]) for v in check_trajectory(steps, policy)
            if v.code == "semantic_repeat" and v.node == "planner"]


def hard(steps: list[Step], policy: Policy = SEMANTIC) -> list[tuple[str, int]]:
    return [(v.code, v.step) for v in check_trajectory(steps, policy) if v.hard]


PAGE = """I clicked 'Treasury Division'.
Here is the text of the page.
Treasury Division of Queen Anne's County
Government Departments Services Doing Business
Pay taxes and utility bills online
Property record and utility account search
Property tax billing and collections
Tax credits and special assessments billing
Over the counter services and tax sale
The Treasury Division collects all revenues deposited in all county accounts
Email the Department for questions about your bill"""

REREAD = """I clicked 'Treasury Division'.
Here is the text of the page:
**TREASURY DIVISION** of Queen Anne's County
**ONLINE SERVICES**
- Government
- Departments
- Services
- Doing Business
- Pay taxes and utility bills online
- Property record and utility account search
- Property tax billing and collections
- Tax credits and special assessments billing
- Over the counter services and tax sale
The Treasury Division collects all revenues deposited in all county accounts.
Email the Department for questions about your bill"""


def test_the_fixture_is_a_rerendered_page_that_main_counted_as_new() -> None:
    """The re-read differs by digest and shouts a heading of the page's own words ("a new fact"
    for the message novelty test), yet keeps most word triples: what WebSurfer sends back."""
    assert PAGE != REREAD
    assert facts(REREAD) - facts(PAGE) == {"online"}  # shouted: new to the novelty test
    assert candidates(NoveltyInfo(REREAD), [NoveltyInfo(PAGE)]) == []
    assert Sketch(REREAD).resemblance(Sketch(PAGE)) >= NEAR
    assert Sketch(REREAD).rereads(Sketch(PAGE))


def test_a_page_read_back_rerendered_between_the_repeats_confirms() -> None:
    """main: the re-rendered page was new, so the planner's third ask stayed soft (unconfirmed)."""
    steps = run([PAGE, REREAD])
    assert semantic(steps) == [("soft", 2, False), ("hard", 4, True)]
    assert hard(steps, STRUCTURAL) == []  # the hash rules are unchanged with semantic off


def test_a_tool_result_read_back_rerendered_confirms_too() -> None:
    """The same for a tool's result (a browser tool of a tool agent)."""
    steps = run([PAGE, REREAD], node="tools")
    assert ("hard", 4, True) in semantic(steps)
    assert hard(steps, STRUCTURAL) == []


def test_a_reread_told_one_step_per_invoke_is_the_same_decision_and_holds_no_text() -> None:
    steps = run([PAGE, REREAD])
    found = one_step_per_invoke(steps, SEMANTIC, ("Treasury", "treasury", "county", "Department", "bills"))
    assert [(v.severity, v.step) for v in found if v.code == "semantic_repeat" and v.node == "planner"] == [
        ("soft", 2), ("hard", 4)]


# -- healthy look-alikes: each stays soft, and each names the mistake that would stop it -----
_ARTICLE = """I scrolled down one page in the browser.
History of the Treasury Division - County News - Local government and public services
Home / Departments / Budget and Finance / Treasury Division / History
"""
SCROLL = [
    _ARTICLE + """The department was founded to collect the revenues of the county and to mail the bills.
Its first office was in the old courthouse, next to the records room and the clerk.""",
    _ARTICLE + """Later the office moved to the new county building on the main street near the library.
Today it also runs the tax sale and answers questions about utility accounts online.""",
]
"""A long page paged through: the same header, a new part of the page each time (no number
changes, so only the resemblance tells them apart)."""


def test_scrolling_through_a_page_stays_progress() -> None:
    """A browser tool's pages: would fail with a resemblance taken on the page's header or set
    loose (NEAR 0.25)."""
    assert 0.25 < Sketch(SCROLL[1]).resemblance(Sketch(SCROLL[0])) < NEAR
    assert [s for s, _, _ in semantic(run(SCROLL, node="tools"))] == ["soft", "soft"]
    assert hard(run(SCROLL, node="tools")) == []


RESULTS = [
    """Web search - results page 1 of 10, sorted by relevance, safe search on, region United States
Query: county treasury email
Treasury Division contact page with the office email and phone
County finance department annual report and budget overview
Pay your property tax bill online with a card or a check""",
    """Web search - results page 1 of 10, sorted by relevance, safe search on, region United States
Query: treasury department email address
Contact the county treasurer by email for billing questions
State comptroller office directory of county treasurers
How to request a copy of a paid tax bill from the treasurer""",
]


def test_search_results_for_a_new_query_stay_progress() -> None:
    """A search tool's results, same layout, other results: would fail with a loose
    resemblance (NEAR 0.15)."""
    assert 0.15 < Sketch(RESULTS[1]).resemblance(Sketch(RESULTS[0])) < NEAR
    assert [s for s, _, _ in semantic(run(RESULTS, node="tools"))] == ["soft", "soft"]
    assert hard(run(RESULTS, node="tools")) == []


def _record(reservation: str, origin: str) -> str:
    return json.dumps({
        "reservation_id": reservation, "user_id": "mia_li_3668", "origin": origin, "destination": "JFK",
        "flight_type": "one_way", "cabin": "economy",
        "passengers": [{"first_name": "Mia", "last_name": "Li"}],
        "payment_history": [{"payment_id": "credit_card_4421486", "amount": 227}],
        "insurance": "no", "status": "confirmed", "baggage": "one checked bag, no extra fees",
    }, indent=1)


def test_the_same_record_with_a_new_id_or_code_stays_progress() -> None:
    """Alike but for the id (or an airport code): would fail without the facts test. The twin,
    the same record re-read with other line breaks, confirms."""
    ids = [_record("R-1001", "LAS"), _record("R-2417", "LAS")]  # not R-1002: a counter ticking
    assert Sketch(ids[1]).resemblance(Sketch(ids[0])) >= NEAR  # only the facts tell them apart
    assert hard(run(ids, node="tools")) == []
    codes = [_record("R-1001", "LAS"), _record("R-1001", "SFO")]  # an upper-case code, no digit
    assert Sketch(codes[1]).resemblance(Sketch(codes[0])) >= NEAR
    assert hard(run(codes, node="tools")) == []
    assert ("hard", 4, True) in semantic(run([ids[0], ids[0].replace("\n", " ")], node="tools"))


TODO = ["review the invoice from the paper supplier", "review the invoice from the print shop",
        "review the invoice from the cleaning company", "review the invoice from the courier service",
        "review the invoice from the catering firm", "review the invoice from the office landlord",
        "review the invoice from the phone company", "review the invoice from the software vendor",
        "review the invoice from the travel agency", "review the invoice from the security firm"]


def _todo(items: Sequence[str]) -> str:
    return "Invoices still to review:\n" + "\n".join(f"- {item}" for item in items)


def test_a_list_worked_off_stays_progress() -> None:
    """One item done each time, nothing else changes: would fail without the lines test."""
    worked_off = [_todo(TODO[1:]), _todo(TODO[2:])]
    assert Sketch(worked_off[1]).resemblance(Sketch(worked_off[0])) >= NEAR
    assert hard(run(worked_off, node="tools")) == []
    long = [f"{item}, and check the amount against the purchase order and the delivery note first"
            for item in TODO]
    renumbered = ["\n".join(f"{i + 1}. {item}" for i, item in enumerate(long[k:])) for k in (1, 2)]
    assert Sketch(renumbered[1]).resemblance(Sketch(renumbered[0])) >= NEAR
    assert hard(run(renumbered, node="tools")) == []  # list markers are not the line's text


def test_a_grown_log_stays_progress() -> None:
    """A line appended each time: would fail without the lines test."""
    lines = [f"checked the {item.removeprefix('review the ')}" for item in TODO]
    grown = ["\n".join(lines[:8]), "\n".join(lines[:9])]
    assert Sketch(grown[1]).resemblance(Sketch(grown[0])) >= NEAR
    assert hard(run(grown, node="tools")) == []


# -- the novelty test: a recased word is not a new name -----------------------------------------
def test_a_recased_word_is_not_a_new_name() -> None:
    """main: 'Single Family' after 'single-family' was a new name, so the reworded ask was never
    a candidate (Magentic-One's Orchestrator recases words between its repeats)."""
    earlier = NoveltyInfo("Email the treasury to ask for the lowest price of a single-family house.")
    recased = NoveltyInfo("Please email the treasury and ask for the lowest price of a Single Family house.")
    assert candidates(recased, [earlier]) == [0]
    named = NoveltyInfo("Please email Maria at the treasury and ask for the lowest price of a house.")
    assert candidates(named, [earlier]) == []  # a name the earlier message lacks stays a fact
    restored = NoveltyInfo.unpack(json.loads(json.dumps(earlier.pack())))
    assert candidates(recased, [restored]) == [0]


# -- graded confirmation: the more repeats, the less novelty is needed to call them a loop ------
ASKED = (  # the planner asks a fourth and a fifth time, reworded
    *ASKS,
    "Go to the county treasury page and find the department's email address there.",
    "On the treasury page of the county, please find the email address of the department.",
)
HISTORY = """I clicked 'Month Selection'.
Here is a screenshot of the weather history and data archive page of the weather service.
The viewport shows part of the webpage and is positioned at the top of the page.
Automatic text recognition of the page screenshot has detected the following text:
weather history and data archive search for a location by city or airport code
select the month and the day and the year then press view to see the daily history
daily observations table with the high and low temperature the dew point the humidity
the wind speed the pressure and the precipitation for each day of the selected month
sign in to save your favourite locations and to see the history of your own station
maps and radar news and blogs severe weather hurricane season forecast and alerts"""
_FILL = ("menu", "banner", "icon", "button", "link", "panel")


def _transcribed(every: int, start: int, page: str = HISTORY) -> str:
    """``page`` read back with every ``every``-th word of its body misread (from ``start``):
    the same page, more changed than a re-read (text recognition of a new screenshot)."""
    head, _, body = page.partition("\n")
    words = body.split(" ")
    return head + "\n" + " ".join(_FILL[(i // every) % len(_FILL)] if i % every == start else word
                                  for i, word in enumerate(words))


def asked(observations: Sequence[str], asks: Sequence[str] = ASKED, node: str = "tools") -> list[Step]:
    """planner, observation, planner, ... (one observation after each ask but the last): a
    browser tool's result, or a message of ``node`` (the user)."""
    steps: list[Step] = []
    for i, ask in enumerate(asks):
        steps.append(Step(node="planner", summary=ask))
        if i < len(observations):
            if node == "tools":
                steps.append(Step(node=node, tool="read_page", args={"visit": i}, result=observations[i]))
            else:
                steps.append(Step(node=node, summary=observations[i]))
    return steps


WEAKLY = [HISTORY, *(_transcribed(12, k) for k in range(3))]
"""The first page, then three readings of it at a resemblance of about 0.6 to the first (below
NEAR, at or above WEAK), with no number or identifier the first lacks."""


def test_the_fixture_pages_only_weakly_reread() -> None:
    first = Sketch(HISTORY)
    for page in WEAKLY[1:]:
        sketch = Sketch(page)
        assert len(sketch.hashes) >= LONG
        assert WEAK <= sketch.resemblance(first) < NEAR
        assert not sketch.rereads(first)
        assert sketch.weakly_rereads(first)


def test_a_request_back_again_with_only_weak_novelty_between_is_confirmed() -> None:
    """Before: every reading was new by digest and no re-read, so the asks stayed soft however
    often they came back. Now the second repeat in the window, with nothing but weak novelty
    from the others since the ask the first of the two repeats, is hard: the fourth ask (the
    third sees the first page, new, since the first ask; with REPEATS at 1 the third ask would
    be hard on one weak reading)."""
    steps = asked(WEAKLY)
    assert semantic(steps) == [("soft", 2, False), ("soft", 4, False), ("hard", 6, True)]
    hard_one = next(v for v in check_trajectory(steps, SEMANTIC) if v.hard)
    assert (hard_one.code, hard_one.detail["repeats"], hard_one.detail["weak_between"]) == (
        "semantic_repeat", 3, 2)  # three repeats in the window, two weak readings since step 2
    assert hard(steps, STRUCTURAL) == []  # the hash rules are unchanged with semantic off


def test_the_same_request_word_for_word_counts_as_a_repeat_too() -> None:
    """An exact repeat is settled by the hash layer (never embedded), and still counts: the
    fourth identical ask over weak readings is hard, where the content rules see new digests."""
    steps = asked(WEAKLY, asks=[ASKS[0]] * 5)
    assert ("semantic_repeat", 6) in hard(steps)
    found = next(v for v in check_trajectory(steps, SEMANTIC) if v.hard)
    assert (found.detail["matched_step"], found.detail["similarity"]) == (4, 1.0)  # the latest same ask
    assert hard(steps, STRUCTURAL) == []


def test_the_same_request_word_for_word_over_pages_read_back_is_confirmed() -> None:
    """The first round's re-reads between exact repeats: nothing new for the semantic layer, new
    digests for the hash layer, so before this nobody flagged them. The twin with nothing at
    all between (``test_semantic.py``, exact repeats settled by the hash layer) stays the hash
    layer's."""
    reread_again = REREAD.replace("\n- ", " * ")
    assert Sketch(reread_again).rereads(Sketch(REREAD))
    steps = asked([PAGE, REREAD, reread_again], asks=[ASKS[0]] * 4)
    assert hard(steps) == [("semantic_repeat", 6)]
    assert hard(steps, STRUCTURAL) == []


def test_readings_with_a_new_number_each_time_stay_progress() -> None:
    """The same page with a new count each time (a table filling in): new facts are progress
    whatever the resemblance; would fail without the facts test in the weak re-read."""
    counted = [HISTORY, *(_transcribed(12, k) + f"\nshowing {10 * (k + 2)} of 300 observations"
                          for k in range(3))]
    assert all(WEAK <= Sketch(p).resemblance(Sketch(HISTORY)) < NEAR for p in counted[1:])
    assert hard(asked(counted)) == []
    assert hard(asked(counted, asks=[ASKS[0]] * 5)) == []


def test_pages_that_change_more_stay_progress() -> None:
    """Readings below the weak bar (about 0.48: more of the page changed): would fail with
    WEAK at 0.4 (the first value tried on the benchmark)."""
    changed = [HISTORY, *(_transcribed(8, k) for k in range(3))]
    assert all(0.4 <= Sketch(p).resemblance(Sketch(HISTORY)) < WEAK for p in changed[1:])
    assert hard(asked(changed)) == []
    assert hard(asked(changed, asks=[ASKS[0]] * 5)) == []


WITHHELD = [
    "I would rather not give you my booking reference right now, sorry.",
    "I would rather not give you my booking reference at the moment, sorry.",
    "Sorry, but I would rather not give you my booking reference just now.",
    "Not now, sorry: I would rather not give you my booking reference yet.",
]


def test_a_user_who_withholds_and_then_answers_stays_progress() -> None:
    """The agent asks five times; the user withholds four times in other words (about 0.5
    alike: weak, were they long), then gives the reference. Short messages are never weak
    re-reads (a word or two swings their resemblance): would fail without the LONG bound,
    before the answer. The answer is new facts."""
    sketches = [Sketch(w) for w in WITHHELD]
    for i, sketch in enumerate(sketches[1:], 1):  # each as alike to the first as a weak reading
        assert sketch.resemblance(sketches[0]) >= WEAK
        assert all(sketch.resemblance(other) < NEAR for other in sketches[:i])
    answer = Step(node="user", summary="Found it: my booking reference is QX7P2L.")
    assert hard([*asked(WITHHELD, node="user"), answer]) == []
    assert hard([*asked(WITHHELD, asks=[ASKS[0]] * 5, node="user"), answer]) == []


def test_graded_state_told_one_step_per_invoke_is_the_same_decision_and_holds_no_text() -> None:
    steps = asked(WEAKLY)
    found = one_step_per_invoke(steps, SEMANTIC, ("weather", "archive", "treasury", "department", "menu"))
    assert [(v.severity, v.step) for v in found if v.code == "semantic_repeat" and v.node == "planner"] == [
        ("soft", 2), ("soft", 4), ("hard", 6)]
