// Shared by the HTTP and gRPC load tests: settings from environment variables, the scenarios'
// shapes, and generated memories and queries.
//
// Settings (all optional):
//   SCENARIO         write-heavy | recall-heavy | mixed (default mixed)
//   HINDSIGHT_HTTP   base URL of a node's HTTP port (default http://127.0.0.1:7401)
//   HINDSIGHT_GRPC   host:port of a node's gRPC port (default 127.0.0.1:7400)
//   HINDSIGHT_GRPC_TLS  1: TLS to the gRPC port (default plaintext)
//   HINDSIGHT_API_KEY   sent as "authorization: Bearer ..." when set
//   LOAD_BANK        bank the test writes to (default loadtest/<scenario>)
//   LOAD_RATE        operations started per second (default 50)
//   LOAD_DURATION    how long (default 1m)
//   LOAD_VUS         virtual users kept ready for the rate (default 20; more are added up to 4x)
//   LOAD_SEED        memories written before a recall-heavy run (default 500)
//   LOAD_P99_WRITE_MS, LOAD_P99_RECALL_MS  latency thresholds (defaults 1000 and 500)
//   LOAD_MAX_ERRORS  highest share of failed operations (default 0.01)
import grpc from 'k6/net/grpc';

export const SCENARIO = __ENV.SCENARIO || 'mixed';
export const HTTP = (__ENV.HINDSIGHT_HTTP || 'http://127.0.0.1:7401').replace(/\/$/, '');
export const GRPC = __ENV.HINDSIGHT_GRPC || '127.0.0.1:7400';
export const GRPC_TLS = ['1', 'true', 'yes'].includes((__ENV.HINDSIGHT_GRPC_TLS || '').toLowerCase());
export const API_KEY = __ENV.HINDSIGHT_API_KEY || '';
export const BANK = __ENV.LOAD_BANK || `loadtest/${SCENARIO}`;
const RATE = Number(__ENV.LOAD_RATE || 50);
const DURATION = __ENV.LOAD_DURATION || '1m';
const VUS = Number(__ENV.LOAD_VUS || 20);
export const SEED = Number(__ENV.LOAD_SEED || 500);
const P99_WRITE = Number(__ENV.LOAD_P99_WRITE_MS || 1000);
const P99_RECALL = Number(__ENV.LOAD_P99_RECALL_MS || 500);
const MAX_ERRORS = Number(__ENV.LOAD_MAX_ERRORS || 0.01);

// Share of operations that write (the rest recall), and of writes sent as a batch of ten.
const SHAPES = {
  'write-heavy': { write: 0.9, batch: 0.1 },
  'recall-heavy': { write: 0.05, batch: 0 },
  mixed: { write: 0.4, batch: 0.05 },
};
if (!SHAPES[SCENARIO]) {
  throw new Error(`SCENARIO must be one of ${Object.keys(SHAPES).join(', ')}, not ${SCENARIO}`);
}
export const SHAPE = SHAPES[SCENARIO];

// An open model: operations start at LOAD_RATE per second whatever the latency, so a slow node
// shows as latency and dropped iterations instead of a quietly lower rate.
export function options(latencyMetrics) {
  return {
    scenarios: {
      [SCENARIO]: {
        executor: 'constant-arrival-rate',
        rate: RATE,
        timeUnit: '1s',
        duration: DURATION,
        preAllocatedVUs: VUS,
        maxVUs: VUS * 4,
      },
    },
    thresholds: {
      [latencyMetrics.write]: [`p(99)<${P99_WRITE}`],
      [latencyMetrics.recall]: [`p(99)<${P99_RECALL}`],
      op_errors: [`rate<${MAX_ERRORS}`],
      checks: [`rate>${1 - MAX_ERRORS}`],
    },
    summaryTrendStats: ['avg', 'min', 'med', 'p(90)', 'p(95)', 'p(99)', 'max'],
    setupTimeout: '5m',
  };
}

const PEOPLE = ['Alice', 'Bruno', 'Chen Wei', 'Dana', 'Emeka', 'Farah', 'Giulia', 'Hiro', 'Ines', 'Jonas'];
const CITIES = ['Berlin', 'Lagos', 'Osaka', 'Lima', 'Oslo', 'Pune', 'Quito', 'Turin', 'Hanoi', 'Perth'];
const TOPICS = [
  'the quarterly report', 'the deployment pipeline', 'the billing migration', 'the onboarding guide',
  'the search relevance work', 'the mobile release', 'the data retention policy', 'the load tests',
  'the support rota', 'the design review', 'the incident postmortem', 'the pricing page',
];
const HABITS = [
  'prefers short written summaries', 'reviews changes on Mondays', 'wants metric units',
  'drinks oat flat whites', 'asks for sources with every claim', 'works from the office on Thursdays',
  'writes tests before code', 'dislikes meetings after 4 pm', 'reads the changelog first',
];

function pick(list) {
  return list[Math.floor(Math.random() * list.length)];
}

// A memory unlike most others: a person, a place, a topic, a habit and a number.
export function memory(source) {
  const n = Math.floor(Math.random() * 1e6);
  return {
    content: `${pick(PEOPLE)} from ${pick(CITIES)} ${pick(HABITS)} and owns ${pick(TOPICS)} (ticket ${n}).`,
    provenance: { source: source || 'user' },
    tags: ['loadtest'],
  };
}

export function query() {
  const forms = [
    () => `What does ${pick(PEOPLE)} prefer?`,
    () => `Who owns ${pick(TOPICS)}?`,
    () => `Who is based in ${pick(CITIES)}?`,
    () => `${pick(HABITS)}`,
  ];
  return pick(forms)();
}

export function bankPath() {
  return encodeURIComponent(BANK);
}

// Writes `count` memories through a k6 gRPC client in WriteBatch calls of at most 100, made by
// `item`; a refused batch ends the test's setup, since the load would measure an empty bank.
export function seedOverGrpc(client, count, item, params) {
  for (let done = 0; done < count; done += 100) {
    const items = Array.from({ length: Math.min(100, count - done) }, item);
    const res = client.invoke('hindsight.v1.MemoryService/WriteBatch', { items }, params);
    if (!res || res.status !== grpc.StatusOK) {
      throw new Error(`seeding failed: ${res && res.error ? JSON.stringify(res.error) : 'no answer'}`);
    }
  }
}
