"""HindsightStore against a real node: what a LangGraph user relies on from a store."""

from __future__ import annotations

import operator
import time
from datetime import datetime
from typing import Annotated, List, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore, GetOp, ListNamespacesOp, PutOp, SearchOp

from hindsight_client import AsyncHindsightClient, HindsightClient, HindsightError
from hindsight_client.adapters.langgraph import (
    KEY_FIELD,
    NAMESPACE_FIELD,
    HindsightStore,
    namespace_to_bank,
)


@pytest.fixture
def store(client: HindsightClient, prefix: str) -> HindsightStore:
    return HindsightStore(client, bank_prefix=prefix)


def test_is_a_langgraph_store(store: HindsightStore) -> None:
    assert isinstance(store, BaseStore)


def test_put_then_get_returns_the_value(store: HindsightStore) -> None:
    value = {"text": "Alice is vegetarian", "tags": ["food", "diet"], "n": 3, "nested": {"x": None}}
    store.put(("users", "alice"), "diet", value)

    item = store.get(("users", "alice"), "diet")
    assert item is not None
    assert item.value == value
    assert item.key == "diet"
    assert item.namespace == ("users", "alice")
    assert isinstance(item.created_at, datetime) and item.created_at.tzinfo is not None
    assert item.created_at == item.updated_at
    assert store.get(("users", "alice"), "no-such-key") is None
    assert store.get(("users", "nobody"), "diet") is None


def test_unicode_and_control_characters_round_trip(store: HindsightStore) -> None:
    value = {"text": "用户喜欢绿茶 \u0085 café\ttab", "emoji": "🍵"}
    store.put(("users", "wei"), "drink", value)
    assert store.get(("users", "wei"), "drink").value == value


def test_the_item_is_a_hindsight_memory(
    store: HindsightStore, client: HindsightClient, prefix: str
) -> None:
    store.put(("users", "alice"), "city", {"text": "Alice lives in Lisbon"})
    bank = store.bank_for(("users", "alice"))
    assert bank == f"{prefix}/users/alice"

    hits = client.recall(bank, "Where does Alice live?").hits
    assert hits, "the item should be recallable through the plain client"
    memory = hits[0].memory
    assert "Lisbon" in memory.content
    assert memory.metadata[KEY_FIELD] == "city"
    assert memory.metadata[NAMESPACE_FIELD] == '["users", "alice"]'
    assert memory.provenance.source == "tool"


def test_put_again_replaces(store: HindsightStore, client: HindsightClient) -> None:
    ns = ("users", "alice")
    store.put(ns, "diet", {"text": "Alice eats meat"})
    first = store.get(ns, "diet")
    time.sleep(0.01)
    store.put(ns, "diet", {"text": "Alice is now vegan"})

    item = store.get(ns, "diet")
    assert item.value == {"text": "Alice is now vegan"}
    assert item.created_at == first.created_at
    assert item.updated_at > first.updated_at
    listed = store.search(ns)
    assert [i.key for i in listed] == ["diet"]
    assert [i.value for i in listed] == [{"text": "Alice is now vegan"}]
    found = store.search(ns, query="what does alice eat")
    assert [i.value["text"] for i in found] == ["Alice is now vegan"]

    # The old value is archived in Hindsight, not lost: its history stays traceable.
    memories = client.recall(
        store.bank_for(ns), "Alice eats meat", include_archived=False
    ).memories
    assert all("meat" not in m.content for m in memories)


def test_put_of_the_same_value_keeps_one_item(store: HindsightStore) -> None:
    ns = ("users", "alice")
    store.put(ns, "k", {"text": "same"})
    store.put(ns, "k", {"text": "same"})
    assert [i.key for i in store.search(ns)] == ["k"]
    assert store.get(ns, "k").value == {"text": "same"}


def test_equal_values_under_different_keys_stay_separate_items(store: HindsightStore) -> None:
    # Hindsight merges near-duplicate memories; a store must keep one item per key anyway.
    ns = ("tasks",)
    for key in ("a", "b", "c"):
        store.put(ns, key, {"done": True})
    for key in ("a", "b", "c"):
        assert store.get(ns, key).value == {"done": True}
    assert sorted(i.key for i in store.search(ns)) == ["a", "b", "c"]
    assert sorted(i.key for i in store.search(ns, query="done")) == ["a", "b", "c"]
    store.delete(ns, "b")
    assert store.get(ns, "a") is not None and store.get(ns, "b") is None


def test_near_identical_values_stay_separate_items(
    store: HindsightStore, client: HindsightClient
) -> None:
    # Values that differ only in case embed alike: the node merges the second write unless it is
    # told apart.
    ns = ("prefs",)
    store.put(ns, "lower", {"text": "the user likes green tea"})
    store.put(ns, "upper", {"text": "The User Likes Green Tea"})
    assert store.get(ns, "lower").value == {"text": "the user likes green tea"}
    assert store.get(ns, "upper").value == {"text": "The User Likes Green Tea"}
    assert sorted(i.key for i in store.search(ns, query="green tea")) == ["lower", "upper"]


def test_an_equal_value_does_not_reinforce_another_item(
    store: HindsightStore, client: HindsightClient
) -> None:
    ns = ("flags",)
    store.put(ns, "a", {"on": True})
    store.put(ns, "b", {"on": True})
    memories = client.recall(store.bank_for(ns), "on").memories
    assert len(memories) == 2
    assert [m.support.count for m in memories] == [1, 1]


def test_search_with_a_query_ranks_the_relevant_item_first(store: HindsightStore) -> None:
    ns = ("users", "alice")
    store.put(ns, "food", {"text": "Alice loves spicy Thai curry and sushi"})
    store.put(ns, "work", {"text": "Alice works as a nurse at the city hospital"})
    store.put(ns, "pet", {"text": "Alice has a grey cat named Miso"})
    store.put(ns, "travel", {"text": "Alice flew to Japan last spring"})

    results = store.search(ns, query="Which food does Alice like to eat? curry or sushi?")
    assert results[0].key == "food"
    assert all(r.score is not None for r in results)
    scores = [r.score for r in results]
    assert scores == sorted(scores, reverse=True)

    assert store.search(ns, query="What is the name of her cat?", limit=1)[0].key == "pet"
    assert len(store.search(ns, query="Alice", limit=2)) == 2
    assert store.search(ns, query="Alice", limit=2, offset=3)[0].key in {
        "food", "work", "pet", "travel"
    }


def test_search_without_a_query_lists_newest_first(store: HindsightStore) -> None:
    ns = ("notes",)
    for i in range(5):
        store.put(ns, f"n{i}", {"i": i})
        time.sleep(0.005)
    listed = store.search(ns)
    assert [i.key for i in listed] == ["n4", "n3", "n2", "n1", "n0"]
    assert all(i.score is None for i in listed)
    assert [i.key for i in store.search(ns, limit=2, offset=1)] == ["n3", "n2"]


def test_search_filters_on_values(store: HindsightStore) -> None:
    ns = ("docs",)
    for key, kind, pages, lang, text in [
        ("a", "report", 3, "en", "quarterly sales report"),
        ("b", "memo", 1, "en", "memo about sales"),
        ("c", "report", 12, "de", "annual sales report"),
    ]:
        store.put(ns, key, {"type": kind, "pages": pages, "meta": {"lang": lang}, "text": text})

    assert sorted(i.key for i in store.search(ns, filter={"type": "report"})) == ["a", "c"]
    assert [i.key for i in store.search(ns, filter={"pages": {"$gt": 5}})] == ["c"]
    assert sorted(i.key for i in store.search(ns, filter={"pages": {"$lte": 3}})) == ["a", "b"]
    assert [i.key for i in store.search(ns, filter={"meta": {"lang": "de"}})] == ["c"]
    assert sorted(i.key for i in store.search(ns, filter={"type": {"$ne": "report"}})) == ["b"]
    ranked = store.search(ns, query="sales report", filter={"meta": {"lang": "en"}})
    assert sorted(i.key for i in ranked) == ["a", "b"]
    assert all(i.score is not None for i in ranked)


def test_namespaces_are_isolated(store: HindsightStore) -> None:
    store.put(("users", "alice"), "diet", {"text": "Alice is vegetarian"})
    store.put(("users", "bob"), "diet", {"text": "Bob eats everything"})
    store.put(("users", "alice", "work"), "diet", {"text": "the canteen is vegetarian"})

    assert store.get(("users", "alice"), "diet").value == {"text": "Alice is vegetarian"}
    assert store.get(("users", "bob"), "diet").value == {"text": "Bob eats everything"}
    assert [i.namespace for i in store.search(("users", "bob"))] == [("users", "bob")]
    assert {i.namespace for i in store.search(("users", "bob"), query="vegetarian")} == {
        ("users", "bob")
    }
    assert {i.namespace for i in store.search(("users",))} == {
        ("users", "alice"), ("users", "bob"), ("users", "alice", "work")
    }
    assert {i.namespace for i in store.search(("users", "alice"))} == {
        ("users", "alice"), ("users", "alice", "work")
    }


def test_namespaces_deeper_than_a_bank_name_stay_apart(store: HindsightStore) -> None:
    # With the test's prefix, labels past the third share their ancestor's bank.
    deep, deeper = ("a", "b", "c"), ("a", "b", "c", "d", "用户")
    assert store.bank_for(deep) == store.bank_for(deeper)
    store.put(deep, "k", {"v": "deep"})
    store.put(deeper, "k", {"v": "deeper"})
    assert store.get(deep, "k").value == {"v": "deep"}
    assert store.get(deeper, "k").value == {"v": "deeper"}
    assert [i.namespace for i in store.search(("a", "b", "c", "d"))] == [deeper]
    assert store.list_namespaces(prefix=("a", "b", "c", "d")) == [deeper]
    assert store.list_namespaces() == [deep, deeper]


def test_namespaces_that_share_a_bank_stay_apart(store: HindsightStore) -> None:
    # Both sanitise to the same bank name; the exact namespace is in each memory.
    a, b = ("Users", "Alice"), ("users", "alice")
    assert store.bank_for(a) == store.bank_for(b)
    store.put(a, "k", {"v": "upper"})
    store.put(b, "k", {"v": "lower"})
    assert store.get(a, "k").value == {"v": "upper"}
    assert store.get(b, "k").value == {"v": "lower"}
    assert [i.value for i in store.search(a)] == [{"v": "upper"}]
    store.delete(a, "k")
    assert store.get(a, "k") is None
    assert store.get(b, "k").value == {"v": "lower"}


def test_stores_with_different_prefixes_do_not_see_each_other(
    client: HindsightClient, prefix: str
) -> None:
    one = HindsightStore(client, bank_prefix=f"{prefix}/one")
    two = HindsightStore(client, bank_prefix=f"{prefix}/two")
    one.put(("ns",), "k", {"v": 1})
    assert two.get(("ns",), "k") is None
    assert two.search(()) == []
    assert two.list_namespaces() == []
    assert one.list_namespaces() == [("ns",)]


def test_delete_removes(store: HindsightStore) -> None:
    ns = ("users", "alice")
    store.put(ns, "diet", {"text": "Alice is vegetarian"})
    store.put(ns, "pet", {"text": "Alice has a cat"})
    store.delete(ns, "diet")

    assert store.get(ns, "diet") is None
    assert [i.key for i in store.search(ns)] == ["pet"]
    assert "diet" not in [i.key for i in store.search(ns, query="vegetarian")]
    store.delete(ns, "diet")  # deleting what is gone is not an error
    store.delete(("never", "written"), "x")
    store.put(ns, "diet", {"text": "Alice eats fish"})
    assert store.get(ns, "diet").value == {"text": "Alice eats fish"}


def test_hard_delete(client: HindsightClient, prefix: str) -> None:
    store = HindsightStore(client, bank_prefix=prefix, hard_delete=True)
    store.put(("ns",), "k", {"v": 1})
    bank = store.bank_for(("ns",))
    memory_id = client.recall(bank, "v").ids[0]
    store.delete(("ns",), "k")
    assert store.get(("ns",), "k") is None
    with pytest.raises(HindsightError):
        client.get(memory_id)


def test_list_namespaces_lists(store: HindsightStore) -> None:
    # The example of BaseStore.list_namespaces's documentation.
    namespaces = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"),
                  ("a", "c", "f")]
    for ns in namespaces:
        store.put(ns, "k", {"v": "/".join(ns)})

    assert store.list_namespaces() == namespaces
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")
    ]
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(max_depth=1) == [("a",)]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "d", "e"), ("a", "b", "d", "i")]
    assert store.list_namespaces(prefix=("zzz",)) == []

    store.delete(("a", "c", "f"), "k")
    assert ("a", "c", "f") not in store.list_namespaces()


def test_batch_runs_ops_in_order(store: HindsightStore) -> None:
    ns = ("batch",)
    results = store.batch(
        [
            PutOp(ns, "x", {"v": 1}),
            GetOp(ns, "x"),
            PutOp(ns, "x", {"v": 2}),
            GetOp(ns, "x"),
            SearchOp(ns),
            ListNamespacesOp(),
            PutOp(ns, "x", None),
            GetOp(ns, "x"),
        ]
    )
    assert results[0] is None and results[2] is None and results[6] is None
    assert results[1].value == {"v": 1}
    assert results[3].value == {"v": 2}
    assert [i.value for i in results[4]] == [{"v": 2}]
    assert results[5] == [ns]
    assert results[7] is None


def test_namespace_to_bank_mapping() -> None:
    assert namespace_to_bank(("users", "alice")) == "users/alice"
    assert namespace_to_bank(("Users", "Alice Smith@Example")) == "users/alice-smith-example"
    assert namespace_to_bank(("_private", "x")) == "private/x"
    assert namespace_to_bank(("memories",), "acme/prod") == "acme/prod/memories"
    assert namespace_to_bank(("a", "b", "c", "d")) == "a/b/c/d"
    # Past the fourth segment, labels share their ancestor's bank.
    assert namespace_to_bank(("a", "b", "c", "d", "e")) == "a/b/c/d"
    assert namespace_to_bank(("a", "b", "c"), "acme/prod") == "acme/prod/a/b"
    assert namespace_to_bank(("a", "b", "用户"), "acme/prod") == "acme/prod/a/b"
    with pytest.raises(ValueError, match="no letter or digit"):
        namespace_to_bank(("users", "用户"))
    with pytest.raises(ValueError, match="128"):
        namespace_to_bank(("x" * 100, "y" * 40))
    with pytest.raises(ValueError, match="empty namespace"):
        namespace_to_bank(())
    with pytest.raises(ValueError, match="bank_prefix"):
        namespace_to_bank(("a",), "Not A Bank")


def test_what_cannot_map_is_refused_clearly(store: HindsightStore, client: HindsightClient) -> None:
    with pytest.raises(ValueError, match="no letter or digit"):
        store.put(("用户",), "k", {"v": 1})
    with pytest.raises(TypeError, match="JSON"):
        store.put(("ns",), "k", {"when": object()})
    with pytest.raises(ValueError, match="bank_prefix"):
        HindsightStore(client, bank_prefix="a/b/c/d")
    # Nothing under an unmappable prefix can exist, so searching it finds nothing.
    assert store.search(("用户",)) == []


def test_a_refused_put_keeps_the_previous_value(store: HindsightStore) -> None:
    store.put(("ns",), "k", {"v": "kept"})
    with pytest.raises(TypeError):
        store.put(("ns",), "k", {"v": object()})
    assert store.get(("ns",), "k").value == {"v": "kept"}


@pytest.mark.anyio
async def test_async_methods_with_an_async_client(
    async_client: AsyncHindsightClient, prefix: str
) -> None:
    async with async_client:
        store = HindsightStore(async_client=async_client, bank_prefix=prefix)
        ns = ("users", "carol")
        await store.aput(ns, "drink", {"text": "Carol drinks green tea every morning"})
        await store.aput(ns, "sport", {"text": "Carol plays tennis on Sundays"})
        item = await store.aget(ns, "drink")
        assert item.value == {"text": "Carol drinks green tea every morning"}
        found = await store.asearch(ns, query="what does carol drink in the morning?")
        assert found[0].key == "drink" and found[0].score is not None
        assert await store.alist_namespaces() == [ns]
        await store.adelete(ns, "drink")
        assert await store.aget(ns, "drink") is None
        with pytest.raises(RuntimeError, match="async client"):
            store.get(ns, "sport")


@pytest.mark.anyio
async def test_async_methods_with_only_a_sync_client(store: HindsightStore) -> None:
    await store.aput(("ns",), "k", {"v": 1})
    assert (await store.aget(("ns",), "k")).value == {"v": 1}
    assert [i.key for i in await store.asearch(("ns",))] == ["k"]


def test_store_from_a_url(node, prefix: str) -> None:
    with HindsightStore(base_url=node.url, api_key="", bank_prefix=prefix) as store:
        store.put(("ns",), "k", {"v": 1})
        assert store.get(("ns",), "k").value == {"v": 1}


class State(TypedDict):
    user: str
    message: str
    answers: Annotated[List[str], operator.add]


def test_a_graph_writes_and_reads_through_the_store(store: HindsightStore) -> None:
    def remember(state: State, runtime: Runtime) -> dict:
        ns = ("users", state["user"])
        if state["message"].startswith("remember: "):
            fact = state["message"][len("remember: "):]
            runtime.store.put(ns, f"fact-{len(runtime.store.search(ns))}", {"text": fact})
        return {}

    def answer(state: State, runtime: Runtime) -> dict:
        hits = runtime.store.search(("users", state["user"]), query=state["message"], limit=1)
        return {"answers": [hits[0].value["text"] if hits else "I don't know"]}

    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("answer", answer)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "answer")
    builder.add_edge("answer", END)
    graph = builder.compile(store=store)

    def say(user: str, message: str) -> List[str]:
        return graph.invoke({"user": user, "message": message, "answers": []})["answers"]

    say("dana", "remember: Dana's favourite colour is teal")
    say("dana", "remember: Dana was born in Oslo")
    assert say("dana", "What is Dana's favourite colour?") == ["Dana's favourite colour is teal"]
    assert say("erik", "What is Erik's favourite colour?") == ["I don't know"]
    assert sorted(i.key for i in store.search(("users", "dana"))) == ["fact-0", "fact-1"]


@pytest.mark.anyio
async def test_a_graph_runs_async_through_the_store(
    async_client: AsyncHindsightClient, prefix: str
) -> None:
    async with async_client:
        store = HindsightStore(async_client=async_client, bank_prefix=prefix)

        async def write(state: State, runtime: Runtime) -> dict:
            await runtime.store.aput(("users", state["user"]), "last", {"text": state["message"]})
            return {}

        async def read(state: State, runtime: Runtime) -> dict:
            item = await runtime.store.aget(("users", state["user"]), "last")
            return {"answers": [item.value["text"]]}

        builder = StateGraph(State)
        builder.add_node("write", write)
        builder.add_node("read", read)
        builder.add_edge(START, "write")
        builder.add_edge("write", "read")
        builder.add_edge("read", END)
        graph = builder.compile(store=store)
        out = await graph.ainvoke({"user": "fay", "message": "hello from fay", "answers": []})
        assert out["answers"] == ["hello from fay"]
