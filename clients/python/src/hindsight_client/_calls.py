"""Requests as data: route, body and how to read the answer, shared by the sync and async clients
so that the two cannot drift apart in what they send."""

from __future__ import annotations

from dataclasses import dataclass
from typing import (
    Any,
    Callable,
    Dict,
    Generic,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    TypeVar,
    Union,
)
from urllib.parse import quote

from .models import (
    ApiKeyInfo,
    Bank,
    BankInfo,
    Conflict,
    CreatedApiKey,
    FeedbackResult,
    ForgetResult,
    LoggedRecall,
    Memory,
    Model,
    NodeStatus,
    RecallResult,
    ReflectResult,
    ResolveResult,
    ReviewResult,
    ReviewStrategies,
    ScoringWeights,
    TimeLike,
    ToolCall,
    Trace,
    WriteItem,
    WriteResult,
    format_time,
)

R = TypeVar("R")

ItemLike = Union[WriteItem, Mapping[str, Any], str]
ToolCallLike = Union[ToolCall, Mapping[str, Any]]
WeightsLike = Union[ScoringWeights, Mapping[str, float]]
StrategiesLike = Union[ReviewStrategies, Mapping[str, Any]]


@dataclass(frozen=True)
class Call(Generic[R]):
    method: str
    path: str
    parse: Callable[[Any], R]
    json: Optional[Dict[str, Any]] = None
    params: Optional[Dict[str, str]] = None


def seg(value: str) -> str:
    """One path segment: a bank such as ``acme/agent-7`` must not become two."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected a non-empty string for a path segment, got {value!r}")
    return quote(value, safe="")


def _obj(data: Any) -> Dict[str, Any]:
    return data if isinstance(data, dict) else {}


def _field(cls: Any, name: str) -> Callable[[Any], Any]:
    return lambda data: cls.from_dict(_obj(_obj(data).get(name)))


def _list(cls: Any, name: str) -> Callable[[Any], List[Any]]:
    return lambda data: [cls.from_dict(_obj(x)) for x in (_obj(data).get(name) or [])]


def _encode(value: Any) -> Any:
    return value.to_dict() if isinstance(value, Model) else dict(value)


def write_item(item: ItemLike) -> WriteItem:
    if isinstance(item, WriteItem):
        return item
    if isinstance(item, str):
        return WriteItem(content=item)
    if isinstance(item, Mapping):
        return WriteItem(**item)
    raise TypeError(f"a batch item is a WriteItem, a dict of write's arguments or a string, "
                    f"not {type(item).__name__}")


# ---------------------------------------------------------------------------------------------
# Memories


def write(bank: str, item: WriteItem) -> Call[WriteResult]:
    return Call("POST", f"/v1/banks/{seg(bank)}/memories", WriteResult.from_dict,
                json=item.to_request())


def write_batch(bank: str, items: Iterable[ItemLike]) -> Call[List[WriteResult]]:
    # Each item names the bank because a WriteRequest inside a batch has no path to take it from.
    body = {"items": [write_item(i).to_request(bank) for i in items]}
    return Call("POST", f"/v1/banks/{seg(bank)}/memories/batch",
                _list(WriteResult, "outcomes"), json=body)


def recall(
    banks: Union[str, Sequence[str]],
    query: str,
    *,
    top_k: Optional[int] = None,
    max_tokens: Optional[int] = None,
    as_of: Optional[TimeLike] = None,
    kinds: Optional[Sequence[str]] = None,
    tags: Optional[Sequence[str]] = None,
    occurred_from: Optional[TimeLike] = None,
    occurred_to: Optional[TimeLike] = None,
    min_confidence: Optional[float] = None,
    include_history: bool = False,
    include_archived: bool = False,
    consistency: Optional[str] = None,
    agent_role: Optional[str] = None,
    intent: Optional[str] = None,
    context: Optional[Mapping[str, str]] = None,
) -> Call[RecallResult]:
    body: Dict[str, Any] = {"query": query}
    if isinstance(banks, str):
        path = f"/v1/banks/{seg(banks)}/recall"
    else:
        path = "/v1/recall"
        body["banks"] = list(banks)
    for name, value in (("top_k", top_k), ("max_tokens", max_tokens),
                        ("consistency", consistency), ("agent_role", agent_role),
                        ("intent", intent)):
        if value is not None:
            body[name] = value
    if as_of is not None:
        body["as_of"] = format_time(as_of)
    filters: Dict[str, Any] = {}
    if kinds:
        filters["kinds"] = list(kinds)
    if tags:
        filters["tags"] = list(tags)
    if occurred_from is not None:
        filters["occurred_from"] = format_time(occurred_from)
    if occurred_to is not None:
        filters["occurred_to"] = format_time(occurred_to)
    if min_confidence is not None:
        filters["min_confidence"] = min_confidence
    if filters:
        body["filters"] = filters
    if include_history:
        body["include_history"] = True
    if include_archived:
        body["include_archived"] = True
    if context:
        body["context"] = dict(context)
    return Call("POST", path, RecallResult.from_dict, json=body)


def get(id: str) -> Call[Memory]:
    return Call("GET", f"/v1/memories/{seg(id)}", _field(Memory, "memory"))


def trace(id: str) -> Call[Trace]:
    return Call("GET", f"/v1/memories/{seg(id)}/trace", Trace.from_dict)


def forget(id: str, hard: bool = False, reason: Optional[str] = None) -> Call[ForgetResult]:
    body: Dict[str, Any] = {}
    if hard:
        body["hard"] = True
    if reason is not None:
        body["reason"] = reason
    return Call("POST", f"/v1/memories/{seg(id)}/forget", ForgetResult.from_dict, json=body)


def feedback(recall_id: str, memory_id: str, outcome: str) -> Call[FeedbackResult]:
    body = {"recall_id": recall_id, "memory_id": memory_id, "outcome": outcome}
    return Call("POST", "/v1/feedback", FeedbackResult.from_dict, json=body)


def recalls(
    bank: Optional[str] = None,
    query_contains: Optional[str] = None,
    since: Optional[TimeLike] = None,
    until: Optional[TimeLike] = None,
    limit: Optional[int] = None,
) -> Call[List[LoggedRecall]]:
    params: Dict[str, str] = {}
    if bank is not None:
        params["bank"] = bank
    if query_contains is not None:
        params["query_contains"] = query_contains
    if since is not None:
        params["since"] = format_time(since)
    if until is not None:
        params["until"] = format_time(until)
    if limit is not None:
        params["limit"] = str(limit)
    return Call("GET", "/v1/recalls", _list(LoggedRecall, "recalls"), params=params)


def get_recall(recall_id: str) -> Call[LoggedRecall]:
    return Call("GET", f"/v1/recalls/{seg(recall_id)}", LoggedRecall.from_dict)


# ---------------------------------------------------------------------------------------------
# Review, conflicts, reflection


def review(bank: str, as_of: Optional[TimeLike] = None) -> Call[ReviewResult]:
    body: Dict[str, Any] = {}
    if as_of is not None:
        body["as_of"] = format_time(as_of)
    return Call("POST", f"/v1/banks/{seg(bank)}/review", ReviewResult.from_dict, json=body)


def conflicts(bank: str, include_resolved: bool = False) -> Call[List[Conflict]]:
    params = {"include_resolved": "true" if include_resolved else "false"}
    return Call("GET", f"/v1/banks/{seg(bank)}/conflicts", _list(Conflict, "conflicts"),
                params=params)


def resolve_conflict(bank: str, id: int, outcome: str, note: str = "") -> Call[ResolveResult]:
    body: Dict[str, Any] = {"outcome": outcome}
    if note:
        body["note"] = note
    return Call("POST", f"/v1/banks/{seg(bank)}/conflicts/{seg(str(id))}/resolve",
                ResolveResult.from_dict, json=body)


def reflect(
    bank: str,
    goal: str,
    *,
    steps: Optional[Sequence[str]] = None,
    tool_calls: Optional[Sequence[ToolCallLike]] = None,
    outcome: str = "succeeded",
    feedback: Optional[str] = None,
    lang: Optional[str] = None,
    task_id: Optional[str] = None,
    dry_run: bool = False,
) -> Call[ReflectResult]:
    body: Dict[str, Any] = {"goal": goal, "outcome": outcome}
    if steps:
        body["steps"] = list(steps)
    if tool_calls:
        body["tool_calls"] = [
            (c if isinstance(c, ToolCall) else ToolCall(**c)).to_dict() for c in tool_calls
        ]
    for name, value in (("feedback", feedback), ("lang", lang), ("task_id", task_id)):
        if value is not None:
            body[name] = value
    if dry_run:
        body["dry_run"] = True
    return Call("POST", f"/v1/banks/{seg(bank)}/reflect", ReflectResult.from_dict, json=body)


# ---------------------------------------------------------------------------------------------
# Banks, keys, the node


def bank_patch(
    description: Optional[str] = None,
    min_confidence: Optional[float] = None,
    dedup_threshold: Optional[float] = None,
    working_ttl_seconds: Optional[int] = None,
    collapse_threshold: Optional[float] = None,
    weights: Optional[WeightsLike] = None,
    max_memories: Optional[int] = None,
    strategies: Optional[StrategiesLike] = None,
) -> Dict[str, Any]:
    patch: Dict[str, Any] = {}
    for name, value in (("description", description), ("min_confidence", min_confidence),
                        ("dedup_threshold", dedup_threshold),
                        ("working_ttl_seconds", working_ttl_seconds),
                        ("collapse_threshold", collapse_threshold),
                        ("max_memories", max_memories)):
        if value is not None:
            patch[name] = value
    if weights is not None:
        patch["weights"] = _encode(weights)
    if strategies is not None:
        patch["strategies"] = _encode(strategies)
    return patch


def list_banks() -> Call[List[BankInfo]]:
    return Call("GET", "/v1/banks", _list(BankInfo, "banks"))


def create_bank(name: str, settings: Dict[str, Any]) -> Call[Bank]:
    body: Dict[str, Any] = {"name": name}
    if settings:
        body["settings"] = settings
    return Call("POST", "/v1/banks", _field(Bank, "bank"), json=body)


def get_bank(name: str) -> Call[BankInfo]:
    return Call("GET", f"/v1/banks/{seg(name)}", _field(BankInfo, "info"))


def update_bank(name: str, patch: Dict[str, Any]) -> Call[Bank]:
    return Call("PATCH", f"/v1/banks/{seg(name)}", _field(Bank, "bank"), json={"patch": patch})


def delete_bank(name: str) -> Call[int]:
    return Call("DELETE", f"/v1/banks/{seg(name)}",
                lambda data: int(_obj(data).get("memories_removed") or 0))


def status() -> Call[NodeStatus]:
    return Call("GET", "/v1/status", NodeStatus.from_dict)


def list_keys() -> Call[List[ApiKeyInfo]]:
    return Call("GET", "/v1/keys", _list(ApiKeyInfo, "keys"))


def create_key(principal: str, grants: Sequence[str]) -> Call[CreatedApiKey]:
    body = {"principal": principal, "grants": list(grants)}
    return Call("POST", "/v1/keys", CreatedApiKey.from_dict, json=body)


def revoke_key(id: str) -> Call[ApiKeyInfo]:
    return Call("DELETE", f"/v1/keys/{seg(id)}", ApiKeyInfo.from_dict)
