/* seatd seat picker: one page, no framework, no build step.
 *
 * The server is the truth for every seat. This page only draws what it is told:
 *   - the layout (static) and the status map (versioned, ETag = version);
 *   - live changes over the WebSocket (snapshot, then versioned deltas); a gap in versions
 *     means "refetch"; a closed or missing WebSocket means "reconnect with backoff and poll
 *     GET …/seats with If-None-Match meanwhile", so the map stays correct either way;
 *   - the user's own hold ("mine") and the seats they just selected ("selected").
 */
'use strict';

(() => {
  const MAX_SELECT = 10;
  const POLL_FALLBACK_MS = 500;    // while the WebSocket is down
  const POLL_SAFETY_MS = 10000;    // while it is up: a cheap conditional GET, in case it went quiet
  const WS_BACKOFF_MAX_MS = 10000;
  const TOKEN_KEY = 'seatd.token';

  const $ = (id) => document.getElementById(id);
  const SVG_NS = 'http://www.w3.org/2000/svg';

  const state = {
    token: '',
    showId: null,
    show: null,
    layout: [],            // [{id,row,number,tier,x,y}]
    seatById: new Map(),
    seatIdAt: [],          // layout index -> seat id (bit i of the availability bitmaps)
    els: new Map(),        // seat id -> SVG element
    status: new Map(),     // seat id -> available|held|booked (the server's word)
    version: null,
    etag: null,
    selected: new Set(),
    hold: null,            // {holdId, seatIds, expiresAt (ms, server clock)}
    myBooked: new Set(),
    phase: 'select',       // select | hold | ticket
    busy: false,
    paying: false,
    skewMs: 0,             // server clock - local clock, when it is worth correcting
    holdKey: null,         // {sig, key}: reused when the same hold is retried after a network error
    ws: null,
    wsLive: false,
    wsAttempt: 0,
    wsTimer: null,
    pollTimer: null,
    countdownTimer: null,
    focusId: null,
    unitPx: 0,
  };

  /* ---------------------------------------------------------------- helpers */

  function money(minor) {
    if (typeof minor !== 'number' || !isFinite(minor)) return '';
    return (minor / 100).toFixed(2);
  }

  function tierPrice(tier) {
    const tiers = (state.show && state.show.priceTiers) || {};
    return typeof tiers[tier] === 'number' ? tiers[tier] : null;
  }

  function listWords(items) {
    if (items.length <= 1) return items.join('');
    return items.slice(0, -1).join(', ') + ' and ' + items[items.length - 1];
  }

  function takenMessage(seats) {
    return listWords(seats) + (seats.length === 1 ? ' was' : ' were') + ' just taken';
  }

  function seatSort(a, b) {
    const sa = state.seatById.get(a), sb = state.seatById.get(b);
    if (sa && sb) return (sa.y - sb.y) || (sa.x - sb.x);
    return a < b ? -1 : a > b ? 1 : 0;
  }

  function uuid() {
    if (window.crypto && typeof crypto.randomUUID === 'function') return crypto.randomUUID();
    const b = crypto.getRandomValues(new Uint8Array(16));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const h = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }

  function formatWhen(iso) {
    const d = new Date(iso);
    if (isNaN(d)) return '';
    return d.toLocaleString(undefined, {
      weekday: 'short', day: 'numeric', month: 'short', year: 'numeric',
      hour: '2-digit', minute: '2-digit',
    });
  }

  function jwtClaims(token) {
    try {
      const part = token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
      return JSON.parse(atob(part + '='.repeat((4 - (part.length % 4)) % 4)));
    } catch (_) {
      return null;
    }
  }

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text != null) e.textContent = text;
    return e;
  }

  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    if (text != null) e.textContent = text;
    return e;
  }

  /* The server's clock, as well as we know it (the hold deadline is on Redis's clock). */
  function serverNow() {
    return Date.now() + state.skewMs;
  }

  function noteServerDate(headers) {
    const d = Date.parse(headers.get('Date') || '');
    if (isNaN(d)) return;
    const skew = d - Date.now();
    // The header has one-second resolution: only correct clocks that are clearly off.
    state.skewMs = Math.abs(skew) > 2000 ? skew : 0;
  }

  /* One API call. Never throws: {status, body, headers}; status 0 is a network failure. */
  async function api(method, path, body, extraHeaders) {
    const headers = Object.assign({ Accept: 'application/json' }, extraHeaders || {});
    if (state.token) headers.Authorization = 'Bearer ' + state.token;
    const init = { method, headers, cache: 'no-store' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(path, init);
    } catch (err) {
      return { status: 0, body: null, headers: new Headers(), error: err };
    }
    noteServerDate(res.headers);
    let parsed = null;
    const ct = res.headers.get('Content-Type') || '';
    if (res.status !== 204 && res.status !== 304 && /json/.test(ct)) {
      try { parsed = await res.json(); } catch (_) { parsed = null; }
    }
    return { status: res.status, body: parsed, headers: res.headers };
  }

  function problemText(res, fallback) {
    if (res.status === 0) return 'Cannot reach the server. Check your connection and try again.';
    if (res.status === 401) return 'Please paste a valid token in "Who are you?" first.';
    const b = res.body || {};
    return b.detail || b.title || fallback || `The server answered ${res.status}.`;
  }

  /* ---------------------------------------------------------------- messages */

  function say(text, kind) {
    const m = $('message');
    if (!text) {
      m.hidden = true;
      m.textContent = '';
      return;
    }
    m.hidden = false;
    m.dataset.kind = kind || 'info';
    m.setAttribute('role', kind === 'error' ? 'alert' : 'status');
    m.textContent = text;
  }

  /* ---------------------------------------------------------------- identity */

  function setToken(token, persist) {
    state.token = (token || '').trim();
    if (persist) {
      try {
        if (state.token) localStorage.setItem(TOKEN_KEY, state.token);
        else localStorage.removeItem(TOKEN_KEY);
      } catch (_) { /* private mode: keep it in memory */ }
    }
    $('token-input').value = state.token;
    const who = $('who');
    const form = $('identity');
    if (!state.token) {
      who.textContent = '';
      who.dataset.state = 'none';
      form.dataset.collapsed = 'false';
      return;
    }
    const c = jwtClaims(state.token);
    if (!c || !c.sub) {
      who.textContent = 'token unreadable';
      who.dataset.state = 'bad';
    } else if (c.exp && c.exp * 1000 < Date.now()) {
      who.textContent = `${c.sub}: token expired`;
      who.dataset.state = 'bad';
    } else {
      who.textContent = `signed in as ${c.sub}`;
      who.dataset.state = 'ok';
    }
    form.dataset.collapsed = who.dataset.state === 'ok' ? 'true' : 'false';
  }

  function initIdentity() {
    // The token comes in the fragment (#token=…), which browsers never send to the server,
    // so it reaches no access log; a ?token= in the query is not read (it would be logged).
    const params = new URLSearchParams(location.hash.replace(/^#/, ''));
    let token = params.get('token');
    if (token) {
      // Keep it, then take it out of the address bar (and of the history).
      params.delete('token');
      const h = params.toString();
      history.replaceState(null, '', location.pathname + location.search + (h ? '#' + h : ''));
      setToken(token, true);
    } else {
      try { token = localStorage.getItem(TOKEN_KEY) || ''; } catch (_) { token = ''; }
      setToken(token, false);
    }
    $('identity').addEventListener('submit', (ev) => {
      ev.preventDefault();
      setToken($('token-input').value, true);
    });
    $('change-token').addEventListener('click', () => {
      $('identity').dataset.collapsed = 'false';
      $('token-input').focus();
      $('token-input').select();
    });
  }

  /* ---------------------------------------------------------------- catalogue */

  async function showCatalogue() {
    $('catalogue').hidden = false;
    const res = await api('GET', '/v1/shows?size=50');
    if (res.status !== 200 || !res.body) {
      fatal(problemText(res, 'Could not load the shows.'));
      return;
    }
    const list = $('show-list');
    list.textContent = '';
    const items = res.body.items || [];
    $('catalogue-empty').hidden = items.length > 0;
    for (const s of items) {
      const li = el('li');
      const a = el('a', { href: '/?show=' + encodeURIComponent(s.id) });
      a.append(el('span', { class: 'show-name' }, s.title || `Show ${s.id}`));
      const meta = [formatWhen(s.startsAt), s.seatCount ? `${s.seatCount} seats` : '']
        .filter(Boolean).join(' · ');
      a.append(el('span', { class: 'muted' }, meta));
      li.append(a);
      list.append(li);
    }
  }

  function fatal(text) {
    $('picker').hidden = true;
    $('catalogue').hidden = true;
    $('fatal').hidden = false;
    $('fatal-text').textContent = text;
  }

  /* ---------------------------------------------------------------- the map */

  function displayStatus(id) {
    if (state.selected.has(id)) return 'selected';
    if (state.hold && state.hold.seatIds.includes(id)) return 'mine';
    if (state.myBooked.has(id)) return 'booked';
    return state.status.get(id) || 'available';
  }

  const STATUS_WORDS = {
    available: 'available', held: 'held', booked: 'booked', mine: 'held for you', selected: 'selected',
  };
  const TAKEN_WORDS = { held: 'held by someone else', booked: 'already booked', mine: 'already held for you' };

  function seatLabel(seat, status) {
    const price = tierPrice(seat.tier);
    return `Row ${seat.row} seat ${seat.number}, ${seat.tier}` +
      (price != null ? `, ${money(price)}` : '') + `, ${STATUS_WORDS[status] || status}`;
  }

  function paintSeat(id) {
    const e = state.els.get(id);
    const seat = state.seatById.get(id);
    if (!e || !seat) return;
    const s = displayStatus(id);
    if (e.dataset.status === s) return;
    e.dataset.status = s;
    e.setAttribute('class', `seat ${s} tier-${seat.tierIndex}`);
    e.setAttribute('aria-label', seatLabel(seat, s));
    e.setAttribute('aria-pressed', s === 'selected' ? 'true' : 'false');
    e.setAttribute('aria-disabled', s === 'available' || s === 'selected' ? 'false' : 'true');
  }

  function paintAll() {
    for (const id of state.els.keys()) paintSeat(id);
  }

  /* Seat positions come in layout units; the pitch is the smallest gap between neighbours. */
  function gridOf(seats) {
    const xs = [...new Set(seats.map((s) => s.x))].sort((a, b) => a - b);
    const ys = [...new Set(seats.map((s) => s.y))].sort((a, b) => a - b);
    const minGap = (v) => {
      let g = Infinity;
      for (let i = 1; i < v.length; i++) if (v[i] - v[i - 1] > 1e-9) g = Math.min(g, v[i] - v[i - 1]);
      return g;
    };
    let pitch = Math.min(minGap(xs), minGap(ys));
    if (!isFinite(pitch) || pitch <= 0) pitch = 1;
    return { pitch, minX: xs[0], maxX: xs[xs.length - 1], minY: ys[0], maxY: ys[ys.length - 1] };
  }

  const LABEL_W = 1.0;   // the row-label column, in seat units
  const SCREEN_H = 2.2;  // the screen bar and the gap below it

  function drawMap() {
    const map = $('map');
    map.textContent = '';
    state.els.clear();
    const seats = state.layout;
    if (!seats.length) return;

    const tiers = Object.keys((state.show && state.show.priceTiers) || {});
    for (const s of seats) {
      if (!tiers.includes(s.tier)) tiers.push(s.tier);
    }
    const g = gridOf(seats);
    const cols = (g.maxX - g.minX) / g.pitch + 1;
    const rows = (g.maxY - g.minY) / g.pitch + 1;
    const width = LABEL_W + cols + 0.1;
    const height = SCREEN_H + rows + 0.2;
    map.setAttribute('viewBox', `0 0 ${width} ${height}`);
    map.dataset.units = String(width);

    // The screen.
    const sx = LABEL_W + cols * 0.08, sw = cols * 0.84;
    map.append(svg('path', {
      class: 'screen',
      d: `M ${sx} 0.9 Q ${sx + sw / 2} 0.35 ${sx + sw} 0.9`,
    }));
    map.append(svg('text', {
      class: 'screen-label', x: LABEL_W + cols / 2, y: 1.45, 'text-anchor': 'middle',
    }, 'SCREEN'));

    // Rows: labels at the left of each row's first seat.
    const rowsByName = new Map();
    for (const s of seats) {
      if (!rowsByName.has(s.row)) rowsByName.set(s.row, []);
      rowsByName.get(s.row).push(s);
    }
    const labels = svg('g', { class: 'row-labels', 'aria-hidden': 'true' });
    for (const [name, list] of rowsByName) {
      const y = list.reduce((a, s) => a + s.y, 0) / list.length;
      const cy = SCREEN_H + (y - g.minY) / g.pitch + 0.5;
      labels.append(svg('text', {
        x: LABEL_W / 2, y: cy, 'text-anchor': 'middle', 'dominant-baseline': 'central',
      }, name));
    }
    map.append(labels);

    const group = svg('g', { class: 'seats' });
    for (const s of seats) {
      s.tierIndex = Math.max(0, tiers.indexOf(s.tier)) % 4;
      const x = LABEL_W + (s.x - g.minX) / g.pitch;
      const y = SCREEN_H + (s.y - g.minY) / g.pitch;
      s.cx = x + 0.5;
      s.cy = y + 0.5;
      const r = svg('rect', {
        // The whole cell is the seat (and its tap target); a stroke in the card's colour
        // draws the gap between neighbours.
        x, y, width: 1, height: 1, rx: 0.28,
        'data-seat': s.id, role: 'button', tabindex: '-1',
      });
      // The number follows its seat, so that CSS can colour it by the seat's status.
      group.append(r, svg('text', {
        class: 'seat-num', x: s.cx, y: s.cy, 'text-anchor': 'middle',
        'dominant-baseline': 'central', 'aria-hidden': 'true',
      }, String(s.number)));
      state.els.set(s.id, r);
    }
    map.append(group);
    buildNavigation();
    paintAll();
    const first = seats[0].id;
    setFocusable(first);
    drawLegend(tiers);
    sizeMap();
  }

  /* Fit the map to its box; on touch screens never let a seat cell go below 32 px (the map
   * then scrolls sideways), and never blow a small hall up beyond 44 px a seat. */
  function sizeMap() {
    const map = $('map');
    const units = Number(map.dataset.units || 0);
    if (!units) return;
    const box = $('map-scroll').clientWidth;
    const coarse = window.matchMedia && matchMedia('(pointer: coarse)').matches;
    const minUnit = coarse ? 32 : 0;
    const w = Math.min(Math.max(box, units * minUnit), units * 44);
    map.style.width = `${Math.floor(w)}px`;
    state.unitPx = w / units;
    map.classList.toggle('dense', state.unitPx < 17);
    const scroller = $('map-scroll');
    if (!scroller.dataset.centred && scroller.scrollWidth > scroller.clientWidth) {
      // A hall wider than the phone: start in the middle, where most people want to sit.
      scroller.dataset.centred = '1';
      scroller.scrollLeft = (scroller.scrollWidth - scroller.clientWidth) / 2;
    }
  }

  function drawLegend(tiers) {
    const legend = $('legend');
    legend.textContent = '';
    for (const t of tiers) {
      const s = state.layout.find((x) => x.tier === t);
      const price = tierPrice(t);
      const li = el('li');
      li.append(el('span', { class: `swatch seat-swatch available tier-${s ? s.tierIndex : 0}`, 'aria-hidden': 'true' }));
      li.append(el('span', {}, t.length <= 3 ? t.toUpperCase() : t.charAt(0).toUpperCase() + t.slice(1)));
      if (price != null) li.append(el('strong', { class: 'price' }, money(price)));
      legend.append(li);
    }
    for (const [cls, word] of [['selected', 'Selected'], ['mine', 'Held for you'], ['held', 'Held'], ['booked', 'Sold']]) {
      const li = el('li', { class: 'legend-status' });
      li.append(el('span', { class: `swatch seat-swatch ${cls}`, 'aria-hidden': 'true' }));
      li.append(el('span', {}, word));
      legend.append(li);
    }
  }

  /* Keyboard: one seat is in the tab order; arrows move between seats. */
  let nav = { rows: [] };
  function buildNavigation() {
    const byRow = new Map();
    for (const s of state.layout) {
      const key = s.cy.toFixed(2);
      if (!byRow.has(key)) byRow.set(key, []);
      byRow.get(key).push(s);
    }
    const rows = [...byRow.values()].sort((a, b) => a[0].cy - b[0].cy);
    rows.forEach((r, ri) => {
      r.sort((a, b) => a.cx - b.cx);
      r.forEach((s, si) => { s.ri = ri; s.si = si; });
    });
    nav = { rows };
  }

  function setFocusable(id) {
    if (state.focusId && state.els.get(state.focusId)) state.els.get(state.focusId).setAttribute('tabindex', '-1');
    state.focusId = id;
    const e = state.els.get(id);
    if (e) e.setAttribute('tabindex', '0');
  }

  function moveFocus(fromId, key) {
    const s = state.seatById.get(fromId);
    if (!s) return;
    let target = null;
    if (key === 'ArrowLeft') target = nav.rows[s.ri][s.si - 1];
    else if (key === 'ArrowRight') target = nav.rows[s.ri][s.si + 1];
    else if (key === 'ArrowUp' || key === 'ArrowDown') {
      const row = nav.rows[s.ri + (key === 'ArrowUp' ? -1 : 1)];
      if (row) target = row.reduce((best, c) => (Math.abs(c.cx - s.cx) < Math.abs(best.cx - s.cx) ? c : best));
    }
    if (target) {
      setFocusable(target.id);
      state.els.get(target.id).focus();
    }
  }

  function onSeatActivate(id) {
    setFocusable(id);
    const status = displayStatus(id);
    if (state.phase === 'hold' || state.busy) {
      if (status === 'available') say('Pay for or release the seats you hold before choosing more.', 'info');
      return;
    }
    if (state.phase === 'ticket') setPhase('select');
    if (status === 'selected') {
      state.selected.delete(id);
    } else if (status === 'available') {
      if (state.selected.size >= MAX_SELECT) {
        say(`You can choose up to ${MAX_SELECT} seats at a time.`, 'info');
        return;
      }
      state.selected.add(id);
    } else {
      const seat = state.seatById.get(id);
      say(`Row ${seat.row} seat ${seat.number} is ${TAKEN_WORDS[status] || status}.`, 'info');
      return;
    }
    say('');
    paintSeat(id);
    renderPanel();
  }

  function initMapEvents() {
    const map = $('map');
    map.addEventListener('click', (ev) => {
      const t = ev.target.closest && ev.target.closest('[data-seat]');
      if (t) onSeatActivate(t.getAttribute('data-seat'));
    });
    map.addEventListener('keydown', (ev) => {
      const t = ev.target.closest && ev.target.closest('[data-seat]');
      if (!t) return;
      const id = t.getAttribute('data-seat');
      if (ev.key === 'Enter' || ev.key === ' ') {
        ev.preventDefault();
        onSeatActivate(id);
      } else if (ev.key.startsWith('Arrow')) {
        ev.preventDefault();
        moveFocus(id, ev.key);
      }
    });
    if (window.ResizeObserver) new ResizeObserver(sizeMap).observe($('map-scroll'));
    else window.addEventListener('resize', sizeMap);
  }

  /* ---------------------------------------------------------------- seat status */

  function applySnapshot(version, seats) {
    if (state.version != null && version < state.version) return false;
    state.version = version;
    state.etag = `"${version}"`;
    for (const [id, st] of Object.entries(seats || {})) state.status.set(id, st);
    afterStatusChange();
    return true;
  }

  function applyDelta(msg) {
    const from = msg.fromVersion != null ? msg.fromVersion : msg.version;
    if (state.version == null) { refreshSeats(); return; }
    if (msg.version <= state.version) return;            // already have it
    if (from > state.version + 1) { refreshSeats(); return; }  // a gap: refetch
    for (const c of msg.changes || []) state.status.set(c.seat, c.status);
    state.version = msg.version;
    state.etag = `"${msg.version}"`;
    afterStatusChange();
  }

  /* A selected seat that someone else took is no longer selectable. */
  function afterStatusChange() {
    const lost = [];
    for (const id of state.selected) {
      if ((state.status.get(id) || 'available') !== 'available') {
        state.selected.delete(id);
        lost.push(id);
      }
    }
    paintAll();
    if (lost.length) {
      lost.sort(seatSort);
      say(takenMessage(lost), 'error');
      renderPanel();
    }
  }

  /* Bit i of a base64 bitmap (bit 0 = the most significant bit of byte 0; past the end: 0). */
  function bitmapBits(b64) {
    const bytes = atob(b64 || '');
    return (i) => (i >> 3) < bytes.length && ((bytes.charCodeAt(i >> 3) >> (7 - (i & 7))) & 1) === 1;
  }

  /* The availability resource (two bitmaps, under 1 KB for 2,000 seats) as a status map. */
  function availabilitySeats(body) {
    const held = bitmapBits(body.held);
    const booked = bitmapBits(body.booked);
    const seats = {};
    state.seatIdAt.forEach((id, i) => {
      if (id) seats[id] = booked(i) ? 'booked' : held(i) ? 'held' : 'available';
    });
    return seats;
  }

  /* Reads the seat status. 'minVersion' (the version of this buyer's own change) makes any
   * cache on the way answer at least that new; plain reads may be up to ~2 s old. */
  let refreshing = null;
  function refreshSeats(conditional, minVersion) {
    if (refreshing && minVersion == null) return refreshing;
    const headers = conditional && state.etag ? { 'If-None-Match': state.etag } : {};
    const q = minVersion != null ? `?minVersion=${minVersion}` : '';
    const p = api('GET', `/v1/shows/${encodeURIComponent(state.showId)}/availability${q}`, undefined, headers)
      .then((res) => {
        if (res.status === 200 && res.body && typeof res.body.version === 'number') {
          applySnapshot(res.body.version, availabilitySeats(res.body));
        }
        return res.status;
      })
      .finally(() => { if (refreshing === p) refreshing = null; });
    refreshing = p;
    return p;
  }

  function schedulePoll() {
    clearTimeout(state.pollTimer);
    const every = state.wsLive ? POLL_SAFETY_MS : POLL_FALLBACK_MS;
    state.pollTimer = setTimeout(async () => {
      await refreshSeats(true);
      schedulePoll();
    }, every);
  }

  function setLive(mode) {
    const live = $('live');
    live.dataset.mode = mode;
    live.textContent = mode === 'ws' ? 'live' : mode === 'polling' ? 'auto-refresh' : 'connecting…';
    live.title = mode === 'ws' ? 'Live seat updates (WebSocket)'
      : 'Live connection unavailable: refreshing every half second';
  }

  function connectWs() {
    clearTimeout(state.wsTimer);
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const since = state.version != null ? `?since=${state.version}` : '';
    let ws;
    try {
      ws = new WebSocket(`${proto}//${location.host}/v1/shows/${encodeURIComponent(state.showId)}/seats/ws${since}`);
    } catch (_) {
      wsDown();
      return;
    }
    state.ws = ws;
    // The feed works: stop the fast polling.
    const live = () => {
      if (state.ws !== ws || state.wsLive) return;
      state.wsLive = true;
      state.wsAttempt = 0;
      setLive('ws');
      schedulePoll();
    };
    ws.onopen = live; // live as soon as it is open, even on a show where nothing changes
    ws.onmessage = (ev) => {
      let msg;
      try { msg = JSON.parse(ev.data); } catch (_) { return; }
      if (typeof msg.version !== 'number') return;
      if (msg.type === 'snapshot') applySnapshot(msg.version, msg.seats);
      else if (msg.type === 'delta') applyDelta(msg);
      else if (msg.type === 'version') { if (state.version == null || msg.version > state.version) refreshSeats(false, msg.version); }
      else return;
      live();
    };
    ws.onclose = () => { if (state.ws === ws) wsDown(); };
    ws.onerror = () => { /* onclose follows */ };
  }

  function wsDown() {
    state.ws = null;
    const wasLive = state.wsLive;
    state.wsLive = false;
    setLive('polling');
    if (wasLive) refreshSeats(true);
    schedulePoll();
    const base = Math.min(WS_BACKOFF_MAX_MS, 500 * 2 ** state.wsAttempt);
    state.wsAttempt = Math.min(state.wsAttempt + 1, 10);
    state.wsTimer = setTimeout(connectWs, base / 2 + Math.random() * base / 2);
  }

  /* ---------------------------------------------------------------- the panel */

  function setPhase(phase) {
    state.phase = phase;
    $('panel-select').hidden = phase !== 'select';
    $('panel-hold').hidden = phase !== 'hold';
    $('panel-ticket').hidden = phase !== 'ticket';
    renderPanel();
  }

  function seatListText(ids) {
    return ids.slice().sort(seatSort).map((id) => {
      const s = state.seatById.get(id);
      return s ? `${s.row}${s.number}` : id;
    }).join(', ');
  }

  function totalOf(ids) {
    let sum = 0;
    for (const id of ids) {
      const s = state.seatById.get(id);
      const p = s ? tierPrice(s.tier) : null;
      if (p == null) return null;
      sum += p;
    }
    return sum;
  }

  function renderPanel() {
    const sel = [...state.selected];
    if (state.phase === 'select') {
      $('selection-text').classList.toggle('hint', !sel.length);
      $('selection-text').textContent = sel.length
        ? `${sel.length} seat${sel.length === 1 ? '' : 's'}: ${seatListText(sel)}`
        : `Tap available seats to select them (up to ${MAX_SELECT}).`;
      const t = totalOf(sel);
      $('selection-total').textContent = sel.length && t != null ? `Total ${money(t)}` : '';
      $('hold-btn').disabled = !sel.length || state.busy;
      $('clear-btn').disabled = !sel.length || state.busy;
      $('hold-btn').textContent = state.busy ? 'Holding…' : (sel.length > 1 ? `Hold ${sel.length} seats` : 'Hold seats');
    } else if (state.phase === 'hold' && state.hold) {
      $('hold-seats').textContent = seatListText(state.hold.seatIds);
      const t = totalOf(state.hold.seatIds);
      $('hold-total').textContent = t != null ? `Total ${money(t)}` : '';
      $('pay-btn').disabled = state.busy;
      $('release-btn').disabled = state.busy;
      $('pay-btn').textContent = state.paying ? 'Paying…' : 'Pay';
    }
  }

  /* ---------------------------------------------------------------- hold */

  async function hold() {
    const seatIds = [...state.selected].sort(seatSort);
    if (!seatIds.length || state.busy) return;
    const sig = seatIds.join(',');
    if (!state.holdKey || state.holdKey.sig !== sig) state.holdKey = { sig, key: uuid() };
    state.busy = true;
    renderPanel();
    say('');
    const res = await api('POST', `/v1/shows/${encodeURIComponent(state.showId)}/holds`,
      { seatIds, idempotencyKey: state.holdKey.key });
    state.busy = false;
    if (res.status !== 0) state.holdKey = null;   // a definite answer: the next try is new

    if (res.status === 201 && res.body && res.body.holdId) {
      const b = res.body;
      const ids = Array.isArray(b.seatIds) && b.seatIds.length ? b.seatIds : seatIds;
      state.hold = { holdId: b.holdId, seatIds: ids, expiresAt: Date.parse(b.expiresAt) };
      for (const id of ids) state.status.set(id, 'held');
      state.selected.clear();
      paintAll();
      if (typeof b.version === 'number') refreshSeats(false, b.version); // the map as of our hold
      setPhase('hold');
      startCountdown();
      say(`Held ${seatListText(ids)} for you. Pay before the timer runs out.`, 'success');
      // On a phone the panel sits below the map: bring the countdown and the Pay button up.
      if (window.matchMedia && matchMedia('(max-width: 800px)').matches) {
        $('panel-hold').scrollIntoView({ block: 'nearest', behavior: 'smooth' });
      }
      return;
    }
    if (res.status === 409 && res.body && Array.isArray(res.body.conflictingSeats) &&
        res.body.conflictingSeats.length) {
      const taken = res.body.conflictingSeats.slice().sort(seatSort);
      for (const id of taken) {
        state.selected.delete(id);
        state.status.set(id, 'held');
      }
      paintAll();
      renderPanel();
      say(takenMessage(taken) + (state.selected.size ? '. Your other seats are still selected.' : '. Please choose other seats.'), 'error');
      refreshSeats(false);
      return;
    }
    renderPanel();
    say(problemText(res, 'Could not hold these seats.'), 'error');
    if (res.status === 409) refreshSeats(false);
  }

  function remainingMs() {
    return state.hold ? state.hold.expiresAt - serverNow() : 0;
  }

  function startCountdown() {
    clearInterval(state.countdownTimer);
    tick();
    state.countdownTimer = setInterval(tick, 250);
  }

  function tick() {
    if (!state.hold) { clearInterval(state.countdownTimer); return; }
    const ms = remainingMs();
    const secs = Math.max(0, Math.ceil(ms / 1000));
    const cd = $('countdown');
    cd.textContent = `${String(Math.floor(secs / 60)).padStart(2, '0')}:${String(secs % 60).padStart(2, '0')}`;
    cd.classList.toggle('urgent', secs <= 30);
    // While a payment is in flight the server keeps the seats: wait for its answer.
    if (ms <= 0 && !state.paying) expireHold();
  }

  function expireHold() {
    clearInterval(state.countdownTimer);
    const ids = state.hold ? state.hold.seatIds : [];
    state.hold = null;
    setPhase('select');
    paintAll();
    say('Your hold expired. Choose your seats again to continue.', 'error');
    settleSeats(ids);
  }

  /* After an expiry or a release, catch the map up promptly: the server's sweeper may take a
   * moment to publish the change, so look a few times (cheap conditional GETs). */
  function settleSeats(ids) {
    let n = 0;
    const again = async () => {
      await refreshSeats(n > 0);
      n += 1;
      const still = ids.some((id) => state.status.get(id) === 'held');
      if (still && n < 8) setTimeout(again, 400 * n);
    };
    again();
  }

  async function release() {
    if (!state.hold || state.busy) return;
    state.busy = true;
    renderPanel();
    const h = state.hold;
    const res = await api('DELETE', `/v1/holds/${encodeURIComponent(h.holdId)}`);
    state.busy = false;
    if (res.status === 200 || res.status === 204 || res.status === 404 || res.status === 410) {
      clearInterval(state.countdownTimer);
      state.hold = null;
      if (res.status === 200 || res.status === 204) for (const id of h.seatIds) state.status.set(id, 'available');
      setPhase('select');
      paintAll();
      say(res.status === 404 || res.status === 410 ? 'That hold had already ended.' : 'Seats released.', 'info');
      settleSeats(h.seatIds);
      return;
    }
    renderPanel();
    say(problemText(res, 'Could not release the seats.'), 'error');
  }

  /* ---------------------------------------------------------------- pay */

  async function pay() {
    if (!state.hold || state.busy) return;
    const h = state.hold;
    state.busy = true;
    state.paying = true;
    renderPanel();
    say('Paying…', 'info');
    const res = await api('POST', '/v1/bookings', { holdId: h.holdId, paymentMethod: $('card-select').value });
    state.paying = false;
    state.busy = false;

    if (res.status === 201 && res.body && res.body.status === 'CONFIRMED') {
      await confirmed(res.body);
      return;
    }
    if (res.status === 202 && res.body && res.body.bookingId) {
      say('Payment pending: waiting for the card issuer…', 'info');
      state.busy = true;
      renderPanel();
      await pollBooking(res.body.bookingId);
      return;
    }
    if (res.status === 402) {
      say('Card declined — your seats are still held, try another card', 'error');
      renderPanel();
      refreshHold(h.holdId);
      return;
    }
    renderPanel();
    say(problemText(res, 'The payment did not go through.'), 'error');
    if (res.status === 404 || res.status === 409 || res.status === 410) refreshHold(h.holdId);
    else tick();
  }

  /* The hold may have changed on the server (a decline puts it back to HELD, maybe with a new
   * deadline; a late payment may have let it lapse). */
  async function refreshHold(holdId) {
    const res = await api('GET', `/v1/holds/${encodeURIComponent(holdId)}`);
    if (!state.hold || state.hold.holdId !== holdId) return;
    if (res.status === 200 && res.body) {
      const st = res.body.status;
      if (st === 'HELD' || st === 'PENDING_PAYMENT') {
        const exp = Date.parse(res.body.expiresAt);
        if (!isNaN(exp)) state.hold.expiresAt = exp;
        tick();
        return;
      }
      if (st === 'BOOKED' || st === 'CONFIRMED') { tick(); return; }
    }
    if (res.status === 200 || res.status === 404 || res.status === 410) expireHold();
    else tick();
  }

  async function pollBooking(bookingId) {
    const deadline = Date.now() + 120000;
    while (Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 1000));
      const res = await api('GET', `/v1/bookings/${encodeURIComponent(bookingId)}`);
      if (res.status === 200 && res.body) {
        const st = res.body.status;
        if (st === 'CONFIRMED') {
          state.busy = false;
          await confirmed(res.body, true);
          return;
        }
        if (st && st !== 'PENDING_PAYMENT' && st !== 'PENDING') {
          state.busy = false;
          renderPanel();
          say(`The payment did not go through (${st.toLowerCase().replace(/_/g, ' ')}).`, 'error');
          if (state.hold) refreshHold(state.hold.holdId);
          return;
        }
      }
    }
    state.busy = false;
    renderPanel();
    say(`Payment still pending. Your booking reference is ${bookingId}; check back in a minute.`, 'info');
  }

  async function confirmed(booking, full) {
    clearInterval(state.countdownTimer);
    let b = booking;
    if (!full) {
      // The ticket resource may carry more (a QR code, a ticket token).
      const res = await api('GET', `/v1/bookings/${encodeURIComponent(booking.bookingId)}`);
      if (res.status === 200 && res.body) b = Object.assign({}, booking, res.body);
    }
    const seats = Array.isArray(b.seatIds) && b.seatIds.length ? b.seatIds : (state.hold ? state.hold.seatIds : []);
    for (const id of seats) {
      state.myBooked.add(id);
      state.status.set(id, 'booked');
    }
    state.hold = null;
    paintAll();
    renderTicket(b, seats);
    setPhase('ticket');
    say('Booked! Enjoy the show.', 'success');
  }

  function renderTicket(b, seats) {
    const t = $('ticket');
    t.textContent = '';
    t.append(el('p', { class: 'ticket-title' }, (state.show && state.show.title) || ''));
    if (state.show && state.show.startsAt) t.append(el('p', { class: 'muted' }, formatWhen(state.show.startsAt)));
    const dl = el('dl');
    const row = (k, v, cls) => {
      dl.append(el('dt', {}, k));
      dl.append(el('dd', cls ? { class: cls } : {}, v));
    };
    row('Seats', seatListText(seats), 'ticket-seats');
    if (typeof b.amount === 'number') row('Paid', money(b.amount) + (b.currency ? ` ${b.currency}` : ''), 'ticket-amount');
    row('Booking', b.bookingId || '', 'ticket-id');
    row('Status', b.status || '');
    t.append(dl);
    if (typeof b.qr === 'string' && b.qr) {
      const src = b.qr.startsWith('data:') ? b.qr
        : 'data:image/svg+xml;charset=utf-8,' + encodeURIComponent(b.qr);
      // As an image, never as markup: nothing in it can run.
      t.append(el('img', { class: 'qr', src, alt: 'Ticket QR code' }));
    }
    if (typeof b.ticketToken === 'string' && b.ticketToken) {
      t.append(el('p', { class: 'muted' }, 'Ticket code'));
      t.append(el('code', { class: 'ticket-token' }, b.ticketToken));
    }
  }

  /* ---------------------------------------------------------------- start */

  async function showPicker(id) {
    state.showId = id;
    $('picker').hidden = false;
    const enc = encodeURIComponent(id);
    const [showRes, layoutRes] = await Promise.all([
      api('GET', `/v1/shows/${enc}`),
      api('GET', `/v1/shows/${enc}/layout`),
    ]);
    if (showRes.status !== 200 || !showRes.body) {
      fatal(showRes.status === 404 ? `There is no show ${id}.` : problemText(showRes, 'Could not load the show.'));
      return;
    }
    if (layoutRes.status !== 200 || !layoutRes.body || !Array.isArray(layoutRes.body.seats)) {
      fatal(problemText(layoutRes, 'Could not load the seat layout.'));
      return;
    }
    state.show = showRes.body;
    document.title = `${state.show.title} — seatd`;
    $('show-title').textContent = state.show.title || `Show ${id}`;
    $('show-when').textContent = formatWhen(state.show.startsAt);
    state.layout = layoutRes.body.seats.filter((s) => s && typeof s.id === 'string' &&
      typeof s.x === 'number' && typeof s.y === 'number');
    state.seatById = new Map(state.layout.map((s) => [s.id, s]));
    // Seat i of the layout is bit i of the availability bitmaps.
    state.seatIdAt = layoutRes.body.seats.map((s) => (s && typeof s.id === 'string' ? s.id : null));

    drawMap();
    initMapEvents();
    $('hold-btn').addEventListener('click', hold);
    $('clear-btn').addEventListener('click', () => {
      state.selected.clear();
      paintAll();
      renderPanel();
      say('');
    });
    $('pay-btn').addEventListener('click', pay);
    $('release-btn').addEventListener('click', release);
    $('again-btn').addEventListener('click', () => { setPhase('select'); say(''); });
    setPhase('select');

    setLive('connecting');
    await refreshSeats(false);
    connectWs();
    // Until the WebSocket says hello, keep the map fresh by polling.
    schedulePoll();
  }

  function start() {
    initIdentity();
    const id = new URLSearchParams(location.search).get('show');
    if (id) showPicker(id);
    else showCatalogue();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
