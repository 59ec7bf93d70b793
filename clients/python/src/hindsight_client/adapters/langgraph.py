"""``HindsightStore``: a LangGraph store (``langgraph.store.base.BaseStore``) kept in Hindsight.

    from hindsight_client.adapters.langgraph import HindsightStore

    store = HindsightStore(base_url="http://127.0.0.1:7401", bank_prefix="acme")
    store.put(("users", "alice"), "food", {"text": "Alice is vegetarian"})
    store.get(("users", "alice"), "food").value        # {'text': 'Alice is vegetarian'}
    store.search(("users",), query="what does alice eat?")[0].score

How items are kept:

- **Namespace → bank.** Each label is lowercased, every run of characters outside
  ``[a-z0-9._-]`` becomes ``-`` and leading ``-``, ``_`` or ``.`` are dropped; the labels, after
  ``bank_prefix`` if one is set, are joined with ``/``: ``("Users", "alice@example")`` is bank
  ``users/alice-example``. A bank name holds at most 4 segments, so labels past the fourth
  (counting ``bank_prefix``'s segments) do not name a bank of their own: ``("a", "b", "c", "d",
  "e")`` lives in bank ``a/b/c/d``. A label that names the bank but has nothing left after
  sanitising (``"用户"``), or a name over 128 bytes, raises ``ValueError``. Different namespaces
  may share a bank (``("Users",)`` and ``("users",)``, or a namespace and its descendants past the
  fourth segment); they stay apart because each memory records its exact namespace.
- **Item → memory.** One memory per key: its content is the value as JSON (what recall embeds and
  matches), its metadata holds the key (``langgraph.key``), the namespace as a JSON list
  (``langgraph.namespace``) and, after the first replacement, the item's first ``created_at``
  (``langgraph.created_at``); it is tagged ``langgraph-store``. ``updated_at`` is when the current
  memory was recorded. Memories in the same banks that were not written by a store are ignored.
- **put** writes the new memory, then forgets the one it replaces (archived and kept in the
  bank's history; ``hard_delete=True`` deletes instead), so a reader never finds the key missing.
  Hindsight merges a write into a near-identical memory; so that each key stays an item of its
  own, a value another item of the bank already holds is written with a short numeric suffix
  after the JSON, and a value merged anyway is written again with one. A value the node
  quarantines raises ``HindsightError`` and leaves the previous value in place.
- **delete** forgets the key's memory.
- **search** with ``query`` is Hindsight's recall over the banks under the prefix (ranked, ``score``
  set); without a query it lists them, newest first (``score`` is ``None``). ``filter`` is matched
  on the values as LangGraph's in-memory store does (exact values, nested dicts, ``$eq``, ``$ne``,
  ``$gt``, ``$gte``, ``$lt``, ``$lte``).
- **get**, unqueried **search** and **list_namespaces** read the banks' memory listings, so they
  cost time in proportion to the memories of the banks involved; ``bank_prefix`` keeps the store's
  banks apart from the rest of the node and bounds what ``search(())`` and ``list_namespaces()``
  scan. Each batch reads a bank's listing at most once while it does not write to it.

``index`` arguments are accepted and ignored (the node embeds every memory's content); TTLs are
not supported (``supports_ttl`` is false).
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import (
    Any,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)

from .. import _calls
from ..client import AsyncHindsightClient, HindsightClient
from ..errors import HindsightError, NotFound
from ..models import Memory, WriteItem, WriteResult, format_time, parse_time
from . import _drive
from ._drive import Plan

try:  # langgraph >= 1.1; older versions validate in BaseStore's methods only
    from langgraph.store.base import validate_op_namespace as _validate_op
except ImportError:  # pragma: no cover
    _validate_op = None

__all__ = ["HindsightStore", "namespace_to_bank", "KEY_FIELD", "NAMESPACE_FIELD", "STORE_TAG"]

KEY_FIELD = "langgraph.key"
NAMESPACE_FIELD = "langgraph.namespace"
CREATED_AT_FIELD = "langgraph.created_at"
STORE_TAG = "langgraph-store"

MAX_BANK_BYTES = 128
MAX_BANK_SEGMENTS = 4
# The node's default limits; over them it refuses the request.
MAX_METADATA_VALUE_BYTES = 1024
MAX_BANKS_PER_RECALL = 32
MAX_TOP_K = 200
# Statuses whose memories no longer hold an item: forgotten, expired, or held back from agents.
GONE = frozenset({"archived", "expired", "quarantined", "deleted"})
MERGE_RETRIES = 4

_NOT_IN_NAME = re.compile(r"[^a-z0-9._-]+")
_SEGMENT = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
# JSON leaves C1 control characters raw, and the node refuses every control character in content
# but tab, line feed and carriage return.
_C1 = re.compile("[\u007f-\u009f]")
_DECODER = json.JSONDecoder()
_NOTHING = object()


def _label_segment(label: str, namespace: Sequence[str]) -> str:
    segment = _NOT_IN_NAME.sub("-", label.lower()).lstrip("-_.")
    if not segment:
        raise ValueError(
            f"namespace label {label!r} of {tuple(namespace)!r} has no letter or digit in "
            "a-z/0-9 to name a Hindsight bank with"
        )
    return segment


def _prefix_segments(bank_prefix: Optional[str]) -> List[str]:
    if bank_prefix is None:
        return []
    segments = bank_prefix.split("/")
    if len(segments) >= MAX_BANK_SEGMENTS or not all(_SEGMENT.match(s) for s in segments):
        raise ValueError(
            f"bank_prefix {bank_prefix!r} must be 1-3 '/'-separated segments of lowercase "
            "letters, digits, '-', '_' and '.', each starting with a letter or digit"
        )
    return segments


def namespace_to_bank(namespace: Sequence[str], bank_prefix: Optional[str] = None) -> str:
    """The bank that holds ``namespace``'s items (see the module's documentation).

    Raises ``ValueError`` when the namespace is empty, when one of the labels that name the bank
    leaves nothing after sanitising, or when the name would pass 128 bytes.
    """
    labels = tuple(namespace)
    if not labels:
        raise ValueError("an empty namespace names no bank")
    fixed = _prefix_segments(bank_prefix)
    # Deeper labels share their ancestor's bank; each memory records its whole namespace.
    named = labels[: MAX_BANK_SEGMENTS - len(fixed)]
    segments = fixed + [_label_segment(x, labels) for x in named]
    name = "/".join(segments)
    if len(name.encode()) > MAX_BANK_BYTES:
        raise ValueError(
            f"namespace {labels!r} maps to a bank name of {len(name.encode())} bytes "
            f"({name!r}); the limit is {MAX_BANK_BYTES}"
        )
    return name


# ---------------------------------------------------------------------------------------------
# Items as memories


@dataclass
class _Record:
    memory: Memory
    namespace: Tuple[str, ...]
    key: str
    value: Dict[str, Any]
    created_at: datetime
    updated_at: datetime

    def item(self) -> Item:
        return Item(
            value=self.value,
            key=self.key,
            namespace=self.namespace,
            created_at=self.created_at,
            updated_at=self.updated_at,
        )

    def search_item(self, score: Optional[float]) -> SearchItem:
        return SearchItem(
            namespace=self.namespace,
            key=self.key,
            value=self.value,
            created_at=self.created_at,
            updated_at=self.updated_at,
            score=score,
        )


def _record(memory: Memory) -> Optional[_Record]:
    """The item a memory holds, or ``None`` for a memory no store wrote."""
    metadata = memory.metadata or {}
    key = metadata.get(KEY_FIELD)
    raw_namespace = metadata.get(NAMESPACE_FIELD)
    if key is None or raw_namespace is None:
        return None
    try:
        namespace = json.loads(raw_namespace)
        # Whatever follows the JSON is the suffix that kept the write from merging.
        value, _ = _DECODER.raw_decode(memory.content)
    except ValueError:
        return None
    if not (isinstance(namespace, list) and all(isinstance(x, str) for x in namespace)):
        return None
    if not isinstance(value, dict):
        return None
    try:
        updated = parse_time(memory.recorded_at)
    except ValueError:
        updated = datetime.now(timezone.utc)
    created = updated
    if CREATED_AT_FIELD in metadata:
        try:
            created = parse_time(metadata[CREATED_AT_FIELD])
        except ValueError:
            pass
    return _Record(memory, tuple(namespace), key, value, created, updated)


def _content(key: str, value: Any) -> str:
    if not isinstance(value, Mapping):
        raise TypeError(f"the value for key {key!r} must be a dict, not {type(value).__name__}")
    try:
        text = json.dumps(dict(value), ensure_ascii=False)
    except (TypeError, ValueError) as e:
        raise TypeError(f"the value for key {key!r} is not JSON-serialisable: {e}") from e
    return _C1.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _suffixed(content: str) -> str:
    # Digits that no other memory states keep the node from taking the value for a restatement
    # of another item's; reading an item stops at the end of the JSON.
    return f"{content}\n#{secrets.randbelow(10**12):012d}"


def _metadata_value(what: str, text: str) -> str:
    if len(text.encode()) > MAX_METADATA_VALUE_BYTES:
        raise ValueError(
            f"{what} takes {len(text.encode())} bytes; Hindsight keeps at most "
            f"{MAX_METADATA_VALUE_BYTES} per metadata value"
        )
    return text


# ---------------------------------------------------------------------------------------------
# Filters and namespace conditions, as langgraph's InMemoryStore reads them


def _compare(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(value, op, operand) for op, operand in wanted.items())
        if not isinstance(value, dict):
            return False
        return all(_compare(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (
            isinstance(value, (list, tuple))
            and len(value) == len(wanted)
            and all(_compare(a, b) for a, b in zip(value, wanted))
        )
    return bool(value == wanted)


def _operator(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(value == operand)
    if op == "$ne":
        return bool(value != operand)
    if op in ("$gt", "$gte", "$lt", "$lte"):
        try:
            a, b = float(value), float(operand)
        except (TypeError, ValueError):
            return False
        return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]
    raise ValueError(f"unsupported filter operator {op!r}")


def _matches(value: Dict[str, Any], wanted: Optional[Dict[str, Any]]) -> bool:
    return not wanted or all(_compare(value.get(k), v) for k, v in wanted.items())


def _condition_holds(condition: MatchCondition, namespace: Tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path))
    else:
        raise ValueError(f"unsupported match type {condition.match_type!r}")
    return all(p == "*" or n == p for n, p in pairs)


# ---------------------------------------------------------------------------------------------
# The store


Groups = Dict[Tuple[Tuple[str, ...], str], List[_Record]]


class HindsightStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items are memories in a Hindsight node.

    Give a ``HindsightClient`` (``client``), an ``AsyncHindsightClient`` (``async_client``) or both;
    with neither, the store opens a sync client on ``base_url``/``api_key`` (``$HINDSIGHT_URL`` and
    ``$HINDSIGHT_API_KEY`` by default) and closes it in ``close()``. The async methods use
    ``async_client`` when given, else run the sync client in a worker thread; the sync methods
    need ``client``.

    ``bank_prefix`` (1-3 bank name segments) is put before every namespace's bank. Memories are
    written as ``kind`` (default semantic) with provenance ``source`` (default ``tool``) and
    ``tool`` (default ``langgraph``). ``hard_delete`` deletes replaced and deleted items instead
    of archiving them.
    """

    supports_ttl = False

    def __init__(
        self,
        client: Optional[HindsightClient] = None,
        *,
        async_client: Optional[AsyncHindsightClient] = None,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        bank_prefix: Optional[str] = None,
        kind: Optional[str] = None,
        source: str = "tool",
        tool: Optional[str] = "langgraph",
        hard_delete: bool = False,
        timeout: float = 30.0,
    ) -> None:
        _prefix_segments(bank_prefix)
        self._owned: Optional[HindsightClient] = None
        if client is None and async_client is None:
            client = HindsightClient(base_url, api_key=api_key, timeout=timeout)
            self._owned = client
        self.client = client
        self.async_client = async_client
        self.bank_prefix = bank_prefix
        self.kind = kind
        self.source = source
        self.tool = tool
        self.hard_delete = hard_delete

    def close(self) -> None:
        """Closes the client the store opened itself (given clients stay open)."""
        if self._owned is not None:
            self._owned.close()

    def __enter__(self) -> "HindsightStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def bank_for(self, namespace: Sequence[str]) -> str:
        """The bank that holds ``namespace``'s items."""
        return namespace_to_bank(namespace, self.bank_prefix)

    # -- BaseStore ---------------------------------------------------------------------------

    def batch(self, ops: Iterable[Any]) -> List[Any]:
        if self.client is None:
            raise RuntimeError(
                "this HindsightStore has only an async client: use aget, aput, asearch, adelete "
                "and alist_namespaces, or give it a HindsightClient too"
            )
        return _drive.run(self.client, self._plan(list(ops)))

    async def abatch(self, ops: Iterable[Any]) -> List[Any]:
        ops = list(ops)
        if self.async_client is not None:
            return await _drive.arun(self.async_client, self._plan(ops))
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, self.batch, ops)

    # -- plans -------------------------------------------------------------------------------

    def _plan(self, ops: List[Any]) -> Plan[List[Any]]:
        # Bank listings read in this batch, dropped when the batch writes to the bank.
        seen: Dict[str, Groups] = {}
        results: List[Any] = []
        for op in ops:
            if _validate_op is not None:
                _validate_op(op)
            if isinstance(op, GetOp):
                results.append((yield from self._get(op, seen)))
            elif isinstance(op, PutOp):
                results.append((yield from self._put(op, seen)))
            elif isinstance(op, SearchOp):
                results.append((yield from self._search(op, seen)))
            elif isinstance(op, ListNamespacesOp):
                results.append((yield from self._list_namespaces(op, seen)))
            else:
                raise TypeError(f"HindsightStore cannot run a {type(op).__name__}")
        return results

    def _scan(self, bank: str, seen: Dict[str, Groups]) -> Plan[Groups]:
        """The bank's items, each key's memories newest first."""
        if bank in seen:
            return seen[bank]
        groups: Groups = {}
        after: Optional[str] = None
        while True:
            try:
                memories, after = yield _drive.list_memories(bank, after)
            except NotFound:
                break
            for memory in memories:
                if memory.status.name in GONE:
                    continue
                record = _record(memory)
                if record is not None:
                    groups.setdefault((record.namespace, record.key), []).append(record)
            if not after:
                break
        for records in groups.values():
            records.sort(key=lambda r: (r.updated_at, r.memory.id), reverse=True)
        seen[bank] = groups
        return groups

    def _get(self, op: GetOp, seen: Dict[str, Groups]) -> Plan[Optional[Item]]:
        bank = self.bank_for(op.namespace)
        groups = yield from self._scan(bank, seen)
        records = groups.get((tuple(op.namespace), str(op.key)))
        return records[0].item() if records else None

    def _put(self, op: PutOp, seen: Dict[str, Groups]) -> Plan[None]:
        if op.ttl is not None:
            raise NotImplementedError("HindsightStore does not support TTLs; put with ttl=None")
        namespace, key = tuple(op.namespace), str(op.key)
        bank = self.bank_for(namespace)
        # Checked before anything changes, so that a refused put leaves the old value.
        content = None if op.value is None else _content(key, op.value)
        metadata = {
            KEY_FIELD: _metadata_value(f"key {key[:40]!r}", key),
            NAMESPACE_FIELD: _metadata_value(
                f"namespace {namespace!r}", json.dumps(list(namespace), ensure_ascii=False)
            ),
        }
        groups = yield from self._scan(bank, seen)
        old = groups.get((namespace, key), [])
        seen.pop(bank, None)
        if content is None:
            for record in old:
                yield from self._forget(record.memory.id, "deleted from the LangGraph store")
            return None
        if old:
            metadata[CREATED_AT_FIELD] = format_time(min(r.created_at for r in old))
        # A value some item of the bank already holds would be merged into it: written with the
        # suffix at once, the other item is not credited with a restatement.
        same = any(_content(r.key, r.value) == content for rs in groups.values() for r in rs)
        written = yield from self._write(bank, key, content, metadata, suffixed=same)
        for record in old:
            if record.memory.id != written.id:
                yield from self._forget(record.memory.id, "replaced by a put of the same key")
        return None

    def _write(
        self, bank: str, key: str, content: str, metadata: Dict[str, str], suffixed: bool
    ) -> Plan[WriteResult]:
        text = _suffixed(content) if suffixed else content
        for _ in range(MERGE_RETRIES):
            item = WriteItem(
                content=text, kind=self.kind, source=self.source, tool=self.tool,
                tags=[STORE_TAG], metadata=metadata,
            )
            result: WriteResult = yield _calls.write(bank, item)
            if result.disposition == "created":
                return result
            if result.disposition == "merged":
                text = _suffixed(content)
                continue
            if result.disposition == "quarantined":
                raise HindsightError(
                    f"Hindsight quarantined the value for key {key!r} in bank {bank!r} "
                    f"({result.quarantine_reason}); the previous value, if any, is kept",
                    code="quarantined",
                )
            raise HindsightError(
                f"Hindsight did not keep the value for key {key!r} in bank {bank!r} "
                f"(disposition {result.disposition!r}); write as source 'tool' or 'user' to "
                "pass the importance gate",
                code=result.disposition or "unknown",
            )
        raise HindsightError(
            f"the value for key {key!r} kept merging into other memories of bank {bank!r}",
            code="merged",
        )

    def _forget(self, id: str, reason: str) -> Plan[None]:
        try:
            yield _calls.forget(id, self.hard_delete, reason)
        except NotFound:
            pass
        return None

    def _banks_under(self, labels: Sequence[str]) -> Plan[List[str]]:
        """The banks that may hold namespaces starting with ``labels``."""
        labels = tuple(labels)
        root: Any = self.bank_prefix
        if labels:
            try:
                root = self.bank_for(labels)
            except ValueError:
                # No namespace under it could have been stored.
                root = _NOTHING
        if root is _NOTHING:
            return []
        infos = yield _calls.list_banks()
        names = [info.name for info in infos]
        return sorted(
            n for n in names if root is None or n == root or n.startswith(root + "/")
        )

    def _search(self, op: SearchOp, seen: Dict[str, Groups]) -> Plan[List[SearchItem]]:
        prefix = tuple(op.namespace_prefix)
        banks = yield from self._banks_under(prefix)
        offset, limit = max(op.offset, 0), max(op.limit, 0)
        if not banks or limit == 0:
            return []

        def wanted(record: Optional[_Record]) -> bool:
            return (
                record is not None
                and record.namespace[: len(prefix)] == prefix
                and _matches(record.value, op.filter)
            )

        if not op.query:
            records: List[_Record] = []
            for bank in banks:
                groups = yield from self._scan(bank, seen)
                records.extend(rs[0] for rs in groups.values() if wanted(rs[0]))
            records.sort(key=lambda r: (r.updated_at, r.memory.id), reverse=True)
            return [r.search_item(None) for r in records[offset : offset + limit]]

        # A filter is applied after recall, so it needs as many candidates as the node gives.
        top_k = MAX_TOP_K if op.filter else min(MAX_TOP_K, max(2 * (offset + limit), 20))
        scored: List[Tuple[float, Memory]] = []
        for start in range(0, len(banks), MAX_BANKS_PER_RECALL):
            chunk = banks[start : start + MAX_BANKS_PER_RECALL]
            target: Union[str, List[str]] = chunk[0] if len(chunk) == 1 else chunk
            try:
                result = yield _calls.recall(target, op.query, top_k=top_k, tags=[STORE_TAG])
            except NotFound:
                continue
            for hit in result.hits:
                scored.append((hit.score, hit.memory))
                # Recall folds near-identical results into one; each is an item of its own here.
                for folded in hit.explain.collapsed:
                    try:
                        memory = yield _calls.get(folded)
                    except NotFound:
                        continue
                    scored.append((hit.score, memory))
        scored.sort(key=lambda s: s[0], reverse=True)
        found: List[SearchItem] = []
        keys = set()
        for score, memory in scored:
            if memory.status.name in GONE:
                continue
            record = _record(memory)
            if record is None or (record.namespace, record.key) in keys or not wanted(record):
                continue
            keys.add((record.namespace, record.key))
            found.append(record.search_item(score))
        return found[offset : offset + limit]

    def _list_namespaces(
        self, op: ListNamespacesOp, seen: Dict[str, Groups]
    ) -> Plan[List[Tuple[str, ...]]]:
        conditions = tuple(op.match_conditions or ())
        fixed: List[str] = []
        for condition in conditions:
            if condition.match_type == "prefix":
                for label in condition.path:
                    if label == "*":
                        break
                    fixed.append(label)
                break
        banks = yield from self._banks_under(fixed)
        namespaces = set()
        for bank in banks:
            groups = yield from self._scan(bank, seen)
            namespaces.update(namespace for namespace, _ in groups)
        chosen = [ns for ns in namespaces if all(_condition_holds(c, ns) for c in conditions)]
        if op.max_depth is not None:
            chosen = list({ns[: op.max_depth] for ns in chosen})
        chosen.sort()
        return chosen[op.offset : op.offset + op.limit]
