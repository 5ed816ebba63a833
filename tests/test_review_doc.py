"""docs/review-ui.md shows the payloads liveguard really builds (issue 19: the README's review section)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from liveguard.live.hitl import approval_request, liveness_request
from liveguard.live.notify import Coords, webhook_body

DOC = (Path(__file__).resolve().parent.parent / "docs" / "review-ui.md").read_text()
BLOCKS = re.findall(r"```json\n(.*?)```", DOC, re.DOTALL)


def test_the_liveness_payload_shown_is_the_one_built() -> None:
    shown = json.loads(BLOCKS[1])
    assert shown == liveness_request(code="tool_no_progress", step=3, node="model", count=3)


def test_the_approval_description_and_evidence_shown_are_the_ones_built() -> None:
    verdict = {"violations": [{"code": "content_cycle", "severity": "hard", "step": 4}],
               "missing": ["judges_skipped:hard_violation"]}
    built = approval_request("Hi Ana, the report is attached.",
                             reasons=["autoapprove_off", "hard:content_cycle"], verdict=verdict)
    head = BLOCKS[0].split('"verdict"')[0].rstrip().rstrip(",") + "}"
    shown = json.loads(head)
    assert shown == {k: v for k, v in built.items() if k != "verdict"}


def test_the_webhook_body_shown_is_the_one_sent() -> None:
    payload = approval_request("Hi Ana", reasons=["autoapprove_off", "hard:content_cycle"],
                               codes=["content_cycle"])
    coords = Coords(thread_id="t-1", checkpoint_ns="approve_send:1b2c", interrupt_id="3f2a9c")
    assert json.loads(BLOCKS[2]) == webhook_body(payload, coords)
