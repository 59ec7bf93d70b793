"""The async client against a real node."""

from __future__ import annotations

import anyio
import pytest

from hindsight_client import AsyncHindsightClient, InvalidArgument, NotFound

pytestmark = pytest.mark.anyio


async def test_async_write_then_recall(async_client: AsyncHindsightClient, bank: str):
    async with async_client as client:
        written = await client.write(bank, "The user drinks oat milk lattes.", source="user")
        assert written.disposition == "created"
        result = await client.recall(bank, "What coffee does the user drink?")
        assert result.ids[0] == written.id
        assert result.hits[0].explain.arms
        memory = await client.get(written.id)
        assert memory.content == "The user drinks oat milk lattes."
        assert (await client.banks.get(bank)).memory_count == 1


async def test_async_concurrent_writes_and_errors(async_client: AsyncHindsightClient, bank: str):
    facts = [
        "The backup job runs nightly at two in the morning.",
        "Marketing prefers charts in the company's teal palette.",
        "The VPN certificate expires every ninety days.",
        "Customer Acme Corp pays by bank transfer only.",
        "The design review happens on alternate Wednesdays.",
    ]
    ids = {}

    async with async_client as client:
        async def put(text: str) -> None:
            ids[text] = (await client.write(bank, text, source="user")).id

        async with anyio.create_task_group() as tg:
            for text in facts:
                tg.start_soon(put, text)
        assert len(set(ids.values())) == 5
        assert (await client.banks.get(bank)).memory_count == 5

        with pytest.raises(NotFound):
            await client.trace("01ARZ3NDEKTSV4RRFFQ69G5FAV")
        with pytest.raises(InvalidArgument):
            await client.recall(bank, "racks", top_k=0)
