// gRPC load on a cluster: the write-heavy or recall-heavy shape of lib/common.js, each virtual user
// bound to one of the nodes in HINDSIGHT_GRPC_NODES (comma-separated host:port) in turn, so that
// the load is spread evenly over followers and leader. loadtest/cluster-bench starts the nodes and
// runs this; by hand:
//   k6 run -e SCENARIO=write-heavy -e HINDSIGHT_GRPC_NODES=127.0.0.1:7400,127.0.0.1:7410 loadtest/cluster.js
//
// Settings beyond lib/common.js:
//   LOAD_EXECUTOR  closed: LOAD_VUS users each send the next request as soon as the last one is
//                  answered (finds the throughput); open: LOAD_RATE requests started per second
//                  whatever the latency (latency at a given load). Default closed.
//   LOAD_BATCH     memories per WriteBatch (default 10)
//   LOAD_BATCH_SHARE  share of writes sent as a WriteBatch (default: the scenario's, 0.1 for
//                  write-heavy)
//   LOAD_BANKS     banks the load is spread over (default 4)
import grpc from 'k6/net/grpc';
import { check } from 'k6';
import { Counter, Rate, Trend } from 'k6/metrics';
import * as c from './lib/common.js';

const NODES = (__ENV.HINDSIGHT_GRPC_NODES || c.GRPC).split(',').map((s) => s.trim()).filter(Boolean);
const EXECUTOR = __ENV.LOAD_EXECUTOR || 'closed';
const VUS = Number(__ENV.LOAD_VUS || 20);
const RATE = Number(__ENV.LOAD_RATE || 50);
const DURATION = __ENV.LOAD_DURATION || '60s';
const BATCH = Number(__ENV.LOAD_BATCH || 10);
const BANKS = Number(__ENV.LOAD_BANKS || 4);
const BATCH_SHARE = __ENV.LOAD_BATCH_SHARE === undefined || __ENV.LOAD_BATCH_SHARE === ''
  ? c.SHAPE.batch : Number(__ENV.LOAD_BATCH_SHARE);

const writeLatency = new Trend('write_latency', true);
const recallLatency = new Trend('recall_latency', true);
const writesAcked = new Counter('writes_acked');
const writeErrors = new Counter('write_errors');
const recallErrors = new Counter('recall_errors');
const opErrors = new Rate('op_errors');

if (!['closed', 'open'].includes(EXECUTOR)) {
  throw new Error(`LOAD_EXECUTOR must be closed or open, not ${EXECUTOR}`);
}

const scenario = EXECUTOR === 'closed'
  ? { executor: 'constant-vus', vus: VUS, duration: DURATION }
  : {
    executor: 'constant-arrival-rate', rate: RATE, timeUnit: '1s', duration: DURATION,
    preAllocatedVUs: VUS, maxVUs: VUS * 4,
  };

export const options = {
  scenarios: { [c.SCENARIO]: scenario },
  // Measuring, not gating: the cluster-bench script reads the numbers and compares them with the
  // targets itself.
  summaryTrendStats: ['avg', 'min', 'med', 'p(90)', 'p(95)', 'p(99)', 'max'],
  setupTimeout: '5m',
};

const client = new grpc.Client();
client.load(['../proto'], 'hindsight/v1/memory_service.proto');

const PARAMS = { timeout: '30s', metadata: {} };
if (c.API_KEY) {
  PARAMS.metadata.authorization = `Bearer ${c.API_KEY}`;
}

function bank(n) {
  return `${c.BANK}-${n % BANKS}`;
}

function writeRequest(b) {
  return Object.assign({ bank: b }, c.memory());
}

export function setup() {
  if (c.SCENARIO !== 'recall-heavy') {
    return;
  }
  client.connect(NODES[0], { plaintext: !c.GRPC_TLS, timeout: '10s' });
  for (let b = 0; b < BANKS; b++) {
    c.seedOverGrpc(client, c.SEED, () => writeRequest(bank(b)), PARAMS);
  }
  client.close();
}

export default function () {
  if (__ITER === 0) {
    client.connect(NODES[__VU % NODES.length], { plaintext: !c.GRPC_TLS, timeout: '10s' });
  }
  const b = bank(__VU + __ITER);
  if (Math.random() < c.SHAPE.write) {
    const batched = Math.random() < BATCH_SHARE;
    const started = Date.now();
    const res = batched
      ? client.invoke('hindsight.v1.MemoryService/WriteBatch',
        { items: Array.from({ length: BATCH }, () => writeRequest(b)) }, PARAMS)
      : client.invoke('hindsight.v1.MemoryService/Write', writeRequest(b), PARAMS);
    writeLatency.add(Date.now() - started);
    const ok = check(res, { 'write answered OK': (r) => r && r.status === grpc.StatusOK });
    opErrors.add(!ok);
    if (ok) {
      writesAcked.add(batched ? BATCH : 1);
    } else {
      writeErrors.add(1);
    }
  } else {
    const started = Date.now();
    const res = client.invoke('hindsight.v1.MemoryService/Recall',
      { banks: [b], query: c.query(), top_k: 10 }, PARAMS);
    recallLatency.add(Date.now() - started);
    const ok = check(res, {
      'recall answered OK': (r) => r && r.status === grpc.StatusOK,
    });
    opErrors.add(!ok);
    if (!ok) {
      recallErrors.add(1);
    }
  }
}

export function teardown() {
  client.close();
}
