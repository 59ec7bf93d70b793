"""The per-bank HNSW index (crates/hindsight-index) against hnswlib on the same vectors and the same
graph parameters, single thread: queries per second at each candidate list size (ef) and the
highest QPS at recall@10 >= 0.95. Run through bench/hnsw-vs-hnswlib/run.

Data: a low-rank latent model (48 factors plus isotropic noise, L2-normalised), the same shape
crates/hindsight-index/benches/vector.rs uses, which behaves like sentence embeddings far more than
uniform random vectors do. Ground truth: exact cosine top-10 by brute force.
"""

import argparse
import importlib.metadata
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import hnswlib
import numpy as np

K = 10
TARGET_RECALL = 0.95


def latent_vectors(n, dim, rng, basis):
    z = rng.standard_normal((n, basis.shape[0]), dtype=np.float32) / np.sqrt(basis.shape[0])
    v = z @ basis + 0.35 * rng.standard_normal((n, dim), dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v.astype(np.float32)


def write_matrix(path, matrix, dtype):
    matrix = np.ascontiguousarray(matrix, dtype=dtype)
    with open(path, "wb") as out:
        out.write(struct.pack("<II", *matrix.shape))
        out.write(matrix.astype(matrix.dtype.newbyteorder("<")).tobytes())


def ground_truth(base, queries):
    truth = np.empty((len(queries), K), dtype=np.uint32)
    for start in range(0, len(queries), 256):
        sims = queries[start:start + 256] @ base.T
        top = np.argpartition(-sims, K, axis=1)[:, :K]
        order = np.argsort(-np.take_along_axis(sims, top, axis=1), axis=1)
        truth[start:start + 256] = np.take_along_axis(top, order, axis=1)
    return truth


class Ours:
    """The hnsw_bench example: builds on start, then answers one timed pass per ef it is sent."""

    def __init__(self, binary, directory, m, ef_construction):
        env = dict(os.environ, RAYON_NUM_THREADS="1")
        self.process = subprocess.Popen(
            [binary, directory, str(m), str(ef_construction)], env=env, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        )
        self.info = self._answer()

    def _answer(self):
        line = self.process.stdout.readline()
        if not line:
            sys.exit(f"hnsw_bench stopped (exit status {self.process.wait()})")
        return json.loads(line)

    def search_pass(self, ef):
        self.process.stdin.write(f"{ef}\n")
        self.process.stdin.flush()
        answer = self._answer()
        return answer["recall"], answer["secs"]

    def close(self):
        self.process.stdin.close()
        self.process.wait()


class Theirs:
    """hnswlib with the same parameters, one thread."""

    def __init__(self, base, queries, truth, m, ef_construction):
        self.queries, self.truth = queries, truth.tolist()
        self.index = hnswlib.Index(space="cosine", dim=base.shape[1])
        self.index.init_index(max_elements=len(base), M=m, ef_construction=ef_construction,
                              random_seed=7)
        self.index.set_num_threads(1)
        started = time.perf_counter()
        self.index.add_items(base, np.arange(len(base)), num_threads=1)
        self.info = {"build_secs": time.perf_counter() - started}
        self.index.set_ef(64)
        self.index.knn_query(queries, k=K, num_threads=1)  # warm-up, as on the other side

    def search_pass(self, ef):
        self.index.set_ef(ef)
        started = time.perf_counter()
        labels, _ = self.index.knn_query(self.queries, k=K, num_threads=1)
        secs = time.perf_counter() - started
        hits = sum(len(set(f) & set(w)) for f, w in zip(labels.tolist(), self.truth))
        return hits / (len(self.queries) * K), secs


def sweep(libraries, efs, repeats, n_queries):
    """Timed passes, alternating between the libraries so that both see the same machine load;
    the fastest of `repeats` passes counts."""
    results = {name: [] for name in libraries}
    for ef in efs:
        best = {name: (0.0, float("inf")) for name in libraries}
        for _ in range(repeats):
            for name, library in libraries.items():
                recall, secs = library.search_pass(ef)
                best[name] = (recall, min(best[name][1], secs))
        for name, (recall, secs) in best.items():
            results[name].append({"ef": ef, "recall": recall, "qps": n_queries / secs})
    return results


def best_at_target(results):
    passing = [r for r in results if r["recall"] >= TARGET_RECALL]
    return max(passing, key=lambda r: r["qps"]) if passing else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", required=True, help="the hnsw_bench example, built --release")
    parser.add_argument("--n", type=int, default=100_000, help="vectors in the index")
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--m", type=int, default=24, help="links per node (layer 0: twice as many)")
    parser.add_argument("--ef-construction", type=int, default=200)
    parser.add_argument("--efs", default="10,16,24,32,48,64,96,128,192,256")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes per ef; the best counts")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    efs = [int(e) for e in args.efs.split(",")]

    rng = np.random.default_rng(args.seed)
    basis = rng.standard_normal((48, args.dim), dtype=np.float32)
    print(f"data: {args.n} x {args.dim} base vectors, {args.queries} queries, M={args.m}, "
          f"ef_construction={args.ef_construction}, k={K}, 1 thread", flush=True)
    base = latent_vectors(args.n, args.dim, rng, basis)
    queries = latent_vectors(args.queries, args.dim, rng, basis)
    truth = ground_truth(base, queries)

    with tempfile.TemporaryDirectory() as tmp:
        write_matrix(Path(tmp, "base.f32"), base, np.float32)
        write_matrix(Path(tmp, "queries.f32"), queries, np.float32)
        write_matrix(Path(tmp, "truth.u32"), truth, np.uint32)
        print("building hindsight-index ...", flush=True)
        ours = Ours(args.binary, tmp, args.m, args.ef_construction)
        print(f"  {ours.info['build_secs']:.1f} s; building hnswlib ...", flush=True)
        theirs = Theirs(base, queries, truth, args.m, args.ef_construction)
        print(f"  {theirs.info['build_secs']:.1f} s; searching ...", flush=True)
        results = sweep({"ours": ours, "theirs": theirs}, efs, args.repeats, len(queries))
        ours.close()
    ours_results, theirs_results = results["ours"], results["theirs"]

    print()
    theirs_name = f"hnswlib {importlib.metadata.version('hnswlib')}"
    print(f"{'':>5} | {'hindsight-index':^24} | {theirs_name:^24}")
    print(f"{'ef':>5} | {'recall@10':>10} {'QPS':>13} | {'recall@10':>10} {'QPS':>13}")
    print("-" * 61)
    for a, b in zip(ours_results, theirs_results):
        print(f"{a['ef']:>5} | {a['recall']:>10.4f} {a['qps']:>13,.0f} | {b['recall']:>10.4f} {b['qps']:>13,.0f}")
    print("-" * 61)
    print(f"{'build':>5} | {ours.info['build_secs']:>23.1f}s | {theirs.info['build_secs']:>23.1f}s")
    a, b = best_at_target(ours_results), best_at_target(theirs_results)
    print()
    print(f"QPS at recall@10 >= {TARGET_RECALL}:")
    for name, best in [("hindsight-index", a), ("hnswlib", b)]:
        if best:
            print(f"  {name:16} {best['qps']:>10,.0f}  (ef {best['ef']}, recall {best['recall']:.4f})")
        else:
            print(f"  {name:16} {'none':>10}  (no ef in the sweep reaches the recall)")
    ratio = a["qps"] / b["qps"] if a and b else None
    if ratio is not None:
        print(f"  ratio            {ratio:>10.2f}x hnswlib's QPS (target: at least 0.8x)")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "config": vars(args),
            "hindsight_index": dict(ours.info, results=ours_results),
            "hnswlib": dict(theirs.info, results=theirs_results),
            "ratio": ratio,
        }, indent=2))


if __name__ == "__main__":
    sys.exit(main())
