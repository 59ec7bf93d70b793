// Hindsight web console: one page over the node's JSON API (docs/HTTP-API.md).
//
// Memory contents are untrusted input (the quarantine view exists because some of them are
// attacks), so every text reaches the page through textContent, never through HTML parsing.
'use strict';

(() => {
  const KEY_STORAGE = 'hindsight.console.apiKey';
  // The node refuses top_k above its limit (200 by default); listing asks for exactly that much.
  const LIST_TOP_K = 200;
  // Records the memories view lists before it asks for a narrower filter.
  const LIST_LIMIT = 5000;
  const VIEWS = ['memories', 'recall', 'conflicts', 'quarantine', 'review'];
  const OUTCOMES = [
    ['keep_a', 'Keep A', 'A stays; B is set aside'],
    ['keep_b', 'Keep B', 'B stays; A is set aside'],
    ['keep_both', 'Keep both', 'Both stay as they are'],
    ['discard_both', 'Discard both', 'Neither is kept'],
  ];

  const state = {
    banks: [],
    bank: null,
    view: 'memories',
    trace: null,
    // Per bank, so switching tabs or banks keeps what was on screen.
    recall: new Map(),
    review: new Map(),
    memories: new Map(),
    conflictsIncludeResolved: false,
  };

  const byTestId = (id, root = document) => root.querySelector(`[data-testid="${id}"]`);

  // ---------------------------------------------------------------- DOM helpers

  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v == null || v === false) continue;
      if (k === 'class') el.className = v;
      else if (k === 'testid') el.dataset.testid = v;
      else if (k === 'dataset') Object.assign(el.dataset, v);
      else if (k === 'style') Object.assign(el.style, v);
      else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
      else if (k === 'value') el.value = v;
      else if (k === 'checked') el.checked = !!v;
      else if (v === true) el.setAttribute(k, '');
      else el.setAttribute(k, String(v));
    }
    append(el, children);
    return el;
  }

  function append(el, children) {
    for (const c of [children].flat(Infinity)) {
      if (c == null || c === false) continue;
      el.append(c instanceof Node ? c : String(c));
    }
    return el;
  }

  function clear(el) {
    while (el.firstChild) el.removeChild(el.firstChild);
    return el;
  }

  function num(x, digits = 2) {
    if (x == null || Number.isNaN(Number(x))) return '—';
    return Number(x).toFixed(digits);
  }

  function int(x) {
    return Number(x || 0).toLocaleString('en-US');
  }

  function micros(us) {
    const v = Number(us || 0);
    if (v < 1000) return `${v} µs`;
    if (v < 1e6) return `${(v / 1000).toFixed(1)} ms`;
    return `${(v / 1e6).toFixed(2)} s`;
  }

  function when(ts) {
    if (!ts) return h('span', { class: 'muted' }, '—');
    const short = String(ts).replace('T', ' ').replace(/(\.\d+)?Z$/, '').slice(0, 16);
    return h('time', { datetime: ts, title: ts }, short);
  }

  function shortId(id) {
    return id ? String(id).slice(-8) : '';
  }

  function statusName(s) {
    return (s && s.name) || 'active';
  }

  function badge(name, extraTitle) {
    return h('span', { class: `badge st-${name}`, title: extraTitle || null, testid: 'status-badge' }, name.replace('_', ' '));
  }

  function statusBadge(status) {
    const name = statusName(status);
    let title = null;
    if (status && status.quarantine_reason) title = status.quarantine_reason;
    if (status && status.superseded_by) title = `superseded by ${status.superseded_by}`;
    return badge(name, title);
  }

  function meter(value, label) {
    const v = Math.max(0, Math.min(1, Number(value || 0)));
    const fill = h('span', { class: 'meter-fill' });
    fill.style.width = `${(v * 100).toFixed(1)}%`;
    return h('span', { class: 'meter', title: label ? `${label} ${num(value, 3)}` : num(value, 3) },
      h('span', { class: 'meter-track' }, fill),
      h('span', { class: 'meter-num' }, num(value)));
  }

  function source(p) {
    if (!p) return h('span', { class: 'muted' }, '—');
    const parts = [p.source || 'agent'];
    if (p.tool) parts.push(`tool ${p.tool}`);
    const detail = [];
    if (p.agent_id) detail.push(`agent ${p.agent_id}`);
    if (p.session_id) detail.push(`session ${p.session_id}`);
    if (p.task_id) detail.push(`task ${p.task_id}`);
    if (p.tool_call_id) detail.push(`call ${p.tool_call_id}`);
    return h('span', { class: 'src', title: detail.join(' · ') || null, testid: 'provenance' },
      h('span', { class: `src-${parts[0]}` }, parts[0]),
      p.tool ? h('span', { class: 'muted' }, ` · ${p.tool}`) : null);
  }

  // Stored f32 values come back in their exact spelling (0.71999997); three places say enough.
  function tidy(value) {
    const v = String(value ?? '');
    return /^-?\d+\.\d{4,}$/.test(v) ? String(Number(Number(v).toFixed(3))) : v;
  }

  function kindLabel(m) {
    return m.subtype ? `${m.kind || 'semantic'}/${m.subtype}` : (m.kind || 'semantic');
  }

  function field(label, value) {
    return [h('dt', null, label), h('dd', null, value)];
  }

  function spinner(text) {
    return h('div', { class: 'loading', testid: 'loading' }, text || 'Loading…');
  }

  function empty(text) {
    return h('div', { class: 'empty', testid: 'empty' }, text);
  }

  // ---------------------------------------------------------------- API

  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  function apiKey() {
    return sessionStorage.getItem(KEY_STORAGE) || '';
  }

  async function api(method, path, body) {
    const headers = { Accept: 'application/json' };
    const key = apiKey();
    if (key) headers.Authorization = `Bearer ${key}`;
    const init = { method, headers, cache: 'no-store' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(path, init);
    } catch (e) {
      throw new ApiError(0, 'unavailable', `the node did not answer (${e.message})`);
    }
    const text = await res.text();
    let data = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch (_) {
        data = null;
      }
    }
    if (!res.ok) {
      if (data && typeof data.code === 'string') {
        throw new ApiError(res.status, data.code, data.message || '');
      }
      const detail = text && text.length < 300 ? text : res.statusText;
      throw new ApiError(res.status, `http_${res.status}`, detail || 'no details');
    }
    return data || {};
  }

  const enc = encodeURIComponent;
  const bankPath = (bank) => `/v1/banks/${enc(bank)}`;

  // What to do about each error class, so the message is actionable rather than a status code.
  const HINTS = {
    unauthenticated: 'The node needs an API key: enter one at the top right.',
    permission_denied: 'This API key has no right to do that on this bank.',
    not_found: 'It does not exist (any more).',
    failed_precondition: 'The node refused it in its current state.',
    already_exists: 'It exists already.',
    resource_exhausted: 'Rate limit reached: wait a moment and try again.',
    unavailable: 'The node is not serving right now (starting, or without a leader).',
    internal: 'The node failed; its log has the details.',
    data_loss: 'The node reports data loss; its log has the details.',
    http_404: 'This node has no such route: is it a release with the JSON API?',
  };

  function describe(err) {
    if (err instanceof ApiError) {
      return {
        code: err.code,
        status: err.status,
        message: err.message,
        hint: HINTS[err.code] || '',
      };
    }
    return { code: 'console', status: 0, message: String(err && err.message ? err.message : err), hint: '' };
  }

  function errorBox(err, what) {
    const d = describe(err);
    return h('div', { class: 'inline-error', testid: 'inline-error', role: 'alert', dataset: { code: d.code } },
      h('strong', null, what ? `${what} failed. ` : ''),
      h('code', { testid: 'error-code' }, d.code),
      d.status ? h('span', { class: 'muted' }, ` (HTTP ${d.status})`) : null, ' ',
      h('span', { testid: 'error-message' }, d.message),
      d.hint ? h('div', { class: 'muted' }, d.hint) : null);
  }

  function showError(err, what) {
    const d = describe(err);
    const banner = byTestId('error-banner');
    const text = clear(byTestId('error-text'));
    append(text, [
      what ? h('strong', null, `${what} failed. `) : null,
      h('code', { testid: 'error-code' }, d.code),
      d.status ? h('span', { class: 'muted' }, ` (HTTP ${d.status})`) : null,
      ' ',
      h('span', { testid: 'error-message' }, d.message),
      d.hint ? h('span', { class: 'hint' }, ` — ${d.hint}`) : null,
    ]);
    banner.dataset.code = d.code;
    banner.hidden = false;
  }

  function hideError() {
    byTestId('error-banner').hidden = true;
  }

  // Runs an action bound to a button: disables it meanwhile and reports a failure in the banner.
  async function run(button, what, fn) {
    if (button) button.disabled = true;
    try {
      hideError();
      return await fn();
    } catch (err) {
      showError(err, what);
      return undefined;
    } finally {
      if (button) button.disabled = false;
    }
  }

  // ---------------------------------------------------------------- routing

  function readHash() {
    const params = new URLSearchParams(location.hash.replace(/^#/, ''));
    const view = params.get('view');
    return {
      bank: params.get('bank') || null,
      view: VIEWS.includes(view) ? view : 'memories',
      trace: params.get('trace') || null,
    };
  }

  function writeHash() {
    const params = new URLSearchParams();
    if (state.bank) params.set('bank', state.bank);
    if (state.view) params.set('view', state.view);
    if (state.trace) params.set('trace', state.trace);
    const next = `#${params.toString()}`;
    if (location.hash !== next) history.replaceState(null, '', next);
  }

  function navigate(patch) {
    const bankChanged = 'bank' in patch && patch.bank !== state.bank;
    Object.assign(state, patch);
    writeHash();
    renderBanks();
    renderBankHead();
    renderTabs();
    if (bankChanged || 'view' in patch) renderView();
    if ('trace' in patch) renderTrace();
  }

  // ---------------------------------------------------------------- node status and banks

  async function loadStatus() {
    const el = clear(byTestId('node-status'));
    try {
      const s = await api('GET', '/v1/status');
      append(el, [
        h('span', { class: `dot ${s.ready ? 'ok' : 'warn'}`, title: s.ready ? 'ready' : 'not ready' }),
        h('span', null, `node ${s.node_id ?? '?'}`),
        s.leader_id != null ? h('span', { class: 'muted' }, `leader ${s.leader_id}`) : h('span', { class: 'warn-text' }, 'no leader'),
        s.version ? h('span', { class: 'muted' }, `v${s.version}`) : null,
        s.embedding_model ? h('span', { class: 'muted', title: 'embedding model' }, s.embedding_model) : null,
      ]);
    } catch (err) {
      append(el, [h('span', { class: 'dot bad' }), h('span', { class: 'muted', title: describe(err).message }, describe(err).code)]);
    }
  }

  async function loadBanks() {
    const list = clear(byTestId('bank-list'));
    list.append(h('li', { class: 'muted pad' }, 'Loading…'));
    try {
      const res = await api('GET', '/v1/banks');
      state.banks = (res.banks || []).slice().sort((a, b) => a.bank.name.localeCompare(b.bank.name));
      renderBanks();
      renderBankHead();
    } catch (err) {
      // The banner above has the whole message; the list only says why it is empty.
      const d = describe(err);
      clear(list).append(h('li', { class: 'pad' }, h('div', { class: 'inline-error compact', testid: 'inline-error', dataset: { code: d.code } },
        'No banks: ', h('code', null, d.code))));
      showError(err, 'Listing banks');
    }
  }

  function currentBankInfo() {
    return state.banks.find((b) => b.bank.name === state.bank) || null;
  }

  function renderBanks() {
    const list = clear(byTestId('bank-list'));
    const filter = byTestId('bank-filter').value.trim().toLowerCase();
    const shown = state.banks.filter((b) => !filter || b.bank.name.toLowerCase().includes(filter));
    if (!state.banks.length) {
      list.append(h('li', { class: 'muted pad', testid: 'bank-list-empty' }, 'No banks yet. A bank is created by its first write.'));
      return;
    }
    for (const info of shown) {
      const name = info.bank.name;
      list.append(h('li', null,
        h('button', {
          type: 'button',
          class: name === state.bank ? 'bank-item selected' : 'bank-item',
          testid: 'bank-item',
          dataset: { bank: name },
          title: info.bank.description || name,
          onclick: () => navigate({ bank: name, trace: null }),
        },
        h('span', { class: 'bank-name' }, name),
        h('span', { class: 'bank-count', testid: 'bank-memory-count', title: 'records in the bank, whatever their status' }, int(info.memory_count)))));
    }
  }

  function renderBankHead() {
    const head = clear(byTestId('bank-head'));
    if (!state.bank) {
      head.append(h('div', { class: 'placeholder' },
        h('h1', null, 'Pick a bank'),
        h('p', { class: 'muted' }, 'Banks are listed on the left with their number of records. The API key, if the node needs one, is kept for this browser tab only.')));
      return;
    }
    const info = currentBankInfo();
    const bank = info ? info.bank : { name: state.bank };
    const w = bank.weights || {};
    const s = bank.strategies;
    const settings = h('details', { class: 'settings', testid: 'bank-settings' },
      h('summary', null, 'Settings'),
      h('dl', { class: 'grid-dl' },
        field('min confidence', num(bank.min_confidence)),
        field('dedup threshold', num(bank.dedup_threshold)),
        field('collapse threshold', num(bank.collapse_threshold)),
        field('weights', `relevance ${num(w.relevance)} · confidence ${num(w.confidence)} · freshness ${num(w.freshness)}`),
        field('freshness days', `events ${num(w.freshness_days, 0)} · facts ${w.fact_freshness_days ? num(w.fact_freshness_days, 0) : '365 (default)'}`),
        field('working TTL', bank.working_ttl_seconds ? `${int(bank.working_ttl_seconds)} s` : '—'),
        field('max memories', bank.max_memories ? int(bank.max_memories) : 'no quota'),
        field('strategies', s
          ? `temporal ${s.temporal || '—'} · source ${s.source || '—'} · inference ${s.inference || '—'} · undecidable ${s.undecidable || '—'} · duplicate ${s.duplicate || '—'}`
          : "the node's"),
        field('created', when(bank.created_at))));
    head.append(
      h('div', { class: 'bank-title' },
        h('h1', { testid: 'bank-title' }, bank.name),
        info ? h('span', { class: 'muted' }, `${int(info.memory_count)} records`) : null,
        bank.description ? h('span', { class: 'muted desc' }, bank.description) : null),
      settings);
  }

  function renderTabs() {
    const tabs = byTestId('tabs');
    tabs.hidden = !state.bank;
    for (const b of tabs.querySelectorAll('button[data-view]')) {
      b.classList.toggle('active', b.dataset.view === state.view);
      b.setAttribute('aria-selected', b.dataset.view === state.view ? 'true' : 'false');
    }
  }

  async function refreshConflictCount() {
    const el = byTestId('conflict-count');
    if (!state.bank) {
      el.textContent = '';
      return;
    }
    try {
      const res = await api('GET', `${bankPath(state.bank)}/conflicts?include_resolved=false`);
      const n = (res.conflicts || []).length;
      el.textContent = n ? String(n) : '';
    } catch (_) {
      el.textContent = '';
    }
  }

  // ---------------------------------------------------------------- views

  function renderView() {
    const view = clear(byTestId('view'));
    view.dataset.view = state.bank ? state.view : '';
    if (!state.bank) return;
    refreshConflictCount();
    const renderers = {
      memories: renderMemories,
      recall: renderRecall,
      conflicts: renderConflicts,
      quarantine: renderQuarantine,
      review: renderReview,
    };
    renderers[state.view](view, state.bank);
  }

  // The listing pages through ListMemories, which has no side effects (no access counted, nothing
  // in the retrieval log); a topic ranks it through recall instead.
  async function listBank(bank, { includeHistory, query }) {
    if (query) {
      return api('POST', `${bankPath(bank)}/recall`, {
        query,
        top_k: LIST_TOP_K,
        include_history: includeHistory,
        filters: { min_confidence: 0 },
      });
    }
    const hidden = new Set(['superseded', 'falsified', 'expired', 'archived', 'quarantined']);
    const hits = [];
    let after = null;
    do {
      const page = await api('GET', `${bankPath(bank)}/memories?limit=1000${after ? `&after=${encodeURIComponent(after)}` : ''}`);
      for (const m of page.memories || []) {
        if (includeHistory || !hidden.has(statusName(m.status))) hits.push({ memory: m, status: m.status });
      }
      after = page.next || null;
    } while (after && hits.length < LIST_LIMIT);
    return { hits };
  }

  // -- Memories

  function renderMemories(view, bank) {
    const saved = state.memories.get(bank) || { includeHistory: true, status: '', kind: '', text: '', sort: 'recorded' };
    const includeHistory = h('input', { type: 'checkbox', checked: saved.includeHistory, testid: 'memories-include-history' });
    const statusSel = h('select', { testid: 'memories-status' },
      h('option', { value: '' }, 'any status'),
      ['active', 'disputed', 'pending_review', 'superseded', 'falsified', 'quarantined', 'archived', 'expired']
        .map((s) => h('option', { value: s }, s.replace('_', ' '))));
    statusSel.value = saved.status;
    const kindSel = h('select', { testid: 'memories-kind' },
      h('option', { value: '' }, 'any kind'),
      ['semantic', 'episodic', 'working'].map((k) => h('option', { value: k }, k)));
    kindSel.value = saved.kind;
    const text = h('input', { type: 'search', placeholder: 'Filter shown rows', value: saved.text, testid: 'memories-filter' });
    const sortSel = h('select', { testid: 'memories-sort' },
      h('option', { value: 'recorded' }, 'newest recorded'),
      h('option', { value: 'occurred' }, 'newest event'),
      h('option', { value: 'confidence' }, 'confidence'),
      h('option', { value: 'status' }, 'status'));
    sortSel.value = saved.sort;
    const reload = h('button', { type: 'button', testid: 'memories-reload' }, 'Reload');
    const out = h('div', { testid: 'memories-out' });
    let hits = [];

    const remember = () => state.memories.set(bank, {
      includeHistory: includeHistory.checked, status: statusSel.value, kind: kindSel.value,
      text: text.value, sort: sortSel.value,
    });

    const draw = () => {
      remember();
      clear(out);
      const needle = text.value.trim().toLowerCase();
      let rows = hits.filter((hit) => {
        const m = hit.memory || {};
        if (statusSel.value && statusName(hit.status || m.status) !== statusSel.value) return false;
        if (kindSel.value && (m.kind || 'semantic') !== kindSel.value) return false;
        if (needle) {
          const hay = [m.content, m.id, ...(m.tags || []), ...(m.entities || []), m.provenance && m.provenance.tool]
            .filter(Boolean).join(' ').toLowerCase();
          if (!hay.includes(needle)) return false;
        }
        return true;
      });
      const key = {
        recorded: (x) => x.memory.recorded_at || '',
        occurred: (x) => x.memory.occurred_at || '',
        confidence: (x) => Number(x.memory.confidence || 0),
        status: (x) => statusName(x.status || x.memory.status),
      }[sortSel.value];
      rows = rows.slice().sort((a, b) => {
        const ka = key(a);
        const kb = key(b);
        if (sortSel.value === 'status') return String(ka).localeCompare(String(kb));
        return ka < kb ? 1 : ka > kb ? -1 : 0;
      });
      const counts = {};
      for (const hit of hits) {
        const s = statusName(hit.status || hit.memory.status);
        counts[s] = (counts[s] || 0) + 1;
      }
      out.append(h('div', { class: 'summary', testid: 'memories-summary' },
        h('span', null, `${rows.length} shown of ${hits.length} listed`),
        Object.entries(counts).sort().map(([s, n]) => h('span', { class: 'chip' }, badge(s), ` ${n}`)),
        hits.length >= (query.value.trim() ? LIST_TOP_K : LIST_LIMIT) ? h('span', { class: 'warn-text' }, 'the listing stops here; narrow it with a topic') : null));
      if (!rows.length) {
        out.append(empty(hits.length ? 'No memory matches these filters.' : 'This bank holds no memory with these statuses.'));
        return;
      }
      out.append(memoryTable(rows));
    };

    const query = h('input', { type: 'search', class: 'wide', placeholder: 'Topic (optional)', title: `Ranks the listing by this topic (up to ${LIST_TOP_K}); empty lists the bank in order`, testid: 'memories-query' });
    const load = async () => {
      clear(out).append(spinner());
      try {
        const res = await listBank(bank, { includeHistory: includeHistory.checked, query: query.value.trim() });
        hits = res.hits || [];
        draw();
      } catch (err) {
        clear(out).append(errorBox(err, 'Listing memories'));
      }
    };

    includeHistory.addEventListener('change', load);
    reload.addEventListener('click', load);
    query.addEventListener('keydown', (e) => { if (e.key === 'Enter') load(); });
    for (const el of [statusSel, kindSel, sortSel]) el.addEventListener('change', draw);
    text.addEventListener('input', draw);

    view.append(
      h('div', { class: 'toolbar' },
        query,
        h('label', { class: 'check', title: 'Superseded, falsified, expired, archived and quarantined records too' }, includeHistory, 'all statuses'),
        statusSel, kindSel, sortSel, text, reload),
      h('p', { class: 'note muted' },
        'The API has no listing call, so this is a broad recall with no confidence floor. Each listing counts as an access of the memories it returns and is kept in the retrieval log.'),
      out);
    load();
  }

  function memoryTable(hits) {
    const body = h('tbody');
    for (const hit of hits) {
      const m = hit.memory || {};
      const status = hit.status || m.status;
      body.append(h('tr', {
        class: 'clickable',
        testid: 'memory-row',
        dataset: { id: m.id, status: statusName(status) },
        onclick: () => openTrace(m.id),
        title: 'Open the trace',
      },
      h('td', { class: 'content-cell' },
        h('div', { class: 'content-text', testid: 'memory-content' }, m.content),
        h('div', { class: 'meta muted' },
          h('code', { title: m.id }, shortId(m.id)),
          (m.tags || []).map((t) => h('span', { class: 'tag' }, t)),
          m.slot ? h('span', { class: 'slot', title: 'slot' }, `${m.slot.subject}.${m.slot.attribute} = ${m.slot.value}`) : null,
          status && status.quarantine_reason ? h('span', { class: 'reason' }, status.quarantine_reason) : null)),
      h('td', { class: 'opt' }, kindLabel(m), m.critical ? h('span', { class: 'critical', title: 'critical: exempt from decay' }, ' ★') : null),
      h('td', null, statusBadge(status)),
      h('td', null, meter(m.confidence, 'confidence')),
      h('td', null, source(m.provenance)),
      h('td', null, when(m.occurred_at)),
      h('td', { class: 'num opt' }, int(m.support && m.support.count ? m.support.count : 1))));
    }
    return h('table', { class: 'table memories', testid: 'memories-table' },
      h('thead', null, h('tr', null,
        h('th', null, 'Content'), h('th', { class: 'w-kind opt' }, 'Kind'), h('th', { class: 'w-status' }, 'Status'),
        h('th', { class: 'w-conf' }, 'Confidence'), h('th', { class: 'w-src' }, 'Source'), h('th', { class: 'w-time' }, 'Occurred'),
        h('th', { class: 'num w-support opt', title: 'writes that stated it' }, 'Support'))),
      body);
  }

  // -- Recall playground

  function renderRecall(view, bank) {
    const saved = state.recall.get(bank) || {};
    const form = saved.form || {};
    const query = h('input', { type: 'search', class: 'grow', placeholder: 'What to recall, e.g. "what coffee does the user drink"', value: form.query || '', testid: 'recall-query', required: true });
    const topK = h('input', { type: 'number', min: 1, max: LIST_TOP_K, value: form.top_k || 10, testid: 'recall-topk', class: 'narrow' });
    const intent = h('select', { testid: 'recall-intent' },
      ['any', 'facts', 'how_to', 'past_cases', 'preferences'].map((i) => h('option', { value: i }, i.replace('_', ' '))));
    intent.value = form.intent || 'any';
    const includeHistory = h('input', { type: 'checkbox', checked: !!form.include_history, testid: 'recall-include-history' });
    const includeArchived = h('input', { type: 'checkbox', checked: !!form.include_archived, testid: 'recall-include-archived' });
    const minConf = h('input', { type: 'number', min: 0, max: 1, step: 0.05, placeholder: 'default', title: 'Leave empty for the bank\u2019s own minimum', value: form.min_confidence ?? '', testid: 'recall-min-confidence', class: 'medium' });
    const kinds = h('select', { testid: 'recall-kind' },
      h('option', { value: '' }, 'all kinds'),
      ['semantic', 'episodic', 'working'].map((k) => h('option', { value: k }, k)));
    kinds.value = form.kind || '';
    const tags = h('input', { type: 'text', placeholder: 'tags, comma separated', value: form.tags || '', testid: 'recall-tags' });
    const asOf = h('input', { type: 'text', placeholder: 'as of (RFC 3339)', value: form.as_of || '', testid: 'recall-as-of' });
    const role = h('input', { type: 'text', placeholder: 'agent role', value: form.agent_role || '', testid: 'recall-agent-role' });
    const maxTokens = h('input', { type: 'number', min: 1, placeholder: 'no limit', title: 'Stop once the results\u2019 contents reach this many tokens', value: form.max_tokens || '', testid: 'recall-max-tokens', class: 'medium' });
    const submit = h('button', { type: 'submit', class: 'primary', testid: 'recall-submit' }, 'Recall');
    const out = h('div', { class: 'results', testid: 'recall-results' });

    const collect = () => ({
      query: query.value,
      top_k: topK.value,
      intent: intent.value,
      include_history: includeHistory.checked,
      include_archived: includeArchived.checked,
      min_confidence: minConf.value,
      kind: kinds.value,
      tags: tags.value,
      as_of: asOf.value,
      agent_role: role.value,
      max_tokens: maxTokens.value,
    });

    const request = (f) => {
      const body = { query: f.query.trim(), top_k: Number(f.top_k) || 10 };
      if (f.intent && f.intent !== 'any') body.intent = f.intent;
      if (f.include_history) body.include_history = true;
      if (f.include_archived) body.include_archived = true;
      const filters = {};
      if (f.min_confidence !== '' && f.min_confidence != null) filters.min_confidence = Number(f.min_confidence);
      if (f.kind) filters.kinds = [f.kind];
      const tagList = f.tags.split(',').map((t) => t.trim()).filter(Boolean);
      if (tagList.length) filters.tags = tagList;
      if (Object.keys(filters).length) body.filters = filters;
      if (f.as_of.trim()) body.as_of = f.as_of.trim();
      if (f.agent_role.trim()) body.agent_role = f.agent_role.trim();
      if (f.max_tokens) body.max_tokens = Number(f.max_tokens);
      return body;
    };

    const formEl = h('form', { class: 'recall-form', testid: 'recall-form' },
      h('div', { class: 'row' }, query, submit),
      h('div', { class: 'row options' },
        h('label', null, 'top k ', topK),
        h('label', null, 'intent ', intent),
        h('label', null, 'min confidence ', minConf),
        h('label', null, 'max tokens ', maxTokens),
        kinds, tags, asOf, role,
        h('label', { class: 'check', title: 'Also superseded, falsified, expired, archived and quarantined memories' }, includeHistory, 'include history'),
        h('label', { class: 'check', title: 'Archived memories whatever their confidence; each one returned is restored' }, includeArchived, 'include archived (restores them)')));

    formEl.addEventListener('submit', (e) => {
      e.preventDefault();
      const f = collect();
      if (!f.query.trim()) {
        query.focus();
        return;
      }
      run(submit, 'Recall', async () => {
        clear(out).append(spinner('Recalling…'));
        try {
          const res = await api('POST', `${bankPath(bank)}/recall`, request(f));
          state.recall.set(bank, { form: f, response: res });
          drawRecall(out, res);
        } catch (err) {
          state.recall.set(bank, { form: f, response: null });
          clear(out).append(errorBox(err, 'Recall'));
        }
      });
    });

    view.append(formEl, out);
    if (saved.response) drawRecall(out, saved.response);
    else out.append(empty('Results appear here with how each score was made.'));
    query.focus();
  }

  function drawRecall(out, res) {
    clear(out);
    const hits = res.hits || [];
    out.append(h('div', { class: 'summary', testid: 'recall-summary' },
      h('span', { testid: 'recall-hit-count' }, `${hits.length} result${hits.length === 1 ? '' : 's'}`),
      h('span', { class: 'muted' }, `took ${micros(res.took_micros)}`),
      h('span', { class: 'muted' }, `${int(res.tokens_used)} tokens`),
      res.time_window ? h('span', { class: 'chip', title: 'time expression found in the query' }, 'window ', when(res.time_window.from), ' → ', when(res.time_window.to)) : null,
      res.recall_id ? h('span', { class: 'muted', title: 'retrieval log entry, for feedback' }, 'recall ', h('code', { testid: 'recall-id' }, res.recall_id)) : null));
    if (!hits.length) {
      out.append(empty('Nothing recalled. Try include history, a lower min confidence or another wording.'));
      return;
    }
    hits.forEach((hit, i) => out.append(hitCard(hit, i + 1, res.recall_id)));
  }

  function hitCard(hit, rank, recallId) {
    const m = hit.memory || {};
    const ex = hit.explain || {};
    const status = hit.status || m.status;
    const arms = (ex.arms || []).map((a) => h('span', { class: `arm arm-${a.arm}`, testid: 'explain-arm', title: `${a.arm}: rank ${a.rank}, score ${num(a.score, 4)}` },
      h('b', null, a.arm), ` #${a.rank} `, h('span', { class: 'muted' }, num(a.score, 3))));
    const feedbackOut = h('span', { class: 'muted', testid: 'feedback-result' });
    const feedback = recallId ? h('span', { class: 'feedback' },
      h('span', { class: 'muted' }, 'feedback '),
      ['used', 'helpful', 'wrong', 'harmful'].map((o) => h('button', {
        type: 'button',
        class: `small ghost fb-${o}`,
        testid: `feedback-${o}`,
        title: { used: 'It was used', helpful: 'It helped: +0.1 confidence', wrong: 'It was wrong: -0.2 and back to review', harmful: 'It was harmful: -0.3 and quarantined' }[o],
        onclick: (e) => {
          e.stopPropagation();
          run(e.currentTarget, 'Feedback', async () => {
            const r = await api('POST', '/v1/feedback', { recall_id: recallId, memory_id: m.id, outcome: o });
            feedbackOut.textContent = r.applied === false
              ? `${o}: given before, nothing changed`
              : `${o}: confidence ${num(r.confidence_before)} → ${num(r.confidence_after)}`;
          });
        },
      }, o)),
      feedbackOut) : null;

    return h('article', { class: 'hit', testid: 'recall-hit', dataset: { id: m.id, rank: String(rank) } },
      h('div', { class: 'hit-head' },
        h('span', { class: 'rank' }, `#${rank}`),
        h('span', { class: 'score', testid: 'hit-score', title: 'final score' }, num(hit.score ?? ex.score, 3)),
        statusBadge(status),
        // A flag that only repeats the status badge adds nothing.
        (ex.flags || []).filter((f) => f !== statusName(status)).map((f) => h('span', { class: 'flag', testid: 'explain-flag' }, f)),
        h('span', { class: 'spacer' }),
        h('span', { class: 'muted' }, kindLabel(m)),
        source(m.provenance),
        when(m.occurred_at),
        h('button', { type: 'button', class: 'small', testid: 'open-trace', onclick: () => openTrace(m.id) }, 'Trace')),
      h('div', { class: 'hit-content', testid: 'hit-content' }, m.content),
      h('div', { class: 'explain', testid: 'hit-explain' },
        h('div', { class: 'arms' }, arms.length ? arms : h('span', { class: 'muted' }, 'no arm')),
        h('div', { class: 'parts' },
          h('span', { class: 'part', testid: 'explain-relevance' }, 'relevance ', meter(ex.relevance, 'relevance')),
          h('span', { class: 'part', testid: 'explain-confidence' }, 'confidence ', meter(ex.confidence, 'confidence')),
          h('span', { class: 'part', testid: 'explain-freshness' }, 'freshness ', meter(ex.freshness, 'freshness'))),
        (ex.adjustments || []).length
          ? h('ul', { class: 'adjustments', testid: 'explain-adjustments' }, ex.adjustments.map((a) => h('li', null, a)))
          : null,
        (ex.collapsed || []).length
          ? h('div', { class: 'muted small-text' }, `folded in ${ex.collapsed.length} near-identical: `,
            ex.collapsed.map((id) => h('a', { href: '#', onclick: (e) => { e.preventDefault(); openTrace(id); } }, h('code', null, shortId(id)), ' ')))
          : null),
      feedback ? h('div', { class: 'hit-foot' }, feedback) : null);
  }

  // -- Conflicts

  function renderConflicts(view, bank) {
    const includeResolved = h('input', { type: 'checkbox', checked: state.conflictsIncludeResolved, testid: 'conflicts-include-resolved' });
    const reload = h('button', { type: 'button', testid: 'conflicts-reload' }, 'Reload');
    const out = h('div', { testid: 'conflict-list', class: 'conflicts' });
    // A resolved card leaves the open queue on reload, so what became of it is said above the list.
    const flash = h('div', { class: 'flash', testid: 'conflict-flash', hidden: true });
    const resolved = (text) => {
      flash.textContent = text;
      flash.hidden = false;
    };

    const load = async () => {
      state.conflictsIncludeResolved = includeResolved.checked;
      clear(out).append(spinner());
      let res;
      try {
        res = await api('GET', `${bankPath(bank)}/conflicts?include_resolved=${includeResolved.checked}`);
      } catch (err) {
        clear(out).append(errorBox(err, 'Conflict queue'));
        return;
      }
      // Proto3 JSON may leave out a zero id, and the first conflict of a node is #0.
      const conflicts = (res.conflicts || []).map((c) => ({ ...c, id: c.id ?? 0 }))
        .sort((a, b) => Number(b.id) - Number(a.id));
      const open = conflicts.filter((c) => !c.outcome).length;
      byTestId('conflict-count').textContent = open ? String(open) : '';
      const ids = [...new Set(conflicts.flatMap((c) => [c.a, c.b]))];
      const memories = new Map();
      await Promise.all(ids.map(async (id) => {
        try {
          memories.set(id, (await api('GET', `/v1/memories/${enc(id)}`)).memory);
        } catch (err) {
          memories.set(id, { error: err });
        }
      }));
      clear(out);
      out.append(h('div', { class: 'summary', testid: 'conflicts-summary' },
        h('span', { testid: 'conflicts-open-count', dataset: { open: String(open) } }, `${open} open`),
        includeResolved.checked ? h('span', { class: 'muted' }, `${conflicts.length - open} resolved`) : null));
      if (!conflicts.length) {
        out.append(empty('No conflict waiting. The review queues a contradiction here when the bank\'s strategies leave it to a person.'));
        return;
      }
      for (const c of conflicts) out.append(conflictCard(c, memories, bank, load, resolved));
    };

    includeResolved.addEventListener('change', load);
    reload.addEventListener('click', load);
    view.append(
      h('div', { class: 'toolbar' },
        h('label', { class: 'check' }, includeResolved, 'include resolved'),
        reload),
      flash,
      out);
    load();
  }

  function conflictSide(label, id, memory) {
    if (!memory || memory.error) {
      return h('div', { class: 'side', testid: `conflict-side-${label.toLowerCase()}` },
        h('div', { class: 'side-label' }, label, ' ', h('code', null, shortId(id))),
        memory && memory.error ? errorBox(memory.error) : empty('Not found'));
    }
    return h('div', {
      class: 'side clickable',
      testid: `conflict-side-${label.toLowerCase()}`,
      dataset: { id },
      title: 'Open the trace',
      onclick: () => openTrace(id),
    },
    h('div', { class: 'side-label' }, label, ' ', h('code', null, shortId(id)), ' ', statusBadge(memory.status)),
    h('div', { class: 'content-text' }, memory.content),
    h('div', { class: 'meta muted' },
      source(memory.provenance), ' · ', kindLabel(memory), ' · conf ', num(memory.confidence), ' · ', when(memory.occurred_at)));
  }

  function conflictCard(c, memories, bank, reload, resolved) {
    const note = h('input', { type: 'text', placeholder: 'Note (kept with the resolution)', testid: 'resolve-note', class: 'grow' });
    const actions = c.outcome
      ? h('div', { class: 'resolved', testid: 'conflict-outcome' },
        'Resolved ', h('b', null, c.outcome.replace('_', ' ')), ' ', when(c.resolved_at),
        c.note ? h('span', { class: 'muted' }, ` — ${c.note}`) : null)
      : h('div', { class: 'actions' },
        note,
        OUTCOMES.map(([outcome, label, title]) => h('button', {
          type: 'button',
          class: outcome === 'discard_both' ? 'danger' : '',
          testid: `resolve-${outcome}`,
          title,
          onclick: (e) => run(e.currentTarget, 'Resolving the conflict', async () => {
            const res = await api('POST', `${bankPath(bank)}/conflicts/${enc(c.id)}/resolve`, { outcome, note: note.value.trim() });
            const changed = res.changed || [];
            resolved(`Conflict #${c.id} resolved: ${outcome.replace('_', ' ')}; ${changed.length} memor${changed.length === 1 ? 'y' : 'ies'} changed.`);
            await reload();
            loadBanks();
          }),
        }, label)));
    return h('article', { class: `conflict${c.outcome ? ' is-resolved' : ''}`, testid: 'conflict-item', dataset: { conflictId: String(c.id), outcome: c.outcome || '' } },
      h('div', { class: 'conflict-head' },
        h('b', null, `#${c.id}`),
        h('span', { class: 'muted' }, 'opened ', when(c.opened_at)),
        h('span', { class: 'muted' }, `judge ${c.judge || '—'}`)),
      h('div', { class: 'explanation', testid: 'conflict-explanation' }, c.explanation),
      h('div', { class: 'sides' }, conflictSide('A', c.a, memories.get(c.a)), conflictSide('B', c.b, memories.get(c.b))),
      actions);
  }

  // -- Quarantine

  function renderQuarantine(view, bank) {
    const reload = h('button', { type: 'button', testid: 'quarantine-reload' }, 'Reload');
    const out = h('div', { testid: 'quarantine-list' });
    const load = async () => {
      clear(out).append(spinner());
      let res;
      try {
        res = await listBank(bank, { includeHistory: true });
      } catch (err) {
        clear(out).append(errorBox(err, 'Quarantine'));
        return;
      }
      const held = (res.hits || []).filter((hit) => statusName(hit.status || hit.memory.status) === 'quarantined');
      clear(out);
      out.append(h('div', { class: 'summary' }, h('span', { testid: 'quarantine-count' }, `${held.length} held`)));
      if (!held.length) {
        out.append(empty('Nothing quarantined. The guard holds back writes that carry injected instructions, exfiltration or attempts to weaken a rule.'));
        return;
      }
      for (const hit of held) out.append(quarantineCard(hit, load));
    };
    reload.addEventListener('click', load);
    view.append(
      h('div', { class: 'toolbar' }, reload,
        h('span', { class: 'muted' }, 'Held by the guard and never recalled by default. The text below is shown as plain text only.')),
      out);
    load();
  }

  function quarantineCard(hit, reload) {
    const m = hit.memory || {};
    const status = hit.status || m.status || {};
    return h('article', { class: 'quarantined', testid: 'quarantine-item', dataset: { id: m.id } },
      h('div', { class: 'q-reason', testid: 'quarantine-reason' }, status.quarantine_reason || 'no reason recorded'),
      h('pre', { class: 'q-content' }, m.content),
      h('div', { class: 'meta muted' },
        source(m.provenance), ' · ', kindLabel(m), ' · recorded ', when(m.recorded_at), ' · ', h('code', { title: m.id }, shortId(m.id))),
      h('div', { class: 'actions' },
        h('button', { type: 'button', class: 'small', testid: 'open-trace', onclick: () => openTrace(m.id) }, 'Trace'),
        forgetButtons(m.id, reload)));
  }

  function forgetButtons(id, after) {
    return [
      h('button', {
        type: 'button',
        class: 'small',
        testid: 'forget-archive',
        title: 'Archive: out of recall, restorable',
        onclick: (e) => run(e.currentTarget, 'Archiving', async () => {
          await api('POST', `/v1/memories/${enc(id)}/forget`, { reason: 'archived from the console' });
          await after();
        }),
      }, 'Archive'),
      h('button', {
        type: 'button',
        class: 'small danger',
        testid: 'forget-delete',
        title: 'Delete for good, with everything derived from it',
        onclick: (e) => {
          if (!window.confirm('Delete this memory and everything derived from it for good?')) return;
          run(e.currentTarget, 'Deleting', async () => {
            await api('POST', `/v1/memories/${enc(id)}/forget`, { hard: true, reason: 'deleted from the console' });
            await after();
          });
        },
      }, 'Delete'),
    ];
  }

  // -- Review

  function renderReview(view, bank) {
    const asOf = h('input', { type: 'text', class: 'wide', placeholder: 'as of (RFC 3339; empty: now)', testid: 'review-as-of' });
    const button = h('button', { type: 'button', class: 'primary', testid: 'review-run' }, 'Run review now');
    const out = h('div', { testid: 'review-result-area' });
    button.addEventListener('click', () => run(button, 'Review', async () => {
      clear(out).append(spinner('Reviewing…'));
      const body = {};
      if (asOf.value.trim()) body.as_of = asOf.value.trim();
      try {
        const res = await api('POST', `${bankPath(bank)}/review`, body);
        state.review.set(bank, res);
        drawReview(out, res);
        refreshConflictCount();
        loadBanks();
      } catch (err) {
        clear(out).append(errorBox(err, 'Review'));
      }
    }));
    view.append(
      h('div', { class: 'toolbar' }, button, asOf,
        h('span', { class: 'muted' }, 'Runs one review of this bank now: expiry, pairs of changed memories judged, decisions applied, decay.')),
      out);
    const last = state.review.get(bank);
    if (last) drawReview(out, last);
    else out.append(empty('No review run from this page yet.'));
  }

  function idList(ids, label) {
    if (!ids || !ids.length) return h('span', { class: 'muted' }, 'none');
    return h('span', { class: 'ids' }, ids.map((id) => h('a', {
      href: '#',
      title: `${label} ${id}`,
      onclick: (e) => { e.preventDefault(); openTrace(String(id)); },
    }, h('code', null, shortId(id)))));
  }

  function drawReview(out, res) {
    clear(out);
    const c = res.cycle || {};
    const budget = Number(c.token_budget || 0);
    const used = Number(c.tokens_used || 0);
    let tokenMeter = null;
    if (budget) {
      const fill = h('span', { class: 'meter-fill' });
      fill.style.width = `${Math.min(100, (used / budget) * 100).toFixed(1)}%`;
      tokenMeter = h('span', { class: 'meter wide', title: `${used} of ${budget} tokens` }, h('span', { class: 'meter-track' }, fill));
    }
    const decisions = Object.entries(c.decisions || {}).filter(([, n]) => Number(n) > 0).sort();
    out.append(h('div', { class: 'review', testid: 'review-result' },
      h('div', { class: 'stats' },
        stat('cycle', c.cycle != null ? `#${c.cycle}` : '—', 'review-cycle'),
        stat('judge', c.judge || '—', 'review-judge'),
        stat('tokens used / budget', h('span', null, `${int(used)} / ${budget ? int(budget) : 'no budget'}`, tokenMeter), 'review-tokens'),
        stat('pairs considered', `${int(c.pairs_considered)} of ${int(c.all_pairs)} possible`, 'review-pairs-considered'),
        stat('pairs judged', `${int(c.pairs_judged)}${c.pairs_deferred ? ` (${int(c.pairs_deferred)} deferred)` : ''}`, 'review-pairs-judged'),
        stat('changed since last cycle', int(c.changed), 'review-changed'),
        stat('memories looked at', int(res.considered), 'review-considered'),
        stat('took', micros(res.took_micros ?? c.took_micros), 'review-took'),
        stat('as of', when(res.as_of || c.as_of), 'review-as-of-out'),
        res.backlog ? stat('backlog', int(res.backlog), 'review-backlog') : null),
      h('h3', null, 'Decisions'),
      decisions.length
        ? h('table', { class: 'table compact', testid: 'review-decisions' },
          h('tbody', null, decisions.map(([k, n]) => h('tr', { testid: 'review-decision', dataset: { kind: k } }, h('td', null, k.replace('_', ' ')), h('td', { class: 'num' }, int(n))))))
        : h('p', { class: 'muted', testid: 'review-no-decisions' }, 'No decision this cycle.'),
      h('dl', { class: 'grid-dl' },
        field('conflicts opened', res.conflicts_opened && res.conflicts_opened.length
          ? h('a', { href: '#', testid: 'review-open-conflicts', onclick: (e) => { e.preventDefault(); navigate({ view: 'conflicts' }); } }, `${res.conflicts_opened.length} → conflict queue`)
          : h('span', { class: 'muted' }, 'none')),
        field('updated', idList(res.updated, 'updated')),
        field('expired', idList(res.expired, 'expired')),
        field('rules created', idList(res.created, 'created')),
        field('purged', res.purged && res.purged.length ? h('span', null, `${res.purged.length} deleted for good`) : h('span', { class: 'muted' }, 'none')))));
  }

  function stat(label, value, testid) {
    return h('div', { class: 'stat', testid }, h('div', { class: 'stat-label' }, label), h('div', { class: 'stat-value' }, value));
  }

  // ---------------------------------------------------------------- trace panel

  function openTrace(id) {
    navigate({ trace: id });
  }

  async function renderTrace() {
    const panel = byTestId('trace-panel');
    const id = state.trace;
    panel.hidden = !id;
    document.body.classList.toggle('with-trace', !!id);
    if (!id) {
      clear(panel);
      return;
    }
    clear(panel).append(traceHead(id), spinner());
    let res;
    try {
      res = await api('GET', `/v1/memories/${enc(id)}/trace`);
    } catch (err) {
      if (state.trace !== id) return;
      clear(panel).append(traceHead(id), errorBox(err, 'Trace'));
      return;
    }
    if (state.trace !== id) return;
    clear(panel).append(traceHead(id), traceBody(res));
  }

  function traceHead(id) {
    return h('div', { class: 'trace-head' },
      h('h2', null, 'Trace'),
      h('code', { class: 'muted', testid: 'trace-id' }, id),
      h('button', { type: 'button', class: 'ghost small', testid: 'trace-close', onclick: () => navigate({ trace: null }) }, 'Close'));
  }

  function traceBody(res) {
    const m = res.memory || {};
    const integrity = res.integrity || 'unknown';
    const intClass = integrity.startsWith('FAILED') ? 'bad' : integrity.startsWith('verified') ? 'ok' : 'warn';
    const support = m.support || {};
    const access = m.access || {};
    const metadata = Object.entries(m.metadata || {});
    const history = res.history || [];
    const related = res.related || [];
    return h('div', { class: 'trace-body', testid: 'trace-body', dataset: { id: m.id } },
      h('div', { class: 'trace-content', testid: 'trace-content' }, m.content),
      h('div', { class: 'trace-badges' },
        statusBadge(m.status), h('span', { class: 'muted' }, kindLabel(m)), source(m.provenance),
        m.critical ? h('span', { class: 'critical' }, '★ critical') : null,
        h('span', { class: `integrity ${intClass}`, testid: 'trace-integrity', title: 'signature check' }, integrity)),
      h('dl', { class: 'grid-dl' },
        field('bank', m.bank),
        field('confidence', meter(m.confidence, 'confidence')),
        field('importance', meter(m.importance, 'importance')),
        m.slot ? field('slot', `${m.slot.subject}.${m.slot.attribute} = ${m.slot.value}`) : null,
        field('occurred', when(m.occurred_at)),
        field('recorded', when(m.recorded_at)),
        field('valid', h('span', null, when(m.valid_from), ' → ', m.valid_to ? when(m.valid_to) : 'now')),
        m.expires_at ? field('expires', when(m.expires_at)) : null,
        m.status && m.status.superseded_by ? field('superseded by', h('a', { href: '#', onclick: (e) => { e.preventDefault(); openTrace(m.status.superseded_by); } }, h('code', null, m.status.superseded_by))) : null,
        m.status && m.status.quarantine_reason ? field('quarantined', m.status.quarantine_reason) : null,
        field('support', `${int(support.count || 1)} write${Number(support.count || 1) === 1 ? '' : 's'}${(support.merged || []).length ? `, ${support.merged.length} merged` : ''}${(support.derived_from || []).length ? `, derived from ${support.derived_from.length}` : ''}`),
        field('accessed', h('span', null, `${int(access.count)}×`, access.last_accessed_at ? h('span', null, ', last ', when(access.last_accessed_at)) : null)),
        (m.entities || []).length ? field('entities', m.entities.join(', ')) : null,
        (m.tags || []).length ? field('tags', h('span', null, m.tags.map((t) => h('span', { class: 'tag' }, t)))) : null,
        metadata.length ? field('metadata', h('span', null, metadata.map(([k, v]) => h('span', { class: 'tag' }, `${k}=${v}`)))) : null,
        field('version', `${int(m.version)} · log ${int(m.updated_index)} · ${m.updated_at || ''}`)),
      h('h3', null, `History (${history.length})`),
      history.length
        ? h('ol', { class: 'history', testid: 'trace-history' }, history.map((e) => h('li', { class: 'history-entry', testid: 'history-entry', dataset: { kind: e.kind || '', actor: e.actor || '' } },
          h('div', { class: 'he-head' },
            h('span', { class: `he-kind k-${e.kind}` }, (e.kind || '').replace('_', ' ')),
            h('span', { class: 'he-actor', testid: 'history-actor' }, e.actor || '—'),
            h('span', { class: 'muted' }, `v${e.version}`),
            h('span', { class: 'spacer' }),
            when(e.effective_at)),
          e.reason ? h('div', { class: 'he-reason', testid: 'history-reason' }, e.reason) : null,
          (e.changes || []).length
            ? h('table', { class: 'changes' }, h('tbody', null, e.changes.map((c) => h('tr', null,
              h('td', null, c.field), h('td', { class: 'old' }, tidy(c.old)), h('td', null, '→'), h('td', { class: 'new' }, tidy(c.new))))))
            : null)))
        : empty('No history.'),
      h('h3', null, `Related (${related.length})`),
      related.length
        ? h('ul', { class: 'related', testid: 'trace-related' }, related.map((r) => h('li', {
          class: 'clickable',
          testid: 'related-item',
          onclick: () => openTrace(r.id),
        }, statusBadge(r.status), ' ', h('span', null, r.content), ' ', h('code', { class: 'muted' }, shortId(r.id)))))
        : h('p', { class: 'muted' }, 'None.'),
      h('div', { class: 'actions trace-actions' },
        forgetButtons(m.id, async () => {
          await renderTrace();
          loadBanks();
          renderView();
        })));
  }

  // ---------------------------------------------------------------- start

  function init() {
    const keyInput = byTestId('api-key-input');
    const keyState = byTestId('api-key-state');
    const showKeyState = () => {
      keyState.textContent = apiKey() ? 'key in use' : 'no key';
    };
    keyInput.value = apiKey();
    showKeyState();
    byTestId('api-key-form').addEventListener('submit', (e) => {
      e.preventDefault();
      const key = keyInput.value.trim();
      if (key) sessionStorage.setItem(KEY_STORAGE, key);
      else sessionStorage.removeItem(KEY_STORAGE);
      showKeyState();
      hideError();
      loadStatus();
      loadBanks().then(renderView);
    });
    byTestId('api-key-clear').addEventListener('click', () => {
      sessionStorage.removeItem(KEY_STORAGE);
      keyInput.value = '';
      showKeyState();
      loadStatus();
      loadBanks().then(renderView);
    });
    byTestId('error-dismiss').addEventListener('click', hideError);
    byTestId('banks-refresh').addEventListener('click', loadBanks);
    byTestId('bank-filter').addEventListener('input', renderBanks);
    for (const b of byTestId('tabs').querySelectorAll('button[data-view]')) {
      b.addEventListener('click', () => navigate({ view: b.dataset.view }));
    }
    document.addEventListener('keydown', (e) => {
      if (e.key === 'Escape' && state.trace) navigate({ trace: null });
    });
    window.addEventListener('hashchange', () => {
      const r = readHash();
      if (r.bank !== state.bank || r.view !== state.view || r.trace !== state.trace) navigate(r);
    });

    Object.assign(state, readHash());
    writeHash();
    renderBankHead();
    renderTabs();
    loadStatus();
    loadBanks();
    renderView();
    renderTrace();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
