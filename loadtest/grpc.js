// gRPC load test of one Hindsight node (proto/hindsight/v1): Write, WriteBatch and Recall in the
// shares of the chosen scenario. lib/common.js lists the settings.
//   k6 run -e SCENARIO=write-heavy -e HINDSIGHT_GRPC=127.0.0.1:7400 loadtest/grpc.js
import grpc from 'k6/net/grpc';
import { check } from 'k6';
import { Rate, Trend } from 'k6/metrics';
import * as c from './lib/common.js';

const writeLatency = new Trend('write_latency', true);
const recallLatency = new Trend('recall_latency', true);
const opErrors = new Rate('op_errors');

export const options = c.options({ write: 'write_latency', recall: 'recall_latency' });

const client = new grpc.Client();
client.load(['../proto'], 'hindsight/v1/memory_service.proto');

const PARAMS = { timeout: '30s', metadata: {} };
if (c.API_KEY) {
  PARAMS.metadata.authorization = `Bearer ${c.API_KEY}`;
}

function connect() {
  client.connect(c.GRPC, { plaintext: !c.GRPC_TLS, timeout: '10s' });
}

function invoke(method, request, latency, what) {
  const started = Date.now();
  const res = client.invoke(`hindsight.v1.MemoryService/${method}`, request, PARAMS);
  latency.add(Date.now() - started);
  const ok = check(res, { [`${what} answered OK`]: (r) => r && r.status === grpc.StatusOK });
  opErrors.add(!ok);
  return res;
}

function writeRequest() {
  return Object.assign({ bank: c.BANK }, c.memory());
}

export function setup() {
  connect();
  c.seedOverGrpc(client, c.SCENARIO === 'recall-heavy' ? c.SEED : 20, writeRequest, PARAMS);
  client.close();
}

export default function () {
  if (__ITER === 0) {
    connect();
  }
  if (Math.random() < c.SHAPE.write) {
    if (Math.random() < c.SHAPE.batch) {
      const items = Array.from({ length: 10 }, writeRequest);
      invoke('WriteBatch', { items }, writeLatency, 'batch write');
    } else {
      invoke('Write', writeRequest(), writeLatency, 'write');
    }
  } else {
    const res = invoke('Recall', { banks: [c.BANK], query: c.query(), top_k: 10 }, recallLatency, 'recall');
    check(res, { 'recall has hits': (r) => r && r.message && Array.isArray(r.message.hits) });
  }
}

export function teardown() {
  client.close();
}
