"""Writing, recalling, explaining and forgetting memories on a real node."""

from __future__ import annotations

import pytest

from hindsight_client import (
    AlreadyExists,
    HindsightClient,
    InvalidArgument,
    NotFound,
    WriteItem,
)

UNKNOWN_ID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
ARMS = {"semantic", "keyword", "graph", "temporal"}


def memory_count(client: HindsightClient, bank: str) -> int:
    try:
        return client.banks.get(bank).memory_count
    except NotFound:
        return 0


def test_write_then_recall_finds_it_with_an_explanation(client: HindsightClient, bank: str):
    written = client.write(bank, "The user prefers window seats on long flights.",
                           source="user", tags=["travel"], metadata={"user_id": "u1"})
    assert written.disposition == "created"
    assert len(written.id) == 26
    client.write(bank, "The quarterly report is due on the first Monday of April.", source="user")

    result = client.recall(bank, "Which seat does the user like on long flights?")
    assert result.hits, "recall returned nothing"
    top = result.hits[0]
    assert top.memory.id == written.id
    assert top.memory.content == "The user prefers window seats on long flights."
    assert top.memory.bank == bank
    assert top.memory.tags == ["travel"]
    assert top.memory.metadata == {"user_id": "u1"}
    assert top.memory.provenance.source == "user"
    assert top.status.name == "active"
    # The explanation says which retrieval arms found it and how the score was made.
    assert top.explain.arms, "no arm explains the hit"
    assert {a.arm for a in top.explain.arms} <= ARMS
    assert all(a.rank >= 1 for a in top.explain.arms)
    assert 0 < top.explain.relevance <= 1
    assert 0 < top.explain.confidence <= 1
    assert top.score == pytest.approx(top.explain.score, abs=1e-4)
    assert top.score > 0
    assert result.recall_id, "the retrieval log is on by default, so a recall has an id"

    # Filters are applied by the node: the tag leaves out the other memory.
    tagged = client.recall(bank, "report flights seats", tags=["travel"])
    assert tagged.ids == [written.id]


def test_write_batch_stores_every_item_in_order(client: HindsightClient, bank: str):
    outcomes = client.write_batch(bank, [
        "The staging database runs on port 5433.",
        {"content": "Deployments need approval from the on-call engineer.", "source": "user"},
        WriteItem(content="The user's timezone is Europe/Berlin.", source="user", tags=["tz"]),
    ])
    assert [o.disposition for o in outcomes] == ["created"] * 3
    assert len({o.id for o in outcomes}) == 3
    assert memory_count(client, bank) == 3
    stored = [client.get(o.id) for o in outcomes]
    assert [m.content for m in stored] == [
        "The staging database runs on port 5433.",
        "Deployments need approval from the on-call engineer.",
        "The user's timezone is Europe/Berlin.",
    ]
    assert stored[2].tags == ["tz"]
    hits = client.recall(bank, "What timezone is the user in?", top_k=1)
    assert hits.ids == [outcomes[2].id]


def test_a_batch_with_one_bad_item_stores_nothing(client: HindsightClient, bank: str):
    client.write(bank, "The office closes at 6 pm on Fridays.", source="user")
    with pytest.raises(InvalidArgument) as info:
        client.write_batch(bank, ["The office opens at 8 am.", "   "])
    assert info.value.status == 400
    assert memory_count(client, bank) == 1


def test_bad_input_is_invalid_argument_and_stores_nothing(client: HindsightClient, bank: str):
    with pytest.raises(InvalidArgument) as empty:
        client.write(bank, "", source="user")
    assert empty.value.code == "invalid_argument" and empty.value.status == 400
    assert "content" in empty.value.message.lower()
    with pytest.raises(InvalidArgument) as kind:
        client.write(bank, "Something worth keeping.", kind="dream", source="user")
    assert "semantic" in kind.value.message  # names the accepted kinds
    assert memory_count(client, bank) == 0

    client.write(bank, "The build server is called hermes.", source="user")
    with pytest.raises(InvalidArgument) as top_k:
        client.recall(bank, "build server", top_k=0)
    assert "top_k" in top_k.value.message
    with pytest.raises(InvalidArgument):
        client.recall(bank, "build server", as_of="yesterday-ish")
    assert memory_count(client, bank) == 1


def test_unknown_ids_are_not_found(client: HindsightClient):
    for call in (client.get, client.trace, client.forget):
        with pytest.raises(NotFound) as info:
            call(UNKNOWN_ID)
        assert info.value.status == 404 and info.value.code == "not_found"
        assert UNKNOWN_ID in info.value.message
    with pytest.raises(InvalidArgument) as malformed:
        client.get("not-an-id")
    assert "ULID" in malformed.value.message


def test_get_and_trace_show_the_record_and_its_history(client: HindsightClient, bank: str):
    written = client.write(bank, "The user is allergic to peanuts.", source="user",
                           kind="semantic", subtype="fact", critical=True,
                           occurred_at="2026-01-05T09:30:00Z", session_id="s-1")
    memory = client.get(written.id)
    assert memory.id == written.id
    assert memory.kind == "semantic" and memory.subtype == "fact"
    assert memory.critical is True
    assert memory.provenance.source == "user" and memory.provenance.session_id == "s-1"
    assert memory.occurred_at.startswith("2026-01-05T09:30:00")
    assert memory.status.name == "active"
    assert memory.version >= 1
    assert memory.signature is not None and memory.signature.mac

    client.forget(written.id, reason="the user asked to forget it")
    trace = client.trace(written.id)
    assert trace.memory.id == written.id
    assert trace.memory.status.name == "archived"
    assert trace.integrity.startswith("verified"), trace.integrity
    kinds = [h.kind for h in trace.history]
    assert kinds[0] == "created"
    assert len(trace.history) >= 2
    last = trace.history[-1]
    assert last.actor == "forget"
    assert "the user asked to forget it" in last.reason
    assert [h.version for h in trace.history] == sorted(h.version for h in trace.history)


def test_forget_hides_a_memory_from_recall(client: HindsightClient, bank: str):
    keep = client.write(bank, "The team standup is at 9:15 every weekday.", source="user")
    drop = client.write(bank, "The team retro is on Thursday afternoons.", source="user")
    assert drop.id in client.recall(bank, "When is the team retro?").ids

    forgotten = client.forget(drop.id)
    assert drop.id in forgotten.changed
    after = client.recall(bank, "When is the team retro?")
    assert drop.id not in after.ids
    assert keep.id in client.recall(bank, "When is the standup?").ids
    assert client.get(drop.id).status.name == "archived"

    gone = client.forget(keep.id, hard=True)
    assert keep.id in gone.changed
    with pytest.raises(NotFound):
        client.get(keep.id)


def test_recall_over_several_banks(client: HindsightClient, bank: str):
    other = bank + "-other"
    a = client.write(bank, "The user's cat is called Miso.", source="user")
    b = client.write(other, "The user's dog is called Pepper.", source="user")
    result = client.recall([bank, other], "What are the user's pets called?")
    assert {a.id, b.id} <= set(result.ids)
    assert {h.memory.bank for h in result.hits} == {bank, other}


def test_feedback_moves_confidence_and_is_logged(client: HindsightClient, bank: str):
    written = client.write(bank, "Invoices are sent on the 25th of each month.", source="user")
    result = client.recall(bank, "When are invoices sent?")
    assert result.ids[0] == written.id
    fb = client.feedback(result.recall_id, written.id, "helpful")
    assert fb.applied is True
    assert fb.confidence_after > fb.confidence_before
    assert fb.memory.id == written.id
    again = client.feedback(result.recall_id, written.id, "helpful")
    assert again.applied is False

    logged = client.get_recall(result.recall_id)
    assert logged.id == result.recall_id
    assert [h.memory_id for h in logged.hits][0] == written.id
    assert [f.outcome for f in logged.feedback] == ["helpful"]
    listed = client.recalls(bank=bank)
    assert result.recall_id in [r.id for r in listed]

    with pytest.raises(InvalidArgument):
        client.feedback(result.recall_id, written.id, "delightful")


def test_banks_can_be_created_listed_changed_and_deleted(client: HindsightClient, bank: str):
    created = client.banks.create(bank, description="support agent memory", min_confidence=0.4)
    assert created.name == bank
    assert created.description == "support agent memory"
    assert created.min_confidence == pytest.approx(0.4)
    assert created.weights.relevance > 0
    with pytest.raises(AlreadyExists) as dup:
        client.banks.create(bank)
    assert dup.value.status == 409

    client.write(bank, "Refunds over 100 euros need a manager's approval.", source="user")
    info = client.banks.get(bank)
    assert info.bank.name == bank and info.memory_count == 1
    assert bank in [b.name for b in client.banks.list()]

    updated = client.banks.update(bank, description="billing agent memory",
                                  weights={"relevance": 0.7, "confidence": 0.2,
                                           "freshness": 0.1, "freshness_days": 30.0})
    assert updated.description == "billing agent memory"
    assert updated.weights.relevance == pytest.approx(0.7)
    assert updated.min_confidence == pytest.approx(0.4)

    assert client.banks.delete(bank) == 1
    with pytest.raises(NotFound):
        client.banks.get(bank)


def test_reflect_keeps_what_the_user_asked(client: HindsightClient, bank: str):
    trace = dict(
        steps=["apply the manifest", "check health"],
        tool_calls=[
            {"tool": "kubectl", "arguments": "apply -f billing.yaml",
             "error": 'error: context "prod" not found'},
            {"tool": "kubectl", "arguments": "--context production apply -f billing.yaml",
             "result": "configured"},
            {"tool": "curl", "arguments": "https://billing.internal/health", "result": "ok"},
        ],
        outcome="succeeded",
        feedback="Thanks. Never deploy on Fridays.",
    )
    preview = client.reflect(bank, "Deploy the billing service", dry_run=True, **trace)
    assert preview.reflector == "rules"
    contents = [m.content for m in preview.memories]
    assert "The user asked never to deploy on Fridays." in contents
    assert all(m.written is None for m in preview.memories)
    assert memory_count(client, bank) == 0

    done = client.reflect(bank, "Deploy the billing service", task_id="t-42", **trace)
    assert [m.content for m in done.memories] == contents
    written = [m.written for m in done.memories]
    assert all(w is not None and w.id for w in written)
    rule = client.get(written[contents.index("The user asked never to deploy on Fridays.")].id)
    assert rule.provenance.task_id == "t-42"


def test_a_bank_that_does_not_exist_is_not_found(client: HindsightClient, bank: str):
    with pytest.raises(NotFound) as info:
        client.recall(bank, "anything")
    assert bank in info.value.message
    with pytest.raises(NotFound):
        client.review(bank)
    with pytest.raises(NotFound):
        client.banks.delete(bank)


def test_status_reports_a_ready_node(client: HindsightClient):
    status = client.status()
    assert status.ready is True
    assert status.node_id >= 1
    assert "hash" in status.embedding_model.lower()
    assert status.version
    assert client.ready() is True
