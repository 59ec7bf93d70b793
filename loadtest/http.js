// HTTP/JSON load test of one Hindsight node (docs/HTTP-API.md): writes, batch writes and recalls
// in the shares of the chosen scenario. lib/common.js lists the settings.
//   k6 run -e SCENARIO=recall-heavy -e HINDSIGHT_HTTP=http://127.0.0.1:7401 loadtest/http.js
import http from 'k6/http';
import { check } from 'k6';
import { Rate, Trend } from 'k6/metrics';
import * as c from './lib/common.js';

const writeLatency = new Trend('write_latency', true);
const recallLatency = new Trend('recall_latency', true);
const opErrors = new Rate('op_errors');

export const options = c.options({ write: 'write_latency', recall: 'recall_latency' });

const HEADERS = { 'content-type': 'application/json' };
if (c.API_KEY) {
  HEADERS.authorization = `Bearer ${c.API_KEY}`;
}
const PARAMS = { headers: HEADERS, timeout: '30s' };

function post(path, body, name) {
  return http.post(`${c.HTTP}${path}`, JSON.stringify(body), Object.assign({ tags: { name } }, PARAMS));
}

function write() {
  const res = post(`/v1/banks/${c.bankPath()}/memories`, c.memory(), 'write');
  const ok = check(res, { 'write answered 200': (r) => r.status === 200 });
  opErrors.add(!ok);
  writeLatency.add(res.timings.duration);
}

function writeBatch() {
  const items = Array.from({ length: 10 }, () => c.memory());
  const res = post(`/v1/banks/${c.bankPath()}/memories/batch`, { items }, 'write_batch');
  const ok = check(res, { 'batch write answered 200': (r) => r.status === 200 });
  opErrors.add(!ok);
  writeLatency.add(res.timings.duration);
}

function recall() {
  const res = post(`/v1/banks/${c.bankPath()}/recall`, { query: c.query(), top_k: 10 }, 'recall');
  const ok = check(res, {
    'recall answered 200': (r) => r.status === 200,
    'recall has hits': (r) => r.status === 200 && Array.isArray(r.json('hits')),
  });
  opErrors.add(!ok);
  recallLatency.add(res.timings.duration);
}

// The bank holds LOAD_SEED memories before a recall-heavy run, a few before the others.
export function setup() {
  const ready = http.get(`${c.HTTP}/ready`);
  if (ready.status !== 200) {
    throw new Error(`${c.HTTP}/ready answered ${ready.status}`);
  }
  const seed = c.SCENARIO === 'recall-heavy' ? c.SEED : 20;
  for (let done = 0; done < seed; done += 100) {
    const items = Array.from({ length: Math.min(100, seed - done) }, () => c.memory());
    const res = post(`/v1/banks/${c.bankPath()}/memories/batch`, { items }, 'seed');
    if (res.status !== 200) {
      throw new Error(`seeding answered ${res.status}: ${res.body}`);
    }
  }
}

export default function () {
  if (Math.random() < c.SHAPE.write) {
    if (Math.random() < c.SHAPE.batch) {
      writeBatch();
    } else {
      write();
    }
  } else {
    recall();
  }
}
