"""Real nodes for the tests: the `hindsight` binary from $HINDSIGHT_BIN (default
target/debug/hindsight under the repository root), with the hashing embedder so that nothing is
downloaded, each in its own temporary data directory."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import time
import uuid
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional

import httpx
import pytest

from hindsight_client import AsyncHindsightClient, HindsightClient

REPO_ROOT = Path(__file__).resolve().parents[3]
READY_TIMEOUT_SECS = 90.0


def _binary() -> Path:
    raw = os.environ.get("HINDSIGHT_BIN") or "target/debug/hindsight"
    path = Path(raw)
    if not path.is_absolute():
        path = (REPO_ROOT / path).resolve()
    if not path.exists():
        pytest.exit(
            f"no hindsight binary at {path}: build it (cargo build -p hindsight-cli) or set "
            "HINDSIGHT_BIN",
            returncode=2,
        )
    return path


def _free_ports(n: int) -> list:
    # Held open together so that the same port is not handed out twice.
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class Node:
    """One `hindsight serve` process."""

    def __init__(self, data_dir: Path, env: Optional[Dict[str, str]] = None) -> None:
        self.data_dir = data_dir
        self.log_path = data_dir.parent / f"{data_dir.name}.log"
        grpc_port, http_port = _free_ports(2)
        self.url = f"http://127.0.0.1:{http_port}"
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
        full_env.update(
            {
                "HINDSIGHT_EMBEDDING_PROVIDER": "hashing",
                # Reviews run only when a test asks, so their outcome is the test's to check.
                "HINDSIGHT_REVIEW_INTERVAL_SECS": "0",
                "HINDSIGHT_REVIEW_ON_LIKELY_CONFLICT": "false",
            }
        )
        full_env.update(env or {})
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            [
                str(_binary()),
                "serve",
                "--data-dir",
                str(data_dir),
                "--grpc-addr",
                f"127.0.0.1:{grpc_port}",
                "--http-addr",
                f"127.0.0.1:{http_port}",
            ],
            env=full_env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_SECS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"hindsight serve exited with {self.process.returncode}:\n{self.log_tail()}"
                )
            try:
                if httpx.get(f"{self.url}/ready", timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"hindsight serve not ready in {READY_TIMEOUT_SECS}s:\n{self.log_tail()}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)
        self._log.close()


@pytest.fixture(scope="session")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    n = Node(tmp_path_factory.mktemp("node") / "data")
    yield n
    n.stop()


@pytest.fixture
def start_node(tmp_path: Path) -> Iterator[Callable[..., Node]]:
    """Starts a node of the test's own with extra HINDSIGHT_* settings; stopped after the test."""
    started: List[Node] = []

    def start(**env: str) -> Node:
        n = Node(tmp_path / f"node-{len(started)}", env=env)
        started.append(n)
        return n

    yield start
    for n in started:
        n.stop()


@pytest.fixture(scope="session")
def admin_key() -> str:
    return f"hs_admin_{secrets.token_hex(16)}"


@pytest.fixture(scope="session")
def auth_node(tmp_path_factory: pytest.TempPathFactory, admin_key: str) -> Iterator[Node]:
    n = Node(
        tmp_path_factory.mktemp("auth-node") / "data",
        env={"HINDSIGHT_AUTH_ENABLED": "true", "HINDSIGHT_ADMIN_KEY": admin_key},
    )
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
def bank() -> str:
    # A slash in every test bank, so that every route is exercised with a percent-encoded name.
    return f"pytest/{uuid.uuid4().hex[:12]}"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
