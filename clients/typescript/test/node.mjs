// Real nodes for the tests: the `hindsight` binary from $HINDSIGHT_BIN (default
// target/debug/hindsight under the repository root) with the hashing embedder, so that nothing is
// downloaded, each on free ports in its own temporary data directory, removed when it stops.

import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, openSync, closeSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { randomBytes, randomUUID } from "node:crypto";

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const READY_TIMEOUT_MS = 90_000;

export function binary() {
  const raw = process.env.HINDSIGHT_BIN || "target/debug/hindsight";
  const path = resolve(REPO_ROOT, raw);
  if (!existsSync(path)) {
    throw new Error(`no hindsight binary at ${path}: build it (cargo build -p hindsight-cli) or set HINDSIGHT_BIN`);
  }
  return path;
}

async function freePorts(n) {
  // Held open together so that the same port is not handed out twice.
  const servers = [];
  try {
    for (let i = 0; i < n; i++) {
      const server = createServer();
      await new Promise((ok, fail) => {
        server.once("error", fail);
        server.listen(0, "127.0.0.1", ok);
      });
      servers.push(server);
    }
    return servers.map((s) => s.address().port);
  } finally {
    await Promise.all(servers.map((s) => new Promise((ok) => s.close(ok))));
  }
}

const running = new Set();
// A test file that fails or is interrupted must not leave its nodes behind.
process.on("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

export class Node {
  /** Starts `hindsight serve` with extra HINDSIGHT_* settings and waits until it is ready. */
  static async start(env = {}) {
    const node = new Node();
    await node.#start(env);
    return node;
  }

  #child;
  #dir;
  #log;

  async #start(env) {
    this.#dir = mkdtempSync(join(tmpdir(), "hindsight-ts-"));
    this.logPath = join(this.#dir, "node.log");
    const [grpcPort, httpPort] = await freePorts(2);
    this.url = `http://127.0.0.1:${httpPort}`;
    const fullEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("HINDSIGHT_")));
    Object.assign(fullEnv, {
      HINDSIGHT_EMBEDDING_PROVIDER: "hashing",
      // Reviews run only when a test asks, so that their outcome is the test's to check.
      HINDSIGHT_REVIEW_INTERVAL_SECS: "0",
      HINDSIGHT_REVIEW_ON_LIKELY_CONFLICT: "false",
      ...env,
    });
    this.#log = openSync(this.logPath, "w");
    this.#child = spawn(
      binary(),
      ["serve", "--data-dir", join(this.#dir, "data"), "--grpc-addr", `127.0.0.1:${grpcPort}`, "--http-addr", `127.0.0.1:${httpPort}`],
      { env: fullEnv, stdio: ["ignore", this.#log, this.#log] },
    );
    running.add(this.#child);
    this.#child.once("exit", () => running.delete(this.#child));
    try {
      await this.#waitReady();
    } catch (error) {
      await this.stop();
      throw error;
    }
  }

  logTail(lines = 40) {
    try {
      return readFileSync(this.logPath, "utf8").split("\n").slice(-lines).join("\n");
    } catch {
      return "";
    }
  }

  async #waitReady() {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (this.#child.exitCode !== null || this.#child.signalCode !== null) {
        throw new Error(`hindsight serve exited with ${this.#child.exitCode ?? this.#child.signalCode}:\n${this.logTail()}`);
      }
      try {
        const answer = await fetch(`${this.url}/ready`, { signal: AbortSignal.timeout(2000) });
        if (answer.status === 200) return;
      } catch {
        // not listening yet
      }
      await new Promise((ok) => setTimeout(ok, 100));
    }
    throw new Error(`hindsight serve not ready in ${READY_TIMEOUT_MS} ms:\n${this.logTail()}`);
  }

  async stop() {
    const child = this.#child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((ok) => child.once("exit", ok));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
      await exited;
      clearTimeout(timer);
    }
    if (this.#log !== undefined) closeSync(this.#log);
    this.#log = undefined;
    if (this.#dir) rmSync(this.#dir, { recursive: true, force: true });
    this.#dir = undefined;
  }
}

/** A bank name with a slash, so that every route is exercised with a percent-encoded name. */
export function newBank(prefix = "ts") {
  return `${prefix}/${randomUUID().slice(0, 12)}`;
}

export function newAdminKey() {
  return `hs_admin_${randomBytes(16).toString("hex")}`;
}

export const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;
