"""A real `hindsight serve` for the documentation and interface checks: fresh data directory,
free ports, embedded defaults, ready before it is returned."""

import socket
import subprocess
import time
import urllib.request
from pathlib import Path

READY_WITHIN_SECS = 180


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(binary, workdir):
    """Starts the node in `workdir` (its data in `workdir/data`, its log in `workdir/serve.log`);
    returns the process, its gRPC address and its HTTP address."""
    workdir = Path(workdir)
    grpc, http = free_port(), free_port()
    log = open(workdir / "serve.log", "w")
    node = subprocess.Popen(
        [binary, "serve", "--data-dir", str(workdir / "data"),
         "--grpc-addr", f"127.0.0.1:{grpc}", "--http-addr", f"127.0.0.1:{http}"],
        cwd=workdir, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
    )
    deadline = time.time() + READY_WITHIN_SECS
    while time.time() < deadline:
        if node.poll() is not None:
            raise SystemExit(f"the node exited: {(workdir / 'serve.log').read_text()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{http}/ready", timeout=2) as answer:
                if answer.status == 200:
                    return node, f"127.0.0.1:{grpc}", f"127.0.0.1:{http}"
        except OSError:
            pass
        time.sleep(0.2)
    node.kill()
    raise SystemExit(f"the node was not ready in {READY_WITHIN_SECS} s: {(workdir / 'serve.log').read_text()}")


def stop(node):
    node.terminate()
    try:
        node.wait(timeout=20)
    except subprocess.TimeoutExpired:
        node.kill()
