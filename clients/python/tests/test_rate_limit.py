"""A node's per-key rate limit reaches the caller as RateLimited with the wait."""

from __future__ import annotations

import pytest

from hindsight_client import HindsightClient, RateLimited


def test_over_the_rate_limit_is_rate_limited(start_node):
    limited = start_node(HINDSIGHT_RATE_LIMIT_PER_KEY_PER_SEC="0.5", HINDSIGHT_RATE_LIMIT_BURST="2")
    with HindsightClient(limited.url, api_key="") as client:
        with pytest.raises(RateLimited) as info:
            for _ in range(5):
                client.status()
        assert info.value.status == 429 and info.value.code == "resource_exhausted"
        assert info.value.retry_after is not None and 0 < info.value.retry_after <= 2.5
