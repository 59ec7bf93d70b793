"""Running request plans with the sync or the async client.

A plan is a generator that yields ``Call``s and is sent each answer (or thrown the client's
error), so that an adapter states its logic once and both ``HindsightClient`` and
``AsyncHindsightClient`` can carry it out.
"""

from __future__ import annotations

from typing import Any, Dict, Generator, List, Optional, Tuple, TypeVar

from .._calls import Call, seg
from ..client import AsyncHindsightClient, HindsightClient
from ..errors import HindsightError
from ..models import Memory

R = TypeVar("R")

Plan = Generator[Call[Any], Any, R]


def run(client: HindsightClient, plan: Plan[R]) -> R:
    try:
        call = next(plan)
        while True:
            try:
                answer = client._send(call)
            except HindsightError as e:
                call = plan.throw(e)
            else:
                call = plan.send(answer)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


async def arun(client: AsyncHindsightClient, plan: Plan[R]) -> R:
    try:
        call = next(plan)
        while True:
            try:
                answer = await client._send(call)
            except HindsightError as e:
                call = plan.throw(e)
            else:
                call = plan.send(answer)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


def _page(data: Any) -> Tuple[List[Memory], Optional[str]]:
    body: Dict[str, Any] = data if isinstance(data, dict) else {}
    memories = [Memory.from_dict(m) for m in body.get("memories") or [] if isinstance(m, dict)]
    return memories, body.get("next") or None


def list_memories(
    bank: str, after: Optional[str] = None, limit: int = 1000
) -> Call[Tuple[List[Memory], Optional[str]]]:
    """One page of ``GET /v1/banks/{bank}/memories`` (every status; the caller filters)."""
    params = {"limit": str(limit)}
    if after:
        params["after"] = after
    return Call("GET", f"/v1/banks/{seg(bank)}/memories", _page, params=params)
