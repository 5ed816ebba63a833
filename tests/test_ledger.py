"""The tool-call ledger on its own (no LangChain): bounded, most recent last, digests only."""

from __future__ import annotations

from liveguard.live._ledger import Ledger, args_digest, debounce_text


def test_a_repeated_call_is_one_entry_moved_to_the_end_and_the_size_bounds_it() -> None:
    ledger = Ledger()
    a, b, c = (args_digest({"q": n}) for n in ("a", "b", "c"))
    ledger.record("search", a, "failed", 2)
    ledger.record("search", b, "ok", 2)
    ledger.record("search", a, "failed", 2)  # again: one entry, counted twice, now the latest
    assert ledger.dump() == [["search", b, "ok", 1, False], ["search", a, "failed", 2, False]]
    ledger.record("fetch", c, "nonretryable", 2)  # a third distinct call: the oldest goes
    assert [entry[:2] for entry in ledger.dump()] == [["search", a], ["fetch", c]]


def test_blocking_shows_in_the_text_and_in_the_debounce_lookup() -> None:
    ledger = Ledger([["search", "d1", "failed", 3, False]])
    assert ledger.blocked("search", "d1") is None
    before = ledger.text
    ledger.block("search", "d1")
    assert ledger.blocked("search", "d1") == ["search", "d1", "failed", 3, True]
    assert ledger.text != before
    assert ledger.text.endswith("- search args#d1: failed x3 [blocked]")
    assert debounce_text("search", "d1", ledger.blocked("search", "d1") or []) == (
        "Not run: this exact call (search, args#d1) was already tried 3 times with the same "
        "failure. Change the input or stop.")


def test_a_damaged_saved_value_is_dropped_not_raised_on() -> None:
    assert not Ledger("not a list")
    assert Ledger([["t", "d", "ok", 1, False], ["short"], "text", None]).dump() == [
        ["t", "d", "ok", 1, False]]


def test_the_text_never_carries_arguments() -> None:
    secret = {"card": "4111 1111 1111 1111"}
    ledger = Ledger()
    ledger.record("pay", args_digest(secret), "failed", 16)
    assert "4111" not in ledger.text
    assert args_digest(secret) in ledger.text
