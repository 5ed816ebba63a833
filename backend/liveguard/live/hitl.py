"""One decision model for every hold, in LangChain 1.x's human-in-the-loop shape.

liveguard holds a thread for a person in two situations: the approval gate (a draft waits
to be sent) and a liveness stop with ``exit_behavior="interrupt"`` (``guard()`` and the
middleware). Both interrupt with the value :func:`approval_request` or
:func:`liveness_request` builds: a valid LangChain ``HITLRequest`` (one ``action_request``
with a ``description`` in words, one matching ``review_config``), so Agent Chat UI and
Agent Inbox show it and can answer it. liveguard's own evidence rides in extra keys::

    {"action_requests": [{"name": "send_draft", "args": {"draft": "..."},
                          "description": "liveguard holds this draft for a person: ..."}],
     "review_configs": [{"action_name": "send_draft",
                         "allowed_decisions": ["approve", "edit", "reject"]}],
     "kind": "liveguard.approval", "codes": ["content_cycle"],
     "reasons": ["autoapprove_off", "hard:content_cycle"], "verdict": {...},
     "edit_key": "draft", "interrupt_id": null}

The answer is LangChain's ``HITLResponse``, ``{"decisions": [{"type": ...}]}``, with
optional ``by`` and ``note`` for the audit record (beside ``decisions`` or inside the
decision). :func:`parse_resume` turns it into one typed :data:`ReviewDecision`
(:class:`Approve`, :class:`Edit`, :class:`Reject`, :class:`Respond`) or, for anything
malformed, a :class:`InvalidDecision` value that names the location; it never raises, so a
bad answer can never switch a guard off. The caller re-interrupts with
:func:`with_error` (:func:`ask` does the whole loop inside a node). Also accepted, because
review UIs send them: a bare decision (LangChain's ``per_call`` mode) and Agent Inbox's
older ``[{"type": "accept" | "edit" | "ignore" | "response", "args": ...}]``.

Nothing from LangGraph or LangChain is imported at module import time; the TypedDicts
below mirror LangChain's (a test validates every built value against LangChain's own).
Privacy: a request carries codes, reasons, counts, node names and step indices; the only
text is the draft itself, in the approval request's ``args``.
"""

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, NotRequired, cast

from typing_extensions import TypedDict  # pydantic validates it on Python < 3.12

from liveguard.errors import SCHEMA_KEYS, safe_key

if TYPE_CHECKING:
    from liveguard.live.notify import Notifier

__all__ = [
    "APPROVAL_ACTION",
    "APPROVAL_KIND",
    "LIVENESS_ACTION",
    "LIVENESS_KIND",
    "Action",
    "ActionRequest",
    "Approve",
    "DecisionType",
    "Edit",
    "HoldRequest",
    "InvalidDecision",
    "Reject",
    "Respond",
    "ReviewConfig",
    "ReviewDecision",
    "aask",
    "approval_request",
    "ask",
    "describe_code",
    "describe_reason",
    "liveness_request",
    "parse_resume",
    "to_hitl_decision",
    "to_hitl_response",
    "with_error",
]

log = logging.getLogger("liveguard.hitl")

DecisionType = Literal["approve", "edit", "reject", "respond"]
APPROVAL_KIND: Final = "liveguard.approval"
LIVENESS_KIND: Final = "liveguard.liveness"
APPROVAL_ACTION: Final = "send_draft"
"""The approval gate's action: sending the draft in ``args["draft"]``."""
LIVENESS_ACTION: Final = "continue_run"
"""A liveness stop's action: running the next step after the stop."""
_REVIEW: Final[list[DecisionType]] = ["approve", "edit", "reject"]
_EVIDENCE_ARGS: Final = frozenset({"code", "step", "node", "count"})
_AUDIT_KEYS: Final = frozenset({"by", "note"})


# -- the wire shapes (LangChain's, mirrored) ---------------------------------------------------
class Action(TypedDict):
    """LangChain's ``Action``: what an ``edit`` decision carries."""

    name: str
    args: dict[str, Any]


class ActionRequest(TypedDict):
    """LangChain's ``ActionRequest``."""

    name: str
    args: dict[str, Any]
    description: NotRequired[str]


class ReviewConfig(TypedDict):
    """LangChain's ``ReviewConfig``."""

    action_name: str
    allowed_decisions: list[DecisionType]
    args_schema: NotRequired[dict[str, Any]]


class HoldRequest(TypedDict):
    """A LangChain ``HITLRequest`` plus liveguard's evidence (extra keys).

    ``kind`` is :data:`APPROVAL_KIND` or :data:`LIVENESS_KIND`; ``codes`` the violation
    codes; ``reasons`` why a person is asked (codes); ``edit_key`` the ``args`` key an edit
    must carry; ``interrupt_id`` the hold's interrupt id where it is known when the request
    is built (``guard()``'s fixed one), else None: the ``Interrupt`` itself carries it.
    ``verdict`` (approval) is the verdict row; ``digest`` (approval) the digest of the draft
    and its ``recipient`` that a decision is bound to (only that is sent); ``pinned_only``
    (approval, a question asked again after the draft changed) says that only an answer pinned
    to this interrupt's id is taken; ``step``/``node``/``count`` (liveness) say
    where the run stopped and ``detail`` the violation's detail; ``error`` is set on a re-ask
    after a malformed answer.
    """

    action_requests: list[ActionRequest]
    review_configs: list[ReviewConfig]
    kind: str
    codes: list[str]
    reasons: list[str]
    edit_key: str
    interrupt_id: str | None
    verdict: NotRequired[dict[str, Any]]
    digest: NotRequired[str]
    recipient: NotRequired[Any]
    pinned_only: NotRequired[bool]
    step: NotRequired[int]
    node: NotRequired[str | None]
    count: NotRequired[int]
    detail: NotRequired[dict[str, Any]]
    error: NotRequired[str]


if TYPE_CHECKING:  # mypy proves the mirror: a HoldRequest is a LangChain HITLRequest
    from langchain.agents.middleware.human_in_the_loop import HITLRequest as _LCRequest

    def _is_hitl_request(request: HoldRequest) -> _LCRequest:
        return request


# -- the typed decisions -----------------------------------------------------------------------
@dataclass(frozen=True)
class Approve:
    """Send the draft / continue the run."""

    by: str | None = None
    note: str | None = None
    type: Literal["approve"] = field(default="approve", init=False)


@dataclass(frozen=True)
class Edit:
    """Send the edited draft / continue with the edit. ``args`` is ``edited_action.args``."""

    name: str
    args: Mapping[str, Any]
    edit_key: str
    by: str | None = None
    note: str | None = None
    type: Literal["edit"] = field(default="edit", init=False)

    @property
    def value(self) -> Any:
        """The edited value: the new draft, the message or the state update (else all args)."""
        return self.args[self.edit_key] if self.edit_key else dict(self.args)


@dataclass(frozen=True)
class Reject:
    """Do not send / end the run; ``message`` is the person's optional reason."""

    message: str | None = None
    by: str | None = None
    note: str | None = None
    type: Literal["reject"] = field(default="reject", init=False)


@dataclass(frozen=True)
class Respond:
    """Answer in place of the action (LangChain's ``respond``); liveguard's holds do not allow it."""

    message: str
    by: str | None = None
    note: str | None = None
    type: Literal["respond"] = field(default="respond", init=False)


ReviewDecision = Approve | Edit | Reject | Respond


@dataclass(frozen=True)
class InvalidDecision:
    """A resume value that is not a valid decision: where, and what is wrong.

    A value, not an exception: the caller re-interrupts with :func:`with_error`, so the
    thread stays held and the guard stays on. ``str()`` is ``"location: reason"``; the
    reason names types and keys, never the answer's text.
    """

    location: str
    reason: str

    def __str__(self) -> str:
        return f"{self.location}: {self.reason}"


# -- words for codes ---------------------------------------------------------------------------
_CODE_WORDS: Final[Mapping[str, str]] = {
    "node_revisit_cycle": "the same node ran again and again within the window",
    "no_progress_stall": "consecutive steps repeated the same node and summary",
    "repeated_content": "the same message was produced again and again",
    "content_cycle": "the messages went round a cycle of the same contents",
    "tool_no_progress": "the same tool call returned the same result again and again",
    "illegal_transition": "the run took a transition the allow-set forbids",
    "excessive_loop": "a node ran more often than the allow-set allows",
    "dead_end": "the run ended on a node the allow-set does not allow to end",
    "semantic_repeat": "the messages repeated themselves in other words",
    "tool_same_error": "the same tool kept failing with the same error, with nothing new between",
    "tool_entropy_collapse": "the run kept calling the same few tools",
    "evaluator_injection_suspected": "the run's text looks like an instruction to the evaluator",
}
_REASON_WORDS: Final[Mapping[str, str]] = {
    "autoapprove_off": "auto-approval is off (AGENT_EVAL_AUTOAPPROVE is not 1)",
    "autoapprove_check_error": "the auto-approval check itself failed",
    "hard": "a hard violation",
    "soft": "a soft violation",
    "unjudged": "evidence is missing",
    "judge_error": "a judge failed",
    "judges_skipped": "the judges did not run",
    "not_passed": "the verdict did not pass",
    "not_cleared": "the verdict did not clear auto-approval",
    "no_steps": "the run has no steps",
    "no_allowset": "no allow-set matches the graph",
    "rule_family_off": "a rule family is switched off",
    "semantic_unavailable": "the semantic layer failed",
}


def describe_code(code: str) -> str:
    """A violation code in words (``code`` itself, in words, for one liveguard does not know)."""
    words = _CODE_WORDS.get(code)
    return f"{code} ({words})" if words else f"{code} (a liveguard rule fired)"


def describe_reason(reason: str) -> str:
    """A hold reason code (``prefix:detail``) in words; the code stays in the text."""
    prefix, _, detail = reason.partition(":")
    if prefix in ("hard", "soft") and detail:
        return f"{_REASON_WORDS[prefix]}: {describe_code(detail)}"
    words = _REASON_WORDS.get(prefix)
    if words is None:
        return reason
    return f"{words} [{reason}]"


# -- building the requests ---------------------------------------------------------------------
def _review(name: str) -> ReviewConfig:
    return {"action_name": name, "allowed_decisions": list(_REVIEW)}


def _codes_of(verdict: Mapping[str, Any] | None) -> list[str]:
    rows = (verdict or {}).get("violations") or []
    return sorted({str(v.get("code")) for v in rows if isinstance(v, Mapping) and v.get("code")})


def approval_request(
    draft: Any,
    *,
    reasons: Sequence[str],
    verdict: Mapping[str, Any] | None = None,
    codes: Sequence[str] | None = None,
    interrupt_id: str | None = None,
    digest: str | None = None,
    recipient: Any = None,
    pinned_only: bool = False,
) -> HoldRequest:
    """The approval gate's interrupt value: one ``send_draft`` action, the draft in ``args``.

    ``reasons`` are :func:`liveguard.live.approval.reasons_for` codes; ``verdict`` the verdict row
    (``liveguard score --format json``); ``codes`` default to the verdict's violation codes.
    ``digest`` (the draft and recipient a decision is bound to), ``recipient`` (shown when not
    None) and ``pinned_only`` are kept in extra keys.
    The description says in words why a person is asked, from codes only.
    """
    found = sorted(set(codes)) if codes is not None else _codes_of(verdict)
    why = [describe_reason(r) for r in reasons] or ["the verdict did not clear auto-approval"]
    lines = [
        "liveguard holds this draft for a person before it is sent.",
        "Why: " + "; ".join(why) + ".",
    ]
    named = {r.partition(":")[2] for r in reasons if r.startswith(("hard:", "soft:"))}
    others = [c for c in found if c not in named]
    if others:
        lines.append("Also found: " + "; ".join(describe_code(c) for c in others) + ".")
    missing = [str(m) for m in (verdict or {}).get("missing") or []]
    if missing:
        lines.append("Missing evidence: " + ", ".join(missing) + ".")
    lines.append("Approve sends the draft; edit sends args.draft instead; reject does not send it.")
    if pinned_only:
        lines.append("The draft or its recipient changed after an earlier question: this question "
                     "takes only an answer pinned to its interrupt id "
                     "(Command(resume={interrupt_id: answer}), `liveguard approvals`).")
    request: HoldRequest = {
        "action_requests": [{"name": APPROVAL_ACTION, "args": {"draft": draft},
                             "description": "\n".join(lines)}],
        "review_configs": [_review(APPROVAL_ACTION)],
        "kind": APPROVAL_KIND,
        "codes": found,
        "reasons": [str(r) for r in reasons],
        "edit_key": "draft",
        "interrupt_id": interrupt_id,
    }
    if verdict is not None:
        request["verdict"] = dict(verdict)
    if digest is not None:
        request["digest"] = digest
    if recipient is not None:
        request["recipient"] = recipient
    if pinned_only:
        request["pinned_only"] = True
    return request


def liveness_request(
    *,
    code: str,
    step: int,
    node: str | None,
    count: int,
    edit: Literal["message", "update"] = "message",
    reasons: Sequence[str] = (),
    detail: Mapping[str, Any] | None = None,
    interrupt_id: str | None = None,
) -> HoldRequest:
    """A liveness stop's interrupt value: one ``continue_run`` action for the next step.

    ``edit="message"`` (the middleware): an edit continues with ``edited_action.args.message``
    added as a human message. ``edit="update"`` (``guard()``): an edit continues with
    ``edited_action.args.update`` applied as a state update. ``args`` shows where the run
    stopped (code, step index, node, count) and the editable key, empty. ``detail`` is the
    violation's detail (counts, digests, step indices), kept in the extra key ``detail``.
    """
    effect = ("the message in args.message added for the model" if edit == "message"
              else "args.update applied to the thread state")
    where = f"step {step}" + (f" (node {node!r})" if node else "")
    lines = [
        f"liveguard stopped this run at {where}: {describe_code(code)}; seen {count} times.",
        "A person decides whether the run goes on.",
    ]
    if reasons:
        lines.append("Why: " + "; ".join(describe_reason(r) for r in reasons) + ".")
    lines.append(f"Approve continues (the loop windows are cleared); edit continues with {effect}; "
                 "reject ends the run (the optional message is recorded).")
    args: dict[str, Any] = {"code": code, "step": step, "node": node, "count": count,
                            edit: "" if edit == "message" else {}}
    request: HoldRequest = {
        "action_requests": [{"name": LIVENESS_ACTION, "args": args, "description": "\n".join(lines)}],
        "review_configs": [_review(LIVENESS_ACTION)],
        "kind": LIVENESS_KIND,
        "codes": [code],
        "reasons": [str(r) for r in reasons] or [f"hard:{code}"],
        "edit_key": edit,
        "interrupt_id": interrupt_id,
        "step": step,
        "node": node,
        "count": count,
    }
    if detail is not None:
        request["detail"] = dict(detail)
    return request


def with_error(request: Mapping[str, Any], error: InvalidDecision) -> HoldRequest:
    """The same request, re-asked: ``error`` says what was wrong with the last answer."""
    again = cast("HoldRequest", {k: v for k, v in request.items() if k != "error"})
    again["error"] = str(error)
    return again


# -- parsing the answer ------------------------------------------------------------------------
class _Bad(Exception):
    def __init__(self, location: str, reason: str) -> None:
        super().__init__(location, reason)
        self.location = location
        self.reason = reason


_VOCABULARY: Final = frozenset({"decisions", "by", "note", "type", "edited_action", "message", "args",
                                 "name", "draft", "update", "action", "code", "step", "node", "count",
                                 "description", "accept", "ignore", "response"})


def _keys(keys: Any) -> str:
    """Unknown keys for an error: known words as is, anything else as a digest (it may be text)."""
    return ", ".join(sorted(str(k) if str(k) in _VOCABULARY or str(k) in SCHEMA_KEYS else safe_key(k)
                            for k in keys))


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _text(value: Any, location: str, *, required: bool = False) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise _Bad(location, f"expected a non-empty string, got {_type_name(value)}"
                   if required else f"expected a string, got {_type_name(value)}")
    return value


def _audit(outer: Mapping[str, Any], inner: Mapping[str, Any], where: str) -> tuple[str | None, str | None]:
    found: dict[str, str | None] = {}
    for key in ("by", "note"):
        a = _text(outer.get(key), key)
        b = _text(inner.get(key), f"{where}.{key}")
        if a is not None and b is not None and a != b:
            raise _Bad(f"{where}.{key}", f"differs from the top-level {key}")
        value = a if a is not None else b
        found[key] = value.strip() if key == "by" and value is not None else value
    if found["by"] == "":
        raise _Bad("by", "expected a non-empty string naming who decided")
    if found["by"] is not None and any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in found["by"]):
        # kept in audit records and claim rows (PostgreSQL refuses a NUL): plain text only
        raise _Bad("by", "contains a control character (NUL, newline, escape...); "
                   "name who decided in plain text")
    return found["by"], found["note"]


def _spec(request: Mapping[str, Any]) -> tuple[str, list[str], str]:
    """(action name, allowed decisions, edit key) of a request; a broken request is a _Bad."""
    configs = request.get("review_configs")
    actions = request.get("action_requests")
    if not isinstance(configs, list) or len(configs) != 1 or not isinstance(configs[0], Mapping):
        raise _Bad("request.review_configs", "expected one review config")
    if not isinstance(actions, list) or len(actions) != 1 or not isinstance(actions[0], Mapping):
        raise _Bad("request.action_requests", "expected one action request")
    name = actions[0].get("name")
    allowed = configs[0].get("allowed_decisions")
    if not isinstance(name, str) or not isinstance(allowed, list):
        raise _Bad("request", "action name or allowed decisions missing")
    edit_key = request.get("edit_key")
    return name, [str(a) for a in allowed], edit_key if isinstance(edit_key, str) else ""


_LEGACY: Final[Mapping[str, str]] = {"accept": "approve", "ignore": "reject", "response": "respond"}


def _from_legacy(item: Mapping[str, Any], name: str) -> dict[str, Any]:
    """Agent Inbox's older ``HumanResponse`` (``{"type", "args"}``) as a LangChain decision."""
    kind = item.get("type")
    args = item.get("args")
    if kind == "edit":
        if not isinstance(args, Mapping):
            raise _Bad("[0].args", f"expected an action request {{action, args}}, got {_type_name(args)}")
        return {"type": "edit", "edited_action": {"name": args.get("action", name), "args": args.get("args")}}
    if kind == "response":
        return {"type": "respond", "message": args}
    return {"type": _LEGACY[str(kind)]}


def _decision_of(answer: Any, name: str) -> tuple[Mapping[str, Any], Mapping[str, Any], str]:
    """(the resume's top level, the one decision, its location)."""
    if isinstance(answer, Mapping) and "decisions" in answer:
        unknown = [k for k in answer if k != "decisions" and k not in _AUDIT_KEYS]
        if unknown:
            raise _Bad("resume", f"unknown key(s) {_keys(unknown)}; allowed: decisions, by, note")
        decisions = answer["decisions"]
        if not isinstance(decisions, list):
            raise _Bad("decisions", f"expected a list, got {_type_name(decisions)}")
        if len(decisions) != 1:
            raise _Bad("decisions", "expected exactly one decision (one action was asked), "
                       f"got {len(decisions)}")
        if not isinstance(decisions[0], Mapping):
            raise _Bad("decisions[0]", f"expected a decision object, got {_type_name(decisions[0])}")
        return answer, decisions[0], "decisions[0]"
    if isinstance(answer, Mapping) and "type" in answer:  # LangChain's per_call answer
        return {}, answer, "resume"
    if isinstance(answer, list) and len(answer) == 1 and isinstance(answer[0], Mapping):
        item = answer[0]
        if item.get("type") in _LEGACY or (item.get("type") == "edit" and "args" in item):
            extra = [k for k in item if k not in ("type", "args")]
            if extra:
                raise _Bad("[0]", f"unknown key(s) {_keys(extra)}; allowed: type, args")
            return {}, _from_legacy(item, name), "[0]"
        return {}, item, "[0]"
    raise _Bad("resume", "expected {\"decisions\": [{\"type\": \"approve\" | \"edit\" | \"reject\"}]}, "
               f"got {_type_name(answer)}")


_KEYS: Final[Mapping[str, frozenset[str]]] = {
    "approve": frozenset({"type"}),
    "edit": frozenset({"type", "edited_action"}),
    "reject": frozenset({"type", "message"}),
    "respond": frozenset({"type", "message"}),
}


def _same_kind(value: Any, shown: Any, loc: str) -> None:
    """An edit's value is of the type of the value the person was shown, and not empty."""
    if shown is None:
        return
    if type(value) is not type(shown):
        raise _Bad(loc, f"expected {_type_name(shown)} like the value shown, got {_type_name(value)}")
    empty = not value.strip() if isinstance(value, str) else not value
    if isinstance(value, str | list | dict | tuple) and empty:
        raise _Bad(loc, "required: the edit's new value, non-empty")


def _edit_args(
    action: Any, where: str, name: str, edit_key: str, shown: Any = None
) -> tuple[str, dict[str, Any]]:
    if not isinstance(action, Mapping):
        raise _Bad(f"{where}.edited_action", f"expected {{name, args}}, got {_type_name(action)}")
    unknown = [k for k in action if k not in ("name", "args")]
    if unknown:
        raise _Bad(f"{where}.edited_action", f"unknown key(s) {_keys(unknown)}; allowed: name, args")
    got = action.get("name", name)
    if got != name:
        raise _Bad(f"{where}.edited_action.name", f"an edit cannot change the action; expected {name}")
    args = action.get("args")
    if not isinstance(args, Mapping):
        raise _Bad(f"{where}.edited_action.args", f"expected an object, got {_type_name(args)}")
    if not edit_key:  # a request liveguard did not build: its args are the action's own
        return str(got), {str(k): v for k, v in args.items()}
    loc = f"{where}.edited_action.args.{edit_key}"
    unknown = [k for k in args if k != edit_key and k not in _EVIDENCE_ARGS]
    if unknown:
        raise _Bad(f"{where}.edited_action.args", f"unknown key(s) {_keys(unknown)}; "
                   f"an edit here carries {edit_key}")
    value = args.get(edit_key)
    if edit_key == "update":
        if isinstance(value, str):  # a form field sends the object as JSON text
            try:
                value = json.loads(value)
            except ValueError:
                raise _Bad(loc, "expected a state update object, got text that is not JSON") from None
        if not isinstance(value, Mapping) or not value:
            raise _Bad(loc, f"expected a non-empty state update object, got {_type_name(value)}")
    elif value is None or (isinstance(value, str) and not value.strip()):
        raise _Bad(loc, "required: the edit's new value, non-empty")
    elif edit_key == "message" and not isinstance(value, str):
        raise _Bad(loc, f"expected a string, got {_type_name(value)}")
    else:
        _same_kind(value, shown, loc)
    return str(got), {edit_key: value}


def _shown(request: Mapping[str, Any], edit_key: str) -> Any:
    """The value at ``edit_key`` in the request's action args (what an edit replaces), if any."""
    actions = request.get("action_requests")
    first = actions[0] if isinstance(actions, list) and actions else None
    args = first.get("args") if isinstance(first, Mapping) else None
    return args.get(edit_key) if isinstance(args, Mapping) and edit_key else None


def _parse(answer: Any, request: Mapping[str, Any]) -> ReviewDecision:
    name, allowed, edit_key = _spec(request)
    outer, decision, where = _decision_of(answer, name)
    kind = decision.get("type")
    if kind not in _KEYS:
        raise _Bad(f"{where}.type", f"expected one of {', '.join(allowed)}, got {_keys([kind])}"
                   if isinstance(kind, str) else f"expected one of {', '.join(allowed)}, "
                   f"got {_type_name(kind)}")
    if kind not in allowed:
        raise _Bad(f"{where}.type", f"{kind} is not allowed here; allowed: {', '.join(allowed)}")
    unknown = [k for k in decision if k not in _KEYS[kind] and k not in _AUDIT_KEYS]
    if unknown:
        keys = ", ".join(sorted(_KEYS[kind] | _AUDIT_KEYS))
        raise _Bad(where, f"unknown key(s) {_keys(unknown)} for {kind}; allowed: {keys}")
    by, note = _audit(outer, decision, where)
    if kind == "approve":
        return Approve(by=by, note=note)
    if kind == "edit":
        got, args = _edit_args(decision.get("edited_action"), where, name, edit_key,
                               _shown(request, edit_key))
        return Edit(name=got, args=args, edit_key=edit_key, by=by, note=note)
    if kind == "reject":
        message = _text(decision.get("message"), f"{where}.message")
        return Reject(message=message or None, by=by, note=note)
    message = _text(decision.get("message"), f"{where}.message", required=True)
    assert message is not None
    return Respond(message=message, by=by, note=note)


def parse_resume(
    answer: Any, request: Mapping[str, Any], *, require_by: bool = False
) -> ReviewDecision | InvalidDecision:
    """The typed decision in a resume value, or a :class:`InvalidDecision`; never raises.

    ``request`` is the value the thread was interrupted with: its ``review_configs`` say
    which decisions are allowed and its ``edit_key`` what an edit must carry. An edit may
    not rename the action; its ``args`` may echo the stop's evidence keys (code, step, node,
    count), which are dropped. ``require_by``: the decision must name who decided (the
    approvals CLI asks for it; review UIs do not send it).
    """
    try:
        decision = _parse(answer, request)
    except _Bad as bad:
        return InvalidDecision(bad.location, bad.reason)
    except Exception as exc:  # a parser bug must re-ask, never switch a guard off
        return InvalidDecision("resume", f"could not be read ({type(exc).__name__})")
    if require_by and decision.by is None:
        return InvalidDecision("by", "required: a non-empty string naming who decided")
    return decision


def to_hitl_decision(decision: ReviewDecision) -> dict[str, Any]:
    """The decision as LangChain sends it (``HITLResponse["decisions"][0]``), ``by``/``note`` kept."""
    out: dict[str, Any] = {"type": decision.type}
    if isinstance(decision, Edit):
        out["edited_action"] = {"name": decision.name, "args": dict(decision.args)}
    elif isinstance(decision, Reject | Respond) and decision.message is not None:
        out["message"] = decision.message
    if decision.by is not None:
        out["by"] = decision.by
    if decision.note is not None:
        out["note"] = decision.note
    return out


# -- inside a node -----------------------------------------------------------------------------
def _ask(
    request: HoldRequest, require_by: bool, on_error: Callable[[InvalidDecision], None] | None
) -> ReviewDecision:
    from langgraph.types import interrupt

    shown: HoldRequest = request
    while True:
        answer = interrupt(shown)
        parsed = parse_resume(answer, shown, require_by=require_by)
        if not isinstance(parsed, InvalidDecision):
            return parsed
        log.warning("hitl kind=%s bad_resume=%s", shown.get("kind"), parsed.location)
        if on_error is not None:
            try:
                on_error(parsed)
            except Exception as exc:  # the caller's hook must not end the hold
                log.warning("hitl on_error_failed=%s", type(exc).__name__)
        shown = with_error(shown, parsed)


def _raised(held: BaseException) -> Any:
    """The value of the interrupt a ``GraphInterrupt`` carries."""
    for item in (getattr(held, "args", None) or ((),))[0] or ():
        return getattr(item, "value", None)
    return None


def _wake(notifiers: Sequence["Notifier"], held: BaseException, config: Mapping[str, Any] | None) -> None:
    """Queue the notifiers for the interrupt ``held`` carries; they run off the node, once the
    checkpointer holds it (:func:`liveguard.live.notify.notify_later`). Never raises."""
    from liveguard.live._wake import raised_stored
    from liveguard.live.notify import coords_of, notify_later

    try:
        coords = coords_of(config, held)  # in the node's context, before leaving it
        ready = raised_stored(None, coords.interrupt_id)  # where the node's task really is
        value = _raised(held)
        notify_later(notifiers, value if isinstance(value, Mapping) else {}, coords, ready=ready)
    except Exception as exc:  # a notification never changes the hold
        log.warning("hitl notify_error=%s", type(exc).__name__)


def ask(
    request: HoldRequest,
    *,
    notifiers: Sequence["Notifier"] = (),
    config: Mapping[str, Any] | None = None,
    require_by: bool = False,
    on_error: Callable[[InvalidDecision], None] | None = None,
) -> ReviewDecision:
    """Interrupt with ``request`` until the answer is a valid decision; return it.

    Runs inside a LangGraph node (it calls ``langgraph.types.interrupt``). Each time the
    interrupt is actually raised (not when a resume replays it), ``notifiers`` are called
    with the value raised (the request, with ``error`` on a re-ask) and the thread
    coordinates (thread id and checkpoint namespace from ``config``, default the node's
    config; the interrupt id LangGraph gave it), off the node: they are queued
    (:func:`liveguard.live.notify.notify_later`) and run once the checkpointer holds the
    interrupt, so a slow or dead receiver never delays the hold, and a failing notifier is
    logged and never stops it. A malformed answer is logged (location only) and re-asked with
    :func:`with_error`; ``on_error`` sees each such error (again each time a resume replays
    the node, as LangGraph re-runs it from the start), and its own failure is only logged.
    """
    from langgraph.errors import GraphInterrupt

    try:
        return _ask(request, require_by, on_error)
    except GraphInterrupt as held:
        if notifiers:
            _wake(notifiers, held, config)
        raise


async def aask(
    request: HoldRequest,
    *,
    notifiers: Sequence["Notifier"] = (),
    config: Mapping[str, Any] | None = None,
    require_by: bool = False,
    on_error: Callable[[InvalidDecision], None] | None = None,
) -> ReviewDecision:
    """:func:`ask` for async nodes (the notifiers are queued the same way, off the event loop)."""
    from langgraph.errors import GraphInterrupt

    try:
        return _ask(request, require_by, on_error)
    except GraphInterrupt as held:
        if notifiers:
            _wake(notifiers, held, config)
        raise


def to_hitl_response(decision: ReviewDecision) -> dict[str, Any]:
    """The resume value for a decision: ``{"decisions": [...]}``, ``by``/``note`` beside it."""
    one = to_hitl_decision(decision)
    response: dict[str, Any] = {"decisions": [one]}
    for key in ("by", "note"):
        if key in one:
            response[key] = one.pop(key)
    return response
