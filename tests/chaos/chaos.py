#!/usr/bin/env python3
"""Fault injection against a real local Hindsight cluster.

Starts N `hindsight serve` processes on loopback, drives concurrent writes and linearizable reads
over HTTP while killing, restarting, pausing (SIGSTOP) and partitioning nodes, then heals
everything and checks that every acknowledged write is present exactly once on every node and
that no read missed a write acknowledged before the read began. It also checks that, healed, every
node's actor link holds a session with every other node again (the run fails if not).

Partitions: each node serves on its own loopback address (127.0.0.1X) and sends its node-to-node
traffic from it (cluster.source_ip), but advertises a TCP proxy on 127.0.0.1 to its peers. The
proxy knows who is calling from the source address, so it can cut any pair of nodes in both
directions while the clients (which connect directly) still reach every node — an isolated
leader keeps answering clients, which is what a stale read would need.

Full disks: where the harness may mount file systems (root), each node's data directory is a small
tmpfs of its own, and the `full_disk` fault fills one with a ballast file until writes fail with
ENOSPC, then removes it. A node whose store fails that way exits with an error, possibly a while
after the fault. Without mount rights that fault is left out and the run says so.

Slow disks: every node runs with a small library preloaded (tests/chaos/slow_disk.c, built with
the system's C compiler) that makes its fsync, fdatasync and sync_file_range sleep while a control
file names a delay. The `slow_disk` fault gives the leader's disk SLOW_DISK_MS per flush: writes
must slow down, not be lost, and the run fails if the leader flushed several times during the
fault and its own metrics show none of those flushes that slow (a fault that did not take effect
tests nothing). Without a C compiler the fault is left out and the run says so. `--kinds` picks
the fault kinds of a run.

Long crashes: with `--replace-after S` (partitions and more than 3 nodes), nodes run with
cluster.replace_after_secs = S and the `long_crash` fault kills a follower and keeps it down until
the metadata leader has re-placed its replicas on the others: every partition on three live
nodes, none of them counting the dead one among its voters, each with a leader. The run fails if
that takes longer than S + REPLACE_LIMIT seconds, and reports how long it took.

Supervision: a node that exits on its own (not stopped by the harness) is restarted within a
second, as docker-compose's `restart: unless-stopped` or a StatefulSet would; while its disk is
still full it is left down, as a supervisor's restarts would fail until the space is back. The
run reports how many such restarts it made.
"""

import argparse
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid

BANK = "chaos"
SECRET = "chaos-cluster-secret-0123456789abcdef"
# Each node's disk under full_disk faults: room for a long run's data, quick to fill.
DISK_MB = 256
# What a slow_disk fault adds to each flush: far above a healthy disk's few milliseconds, below the
# election timeout, so the leader stays and its writes crawl.
SLOW_DISK_MS = 200
# The nodes' shortest election timeout (the store's `election_timeout_min`): a
# leader no majority has acknowledged for longer no longer counts as one.
ELECTION_TIMEOUT_MS = 500
# The store's flush histogram bucket that a slowed flush exceeds (seconds).
SLOW_FLUSH_BUCKET = "0.1"
WORDS = (
    "amber basil cedar delta ember fjord garnet harbor iris juniper kelp lantern meadow "
    "nectar orchid pepper quartz raven saffron tundra umber violet willow xenon yarrow zephyr "
    "anchor beacon canyon dune estuary falcon glacier heron island jasper kestrel lagoon "
    "marble nebula oasis prairie quill reef summit thistle upland valley walnut yucca zinnia"
).split()


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def free_port(ip="127.0.0.1"):
    with socket.socket() as s:
        s.bind((ip, 0))
        return s.getsockname()[1]


def can_listen(ip, port):
    """Whether a listener could bind ip:port now (with SO_REUSEADDR, as the node binds)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((ip, port))
        except OSError:
            return False
        return True


class Proxy:
    """A TCP proxy in front of one node's gRPC port, for node-to-node traffic only."""

    def __init__(self, target_node, target_addr, blocked):
        self.target_node = target_node
        self.target_addr = target_addr
        self.blocked = blocked  # callable(origin, target) -> bool
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.connections = []  # (origin, client socket, upstream socket)
        threading.Thread(target=self.accept_loop, daemon=True).start()

    def accept_loop(self):
        while True:
            try:
                client, (ip, _) = self.listener.accept()
            except OSError:
                return
            origin = int(ip.rsplit(".", 1)[1]) - 10
            if self.blocked(origin, self.target_node):
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target_addr, timeout=1)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.connections.append((origin, client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self.pump, args=(a, b), daemon=True).start()

    @staticmethod
    def pump(source, sink):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        for s in (source, sink):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def cut(self):
        """Closes the connections the current partition forbids."""
        with self.lock:
            keep = []
            for origin, client, upstream in self.connections:
                if self.blocked(origin, self.target_node) or client.fileno() < 0:
                    for s in (client, upstream):
                        try:
                            s.shutdown(socket.SHUT_RDWR)
                        except OSError:
                            pass
                        s.close()
                else:
                    keep.append((origin, client, upstream))
            self.connections = keep


class Cluster:
    def __init__(self, binary, n, root, partitions, replace_after=0):
        self.binary = binary
        self.n = n
        self.partitions = partitions
        self.replace_after = replace_after
        self.root = root
        self.isolated = set()
        self.procs = {}
        # Nodes the harness holds down on purpose (killed, stopping, disk full): not restarted.
        self.held = set()
        self.lock = threading.RLock()
        self.supervised_restarts = 0
        self.nodes = {}
        for i in range(1, n + 1):
            ip = f"127.0.0.{10 + i}"
            self.nodes[i] = {
                "ip": ip,
                "grpc": free_port(ip),
                "http": free_port(ip),
                "dir": os.path.join(root, f"n{i}"),
                "log": os.path.join(root, f"n{i}.log"),
            }
        for i, node in self.nodes.items():
            node["proxy"] = Proxy(i, (node["ip"], node["grpc"]), self.blocked)
        self.mounted = []
        self.disk_faults = self.mount_disks()
        self.slow_disk_library = self.build_slow_disk()

    def build_slow_disk(self):
        """Compiles the preloaded slow-disk library; None (and the fault left out) without a compiler."""
        source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "slow_disk.c")
        library = os.path.join(self.root, "slow_disk.so")
        try:
            done = subprocess.run(
                ["cc", "-shared", "-fPIC", "-O2", "-o", library, source, "-ldl"],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            )
        except OSError as e:
            log(f"slow_disk faults left out: no C compiler ({e})")
            return None
        if done.returncode != 0:
            log(f"slow_disk faults left out: cannot build {source}: {done.stderr.strip()}")
            return None
        return library

    def slow_disk_control(self, i):
        return os.path.join(self.root, f"n{i}.slow-disk")

    def slow_disk(self, i, delay_ms):
        """Makes node i's flushes take delay_ms longer; 0 makes its disk healthy again."""
        control = self.slow_disk_control(i)
        if delay_ms:
            with open(control + ".tmp", "w") as f:
                f.write(str(delay_ms))
            os.replace(control + ".tmp", control)
        else:
            try:
                os.remove(control)
            except FileNotFoundError:
                pass

    def slow_flushes(self, i):
        """(flushes slower than SLOW_FLUSH_BUCKET, all flushes) from node i's metrics, or None."""
        conn = http.client.HTTPConnection(*self.http_addr(i), timeout=5)
        try:
            conn.request("GET", "/metrics")
            response = conn.getresponse()
            text = response.read().decode()
            if response.status != 200:
                return None
        except (OSError, http.client.HTTPException):
            return None
        finally:
            conn.close()
        fast = total = None
        for line in text.splitlines():
            if not line.startswith("hindsight_store_flush_duration_seconds_bucket{"):
                continue
            count = float(line.rsplit(" ", 1)[1])
            if f'le="{SLOW_FLUSH_BUCKET}"' in line:
                fast = count
            elif 'le="+Inf"' in line:
                total = count
        if fast is None or total is None:
            return None
        return total - fast, total

    def mount_disks(self):
        """A tmpfs per data directory, so that one node's disk can be filled; False if not allowed."""
        for node in self.nodes.values():
            os.makedirs(node["dir"], exist_ok=True)
            done = subprocess.run(
                ["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m", "tmpfs", node["dir"]],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            )
            if done.returncode != 0:
                log(f"full_disk faults left out: cannot mount a tmpfs ({done.stderr.strip() or done.returncode})")
                self.unmount_disks()
                return False
            self.mounted.append(node["dir"])
        return True

    def unmount_disks(self):
        for path in self.mounted:
            subprocess.run(["umount", "-l", path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.mounted = []

    def fill_disk(self, i):
        """Writes a ballast file into node i's data directory until its disk is full."""
        chunk = b"\0" * (1 << 20)
        with open(self.ballast(i), "wb", buffering=0) as f:
            try:
                while True:
                    f.write(chunk)
            except OSError:
                pass

    def free_disk(self, i):
        try:
            os.remove(self.ballast(i))
        except FileNotFoundError:
            pass

    def ballast(self, i):
        return os.path.join(self.nodes[i]["dir"], "ballast")

    def blocked(self, origin, target):
        return origin != target and (origin in self.isolated or target in self.isolated)

    def http_addr(self, i):
        return (self.nodes[i]["ip"], self.nodes[i]["http"])

    def start(self, i):
        node = self.nodes[i]
        self.claim_ports(i)
        seeds = ",".join(
            f"127.0.0.1:{self.nodes[j]['proxy'].port}" for j in self.nodes if j != i
        )
        args = [
            self.binary, "serve",
            "--node-id", str(i),
            "--data-dir", node["dir"],
            "--grpc-addr", f"{node['ip']}:{node['grpc']}",
            "--http-addr", f"{node['ip']}:{node['http']}",
            "--advertise", f"127.0.0.1:{node['proxy'].port}",
        ]
        if i != 1:
            args += ["--join", seeds]
        env = dict(os.environ)
        env.update({
            "HINDSIGHT_EMBEDDING_PROVIDER": "hashing",
            "HINDSIGHT_CLUSTER_SECRET": SECRET,
            "HINDSIGHT_CLUSTER_SOURCE_IP": node["ip"],
            "HINDSIGHT_REVIEW_INTERVAL_SECS": "0",
            "HINDSIGHT_CLUSTER_PARTITIONS": str(self.partitions),
            "HINDSIGHT_CLUSTER_REPLACE_AFTER_SECS": str(self.replace_after or 300),
            "RUST_LOG": env.get("RUST_LOG", "info"),
        })
        if self.slow_disk_library:
            env["LD_PRELOAD"] = " ".join(filter(None, [self.slow_disk_library, env.get("LD_PRELOAD")]))
            env["CHAOS_SLOW_DISK"] = self.slow_disk_control(i)
        with self.lock:
            with open(node["log"], "ab") as out:
                self.procs[i] = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env)
            self.release(i)

    def claim_ports(self, i):
        """Gives node i new listening ports where another socket took its old ones meanwhile.

        A port found free when the cluster was laid out can be taken before the node binds it
        (an ephemeral port of some connection); the node would then exit at once. Its peers know
        it by its proxy's port, which stays, so only the proxy's target moves."""
        node = self.nodes[i]
        for key in ("grpc", "http"):
            if not can_listen(node["ip"], node[key]):
                old = node[key]
                node[key] = free_port(node["ip"])
                log(f"node {i}: {key} port {old} is taken; it listens on {node[key]} instead")
        node["proxy"].target_addr = (node["ip"], node["grpc"])

    def hold(self, i):
        with self.lock:
            self.held.add(i)

    def release(self, i):
        with self.lock:
            self.held.discard(i)

    def supervise(self):
        """Restarts every node that exited while not held down."""
        restarted = []
        with self.lock:
            for i in self.nodes:
                p = self.procs.get(i)
                if p is not None and p.poll() is not None and i not in self.held:
                    restarted.append((i, p.returncode))
                    self.start(i)
        for i, code in restarted:
            self.supervised_restarts += 1
            log(f"node {i} exited on its own (exit status {code}); restarted by the supervisor")

    def alive(self, i):
        p = self.procs.get(i)
        return p is not None and p.poll() is None

    def kill(self, i, sig=signal.SIGKILL):
        self.hold(i)
        p = self.procs.get(i)
        if p is None or p.poll() is not None:
            return
        p.send_signal(sig)
        # A paused process acts on no signal but SIGKILL until it is resumed.
        p.send_signal(signal.SIGCONT)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()

    def signal(self, i, sig):
        p = self.procs.get(i)
        if p is not None and p.poll() is None:
            p.send_signal(sig)

    def partition(self, isolated):
        self.isolated = set(isolated)
        for node in self.nodes.values():
            node["proxy"].cut()

    def status(self, i, timeout=1.0):
        code, body = request(self.http_addr(i), "GET", "/v1/cluster", timeout=timeout)
        return body if code == 200 else None

    def leader(self):
        """The leader a majority agrees on and that itself says it leads, else None."""
        return self.leading()[0]

    def leading(self):
        """(the leader as `leader` finds it, milliseconds since a majority last acknowledged it),
        or (None, None)."""
        views = {}
        for i in self.nodes:
            if self.alive(i):
                s = self.status(i, timeout=0.5)
                if s:
                    views[i] = s
        votes = {}
        for s in views.values():
            if s.get("leader_id"):
                votes[s["leader_id"]] = votes.get(s["leader_id"], 0) + 1
        for leader, count in votes.items():
            own = views.get(leader)
            if count > self.n // 2 and own and own.get("state") == "Leader":
                return leader, own.get("millis_since_quorum_ack")
        return None, None

    def stop_all(self):
        for i in list(self.procs):
            self.kill(i, signal.SIGTERM)

    def exit_code(self, i):
        p = self.procs.get(i)
        return None if p is None else p.poll()


def request(addr, method, path, body=None, timeout=10.0):
    conn = http.client.HTTPConnection(addr[0], addr[1], timeout=timeout)
    try:
        payload = json.dumps(body) if body is not None else None
        headers = {"content-type": "application/json"} if body is not None else {}
        conn.request(method, path, body=payload, headers=headers)
        response = conn.getresponse()
        data = response.read()
        try:
            parsed = json.loads(data) if data else None
        except ValueError:
            parsed = None
        return response.status, parsed
    except (OSError, http.client.HTTPException):
        return None, None
    finally:
        conn.close()


class Load:
    def __init__(self, cluster, banks, writers, readers):
        self.cluster = cluster
        self.banks = banks
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.acked = []  # (id, content, bank, ack time)
        self.write_failures = 0
        self.failure_codes = {}
        self.samples = []
        self.reads = 0
        self.read_failures = 0
        self.stale = []
        self.threads = [threading.Thread(target=self.writer, daemon=True) for _ in range(writers)]
        self.threads += [threading.Thread(target=self.reader, daemon=True) for _ in range(readers)]

    def start(self):
        for t in self.threads:
            t.start()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=60)

    def live_node(self):
        live = [i for i in self.cluster.nodes if self.cluster.alive(i)]
        return random.choice(live) if live else None

    def writer(self):
        rng = random.Random()
        while not self.stop.is_set():
            i = self.live_node()
            if i is None:
                time.sleep(0.1)
                continue
            content = f"record {uuid.uuid4().hex} " + " ".join(rng.sample(WORDS, 10))
            bank = rng.choice(self.banks)
            code, body = request(
                self.cluster.http_addr(i), "POST", f"/v1/banks/{bank}/memories",
                {"content": content}, timeout=15,
            )
            if code == 200 and body and body.get("disposition") == "created":
                with self.lock:
                    self.acked.append((body["id"], content, bank, time.monotonic()))
            else:
                # A 200 that created nothing names its disposition (say, a duplicate of a write
                # whose first answer was lost).
                key = f"{code} {body.get('disposition')}" if code == 200 and body else code
                with self.lock:
                    self.write_failures += 1
                    self.failure_codes[key] = self.failure_codes.get(key, 0) + 1
                time.sleep(0.05)

    def reader(self):
        while not self.stop.is_set():
            with self.lock:
                target = random.choice(self.acked) if self.acked else None
            i = self.live_node()
            if target is None or i is None:
                time.sleep(0.05)
                continue
            memory_id, content, _, _ = target
            code, body = request(self.cluster.http_addr(i), "GET", f"/v1/memories/{memory_id}", timeout=15)
            with self.lock:
                self.reads += 1
                if code == 200:
                    if body["memory"]["content"] != content:
                        self.stale.append((i, memory_id, "different content"))
                elif code == 404:
                    # Acknowledged before this read began, yet not seen: a stale read.
                    self.stale.append((i, memory_id, "not found"))
                else:
                    self.read_failures += 1
                    key = f"read {code}"
                    self.failure_codes[key] = self.failure_codes.get(key, 0) + 1
                    if body and len(self.samples) < 200:
                        self.samples.append((i, body.get("message", "")[:160]))
            if code != 200:
                time.sleep(0.05)


class Supervisor:
    """Restarts nodes that exit on their own, checking twice a second."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.wait(0.5):
            self.cluster.supervise()


class LeaderWatch:
    """Sums the time no leader held a majority, sampled every 100 ms.

    A leader cut off from the majority (a partition) still calls itself leader, and the others
    keep naming it, until one of them times out and wins an election. Such a leader counts as
    none once a majority has not acknowledged it for longer than the election timeout; from then
    on the time since it last heard from a majority is counted, the span before included."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.leaderless_ms = 0.0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        last = time.monotonic()
        led = True
        while not self.stop.is_set():
            leader, unacked_ms = self.cluster.leading()
            now = time.monotonic()
            cut_off = leader is not None and (unacked_ms or 0) > ELECTION_TIMEOUT_MS
            if cut_off and led:
                # The samples since it last heard from a majority were counted as led.
                self.leaderless_ms += unacked_ms
            elif leader is None or cut_off:
                self.leaderless_ms += (now - last) * 1000
            led = leader is not None and not cut_off
            last = now
            time.sleep(0.1)


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    log(f"timed out waiting for {what}")
    return False


def partition_of(bank, partitions):
    """The partition that holds `bank`: FNV-1a then jump consistent hashing, as the nodes place it."""
    mask = (1 << 64) - 1
    key = 0xCBF29CE484222325
    for byte in bank.encode():
        key = ((key ^ byte) * 0x100000001B3) & mask
    bucket = following = 0
    while following < partitions:
        bucket = following
        key = (key * 2862933555777941757 + 1) & mask
        following = ((bucket + 1) << 31) // ((key >> 33) + 1)
    return bucket


def banks_for(partitions, at_least=0):
    """Two banks in each partition (names found by hashing), or one bank without partitions; then
    more, up to `at_least` banks in all."""
    if not partitions:
        names = [BANK]
    else:
        per_partition = {p: [] for p in range(partitions)}
        k = 0
        while any(len(names) < 2 for names in per_partition.values()):
            name = f"{BANK}-{k}"
            names = per_partition[partition_of(name, partitions)]
            if len(names) < 2:
                names.append(name)
            k += 1
        names = [name for names in per_partition.values() for name in names]
    taken = set(names)
    k = 0
    while len(names) < at_least:
        name = f"{BANK}-extra-{k}"
        if name not in taken:
            names.append(name)
        k += 1
    return names


def in_parallel(work, items, threads=8):
    """`work(item)` for every item on a few threads; the first exception raised, if any."""
    pending = list(items)
    lock = threading.Lock()
    errors = []

    def run():
        while True:
            with lock:
                if not pending or errors:
                    return
                item = pending.pop()
            try:
                work(item)
            except Exception as e:  # noqa: BLE001 - reported by the caller
                with lock:
                    errors.append(e)

    pool = [threading.Thread(target=run, daemon=True) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    if errors:
        raise errors[0]


def partition_replicas(views):
    """{partition: (replicas in the placement table, views of the nodes that host it)}."""
    placed = {}
    for v in views:
        for p in v.get("partitions", []):
            replicas, hosts = placed.setdefault(p["partition"], (set(p.get("replicas", [])), []))
            if p.get("hosted"):
                hosts.append(p)
    return placed


# Seconds, beyond cluster.replace_after_secs, a dead node's replicas may take to be re-placed.
REPLACE_LIMIT = 90


def replaced_without(cluster, victims, partitions):
    """Whether every partition runs on live nodes only, none of the dead `victims` in its groups."""
    views = [cluster.status(i) for i in cluster.nodes if i not in victims]
    if None in views:
        return False
    table = partition_replicas(views)
    want = min(3, len(cluster.nodes) - len(victims))
    return len(table) == partitions and all(
        not (victims & replicas) and len(replicas) == want and len(hosts) == want
        and all(h.get("leader_id") and not (victims & set(h.get("voters", []))) for h in hosts)
        for replicas, hosts in table.values()
    )


def bank_memories(cluster, i, bank):
    contents = {}
    after = None
    while True:
        query = {"limit": 1000}
        if after:
            query["after"] = after
        code, body = request(
            cluster.http_addr(i), "GET",
            f"/v1/banks/{bank}/memories?{urllib.parse.urlencode(query)}", timeout=30,
        )
        if code != 200:
            raise RuntimeError(f"node {i} did not list its memories ({code}: {body})")
        for m in body["memories"]:
            contents.setdefault(m["content"], []).append(m["id"])
        after = body.get("next")
        if not after:
            return contents


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--faults", type=int, default=10)
    parser.add_argument("--duration", type=float, default=60, help="seconds of faults under load")
    parser.add_argument("--bin", default=os.environ.get("HINDSIGHT_BIN", "target/release/hindsight"))
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--readers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the data directories and logs")
    parser.add_argument(
        "--kinds", default=None,
        help="comma-separated fault kinds to inject (default: every kind this machine allows)",
    )
    parser.add_argument(
        "--partitions", type=int, default=0,
        help="run with cluster.partitions = P (3 replicas each) and write into 2 banks in each",
    )
    parser.add_argument(
        "--banks", type=int, default=0,
        help="create at least this many banks, write one memory into each before the faults, and "
             "check them all at the end (the load writes into all of them)",
    )
    parser.add_argument(
        "--replace-after", type=int, default=0,
        help="run with cluster.replace_after_secs = S and add long_crash faults (partitions, over 3 nodes)",
    )
    args = parser.parse_args()
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"chaos: {args.bin} is not an executable; build it first (cargo build --release -p hindsight-cli)")
    if args.nodes < 3:
        sys.exit("chaos: --nodes must be at least 3 (a cluster that survives one failure)")
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    random.seed(seed)
    root = tempfile.mkdtemp(prefix="hindsight-chaos-")
    log(f"seed {seed}; data and logs in {root}")
    cluster = Cluster(os.path.abspath(args.bin), args.nodes, root, args.partitions, args.replace_after)
    banks = banks_for(args.partitions, args.banks)
    ok = False
    try:
        cluster.start(1)
        def first_leads():
            cluster.supervise()
            s = cluster.status(1)
            return s is not None and s.get("state") == "Leader"
        if not wait_for(first_leads, 60, "node 1 to lead"):
            raise RuntimeError("node 1 did not start")
        for i in range(2, args.nodes + 1):
            cluster.start(i)
        def all_voters():
            cluster.supervise()
            s = cluster.status(1)
            return s is not None and sum(1 for m in s["members"] if m["voter"]) == args.nodes
        if not wait_for(all_voters, 120, "every node to join"):
            raise RuntimeError("the cluster did not form")
        def placed():
            if not args.partitions:
                return True
            views = [cluster.status(i) for i in cluster.nodes]
            if None in views:
                return False
            table = partition_replicas(views)
            # With more nodes than replicas, a node hosts only some partitions, so each
            # partition's leader is asked of the nodes that host it.
            # Placed on every node, each partition's group running on exactly the replicas the
            # table names: the moves that follow the nodes' joins are done, so that a fault does
            # not hit a group still growing from one voter (which a dead newcomer would stall).
            want = min(3, args.nodes)
            return len(table) == args.partitions and all(
                len(replicas) == want and len(hosts) == len(replicas)
                and all(h.get("leader_id") and set(h.get("voters", [])) == replicas for h in hosts)
                for replicas, hosts in table.values()
            )
        if not wait_for(placed, 120, "every partition to be placed and to elect a leader"):
            raise RuntimeError("the partitions were not placed")
        seeded = []

        def create(bank):
            i = list(cluster.nodes)[hash(bank) % len(cluster.nodes)]
            code, body = request(cluster.http_addr(i), "POST", "/v1/banks", {"name": bank}, timeout=30)
            if code != 200:
                raise RuntimeError(f"could not create bank {bank}: {code} {body}")
            if args.banks:
                content = f"seed of {bank} {uuid.uuid4().hex}"
                code, body = request(
                    cluster.http_addr(i), "POST", f"/v1/banks/{bank}/memories", {"content": content},
                    timeout=30,
                )
                if code != 200 or body.get("disposition") != "created":
                    raise RuntimeError(f"could not write into bank {bank}: {code} {body}")
                with lock:
                    seeded.append((body["id"], content, bank, time.monotonic()))

        lock = threading.Lock()
        started = time.monotonic()
        in_parallel(create, banks)
        if args.banks:
            log(f"{len(banks)} banks created with one memory each in {time.monotonic() - started:.0f} s")
        log(f"{args.nodes} nodes up, {args.partitions} partitions, {len(banks)} banks; "
            f"load and faults for {args.duration:.0f} s")

        load = Load(cluster, banks, args.writers, args.readers)
        load.acked.extend(seeded)
        watch = LeaderWatch(cluster)
        supervisor = Supervisor(cluster)
        load.start()
        watch.thread.start()
        supervisor.thread.start()
        faults = 0
        leaderless_by_kind = {}
        period = args.duration / max(args.faults, 1)
        kinds = ["kill_leader", "kill_follower", "restart", "partition_leader", "partition_node", "pause_leader"]
        if cluster.slow_disk_library:
            kinds.append("slow_disk")
        if cluster.disk_faults:
            kinds.append("full_disk")
        if args.replace_after and args.partitions and args.nodes > 3:
            kinds.append("long_crash")
        if args.replace_after and args.partitions and args.nodes > 4:
            kinds.append("double_crash")
        replacements = []
        if args.kinds:
            wanted = args.kinds.split(",")
            unknown = [k for k in wanted if k not in kinds]
            if unknown:
                raise RuntimeError(f"fault kinds not available here: {', '.join(unknown)} (available: {', '.join(kinds)})")
            kinds = wanted
        ineffective_slow_disks = 0
        # The faults are paced over --duration; a cluster slow to recover may stretch the run, up
        # to this bound.
        give_up = time.monotonic() + 2 * args.duration + 120
        while faults < args.faults and time.monotonic() < give_up:
            kind = kinds[faults % len(kinds)] if faults < len(kinds) else random.choice(kinds)
            leader = cluster.leader()
            live = [i for i in cluster.nodes if cluster.alive(i)]
            followers = [i for i in live if i != leader] or live
            victim = leader if kind in ("kill_leader", "partition_leader", "pause_leader", "slow_disk") and leader else random.choice(
                followers if kind in ("kill_follower", "partition_node", "long_crash") else live
            )
            hold = period * random.uniform(0.4, 0.6)
            leaderless_before = watch.leaderless_ms
            acked_before = len(load.acked)
            log(f"fault {faults + 1}/{args.faults}: {kind} node {victim} (leader {leader}) for {hold:.1f} s")
            if kind in ("kill_leader", "kill_follower"):
                cluster.kill(victim)
                time.sleep(hold)
                cluster.start(victim)
            elif kind in ("long_crash", "double_crash"):
                # double_crash: a second follower dies once the first one's replicas are
                # re-placed, and both stay down until the second one's are too.
                victims = {victim}
                if kind == "double_crash":
                    others = [i for i in followers if i != victim]
                    second = random.choice(others) if others else None
                else:
                    second = None
                for down in [victim] + ([second] if second else []):
                    victims.add(down)
                    cluster.kill(down)
                    started = time.monotonic()
                    done = wait_for(
                        lambda: replaced_without(cluster, set(victims), args.partitions),
                        args.replace_after + REPLACE_LIMIT,
                        f"node {down}'s replicas to be re-placed",
                    )
                    took = time.monotonic() - started
                    replacements.append(took if done else None)
                    log(f"node {down}'s replicas re-placed on the live nodes in {took:.1f} s "
                        f"(down: {sorted(victims)})" if done
                        else f"node {down}'s replicas were not re-placed in {took:.0f} s")
                for down in sorted(victims):
                    cluster.start(down)
            elif kind == "restart":
                started = time.monotonic()
                cluster.kill(victim, signal.SIGTERM)
                log(f"node {victim} stopped in {time.monotonic() - started:.1f} s")
                cluster.start(victim)
                time.sleep(hold)
            elif kind == "pause_leader":
                # A stalled process (a long GC pause, a VM descheduled, a disk that stops
                # answering): it resumes believing it still leads, and must neither serve a stale
                # read nor have a write acknowledged that the new leader does not hold.
                cluster.hold(victim)
                cluster.signal(victim, signal.SIGSTOP)
                time.sleep(hold)
                cluster.signal(victim, signal.SIGCONT)
                cluster.release(victim)
            elif kind == "slow_disk":
                before = cluster.slow_flushes(victim)
                cluster.slow_disk(victim, SLOW_DISK_MS)
                time.sleep(hold)
                after = cluster.slow_flushes(victim)
                cluster.slow_disk(victim, 0)
                if before is None or after is None or after[1] < before[1]:
                    # Restarted or unreachable meanwhile: its counters say nothing about the fault.
                    log(f"node {victim}: flush timings not comparable across the slow disk")
                else:
                    slow, flushes = after[0] - before[0], after[1] - before[1]
                    log(f"node {victim}: {slow:.0f} of {flushes:.0f} flushes took over "
                        f"{float(SLOW_FLUSH_BUCKET) * 1000:.0f} ms on the slow disk")
                    # With partitions the victim may hold no busy replica and hardly flush; one
                    # flush may have begun before the delay did. Several and none slow: no fault.
                    if slow == 0 and flushes >= 3:
                        ineffective_slow_disks += 1
            elif kind == "full_disk":
                cluster.hold(victim)
                cluster.fill_disk(victim)
                time.sleep(hold)
                cluster.free_disk(victim)
                code = cluster.exit_code(victim)
                if code is not None:
                    log(f"node {victim} stopped on its full disk (exit status {code}); restarting it")
                    cluster.start(victim)
                else:
                    # It may still be stopping on a failed write; the supervisor restarts it then.
                    cluster.release(victim)
                    log(f"node {victim} still running after its full disk")
            else:
                cluster.partition({victim})
                time.sleep(hold)
                cluster.partition(set())
            log(f"{len(load.acked) - acked_before} writes acknowledged during the fault")
            # Let the cluster settle before the next fault, so one fault is in force at a time.
            wait_for(lambda: cluster.leader() is not None, 30, "a leader")
            time.sleep(max(period - hold, 0.2))
            by_kind = leaderless_by_kind.setdefault(kind, [0, 0.0])
            by_kind[0] += 1
            by_kind[1] += watch.leaderless_ms - leaderless_before
            faults += 1

        load.finish()
        watch.stop.set()
        watch.thread.join()
        log("healing: every node up, no partition")
        cluster.partition(set())
        # The supervisor keeps running until the checks: a node that the last fault (a full
        # disk) makes stop can still be shutting down here, and exits a few seconds later.
        with cluster.lock:
            for i in cluster.nodes:
                if not cluster.alive(i):
                    cluster.start(i)

        def converged():
            leader = cluster.leader()
            if leader is None:
                return False
            s = cluster.status(leader)
            if s is None:
                return False
            views = [cluster.status(i) for i in cluster.nodes]
            if None in views:
                return False
            applied = {v["applied_index"] for v in views}
            # Each partition's replicas too, all of them at the same index.
            partitions_converged = all(
                len(hosts) == len(replicas)
                and len({h.get("applied_index") for h in hosts}) == 1
                and hosts[0].get("applied_index") is not None
                for replicas, hosts in partition_replicas(views).values()
            )
            return (
                len(applied) == 1 and None not in applied and s["last_log_index"] in applied
                and partitions_converged
            )
        wait_for(converged, 120, "every node to apply the whole log")

        def all_linked():
            for i in cluster.nodes:
                s = cluster.status(i)
                if s is None or sorted(s.get("linked_nodes", [])) != [j for j in cluster.nodes if j != i]:
                    return False
            return True
        # The actor link's sessions end with the faults; healed, every node dials them again.
        linked = wait_for(all_linked, 60, "every node to be linked with every other (actor link)")
        if linked:
            log("actor link: every node linked with every other")
        supervisor.stop.set()
        supervisor.thread.join()

        acked = load.acked
        lost = set()
        duplicates = set()
        # Each write is looked for on every replica of its bank: every node without partitions,
        # the nodes the placement table names for the bank's partition with them.
        holders = {bank: set(cluster.nodes) for bank in banks}
        if args.partitions:
            table = partition_replicas([cluster.status(i) for i in cluster.nodes if cluster.status(i)])
            for bank in banks:
                holders[bank] = table[partition_of(bank, args.partitions)][0]
        written = {}
        for memory_id, content, bank, _ in acked:
            written.setdefault(bank, []).append((memory_id, content))
        checked = time.monotonic()

        def check(pair):
            i, bank = pair
            contents = bank_memories(cluster, i, bank)
            for memory_id, content in written[bank]:
                ids = contents.get(content, [])
                with lock:
                    if memory_id not in ids:
                        lost.add(memory_id)
                    if len(ids) > 1:
                        duplicates.add(memory_id)

        in_parallel(check, [(i, b) for b in written for i in cluster.nodes if i in holders[b]])
        log(f"{sum(len(w) for w in written.values())} acknowledged writes in {len(written)} banks "
            f"looked for on every replica in {time.monotonic() - checked:.0f} s")
        log(f"restarts by the supervisor: {cluster.supervised_restarts}")
        for kind, (count, ms) in sorted(leaderless_by_kind.items()):
            log(f"{kind}: {count} faults, {ms / count:.0f} ms without a leader each on average")
        reasons = {}
        for _, message in load.samples:
            reasons[message] = reasons.get(message, 0) + 1
        for message, count in sorted(reasons.items(), key=lambda kv: -kv[1])[:5]:
            log(f"read refused {count}x: {message}")
        if ineffective_slow_disks:
            log(f"{ineffective_slow_disks} slow_disk faults did not slow a single one of several flushes")
        for i, memory_id, why in load.stale[:10]:
            log(f"stale read on node {i}: {memory_id} {why}")
        log(
            f"writes acked {len(acked)}, failed or unknown {load.write_failures}; "
            f"reads {load.reads}, unavailable {load.read_failures}; failures by status {load.failure_codes}"
        )
        if replacements:
            placed_in = [t for t in replacements if t is not None]
            log(f"long crashes: {len(replacements)}, re-placed {len(placed_in)}, "
                f"in {', '.join(f'{t:.1f}' for t in placed_in)} s")
        summary = (
            f"chaos: nodes={args.nodes} faults={faults} acked={len(acked)} lost={len(lost)} "
            f"duplicates={len(duplicates)} stale_reads={len(load.stale)} "
            f"leaderless_ms={int(watch.leaderless_ms)}"
        )
        ok = (
            not lost and not duplicates and not load.stale and len(acked) > 0 and linked
            and not ineffective_slow_disks and None not in replacements
        )
        cluster.stop_all()
        print(summary, flush=True)
    finally:
        cluster.stop_all()
        cluster.unmount_disks()
        if ok and not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        elif not ok:
            log(f"kept {root} for inspection")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
