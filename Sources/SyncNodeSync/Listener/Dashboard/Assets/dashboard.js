/*
 * SyncNode dashboard: a small single-page app over the node's CouchDB HTTP API.
 *
 * Everything the server sends (documents, peer names, errors) is untrusted and
 * is only ever rendered as text, through el() and textContent. The page runs
 * under a strict Content-Security-Policy: no inline scripts, styles or handlers.
 */
'use strict';

// ------------------------------------------------------------- DOM helpers

const $ = (id) => document.getElementById(id);

/** Appends children: nodes, or anything else as text; null/false are skipped, arrays flattened. */
function append(parent, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child == null || child === false) continue;
    parent.append(child instanceof Node ? child : String(child));
  }
  return parent;
}

/**
 * Creates an element. attrs: `class`, `data` (a dataset object), `on<event>`
 * listeners, value/disabled/hidden as properties, anything else as an attribute;
 * null, undefined and false are skipped. Children never go through an HTML parser.
 */
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value == null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'data') Object.assign(node.dataset, value);
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else if (key === 'value' || key === 'disabled' || key === 'hidden') node[key] = value;
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  return append(node, children);
}

/** A data table; columns are {label, cell: row => content}, rowAttrs(row) gives each <tr>'s attributes. */
function table(columns, rows, { id, caption, rowAttrs } = {}) {
  return el('table', { id, class: 'data' },
    caption && el('caption', null, caption),
    el('thead', null, el('tr', null, columns.map((c) => el('th', { scope: 'col' }, c.label)))),
    el('tbody', null, rows.map((row) => el('tr', rowAttrs && rowAttrs(row),
      columns.map((c) => el('td', null, c.cell(row)))))));
}

/**
 * A table that is re-rendered with fresh rows, with an empty-state text. The
 * table (and its id) stays in the DOM, hidden when empty. A focused row button
 * keeps focus across a refresh, so live updates do not throw keyboard users out.
 */
function tableView(columns, options) {
  const wrap = el('div', { class: 'table-wrap' });
  const empty = el('p', { class: 'empty', hidden: true }, options.empty);
  return {
    node: el('div', null, wrap, empty),
    update(rows) {
      const again = focusedRowSelector(wrap);
      wrap.replaceChildren(table(columns, rows, options));
      wrap.hidden = rows.length === 0;
      empty.hidden = rows.length > 0;
      if (again) wrap.querySelector(again)?.focus();
    },
  };
}

/** A selector for the button focused inside container's table: its row's first data-* attribute. */
function focusedRowSelector(container) {
  const active = document.activeElement;
  const row = container.contains(active) && active.closest('tr');
  const attr = row && [...row.attributes].find((a) => a.name.startsWith('data-'));
  return attr ? `tr[${attr.name}="${CSS.escape(attr.value)}"] button` : null;
}

// --------------------------------------------------------------- formatting

const enc = encodeURIComponent;
const pad2 = (n) => String(n).padStart(2, '0');
const clock = (d) => `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
const clip = (text, n) => (text.length > n ? `${text.slice(0, n)}…` : text);
const asText = (v) => (typeof v === 'string' ? v : JSON.stringify(v) ?? '');
const collectionHash = (ks) => `#/databases/${enc(ks)}`;
const docHash = (ks, id) => `#/doc/${enc(ks)}/${enc(id)}`;

/** A time (a Date, an ISO string or Unix seconds): HH:MM:SS today, with the date otherwise. */
function when(value) {
  if (value == null) return '—';
  const d = typeof value === 'number' ? new Date(value * 1000) : new Date(value);
  if (Number.isNaN(d.getTime())) return String(value);
  if (d.toDateString() === new Date().toDateString()) return clock(d);
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ${clock(d)}`;
}

function bytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = Number(n) || 0;
  let i = 0;
  for (; v >= 1024 && i < units.length - 1; i++) v /= 1024;
  return `${i ? v.toFixed(1) : v} ${units[i]}`;
}

/** A replication endpoint: a URL string (or CouchDB's {url} object), without any user:password@. */
function endpoint(e) {
  const url = typeof e === 'string' ? e : e?.url ?? JSON.stringify(e);
  return String(url).replace(/\/\/[^/@]*@/, '//');
}

// Status colours: idle/online green, busy blue, offline/lost grey, errors red.
const STATE_CLASS = { idle: 'ok', online: 'ok', busy: 'busy', running: 'busy', connecting: 'busy',
  offline: 'off', stopped: 'off', error: 'err', failed: 'err', crashing: 'err' };
const badge = (state, text = state) => el('span', { class: `badge ${STATE_CLASS[state] || 'off'}` }, text ?? '—');

// --------------------------------------------------------------------- API

class ApiError extends Error {
  constructor(status, error, reason) {
    super(reason ? `${error}: ${reason}` : String(error));
    this.status = status;
  }
}

let onUnauthorized = () => {};

/**
 * Calls the node. X-Requested-With makes the server leave out its
 * WWW-Authenticate challenge, so a 401 never opens the browser's password
 * dialog; a 401 returns the user to the sign-in form instead.
 */
async function api(method, path, body, { text = false } = {}) {
  const headers = {
    'X-Requested-With': 'XMLHttpRequest',
    // Errors are JSON even where the answer is text (the Prometheus metrics).
    Accept: text ? 'text/plain, application/json' : 'application/json',
  };
  const init = { method, headers, credentials: 'same-origin', cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch {
    throw new ApiError(0, 'network_error', 'The node could not be reached.');
  }
  if (!response.ok) {
    let info = {};
    try { info = await response.json(); } catch { /* not JSON: the status line says it */ }
    const error = new ApiError(response.status, info.error ?? `HTTP ${response.status}`, info.reason ?? response.statusText);
    if (response.status === 401) onUnauthorized(error);
    throw error;
  }
  return text ? response.text() : response.json();
}

// ------------------------------------------------------------ page contexts

let page = null; // the current page's context
let flash = ''; // a status message handed to the next page (e.g. after a save that navigates)

function leavePage() {
  if (!page) return;
  page.alive = false;
  page.cleanups.forEach((cleanup) => cleanup());
  page = null;
}

/** A fresh page in <main>: its h2, its alert area and a body; timers and streams end with it. */
function newPage(title) {
  const ctx = { alive: true, cleanups: [], flash };
  flash = '';
  ctx.title = el('h2', { id: 'page-title', tabindex: -1 }, title);
  ctx.alert = el('div', { id: 'page-alert', class: 'alert', role: 'alert' });
  ctx.body = el('div', { class: 'page' });
  $('main').replaceChildren(ctx.title, ctx.alert, ctx.body);
  ctx.fail = (error, ...extra) => ctx.alive && ctx.alert.replaceChildren(error.message ?? String(error), ...extra);
  ctx.clear = () => ctx.alert.replaceChildren();
  // Runs fn now and then every ms until the page is left, fn returns false, or a 401/404.
  // A request's error clears itself once the next one succeeds.
  ctx.every = (ms, fn) => {
    let timer = 0;
    let shown = null;
    const tick = async () => {
      try {
        if ((await fn()) === false) return;
        if (shown && ctx.alert.textContent === shown) ctx.clear();
        shown = null;
      } catch (e) {
        ctx.fail(e);
        shown = ctx.alert.textContent;
        if (e.status === 401 || e.status === 404) return;
      }
      if (ctx.alive) timer = setTimeout(tick, ms);
    };
    ctx.cleanups.push(() => clearTimeout(timer));
    tick();
  };
  return ctx;
}

/**
 * Runs a button's action: the button is disabled meanwhile, errors go to the page's alert.
 * Disabling blurs a focused button, so focus goes back to it after (if it is still there).
 */
async function act(ctx, button, fn) {
  const hadFocus = document.activeElement === button;
  button.disabled = true;
  ctx.clear();
  try {
    await fn();
  } catch (e) {
    ctx.fail(e);
  } finally {
    button.disabled = false;
    if (hadFocus && button.isConnected && document.activeElement === document.body) button.focus();
  }
}

/**
 * Keeps a page current: the node's event stream when it has one, else polling
 * every 2 s. EventSource sends the session cookie (same origin) but no headers;
 * a stream that cannot open (404, 401, no support) falls back to polling.
 */
function liveFeed(ctx, eventName, poll, onData, status) {
  const deliver = (data) => ctx.alive && onData(data);
  let polling = false;
  const startPolling = () => {
    if (polling || !ctx.alive) return;
    polling = true;
    status.textContent = 'Refreshing every 2 seconds.';
    ctx.every(2000, async () => deliver(await poll()));
  };
  // The stream may only send changes, so fetch the current state once either way.
  poll().then(deliver, (e) => ctx.fail(e));
  status.textContent = 'Connecting to live updates…';
  if (typeof EventSource !== 'function') return startPolling();
  const source = new EventSource('/_node/events');
  ctx.cleanups.push(() => source.close());
  source.addEventListener(eventName, (event) => {
    try { deliver(JSON.parse(event.data)); } catch (e) { ctx.fail(e); }
  });
  source.addEventListener('open', () => { status.textContent = 'Live: updates as they happen.'; });
  source.addEventListener('error', () => {
    if (source.readyState !== EventSource.CLOSED) {
      status.textContent = 'Connection lost; reconnecting…';
      return;
    }
    source.close();
    startPolling();
  });
}

// ------------------------------------------------------------------ routing

const routes = [
  { re: /^\/node$/, nav: 'node', title: 'Node', render: pageNode },
  { re: /^\/peers$/, nav: 'peers', title: 'Peers', render: pagePeers },
  { re: /^\/databases$/, nav: 'databases', title: 'Databases', render: pageDatabases },
  { re: /^\/databases\/([^/]+)$/, nav: 'databases', title: 'Collection', render: pageCollection },
  { re: /^\/doc\/([^/]+)\/([^/]*)$/, nav: 'databases', title: 'Document', render: pageDocument },
  { re: /^\/query$/, nav: 'query', title: 'Query', render: pageQuery },
  { re: /^\/replications$/, nav: 'replications', title: 'Replications', render: pageReplications },
  { re: /^\/metrics$/, nav: 'metrics', title: 'Metrics', render: pageMetrics },
];

function route() {
  if (!signedIn) return;
  const path = location.hash.slice(1) || '/node';
  if (!path.startsWith('/')) return; // an in-page anchor, not a route
  let found = null;
  let params = [];
  for (const r of routes) {
    const m = r.re.exec(path);
    if (!m) continue;
    try { params = m.slice(1).map(decodeURIComponent); } catch { break; }
    found = r;
    break;
  }
  if (!found) {
    location.replace('#/node');
    return;
  }
  leavePage();
  for (const link of document.querySelectorAll('nav a')) {
    if (link.dataset.section === found.nav) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  const ctx = newPage(found.title);
  page = ctx;
  found.render(ctx, ...params).catch((e) => ctx.fail(e));
  document.title = `${ctx.title.textContent} – SyncNode`;
  ctx.title.focus();
}

// -------------------------------------------------------------- 1. Node page

async function pageNode(ctx) {
  const [info, welcome] = await Promise.all([api('GET', '/_node/info'), api('GET', '/')]);
  setNodeName(info.name);
  const pairing = info.pairing_url;
  const pairingCode = pairing && el('code', null, pairing);
  const copyStatus = el('span', { class: 'muted', role: 'status' });
  const copy = pairing && el('button', { type: 'button', class: 'small', onclick: () => copyText(pairingCode, copyStatus) }, 'Copy');
  const rows = [
    ['Name', 'node-name', info.name],
    ['UUID', 'node-uuid', el('code', null, info.uuid)],
    ['Certificate fingerprint', 'node-fingerprint', info.fingerprint ? el('code', null, info.fingerprint) : 'none'],
    ['Pairing invitation', 'node-pairing-url', pairing ? [pairingCode, ' ', copy, ' ', copyStatus] : 'none'],
    ['Version', 'node-version', `${welcome.vendor?.name ?? 'SyncNode'} ${info.version ?? welcome.vendor?.version}`],
    ['CouchDB API', 'node-api-version', welcome.version],
    ['TLS', 'node-tls', info.tls ? 'on' : 'off'],
    ['Access', 'node-read-only', info.read_only ? 'read-only' : 'read and write'],
  ];
  const list = el('dl', { class: 'facts' }, rows.map(([term, id, value]) => [el('dt', null, term), el('dd', { id }, value)]));
  ctx.body.append(el('section', { class: 'card node-card' }, list,
    pairing && el('figure', { class: 'qr' },
      el('img', { id: 'node-qr', src: '/_node/qr.svg', alt: 'QR code of the pairing URL', width: 180, height: 180 }),
      el('figcaption', null, 'An invitation (no password): scan it on another device to pair with this node. The Peers page makes one-time ones.'))));
}

async function copyText(source, status) {
  try {
    await navigator.clipboard.writeText(source.textContent);
    status.textContent = 'Copied.';
  } catch {
    // No async clipboard (plain HTTP other than localhost) or no permission: select it for Ctrl+C.
    getSelection().selectAllChildren(source);
    status.textContent = 'Selected: press Ctrl+C to copy.';
  }
}

// ------------------------------------------------------------- 2. Peers page

const LOST_KEPT_MS = 5 * 60 * 1000;

async function pagePeers(ctx) {
  const status = el('p', { id: 'peers-status', class: 'muted', role: 'status' });
  const seen = new Map(); // uuid -> {peer, appeared: Date|null, lostSince: Date|null}
  let snapshots = 0;
  let latest = null;
  const peerName = (p) => p.name || p.host || p.uuid;

  const view = tableView([
    { label: 'Peer', cell: (s) => [el('strong', null, peerName(s.peer)), el('div', { class: 'muted small' }, s.peer.uuid)] },
    { label: 'Addresses', cell: (s) => addresses(s.peer).map((a) => el('div', null, a)) },
    { label: 'State', cell: (s) => (s.lostSince ? badge('offline', `lost since ${clock(s.lostSince)}`)
      : [badge('online'), s.appeared && el('span', { class: 'muted small' }, ` appeared ${clock(s.appeared)}`)]) },
    { label: 'Trust', cell: trustCell },
    { label: 'Sync', cell: (s) => syncLines(s.peer.collections) },
  ], {
    id: 'peers-table', caption: 'Peers seen on the network', empty: 'No peers seen yet.',
    rowAttrs: (s) => ({ data: { peerUuid: s.peer.uuid }, class: s.lostSince ? 'lost' : null }),
  });

  function addresses(p) {
    const hosts = p.addresses?.length ? p.addresses : [p.host].filter(Boolean);
    return hosts.map((h) => `${h.includes(':') ? `[${h}]` : h}${p.port ? `:${p.port}` : ''}`);
  }

  function trustCell(s) {
    const { trusted, fingerprint, scope, admitted } = s.peer;
    const verb = trusted ? 'Untrust' : 'Trust';
    return [badge(trusted ? 'idle' : 'offline', trusted ? 'trusted' : 'not trusted'), ' ',
      trusted && scope && el('div', { class: 'muted small peer-scope' }, `${scope}; ${admitted ?? ''}`),
      el('button', {
        type: 'button', class: 'small', data: { action: verb.toLowerCase() }, disabled: !fingerprint,
        title: fingerprint ? `${verb} ${peerName(s.peer)}` : 'No certificate fingerprint known for this peer',
        onclick: (e) => act(ctx, e.currentTarget, async () => {
          await api(trusted ? 'DELETE' : 'PUT', `/_node/trust/${enc(fingerprint)}`);
          s.peer.trusted = !trusted; // the next snapshot confirms it
          render();
          view.node.querySelector(`tr[data-peer-uuid="${CSS.escape(s.peer.uuid)}"] button`)?.focus();
        }),
      }, verb)];
  }

  /** Notes which peers are new or gone since the last snapshot of this page visit. */
  function update(peers) {
    const now = new Date();
    const current = new Set(peers.map((p) => p.uuid));
    for (const peer of peers) {
      const s = seen.get(peer.uuid);
      if (s && !s.lostSince) s.peer = peer;
      else seen.set(peer.uuid, { peer, appeared: snapshots ? now : null, lostSince: null });
    }
    for (const [uuid, s] of seen) {
      if (current.has(uuid)) continue;
      if (!s.lostSince) s.lostSince = now;
      if (now - s.lostSince > LOST_KEPT_MS) seen.delete(uuid);
    }
    snapshots += 1;
    latest = peers;
    render();
  }

  function render() {
    const order = (s) => `${s.lostSince ? 1 : 0}${peerName(s.peer).toLowerCase()}`;
    view.update([...seen.values()].sort((a, b) => order(a).localeCompare(order(b))));
  }

  // A node DNS-SD cannot see (another subnet): pair by the URL it prints (`serve`, its Node page).
  const url = el('input', { id: 'pair-url', name: 'url', autocomplete: 'off', spellcheck: 'false', required: true,
    placeholder: 'https://host:port/db?uuid=…&fp=…' });
  const pair = el('button', { type: 'submit', class: 'primary' }, 'Pair');
  const paired = el('p', { id: 'pair-status', class: 'muted', role: 'status' });
  const form = el('form', { id: 'pair-form', class: 'card inline-form' },
    el('label', { for: 'pair-url' }, 'Pair with a node by its pairing URL'), url, pair, paired);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (!url.value.trim()) return url.focus();
    act(ctx, pair, async () => {
      await api('POST', '/_node/pair', { url: url.value.trim() });
      url.value = '';
      paired.textContent = 'Paired: its certificate is trusted; it is listed below and synced with.';
    });
  });

  ctx.body.append(inviteSection(ctx), form, el('section', { class: 'card' }, status, view.node));
  // A node without peer discovery answers 404: no peers, not an error.
  const poll = () => api('GET', '/_node/peers').catch((e) => { if (e.status === 404) return []; throw e; });
  liveFeed(ctx, 'peers', poll, update, status);
  // Lost peers expire even when no new snapshot comes.
  ctx.every(15000, () => latest && update(latest));
}

/** Seconds until `iso` as "m:ss", or "expired". */
function countdown(iso) {
  const left = Math.round((Date.parse(iso) - Date.now()) / 1000);
  return left > 0 ? `${Math.floor(left / 60)}:${pad2(left % 60)}` : 'expired';
}

/**
 * "Invite a device": makes an invitation (a QR code and URL that carry no password, with a
 * countdown to its expiry) and lists the pending ones, each with a Revoke button.
 */
function inviteSection(ctx) {
  const access = el('select', { id: 'invite-access', name: 'access' },
    el('option', { value: 'write' }, 'read and write'), el('option', { value: 'read' }, 'read only'));
  const keyspaces = el('input', { id: 'invite-keyspaces', name: 'keyspaces', autocomplete: 'off', spellcheck: 'false',
    placeholder: 'every keyspace' });
  const uses = el('select', { id: 'invite-uses', name: 'uses' },
    el('option', { value: '1' }, 'one device'), el('option', { value: 'any' }, 'any number of devices'));
  const make = el('button', { type: 'submit', class: 'primary' }, 'Invite a device');
  const made = el('div', { id: 'invite-made', role: 'status' });
  const form = el('form', { id: 'invite-form', class: 'inline-form' },
    el('label', { for: 'invite-access' }, 'Access'), access,
    el('label', { for: 'invite-keyspaces' }, 'Keyspaces'), keyspaces,
    el('label', { for: 'invite-uses' }, 'For'), uses, make);
  const pending = tableView([
    { label: 'Invitation', cell: (i) => [el('code', null, i.id), i.note && el('div', { class: 'muted small' }, i.note)] },
    { label: 'Scope', cell: (i) => `${i.access} to ${i.keyspaces ? i.keyspaces.join(', ') : 'every keyspace'}` },
    { label: 'Used', cell: (i) => `${i.used} of ${i.uses ?? 'any'}` },
    { label: 'Expires in', cell: (i) => el('span', { class: 'countdown', data: { expires: i.expires } }, countdown(i.expires)) },
    { label: '', cell: (i) => el('button', {
      type: 'button', class: 'small', data: { invitation: i.id }, title: `Revoke invitation ${i.id} and untrust the devices that used it`,
      onclick: (e) => act(ctx, e.currentTarget, async () => {
        await api('DELETE', `/_node/invitations/${enc(i.id)}`);
        await refresh();
      }),
    }, 'Revoke') },
  ], { id: 'invitations-table', caption: 'Pending invitations', empty: 'No pending invitation.', rowAttrs: (i) => ({ data: { invitationId: i.id } }) });

  async function refresh() {
    const all = await api('GET', '/_node/invitations').catch((e) => { if (e.status === 404) return []; throw e; });
    pending.update(all.filter((i) => i.pending));
  }

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    act(ctx, make, async () => {
      const names = keyspaces.value.split(',').map((k) => k.trim()).filter(Boolean);
      const res = await api('POST', '/_node/invitations', {
        access: access.value, keyspaces: names.length ? names : null, uses: uses.value === 'any' ? null : 1, note: 'from the dashboard',
      });
      const code = el('code', { id: 'invite-url' }, res.url);
      const copyStatus = el('span', { class: 'muted', role: 'status' });
      made.replaceChildren(el('figure', { class: 'qr' },
        res.qr_svg && el('img', { id: 'invite-qr', src: `data:image/svg+xml;base64,${btoa(res.qr_svg)}`, alt: 'QR code of the invitation', width: 180, height: 180 }),
        el('figcaption', null, 'Scan on the device, or run ', el('code', null, 'syncnode pair URL'), ' there. Expires in ',
          el('span', { class: 'countdown', data: { expires: res.invitation.expires } }, countdown(res.invitation.expires)), '.')),
      el('p', null, code, ' ', el('button', { type: 'button', class: 'small', onclick: () => copyText(code, copyStatus) }, 'Copy'), ' ', copyStatus));
      await refresh();
    });
  });

  ctx.every(1000, () => {
    for (const span of document.querySelectorAll('.countdown')) span.textContent = countdown(span.dataset.expires);
  });
  ctx.every(5000, refresh);
  refresh().catch((e) => ctx.fail(e));
  return el('section', { id: 'invite', class: 'card' }, el('h3', null, 'Invite a device'),
    el('p', { class: 'muted' }, 'An invitation lets one device (or several) pair with this node by its certificate: no password is shown or shared. Untrust or revoke it any time.'),
    form, made, pending.node);
}

const SYNC_CLASS = { in_sync: 'ok', catching_up: 'busy', connecting: 'busy', stalled: 'off', refused: 'err' };

/** How a keyspace stands, as the node measured it: "in sync", "N pending", or the state. */
function syncWords(c) {
  if (c.state === 'in_sync') return 'in sync';
  const pending = (c.pending?.push ?? 0) + (c.pending?.pull ?? 0);
  if (c.state === 'catching_up' && pending > 0) return `${pending} pending`;
  return (c.state || c.activity || 'unknown').replace('_', ' ');
}

/** A peer's collections: "keyspace: in sync" (or N pending), progress, counts, last sync and error. */
function syncLines(collections) {
  const entries = Object.entries(collections || {});
  if (!entries.length) return el('span', { class: 'muted' }, 'nothing shared');
  return entries.map(([ks, c]) => {
    const max = Math.max(c.total || 0, 1); // <progress max> must be positive
    return el('div', { class: 'sync', 'data-keyspace': ks, 'data-state': c.state || '' },
      el('div', null, el('span', { class: `badge ${SYNC_CLASS[c.state] || 'off'}` }, `${ks}: ${syncWords(c)}`), ' ',
        el('progress', { max, value: Math.min(c.completed || 0, max), 'aria-label': `${ks} sync progress` }),
        el('span', { class: 'muted small' }, ` ${c.completed ?? 0}/${c.total ?? 0}`)),
      c.subscription && el('div', { class: 'muted small subscription' }, `pulls only ${JSON.stringify(c.subscription)}`),
      c.state !== 'in_sync' && c.reason && el('div', { class: 'muted small' }, c.reason),
      el('div', { class: 'muted small' }, `replicator ${c.activity} · pushed ${c.pushed ?? 0} · pulled ${c.pulled ?? 0}`,
        c.last_in_sync && ` · last in sync ${when(c.last_in_sync)}`),
      c.last_error && el('div', { class: 'error' }, c.last_error));
  });
}

// ---------------------------------------------------------- 3. Databases page

async function pageDatabases(ctx) {
  const status = el('p', { id: 'databases-status', class: 'muted', role: 'status' });
  const list = el('div', { id: 'databases-list' });
  const name = el('input', { id: 'new-db-name', name: 'name', autocomplete: 'off', spellcheck: 'false', required: true });
  const create = el('button', { type: 'submit', class: 'primary' }, 'Create');
  const form = el('form', { class: 'card inline-form' },
    el('label', { for: 'new-db-name' }, 'New database name'), name, create);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const db = name.value.trim();
    if (!db) return name.focus();
    act(ctx, create, async () => {
      await api('PUT', `/${enc(db)}`);
      name.value = '';
      status.textContent = `Created database ${db}.`;
      await load();
    });
  });

  const columns = [
    { label: 'Keyspace', cell: (c) => el('a', { href: collectionHash(c.keyspace) }, c.keyspace) },
    { label: 'Scope', cell: (c) => c.scope },
    { label: 'Collection', cell: (c) => c.name },
    { label: 'Documents', cell: (c) => c.doc_count },
    { label: 'Update seq', cell: (c) => asText(c.update_seq) },
  ];
  async function load() {
    const dbs = await api('GET', '/_node/databases');
    list.replaceChildren(...(dbs.length ? dbs.map((db) => el('div', { class: 'card table-wrap' },
      table(columns, db.collections || [], {
        caption: [el('strong', null, db.name), ` — ${bytes(db.size)} data, ${bytes(db.blob_size)} attachments`],
        rowAttrs: (c) => ({ data: { keyspace: c.keyspace } }),
      }))) : [el('p', { class: 'empty' }, 'No databases yet.')]));
  }

  ctx.body.append(form, status, list);
  await load();
}

// --------------------------------------------------------- Collection page

const PAGE_SIZE = 20;

async function pageCollection(ctx, ks) {
  ctx.title.textContent = `Collection ${ks}`;
  let skip = 0;
  let note = ctx.flash; // e.g. "Deleted document x.", shown with the first page
  const status = el('p', { id: 'docs-status', role: 'status' });
  const prev = el('button', { type: 'button', id: 'docs-prev', class: 'secondary', disabled: true }, 'Previous');
  const next = el('button', { type: 'button', id: 'docs-next', class: 'secondary', disabled: true }, 'Next');
  const turn = (by) => { skip = Math.max(0, skip + by); load().catch((e) => ctx.fail(e)); };
  prev.addEventListener('click', () => turn(-PAGE_SIZE));
  next.addEventListener('click', () => turn(PAGE_SIZE));

  const preview = (doc) => {
    const { _id, _rev, ...rest } = doc || {};
    return clip(JSON.stringify(rest), 80);
  };
  const docs = tableView([
    { label: 'ID', cell: (r) => el('a', { href: docHash(ks, r.id) }, r.id) },
    { label: 'Revision', cell: (r) => el('code', null, r.value?.rev ?? '') },
    { label: 'Preview', cell: (r) => el('code', { class: 'preview' }, preview(r.doc)) },
  ], { id: 'documents-table', caption: `Documents in ${ks}`, empty: 'No documents on this page.', rowAttrs: (r) => ({ data: { docId: r.id } }) });

  async function load() {
    prev.disabled = next.disabled = true;
    const res = await api('GET', `/${enc(ks)}/_all_docs?include_docs=true&limit=${PAGE_SIZE}&skip=${skip}`);
    const rows = res.rows || [];
    const total = res.total_rows ?? rows.length;
    docs.update(rows);
    const range = rows.length ? `rows ${skip + 1}-${skip + rows.length} of ${total}` : `rows 0-0 of ${total}`;
    status.textContent = [note, range].filter(Boolean).join(' ');
    note = '';
    prev.disabled = skip === 0;
    next.disabled = skip + rows.length >= total;
  }

  const conflictsHeading = el('h3', { id: 'conflicts-heading' }, 'Conflicts');
  const conflicts = el('section', { id: 'conflicts', class: 'card', 'aria-labelledby': 'conflicts-heading' },
    conflictsHeading, el('p', { class: 'muted' }, 'Loading…'));
  async function loadConflicts() {
    const found = await api('GET', `/_node/conflicts/${enc(ks)}`);
    conflicts.replaceChildren(conflictsHeading, found.length
      ? el('ul', { class: 'conflict-list' }, found.map((c) => el('li', null,
        el('a', { href: docHash(ks, c.id) }, c.id),
        el('span', { class: 'muted' }, ` — winner ${c.winner}, ${c.conflicts.length} conflicting`))))
      : el('p', { class: 'empty' }, 'No conflicts.'));
  }

  ctx.body.append(
    el('p', null, el('a', { href: '#/databases' }, '← All databases')),
    el('section', { class: 'card' },
      el('div', { class: 'toolbar' }, el('button', { type: 'button', class: 'primary', onclick: () => { location.hash = `#/doc/${enc(ks)}/`; } }, 'New document')),
      docs.node,
      el('div', { class: 'pager' }, prev, status, next)),
    conflicts);
  loadConflicts().catch((e) => conflicts.replaceChildren(conflictsHeading, el('p', { class: 'error' }, e.message)));
  await load();
}

// ----------------------------------------------------------- Document page

async function pageDocument(ctx, ks, id) {
  const isNew = id === '';
  ctx.title.textContent = isNew ? `New document in ${ks}` : `Document ${id}`;
  const docPath = `/${enc(ks)}/${enc(id)}`;
  let loaded = null; // the winning revision, as last loaded

  const status = el('p', { id: 'doc-status', role: 'status' });
  const idInput = isNew && el('input', { id: 'doc-id', autocomplete: 'off', spellcheck: 'false', placeholder: 'generated when empty' });
  const editor = el('textarea', { id: 'doc-editor', class: 'code', rows: 18, spellcheck: 'false' });
  const save = el('button', { type: 'button', id: 'doc-save', class: 'primary', disabled: !isNew }, 'Save');
  const remove = !isNew && el('button', { type: 'button', id: 'doc-delete', class: 'danger', disabled: true }, 'Delete');
  const conflictsBox = el('div');
  editor.value = isNew ? '{\n  \n}' : '';

  async function load(message = '') {
    loaded = await api('GET', `${docPath}?conflicts=true`);
    // _conflicts is shown below, not edited: the server would refuse it back in a PUT.
    const { _conflicts: conflicts = [], ...shown } = loaded;
    editor.value = JSON.stringify(shown, null, 2);
    save.disabled = remove.disabled = false;
    status.textContent = message;
    await showConflicts(conflicts);
  }

  /** The winner and each conflicting leaf side by side, each with a "Keep this revision" button. */
  async function showConflicts(conflicts) {
    if (!conflicts.length) return conflictsBox.replaceChildren();
    const leaves = [loaded._rev, ...conflicts];
    const bodies = await Promise.allSettled(leaves.map((rev) => api('GET', `${docPath}?rev=${enc(rev)}`)));
    conflictsBox.replaceChildren(el('section', { id: 'doc-conflicts', class: 'card', 'aria-labelledby': 'doc-conflicts-heading' },
      el('h3', { id: 'doc-conflicts-heading' }, 'Conflicting revisions'),
      el('p', { class: 'muted' }, 'Keep one revision; the others are deleted.'),
      el('div', { class: 'revisions' }, leaves.map((rev, i) => el('article', { class: 'revision' },
        el('h4', null, el('code', null, rev), i === 0 && [' ', badge('idle', 'current winner')]),
        bodies[i].status === 'fulfilled' ? el('pre', null, JSON.stringify(bodies[i].value, null, 2))
          : el('p', { class: 'error' }, bodies[i].reason.message),
        el('button', {
          type: 'button', data: { keepRev: rev },
          onclick: (e) => act(ctx, e.currentTarget, async () => {
            await api('POST', `/_node/conflicts/${enc(ks)}/${enc(id)}`, { keep: rev, leaves });
            await load('Conflict resolved');
          }),
        }, 'Keep this revision'))))));
  }

  save.addEventListener('click', () => {
    ctx.clear();
    let body;
    try {
      body = JSON.parse(editor.value);
    } catch (e) {
      return ctx.fail(`The document is not valid JSON: ${e.message}`);
    }
    if (!body || typeof body !== 'object' || Array.isArray(body)) return ctx.fail('The document must be a JSON object.');
    delete body._conflicts;
    act(ctx, save, async () => {
      try {
        if (isNew) {
          const newId = idInput.value.trim() || body._id;
          if (newId) body._id = newId;
          // Without an id, POST lets the node make one.
          const res = newId ? await api('PUT', `/${enc(ks)}/${enc(newId)}`, body) : await api('POST', `/${enc(ks)}`, body);
          flash = `Saved revision ${res.rev}`;
          location.hash = docHash(ks, res.id);
        } else {
          body._rev = loaded._rev; // the revision this edit is based on
          const res = await api('PUT', docPath, body);
          await load(`Saved revision ${res.rev}`);
        }
      } catch (e) {
        if (e.status !== 409) throw e;
        const reload = el('button', { type: 'button', class: 'small' }, 'Reload');
        reload.addEventListener('click', () => {
          if (isNew) location.hash = docHash(ks, idInput.value.trim() || body._id);
          else act(ctx, reload, () => load('Reloaded the latest revision.'));
        });
        ctx.fail(e, ' ', reload);
      }
    });
  });

  remove && remove.addEventListener('click', () => {
    if (!confirm(`Delete the document "${id}"?`)) return;
    act(ctx, remove, async () => {
      await api('DELETE', `${docPath}?rev=${enc(loaded._rev)}`);
      flash = `Deleted document ${id}.`;
      location.hash = collectionHash(ks);
    });
  });

  ctx.body.append(
    el('p', null, el('a', { href: collectionHash(ks) }, `← Collection ${ks}`)),
    el('section', { class: 'card editor' },
      isNew && [el('label', { for: 'doc-id' }, 'Document ID'), idInput],
      el('label', { for: 'doc-editor' }, 'Document JSON'), editor,
      el('div', { class: 'toolbar' }, save, remove), status),
    conflictsBox);
  if (!isNew) await load(ctx.flash);
}

// -------------------------------------------------------------- 5. Query page

const queryMemory = { db: '', text: '' }; // kept while moving between pages

async function pageQuery(ctx) {
  ctx.alert.id = 'query-error'; // this page's errors have their own id
  const select = el('select', { id: 'query-db' });
  const text = el('textarea', { id: 'query-text', class: 'code', rows: 6, spellcheck: 'false',
    placeholder: 'SELECT * FROM _ LIMIT 10', 'aria-describedby': 'query-hint', value: queryMemory.text });
  const run = el('button', { type: 'submit', id: 'query-run', class: 'primary' }, 'Run');
  const status = el('p', { id: 'query-status', role: 'status' });
  let results = el('table', { id: 'query-results', class: 'data', hidden: true });
  const form = el('form', { class: 'card query-form' },
    el('label', { for: 'query-db' }, 'Database'), select,
    el('label', { for: 'query-text' }, 'SQL++ query'), text,
    el('p', { class: 'muted small', id: 'query-hint' }, 'Ctrl+Enter runs the query. FROM _ is the default collection.'),
    el('div', { class: 'toolbar' }, run, status));

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (!run.disabled) act(ctx, run, execute);
  });
  text.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      form.requestSubmit();
    }
  });

  async function execute() {
    Object.assign(queryMemory, { db: select.value, text: text.value });
    status.textContent = 'Running…';
    const started = performance.now();
    try {
      const res = await api('POST', `/${enc(select.value)}/_query`, { query: text.value });
      const rows = res.results || [];
      const shown = resultTable(rows);
      results.replaceWith(shown);
      results = shown;
      status.textContent = `${rows.length} rows in ${Math.round(performance.now() - started)} ms`;
    } catch (e) {
      status.textContent = 'The query failed.';
      throw e;
    }
  }

  ctx.body.append(form, el('div', { class: 'card table-wrap' }, results));
  const dbs = await api('GET', '/_all_dbs');
  select.replaceChildren(...dbs.map((db) => el('option', { value: db }, db)));
  if (dbs.includes(queryMemory.db)) select.value = queryMemory.db;
  run.disabled = dbs.length === 0;
  if (!dbs.length) status.textContent = 'There is no database to query.';
}

/** Query rows as a table: the columns are the union of the rows' keys, in order of appearance. */
function resultTable(rows) {
  const objects = rows.map((r) => (r && typeof r === 'object' && !Array.isArray(r) ? r : { value: r }));
  const keys = new Set();
  objects.forEach((r) => Object.keys(r).forEach((k) => keys.add(k)));
  const columns = [...keys].map((k) => ({ label: k, cell: (r) => (Object.prototype.hasOwnProperty.call(r, k) ? asText(r[k]) : '') }));
  return table(columns, objects, { id: 'query-results', caption: 'Query results' });
}

// ------------------------------------------------------- 6. Replications page

async function pageReplications(ctx) {
  const status = el('p', { id: 'tasks-status', class: 'muted', role: 'status' });
  const rates = new Map(); // replication_id -> {count, time, rate}
  const common = [
    { label: 'Replication', cell: (t) => [`${endpoint(t.source)} → ${endpoint(t.target)}`, t.continuous && [' ', badge('idle', 'continuous')]] },
    { label: 'State', cell: (t) => [badge(t.state), t.last_error && el('div', { class: 'error' }, t.last_error)] },
    { label: 'Progress', cell: (t) => [
      t.progress != null && el('progress', { max: 100, value: t.progress, 'aria-label': 'replication progress' }),
      t.progress != null && ` ${t.progress}%`,
      t.changes_pending != null && el('div', { class: 'muted small' }, `${t.changes_pending} pending`)] },
  ];
  const tail = [
    { label: 'Docs read / written / failed', cell: (t) => `${t.docs_read ?? 0} / ${t.docs_written ?? 0} / ${t.doc_write_failures ?? 0}` },
    { label: 'Checkpoint', cell: (t) => (t.checkpointed_source_seq ? el('code', { title: t.checkpointed_source_seq }, clip(String(t.checkpointed_source_seq), 14)) : '—') },
    { label: 'Started', cell: (t) => when(t.started_on) },
  ];
  const rowAttrs = (t) => ({ data: { replicationId: t.replication_id } });
  const running = tableView([...common, { label: 'Docs/s', cell: (t) => (t.rate == null ? '—' : t.rate.toFixed(1)) }, ...tail],
    { id: 'tasks-table', caption: 'Running replications', empty: 'No replications are running.', rowAttrs });
  const recent = tableView([...common, ...tail, { label: 'Ended', cell: (t) => when(t.ended_on) }],
    { id: 'recent-table', caption: 'Recently finished replications', empty: 'None finished recently.', rowAttrs });

  // Docs/s: the change of docs read + written since the previous refresh at least a second ago.
  function onTasks(tasks) {
    const now = performance.now();
    const list = tasks.filter((t) => !t.type || t.type === 'replication');
    for (const t of list) {
      const count = (t.docs_read || 0) + (t.docs_written || 0);
      const prev = rates.get(t.replication_id);
      if (prev && now - prev.time < 1000) {
        t.rate = prev.rate;
        continue;
      }
      t.rate = prev ? Math.max(0, count - prev.count) / ((now - prev.time) / 1000) : null;
      rates.set(t.replication_id, { count, time: now, rate: t.rate });
    }
    running.update(list);
  }

  const recentSection = el('section', { class: 'card', id: 'recent', 'aria-labelledby': 'recent-heading' },
    el('h3', { id: 'recent-heading' }, 'Recently finished'), recent.node);
  ctx.body.append(el('section', { class: 'card', 'aria-labelledby': 'running-heading' },
    el('h3', { id: 'running-heading' }, 'Running'), status, running.node), recentSection);

  liveFeed(ctx, 'tasks', () => api('GET', '/_active_tasks'), onTasks, status);
  ctx.every(10000, async () => {
    try {
      recent.update(await api('GET', '/_node/replications/recent'));
    } catch (e) {
      if (e.status !== 404) throw e;
      recentSection.hidden = true; // this node keeps no history
      return false;
    }
  });
}

// ------------------------------------------------------------ 7. Metrics page

/** Prometheus text exposition: [{name, labels, value}], comments and blank lines skipped. */
function parseMetrics(text) {
  const series = [];
  const special = { NaN: NaN, '+Inf': Infinity, '-Inf': -Infinity };
  for (const line of text.split('\n')) {
    const m = /^\s*([A-Za-z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m || line.trimStart().startsWith('#')) continue;
    const labels = {};
    for (const [, key, value] of (m[2] || '').matchAll(/(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"/g)) {
      labels[key] = value.replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
    }
    series.push({ name: m[1], labels, value: m[3] in special ? special[m[3]] : Number(m[3]) });
  }
  return series;
}

const sumOf = (series, name) => series.filter((s) => s.name === name).reduce((a, s) => a + (Number.isFinite(s.value) ? s.value : 0), 0);
const GAUGES = ['syncnode_open_connections', 'syncnode_database_size_bytes', 'syncnode_replication_lag_changes'];
const MAX_SAMPLES = 60;

async function pageMetrics(ctx) {
  const writes = el('span', { id: 'metric-writes-rate', class: 'stat-value', role: 'status' }, '…');
  const lag = el('span', { id: 'metric-lag', class: 'stat-value', role: 'status' }, '…');
  const fallback = el('p', null, 'No samples yet.');
  const chart = el('canvas', {
    id: 'metrics-chart', width: 600, height: 200, role: 'img',
    'aria-label': 'Line chart of writes per second (blue, left axis) and replication lag in changes (orange, right axis), last 60 samples taken every 2 seconds',
  }, fallback);
  const gauges = tableView([
    { label: 'Gauge', cell: (s) => el('code', null, s.name) },
    { label: 'Labels', cell: (s) => Object.entries(s.labels).map(([k, v]) => `${k}=${v}`).join(', ') || '—' },
    { label: 'Value', cell: (s) => (s.name.endsWith('_bytes') ? bytes(s.value) : String(s.value)) },
  ], { id: 'metrics-gauges', caption: 'Gauges', empty: 'The node reports none of these gauges.' });

  ctx.body.append(
    el('div', { class: 'stats' },
      el('section', { class: 'card stat' }, el('h3', null, 'Writes per second'), writes),
      el('section', { class: 'card stat' }, el('h3', null, 'Replication lag (changes)'), lag)),
    el('section', { class: 'card', 'aria-labelledby': 'chart-heading' },
      el('h3', { id: 'chart-heading' }, 'Last 2 minutes'),
      el('ul', { class: 'legend' },
        el('li', null, el('span', { class: 'swatch writes', 'aria-hidden': 'true' }), 'Writes per second (left axis)'),
        el('li', null, el('span', { class: 'swatch lag', 'aria-hidden': 'true' }), 'Replication lag, changes (right axis)')),
      chart),
    el('section', { class: 'card' }, gauges.node));

  const samples = [];
  let last = null;
  ctx.every(2000, async () => {
    const series = parseMetrics(await api('GET', '/_node/_local/_prometheus', undefined, { text: true }));
    const now = performance.now();
    const written = sumOf(series, 'syncnode_documents_written_total');
    const lagNow = sumOf(series, 'syncnode_replication_lag_changes');
    // A counter that went down was reset (a restart): that interval has no rate.
    const rate = last && written >= last.written ? (written - last.written) / ((now - last.time) / 1000) : null;
    last = { time: now, written };
    lag.textContent = String(lagNow);
    if (rate == null) {
      writes.textContent = 'measuring…';
    } else {
      writes.textContent = rate.toFixed(1);
      samples.push({ rate, lag: lagNow });
      if (samples.length > MAX_SAMPLES) samples.shift();
      drawChart(chart, samples);
      fallback.textContent = `Latest: ${rate.toFixed(1)} writes per second, replication lag ${lagNow} changes.`;
    }
    gauges.update(series.filter((s) => GAUGES.includes(s.name)));
  });
}

/** Two lines, each on its own scale (writes/s on the left axis, lag on the right), newest at the right. */
function drawChart(canvas, samples) {
  const g = canvas.getContext('2d');
  const { width, height } = canvas;
  const box = { left: 48, right: width - 48, top: 12, bottom: height - 22 };
  const style = getComputedStyle(canvas);
  const colour = (name, fallbackColour) => style.getPropertyValue(name).trim() || fallbackColour;
  const axisText = colour('--muted', '#4b5563');
  g.clearRect(0, 0, width, height);
  g.font = '12px system-ui, sans-serif';
  g.strokeStyle = colour('--border', '#d1d5db');
  g.lineWidth = 1;
  g.strokeRect(box.left, box.top, box.right - box.left, box.bottom - box.top);
  g.fillStyle = axisText;
  g.textBaseline = 'top';
  g.textAlign = 'left';
  g.fillText('2 min ago', box.left, box.bottom + 6);
  g.textAlign = 'right';
  g.fillText('now', box.right, box.bottom + 6);

  const step = (box.right - box.left) / (MAX_SAMPLES - 1);
  for (const [key, stroke, side] of [['rate', colour('--writes-colour', '#1d4ed8'), 'left'], ['lag', colour('--lag-colour', '#c2410c'), 'right']]) {
    const max = Math.max(1, ...samples.map((s) => s[key]));
    g.strokeStyle = g.fillStyle = stroke;
    g.lineWidth = 2;
    g.beginPath();
    samples.forEach((s, i) => {
      const x = box.right - (samples.length - 1 - i) * step;
      const y = box.bottom - (s[key] / max) * (box.bottom - box.top);
      if (i) g.lineTo(x, y); else g.moveTo(x, y);
    });
    g.stroke();
    g.textAlign = side === 'left' ? 'right' : 'left';
    const x = side === 'left' ? box.left - 6 : box.right + 6;
    g.textBaseline = 'top';
    g.fillText(max >= 100 ? String(Math.round(max)) : String(+max.toFixed(1)), x, box.top);
    g.textBaseline = 'bottom';
    g.fillText('0', x, box.bottom);
  }
}

// ----------------------------------------------------------------- sign-in

let signedIn = false;
let anonymous = false; // a node without authentication: everyone is admin, no sign-in
let keepalive = 0;

function setNodeName(name) {
  $('topbar-node').textContent = name || '';
  $('topbar-node-wrap').hidden = !name;
}

function showLogin(message = '') {
  signedIn = false;
  leavePage();
  clearInterval(keepalive);
  $('main').replaceChildren();
  $('app').hidden = true;
  $('user-area').hidden = true;
  $('login').hidden = false;
  $('login-error').textContent = message;
  $('login-password').value = '';
  $('login-name').focus();
}

function showApp(name) {
  signedIn = true;
  $('login').hidden = true;
  $('app').hidden = false;
  $('user-area').hidden = false;
  $('topbar-user').textContent = name ?? 'anonymous';
  $('sign-out').hidden = anonymous;
  api('GET', '/_node/info').then((info) => setNodeName(info.name), () => {});
  // GET /_session renews the cookie and notices a session that ended, without a 401 challenge.
  clearInterval(keepalive);
  keepalive = setInterval(() => {
    api('GET', '/_session').then((s) => {
      if (!s.userCtx?.name && !anonymous) showLogin('Your session has ended; sign in again.');
    }, () => { /* a 401 is handled by api(); a network blip is retried next time */ });
  }, 60000);
  if (!location.hash.startsWith('#/')) history.replaceState(null, '', '#/node');
  route();
}

async function boot() {
  onUnauthorized = (error) => showLogin(error.message);
  window.addEventListener('hashchange', route);
  $('skip-link').addEventListener('click', (e) => {
    e.preventDefault(); // "#main" would be taken for a route
    (signedIn ? $('main') : $('login-name')).focus();
  });
  $('sign-out').addEventListener('click', async () => {
    try { await api('DELETE', '/_session'); } catch { /* signed out either way */ }
    showLogin();
  });
  $('login-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const button = $('login-form').querySelector('button');
    button.disabled = true;
    $('login-error').textContent = '';
    try {
      const res = await api('POST', '/_session', { name: $('login-name').value, password: $('login-password').value });
      $('login-password').value = '';
      anonymous = false;
      showApp(res.name);
    } catch (err) {
      $('login-error').textContent = err.message;
    } finally {
      button.disabled = false;
    }
  });

  try {
    const { userCtx = {} } = await api('GET', '/_session');
    anonymous = !userCtx.name && (userCtx.roles || []).includes('_admin');
    if (userCtx.name || anonymous) showApp(userCtx.name);
    else showLogin();
  } catch (e) {
    if (e.status !== 401) showLogin(e.message);
  } finally {
    $('boot-status').hidden = true;
  }
}

boot();
