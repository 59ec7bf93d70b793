"""The sync and async clients. Both send the requests built in ``_calls``; only the I/O differs."""

from __future__ import annotations

import os
from typing import (
    Any,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    TypeVar,
    Union,
)

import httpx

from . import _calls
from ._calls import Call, ItemLike, StrategiesLike, ToolCallLike, WeightsLike
from .errors import DeadlineExceeded, HindsightError, Unavailable, error_from_response
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
    NodeStatus,
    RecallResult,
    ReflectResult,
    ResolveResult,
    ReviewResult,
    TimeLike,
    Trace,
    WriteItem,
    WriteResult,
)

R = TypeVar("R")

DEFAULT_BASE_URL = "http://127.0.0.1:7401"
DEFAULT_TIMEOUT = 30.0
TimeoutLike = Union[float, httpx.Timeout, None]

try:
    from importlib.metadata import version as _dist_version

    __version__ = _dist_version("hindsight-client")
except Exception:  # not installed (running from a source tree)
    __version__ = "0.0.0"


def _headers(api_key: Optional[str], extra: Optional[Mapping[str, str]]) -> Dict[str, str]:
    # None means "whatever the environment says"; an empty string sends no key even when the
    # environment has one.
    key = os.environ.get("HINDSIGHT_API_KEY") if api_key is None else api_key
    headers = {"accept": "application/json", "user-agent": f"hindsight-client-python/{__version__}"}
    if key:
        headers["authorization"] = f"Bearer {key.strip()}"
    headers.update(extra or {})
    return headers


def _base_url(base_url: Optional[str]) -> str:
    return (base_url or os.environ.get("HINDSIGHT_URL") or DEFAULT_BASE_URL).rstrip("/")


def _finish(call: Call[R], response: httpx.Response) -> R:
    body: Any = None
    if response.content:
        try:
            body = response.json()
        except ValueError:
            body = None
    if response.status_code >= 400:
        raise error_from_response(
            response.status_code, body, response.text, dict(response.headers)
        )
    if body is None and response.content:
        raise HindsightError(
            f"{call.method} {call.path} answered {response.status_code} with a body that is "
            f"not JSON; is {response.request.url.host}:{response.request.url.port} a Hindsight "
            "node's HTTP address?",
            code="bad_response",
            status=response.status_code,
        )
    return call.parse(body if body is not None else {})


def _transport_error(call: Call[Any], error: httpx.HTTPError) -> HindsightError:
    where = f"{call.method} {call.path}"
    if isinstance(error, httpx.TimeoutException):
        return DeadlineExceeded(f"{where}: no answer in time ({error})")
    return Unavailable(f"{where}: {type(error).__name__}: {error}")


# =============================================================================================
# Sync


class HindsightClient:
    """A client for a Hindsight node's HTTP API.

    ``base_url`` defaults to ``$HINDSIGHT_URL``, else ``http://127.0.0.1:7401``; ``api_key`` to
    ``$HINDSIGHT_API_KEY`` (pass ``""`` to send none). Every method raises a ``HindsightError``
    subclass when the node refuses the request or cannot be reached.
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        *,
        api_key: Optional[str] = None,
        timeout: TimeoutLike = DEFAULT_TIMEOUT,
        headers: Optional[Mapping[str, str]] = None,
        transport: Optional[httpx.BaseTransport] = None,
    ) -> None:
        self.base_url = _base_url(base_url)
        self._http = httpx.Client(
            base_url=self.base_url,
            headers=_headers(api_key, headers),
            timeout=timeout,
            transport=transport,
        )
        self.banks = Banks(self)
        self.keys = Keys(self)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "HindsightClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _send(self, call: Call[R]) -> R:
        try:
            response = self._http.request(
                call.method, call.path, json=call.json, params=call.params
            )
        except httpx.HTTPError as e:
            raise _transport_error(call, e) from e
        return _finish(call, response)

    # -- memories --------------------------------------------------------------------------

    def write(
        self,
        bank: str,
        content: str,
        *,
        kind: Optional[str] = None,
        subtype: Optional[str] = None,
        source: Optional[str] = None,
        tool: Optional[str] = None,
        agent_id: Optional[str] = None,
        session_id: Optional[str] = None,
        task_id: Optional[str] = None,
        tool_call_id: Optional[str] = None,
        occurred_at: Optional[TimeLike] = None,
        ttl_seconds: Optional[int] = None,
        confidence: Optional[float] = None,
        importance: Optional[float] = None,
        critical: bool = False,
        tags: Optional[Sequence[str]] = None,
        metadata: Optional[Mapping[str, str]] = None,
    ) -> WriteResult:
        """Stores one memory; answers once it is durable and searchable.

        ``kind``: working, episodic or semantic (the default). ``source``: user, tool, agent (the
        default), reflection or import; an agent's write may be refused as low-importance, which
        is a ``WriteResult`` with ``stored`` false rather than an error.
        """
        item = WriteItem(
            content=content, kind=kind, subtype=subtype, source=source, tool=tool,
            agent_id=agent_id, session_id=session_id, task_id=task_id,
            tool_call_id=tool_call_id, occurred_at=occurred_at, ttl_seconds=ttl_seconds,
            confidence=confidence, importance=importance, critical=critical,
            tags=list(tags) if tags else None, metadata=dict(metadata) if metadata else None,
        )
        return self._send(_calls.write(bank, item))

    def write_batch(self, bank: str, items: Iterable[ItemLike]) -> List[WriteResult]:
        """Stores several memories, all or none; one result per item, in order.

        Items are ``WriteItem``s, dicts of ``write``'s keyword arguments plus ``content``, or
        plain strings.
        """
        return self._send(_calls.write_batch(bank, items))

    def recall(
        self,
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
    ) -> RecallResult:
        """The memories that answer ``query``, best first, each with its ``explain``.

        ``banks`` is one bank name or a list of them. ``intent``: facts, how_to, past_cases,
        preferences or any. ``context`` ({"user_id": ...}) favours memories with the same
        metadata and leaves out those with another value for a key.
        """
        return self._send(_calls.recall(
            banks, query, top_k=top_k, max_tokens=max_tokens, as_of=as_of, kinds=kinds,
            tags=tags, occurred_from=occurred_from, occurred_to=occurred_to,
            min_confidence=min_confidence, include_history=include_history,
            include_archived=include_archived, consistency=consistency,
            agent_role=agent_role, intent=intent, context=context,
        ))

    def get(self, id: str) -> Memory:
        return self._send(_calls.get(id))

    def trace(self, id: str) -> Trace:
        """The memory with its history (oldest first), linked records and integrity check."""
        return self._send(_calls.trace(id))

    def forget(self, id: str, hard: bool = False, reason: Optional[str] = None) -> ForgetResult:
        """Archives the memory, or with ``hard`` deletes it and everything derived from it."""
        return self._send(_calls.forget(id, hard, reason))

    def feedback(self, recall_id: str, memory_id: str, outcome: str) -> FeedbackResult:
        """What became of a recalled memory: used, helpful, wrong or harmful."""
        return self._send(_calls.feedback(recall_id, memory_id, outcome))

    def recalls(
        self,
        *,
        bank: Optional[str] = None,
        query_contains: Optional[str] = None,
        since: Optional[TimeLike] = None,
        until: Optional[TimeLike] = None,
        limit: Optional[int] = None,
    ) -> List[LoggedRecall]:
        """The node's retrieval log, newest first."""
        return self._send(_calls.recalls(bank, query_contains, since, until, limit))

    def get_recall(self, recall_id: str) -> LoggedRecall:
        return self._send(_calls.get_recall(recall_id))

    # -- review ----------------------------------------------------------------------------

    def review(self, bank: str, as_of: Optional[TimeLike] = None) -> ReviewResult:
        """Runs the bank's review now: expiry, conflicts, duplicates, decay."""
        return self._send(_calls.review(bank, as_of))

    def reflect(
        self,
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
    ) -> ReflectResult:
        """Turns a finished task's trace into at most five memories (none if nothing is worth it).

        ``outcome``: succeeded, failed or partial.
        """
        return self._send(_calls.reflect(
            bank, goal, steps=steps, tool_calls=tool_calls, outcome=outcome, feedback=feedback,
            lang=lang, task_id=task_id, dry_run=dry_run,
        ))

    def conflicts(self, bank: str, include_resolved: bool = False) -> List[Conflict]:
        """Contradictions the review left for a person to settle."""
        return self._send(_calls.conflicts(bank, include_resolved))

    def resolve_conflict(
        self, bank: str, id: int, outcome: str, note: str = ""
    ) -> ResolveResult:
        """Settles a queued conflict: keep_a, keep_b, keep_both or discard_both."""
        return self._send(_calls.resolve_conflict(bank, id, outcome, note))

    # -- node ------------------------------------------------------------------------------

    def status(self) -> NodeStatus:
        return self._send(_calls.status())

    def ready(self) -> bool:
        """Whether the node serves requests now (``GET /ready``); never raises."""
        try:
            return self._http.get("/ready").status_code == 200
        except httpx.HTTPError:
            return False


class Banks:
    """``client.banks``: bank administration."""

    def __init__(self, client: HindsightClient) -> None:
        self._client = client

    def list(self) -> List[BankInfo]:
        return self._client._send(_calls.list_banks())

    def create(
        self,
        name: str,
        *,
        description: Optional[str] = None,
        min_confidence: Optional[float] = None,
        dedup_threshold: Optional[float] = None,
        working_ttl_seconds: Optional[int] = None,
        collapse_threshold: Optional[float] = None,
        weights: Optional[WeightsLike] = None,
        max_memories: Optional[int] = None,
        strategies: Optional[StrategiesLike] = None,
    ) -> Bank:
        """A new bank; settings left out take the node's defaults."""
        settings = _calls.bank_patch(
            description, min_confidence, dedup_threshold, working_ttl_seconds,
            collapse_threshold, weights, max_memories, strategies,
        )
        return self._client._send(_calls.create_bank(name, settings))

    def get(self, name: str) -> BankInfo:
        return self._client._send(_calls.get_bank(name))

    def update(
        self,
        name: str,
        *,
        description: Optional[str] = None,
        min_confidence: Optional[float] = None,
        dedup_threshold: Optional[float] = None,
        working_ttl_seconds: Optional[int] = None,
        collapse_threshold: Optional[float] = None,
        weights: Optional[WeightsLike] = None,
        max_memories: Optional[int] = None,
        strategies: Optional[StrategiesLike] = None,
    ) -> Bank:
        """Changes the settings given; ``weights`` and ``strategies`` are replaced whole."""
        patch = _calls.bank_patch(
            description, min_confidence, dedup_threshold, working_ttl_seconds,
            collapse_threshold, weights, max_memories, strategies,
        )
        return self._client._send(_calls.update_bank(name, patch))

    def delete(self, name: str) -> int:
        """Deletes the bank and its memories; returns how many memories went with it."""
        return self._client._send(_calls.delete_bank(name))


class Keys:
    """``client.keys``: API keys (needs admin on every bank)."""

    def __init__(self, client: HindsightClient) -> None:
        self._client = client

    def list(self) -> List[ApiKeyInfo]:
        return self._client._send(_calls.list_keys())

    def create(self, principal: str, grants: Sequence[str]) -> CreatedApiKey:
        """A key for ``principal`` with grants such as ``"acme/*=write"``; the key is shown once."""
        return self._client._send(_calls.create_key(principal, grants))

    def revoke(self, id: str) -> ApiKeyInfo:
        return self._client._send(_calls.revoke_key(id))


# =============================================================================================
# Async


class AsyncHindsightClient:
    """The async twin of ``HindsightClient``: the same methods, awaited."""

    def __init__(
        self,
        base_url: Optional[str] = None,
        *,
        api_key: Optional[str] = None,
        timeout: TimeoutLike = DEFAULT_TIMEOUT,
        headers: Optional[Mapping[str, str]] = None,
        transport: Optional[httpx.AsyncBaseTransport] = None,
    ) -> None:
        self.base_url = _base_url(base_url)
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            headers=_headers(api_key, headers),
            timeout=timeout,
            transport=transport,
        )
        self.banks = AsyncBanks(self)
        self.keys = AsyncKeys(self)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> "AsyncHindsightClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def _send(self, call: Call[R]) -> R:
        try:
            response = await self._http.request(
                call.method, call.path, json=call.json, params=call.params
            )
        except httpx.HTTPError as e:
            raise _transport_error(call, e) from e
        return _finish(call, response)

    # -- memories --------------------------------------------------------------------------

    async def write(
        self,
        bank: str,
        content: str,
        *,
        kind: Optional[str] = None,
        subtype: Optional[str] = None,
        source: Optional[str] = None,
        tool: Optional[str] = None,
        agent_id: Optional[str] = None,
        session_id: Optional[str] = None,
        task_id: Optional[str] = None,
        tool_call_id: Optional[str] = None,
        occurred_at: Optional[TimeLike] = None,
        ttl_seconds: Optional[int] = None,
        confidence: Optional[float] = None,
        importance: Optional[float] = None,
        critical: bool = False,
        tags: Optional[Sequence[str]] = None,
        metadata: Optional[Mapping[str, str]] = None,
    ) -> WriteResult:
        item = WriteItem(
            content=content, kind=kind, subtype=subtype, source=source, tool=tool,
            agent_id=agent_id, session_id=session_id, task_id=task_id,
            tool_call_id=tool_call_id, occurred_at=occurred_at, ttl_seconds=ttl_seconds,
            confidence=confidence, importance=importance, critical=critical,
            tags=list(tags) if tags else None, metadata=dict(metadata) if metadata else None,
        )
        return await self._send(_calls.write(bank, item))

    async def write_batch(self, bank: str, items: Iterable[ItemLike]) -> List[WriteResult]:
        return await self._send(_calls.write_batch(bank, items))

    async def recall(
        self,
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
    ) -> RecallResult:
        return await self._send(_calls.recall(
            banks, query, top_k=top_k, max_tokens=max_tokens, as_of=as_of, kinds=kinds,
            tags=tags, occurred_from=occurred_from, occurred_to=occurred_to,
            min_confidence=min_confidence, include_history=include_history,
            include_archived=include_archived, consistency=consistency,
            agent_role=agent_role, intent=intent, context=context,
        ))

    async def get(self, id: str) -> Memory:
        return await self._send(_calls.get(id))

    async def trace(self, id: str) -> Trace:
        return await self._send(_calls.trace(id))

    async def forget(
        self, id: str, hard: bool = False, reason: Optional[str] = None
    ) -> ForgetResult:
        return await self._send(_calls.forget(id, hard, reason))

    async def feedback(self, recall_id: str, memory_id: str, outcome: str) -> FeedbackResult:
        return await self._send(_calls.feedback(recall_id, memory_id, outcome))

    async def recalls(
        self,
        *,
        bank: Optional[str] = None,
        query_contains: Optional[str] = None,
        since: Optional[TimeLike] = None,
        until: Optional[TimeLike] = None,
        limit: Optional[int] = None,
    ) -> List[LoggedRecall]:
        return await self._send(_calls.recalls(bank, query_contains, since, until, limit))

    async def get_recall(self, recall_id: str) -> LoggedRecall:
        return await self._send(_calls.get_recall(recall_id))

    # -- review ----------------------------------------------------------------------------

    async def review(self, bank: str, as_of: Optional[TimeLike] = None) -> ReviewResult:
        return await self._send(_calls.review(bank, as_of))

    async def reflect(
        self,
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
    ) -> ReflectResult:
        return await self._send(_calls.reflect(
            bank, goal, steps=steps, tool_calls=tool_calls, outcome=outcome, feedback=feedback,
            lang=lang, task_id=task_id, dry_run=dry_run,
        ))

    async def conflicts(self, bank: str, include_resolved: bool = False) -> List[Conflict]:
        return await self._send(_calls.conflicts(bank, include_resolved))

    async def resolve_conflict(
        self, bank: str, id: int, outcome: str, note: str = ""
    ) -> ResolveResult:
        return await self._send(_calls.resolve_conflict(bank, id, outcome, note))

    # -- node ------------------------------------------------------------------------------

    async def status(self) -> NodeStatus:
        return await self._send(_calls.status())

    async def ready(self) -> bool:
        try:
            return (await self._http.get("/ready")).status_code == 200
        except httpx.HTTPError:
            return False


class AsyncBanks:
    def __init__(self, client: AsyncHindsightClient) -> None:
        self._client = client

    async def list(self) -> List[BankInfo]:
        return await self._client._send(_calls.list_banks())

    async def create(
        self,
        name: str,
        *,
        description: Optional[str] = None,
        min_confidence: Optional[float] = None,
        dedup_threshold: Optional[float] = None,
        working_ttl_seconds: Optional[int] = None,
        collapse_threshold: Optional[float] = None,
        weights: Optional[WeightsLike] = None,
        max_memories: Optional[int] = None,
        strategies: Optional[StrategiesLike] = None,
    ) -> Bank:
        settings = _calls.bank_patch(
            description, min_confidence, dedup_threshold, working_ttl_seconds,
            collapse_threshold, weights, max_memories, strategies,
        )
        return await self._client._send(_calls.create_bank(name, settings))

    async def get(self, name: str) -> BankInfo:
        return await self._client._send(_calls.get_bank(name))

    async def update(
        self,
        name: str,
        *,
        description: Optional[str] = None,
        min_confidence: Optional[float] = None,
        dedup_threshold: Optional[float] = None,
        working_ttl_seconds: Optional[int] = None,
        collapse_threshold: Optional[float] = None,
        weights: Optional[WeightsLike] = None,
        max_memories: Optional[int] = None,
        strategies: Optional[StrategiesLike] = None,
    ) -> Bank:
        patch = _calls.bank_patch(
            description, min_confidence, dedup_threshold, working_ttl_seconds,
            collapse_threshold, weights, max_memories, strategies,
        )
        return await self._client._send(_calls.update_bank(name, patch))

    async def delete(self, name: str) -> int:
        return await self._client._send(_calls.delete_bank(name))


class AsyncKeys:
    def __init__(self, client: AsyncHindsightClient) -> None:
        self._client = client

    async def list(self) -> List[ApiKeyInfo]:
        return await self._client._send(_calls.list_keys())

    async def create(self, principal: str, grants: Sequence[str]) -> CreatedApiKey:
        return await self._client._send(_calls.create_key(principal, grants))

    async def revoke(self, id: str) -> ApiKeyInfo:
        return await self._client._send(_calls.revoke_key(id))
