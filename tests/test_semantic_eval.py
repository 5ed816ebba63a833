"""The semantic layer in the eval graph and the CLI: spin checks with provenance, missing evidence."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fake_openai import FakeOpenAI, Reply
from liveguard import Policy, Step, Trajectory
from liveguard.core.semantic import EmbeddingError, register_embedder
from liveguard.evaluate.eval_graph import evaluate_trajectory
from liveguard.evaluate.judges import SPIN_CHECK_PROMPT, JudgeClient, JudgeConfig
from liveguard.readers.jsonl import write_jsonl

REVIEW = [
    ("coder", "Here is add(): def add(a, b): return a - b"),
    ("reviewer", "add() returns a minus b; it should return their sum. Please fix the operator."),
    ("coder", "Revision 2 of add() is ready: def add(a, b): return b - a"),
    ("reviewer", "The function still subtracts instead of adding. Change the minus to a plus."),
]
LOOP = [  # the coder resends revision 2 with its counter ticked: nothing new came back
    *REVIEW,
    ("coder", "Revision 3 of add() is ready: def add(a, b): return b - a"),
    ("reviewer", "This still computes a - b rather than a + b. The operator needs to be a plus sign."),
]
LOOKALIKE = [  # the reviewer repeats itself, but the coder sends new code each time
    *REVIEW,
    ("coder", "Revision 3 of add() is ready: def add(a, b): return -(b - a)"),
    ("reviewer", "This still computes a - b rather than a + b. The operator needs to be a plus sign."),
]
SPINS = {"score": 0.1, "confidence": 0.9, "reason": "spins"}
GOOD = {"score": 0.9, "confidence": 0.9, "reason": "moves forward"}
SEMANTIC = Policy(semantic=True, max_revisits=20)


def run_of(pairs: Sequence[tuple[str, str]], run_id: str = "r") -> Trajectory:
    return Trajectory(run_id=run_id, steps=[Step(node=n, summary=t) for n, t in pairs])


def client(fake: FakeOpenAI) -> JudgeClient:
    return JudgeClient(JudgeConfig(base_url=fake.base_url, api_key="k", model="judge-m", max_retries=0))


def spin_requests(fake: FakeOpenAI) -> list[Any]:
    return [r for r in fake.requests if r.content("system") == SPIN_CHECK_PROMPT]


def test_a_soft_finding_gets_one_spin_check_recorded_with_provenance(fake_openai: FakeOpenAI) -> None:
    fake_openai.default_answer = GOOD
    verdict = evaluate_trajectory(run_of(REVIEW), policy=SEMANTIC, client=client(fake_openai))
    assert [(v.code, v.severity, v.step) for v in verdict.violations] == [("semantic_repeat", "soft", 3)]
    assert len(spin_requests(fake_openai)) == 1
    [spin] = verdict.evidence["spin_checks"]
    assert spin["trigger"] == "soft_finding"
    assert spin["source"] == "spin_check:judge-m"
    assert spin["score"] == 0.9
    assert spin["steps"] == [1, 2, 3]  # the step matched (1), those between, the suspected step (3)
    assert spin["matched_step"] == 1
    assert verdict.passed  # judged, clean of hard findings, above the mark


def test_a_failed_spin_check_is_missing_evidence_never_a_pass(fake_openai: FakeOpenAI) -> None:
    fake_openai.default_answer = GOOD
    fake_openai.enqueue(Reply.json(GOOD), Reply.json(GOOD), Reply.error(400))  # step, trajectory, spin
    verdict = evaluate_trajectory(run_of(REVIEW), policy=SEMANTIC, client=client(fake_openai))
    assert "judge_error:spin_check:http_4xx" in verdict.missing
    assert not verdict.passed


def test_a_hard_semantic_loop_costs_zero_tokens(fake_openai: FakeOpenAI) -> None:
    verdict = evaluate_trajectory(run_of(LOOP), policy=SEMANTIC, client=client(fake_openai))
    assert verdict.hard_codes == ["semantic_repeat"]
    assert "semantic_repeat" in verdict.liveness_codes
    assert fake_openai.requests == []
    assert "spin_checks" not in verdict.evidence


def test_a_reworded_repeat_between_new_observations_is_a_suspicion_only(fake_openai: FakeOpenAI) -> None:
    """Issue 17: the observations between the repeats (new code) progress, so the semantic
    layer alone does not veto; the spin check is asked and a judge that says 'fine' passes."""
    fake_openai.default_answer = GOOD
    verdict = evaluate_trajectory(run_of(LOOKALIKE), policy=SEMANTIC, client=client(fake_openai))
    assert verdict.hard_codes == []
    found = [v.detail["confirmed"] for v in verdict.violations if v.code == "semantic_repeat"]
    assert found == [False, False]
    assert len(spin_requests(fake_openai)) == 2  # one per soft finding
    assert verdict.passed


def spins_answer(fake: FakeOpenAI, *replies: Reply) -> None:
    """The spin checks get ``replies`` in order (then GOOD); every other judge gets GOOD."""
    queue = list(replies)

    def respond(request: Any) -> Reply:
        if request.content("system") == SPIN_CHECK_PROMPT and queue:
            return queue.pop(0)
        return Reply.json(GOOD)

    fake.responder = respond


def test_the_spin_check_judge_confirms_a_suspicions_second_return(fake_openai: FakeOpenAI) -> None:
    """The other confirmation: the judge says the rounds spin at the first suspicion (step 3)
    and at the second (step 5, the node's second in its window): hard at the second."""
    spins_answer(fake_openai, Reply.json(SPINS), Reply.json(SPINS))
    verdict = evaluate_trajectory(run_of(LOOKALIKE), policy=SEMANTIC, client=client(fake_openai))
    [confirmed] = [v for v in verdict.violations if v.hard]
    assert (confirmed.code, confirmed.step, confirmed.node) == ("semantic_repeat", 5, "reviewer")
    assert confirmed.detail["confirmed_by"] == "spin_check"
    assert (confirmed.detail["finding_count"], confirmed.detail["judged_spins"]) == (2, 2)
    assert not verdict.passed


def test_a_judged_spin_at_a_suspicions_second_count_is_hard_alone(fake_openai: FakeOpenAI) -> None:
    """The first suspicion judged fine, the second (its node's second in the window) a spin:
    hard, as the layer's own confirmation would make it (``semantic_hard_matches``)."""
    spins_answer(fake_openai, Reply.json(GOOD), Reply.json(SPINS))
    verdict = evaluate_trajectory(run_of(LOOKALIKE), policy=SEMANTIC, client=client(fake_openai))
    assert [(v.code, v.step, v.detail["judged_spins"]) for v in verdict.violations if v.hard] == [
        ("semantic_repeat", 5, 1)]


WRAP_UP = [  # whowhen-ag-27's shape: the answer restated once before the end, the terminal idle between
    ("user", "What is the world record time for Sweet Sweet Canyon, 150cc, as of June 7, 2023?"),
    ("DataVerification_Expert", "Let me check the records for Sweet Sweet Canyon 150cc as of June 2023."),
    ("Computer_terminal", "There is no code from the last 1 message for me to execute."),
    ("DataVerification_Expert", "Great! We have reviewed the data and confirmed the world record time for "
     "Sweet Sweet Canyon in 150cc as of June 7, 2023: 1:48.585. Everyone agrees, the task is complete. "
     "TERMINATE"),
    ("Computer_terminal", "There is no code from the last 1 message for me to execute."),
    ("DataVerification_Expert", "All members have agreed on the accuracy of the world record time for Sweet "
     "Sweet Canyon in 150cc as of June 7, 2023, being 1:48.585. TERMINATE"),
]


def test_one_judged_spin_on_a_first_suspicion_does_not_stop_a_converging_wrap_up(
        fake_openai: FakeOpenAI) -> None:
    """Healthy look-alike (dev: whowhen-ag-27, and the re-run verification script, the re-asked
    refusal): the answer restated once is two occurrences, progress by the labelling protocol.
    The judge rightly calls it a repeat (score 0.15); one judged spin on a first suspicion is
    not a stop (``spin_hard_repeats`` 2). It was hard."""
    spins_answer(fake_openai, Reply.json({"score": 0.15, "confidence": 0.75, "reason": "same final answer"}))
    verdict = evaluate_trajectory(run_of(WRAP_UP), policy=SEMANTIC, client=client(fake_openai))
    assert [(v.code, v.severity, v.step) for v in verdict.violations] == [("semantic_repeat", "soft", 5)]
    [spin] = verdict.evidence["spin_checks"]
    assert (spin["score"], spin["finding_count"]) == (0.15, 1)
    assert verdict.passed
    once = SEMANTIC | {"spin_hard_repeats": 1}  # the old rule, as a setting: every judged spin is hard
    spins_answer(fake_openai, Reply.json({"score": 0.15, "confidence": 0.75, "reason": "same final answer"}))
    verdict = evaluate_trajectory(run_of(WRAP_UP), policy=once, client=client(fake_openai))
    assert [(v.code, v.step) for v in verdict.violations if v.hard] == [("semantic_repeat", 5)]


def test_the_wrap_up_restated_a_third_time_is_a_loop(fake_openai: FakeOpenAI) -> None:
    """The looping twin: three restatements with only the idle terminal between are hard."""
    third = ("DataVerification_Expert", "The world record time for Sweet Sweet Canyon in 150cc as of June 7, "
             "2023 is confirmed by all members as 1:48.585. TERMINATE")
    spins_answer(fake_openai, Reply.json(SPINS))
    run = run_of([*WRAP_UP, WRAP_UP[4], third])
    verdict = evaluate_trajectory(run, policy=SEMANTIC, client=client(fake_openai))
    assert "semantic_repeat" in verdict.hard_codes
    assert min(v.step for v in verdict.violations if v.hard) <= 7
    assert not verdict.passed


FENCED_SPIN = '```json\n{"score": 0.1, "confidence": 0.9, "reason": "same complaint reworded"}\n```'


def test_fenced_spin_answers_count_as_judged_spins(fake_openai: FakeOpenAI) -> None:
    """A local model's answer in ```json fences is an answer: two fenced spins confirm."""
    spins_answer(fake_openai, Reply.text(FENCED_SPIN), Reply.text(FENCED_SPIN))
    verdict = evaluate_trajectory(run_of(LOOKALIKE), policy=SEMANTIC, client=client(fake_openai))
    assert [(v.code, v.step) for v in verdict.violations if v.hard] == [("semantic_repeat", 5)]
    assert [s["score"] for s in verdict.evidence["spin_checks"]] == [0.1, 0.1]
    assert verdict.missing == []


def test_an_unusable_spin_answer_is_neither_a_spin_nor_a_pass(fake_openai: FakeOpenAI) -> None:
    """Prose beside the JSON, or a score out of range, is unusable: missing evidence (the run
    does not pass), and it never counts toward a judged spin (one spin after it: not hard)."""
    for unusable, code in (('The run loops.\n```json\n{"score": 0.1, "confidence": 0.9, "reason": "r"}\n```',
                            "malformed_json"),
                           ('{"score": -1, "confidence": 0.9, "reason": "loops"}', "out_of_range")):
        spins_answer(fake_openai, Reply.text(unusable), Reply.json(GOOD))
        verdict = evaluate_trajectory(run_of(LOOKALIKE), policy=SEMANTIC, client=client(fake_openai))
        assert verdict.hard_codes == []
        assert f"judge_error:spin_check:{code}" in verdict.missing
        assert not verdict.passed
        spins_answer(fake_openai, Reply.text(unusable), Reply.json(GOOD))
        verdict = evaluate_trajectory(run_of(LOOKALIKE), policy=SEMANTIC | {"spin_hard_repeats": 1},
                                      client=client(fake_openai))
        assert verdict.hard_codes == []  # the unusable answer confirmed nothing, even at 1
        assert not verdict.passed


def test_without_judges_a_lookalike_is_never_vetoed_by_the_semantic_layer() -> None:
    verdict = evaluate_trajectory(run_of(LOOKALIKE), policy=SEMANTIC, structural_only=True)
    assert verdict.hard_codes == []


def test_no_spin_check_without_the_semantic_layer_or_judges(fake_openai: FakeOpenAI) -> None:
    fake_openai.default_answer = GOOD
    evaluate_trajectory(run_of(REVIEW), policy=Policy(max_revisits=20), client=client(fake_openai))
    evaluate_trajectory(run_of(REVIEW), policy=SEMANTIC, client=client(fake_openai), structural_only=True)
    assert spin_requests(fake_openai) == []


def test_a_failing_embedder_is_missing_evidence_in_the_verdict() -> None:
    class Broken:
        name = "broken"

        def embed(self, texts: Sequence[str]) -> Any:
            raise EmbeddingError("timeout")

    register_embedder("broken-eval", Broken)
    verdict = evaluate_trajectory(run_of(REVIEW), policy=SEMANTIC | {"semantic_embedder": "broken-eval"},
                                  structural_only=True)
    assert verdict.missing == ["semantic_unavailable:timeout"]
    assert (verdict.passed, verdict.reason) == (False, "incomplete_evidence")


def test_cli_semantic_flag_turns_the_layer_on_for_score_and_gate(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "runs.jsonl", [run_of(LOOP, "loop"), run_of(REVIEW[:2], "ok")])
    exe = Path(sys.executable).with_name("liveguard")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(exe), *args], capture_output=True, text=True, cwd=tmp_path, check=False)

    plain = cli("score", "runs.jsonl", "--no-judges", "--format", "jsonl")
    semantic = cli("score", "runs.jsonl", "--no-judges", "--semantic", "--format", "jsonl")
    assert plain.returncode == 0, plain.stderr
    assert semantic.returncode == 0, semantic.stderr
    rows = {r["run_id"]: r for r in map(json.loads, semantic.stdout.splitlines())}
    assert [r["passed"] for r in map(json.loads, plain.stdout.splitlines())] == [True, True]
    assert rows["loop"]["passed"] is False
    assert "semantic_repeat" in json.dumps(rows["loop"])
    assert rows["ok"]["passed"] is True
    gate = cli("gate", "runs.jsonl", "--no-judges", "--semantic", "--min-runs", "1")
    assert gate.returncode == 4, gate.stdout + gate.stderr  # a hard liveness code rolls back
