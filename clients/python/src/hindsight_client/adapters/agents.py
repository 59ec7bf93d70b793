"""``HindsightMemory``: memory for an agent loop in the style of the OpenAI Agents SDK.

    from agents import Agent, Runner
    from hindsight_client.adapters.agents import HindsightMemory

    memory = HindsightMemory("acme/agent-7", agent_id="support-bot")
    agent = Agent(
        name="support",
        instructions="You help customers.\\n\\n" + memory.context_for(question, max_tokens=300),
        tools=memory.as_function_tools(),          # or wrap memory.as_tools() yourself
    )
    result = Runner.run_sync(agent, question)
    memory.feedback("used")                       # what this run's recalls gave was used

Nothing here imports the Agents SDK except ``as_function_tools``; ``as_tools`` gives plain
functions with type hints and docstrings that any framework can turn into tools.
"""

from __future__ import annotations

import math
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ..client import HindsightClient
from ..errors import NotFound
from ..models import FeedbackResult, Memory, RecallHit, RecallResult, WriteResult

__all__ = ["HindsightMemory", "estimate_tokens"]

PROVENANCE = ("tool", "agent_id", "session_id", "task_id", "tool_call_id")
CONTEXT_HEADER = "Memories from earlier conversations (most relevant first; they may be outdated):"


def estimate_tokens(text: str) -> int:
    """A rough count of model tokens: about four characters of English text make one token,
    while CJK and other non-ASCII characters are about one token each."""
    ascii_chars = sum(1 for c in text if ord(c) < 128)
    return math.ceil(ascii_chars / 4 + (len(text) - ascii_chars))


def _truncate(text: str, tokens: int) -> str:
    if estimate_tokens(text) <= tokens:
        return text
    low, high = 0, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        if estimate_tokens(text[:mid] + "…") <= tokens:
            low = mid
        else:
            high = mid - 1
    return text[:low].rstrip() + "…" if low else ""


def _line(hit: RecallHit) -> str:
    memory = hit.memory
    # Semantic is what most memories are; only the exceptions are worth the tokens.
    about = memory.subtype or (memory.kind if memory.kind != "semantic" else None)
    notes = [about] if about else []
    if memory.occurred_at:
        notes.append(memory.occurred_at[:10])
    status = hit.status.name or memory.status.name
    if status and status != "active":
        notes.append(status)
    notes.extend(f for f in hit.explain.flags if f in ("disputed", "uncorroborated"))
    suffix = f" [{', '.join(notes)}]" if notes else ""
    return f"- {memory.content}{suffix}"


class HindsightMemory:
    """One agent's memory in one Hindsight bank.

    ``client`` is a ``HindsightClient``; without one, a client is opened on ``base_url`` and
    ``api_key`` (``$HINDSIGHT_URL`` / ``$HINDSIGHT_API_KEY`` by default) and closed by
    ``close()``. ``agent_id``, ``session_id`` and ``task_id`` are recorded as the provenance of
    every memory written through this object; ``source`` (default ``agent``) too, which means
    Hindsight's importance gate may decline a write it judges not worth keeping.
    """

    def __init__(
        self,
        bank: str,
        client: Optional[HindsightClient] = None,
        *,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        source: str = "agent",
        agent_id: Optional[str] = None,
        session_id: Optional[str] = None,
        task_id: Optional[str] = None,
        top_k: int = 5,
        timeout: float = 30.0,
    ) -> None:
        self.bank = bank
        self._owned: Optional[HindsightClient] = None
        if client is None:
            client = HindsightClient(base_url, api_key=api_key, timeout=timeout)
            self._owned = client
        self.client = client
        self.source = source
        self.provenance: Dict[str, str] = {
            k: v
            for k, v in (("agent_id", agent_id), ("session_id", session_id), ("task_id", task_id))
            if v is not None
        }
        self.top_k = top_k
        self.last_recall: Optional[RecallResult] = None
        # Recalls not yet given feedback: (recall_id, memory ids in rank order).
        self._pending: List[Tuple[str, List[str]]] = []
        self._lock = threading.Lock()

    def close(self) -> None:
        if self._owned is not None:
            self._owned.close()

    def __enter__(self) -> "HindsightMemory":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- memory --------------------------------------------------------------------------

    def remember(
        self,
        text: str,
        kind: Optional[str] = None,
        *,
        subtype: Optional[str] = None,
        source: Optional[str] = None,
        tags: Optional[Sequence[str]] = None,
        metadata: Optional[Mapping[str, str]] = None,
        ttl_seconds: Optional[int] = None,
        confidence: Optional[float] = None,
        importance: Optional[float] = None,
        critical: bool = False,
        **provenance: str,
    ) -> WriteResult:
        """Stores ``text``; ``kind`` is working, episodic or semantic (the node's default).

        Keyword arguments ``tool``, ``agent_id``, ``session_id``, ``task_id`` and
        ``tool_call_id`` are the write's provenance, over the ones given to the constructor. A
        write the importance gate declines comes back with ``stored`` false.
        """
        unknown = sorted(set(provenance) - set(PROVENANCE))
        if unknown:
            raise TypeError(
                f"remember() got unknown provenance {', '.join(unknown)}; expected any of "
                f"{', '.join(PROVENANCE)}"
            )
        given = {**self.provenance, **provenance}
        return self.client.write(
            self.bank, text, kind=kind, subtype=subtype, source=source or self.source,
            tags=tags, metadata=metadata, ttl_seconds=ttl_seconds, confidence=confidence,
            importance=importance, critical=critical, **given,
        )

    def recall(
        self, query: str, top_k: Optional[int] = None, *, max_tokens: Optional[int] = None
    ) -> List[Memory]:
        """The memories that answer ``query``, best first (``last_recall`` keeps the scores and
        explanations). Each recall is remembered for ``feedback``."""
        result = self._recall(query, top_k or self.top_k, max_tokens)
        return result.memories

    def _recall(self, query: str, top_k: int, max_tokens: Optional[int]) -> RecallResult:
        try:
            result = self.client.recall(self.bank, query, top_k=top_k, max_tokens=max_tokens)
        except NotFound:
            # Nothing written yet: the bank comes with the first memory.
            result = RecallResult()
        with self._lock:
            self.last_recall = result
            if result.recall_id and result.hits:
                self._pending.append((result.recall_id, result.ids))
        return result

    def context_for(self, query: str, max_tokens: int = 400, *, top_k: Optional[int] = None) -> str:
        """A block for an agent's instructions with the memories relevant to ``query``, at most
        about ``max_tokens`` tokens (by ``estimate_tokens``) including its header; ``""`` when
        nothing relevant is stored or the budget cannot hold a line."""
        budget = max_tokens - estimate_tokens(CONTEXT_HEADER) - 1
        if budget <= 2:
            return ""
        # The budget is spent here rather than by the node's max_tokens, which counts contents only
        # and would leave out a best memory too long for it instead of shortening it.
        result = self._recall(query, top_k or max(self.top_k, min(50, budget // 8)), None)
        lines: List[str] = []
        used = 0
        for hit in result.hits:
            line = _line(hit)
            cost = estimate_tokens(line) + 1
            if used + cost > budget:
                if not lines:
                    # The best memory alone is over the budget: some of it beats none.
                    line = _truncate(line, budget - 1)
                    if line:
                        lines.append(line)
                break
            lines.append(line)
            used += cost
        if not lines:
            return ""
        return "\n".join([CONTEXT_HEADER, *lines])

    def feedback(
        self, outcome: str = "used", memory_ids: Optional[Sequence[str]] = None
    ) -> List[FeedbackResult]:
        """After a run: tells Hindsight what became of the memories recalled since the last
        feedback (``used``, ``helpful``, ``wrong`` or ``harmful``), all of them or only
        ``memory_ids``. Each memory is reported once, against the latest recall that returned
        it."""
        with self._lock:
            pending, self._pending = self._pending, []
        chosen = None if memory_ids is None else set(memory_ids)
        latest: Dict[str, str] = {}
        for recall_id, ids in pending:
            for memory_id in ids:
                if chosen is None or memory_id in chosen:
                    latest[memory_id] = recall_id
        return [
            self.client.feedback(recall_id, memory_id, outcome)
            for memory_id, recall_id in latest.items()
        ]

    # -- tools -----------------------------------------------------------------------------

    def as_tools(self) -> List[Callable[[str], str]]:
        """``save_memory(text)`` and ``search_memory(query)``: plain functions with type hints
        and docstrings, for a framework to wrap as function tools. Both answer the model in
        text; a refused write is an answer, not an exception."""
        memory = self

        def save_memory(text: str) -> str:
            """Save one durable fact, preference or lesson so that later conversations can use it.

            Args:
                text: The memory as one self-contained sentence, for example
                    "The user prefers answers in French."
            """
            written = memory.remember(text)
            if not written.stored:
                total = written.importance.total if written.importance else 0.0
                return (
                    f"Not saved: the memory service judged it not worth keeping "
                    f"(importance {total:.2f}). Save lasting facts, preferences or lessons."
                )
            if written.disposition == "merged":
                return f"Already known; the existing memory {written.id} was reinforced."
            if written.disposition == "quarantined":
                return "Not saved: the memory service held it for review."
            return f"Saved as memory {written.id}."

        def search_memory(query: str) -> str:
            """Search saved memories for what is relevant to a question or task.

            Args:
                query: What to look for, in plain words.
            """
            hits = memory._recall(query, memory.top_k, None).hits
            if not hits:
                return "No memories found."
            return "\n".join(_line(hit) for hit in hits)

        return [save_memory, search_memory]

    def as_function_tools(self) -> List[Any]:
        """``as_tools()`` as OpenAI Agents SDK ``FunctionTool``s (needs ``openai-agents``)."""
        try:
            from agents import function_tool
        except ImportError as e:
            raise ImportError(
                "as_function_tools() needs the OpenAI Agents SDK: "
                "pip install 'hindsight-client[agents]' (or use as_tools())"
            ) from e
        return [function_tool(f) for f in self.as_tools()]
