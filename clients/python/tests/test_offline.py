"""What the client sends and how it reads answers, checked against a fake transport (no node)."""

from __future__ import annotations

import inspect
import json
from datetime import datetime, timezone
from typing import Any, Dict, List

import httpx
import pytest

import hindsight_client as hc
from hindsight_client import (
    AsyncHindsightClient,
    HindsightClient,
    HindsightError,
    InvalidArgument,
    NotFound,
    RateLimited,
    Unavailable,
    WriteItem,
)


def fake(answer: Any = None, status: int = 200, headers: Dict[str, str] = None):
    """A client whose every request is recorded and answered with ``answer``."""
    seen: List[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if isinstance(answer, (bytes, str)):
            return httpx.Response(status, content=answer, headers=headers)
        return httpx.Response(status, json=answer if answer is not None else {}, headers=headers)

    client = HindsightClient("http://node.test:7401", api_key="hs_k1_0123456789abcdef",
                             transport=httpx.MockTransport(handler))
    return client, seen


def body(request: httpx.Request) -> Any:
    return json.loads(request.content) if request.content else None


def test_bank_names_are_one_percent_encoded_path_segment() -> None:
    client, seen = fake({"id": "01J", "disposition": "created"})
    client.write("acme/agent 7", "hello")
    assert seen[0].url.raw_path == b"/v1/banks/acme%2Fagent%207/memories"
    client.banks.get("acme/agent-7")
    assert seen[1].url.raw_path == b"/v1/banks/acme%2Fagent-7"


def test_write_sends_a_write_request_with_provenance_and_no_unset_fields() -> None:
    client, seen = fake({"id": "01J", "disposition": "created"})
    result = client.write(
        "b", "The user likes tea.", kind="semantic", source="tool", tool="crm",
        occurred_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc), tags=["drinks"],
        metadata={"user_id": "u1"}, critical=True,
    )
    assert seen[0].method == "POST"
    assert seen[0].headers["authorization"] == "Bearer hs_k1_0123456789abcdef"
    assert seen[0].headers["content-type"] == "application/json"
    assert body(seen[0]) == {
        "content": "The user likes tea.",
        "kind": "semantic",
        "occurred_at": "2026-01-02T03:04:05.000Z",
        "critical": True,
        "tags": ["drinks"],
        "metadata": {"user_id": "u1"},
        "provenance": {"source": "tool", "tool": "crm"},
    }
    assert result.id == "01J" and result.stored


def test_batch_items_may_be_strings_dicts_or_write_items() -> None:
    client, seen = fake({"outcomes": [{"id": "a", "disposition": "created"}] * 3})
    out = client.write_batch("b", ["one", {"content": "two", "source": "user"},
                                   WriteItem(content="three", ttl_seconds=60)])
    assert [o.id for o in out] == ["a", "a", "a"]
    assert seen[0].url.path == "/v1/banks/b/memories/batch"
    assert body(seen[0]) == {"items": [
        {"bank": "b", "content": "one"},
        {"bank": "b", "content": "two", "provenance": {"source": "user"}},
        {"bank": "b", "content": "three", "ttl_seconds": 60},
    ]}


def test_recall_routes_one_bank_by_path_and_several_by_body() -> None:
    client, seen = fake({"hits": []})
    client.recall("acme/a", "q", top_k=3, kinds=["semantic"], min_confidence=0.5,
                  intent="facts", context={"user_id": "u1"})
    assert seen[0].url.raw_path == b"/v1/banks/acme%2Fa/recall"
    assert body(seen[0]) == {"query": "q", "top_k": 3, "intent": "facts",
                             "filters": {"kinds": ["semantic"], "min_confidence": 0.5},
                             "context": {"user_id": "u1"}}
    client.recall(["a", "b"], "q")
    assert seen[1].url.path == "/v1/recall"
    assert body(seen[1]) == {"query": "q", "banks": ["a", "b"]}


def test_top_k_zero_is_sent_for_the_node_to_judge() -> None:
    client, seen = fake({"hits": []})
    client.recall("b", "q", top_k=0)
    assert body(seen[0])["top_k"] == 0


def test_answers_parse_into_dataclasses_and_unknown_fields_are_ignored() -> None:
    answer = {
        "hits": [{
            "memory": {"id": "m1", "content": "c", "status": {"name": "active"},
                       "provenance": {"source": "user"}, "brand_new_field": {"x": 1},
                       "version": "3"},
            "status": {"name": "active"},
            "score": 0.75,
            "explain": {"arms": [{"arm": "semantic", "rank": 1, "score": 0.9}],
                        "relevance": 0.9, "flags": ["uncorroborated"]},
            "also_new": True,
        }],
        "time_window": {"from": "2026-01-01T00:00:00.000Z", "to": "2026-01-02T00:00:00.000Z"},
        "recall_id": "r1",
    }
    client, _ = fake(answer)
    result = client.recall("b", "q")
    (hit,) = result.hits
    assert isinstance(hit, hc.RecallHit) and isinstance(hit.memory, hc.Memory)
    assert hit.memory.version == 3
    assert hit.explain.arms[0].arm == "semantic"
    assert hit.explain.flags == ["uncorroborated"]
    assert hit.memory.tags == [] and hit.memory.slot is None
    assert result.time_window is not None
    assert result.time_window.from_ == "2026-01-01T00:00:00.000Z"
    assert result.ids == ["m1"] and len(result) == 1


@pytest.mark.parametrize(
    "status,payload,cls,code",
    [
        (400, {"code": "invalid_argument", "message": "content is empty"}, InvalidArgument,
         "invalid_argument"),
        (404, {"code": "not_found", "message": "no memory 01J"}, NotFound, "not_found"),
        (409, {"code": "already_exists", "message": "bank b exists"}, hc.AlreadyExists,
         "already_exists"),
        (500, {"code": "data_loss", "message": "tampered"}, hc.DataLoss, "data_loss"),
        (503, b"<html>bad gateway</html>", Unavailable, "unavailable"),
        (418, {"code": "something_new", "message": "?"}, HindsightError, "something_new"),
    ],
)
def test_errors_map_to_classes_by_code_then_status(status, payload, cls, code) -> None:
    client, _ = fake(payload, status=status)
    with pytest.raises(HindsightError) as info:
        client.get("01J")
    assert type(info.value) is cls
    assert info.value.code == code and info.value.status == status
    assert info.value.message


def test_rate_limited_carries_the_wait() -> None:
    client, _ = fake({"code": "resource_exhausted", "message": "slow down"}, status=429,
                     headers={"retry-after": "2"})
    with pytest.raises(RateLimited) as info:
        client.status()
    assert info.value.retry_after == 2.0


def test_rate_limited_reads_the_wait_from_the_message_without_a_header() -> None:
    client, _ = fake({"code": "resource_exhausted",
                      "message": "rate limit of 0.5 requests/s exceeded; retry in 1954 ms"},
                     status=429)
    with pytest.raises(RateLimited) as info:
        client.status()
    assert info.value.retry_after == pytest.approx(1.954)


def test_an_unreachable_node_is_unavailable() -> None:
    with HindsightClient("http://127.0.0.1:9", api_key="", timeout=2.0) as client:
        with pytest.raises(Unavailable) as info:
            client.status()
        assert client.ready() is False
    assert info.value.status is None


def test_api_key_comes_from_the_environment_unless_given(monkeypatch) -> None:
    monkeypatch.setenv("HINDSIGHT_API_KEY", "hs_env_0123456789abcdef")
    seen: List[httpx.Request] = []
    transport = httpx.MockTransport(lambda r: seen.append(r) or httpx.Response(200, json={}))
    HindsightClient("http://n", transport=transport).status()
    HindsightClient("http://n", api_key="", transport=transport).status()
    assert seen[0].headers["authorization"] == "Bearer hs_env_0123456789abcdef"
    assert "authorization" not in seen[1].headers


def test_sync_and_async_clients_have_the_same_methods() -> None:
    pairs = [(HindsightClient, AsyncHindsightClient), (hc.Banks, hc.AsyncBanks),
             (hc.Keys, hc.AsyncKeys)]
    for sync_cls, async_cls in pairs:
        public = {n for n in dir(sync_cls) if not n.startswith("_") and n != "close"}
        apublic = {n for n in dir(async_cls) if not n.startswith("_") and n != "aclose"}
        assert public == apublic, (sync_cls, public ^ apublic)
        for name in public:
            s, a = getattr(sync_cls, name), getattr(async_cls, name)
            if callable(s):
                assert inspect.iscoroutinefunction(a), name
                assert (list(inspect.signature(s).parameters)
                        == list(inspect.signature(a).parameters)), name


@pytest.mark.anyio
async def test_async_client_sends_the_same_requests() -> None:
    seen: List[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(404, json={"code": "not_found", "message": "no bank a/b"})

    async with AsyncHindsightClient("http://n", api_key="",
                                    transport=httpx.MockTransport(handler)) as client:
        with pytest.raises(NotFound):
            await client.banks.get("a/b")
    assert seen[0].url.raw_path == b"/v1/banks/a%2Fb"
