"""A real node for the adapters' tests, started the way the Python client's own tests start theirs
(clients/python/tests/conftest.py: $HINDSIGHT_BIN, the offline hashing embedder, a temporary data
directory, reviews only when asked)."""

from __future__ import annotations

import importlib.util
import os
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from hindsight_client import AsyncHindsightClient, HindsightClient

REPO_ROOT = Path(__file__).resolve().parents[2]

# Tracing would try to upload spans to OpenAI; these tests run offline.
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")


def _client_conftest():
    path = REPO_ROOT / "clients" / "python" / "tests" / "conftest.py"
    spec = importlib.util.spec_from_file_location("hindsight_client_tests_conftest", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


Node = _client_conftest().Node


@pytest.fixture(scope="session")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    n = Node(tmp_path_factory.mktemp("node") / "data")
    yield n
    n.stop()


@pytest.fixture
def client(node: Node) -> Iterator[HindsightClient]:
    with HindsightClient(node.url, api_key="", timeout=30.0) as c:
        yield c


@pytest.fixture
def async_client(node: Node) -> AsyncHindsightClient:
    # Opened and closed inside each async test: an httpx.AsyncClient belongs to one event loop.
    return AsyncHindsightClient(node.url, api_key="", timeout=30.0)


@pytest.fixture
def prefix() -> str:
    """A bank prefix of the test's own, so that tests sharing the node do not see each other."""
    return f"t{uuid.uuid4().hex[:10]}"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
