"""semantic_repeat: the same message in other words, by embeddings (layer 2).

Each message step is compared with the last ``semantic_window`` message steps of the
same node. It *matches* when an earlier one against which it carries no new information
(:mod:`liveguard.core.semantic.novelty`: no new number, identifier or name, no fact that
message lacked, no growth, not a shrinking list of it) has cosine similarity at or above
``semantic_threshold``; the nearest such one is reported.

Suspicion and confirmation (the layered defence): a match is a **suspicion**. It is
**confirmed** when the observations between the repeat and the latest earlier message it
repeats (or the node's previous suspicion in the window, when later: the state came back
then too) brought nothing new either: every tool result, user message and other node's
message in between is one the rule has seen before (by digest, volatile text masked), or
the same text as one seen before with only a counter ticking (every number that changed
went up by exactly one: "revision 3" after "revision 2", "attempt 4 of 5" after "attempt 3
of 5"; "38 passed, 7 failed" then "42 passed, 3 failed" is news), or a **re-read** of one
of the last ``semantic_window`` observations of its node (a browser agent's page read back
with other line breaks, bullets and headings: word 3-shingle resemblance at least 0.7, no
number or identifier the earlier one lacked, not a list worked off or a log that grew;
:class:`~liveguard.core.semantic.novelty.Sketch`), or, for another node's message, is itself a
reworded repeat. The node's own agent is not an observer of itself:
"Orchestrator (-> WebSurfer)" is the agent of "Orchestrator (thought)"
(:func:`~liveguard.core.rules.base.agent_of`). The first suspicion in the
window is a soft finding; from the ``semantic_hard_matches``-th suspicion on, a
**confirmed** one is hard (a liveness code: it vetoes and rolls back), once per window.
An unconfirmed one at that count stays soft (``detail.confirmed`` False): the spin-check
judge (:mod:`liveguard.evaluate.spin`) is asked after soft findings, and a person or the
judge decides. So, with no judge, the layer alone never vetoes a run whose observations
progress. An event older than the rule's memory counts as new (unknown is not "nothing
new").

**Graded confirmation**: the more often a request comes back, the less novelty is needed to
call it a loop. An observation new by digest and no re-read may still bring only **weak
novelty**: a long one (64 distinct word 3-shingles or more) that resembles one of its node's
recent observations at 0.5 or more with no number or identifier that one lacked and not a
list worked off (:meth:`~liveguard.core.semantic.novelty.Sketch.weakly_rereads`: the same page
read again from a new screenshot). From a node's :data:`REPEATS`-th repeat in its window
(a suspicion, or a message word for word the same as one in the window: the hash layer's,
never embedded, but counted here), when everything the others brought since the earliest
message those repeats repeat was nothing new or weak novelty, some of it new by digest (a
re-read or weak novelty: what the hash layer counts as new), the repeat is hard
(``detail.repeats``, ``detail.weak_between``; once per window). A user's withholding replies
are short, so never weak: a re-ask answered at last stays progress, and the answer (new
facts) is new. When nothing new by digest came back, the paths above decide as before.

**The same request answered the same way** (:meth:`SemanticRepeat._answered_alike`): a
suspicion from the ``semantic_hard_matches``-th on is also confirmed when, since what it
repeats, its own agent said nothing new, another agent asked again in other words (that
agent's own suspicion), and nothing new came back between that re-ask and the repeat: a
browser agent sent back to a page it read, told the same thing in other words, and
reading the same page again. The asker's reasoning before it asked again does not count
as news (it led back to the same request). A long message that reads an earlier one back
(:func:`~liveguard.core.semantic.novelty.same_page`) can be a suspicion although its
transcription names facts that one lacks (facts the window had).

Thread state: the rule's windows (digests, hashed novelty features, float16 vectors, the
observations' hashed sketches; never text) are in :meth:`SemanticRepeat.snapshot`, so a
reworded loop told one step per invoke is one loop. A window entry without a vector is
embedded when the snapshot is taken.

Cost: a step whose digest already appears in the node's window is *settled by the
hash layer* (the content rules judge it) and is never embedded. The novelty test runs
first, on words alone: a step that brings a new fact (a number, identifier or name the
window lacks), grows every earlier message, or is the first message of its node, cannot
match whatever its cosine, so it is not embedded either. Otherwise the step is embedded
with only those window messages it could repeat (the candidates) that still lack a
vector. Vectors are cached by digest, so an identical text is embedded once per process.
Offline, :meth:`SemanticRepeat.prefetch` embeds what a run will need in batches first: up
to half the cache at once, the rest in batches of :data:`_AHEAD` (at most half the cache)
as the run reaches them (so a run longer than the cache never has its own vectors evicted
before use).

An embedder that fails is missing evidence: one soft ``semantic_unavailable``
finding (with the error code) and the rule stands down for the run.
"""

from __future__ import annotations

import base64
import contextlib
import re
from collections import OrderedDict, deque
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from xxhash import xxh3_64_hexdigest, xxh3_64_intdigest, xxh3_128_digest

from liveguard.core.fingerprint import Fingerprinter, volatile_mask
from liveguard.core.model import Severity, Violation
from liveguard.core.policy import Policy
from liveguard.core.rules.base import MESSAGE, TOOL, Observation, Pack, Unpack, agent_of, prefix
from liveguard.core.semantic.base import EmbeddingCache, EmbeddingError, SemanticUnavailable
from liveguard.core.semantic.novelty import Info, Sketch, candidates
from liveguard.core.semantic.text import text_of

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["SemanticRepeat", "SemanticStats", "semantic_rules", "threshold_of"]

_EVENTS = 256
"""Observations remembered for the confirmation (index, node, new)."""
_SEEN = 512
"""Observation digests remembered to tell a new one from one seen before."""
_AHEAD = 256
"""Texts of a run's plan embedded together when the run reaches them (:meth:`SemanticRepeat.prefetch`;
at most half the cache)."""
_INFOS = 512
_INFO_CHARS = 8 << 20
"""The novelty features :meth:`SemanticRepeat.prefetch` computed and hands to :meth:`observe`
(not computed twice): at most this many, of at most this many characters of text in all."""
_NODES = 4096
"""Observer nodes whose recent observations are sketched (a bound on unbounded names)."""
_NUMBERS = re.compile(rb"(?<![\w.])[-+]?\d+(?:\.\d+)?")
_WORDS = re.compile(r"[^\W_]+")
"""Words of a tool result, for its frame (:meth:`SemanticRepeat._silent`)."""
"""Numbers in canonical bytes, for the counter test (:func:`_skeleton`)."""
_NOTHING, _NEW, _WEAK, _REREAD, _REPEAT = 0, 1, 2, 3, 4
"""What an observation brought (an event's level): nothing new; something new; only weak
novelty (a long observation that resembles a recent one of its node and names no number or
identifier it lacked, :meth:`~liveguard.core.semantic.novelty.Sketch.weakly_rereads`); nothing
new, though new by digest (a re-read: the hash layer counts it as new); a node's message that
is a reworded repeat of one in its window (a suspicion, new by digest): nothing new, and a
request asked again (:meth:`SemanticRepeat._answered_alike`)."""
REPEATS = 2
"""Repeats of a node's message (reworded or word for word) in its window from which weak
novelty between them is no longer progress (graded confirmation; set on the benchmark's
development split)."""


_Call = tuple[int, str, bytes, bytes, Sketch, tuple[int, ...], bool]
"""A remembered tool call: (index, tool, result digest, args digest, args sketch, chain, reworded)."""


class SemanticStats:
    """Counts for the benchmark and the logs: how each message step was settled."""

    __slots__ = ("embedded", "matched", "messages", "novel", "settled")

    def __init__(self) -> None:
        self.messages = 0  # message steps with text
        self.settled = 0  # exact digest already in the node's window: the hash layer's
        self.novel = 0  # new information against every earlier message, or none to compare: not embedded
        self.embedded = 0  # texts this rule had embedded (cache misses)
        self.matched = 0


class _Entry:
    __slots__ = ("index", "info", "key", "text", "vector")

    def __init__(self, index: int, key: str, text: str | None, info: Info) -> None:
        self.index = index
        self.key = key
        self.text = text  # kept in memory for a lazy embedding; never in evidence or snapshots
        self.info = info
        self.vector: NDArray[np.float32] | None = None


class SemanticRepeat:
    """Soft on a reworded repeat (a suspicion); hard on a confirmed one from the
    ``semantic_hard_matches``-th suspicion in the window (module docstring)."""

    code = "semantic_repeat"

    def __init__(self, policy: Policy, cache: EmbeddingCache) -> None:
        self._cache = cache
        self._threshold = threshold_of(policy)
        self._window = policy.semantic_window
        self._hard = policy.semantic_hard_matches
        self._mask = volatile_mask(policy.volatile)
        self._results = Fingerprinter(policy.ignore_keys, volatile=policy.volatile).raw_digest
        self._history: dict[str, deque[_Entry]] = {}
        self._positions: dict[str, int] = {}
        self._matches: dict[str, deque[int]] = {}
        self._hard_at: dict[str, int] = {}  # position of the node's last hard finding
        self._last_match: dict[str, int] = {}  # step index of the node's last suspicion
        self._events: deque[tuple[int, str, int]] = deque(maxlen=_EVENTS)  # (index, node, level)
        self._seen: deque[bytes] = deque(maxlen=_SEEN)
        self._counters: OrderedDict[str, list[str]] = OrderedDict()  # skeleton -> its numbers
        self._read: dict[str, deque[Sketch]] = {}  # each observer's last observations, sketched
        self._repeats: dict[str, deque[tuple[int, int]]] = {}  # node -> (position, since) of its repeats
        self._tool_repeats, self._tool_window = policy.tool_repeats, policy.tool_window
        # the last tool calls: (index, tool, result digest, args digest, args sketch, chain, reworded)
        self._calls: deque[_Call] = deque(maxlen=policy.tool_window)
        # tool -> (its first result's digest, its frame (hashed words), frame known)
        self._frames: dict[str, tuple[bytes, frozenset[int], bool]] = {}
        # what brought news, for the tool rules: (index, node, 0 a tool result or user message | 1 a message)
        self._news: deque[tuple[int, str, int]] = deque(maxlen=_EVENTS)
        self._speaker = ""  # the node of the last message step: who calls the tools next
        # (tool, outcome digest) -> (caller, [(index, args digest)]): the same error's chain
        self._errors: dict[tuple[str, bytes], tuple[str, list[tuple[int, bytes]]]] = {}
        self._suspected: dict[str, int] = {}  # tool -> index of its last tool-call suspicion
        self._matched = False
        self._last_seen = False  # the last message step's digest was seen before (or a counter ticked)
        self._canonical = Fingerprinter(policy.ignore_keys, volatile=policy.volatile).canonical_bytes
        self._down = False
        self.stats = SemanticStats()
        self._plan: deque[tuple[str, str]] = deque()  # a recorded run's texts still to embed, in order
        self._infos: dict[str, Info] = {}  # novelty features prefetch computed, by digest

    def _info(self, text: str, key: str | None = None) -> Info:
        if key is not None:
            found = self._infos.pop(key, None)
            if found is not None:
                return found
        return Info(self._mask.text(text) if self._mask is not None else text)

    # -- offline: embed a whole run's unsettled steps in batches ----------------------------
    def prefetch(self, observations: Sequence[Observation]) -> None:
        """Fill the cache, in batches, with every text :meth:`observe` will need (same logic)."""
        if self._down:
            return
        recent: dict[str, deque[tuple[str, str, Info]]] = {}
        todo: dict[str, str] = {}  # digest -> text, in order of need
        self._infos = {}
        chars = 0
        for obs in observations:
            text = _message_text(obs)
            if text is None:
                continue
            window = recent.setdefault(obs.node, deque(maxlen=self._window))
            if any(key == obs.key for key, _, _ in window):
                window.append((obs.key, text, next(i for k, _, i in window if k == obs.key)))
                continue
            info = self._info(text)
            if len(self._infos) < _INFOS and chars + len(text) <= _INFO_CHARS:
                self._infos[obs.key] = info  # observe() takes it instead of computing it again
                chars += len(text)
            members = list(window)
            picked = candidates(info, [i for _, _, i in members]) if members else []
            if picked:
                todo.setdefault(obs.key, text)
                for i in picked:
                    todo.setdefault(members[i][0], members[i][1])
            window.append((obs.key, text, info))
        # Up to half the cache now, in order of need; the rest when the run reaches it (_embed).
        plan = list(todo.items())
        first = max(1, self._cache.size // 2)
        self._plan = deque(plan[first:])
        # On failure, observe() meets the same error and reports it as missing evidence.
        with contextlib.suppress(EmbeddingError, SemanticUnavailable):
            self._cache.fill(plan[:first])

    # -- observations: what came back between the repeats -------------------------------------
    def _seen_before(self, digest: bytes) -> bool:
        seen = digest in self._seen
        self._seen.append(digest)
        return seen

    def _ticks(self, node: str, payload: Any) -> bool:
        """True when ``payload`` is an earlier observation of ``node`` with only a counter ticking."""
        try:
            data = self._canonical(payload)
        except Exception:
            return False
        numbers = [m.decode() for m in _NUMBERS.findall(data)]
        key = f"{node}\x00{xxh3_64_hexdigest(_NUMBERS.sub(b'#', data))}"
        earlier = self._counters.pop(key, None)
        self._counters[key] = numbers
        while len(self._counters) > _SEEN:
            self._counters.popitem(last=False)
        if earlier is None or len(earlier) != len(numbers) or earlier == numbers:
            return False
        try:
            return all(a == b or float(b) - float(a) == 1 for a, b in zip(earlier, numbers, strict=True))
        except ValueError:
            return False

    def _tool(self, obs: Observation) -> list[Violation] | None:
        step = obs.step
        found: list[Violation] | None = None
        if step is None:
            level = _NOTHING if self._seen_before(obs.digest) else _NEW
        else:
            payload = (obs.tool, step.result, step.error)
            outcome = self._results(payload)
            if self._seen_before(outcome) or self._ticks(obs.node, payload):
                level = _NOTHING
            else:
                level = self._reread(obs.node, payload)
            found, silent = self._call(obs, step.args, outcome, level)
            if level in (_NEW, _WEAK) and not silent:
                self._news.append((obs.index, obs.node, 0))
        self._events.append((obs.index, obs.node, level))
        return found

    def _call(self, obs: Observation, args: Any, outcome: bytes,
              level: int) -> tuple[list[Violation] | None, bool]:
        """(findings, the result is silent) of one tool call (``level``: what its result brought).

        **The same call in other words**: a tool call whose result is the same as that of one
        of the last ``tool_window`` calls (by digest, volatile text masked) and whose
        arguments are the same or re-read that call's (:meth:`Sketch.rereads` on their
        canonical JSON: resemblance at least ``NEAR``, no number or identifier that call
        lacked) repeats its state. A chain of such repeats reaching ``tool_repeats`` calls,
        one of them reworded (a chain of identical calls is ``tool_no_progress``'s), is hard:
        the request and what came back are both the same.

        **A suspicion** (:meth:`_suspect`): the same tool called with other arguments that
        name nothing its earlier call's lacked, and nothing new came back. **The same error**
        (:meth:`_same_error`): ``tool_same_error``."""
        try:
            data = self._canonical(args)  # masked canonical bytes: what raw_digest hashes
        except Exception:
            return None, False
        sketch = Sketch(data.decode("utf-8", "replace") if args is not None else "")
        exact = xxh3_128_digest(data)  # = self._results(args), without canonicalising twice
        calls = self._calls
        if self._silent(obs.tool or "", outcome, obs.step):
            calls.append((obs.index, obs.tool or "", outcome, exact, sketch, (obs.index,), False))
            return None, True
        prior = list(calls)
        steps: tuple[int, ...] = (obs.index,)
        reworded = False
        oldest = calls[1][0] if len(calls) == calls.maxlen and len(calls) > 1 else -1
        for _, tool, result, args_digest, earlier, links, near in reversed(calls):
            if tool != (obs.tool or "") or result != outcome:
                continue
            same = args_digest == exact
            if same or sketch.rereads(earlier):
                steps = (*(i for i in links if i >= oldest), obs.index)  # the chain within the window
                reworded = near or not same
                break
        calls.append((obs.index, obs.tool or "", outcome, exact, sketch, steps, reworded))
        if len(steps) == self._tool_repeats and reworded:
            return [Violation(
                code=self.code, severity="hard", step=obs.index, node=obs.node, count=len(steps),
                detail={"kind": "tool_call", "tool": obs.tool, "digest": prefix(outcome.hex()),
                        "steps": list(steps), "window": self._tool_window, "confirmed": True,
                        "new_between": 0},
            )], False
        same_error = self._same_error(obs, exact, outcome)
        if same_error is not None:
            return same_error, False
        return self._suspect(obs, prior, (exact, sketch, outcome), level), False

    def _suspect(self, obs: Observation, prior: Sequence[_Call], call: tuple[bytes, Sketch, bytes],
                 level: int) -> list[Violation] | None:
        """A suspicion over tool calls: the same tool, called among the last ``tool_window``
        calls with other arguments that name no number or identifier the earlier call's
        lacked (a reworded query, not another id), and nothing new came back (the same
        result, or one that re-reads a recent one). A soft ``semantic_repeat``
        (``detail.kind`` ``tool_call``), once per tool in its window: the spin check is
        asked, and only the judge or a person makes it hard."""
        if level not in (_NOTHING, _REREAD):
            return None
        exact, sketch, outcome = call  # the call's arguments (digest, sketch) and result digest
        tool = obs.tool or ""
        matched = next((index for index, name, result, args, earlier, _, _ in reversed(prior)
                        if name == tool and args != exact and (result == outcome or level == _REREAD)
                        and sketch.facts <= earlier.facts and sketch.caps <= earlier.words), None)
        if matched is None:
            return None
        last = self._suspected.get(tool)
        if last is not None and any(index == last for index, *_ in prior):
            return None  # once per tool in its window
        if len(self._suspected) >= _NODES and tool not in self._suspected:
            self._suspected.pop(next(iter(self._suspected)))
        self._suspected[tool] = obs.index
        return [Violation(
            code=self.code, severity="soft", step=obs.index, node=obs.node, count=1,
            detail={"kind": "tool_call", "tool": obs.tool, "digest": prefix(outcome.hex()),
                    "matched_step": matched, "window": self._tool_window, "confirmed": False,
                    "reread": level == _REREAD},
        )]

    def _same_error(self, obs: Observation, exact: bytes, outcome: bytes) -> list[Violation] | None:
        """``tool_same_error``: the same error (by digest, volatile text masked) from the same
        tool ``tool_repeats`` times, with varying arguments (not all the same: that is
        ``tool_no_progress``'s), and nothing new between them: no new tool result, no new
        user message, no new message from anyone but the agent that calls the tool (the last
        to speak before the chain began). Hard: the agent keeps trying and nothing new comes
        back. A different error, a new result, or a user's new answer between starts the
        chain again."""
        step = obs.step
        if step is None or not (obs.failed or _reads_as_error(step.result)):
            return None
        key = (obs.tool or "", outcome)
        chain = self._errors.pop(key, None)
        if chain is not None and self._news_between(chain[1][-1][0], obs.index, chain[0]):
            chain = None
        if chain is None:
            chain = (self._speaker, [])
        links = chain[1]
        links.append((obs.index, exact))
        del links[:-self._tool_repeats]
        if len(links) >= self._tool_repeats and len({args for _, args in links}) > 1:
            return [Violation(
                code="tool_same_error", severity="hard", step=obs.index, node=obs.node, count=len(links),
                detail={"tool": obs.tool, "digest": prefix(outcome.hex()),
                        "steps": [index for index, _ in links],
                        "distinct_args": len({args for _, args in links}), "new_between": 0},
            )]
        if len(self._errors) >= _NODES:
            self._errors.pop(next(iter(self._errors)))
        self._errors[key] = chain
        return None

    def _news_between(self, since: int, until: int, caller: str) -> bool:
        """True when something new came back between steps ``since`` and ``until``: a new
        tool result (not a silent one), a new user message, or a new message from an agent
        other than ``caller``'s. An event older than the memory counts as new."""
        news = self._news
        if len(news) == news.maxlen and news[0][0] > since:
            return True
        agent = agent_of(caller) if caller else None
        return any(since < index < until and (kind == 0 or agent_of(node) != agent)
                   for index, node, kind in news)

    def _silent(self, tool: str, outcome: bytes, step: Any) -> bool:
        """True when the result says nothing beyond the tool's frame, the words every
        distinct result of the tool has said ("returncode", "output"): an empty output, a
        bare success. Such a result is no state, so a call that returns it repeats none (a
        silent edit is not a loop by its silence). Before the tool's second distinct result
        its frame is unknown and every word counts."""
        parts = [p for p in (step.result, step.error) if p is not None]
        try:
            text = "\n".join(p if isinstance(p, str) else self._canonical(p).decode("utf-8", "replace")
                             for p in parts)
        except Exception:
            return False
        if self._mask is not None:
            text = self._mask.text(text)
        words = {xxh3_64_intdigest(w.encode("utf-8", "surrogatepass")) for w in _WORDS.findall(text.lower())
                 if len(w) > 1 or not w.isdigit()}  # hashed: the frame goes into snapshots
        frame = self._frames.get(tool)
        if frame is None:
            if len(self._frames) >= _NODES:
                self._frames.pop(next(iter(self._frames)))
            self._frames[tool] = (outcome, frozenset(words), False)
            return not words
        first, common, known = frame
        if outcome != first:
            common, known = common & words, True
            self._frames[tool] = (first, common, known)
        return not (words - common if known else words)

    def _reread(self, node: str, payload: Any) -> int:
        """The level of ``payload`` (an observation new by digest) against ``node``'s last
        ``semantic_window`` observations (:class:`~liveguard.core.semantic.novelty.Sketch`):
        ``_REREAD`` when it re-reads one (the same page read back re-rendered: nothing new),
        ``_WEAK`` when it only weakly re-reads one, else ``_NEW``. Every call records the
        observation."""
        parts = payload if isinstance(payload, tuple) else (payload,)
        texts: list[str] = []
        for part in parts:  # a text as it reads (its lines kept); other data as canonical JSON
            if part is None:
                continue
            if isinstance(part, str):
                texts.append(self._mask.text(part) if self._mask is not None else part)
                continue
            try:
                texts.append(self._canonical(part).decode("utf-8", "replace"))
            except Exception:
                return _NEW
        sketch = Sketch("\n".join(texts))
        recent = self._read.get(node)
        if recent is None:
            recent = self._read[node] = deque(maxlen=self._window)
            if len(self._read) > _NODES:  # unbounded node names: keep the table bounded
                self._read.pop(next(iter(self._read)))
        words: set[int] = set()
        for earlier in recent:
            words |= earlier.words
        if any(sketch.rereads(earlier, words) for earlier in recent):
            level = _REREAD
        elif any(sketch.weakly_rereads(earlier, words) for earlier in recent):
            level = _WEAK
        else:
            level = _NEW
        recent.append(sketch)
        return level

    def _confirmed(self, obs: Observation, since: int, strong: bool = False) -> tuple[bool, int]:
        """(nothing new came back between step ``since`` and ``obs``, how many new things did).
        ``strong``: count only observations that brought more than weak novelty."""
        events = self._events
        if since < obs.index and (not events or events[0][0] > since + 1):
            return False, -1  # older than the memory: unknown is not "nothing new"
        agent = agent_of(obs.node)
        fresh = sum(1 for index, node, level in events
                    if (level == _NEW or (level == _WEAK and not strong))
                    and agent_of(node) != agent and since < index < obs.index)
        return fresh == 0, fresh

    def _answered_alike(self, obs: Observation, since: int) -> bool:
        """The same request answered the same way: between step ``since`` and ``obs`` (a
        suspicion of its node), the node's own agent said nothing new (its other messages
        were repeats too), another agent asked again in other words (a suspicion of that
        agent's node: :data:`_REPEAT`), and nothing new came back between that re-ask and
        ``obs``. What the asker said before asking again (its reasoning over the last
        answer) does not count: it led back to the same request, which got the same answer.
        An event older than the memory is unknown, so not confirmed."""
        events = self._events
        if not events or events[0][0] > since + 1:
            return False
        agent = agent_of(obs.node)
        between = [(index, node, level) for index, node, level in events if since < index < obs.index]
        if any(level in (_NEW, _WEAK) for index, node, level in between if agent_of(node) == agent):
            return False
        asked = [index for index, node, level in between if level == _REPEAT and agent_of(node) != agent]
        if not asked:
            return False
        return not any(level in (_NEW, _WEAK) for index, node, level in between if index > asked[-1])

    def _unseen(self, obs: Observation, since: int) -> tuple[int, int]:
        """(observations of the others between step ``since`` and ``obs`` new by digest yet
        weak novelty or re-reads, of them weak novelty)."""
        agent = agent_of(obs.node)
        levels = [level for index, node, level in self._events
                  if level in (_WEAK, _REREAD, _REPEAT) and agent_of(node) != agent
                  and since < index < obs.index]
        return len(levels), levels.count(_WEAK)

    def _repeat(self, node: str, position: int, since: int) -> int:
        """Record a repeat of ``node``'s message at ``position`` (of an earlier one at step
        ``since``); the step from which the graded confirmation looks: the earliest earlier
        message repeated by the node's last :data:`REPEATS` repeats in the window, or -1 when
        the window holds fewer repeats."""
        repeats = self._repeats.get(node)
        if repeats is None:
            repeats = self._repeats[node] = deque(maxlen=self._window)
        while repeats and repeats[0][0] <= position - self._window:
            repeats.popleft()
        repeats.append((position, since))
        if len(repeats) < REPEATS:
            return -1
        return min(s for _, s in list(repeats)[-REPEATS:])

    # -- the rule -------------------------------------------------------------------------
    def observe(self, obs: Observation) -> list[Violation] | None:
        if self._down:
            return None
        if obs.kind == TOOL:
            return self._tool(obs)
        text = _message_text(obs)
        if text is None:
            return None
        if obs.user:  # a user's message: an observation, new when its text is new
            level = _NOTHING if self._seen_before(obs.digest) else self._reread(obs.node, text)
            self._events.append((obs.index, obs.node, level))
            if level in (_NEW, _WEAK):
                self._news.append((obs.index, obs.node, 0))
            return None
        self._matched = False
        found = self._message(obs, text)
        if found is not None:  # a reworded repeat of its node: nothing new, for the others
            level = _NOTHING if self._last_seen else _REPEAT if self._matched else _REREAD
            self._events.append((obs.index, obs.node, level))
        last = self._events[-1] if self._events else None
        if last is not None and last[0] == obs.index and last[2] in (_NEW, _WEAK):
            self._news.append((obs.index, obs.node, 1))
        self._speaker = obs.node
        return found or None

    def _message(self, obs: Observation, text: str) -> list[Violation] | None:
        """The node's own comparison; None when the message was new (recorded as such)."""
        stats = self.stats
        stats.messages += 1
        node = obs.node
        history = self._history.get(node)
        if history is None:
            history = self._history[node] = deque(maxlen=self._window)
        position = self._positions.get(node, 0)
        self._positions[node] = position + 1
        seen = self._seen_before(obs.digest)
        seen = self._ticks(node, text) or seen
        self._last_seen = seen  # for observe(): a repeat new by digest is a re-read for the hash layer
        for entry in history:
            if entry.key == obs.key:  # settled by the hash layer: no embedding, no finding ...
                stats.settled += 1
                same = _Entry(obs.index, obs.key, entry.text, entry.info)
                same.vector = entry.vector
                last = max((e for e in history if e.key == obs.key), key=lambda e: e.index)
                history.append(same)
                # ... unless it is the REPEATS-th repeat with only weak novelty between
                return self._graded(obs, position, last, 1.0, self._repeat(node, position, last.index))
        info = self._info(text, obs.key)
        current = _Entry(obs.index, obs.key, text, info)
        members = [e for e in history if e.vector is not None or e.text is not None]
        picked = [members[i] for i in candidates(info, [e.info for e in members])] if members else []
        history.append(current)
        if not picked:
            stats.novel += 1  # new information against every earlier message: nothing to embed
            self._events.append((obs.index, node, _NOTHING if seen else self._reread(node, text)))
            return None
        try:
            self._embed([current, *picked])
        except (EmbeddingError, SemanticUnavailable) as exc:
            self._down = True
            reason = exc.code if isinstance(exc, EmbeddingError) else "unavailable"
            return [
                Violation(
                    code="semantic_unavailable", severity="soft", step=obs.index, node=node, count=0,
                    detail={"reason": reason, "embedder": self._cache.embedder.name},
                )
            ]
        vector = current.vector
        assert vector is not None
        best: _Entry | None = None
        best_sim = -1.0
        latest = -1  # the latest earlier message it repeats: the confirmation looks after it
        for entry in picked:
            if entry.vector is None:
                continue
            sim = float(entry.vector @ vector)
            if sim > best_sim:
                best, best_sim = entry, sim
            if sim >= self._threshold:
                latest = max(latest, entry.index)
        if best is None or best_sim < self._threshold:
            self._events.append((obs.index, node, _NOTHING if seen else self._reread(node, text)))
            return None
        stats.matched += 1
        self._matched = True
        return self._match(obs, position, best, best_sim, latest)

    def _match(self, obs: Observation, position: int, best: _Entry, sim: float,
               latest: int) -> list[Violation]:
        """Count a suspicion in the node's window: soft on the first; hard on a confirmed one
        from the ``hard``-th on (once per window); an unconfirmed one at that count is soft."""
        node = obs.node
        matches = self._matches.get(node)
        if matches is None:
            matches = self._matches[node] = deque()
        while matches and matches[0] <= position - self._window:
            matches.popleft()
        if matches:  # the node's previous suspicion in the window: the state came back then too
            latest = max(latest, self._last_match.get(node, -1))
        matches.append(position)
        self._last_match[node] = obs.index
        count = len(matches)
        graded_since = self._repeat(node, position, latest)
        confirmed, fresh = self._confirmed(obs, latest)
        if not confirmed and count >= self._hard:
            confirmed = self._answered_alike(obs, latest)
        last_hard = self._hard_at.get(node)
        severity: Severity | None = None
        if not confirmed and graded_since >= 0:  # weak novelty between may not be enough
            graded = self._graded(obs, position, best, sim, graded_since)
            if graded:
                return graded
        if count >= self._hard and (last_hard is None or last_hard <= position - self._window):
            if confirmed:
                severity = "hard"
                self._hard_at[node] = position
            elif count == self._hard:
                severity = "soft"
        elif count == 1:
            severity = "soft"
        if severity is None:
            return []
        return [self._finding(obs, best, sim, severity, count, confirmed=confirmed, new_between=fresh)]

    def _finding(self, obs: Observation, best: _Entry, sim: float, severity: Severity, count: int,
                 **extra: Any) -> Violation:
        """A ``semantic_repeat`` finding: codes, digests, indices and counts, never text."""
        return Violation(
            code=self.code, severity=severity, step=obs.index, node=obs.node, count=count,
            detail={
                "similarity": round(sim, 3),
                "matched_step": best.index,
                "digest": prefix(obs.key),
                "matched_digest": prefix(best.key),
                "threshold": self._threshold,
                "window": self._window,
                "embedder": self._cache.embedder.name,
                **extra,
            },
        )

    def _graded(self, obs: Observation, position: int, best: _Entry, sim: float,
                since: int) -> list[Violation]:
        """Graded confirmation: the node's :data:`REPEATS`-th repeat in its window (reworded or
        exact; ``since`` from :meth:`_repeat`), with nothing more than weak novelty from the
        others since the earliest message those repeats repeat, some of it new by digest (weak
        novelty or a re-read; else the hash layer and the paths above decide), is hard (once
        per window); otherwise no finding."""
        node = obs.node
        if since < 0:
            return []
        last_hard = self._hard_at.get(node)
        if last_hard is not None and last_hard > position - self._window:
            return []
        confirmed, _ = self._confirmed(obs, since, strong=True)
        if not confirmed:
            return []
        unseen, weak = self._unseen(obs, since)
        if not unseen:  # nothing new by digest came back: the hash layer's and the paths above
            return []
        self._hard_at[node] = position
        repeats = len(self._repeats[node])
        return [self._finding(obs, best, sim, "hard", repeats, confirmed=True, new_between=0,
                              weak_between=weak, repeats=repeats)]

    def _embed(self, entries: Sequence[_Entry]) -> None:
        """Give every entry its vector: cached ones free, the rest in one embed() call."""
        cache = self._cache
        missing = [e for e in entries if e.vector is None and e.text is not None
                   and cache.get(e.key) is None]
        if missing:
            todo = [(e.key, e.text) for e in missing if e.text is not None]
            plan = self._plan
            ahead = len(missing) + min(_AHEAD, cache.size // 2)
            while plan and len(todo) < ahead:  # the run's next texts, in one batch
                todo.append(plan.popleft())
            cache.fill(todo)
            self.stats.embedded += len({e.key for e in missing})
        for entry in entries:
            if entry.vector is None and entry.text is not None:
                entry.vector = cache.vector(entry.key, entry.text)

    def finish(self) -> list[Violation] | None:
        return None

    # -- thread state -------------------------------------------------------------------------
    def snapshot(self, pack: Pack) -> Any:
        """The windows as plain data: digests, hashed novelty features, float16 vectors."""
        entries = [e for history in self._history.values() for e in history]
        if not self._down:
            with contextlib.suppress(EmbeddingError, SemanticUnavailable):
                self._embed(entries)  # an entry left without a vector cannot be compared later
        history = {
            str(pack(node)): [[e.index, pack(e.key), e.info.pack(), _vec_out(e.vector)] for e in window]
            for node, window in self._history.items()
        }
        return {
            "h": history,
            "p": {str(pack(node)): n for node, n in self._positions.items()},
            "m": {str(pack(node)): list(m) for node, m in self._matches.items()},
            "x": {str(pack(node)): n for node, n in self._hard_at.items()},
            "i": {str(pack(node)): n for node, n in self._last_match.items()},
            "e": [[index, pack(node), level] for index, node, level in self._events],
            "d": [digest.hex() for digest in self._seen],
            "c": [[key, numbers] for key, numbers in self._counters.items()],
            "r": {str(pack(node)): [s.pack() for s in recent] for node, recent in self._read.items()},
            "k": {str(pack(node)): [list(r) for r in repeats] for node, repeats in self._repeats.items()},
            "t": [[index, pack(tool), result.hex(), args.hex(), sketch.pack(), list(chain), int(near)]
                  for index, tool, result, args, sketch, chain, near in self._calls],
            "f": [[pack(tool), first.hex(), sorted(common), int(known)]
                  for tool, (first, common, known) in self._frames.items()],
            "n": [[index, pack(node), kind] for index, node, kind in self._news],
            "sp": pack(self._speaker),
            "er": [[pack(tool), outcome.hex(), pack(caller), [[i, a.hex()] for i, a in links]]
                   for (tool, outcome), (caller, links) in self._errors.items()],
            "su": {str(pack(tool)): index for tool, index in self._suspected.items()},
        }

    def restore(self, data: Any, unpack: Unpack) -> None:
        self._history = {}
        for node, window in data["h"].items():
            history = self._history[unpack(int(node))] = deque(maxlen=self._window)
            for index, key, info, vector in window:
                entry = _Entry(int(index), unpack(key), None, Info.unpack(info))
                entry.vector = _vec_in(vector)
                history.append(entry)
        self._positions = {unpack(int(node)): int(n) for node, n in data["p"].items()}
        self._matches = {unpack(int(node)): deque(int(x) for x in m) for node, m in data["m"].items()}
        self._hard_at = {unpack(int(node)): int(n) for node, n in data["x"].items()}
        self._last_match = {unpack(int(node)): int(n) for node, n in data["i"].items()}
        self._events = deque(((int(i), unpack(node), int(level)) for i, node, level in data["e"]),
                             maxlen=_EVENTS)
        self._seen = deque((bytes.fromhex(d) for d in data["d"]), maxlen=_SEEN)
        self._counters = OrderedDict((str(key), [str(n) for n in numbers]) for key, numbers in data["c"])
        self._read = {unpack(int(node)): deque((Sketch.unpack(s) for s in recent), maxlen=self._window)
                      for node, recent in data.get("r", {}).items()}
        self._repeats = {unpack(int(node)): deque(((int(p), int(s)) for p, s in repeats), maxlen=self._window)
                         for node, repeats in data.get("k", {}).items()}
        self._calls = deque(((int(index), unpack(tool), bytes.fromhex(result), bytes.fromhex(args),
                              Sketch.unpack(sketch), tuple(int(i) for i in chain), bool(near))
                             for index, tool, result, args, sketch, chain, near in data.get("t", [])),
                            maxlen=self._tool_window)
        self._frames = {unpack(tool): (bytes.fromhex(first), frozenset(int(w) for w in common), bool(known))
                        for tool, first, common, known in data.get("f", [])}
        self._news = deque(((int(i), unpack(node), int(kind)) for i, node, kind in data.get("n", [])),
                           maxlen=_EVENTS)
        self._speaker = unpack(int(data["sp"])) if "sp" in data else ""
        self._errors = {(unpack(tool), bytes.fromhex(outcome)):
                        (unpack(caller), [(int(i), bytes.fromhex(a)) for i, a in links])
                        for tool, outcome, caller, links in data.get("er", [])}
        self._suspected = {unpack(int(tool)): int(index) for tool, index in data.get("su", {}).items()}


def _vec_out(vector: NDArray[np.float32] | None) -> str | None:
    if vector is None:
        return None
    import numpy as np

    return base64.b64encode(np.asarray(vector, dtype="<f2").tobytes()).decode("ascii")


def _vec_in(text: str | None) -> NDArray[np.float32] | None:
    if text is None:
        return None
    import numpy as np

    vector = np.frombuffer(base64.b64decode(text), dtype="<f2").astype(np.float32)
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector


_ERROR_TEXT = re.compile(r"\A\s*(?:error|exception|traceback|fatal)\b", re.IGNORECASE)


def _reads_as_error(result: Any) -> bool:
    """A tool result that reports a failure in its own words: text that opens with "Error",
    "Exception", "Traceback" or "Fatal" (tau-bench's "Error: flight HAT030 not available"),
    or a mapping with a non-empty ``error`` (a step's own ``error`` is ``obs.failed``)."""
    if isinstance(result, str):
        return _ERROR_TEXT.match(result) is not None
    if isinstance(result, Mapping):
        return bool(result.get("error"))
    return False


def _message_text(obs: Observation) -> str | None:
    if obs.kind != MESSAGE:
        return None
    content: Any = obs.content
    return text_of(content) if content is not None else None


def threshold_of(policy: Policy) -> float:
    """The cosine threshold the layer uses: ``policy.semantic_threshold``, except that at its
    default (0.675, tuned for MiniLM) an embedder with a threshold tuned for its own cosines
    (:func:`~liveguard.core.semantic.registry.threshold_for`: ``"static"``'s is 0.825) uses that:
    ``Policy(semantic=True, semantic_embedder="static")`` is the static embedder as tuned."""
    from liveguard.core.semantic.registry import threshold_for

    threshold = policy.semantic_threshold
    if threshold == Policy.model_fields["semantic_threshold"].default:
        tuned = threshold_for(policy.semantic_embedder)
        if tuned is not None:
            return tuned
    return threshold


def semantic_rules(policy: Policy, allow_set: Any = None) -> list[Any]:
    """The semantic layer's rules for one run (called by ``rules.build``)."""
    from liveguard.core.semantic.registry import cache_for

    cache = cache_for(policy.semantic_embedder)  # loads the model, or raises SemanticUnavailable
    rules: list[Any] = []
    if policy.enabled:
        rules.append(SemanticRepeat(policy, cache))
    roles = getattr(allow_set, "roles", None)
    if roles:
        from liveguard.core.rules.roles import RoleDrift

        rules.append(RoleDrift(policy, roles, cache))
    return rules
