"""Typed views of the API's JSON bodies.

Each class mirrors one message of ``proto/hindsight/v1`` under the proto field names. Fields the
node leaves out take the proto3 default, and fields this version does not know are ignored, so a
newer node does not break an older client. Times stay RFC 3339 strings as the node sent them;
``parse_time`` turns one into a ``datetime``.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import (
    Any,
    Dict,
    Iterator,
    List,
    Mapping,
    Optional,
    Type,
    TypeVar,
    Union,
    get_args,
    get_origin,
    get_type_hints,
)

T = TypeVar("T", bound="Model")

TimeLike = Union[str, datetime]


def parse_time(value: str) -> datetime:
    """An RFC 3339 time from the node as an aware ``datetime``."""
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    # Python < 3.11 only parses 3 or 6 fractional digits.
    if "." in text:
        head, _, rest = text.partition(".")
        digits = ""
        while rest and rest[0].isdigit():
            digits, rest = digits + rest[0], rest[1:]
        text = f"{head}.{(digits + '000000')[:6]}{rest}"
    return datetime.fromisoformat(text)


def format_time(value: TimeLike) -> str:
    """A time for the node: strings pass through, a naive ``datetime`` is taken as local time."""
    if isinstance(value, str):
        return value
    if isinstance(value, datetime):
        utc = value.astimezone(timezone.utc)
        return utc.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    raise TypeError(f"expected an RFC 3339 string or a datetime, got {type(value).__name__}")


_HINTS: Dict[type, Dict[str, Any]] = {}


def _hints(cls: type) -> Dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = get_type_hints(cls)
        _HINTS[cls] = hints
    return hints


def _decode(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = get_origin(tp)
    if origin is Union:
        inner = [a for a in get_args(tp) if a is not type(None)]
        return _decode(inner[0], value) if len(inner) == 1 else value
    if origin in (list, List):
        (item,) = get_args(tp) or (Any,)
        return [_decode(item, v) for v in value] if isinstance(value, list) else []
    if origin in (dict, Dict):
        args = get_args(tp)
        item = args[1] if len(args) == 2 else Any
        return {k: _decode(item, v) for k, v in value.items()} if isinstance(value, dict) else {}
    if isinstance(tp, type) and issubclass(tp, Model):
        if isinstance(value, dict):
            return tp.from_dict(value)
        return tp._from_scalar(value)
    if tp is float:
        # proto3 JSON spells non-finite floats as strings.
        return float(value)
    if tp is int:
        # proto3 JSON may send 64-bit integers as strings; the node sends numbers, but a proxy
        # that re-encodes must not break the client.
        return int(value)
    if tp is bool:
        return bool(value)
    return value


def _json_name(f: dataclasses.Field) -> str:  # type: ignore[type-arg]
    return str(f.metadata.get("json", f.name))


class Model:
    """Base of every response type: built from a JSON object, ignoring unknown fields."""

    @classmethod
    def from_dict(cls: Type[T], data: Mapping[str, Any]) -> T:
        hints = _hints(cls)
        kwargs: Dict[str, Any] = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if not f.init:
                continue
            raw = data.get(_json_name(f))
            if raw is not None:
                kwargs[f.name] = _decode(hints[f.name], raw)
        return cls(**kwargs)

    @classmethod
    def _from_scalar(cls: Type[T], value: Any) -> T:
        return cls()

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object for the node, leaving out unset (``None``) fields."""
        out: Dict[str, Any] = _encode(self)
        return out


def _encode(value: Any) -> Any:
    if isinstance(value, Model) and dataclasses.is_dataclass(value):
        out: Dict[str, Any] = {}
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            if v is not None:
                out[_json_name(f)] = _encode(v)
        return out
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items() if v is not None}
    if isinstance(value, datetime):
        return format_time(value)
    return value


# ---------------------------------------------------------------------------------------------
# Memories


@dataclass
class Provenance(Model):
    source: str = ""
    tool: Optional[str] = None
    agent_id: Optional[str] = None
    session_id: Optional[str] = None
    task_id: Optional[str] = None
    tool_call_id: Optional[str] = None


@dataclass
class Slot(Model):
    subject: str = ""
    attribute: str = ""
    value: str = ""


@dataclass
class MemoryStatus(Model):
    name: str = ""
    superseded_by: Optional[str] = None
    quarantine_reason: Optional[str] = None

    def __str__(self) -> str:
        return self.name

    @classmethod
    def _from_scalar(cls, value: Any) -> "MemoryStatus":
        # Some tools print a status as its bare name.
        return cls(name=str(value))


@dataclass
class StatusChange(Model):
    effective_at: str = ""
    status: MemoryStatus = field(default_factory=MemoryStatus)
    confidence: Optional[float] = None


@dataclass
class Support(Model):
    count: int = 0
    merged: List[str] = field(default_factory=list)
    derived_from: List[str] = field(default_factory=list)


@dataclass
class AccessStats(Model):
    count: int = 0
    last_accessed_at: Optional[str] = None


@dataclass
class Signature(Model):
    key_id: str = ""
    mac: str = ""


@dataclass
class Memory(Model):
    id: str = ""
    bank: str = ""
    kind: str = ""
    subtype: Optional[str] = None
    content: str = ""
    entities: List[str] = field(default_factory=list)
    slot: Optional[Slot] = None
    provenance: Provenance = field(default_factory=Provenance)
    occurred_at: str = ""
    recorded_at: str = ""
    valid_from: str = ""
    valid_to: Optional[str] = None
    expires_at: Optional[str] = None
    confidence: float = 0.0
    importance: float = 0.0
    critical: bool = False
    status: MemoryStatus = field(default_factory=MemoryStatus)
    status_log: List[StatusChange] = field(default_factory=list)
    support: Support = field(default_factory=Support)
    access: AccessStats = field(default_factory=AccessStats)
    tags: List[str] = field(default_factory=list)
    metadata: Dict[str, str] = field(default_factory=dict)
    signature: Optional[Signature] = None
    version: int = 0
    updated_at: str = ""
    updated_index: int = 0


@dataclass
class FieldChange(Model):
    field: str = ""
    old: str = ""
    new: str = ""


@dataclass
class HistoryEntry(Model):
    memory: str = ""
    version: int = 0
    kind: str = ""
    effective_at: str = ""
    recorded_at: str = ""
    log_index: int = 0
    actor: str = ""
    reason: str = ""
    changes: List[FieldChange] = field(default_factory=list)


@dataclass
class Trace(Model):
    memory: Memory = field(default_factory=Memory)
    history: List[HistoryEntry] = field(default_factory=list)
    related: List[Memory] = field(default_factory=list)
    integrity: str = ""


@dataclass
class ForgetResult(Model):
    changed: List[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# Writing


@dataclass
class ImportanceScores(Model):
    reuse: float = 0.0
    impact: float = 0.0
    stability: float = 0.0
    uniqueness: float = 0.0
    total: float = 0.0


@dataclass
class WriteResult(Model):
    id: str = ""
    disposition: str = ""
    merged_into: Optional[str] = None
    similarity: Optional[float] = None
    quarantine_reason: Optional[str] = None
    importance: Optional[ImportanceScores] = None

    @property
    def stored(self) -> bool:
        """Whether anything was kept (a low-importance write stores nothing)."""
        return self.disposition != "rejected_low_importance"


@dataclass
class WriteItem(Model):
    """One memory of a batch write; the fields are ``write``'s keyword arguments."""

    content: str = ""
    kind: Optional[str] = None
    subtype: Optional[str] = None
    source: Optional[str] = None
    tool: Optional[str] = None
    agent_id: Optional[str] = None
    session_id: Optional[str] = None
    task_id: Optional[str] = None
    tool_call_id: Optional[str] = None
    occurred_at: Optional[TimeLike] = None
    ttl_seconds: Optional[int] = None
    confidence: Optional[float] = None
    importance: Optional[float] = None
    critical: bool = False
    tags: Optional[List[str]] = None
    metadata: Optional[Dict[str, str]] = None

    def to_request(self, bank: Optional[str] = None) -> Dict[str, Any]:
        """The ``WriteRequest`` JSON object."""
        body: Dict[str, Any] = {"content": self.content}
        if bank is not None:
            body["bank"] = bank
        for name in ("kind", "subtype", "ttl_seconds", "confidence", "importance"):
            value = getattr(self, name)
            if value is not None:
                body[name] = value
        if self.occurred_at is not None:
            body["occurred_at"] = format_time(self.occurred_at)
        if self.critical:
            body["critical"] = True
        if self.tags:
            body["tags"] = list(self.tags)
        if self.metadata:
            body["metadata"] = dict(self.metadata)
        provenance = {
            name: getattr(self, name)
            for name in ("source", "tool", "agent_id", "session_id", "task_id", "tool_call_id")
            if getattr(self, name) is not None
        }
        if provenance:
            body["provenance"] = provenance
        return body


# ---------------------------------------------------------------------------------------------
# Recall


@dataclass
class ArmHit(Model):
    arm: str = ""
    rank: int = 0
    score: float = 0.0


@dataclass
class Explain(Model):
    arms: List[ArmHit] = field(default_factory=list)
    relevance: float = 0.0
    confidence: float = 0.0
    freshness: float = 0.0
    score: float = 0.0
    status: str = ""
    flags: List[str] = field(default_factory=list)
    collapsed: List[str] = field(default_factory=list)
    adjustments: List[str] = field(default_factory=list)


@dataclass
class RecallHit(Model):
    memory: Memory = field(default_factory=Memory)
    status: MemoryStatus = field(default_factory=MemoryStatus)
    score: float = 0.0
    explain: Explain = field(default_factory=Explain)

    @property
    def id(self) -> str:
        return self.memory.id

    @property
    def content(self) -> str:
        return self.memory.content


@dataclass
class TimeWindow(Model):
    from_: str = field(default="", metadata={"json": "from"})
    to: str = ""


@dataclass
class RecallResult(Model):
    hits: List[RecallHit] = field(default_factory=list)
    time_window: Optional[TimeWindow] = None
    tokens_used: int = 0
    took_micros: int = 0
    recall_id: str = ""

    def __iter__(self) -> Iterator[RecallHit]:
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.hits)

    @property
    def memories(self) -> List[Memory]:
        return [h.memory for h in self.hits]

    @property
    def ids(self) -> List[str]:
        return [h.memory.id for h in self.hits]


@dataclass
class FeedbackResult(Model):
    memory: Memory = field(default_factory=Memory)
    confidence_before: float = 0.0
    confidence_after: float = 0.0
    applied: bool = False


@dataclass
class LoggedHit(Model):
    memory_id: str = ""
    bank: str = ""
    rank: int = 0
    score: float = 0.0
    content: str = ""
    explain: Explain = field(default_factory=Explain)


@dataclass
class FeedbackEvent(Model):
    memory_id: str = ""
    outcome: str = ""
    at: str = ""
    principal: str = ""
    confidence_before: float = 0.0
    confidence_after: float = 0.0


@dataclass
class LoggedRecall(Model):
    id: str = ""
    at: str = ""
    principal: str = ""
    # The RecallRequest as the node logged it.
    request: Dict[str, Any] = field(default_factory=dict)
    hits: List[LoggedHit] = field(default_factory=list)
    latency_micros: int = 0
    feedback: List[FeedbackEvent] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# Review, conflicts, reflection


@dataclass
class ReviewCycle(Model):
    cycle: int = 0
    as_of: str = ""
    started_at: str = ""
    took_micros: int = 0
    changed: int = 0
    pairs_considered: int = 0
    all_pairs: int = 0
    pairs_judged: int = 0
    pairs_deferred: int = 0
    tokens_used: int = 0
    token_budget: int = 0
    judge: str = ""
    decisions: Dict[str, int] = field(default_factory=dict)
    expired: int = 0


@dataclass
class ReviewResult(Model):
    bank: str = ""
    as_of: str = ""
    considered: int = 0
    expired: List[str] = field(default_factory=list)
    took_micros: int = 0
    updated: List[str] = field(default_factory=list)
    conflicts_opened: List[int] = field(default_factory=list)
    cycle: ReviewCycle = field(default_factory=ReviewCycle)
    created: List[str] = field(default_factory=list)
    purged: List[str] = field(default_factory=list)
    backlog: int = 0


@dataclass
class Conflict(Model):
    id: int = 0
    bank: str = ""
    a: str = ""
    b: str = ""
    judge: str = ""
    explanation: str = ""
    opened_at: str = ""
    outcome: Optional[str] = None
    resolved_at: Optional[str] = None
    note: str = ""

    @property
    def resolved(self) -> bool:
        return self.outcome is not None


@dataclass
class ResolveResult(Model):
    conflict: Conflict = field(default_factory=Conflict)
    changed: List[str] = field(default_factory=list)


@dataclass
class ToolCall(Model):
    tool: str = ""
    # The call's arguments as the agent sent them (usually a JSON text).
    arguments: str = ""
    result: Optional[str] = None
    error: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = _encode(self)
        if not isinstance(self.arguments, str):
            out["arguments"] = json.dumps(self.arguments, ensure_ascii=False)
        return out


@dataclass
class Reflection(Model):
    content: str = ""
    kind: str = ""
    subtype: Optional[str] = None
    tags: List[str] = field(default_factory=list)
    why: str = ""
    written: Optional[WriteResult] = None


@dataclass
class ReflectResult(Model):
    reflector: str = ""
    memories: List[Reflection] = field(default_factory=list)
    tokens_used: int = 0


# ---------------------------------------------------------------------------------------------
# Banks and the node


@dataclass
class ScoringWeights(Model):
    relevance: float = 0.0
    confidence: float = 0.0
    freshness: float = 0.0
    freshness_days: float = 0.0
    fact_freshness_days: float = 0.0


@dataclass
class ReviewStrategies(Model):
    temporal: str = ""
    source: str = ""
    inference: str = ""
    undecidable: str = ""
    duplicate: str = ""
    supersede_boost: float = 0.0
    superseded_confidence: float = 0.0
    dispute_factor: float = 0.0
    pending_review_factor: float = 0.0


@dataclass
class Bank(Model):
    name: str = ""
    description: str = ""
    created_at: str = ""
    updated_at: str = ""
    weights: ScoringWeights = field(default_factory=ScoringWeights)
    min_confidence: float = 0.0
    dedup_threshold: float = 0.0
    working_ttl_seconds: int = 0
    collapse_threshold: float = 0.0
    max_memories: int = 0
    strategies: Optional[ReviewStrategies] = None


@dataclass
class BankInfo(Model):
    bank: Bank = field(default_factory=Bank)
    memory_count: int = 0

    @property
    def name(self) -> str:
        return self.bank.name


@dataclass
class ApiKeyInfo(Model):
    id: str = ""
    principal: str = ""
    grants: List[str] = field(default_factory=list)
    created_at: str = ""
    revoked_at: Optional[str] = None


@dataclass
class CreatedApiKey(Model):
    # Shown only here: the node keeps a hash.
    key: str = ""
    info: ApiKeyInfo = field(default_factory=ApiKeyInfo)


@dataclass
class NodeStatus(Model):
    node_id: int = 0
    leader_id: Optional[int] = None
    term: int = 0
    last_log_index: int = 0
    applied_index: int = 0
    banks_loaded: int = 0
    embedding_model: str = ""
    store_bytes_on_disk: int = 0
    ready: bool = False
    version: str = ""


__all__ = [
    "AccessStats",
    "ApiKeyInfo",
    "ArmHit",
    "Bank",
    "BankInfo",
    "Conflict",
    "CreatedApiKey",
    "Explain",
    "FeedbackEvent",
    "FeedbackResult",
    "FieldChange",
    "ForgetResult",
    "HistoryEntry",
    "ImportanceScores",
    "LoggedHit",
    "LoggedRecall",
    "Memory",
    "MemoryStatus",
    "Model",
    "NodeStatus",
    "Provenance",
    "RecallHit",
    "RecallResult",
    "Reflection",
    "ReflectResult",
    "ResolveResult",
    "ReviewCycle",
    "ReviewResult",
    "ReviewStrategies",
    "ScoringWeights",
    "Signature",
    "Slot",
    "StatusChange",
    "Support",
    "TimeLike",
    "TimeWindow",
    "ToolCall",
    "Trace",
    "WriteItem",
    "WriteResult",
    "format_time",
    "parse_time",
]
