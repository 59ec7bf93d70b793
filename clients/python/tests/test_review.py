"""The review after the fact: a changed preference supersedes the old one, and a disagreement
between tools waits in the conflict queue until a person settles it."""

from __future__ import annotations

import pytest

from hindsight_client import HindsightClient, InvalidArgument, NotFound


def test_a_changed_preference_supersedes_the_old_one(client: HindsightClient, bank: str):
    old = client.write(bank, "Please reach me by SMS for anything urgent.", source="user",
                       occurred_at="2026-01-19T19:58:17Z")
    new = client.write(bank, "Switch my notifications to Slack please.", source="user",
                       occurred_at="2026-02-28T15:32:19Z")
    before = client.recall(bank, "How do I contact the user about something urgent?")
    assert old.id in before.ids

    review = client.review(bank)
    assert review.bank == bank
    assert review.considered == 2
    assert review.cycle.judge == "rules"
    assert review.cycle.decisions.get("supersede") == 1
    assert old.id in review.updated

    superseded = client.get(old.id)
    assert superseded.status.name == "superseded"
    assert superseded.status.superseded_by == new.id
    assert superseded.valid_to is not None
    assert superseded.confidence < 0.1
    assert client.get(new.id).status.name == "active"

    trace = client.trace(old.id)
    change = [h for h in trace.history if h.actor.startswith("review")]
    assert change, [h.actor for h in trace.history]
    assert change[-1].kind == "status_changed"
    assert new.id in [m.id for m in trace.related]
    assert [s.status.name for s in trace.memory.status_log][-1] == "superseded"

    after = client.recall(bank, "How do I contact the user about something urgent?")
    assert old.id not in after.ids
    assert after.ids[0] == new.id
    history = client.recall(bank, "How do I contact the user about something urgent?",
                            include_history=True)
    by_id = {h.memory.id: h for h in history.hits}
    assert by_id[old.id].status.name == "superseded"

    # As of a time before the change, the old preference still held.
    then = client.recall(bank, "How do I contact the user about something urgent?",
                         as_of="2026-02-01T00:00:00Z", include_history=True)
    assert {h.memory.id: h.status.name for h in then.hits}.get(old.id) == "active"


def test_a_disagreement_between_tools_is_queued_and_settled(client: HindsightClient, bank: str):
    client.banks.create(bank, strategies={
        "temporal": "supersede", "source": "pending_review", "inference": "falsify",
        "undecidable": "pending_review", "duplicate": "merge", "supersede_boost": 1.2,
        "superseded_confidence": 0.05, "dispute_factor": 0.7, "pending_review_factor": 0.8,
    })
    assert client.banks.get(bank).bank.strategies.source == "pending_review"
    a = client.write(bank, "Inventory service reports 40 units of part Tyrell in stock.",
                     source="tool", tool="inventory", occurred_at="2026-03-26T00:44:03Z")
    b = client.write(bank, "Warehouse scanner shows part Tyrell is out of stock.",
                     source="tool", tool="scanner", occurred_at="2026-03-26T13:41:35Z")

    review = client.review(bank)
    assert review.cycle.decisions.get("pending_review") == 1
    assert len(review.conflicts_opened) == 1

    (conflict,) = client.conflicts(bank)
    assert conflict.id == review.conflicts_opened[0]
    assert {conflict.a, conflict.b} == {a.id, b.id}
    assert conflict.judge == "rules"
    assert "tyrell" in conflict.explanation.lower()
    assert not conflict.resolved
    assert client.get(a.id).status.name == "pending_review"

    keep = "keep_b" if conflict.b == b.id else "keep_a"
    with pytest.raises(InvalidArgument):
        client.resolve_conflict(bank, conflict.id, "keep_whichever")
    settled = client.resolve_conflict(bank, conflict.id, keep, note="the scanner is newer")
    assert settled.conflict.outcome == keep
    assert settled.conflict.note == "the scanner is newer"
    assert settled.conflict.resolved_at
    assert {a.id, b.id} <= set(settled.changed)
    assert client.get(b.id).status.name == "active"
    assert client.get(a.id).status.name == "falsified"

    assert client.conflicts(bank) == []
    (resolved,) = client.conflicts(bank, include_resolved=True)
    assert resolved.outcome == keep
    with pytest.raises(NotFound):
        client.resolve_conflict(bank, conflict.id + 1000, "keep_a")
