/* seatd seat picker: one page, no framework, no build step.
 *
 * The server is the truth for every seat. This page only draws what it is told:
 *   - the layout (static) and the status map (versioned, ETag = version);
 *   - live changes over the WebSocket (snapshot, then versioned deltas); a gap in versions
 *     means "refetch"; a closed or missing WebSocket means "reconnect with backoff and poll
 *     GET …/seats with If-None-Match meanwhile", so the map stays correct either way;
 *   - the user's own hold ("mine") and the seats they just selected ("selected");
 *   - the show's standing areas (issue 30): places sold by count, not by seat. Their free
 *     counts come with the status map (availability, WebSocket snapshot) and with each delta,
 *     and the places chosen go into the same hold as the seats.
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
    session: null,         // {kind: 'account'|'operator', accessToken, …}: see "the session"
    refreshTimer: null,
    afterSignIn: null,     // what to do once the buyer has signed in (e.g. hold the selection)
    view: null,            // catalogue | picker | tickets
    showId: null,
    show: null,
    layout: [],            // [{id,row,number,tier,x,y}]
    seatById: new Map(),
    seatIdAt: [],          // layout index -> seat id (bit i of the availability bitmaps)
    els: new Map(),        // seat id -> SVG element
    status: new Map(),     // seat id -> available|held|booked|unavailable (the server's word; unavailable: kept for a sales channel)
    version: null,
    etag: null,
    selected: new Set(),
    hold: null,            // {holdId, seatIds, areas ({FLOOR: 2}), expiresAt (ms, server clock)}
    areas: [],             // the show's standing areas, [{id, capacity, tier}] (the show document)
    areaFree: new Map(),   // area id -> places free (the server's word, with the status map)
    areaPick: new Map(),   // area id -> places chosen (> 0 only)
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
    queue: null,           // queued show: my place {ticket, state, number, admittedThrough, admission, expiresAt (ms), …}
    queueRoom: null,       // the last waiting-room frame of the WebSocket
    queueTimer: null,
    queueTick: null,
    queueBusy: false,
    queueBooked: [],       // queued show: the seats this buyer has booked on it (this visit or before)
    queueBookedKnown: false, // ... once read from My tickets (until then a lapsed turn is not called lapsed)
    group: null,           // ?group=: {id, title, showIds, shows: Map showId -> show document (once read)}
  };
  const QUEUE_POLL_MS = 15000;     // a waiting page re-reads its place this often (the WebSocket is the fast path)

  /* ---------------------------------------------------------------- helpers */

  /* Money: amounts come in minor units (cents) with a currency (ISO 4217) on bookings; a show
   * names none today, so its prices are in the service's currency, EUR. Formatted for the
   * buyer's locale (the browser's), e.g. "€18.00" (en), "18,00 €" (de). */
  const DEFAULT_CURRENCY = 'EUR';
  const moneyFormats = new Map();

  function moneyFormat(currency) {
    const cur = typeof currency === 'string' && /^[A-Za-z]{3}$/.test(currency) ? currency.toUpperCase() : DEFAULT_CURRENCY;
    if (!moneyFormats.has(cur)) {
      let f;
      try {
        f = new Intl.NumberFormat(undefined, { style: 'currency', currency: cur });
      } catch (_) {
        f = new Intl.NumberFormat(undefined, { style: 'currency', currency: DEFAULT_CURRENCY });
      }
      // Minor units per major unit: 100 for EUR, 1 for JPY.
      moneyFormats.set(cur, { f, scale: 10 ** f.resolvedOptions().maximumFractionDigits });
    }
    return moneyFormats.get(cur);
  }

  function money(minor, currency) {
    if (typeof minor !== 'number' || !isFinite(minor)) return '';
    const { f, scale } = moneyFormat(currency);
    return f.format(minor / scale);
  }

  /* "€12.00–€26.00" (the locale's way of writing a range), or one price. */
  function moneyRange(lo, hi, currency) {
    if (lo === hi) return money(lo, currency);
    const { f, scale } = moneyFormat(currency);
    if (typeof f.formatRange === 'function') {
      try { return f.formatRange(lo / scale, hi / scale); } catch (_) { /* below */ }
    }
    return `${money(lo, currency)}–${money(hi, currency)}`;
  }

  function showCurrency(show) {
    return (show && show.currency) || DEFAULT_CURRENCY;
  }

  /* The lowest and highest price of a show's tiers, written for the catalogue; '' without any. */
  function priceRangeText(show) {
    const prices = Object.values((show && show.priceTiers) || {}).filter((p) => typeof p === 'number' && isFinite(p));
    if (!prices.length) return '';
    return moneyRange(Math.min(...prices), Math.max(...prices), showCurrency(show));
  }

  /* A price of the show on screen. */
  function showMoney(minor) {
    return money(minor, showCurrency(state.show));
  }

  /* "VIP", "Premium": a tier's name as the legend and the tier choice write it. */
  function tierName(t) {
    return t.length <= 3 ? t.toUpperCase() : t.charAt(0).toUpperCase() + t.slice(1);
  }

  function tierPrice(tier) {
    const tiers = (state.show && state.show.priceTiers) || {};
    return typeof tiers[tier] === 'number' ? tiers[tier] : null;
  }

  /* 'text' as a sentence: a capital (unless 'lower') and a full stop. */
  function sentence(text, lower) {
    const t = String(text || '').trim().replace(/[.\s]+$/, '');
    return (lower ? t : t.charAt(0).toUpperCase() + t.slice(1)) + '.';
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

  /* One API call. Never throws: {status, body, headers}; status 0 is a network failure.
   * 'token' (optional) goes out as `Authorization: Bearer`; only authApi() passes one. */
  async function api(method, path, body, extraHeaders, token) {
    const headers = Object.assign({ Accept: 'application/json' }, extraHeaders || {});
    if (token) headers.Authorization = 'Bearer ' + token;
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
    if (res.status === 401) {
      return state.session ? 'Your session has ended. Please sign in again.' : 'Please sign in first.';
    }
    if (res.status === 429) return `Too many requests. Try again in ${retryAfterSeconds(res)} s.`;
    const b = res.body || {};
    return b.detail || b.title || fallback || `The server answered ${res.status}.`;
  }

  /* Seconds to wait from a Retry-After header (delta-seconds or an HTTP date); at least 1. */
  function retryAfterSeconds(res) {
    const v = (res.headers && res.headers.get('Retry-After')) || '';
    let s = /^\d+$/.test(v.trim()) ? Number(v) : Math.ceil((Date.parse(v) - serverNow()) / 1000);
    if (!isFinite(s) || s < 1) s = 1;
    return s;
  }

  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  /* ---------------------------------------------------------------- messages */

  /* The picker's messages are a toast at the bottom of the window (#notice): a refusal must be
   * seen where the buyer is looking, and on a phone the page is far longer than the screen.
   * Good news and information go away by themselves after a while; a refusal stays until the
   * buyer dismisses it or does something else. 'opts.persist' keeps information too. */
  const NOTICE_MS = 8000;
  const notice = { timer: null, faded: false, used: null };   // faded: the text went away by itself
  // The control the buyer used last (a button is disabled while its request runs, so the
  // focus is no guide to it).
  document.addEventListener('pointerdown', (ev) => {
    const t = ev.target && ev.target.closest && ev.target.closest('button, select, input, a, [data-seat]');
    notice.used = t ? { el: t, at: Date.now() } : null;
  }, true);
  document.addEventListener('focusin', (ev) => { notice.used = { el: ev.target, at: Date.now() }; });

  function say(text, kind, opts) {
    const m = $('message');
    clearTimeout(notice.timer);
    notice.faded = false;
    if (!text) {
      m.textContent = '';
      delete m.dataset.kind;
      updateNotice();
      return;
    }
    kind = kind || 'info';
    m.dataset.kind = kind;
    $('notice').dataset.kind = kind;
    m.setAttribute('role', kind === 'error' ? 'alert' : 'status');
    $('notice').hidden = false;   // shown first, so that the live region announces the text
    m.textContent = text;
    updateNotice();
    keepClear();
    if (kind !== 'error' && !(opts && opts.persist)) {
      notice.timer = setTimeout(() => {
        if (!$('alternatives').hidden) return;   // proposals wait for the buyer
        notice.faded = true;
        updateNotice();
      }, NOTICE_MS);
    }
  }

  /* The toast must not hide the control the buyer just used (on a phone, "Find best seats"
   * sits at the bottom of the screen): scroll it up above the toast, into the room that
   * updateNotice() made under the page. */
  function keepClear() {
    const n = $('notice');
    const a = notice.used && Date.now() - notice.used.at < 30000 ? notice.used.el : null;
    if (n.hidden || !a || !a.isConnected || n.contains(a) || !$('picker').contains(a)) return;
    const r = a.getBoundingClientRect();
    const top = n.getBoundingClientRect().top;
    if (r.height && r.top >= 0 && r.bottom > top - 8 && r.top < window.innerHeight) {
      window.scrollBy(0, Math.min(r.top, r.bottom - top + 12));
    }
  }

  /* Shows the toast while it has something to say, and leaves room under the page for it, so
   * that nothing at the bottom of the page has to stay behind it. */
  function updateNotice() {
    const n = $('notice');
    n.hidden = !((!notice.faded && $('message').textContent) || !$('alternatives').hidden);
    const room = n.hidden ? 0 : Math.ceil(n.getBoundingClientRect().height) + 24;
    document.body.style.paddingBottom = room ? `${room}px` : '';
    document.documentElement.style.scrollPaddingBottom = room ? `${room}px` : '';
  }

  /* ---------------------------------------------------------------- the session
   *
   * Two ways to be someone:
   *   - an account, the buyer's way: sign in with email and password; the server answers an
   *     access token (a JWT, about 15 minutes) and a refresh token. The page sends the access
   *     token as `Authorization: Bearer` and trades the refresh token for a new pair shortly
   *     before the access token runs out, or when a call answers 401;
   *   - an operator's token (`seatctl token`), pasted under "Operator" or handed over in the
   *     fragment (#token=…): used as it is, never refreshed.
   *
   * Storage: the account's pair lives in localStorage, not sessionStorage. A buyer who closes
   * the tab and comes back tomorrow should still find their tickets, and every tab of the site
   * must share ONE refresh token: the server rotates it on every refresh and treats a second
   * use of an old one as theft (it revokes the whole session). sessionStorage is per tab and is
   * copied into a duplicated tab, which would leave two tabs with the same refresh token racing
   * each other into a revoked session. The price of localStorage is that a script running in
   * this origin could read it: the CSP allows only the page's own scripts, and the page never
   * puts server text into markup (textContent only). Tokens are never logged and never put in
   * a URL the server sees.
   *
   * Refreshing: at most one refresh of a refresh token is ever in flight. Within a tab, callers
   * share one promise; across tabs, the refresh runs under a Web Lock (or, where the browser
   * has none, a short lease in localStorage), and whoever gets it re-reads the stored pair
   * first: if another tab already rotated it, it adopts the new pair instead of replaying the
   * old token (a replay would sign the buyer out everywhere).
   */

  const SESSION_KEY = 'seatd.session';      // the account: {accessToken, accessExp, lifetimeMs, refreshToken, email, name}
  const LEASE_KEY = 'seatd.refresh-lease';  // the cross-tab refresh lease, without Web Locks
  const PROFILE_KEY = 'seatd.profile';      // {email, name} of the last account created here: no secret
  let storageOk = true;                     // false: private mode or full; the session lives in memory

  function readStoredSession() {
    if (!storageOk) return state.session && state.session.kind === 'account' ? state.session : null;
    try {
      const s = JSON.parse(localStorage.getItem(SESSION_KEY) || 'null');
      return s && typeof s.refreshToken === 'string' && s.refreshToken &&
        typeof s.accessToken === 'string' ? Object.assign(s, { kind: 'account' }) : null;
    } catch (_) {
      return null;
    }
  }

  function storeSession(s) {
    if (!storageOk) return;
    try {
      if (s) localStorage.setItem(SESSION_KEY, JSON.stringify(s));
      else localStorage.removeItem(SESSION_KEY);
    } catch (_) {
      storageOk = false;
    }
  }

  function storeOperatorToken(token) {
    try {
      if (token) localStorage.setItem(TOKEN_KEY, token);
      else localStorage.removeItem(TOKEN_KEY);
    } catch (_) { /* private mode: keep it in memory */ }
  }

  /* The pair a login or a refresh answered, with who it is for. */
  function pairFrom(body, who) {
    const lifetimeMs = (typeof body.expiresIn === 'number' && body.expiresIn > 0 ? body.expiresIn : 900) * 1000;
    return {
      kind: 'account',
      accessToken: body.accessToken,
      refreshToken: body.refreshToken,
      // On this browser's clock, counted from when the answer arrived: no clock skew.
      accessExp: Date.now() + lifetimeMs,
      lifetimeMs,
      email: who.email || '',
      name: who.name || '',
    };
  }

  /* How long before the access token runs out the page refreshes it: a fifth of its lifetime,
   * between 5 s and 60 s (a minute for the usual 15). */
  function refreshLead(s) {
    return Math.min(60000, Math.max(5000, (s.lifetimeMs || 900000) / 5));
  }

  function adoptSession(s) {
    state.session = s;
    renderWho();
    scheduleRefresh();
  }

  function scheduleRefresh() {
    clearTimeout(state.refreshTimer);
    const s = state.session;
    if (!s || s.kind !== 'account') return;
    const wait = Math.max(0, s.accessExp - refreshLead(s) - Date.now());
    state.refreshTimer = setTimeout(() => refreshSession(s.refreshToken), Math.min(wait, 0x7fffffff));
  }

  /* Runs 'fn' while holding the one cross-tab refresh lock. */
  function withRefreshLock(fn) {
    if (navigator.locks && typeof navigator.locks.request === 'function') {
      return navigator.locks.request('seatd.refresh', () => fn());
    }
    return withLease(fn);
  }

  /* Without Web Locks: a lease in localStorage (written, then read back after a moment, so
   * that of two tabs writing at once only the last writer goes ahead). It expires by itself
   * if its tab dies. */
  async function withLease(fn) {
    const me = uuid();
    const read = () => { try { return JSON.parse(localStorage.getItem(LEASE_KEY) || 'null'); } catch (_) { return null; } };
    for (let tries = 0; tries < 200; tries++) {
      const lease = read();
      if (!lease || !(lease.until > Date.now())) {
        try {
          localStorage.setItem(LEASE_KEY, JSON.stringify({ id: me, until: Date.now() + 8000 }));
        } catch (_) {
          return fn();   // no storage: this tab is alone with its session anyway
        }
        await sleep(40);
        const now = read();
        if (now && now.id === me) {
          try {
            return await fn();
          } finally {
            const after = read();
            if (after && after.id === me) { try { localStorage.removeItem(LEASE_KEY); } catch (_) { /* gone */ } }
          }
        }
      }
      await sleep(50 + Math.random() * 100);
    }
    return fn();
  }

  /* Brings the access token up to date. 'stale' is the refresh token of the pair whose access
   * token is expiring or was refused: a stored pair with another refresh token is a newer one.
   * (Refresh tokens rotate and are random. Access tokens are not compared: a server that mints
   * them without a "jti" gives the same bytes twice within one second.) Resolves to 'ok'
   * (state.session is usable), 'ended' (signed out) or 'error' (no answer: the session is kept
   * and tried again later). */
  let refreshFlight = null;
  function refreshSession(stale) {
    if (!refreshFlight) {
      refreshFlight = withRefreshLock(() => refreshLocked(stale))
        .catch(() => 'error')
        .finally(() => { refreshFlight = null; });
    }
    return refreshFlight;
  }

  async function refreshLocked(stale) {
    const s = readStoredSession();
    if (!s) {
      // Signed out in another tab, or the storage was cleared.
      if (state.session && state.session.kind === 'account') sessionEnded('Your session has ended. Please sign in again.');
      return 'ended';
    }
    if (s.refreshToken !== stale && s.accessExp - Date.now() > refreshLead(s)) {
      adoptSession(s);            // another tab refreshed while this one waited
      return 'ok';
    }
    const res = await api('POST', '/v1/auth/refresh', { refreshToken: s.refreshToken });
    if (res.status === 200 && res.body && res.body.accessToken && res.body.refreshToken) {
      const next = pairFrom(res.body, s);
      storeSession(next);
      adoptSession(next);
      return 'ok';
    }
    if (res.status === 400 || res.status === 401 || res.status === 403) {
      const now = readStoredSession();
      if (now && now.refreshToken !== s.refreshToken) {   // a tab without the lock got there first
        adoptSession(now);
        return 'ok';
      }
      storeSession(null);
      sessionEnded('Your session has ended. Please sign in again.');
      return 'ended';
    }
    // No answer, 429 or 5xx: the refresh token is probably still good. Try again soon.
    clearTimeout(state.refreshTimer);
    const wait = res.status === 429 ? retryAfterSeconds(res) * 1000 : 10000;
    state.refreshTimer = setTimeout(() => refreshSession(s.refreshToken), wait);
    return 'error';
  }

  const SIGNED_OUT = () => ({ status: 401, body: null, headers: new Headers(), signedOut: true });

  /* An API call as the signed-in buyer: refreshes first when the access token is about to run
   * out, and once more (then retries once) when the server answers 401. A 401 is answered
   * before any handler runs, so the retry cannot do anything twice. */
  async function authApi(method, path, body, extraHeaders) {
    let s = state.session;
    if (!s) return SIGNED_OUT();
    if (s.kind === 'account' && s.accessExp - Date.now() < 5000) {
      await refreshSession(s.refreshToken);
      s = state.session;
      if (!s) return SIGNED_OUT();
    }
    const token = s.accessToken;
    let res = await api(method, path, body, extraHeaders, token);
    if (res.status === 401 && s.kind === 'account') {
      await refreshSession(s.refreshToken);
      if (state.session && state.session.refreshToken !== s.refreshToken) {
        res = await api(method, path, body, extraHeaders, state.session.accessToken);
      } else if (!state.session) {
        res.signedOut = true;
      }
    }
    return res;
  }

  /* The session is gone (revoked, expired, signed out elsewhere): forget it and tell the view. */
  function sessionEnded(why, byBuyer) {
    const was = state.session;
    clearTimeout(state.refreshTimer);
    state.session = null;
    renderWho();
    if (was) onSignedOut(why, !!byBuyer);
  }

  async function signOut() {
    const s = state.session;
    if (!s) return;
    $('signout-btn').disabled = true;
    if (s.kind === 'account') {
      // Under the refresh lock, so that the token revoked is the current one, not one that a
      // refresh in flight is about to replace.
      await withRefreshLock(async () => {
        const cur = readStoredSession() || s;
        await api('POST', '/v1/auth/logout', { refreshToken: cur.refreshToken });
        storeSession(null);
      });
    } else {
      storeOperatorToken('');
    }
    $('signout-btn').disabled = false;
    sessionEnded('You are signed out.', true);
  }

  /* ---------------------------------------------------------------- who is signed in */

  function renderWho() {
    const s = state.session;
    const who = $('who');
    $('signin-open').hidden = !!s;
    $('signout-btn').hidden = !s;
    if (!s) {
      who.textContent = '';
      who.dataset.state = 'none';
      return;
    }
    if (s.kind === 'account') {
      const c = jwtClaims(s.accessToken) || {};
      who.textContent = `signed in as ${s.name || c.name || s.email || c.email || c.sub || 'you'}`;
      who.dataset.state = 'ok';
      return;
    }
    const c = jwtClaims(s.accessToken);
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
  }

  /* An operator's token replaces any account session in this browser. */
  function useOperatorToken(token) {
    token = (token || '').trim();
    if (!token) return;
    const acct = readStoredSession();
    if (acct) {
      storeSession(null);
      api('POST', '/v1/auth/logout', { refreshToken: acct.refreshToken });
    }
    clearTimeout(state.refreshTimer);
    storeOperatorToken(token);
    state.session = { kind: 'operator', accessToken: token };
    renderWho();
  }

  function initSession() {
    // An operator's token comes in the fragment (#token=…), which browsers never send to the
    // server, so it reaches no access log; a ?token= in the query is not read (it would be).
    const params = new URLSearchParams(location.hash.replace(/^#/, ''));
    const token = params.get('token');
    if (token) {
      // Keep it, then take it out of the address bar (and of the history).
      params.delete('token');
      const h = params.toString();
      history.replaceState(null, '', location.pathname + location.search + (h ? '#' + h : ''));
      useOperatorToken(token);
    } else {
      const acct = readStoredSession();
      let op = '';
      try { op = localStorage.getItem(TOKEN_KEY) || ''; } catch (_) { op = ''; }
      if (acct) adoptSession(acct);
      else if (op) state.session = { kind: 'operator', accessToken: op };
    }
    renderWho();

    // Another tab signed in, refreshed or signed out.
    window.addEventListener('storage', (ev) => {
      if (ev.key !== SESSION_KEY && ev.key !== null) return;
      const s = readStoredSession();
      const cur = state.session;
      if (!s) {
        if (cur && cur.kind === 'account') sessionEnded('You signed out in another tab.');
      } else if (!cur || cur.kind !== 'account' || cur.refreshToken !== s.refreshToken) {
        const wasOut = !cur;
        adoptSession(s);
        if (wasOut) onSignedIn(false);
      }
    });
    // Timers sleep in background tabs: catch up when the buyer comes back.
    document.addEventListener('visibilitychange', () => {
      const s = state.session;
      if (document.visibilityState === 'visible' && s && s.kind === 'account' &&
          s.accessExp - Date.now() < refreshLead(s)) refreshSession(s.refreshToken);
    });

    initAccountForms();
  }

  /* ---------------------------------------------------------------- sign in, sign up */

  function accountSay(text, kind) {
    const m = $('account-message');
    m.hidden = !text;
    m.textContent = text || '';
    m.dataset.kind = kind || 'error';
  }

  function selectTab(which) {
    const signup = which === 'signup';
    $('tab-signin').setAttribute('aria-selected', String(!signup));
    $('tab-signup').setAttribute('aria-selected', String(signup));
    $('signin-form').hidden = signup;
    $('signup-form').hidden = !signup;
    $('account-title').textContent = signup ? 'Create your account' : 'Sign in';
    accountSay('');
  }

  /* Shows the sign-in card. 'why' says what for; 'then' runs once the buyer is signed in. */
  function openAccount({ why, tab, then } = {}) {
    const card = $('account');
    card.hidden = false;
    $('account-why').hidden = !why;
    $('account-why').textContent = why || '';
    state.afterSignIn = then || null;
    selectTab(tab || 'signin');
    const first = tab === 'signup' ? $('signup-email') : $('signin-email');
    card.scrollIntoView({ block: 'nearest' });
    first.focus({ preventScroll: true });
  }

  function closeAccount() {
    $('account').hidden = true;
    state.afterSignIn = null;
    accountSay('');
  }

  /* Client-side checks, in the server's terms (NIST 800-63B: length only, 8 to 128). */
  function checkCredentials(email, password, creating) {
    if (!email) return 'Enter your email address.';
    if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) return 'That email address does not look right.';
    if (!password) return 'Enter your password.';
    const n = [...password].length;
    if (creating && n < 8) return `Password too short: use at least 8 characters (this one has ${n}).`;
    if (creating && n > 128) return 'Password too long: use at most 128 characters.';
    return '';
  }

  function busyButton(btn, busyText) {
    const idle = btn.dataset.idle || btn.textContent;
    btn.dataset.idle = idle;
    btn.disabled = true;
    btn.textContent = busyText;
    return () => { btn.disabled = false; btn.textContent = idle; };
  }

  let loginBlockedUntil = 0;

  async function signIn(email, password, name) {
    const wait = Math.ceil((loginBlockedUntil - Date.now()) / 1000);
    if (wait > 0) {
      accountSay(`Too many attempts. Try again in ${wait} s.`);
      return false;
    }
    const res = await api('POST', '/v1/auth/login', { email, password });
    if (res.status === 200 && res.body && res.body.accessToken && res.body.refreshToken) {
      let known = {};
      try { known = JSON.parse(localStorage.getItem(PROFILE_KEY) || '{}') || {}; } catch (_) { known = {}; }
      const s = pairFrom(res.body, {
        email: email.toLowerCase(),
        name: name || (known.email === email.toLowerCase() ? known.name : ''),
      });
      storeOperatorToken('');
      storeSession(s);
      adoptSession(s);
      accountSay('');
      onSignedIn(true);
      return true;
    }
    if (res.status === 401) accountSay('Wrong email or password.');
    else if (res.status === 429) {
      const s = retryAfterSeconds(res);
      loginBlockedUntil = Date.now() + s * 1000;
      accountSay(`Too many attempts. Try again in ${s} s.`);
    } else if (res.status === 400) accountSay('Enter your email address and your password.');
    else accountSay(res.status >= 500 ? 'The service is busy. Try again in a moment.' : problemText(res, 'Could not sign you in.'));
    return false;
  }

  async function signUp(name, email, password) {
    const body = { email, password };
    if (name) body.name = name;
    const res = await api('POST', '/v1/auth/register', body);
    if (res.status === 201) {
      try {
        localStorage.setItem(PROFILE_KEY, JSON.stringify({
          email: (res.body && res.body.email) || email.toLowerCase(), name: (res.body && res.body.name) || name,
        }));
      } catch (_) { /* only for the greeting */ }
      // A newcomer should not have to type it all again: sign in straight away.
      return signIn(email, password, (res.body && res.body.name) || name);
    }
    if (res.status === 409) {
      accountSay('This email is already registered. Sign in instead, or use another email.');
      return false;
    }
    if (res.status === 400) {
      const b = res.body || {};
      const text = `${b.type || ''} ${b.title || ''} ${b.detail || ''}`.toLowerCase();
      const n = [...password].length;
      if (/common|weak|breach|guess/.test(text)) accountSay('That password is too common. Choose one that is harder to guess.');
      else if (/email/.test(text)) accountSay('That email address does not look right.');
      else if (n < 8 || /short/.test(text)) accountSay('Password too short: use at least 8 characters.');
      else if (n > 128 || /long/.test(text)) accountSay('Password too long: use at most 128 characters.');
      else accountSay(b.detail || 'Please check your email and password.');
      return false;
    }
    if (res.status === 429) {
      accountSay(`Too many attempts. Try again in ${retryAfterSeconds(res)} s.`);
      return false;
    }
    accountSay(res.status >= 500 ? 'The service is busy. Try again in a moment.' : problemText(res, 'Could not create the account.'));
    return false;
  }

  function initAccountForms() {
    $('signin-open').addEventListener('click', () => openAccount({}));
    $('signout-btn').addEventListener('click', signOut);
    $('account-close').addEventListener('click', closeAccount);
    $('tab-signin').addEventListener('click', () => selectTab('signin'));
    $('tab-signup').addEventListener('click', () => selectTab('signup'));

    $('signin-form').addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const email = $('signin-email').value.trim();
      const password = $('signin-password').value;
      const bad = checkCredentials(email, password, false);
      if (bad) { accountSay(bad); return; }
      const done = busyButton($('signin-submit'), 'Signing in…');
      const ok = await signIn(email, password);
      done();
      if (ok) $('signin-password').value = '';
    });

    $('signup-form').addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const name = $('signup-name').value.trim();
      const email = $('signup-email').value.trim();
      const password = $('signup-password').value;
      const bad = checkCredentials(email, password, true);
      if (bad) { accountSay(bad); return; }
      const done = busyButton($('signup-submit'), 'Creating your account…');
      const ok = await signUp(name, email, password);
      done();
      if (ok) $('signup-password').value = '';
    });

    $('identity').addEventListener('submit', (ev) => {
      ev.preventDefault();
      const t = $('token-input').value;
      $('token-input').value = '';
      if (!t.trim()) return;
      useOperatorToken(t);
      onSignedIn(true);
    });
  }

  /* Someone is signed in now: close the card, go on with what they were doing. */
  function onSignedIn(here) {
    const then = state.afterSignIn;
    closeAccount();
    if (state.view === 'tickets') loadTickets();
    else if (state.view === 'picker') {
      if (here) say(`Welcome${state.session && state.session.name ? ', ' + state.session.name : ''}! You are signed in.`, 'success');
      if (then) then();
      else resumeHold();
      if (queued() && !state.queue && storedTicket()) fetchPlace();
      if (queued()) loadQueueBookings();
    }
  }

  function onSignedOut(why, byBuyer) {
    if (state.view === 'tickets') {
      loadTickets(why);
    } else if (state.view === 'picker') {
      if (state.hold && byBuyer) {
        // The hold stays the account's on the server (it expires by itself, or the buyer signs
        // in again and finds it under My tickets); this page no longer acts on it. A session
        // that merely ran out keeps it on screen: signing in again lets the buyer pay.
        clearInterval(state.countdownTimer);
        state.hold = null;
        paintAll();
      }
      if (state.phase !== 'ticket') setPhase('select');
      say(why, 'info');
    }
  }

  /* ---------------------------------------------------------------- catalogue */

  async function showCatalogue() {
    state.view = 'catalogue';
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
      const meta = [formatWhen(s.startsAt), s.seatCount ? `${s.seatCount.toLocaleString()} seats` : '']
        .filter(Boolean).join(' · ');
      a.append(el('span', { class: 'muted' }, meta));
      const prices = priceRangeText(s);
      if (prices) a.append(el('span', { class: 'show-price' }, prices));
      li.append(a);
      list.append(li);
    }
  }

  function fatal(text) {
    $('picker').hidden = true;
    $('catalogue').hidden = true;
    $('tickets').hidden = true;
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
    unavailable: 'not for sale',
  };
  const TAKEN_WORDS = {
    held: 'held by someone else', booked: 'already booked', mine: 'already held for you', unavailable: 'not for sale',
  };
  /* The statuses this page knows how to draw; anything else the server may say one day is
   * drawn (and refused) as not for sale rather than breaking the map. */
  const KNOWN_STATUS = new Set(['available', 'held', 'booked', 'unavailable']);
  function serverStatus(st) {
    return KNOWN_STATUS.has(st) ? st : 'unavailable';
  }

  function seatLabel(seat, status) {
    const price = tierPrice(seat.tier);
    return `Row ${seat.row} seat ${seat.number}, ${seat.tier}` +
      (seat.accessible ? ', wheelchair space' : '') +
      (price != null ? `, ${showMoney(price)}` : '') + `, ${STATUS_WORDS[status] || status}`;
  }

  function paintSeat(id) {
    const e = state.els.get(id);
    const seat = state.seatById.get(id);
    if (!e || !seat) return;
    const s = displayStatus(id);
    const extra = (seat.accessible ? ' accessible' : '') + (companionIds.has(id) ? ' companion' : '');
    const locked = mapLocked ? '1' : '';
    if (e.dataset.status === s && e.dataset.extra === extra && (e.dataset.locked || '') === locked) return;
    e.dataset.locked = locked;
    e.dataset.status = s;
    e.dataset.extra = extra;
    e.setAttribute('class', `seat ${s} tier-${seat.tierIndex}${extra}`);
    e.setAttribute('aria-label', seatLabel(seat, s));
    e.setAttribute('aria-pressed', s === 'selected' ? 'true' : 'false');
    e.setAttribute('aria-disabled', !mapLocked && (s === 'available' || s === 'selected') ? 'false' : 'true');
  }

  let mapLocked = false;   // a queued show outside the buyer's turn: no seat can be chosen

  /* The companion seats of the wheelchair spaces the buyer has selected or holds. */
  let companionIds = new Set();
  function computeCompanions() {
    const out = new Set();
    const mine = [...state.selected].concat(state.hold ? state.hold.seatIds : []);
    for (const id of mine) {
      const s = state.seatById.get(id);
      if (s && s.accessible && Array.isArray(s.companions)) {
        for (const c of s.companions) if (state.seatById.has(c)) out.add(c);
      }
    }
    companionIds = out;
  }

  function paintAll() {
    computeCompanions();
    for (const id of state.els.keys()) paintSeat(id);
    const kept = document.querySelector('#legend [data-legend="unavailable"]');
    if (kept) kept.hidden = !anyUnavailable();
  }

  function anyUnavailable() {
    for (const st of state.status.values()) if (st === 'unavailable') return true;
    return false;
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

    // The hatch of the seats kept for a sales channel ("Not for sale"; CSS fills them with it).
    const defs = svg('defs');
    const hatch = svg('pattern', {
      id: 'kept-hatch', patternUnits: 'userSpaceOnUse', width: 0.22, height: 0.22, patternTransform: 'rotate(45)',
    });
    hatch.append(svg('rect', { class: 'kept-bg', x: 0, y: 0, width: 0.22, height: 0.22 }));
    hatch.append(svg('rect', { class: 'kept-line', x: 0, y: 0, width: 0.06, height: 0.22 }));
    defs.append(hatch);
    map.append(defs);

    // The screen.
    const sx = LABEL_W + cols * 0.08, sw = cols * 0.84;
    map.append(svg('path', {
      class: 'screen',
      d: `M ${sx} 0.9 Q ${sx + sw / 2} 0.35 ${sx + sw} 0.9`,
    }));
    map.append(svg('text', {
      class: 'screen-label', x: LABEL_W + cols / 2, y: 1.45, 'text-anchor': 'middle',
    }, 'SCREEN'));

    // Rows: their letters in the left column, drawn on the rail (#row-rail), a narrow SVG of
    // the same scale laid over that column and kept at the left edge of the scroller, so that
    // a hall wider than the screen still says which row is which when scrolled sideways.
    const rail = $('row-rail');
    rail.textContent = '';
    rail.setAttribute('viewBox', `0 0 ${LABEL_W} ${height}`);
    rail.dataset.units = String(LABEL_W);
    rail.append(svg('rect', { class: 'rail-bg', x: 0, y: SCREEN_H - 0.1, width: LABEL_W, height: rows + 0.3, rx: 0.25 }));
    const rowsByName = new Map();
    for (const s of seats) {
      if (!rowsByName.has(s.row)) rowsByName.set(s.row, []);
      rowsByName.get(s.row).push(s);
    }
    const labels = svg('g', { class: 'row-labels' });
    for (const [name, list] of rowsByName) {
      const y = list.reduce((a, s) => a + s.y, 0) / list.length;
      const cy = SCREEN_H + (y - g.minY) / g.pitch + 0.5;
      labels.append(svg('text', {
        x: LABEL_W / 2, y: cy, 'text-anchor': 'middle', 'dominant-baseline': 'central', 'data-row': name,
      }, name));
    }
    rail.append(labels);

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
      if (s.accessible) {
        const comp = Array.isArray(s.companions) && s.companions.length
          ? ` (companion seats ${s.companions.join(', ')})` : '';
        r.append(svg('title', {}, `Row ${s.row} seat ${s.number}: wheelchair space${comp}`));
        // The wheelchair mark: a ring inside the cell, after the number (CSS colours the
        // number through the sibling right after the seat).
        group.append(svg('rect', {
          class: 'wc-ring', x: x + 0.1, y: y + 0.1, width: 0.8, height: 0.8, rx: 0.2, 'aria-hidden': 'true',
        }));
      }
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
    state.unitPx = Math.floor(w) / units;
    const rail = $('row-rail');
    rail.style.width = `${LABEL_W * state.unitPx}px`;
    rail.style.marginRight = `${-LABEL_W * state.unitPx}px`;
    $('map-inner').classList.toggle('dense', state.unitPx < 17);
    const scroller = $('map-scroll');
    if (!scroller.dataset.centred && scroller.scrollWidth > scroller.clientWidth) {
      // A hall wider than the phone: start in the middle, where most people want to sit.
      scroller.dataset.centred = '1';
      scroller.scrollLeft = (scroller.scrollWidth - scroller.clientWidth) / 2;
    }
  }

  /* A tier that only standing areas use ("standing"): not a seat colour, not a seat choice. */
  function areaOnlyTier(t) {
    return state.areas.some((a) => a.tier === t) && !state.layout.some((s) => s.tier === t);
  }

  function drawLegend(tiers) {
    const legend = $('legend');
    legend.textContent = '';
    for (const t of tiers) {
      if (areaOnlyTier(t)) continue;   // priced in the standing areas' card instead
      const price = tierPrice(t);
      const li = el('li');
      // The colour drawMap() gave the tier's seats (also for a tier with no seat in this hall).
      li.append(el('span', { class: `swatch seat-swatch available tier-${tiers.indexOf(t) % 4}`, 'aria-hidden': 'true' }));
      li.append(el('span', {}, tierName(t)));
      if (price != null) li.append(el('strong', { class: 'price' }, showMoney(price)));
      legend.append(li);
    }
    for (const [cls, word] of [['selected', 'Selected'], ['mine', 'Held for you'], ['held', 'Held'], ['booked', 'Sold'],
      ['unavailable', 'Not for sale']]) {
      const li = el('li', { class: 'legend-status', 'data-legend': cls });
      // Seats kept for a sales channel (the box office, a partner): only shown when the show keeps any.
      if (cls === 'unavailable') li.hidden = !anyUnavailable();
      li.append(el('span', { class: `swatch seat-swatch ${cls}`, 'aria-hidden': 'true' }));
      li.append(el('span', {}, word));
      legend.append(li);
    }
    if (state.layout.some((s) => s.accessible)) {
      const li = el('li', { class: 'legend-status legend-wheelchair' });
      li.append(el('span', { class: 'swatch seat-swatch available wc-swatch', 'aria-hidden': 'true' }));
      li.append(el('span', {}, 'Wheelchair space'));
      legend.append(li);
      const li2 = el('li', { class: 'legend-status' });
      li2.append(el('span', { class: 'swatch seat-swatch available companion-swatch', 'aria-hidden': 'true' }));
      li2.append(el('span', {}, 'Companion seat'));
      legend.append(li2);
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
    if (!mayShop()) {
      // A queued show sells only during the buyer's turn: nothing to select before (or after).
      if (status === 'available' || status === 'selected') say(queueBlockedText(), 'info');
      else {
        const seat = state.seatById.get(id);
        say(`Row ${seat.row} seat ${seat.number} is ${TAKEN_WORDS[status] || status}.`, 'info');
      }
      return;
    }
    if (state.phase === 'ticket') setPhase('select');
    if (status === 'selected') {
      state.selected.delete(id);
    } else if (status === 'available') {
      if (state.selected.size + placesCount() >= MAX_SELECT) {
        say(placesCount() ? `You can choose up to ${MAX_SELECT} seats and places at a time.`
          : `You can choose up to ${MAX_SELECT} seats at a time.`, 'info');
        return;
      }
      state.selected.add(id);
    } else {
      const seat = state.seatById.get(id);
      say(`Row ${seat.row} seat ${seat.number} is ${TAKEN_WORDS[status] || status}.`, 'info');
      return;
    }
    say('');
    showAlternatives([]);
    paintAll();
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
    // Scrolled sideways: the rail of row letters gets a backing, as it now lies over seats.
    const scroller = $('map-scroll');
    scroller.addEventListener('scroll', () => {
      $('map-inner').classList.toggle('scrolled', scroller.scrollLeft > 1);
    }, { passive: true });
    if (window.ResizeObserver) new ResizeObserver(sizeMap).observe($('map-scroll'));
    else window.addEventListener('resize', sizeMap);
  }

  /* ---------------------------------------------------------------- seat status */

  /* 'areas': the standing areas' free counts of the same version (absent: unchanged). */
  function applySnapshot(version, seats, areas) {
    if (state.version != null && version < state.version) return false;
    state.version = version;
    state.etag = `"${version}"`;
    for (const [id, st] of Object.entries(seats || {})) state.status.set(id, serverStatus(st));
    applyAreaFree(areas);
    afterStatusChange();
    return true;
  }

  function applyDelta(msg) {
    const from = msg.fromVersion != null ? msg.fromVersion : msg.version;
    if (state.version == null) { refreshSeats(); return; }
    if (msg.version <= state.version) return;            // already have it
    if (from > state.version + 1) { refreshSeats(); return; }  // a gap: refetch
    for (const c of msg.changes || []) if (c && typeof c.seat === 'string') state.status.set(c.seat, serverStatus(c.status));
    state.version = msg.version;
    state.etag = `"${msg.version}"`;
    applyAreaFree(msg.areas);   // {"FLOOR": 482}: the free counts after this change
    afterStatusChange();
  }

  /* A selected seat that someone else took (or that is now kept for a sales channel) is no
   * longer selectable. */
  function afterStatusChange() {
    const lost = [], kept = [];
    for (const id of state.selected) {
      const st = state.status.get(id) || 'available';
      if (st !== 'available') {
        state.selected.delete(id);
        (st === 'unavailable' ? kept : lost).push(id);
      }
    }
    paintAll();
    if (lost.length || kept.length) {
      lost.sort(seatSort);
      kept.sort(seatSort);
      say([lost.length ? takenMessage(lost) : '', kept.length ? notForSaleText(kept) + ' any more' : '']
        .filter(Boolean).join('; ') + '.', 'error');
      renderPanel();
    }
  }

  /* "Seat A1 is not for sale", "Seats A1 and A2 are not for sale". */
  function notForSaleText(ids) {
    const w = seatWord(ids);
    return w.charAt(0).toUpperCase() + w.slice(1) + (ids.length === 1 ? ' is' : ' are') + ' not for sale';
  }

  /* Bit i of a base64 bitmap (bit 0 = the most significant bit of byte 0; past the end: 0). */
  function bitmapBits(b64) {
    const bytes = atob(b64 || '');
    return (i) => (i >> 3) < bytes.length && ((bytes.charCodeAt(i >> 3) >> (7 - (i & 7))) & 1) === 1;
  }

  /* The availability resource (two bitmaps, under 1 KB for 2,000 seats, and a third,
   * "blocked", for the free seats a show keeps for a sales channel) as a status map. */
  function availabilitySeats(body) {
    const held = bitmapBits(body.held);
    const booked = bitmapBits(body.booked);
    const blocked = bitmapBits(typeof body.blocked === 'string' ? body.blocked : '');
    const seats = {};
    state.seatIdAt.forEach((id, i) => {
      if (id) seats[id] = booked(i) ? 'booked' : held(i) ? 'held' : blocked(i) ? 'unavailable' : 'available';
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
          applySnapshot(res.body.version, availabilitySeats(res.body), res.body.areas);
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
      if (msg && msg.type === 'queue') { onQueueFrame(msg); live(); return; }
      if (typeof msg.version !== 'number') return;
      if (msg.type === 'snapshot') applySnapshot(msg.version, msg.seats, msg.areas);
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

  /* ---------------------------------------------------------------- standing areas
   *
   * A show may sell places in standing areas (general admission: "FLOOR", 500 places) beside
   * its seats. The show document names them ([{id, capacity, tier}]); their free counts come
   * with the status map (the availability document and the WebSocket's snapshot:
   * {"FLOOR":{"capacity":500,"available":482}}) and with each delta ({"FLOOR":482}, the count
   * after the change); an area a frame does not name did not change. The buyer chooses a
   * number of places per area, and they go into the one hold with the seats: all or nothing.
   */

  function initAreas() {
    const list = Array.isArray(state.show && state.show.areas) ? state.show.areas : [];
    state.areas = list.filter((a) => a && typeof a.id === 'string' && /^[A-Za-z0-9_-]+$/.test(a.id));
    $('areas-card').hidden = !state.areas.length;
    const ul = $('areas');
    ul.textContent = '';
    for (const a of state.areas) ul.append(areaItem(a));
    renderAreas();
  }

  function areaOf(id) {
    return state.areas.find((a) => a.id === id) || null;
  }

  /* One area's card: name, tier and price, "N of C places free" and a stepper. The area id
   * ([A-Za-z0-9_-], checked above) is used as it is in element ids. */
  function areaItem(a) {
    const li = el('li', { class: 'area', 'data-area': a.id });
    const head = el('div', { class: 'area-head' });
    head.append(el('h3', { class: 'area-name', id: `area-name-${a.id}` }, a.id));
    const price = tierPrice(a.tier);
    head.append(el('span', { class: 'area-tier' },
      tierName(String(a.tier || '')) + (price != null ? ` · ${showMoney(price)} a place` : '')));
    li.append(head);
    li.append(el('p', { class: 'area-free', id: `area-free-${a.id}` }));
    const step = el('div', { class: 'stepper', role: 'group', 'aria-labelledby': `area-name-${a.id}` });
    const label = el('label', { for: `area-qty-${a.id}`, class: 'area-qty-label' }, 'Places');
    label.append(el('span', { class: 'sr-only' }, ` in ${a.id}`));
    const less = el('button', { type: 'button', class: 'btn step-btn area-less', 'aria-label': `One place fewer in ${a.id}`,
      'aria-controls': `area-qty-${a.id}` }, '−');
    const qty = el('input', { id: `area-qty-${a.id}`, class: 'area-qty', type: 'number', min: '0', step: '1',
      value: '0', inputmode: 'numeric', autocomplete: 'off', 'aria-describedby': `area-free-${a.id}` });
    const more = el('button', { type: 'button', class: 'btn step-btn area-more', 'aria-label': `One place more in ${a.id}`,
      'aria-controls': `area-qty-${a.id}` }, '+');
    less.addEventListener('click', () => choosePlaces(a.id, pickOf(a.id) - 1));
    more.addEventListener('click', () => choosePlaces(a.id, pickOf(a.id) + 1));
    qty.addEventListener('change', () => choosePlaces(a.id, Math.floor(Number(qty.value) || 0)));
    step.append(label, less, qty, more);
    li.append(step);
    return li;
  }

  function pickOf(id) {
    return state.areaPick.get(id) || 0;
  }

  /* Places chosen in every area together. */
  function placesCount() {
    let n = 0;
    for (const v of state.areaPick.values()) n += v;
    return n;
  }

  /* The places chosen as a hold's "areas" member ({"FLOOR": 2}), null for none. */
  function pickedAreas() {
    const out = {};
    for (const a of state.areas) if (pickOf(a.id) > 0) out[a.id] = pickOf(a.id);
    return Object.keys(out).length ? out : null;
  }

  /* The most places the buyer may choose in area 'id': what is free, and what is left of the
   * hold limit after the seats and the other areas' places. */
  function areaMax(id) {
    const free = state.areaFree.get(id);
    if (typeof free !== 'number') return 0;
    const room = MAX_SELECT - state.selected.size - (placesCount() - pickOf(id));
    return Math.max(0, Math.min(free, room));
  }

  function choosePlaces(id, n) {
    if (state.phase === 'hold' || state.busy) return;
    if (!mayShop()) { say(queueBlockedText(), 'info'); renderAreas(); return; }
    if (state.phase === 'ticket') setPhase('select');
    const max = areaMax(id);
    const want = Math.max(0, n);
    if (want > max) {
      const free = state.areaFree.get(id);
      say(typeof free === 'number' && free <= max
        ? (free === 0 ? `${id} is sold out.` : `Only ${free} place${free === 1 ? '' : 's'} left in ${id}.`)
        : `You can choose up to ${MAX_SELECT} seats and places at a time.`, 'info');
    } else {
      say('');
    }
    const v = Math.min(want, max);
    if (v > 0) state.areaPick.set(id, v);
    else state.areaPick.delete(id);
    renderPanel();
  }

  /* "FLOOR × 2, BALCONY × 1" for a hold's, a booking's or a ticket's "areas" ('' for none). */
  function placesText(areas) {
    if (!areas || typeof areas !== 'object') return '';
    return Object.entries(areas).filter(([, n]) => typeof n === 'number' && n > 0)
      .map(([id, n]) => `${id} × ${n}`).join(', ');
  }

  /* Seats and places, as the hold summary and the ticket list them. */
  function itemsText(seatIds, areas) {
    return [seatIds && seatIds.length ? seatListText(seatIds) : '', placesText(areas)].filter(Boolean).join(', ');
  }

  /* What the places cost at their areas' tiers; null when a price is unknown. */
  function placesTotal(areas) {
    let sum = 0;
    for (const [id, n] of Object.entries(areas || {})) {
      const a = areaOf(id);
      const p = a ? tierPrice(a.tier) : null;
      if (p == null) return null;
      sum += p * n;
    }
    return sum;
  }

  /* Free counts from the server: {"FLOOR":{"capacity":500,"available":482}} (status map,
   * snapshot, refusal) or {"FLOOR":482} (delta). Places chosen beyond what is now free are
   * cut back, and the buyer is told. */
  function applyAreaFree(areas) {
    if (!areas || typeof areas !== 'object' || !state.areas.length) return;
    for (const [id, v] of Object.entries(areas)) {
      const a = areaOf(id);
      if (!a) continue;
      const free = typeof v === 'number' ? v : v && typeof v.available === 'number' ? v.available : null;
      if (v && typeof v.capacity === 'number') a.capacity = v.capacity;
      if (free != null && isFinite(free)) state.areaFree.set(id, Math.max(0, free));
    }
    const cut = [];
    for (const a of state.areas) {
      const free = state.areaFree.get(a.id);
      if (typeof free === 'number' && pickOf(a.id) > free) {
        if (free > 0) state.areaPick.set(a.id, free);
        else state.areaPick.delete(a.id);
        cut.push(free === 0 ? `${a.id} just sold out` : `only ${free} place${free === 1 ? '' : 's'} left in ${a.id}`);
      }
    }
    renderAreas();
    if (cut.length) {
      const text = listWords(cut);
      say(text.charAt(0).toUpperCase() + text.slice(1) + ': your places were cut back.', 'error');
      renderPanel();
    }
  }

  function renderAreas() {
    if (!state.areas.length) return;
    const choosing = state.phase !== 'hold' && !state.busy && mayShop();
    for (const a of state.areas) {
      const li = $('areas').querySelector(`[data-area="${CSS.escape(a.id)}"]`);
      if (!li) continue;
      const free = state.areaFree.get(a.id);
      const known = typeof free === 'number';
      const cap = typeof a.capacity === 'number' ? a.capacity : null;
      const soldOut = known && free === 0;
      li.dataset.free = known ? String(free) : '';
      li.dataset.soldout = String(soldOut);
      const line = li.querySelector('.area-free');
      line.textContent = !known ? (cap != null ? `${cap.toLocaleString()} places` : '')
        : soldOut ? 'Sold out'
          : `${free.toLocaleString()} of ${(cap != null ? cap : free).toLocaleString()} place${cap === 1 ? '' : 's'} free`;
      const pick = pickOf(a.id);
      const max = areaMax(a.id);
      const qty = li.querySelector('.area-qty');
      if (document.activeElement !== qty || qty.value !== String(pick)) qty.value = String(pick);
      qty.max = String(Math.max(pick, max));
      qty.disabled = !choosing || !known || soldOut;
      li.querySelector('.area-less').disabled = qty.disabled || pick <= 0;
      li.querySelector('.area-more').disabled = qty.disabled || pick >= max;
      li.classList.toggle('picked', pick > 0);
    }
  }

  /* ---------------------------------------------------------------- the waiting room
   *
   * A queued show (its "queue" settings) sells only to admitted shoppers. The page joins the
   * queue (one place per account: a second join answers the same ticket, kept per show in
   * localStorage), shows the place and a progress bar, and follows the show's WebSocket:
   * each `queue` frame says how many have been admitted so far and whether the room is OPEN
   * or SOLD_OUT. The page works out its own place from its number (so a million waiters cost
   * the server one frame each, not a million reads), and reads its place again only when its
   * number comes up (or at the opening), to fetch the admission, and every 15 s as a safety
   * net. The admission goes with every hold as the Seatd-Admission header.
   */

  function queued() { return !!(state.show && state.show.queue); }
  /* An admission that is still good on the server's clock (the room's deadline). */
  function admissionLive() {
    const q = state.queue;
    return !!(q && q.state === 'ADMITTED' && q.admission && (!q.expiresAt || q.expiresAt > serverNow()));
  }
  function mayShop() { return !queued() || admissionLive(); }

  /* Why a seat of a queued show cannot be chosen right now, in the buyer's words. */
  function queueBlockedText() {
    const q = state.queue;
    if (state.queueBooked.length && !admissionLive()) return 'You have booked your seats for this show: your tickets are under My tickets.';
    if (!q) return 'Join the queue first: you can choose seats once it is your turn.';
    if (q.state === 'WAITING') return 'You are in the queue: you can choose seats once it is your turn.';
    if (q.state === 'SOLD_OUT') return 'Sold out: every seat of this show has been sold.';
    if (q.state === 'CLOSED') return 'Sales for this show have closed.';
    return 'Your turn has passed: join the queue again to choose seats.';
  }
  function queueKey() { return 'seatd.queue.' + state.showId; }

  function rememberTicket(ticket) {
    try { if (ticket) localStorage.setItem(queueKey(), ticket); else localStorage.removeItem(queueKey()); } catch (_) { /* private mode */ }
  }

  function storedTicket() {
    try { return localStorage.getItem(queueKey()); } catch (_) { return null; }
  }

  function applyPlace(p) {
    const before = state.queue && state.queue.state;
    state.queue = {
      ticket: p.ticket,
      state: p.state,
      position: p.position || 0,
      number: p.number || 0,
      admittedThrough: p.admittedThrough || 0,
      queueState: p.queueState,
      opensAt: p.opensAt,
      eta: typeof p.estimatedWaitSeconds === 'number' ? p.estimatedWaitSeconds : null,
      admission: p.admission || null,
      expiresAt: p.expiresAt ? Date.parse(p.expiresAt) : null,
    };
    rememberTicket(p.ticket);
    if (state.queue.state === 'ADMITTED' && before !== 'ADMITTED') {
      say('It is your turn: choose your seats.', 'success');
    }
    renderQueue();
    if (state.phase === 'select') setPhase('select');
    scheduleQueuePoll();
  }

  async function joinQueue() {
    if (!state.session) {
      openAccount({ why: 'Sign in to join the queue for this show.', then: joinQueue });
      return;
    }
    $('queue-join').disabled = true;
    const res = await authApi('POST', `/v1/shows/${encodeURIComponent(state.showId)}/queue`);
    $('queue-join').disabled = false;
    if ((res.status === 201 || res.status === 200) && res.body && res.body.ticket) {
      applyPlace(res.body);
      return;
    }
    if (res.status === 401) openAccount({ why: 'Sign in to join the queue for this show.', then: joinQueue });
    say(problemText(res, 'Could not join the queue.'), 'error');
  }

  async function fetchPlace() {
    const ticket = (state.queue && state.queue.ticket) || storedTicket();
    if (!ticket || !state.session || state.queueBusy) return;
    state.queueBusy = true;
    const res = await authApi('GET', `/v1/queue/${encodeURIComponent(ticket)}`);
    state.queueBusy = false;
    if (res.status === 200 && res.body) {
      applyPlace(res.body);
    } else if (res.status === 404) { // not this account's ticket (another signed in here)
      rememberTicket(null);
      state.queue = null;
      renderQueue();
      setPhase(state.phase);
    } else {
      scheduleQueuePoll();
    }
  }

  function scheduleQueuePoll() {
    clearTimeout(state.queueTimer);
    const q = state.queue;
    if (!q) return;
    let wait = QUEUE_POLL_MS;
    if (q.state === 'ADMITTED' && q.expiresAt) wait = Math.max(250, q.expiresAt - serverNow() + 250);
    else if (q.state !== 'WAITING' && q.state !== 'SOLD_OUT') return;
    state.queueTimer = setTimeout(() => {
      if (state.queue && state.queue.state === 'ADMITTED') renderQueue();
      fetchPlace();
    }, wait);
  }

  /* A waiting-room frame: my place follows from my number; the server is asked only when
   * my number comes up or the room opens (with a little jitter, so a crowd does not ask at
   * the same millisecond). */
  function onQueueFrame(msg) {
    if (typeof msg.admittedThrough !== 'number' || typeof msg.state !== 'string') return;
    state.queueRoom = msg;
    const q = state.queue;
    if (!q) { renderQueue(); return; }
    if (q.number) q.admittedThrough = Math.max(q.admittedThrough, msg.admittedThrough);
    if (q.state === 'WAITING' || q.state === 'SOLD_OUT' || q.state === 'CLOSED') {
      if (msg.state === 'SOLD_OUT' || msg.state === 'CLOSED') {
        q.state = msg.state;
        q.queueState = msg.state;
      } else if (msg.state === 'OPEN') {
        if (q.state !== 'WAITING') q.state = 'WAITING';
        const opening = q.queueState === 'PENDING' || !q.number;
        q.queueState = 'OPEN';
        if (opening || msg.admittedThrough >= q.number) {
          setTimeout(fetchPlace, opening ? Math.random() * 2000 : Math.random() * 300);
        }
      }
    }
    renderQueue();
  }

  function mmss(ms) {
    const s = Math.max(0, Math.ceil(ms / 1000));
    return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
  }

  function renderQueue() {
    const panel = $('queue-panel');
    clearTimeout(state.queueTick);
    if (!queued()) { panel.hidden = true; return; }
    panel.hidden = false;
    const q = state.queue;
    const opens = state.show.queue.opensAt;
    let text = '', detail = '', progress = null, join = null, shown = q ? q.state : 'NONE';
    // What the buyer did with their turn comes first: seats held or bought are theirs whatever
    // the admission does next (it lapses after admissionSeconds, bought or not), so neither a
    // countdown nor "your turn has passed" belongs beside them.
    if (state.phase === 'hold' && state.hold) {
      shown = 'HOLDING';
      text = 'Your seats are held.';
      detail = 'Pay before the hold\'s own timer below runs out; the waiting room\'s time limit no longer applies to them.';
    } else if (state.phase === 'ticket' || (state.queueBooked.length && !admissionLive())) {
      shown = 'BOOKED';
      text = state.queueBooked.length
        ? `You booked ${seatListText(state.queueBooked)} for this show.`
        : 'You booked your seats for this show.';
      detail = admissionLive()
        ? 'Your tickets are under My tickets. Your turn in the waiting room is still on: "Pick more seats" to add seats.'
        : 'Your tickets are under My tickets.';
    } else if (!q) {
      text = 'Tickets for this show are sold through a waiting room.';
      detail = Date.parse(opens) > serverNow()
        ? `The sale opens ${formatWhen(opens)}. Everyone who joins before then gets a random place in line at the opening: there is no need to rush.`
        : 'Join the queue; you will be let in as soon as seats are there for you.';
      join = 'Join the queue';
    } else if (q.state === 'WAITING' && (q.queueState === 'PENDING' || !q.number)) {
      text = `You are in the queue. The sale opens ${formatWhen(q.opensAt || opens)}.`;
      detail = 'Everyone who joins before the opening gets a random place in line at the opening; arriving earlier makes no difference.';
    } else if (q.state === 'WAITING') {
      const ahead = Math.max(0, q.number - q.admittedThrough - 1);
      text = ahead ? `You are number ${q.number.toLocaleString()} in line: ${ahead.toLocaleString()} ahead of you.` : 'You are next.';
      progress = q.number ? Math.min(1, q.admittedThrough / q.number) : 0;
      detail = q.eta != null && q.eta > 0 ? `About ${q.eta < 90 ? q.eta + ' seconds' : Math.round(q.eta / 60) + ' minutes'} to go. Keep this page open.` : 'Keep this page open: it tells you when it is your turn.';
    } else if (q.state === 'ADMITTED' && admissionLive()) {
      text = `It is your turn! Choose your seats within ${mmss((q.expiresAt || 0) - serverNow())}.`;
      progress = 1;
      detail = 'Hold seats before the time is up; once held, you have the hold\'s own time to pay.';
      state.queueTick = setTimeout(renderQueue, 1000);
    } else if (q.state === 'ADMITTED') {
      // The deadline passed on our clock; the server's word (EXPIRED) is on its way.
      shown = 'EXPIRED';
      text = 'Your turn has ended.';
      detail = 'Checking your place…';
    } else if (q.state === 'SOLD_OUT') {
      text = 'Sold out: every seat of this show has been sold.';
      detail = 'Nobody further in line will be let in. If seats come back, the queue moves on and this page tells you.';
    } else if (q.state === 'EXPIRED' && !state.queueBookedKnown) {
      text = 'Your turn has ended.';
      detail = 'Checking your bookings…';
    } else if (q.state === 'EXPIRED') {
      text = 'Your turn has passed.';
      detail = 'Join again for a place at the back of the line.';
      join = 'Join again';
    } else if (q.state === 'CLOSED') {
      text = 'Sales for this show have closed.';
    }
    panel.dataset.state = shown;
    $('queue-text').textContent = text;
    $('queue-detail').textContent = detail;
    const bar = $('queue-progress');
    bar.hidden = progress == null;
    if (progress != null) bar.value = progress;
    const btn = $('queue-join');
    btn.hidden = !join;
    if (join) btn.textContent = join;
    // After a purchase, more seats only while the turn lasts.
    $('again-btn').hidden = !mayShop();
    $('queue-tickets').hidden = !(shown === 'BOOKED' && state.phase !== 'ticket');
    lockMap();
  }

  /* Seats of a queued show can be chosen only during the buyer's turn. */
  function lockMap() {
    const locked = !mayShop();
    $('map').classList.toggle('locked', locked);
    if (locked === mapLocked && !(locked && (state.selected.size || state.areaPick.size))) return;
    mapLocked = locked;
    if (locked) {
      state.selected.clear();
      state.areaPick.clear();
    }
    paintAll();
    renderPanel();
  }

  /* The seats this buyer booked on this queued show before (another visit, another tab). */
  async function loadQueueBookings() {
    if (!queued() || !state.session) return;
    const res = await authApi('GET', '/v1/me/bookings?limit=50');
    state.queueBookedKnown = true;   // an error too: the buyer is not kept waiting for it
    if (res.status !== 200) { renderQueue(); return; }
    const seats = new Set(state.queueBooked);
    for (const b of listOf(res.body, 'bookings')) {
      if (b && String(b.showId) === String(state.showId) && b.status === 'CONFIRMED' && Array.isArray(b.seatIds)) {
        for (const id of b.seatIds) seats.add(id);
      }
    }
    state.queueBooked = [...seats];
    renderQueue();
    if (state.phase === 'select') setPhase('select');
  }

  function initQueue() {
    if (!queued()) return;
    $('queue-join').addEventListener('click', joinQueue);
    renderQueue();
    if (state.session && storedTicket()) fetchPlace();
    loadQueueBookings();
  }

  /* ---------------------------------------------------------------- the panel */

  function setPhase(phase) {
    state.phase = phase;
    $('panel-select').hidden = phase !== 'select' || !mayShop();
    $('panel-hold').hidden = phase !== 'hold';
    $('panel-ticket').hidden = phase !== 'ticket';
    renderQueue();
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
      const places = pickedAreas();
      const nPlaces = placesCount();
      const any = sel.length > 0 || nPlaces > 0;
      $('selection-text').classList.toggle('hint', !any);
      const seatsPart = sel.length ? `${sel.length} seat${sel.length === 1 ? '' : 's'}: ${seatListText(sel)}` : '';
      $('selection-text').textContent = any
        ? [seatsPart, placesText(places)].filter(Boolean).join('; ')
        : `Tap available seats to select them (up to ${MAX_SELECT})` +
          (state.areas.length ? ', or choose standing places.' : '.');
      const ts = totalOf(sel), tp = placesTotal(places);
      $('selection-total').textContent = any && ts != null && tp != null ? `Total ${showMoney(ts + tp)}` : '';
      $('hold-btn').disabled = !any || state.busy;
      $('clear-btn').disabled = !any || state.busy;
      $('hold-btn').textContent = state.busy ? 'Holding…' : holdButtonText(sel.length, nPlaces);
      $('best-btn').disabled = state.busy;
      const spaces = sel.map((id) => state.seatById.get(id)).filter((x) => x && x.accessible).sort((a, b) => seatSort(a.id, b.id));
      const ct = $('companions-text');
      ct.hidden = !spaces.length;
      ct.textContent = spaces.map((x) => {
        const c = (x.companions || []).filter((id) => state.seatById.has(id));
        return `${x.row}${x.number} is a wheelchair space` +
          (c.length ? `; its companion seat${c.length === 1 ? '' : 's'}: ${seatListText(c)}.` : '.');
      }).join(' ');
    } else if (state.phase === 'hold' && state.hold) {
      $('hold-seats').textContent = itemsText(state.hold.seatIds, state.hold.areas);
      const ts = totalOf(state.hold.seatIds), tp = placesTotal(state.hold.areas);
      $('hold-total').textContent = ts != null && tp != null ? `Total ${showMoney(ts + tp)}` : '';
      $('hold-split').hidden = !state.hold.split;
      $('pay-btn').disabled = state.busy;
      $('release-btn').disabled = state.busy;
      const legs = state.hold.group ? state.hold.legs : null;
      $('hold-legs').hidden = !legs;
      $('hold-charge-note').hidden = !legs;
      if (legs) {
        renderLegs(legs);
        const sum = groupTotal(legs);
        $('hold-total').textContent = sum != null ? `Total ${showMoney(sum)} for ${legs.length} show${legs.length === 1 ? '' : 's'}` : '';
      }
      $('pay-btn').textContent = state.paying ? 'Paying…' : legs ? 'Pay for all' : 'Pay';
    }
    renderAreas();   // the steppers follow the phase, the busy flag and the room left
  }

  /* "Hold seats", "Hold 3 seats", "Hold 2 places", "Hold 1 seat and 2 places". */
  function holdButtonText(seats, places) {
    if (!places) return seats > 1 ? `Hold ${seats} seats` : 'Hold seats';
    const p = `${places} place${places === 1 ? '' : 's'}`;
    return seats ? `Hold ${seats} seat${seats === 1 ? '' : 's'} and ${p}` : `Hold ${p}`;
  }

  /* ---------------------------------------------------------------- hold */

  /* "C7–C9" for adjacent seats of one row, else the plain list. */
  function blockText(ids) {
    const seats = ids.map((id) => state.seatById.get(id));
    if (seats.some((x) => !x)) return listWords(ids.slice());
    seats.sort((a, b) => a.number - b.number);
    const oneRow = seats.every((x) => x.row === seats[0].row);
    const consecutive = seats.every((x, i) => i === 0 || x.number === seats[i - 1].number + 1);
    if (seats.length > 1 && oneRow && consecutive) {
      const f = seats[0], l = seats[seats.length - 1];
      return `${f.row}${f.number}–${l.row}${l.number}`;
    }
    return seatListText(ids);
  }

  function seatWord(ids) {
    return (ids.length === 1 ? 'seat ' : 'seats ') + listWords(ids.slice().sort(seatSort).map((id) => {
      const s = state.seatById.get(id);
      return s ? `${s.row}${s.number}` : id;
    }));
  }

  /* The blocks the server proposed, as one-tap buttons (empty: none). */
  function showAlternatives(blocks) {
    const box = $('alternatives');
    box.textContent = '';
    for (const ids of blocks) {
      const b = el('button', { type: 'button', class: 'btn btn-alt', 'data-seats': ids.join(',') },
        `Take ${blockText(ids)} instead`);
      b.addEventListener('click', () => takeAlternative(ids));
      box.append(b);
    }
    box.hidden = !blocks.length;
    if (blocks.length) {   // proposals wait for the buyer
      clearTimeout(notice.timer);
      notice.faded = false;
    }
    updateNotice();
  }

  function validBlocks(list) {
    if (!Array.isArray(list)) return [];
    return list.filter((ids) => Array.isArray(ids) && ids.length && ids.every((id) => state.seatById.has(id)));
  }

  /* A named hold of the seats selected. */
  async function hold() {
    const seatIds = [...state.selected].sort(seatSort);
    const areas = pickedAreas();
    if ((!seatIds.length && !areas) || state.busy) return;
    if (!state.session) {
      openAccount({ why: 'Sign in or create an account to hold these seats. Your selection stays.', then: hold });
      return;
    }
    // seatIds is left out when only places are held.
    const body = seatIds.length ? { seatIds } : {};
    if (areas) body.areas = areas;
    if (state.group) {   // the same seats and places in every show of the group, in one call
      await submitGroupHold(body, seatIds);
      return;
    }
    await submitHold(body, seatIds.join(',') + (areas ? ';' + JSON.stringify(areas) : ''), seatIds);
  }

  /* Best available: the server picks the block, inside the one atomic hold. */
  async function holdBest() {
    if (state.busy || state.phase === 'hold') return;
    const best = { count: Math.max(1, Math.min(MAX_SELECT, Number($('best-count').value) || 1)) };
    if ($('best-tier').value) best.tier = $('best-tier').value;
    if ($('best-accessible').checked) best.accessible = true;
    if (!state.session) {
      openAccount({ why: 'Sign in or create an account to hold seats.', then: holdBest });
      return;
    }
    // The places chosen go into the same hold as the seats the server picks.
    const areas = pickedAreas();
    await submitHold(areas ? { best, areas } : { best }, 'best:' + JSON.stringify(best) + (areas ? ';' + JSON.stringify(areas) : ''), null);
  }

  /* One tap on a proposed block: a named hold of exactly those seats. */
  async function takeAlternative(ids) {
    if (state.busy || state.phase === 'hold') return;
    if (state.phase === 'ticket') setPhase('select');
    state.selected.clear();
    for (const id of ids) state.selected.add(id);
    paintAll();
    renderPanel();
    await hold();
  }

  function initBestForm() {
    const count = $('best-count');
    count.textContent = '';
    for (let n = 1; n <= MAX_SELECT; n++) count.append(el('option', { value: String(n) }, String(n)));
    count.value = '2';
    const tier = $('best-tier');
    for (const t of Object.keys((state.show && state.show.priceTiers) || {})) {
      if (areaOnlyTier(t)) continue;   // no seat to pick in it
      const p = tierPrice(t);
      tier.append(el('option', { value: t }, tierName(t) + (p != null ? ` (${showMoney(p)})` : '')));
    }
    $('best-form').addEventListener('submit', (ev) => { ev.preventDefault(); holdBest(); });
  }

  async function submitHold(body, sig, named) {
    if (!state.holdKey || state.holdKey.sig !== sig) state.holdKey = { sig, key: uuid() };
    state.busy = true;
    renderPanel();
    say('');
    showAlternatives([]);
    const admission = queued() && state.queue && state.queue.admission;
    const res = await authApi('POST', `/v1/shows/${encodeURIComponent(state.showId)}/holds`,
      Object.assign({}, body, { idempotencyKey: state.holdKey.key }),
      admission ? { 'Seatd-Admission': admission } : undefined);
    state.busy = false;
    if (res.status !== 0) state.holdKey = null;   // a definite answer: the next try is new

    if (res.status === 201 && res.body && res.body.holdId) {
      const b = res.body;
      const ids = Array.isArray(b.seatIds) && b.seatIds.length ? b.seatIds : (named || []);
      const places = b.areas && typeof b.areas === 'object' ? b.areas : (body.areas || null);
      state.hold = { holdId: b.holdId, seatIds: ids, areas: places, expiresAt: Date.parse(b.expiresAt), split: b.split === true };
      for (const id of ids) state.status.set(id, 'held');
      state.selected.clear();
      state.areaPick.clear();
      paintAll();
      // The map and the areas' free counts as of our hold.
      if (typeof b.version === 'number') refreshSeats(false, b.version);
      setPhase('hold');
      startCountdown();
      say(`Held ${itemsText(ids, places)} for you.` +
        (state.hold.split ? ' These seats are not side by side.' : '') +
        ' Pay before the timer runs out.', 'success');
      // On a phone the panel sits below the map: bring the countdown and the Pay button up.
      if (window.matchMedia && matchMedia('(max-width: 800px)').matches) {
        $('panel-hold').scrollIntoView({ block: 'nearest', behavior: 'smooth' });
      }
      return;
    }
    const p = (res.status === 409 && res.body) || {};
    const type = String(p.type || '').split('/').pop();
    const alts = validBlocks(p.alternatives);
    if (res.status === 409 && Array.isArray(p.conflictingSeats) && p.conflictingSeats.length) {
      const taken = p.conflictingSeats.slice().sort(seatSort);
      for (const id of taken) {
        state.selected.delete(id);
        state.status.set(id, 'held');
      }
      paintAll();
      renderPanel();
      say(takenMessage(taken) + (alts.length
        ? `. Take ${alts.length === 1 ? 'these seats' : 'one of these blocks'} instead, or choose other seats.`
        : state.selected.size ? '. Your other seats are still selected.' : '. Please choose other seats.'), 'error');
      showAlternatives(alts);
      refreshSeats(false);
      return;
    }
    if (res.status === 409 && type === 'seat-not-for-sale') {
      // Kept for a sales channel this buyer's token does not name: not for sale to them.
      const kept = (Array.isArray(p.unavailableSeats) ? p.unavailableSeats : []).filter((id) => state.seatById.has(id)).sort(seatSort);
      for (const id of kept) {
        state.selected.delete(id);
        state.status.set(id, 'unavailable');
      }
      paintAll();
      renderPanel();
      say((kept.length ? notForSaleText(kept) : 'Some of these seats are not for sale') + '. Nothing was held' +
        (state.selected.size ? '; your other seats are still selected.' : '. Please choose other seats.'), 'error');
      refreshSeats(false);
      return;
    }
    if (res.status === 409 && type === 'orphan-seat') {
      const orphans = validBlocks([p.orphanSeats])[0] || [];
      renderPanel();
      say(`That would leave ${orphans.length ? seatWord(orphans) : 'a single seat'} on ${orphans.length > 1 ? 'their' : 'its'} own — ` +
        `pick a different block${alts.length ? ` or take ${blockText(alts[0])}` : ''}.`, 'error');
      showAlternatives(alts);
      refreshSeats(false);
      return;
    }
    if (res.status === 409 && type === 'area-sold-out') {
      // Nothing was held. The refusal carries every area's free count: show them, and cut
      // the places chosen back to what is left.
      const area = typeof p.area === 'string' ? p.area : '';
      const left = typeof p.available === 'number' ? p.available
        : (p.areas && p.areas[area] && typeof p.areas[area].available === 'number' ? p.areas[area].available : null);
      const asked = (body.areas && body.areas[area]) || 0;
      if (area && left != null) applyAreaFree(Object.assign({ [area]: left }, p.areas || {}));
      else applyAreaFree(p.areas);
      renderPanel();
      say(left == null ? `There are not that many places left in ${area || 'this area'}. Nothing was held.`
        : left === 0 ? `${area} is sold out: no places left. Nothing was held.`
          : `Only ${left} place${left === 1 ? '' : 's'} left in ${area}` + (asked ? ` (you asked for ${asked})` : '') +
            `. Nothing was held; your ${area} places are now ${left}: hold again to take ${left === 1 ? 'it' : 'them'}.`, 'error');
      refreshSeats(false);
      return;
    }
    if (res.status === 400 && /\/unknown-area$/.test(String((res.body && res.body.type) || ''))) {
      renderPanel();
      say(sentence(problemText(res, 'a standing area is not sold for this show')) +
        ' Nothing was held. Reload the page to see what is on sale.', 'error');
      return;
    }
    if (res.status === 400) {
      renderPanel();
      say('The server refused this hold: ' + sentence(problemText(res, 'the request was not valid'), true) +
        ' Nothing was held.', 'error');
      return;
    }
    if (res.status === 409 && type === 'no-block-available') {
      const best = body.best || {};
      const n = best.count || (named ? named.length : 0);
      renderPanel();
      say(`Sorry, no ${n} seat${n === 1 ? '' : 's'} together ${n === 1 ? 'is' : 'are'} left` +
        (best.tier ? ` in ${best.tier}` : '') + (best.accessible ? ' with a wheelchair space' : '') +
        `. Try fewer seats${best.tier ? ' or another tier' : ''}, or pick seats on the map.`, 'error');
      refreshSeats(false);
      return;
    }
    renderPanel();
    if (res.status === 403 && String((res.body && res.body.type) || '').endsWith('/queue-required')) {
      say('Your turn in the waiting room has ended, so these seats cannot be held. Your place is shown above.', 'error');
      fetchPlace();
      return;
    }
    if (res.status === 422 && /\/seat-limit$/.test(String((res.body && res.body.type) || ''))) {
      say(seatLimitText(res.body), 'error');
      return;
    }
    if (res.status === 401) {
      openAccount({ why: 'Your session has ended. Sign in again to hold these seats.', then: named ? hold : holdBest });
    }
    say(problemText(res, 'Could not hold these seats.'), 'error');
    if (res.status === 409) refreshSeats(false);
  }

  /* "you have 10 seats of this show; 2 more would pass the limit of 10", in the buyer's words. */
  function seatLimitText(p) {
    const m = /have (\d+) seats?\D+(\d+) more\D+limit of (\d+)/.exec(String((p && p.detail) || ''));
    if (!m) return 'You have reached the most seats one buyer may have for this show (held and booked together).';
    const [have, max] = [Number(m[1]), Number(m[3])];
    if (have >= max) {
      return `You already have ${have} seats for this show (held or booked): that is the most one buyer may have.`;
    }
    const left = max - have;
    return `You already have ${have} seats for this show (held or booked); one buyer may have ${max}, ` +
      `so you can add ${left} more.`;
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
   * moment to publish the change, so look a few times (cheap conditional GETs). 'minVersion'
   * (a release's answer) makes the first look at least that new: places given back to a
   * standing area show nowhere else on the map. */
  function settleSeats(ids, minVersion) {
    let n = 0;
    const again = async () => {
      await refreshSeats(n > 0, n === 0 && typeof minVersion === 'number' ? minVersion : undefined);
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
    const res = await authApi('DELETE', `/v1/holds/${encodeURIComponent(h.holdId)}`);
    state.busy = false;
    if (res.status === 200 || res.status === 204 || res.status === 404 || res.status === 410) {
      clearInterval(state.countdownTimer);
      state.hold = null;
      if (res.status === 200 || res.status === 204) for (const id of h.seatIds) state.status.set(id, 'available');
      setPhase('select');
      paintAll();
      say(res.status === 404 || res.status === 410 ? 'That hold had already ended.'
        : h.group ? 'Seats released in every show of the group.' : 'Seats released.', 'info');
      settleSeats(h.seatIds, res.body && res.body.version);
      return;
    }
    renderPanel();
    say(problemText(res, 'Could not release the seats.'), 'error');
    if (res.status === 401) openAccount({ why: 'Your session has ended. Sign in again to release your seats.' });
  }

  /* ---------------------------------------------------------------- pay */

  async function pay() {
    if (!state.hold || state.busy) return;
    if (state.hold.group) { await payAll(); return; }
    const h = state.hold;
    state.busy = true;
    state.paying = true;
    renderPanel();
    say('Paying…', 'info', { persist: true });
    const res = await authApi('POST', '/v1/bookings', { holdId: h.holdId, paymentMethod: $('card-select').value });
    state.paying = false;
    state.busy = false;

    if (res.status === 201 && res.body && res.body.status === 'CONFIRMED') {
      await confirmed(res.body);
      return;
    }
    if (res.status === 202 && res.body && res.body.bookingId) {
      say('Payment pending: waiting for the card issuer…', 'info', { persist: true });
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
    if (res.status === 401) {
      say('Your session has ended. Sign in again to pay: your seats stay held until the timer runs out.', 'error');
      openAccount({ why: 'Sign in again to pay for the seats you hold.', then: pay });
      return;
    }
    say(problemText(res, 'The payment did not go through.'), 'error');
    if (res.status === 404 || res.status === 409 || res.status === 410) refreshHold(h.holdId);
    else tick();
  }

  /* The hold may have changed on the server (a decline puts it back to HELD, maybe with a new
   * deadline; a late payment may have let it lapse). */
  async function refreshHold(holdId) {
    const res = await authApi('GET', `/v1/holds/${encodeURIComponent(holdId)}`);
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
      const res = await authApi('GET', `/v1/bookings/${encodeURIComponent(bookingId)}`);
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
    say(`Payment still pending. Your booking reference is ${bookingId}; check back in a minute.`, 'info', { persist: true });
  }

  async function confirmed(booking, full) {
    clearInterval(state.countdownTimer);
    let b = booking;
    if (!full) {
      // The ticket resource may carry more (a QR code, a ticket token).
      const res = await authApi('GET', `/v1/bookings/${encodeURIComponent(booking.bookingId)}`);
      if (res.status === 200 && res.body) b = Object.assign({}, booking, res.body);
    }
    const seats = Array.isArray(b.seatIds) && b.seatIds.length ? b.seatIds : (state.hold ? state.hold.seatIds : []);
    for (const id of seats) {
      state.myBooked.add(id);
      state.status.set(id, 'booked');
      if (queued() && !state.queueBooked.includes(id)) state.queueBooked.push(id);
    }
    if (!(b.areas && typeof b.areas === 'object') && state.hold && state.hold.areas) b = Object.assign({}, b, { areas: state.hold.areas });
    state.hold = null;
    paintAll();
    renderTicket(b, seats);
    setPhase('ticket');
    say('Booked! Enjoy the show.', 'success');
  }

  function renderTicket(b, seats) {
    const t = $('ticket');
    t.hidden = false;
    $('group-tickets').hidden = true;
    t.textContent = '';
    t.append(...ticketParts(b, state.show, seats.length ? seatListText(seats) : ''));
  }

  /* The ticket's content: title, time, seats, places, amount, booking id, status, QR, ticket code. */
  function ticketParts(b, show, seatsText) {
    const parts = [];
    parts.push(el('p', { class: 'ticket-title' }, (show && show.title) || ''));
    if (show && show.startsAt) parts.push(el('p', { class: 'muted' }, formatWhen(show.startsAt)));
    const dl = el('dl');
    const row = (k, v, cls) => {
      dl.append(el('dt', {}, k));
      dl.append(el('dd', cls ? { class: cls } : {}, v));
    };
    const places = placesText(b.areas);
    if (seatsText || !places) row('Seats', seatsText, 'ticket-seats');
    if (places) row('Places', places, 'ticket-places');   // standing areas: "FLOOR × 2"
    if (typeof b.amount === 'number') row('Paid', money(b.amount, b.currency || showCurrency(show)), 'ticket-amount');
    row('Booking', b.bookingId || '', 'ticket-id');
    row('Status', STATUS_TEXT[b.status] || b.status || '', 'ticket-status');
    parts.push(dl);
    if (typeof b.qr === 'string' && b.qr) {
      const src = b.qr.startsWith('data:') ? b.qr
        : 'data:image/svg+xml;charset=utf-8,' + encodeURIComponent(b.qr);
      // As an image, never as markup: nothing in it can run.
      parts.push(el('img', { class: 'qr', src, alt: 'Ticket QR code' }));
    }
    if (typeof b.ticketToken === 'string' && b.ticketToken) {
      parts.push(el('p', { class: 'muted' }, 'Ticket code'));
      parts.push(el('code', { class: 'ticket-token' }, b.ticketToken));
    }
    return parts;
  }

  /* A live hold of this buyer on this show (made in another tab, or before a reload): pick it up
   * again, countdown and all. */
  async function resumeHold() {
    // A group hold is one hold per show: My tickets lists them, each paid there on its own.
    if (!state.session || state.hold || state.phase !== 'select' || !state.showId || state.group) return;
    const res = await authApi('GET', '/v1/me/holds');
    if (res.status !== 200 || state.hold || state.phase !== 'select') return;
    const h = listOf(res.body, 'holds').find((x) => x && x.holdId && String(x.showId) === String(state.showId) &&
      x.status === 'HELD' && Date.parse(x.expiresAt) > serverNow() &&
      (Array.isArray(x.seatIds) || (x.areas && typeof x.areas === 'object')));
    if (!h) return;
    const seatIds = Array.isArray(h.seatIds) ? h.seatIds : [];
    const areas = h.areas && typeof h.areas === 'object' ? h.areas : null;
    state.hold = { holdId: h.holdId, seatIds, areas, expiresAt: Date.parse(h.expiresAt) };
    for (const id of seatIds) state.selected.delete(id);
    state.areaPick.clear();
    paintAll();
    setPhase('hold');
    startCountdown();
    say(`You still hold ${itemsText(seatIds, areas)}. Pay before the timer runs out.`, 'info');
  }

  /* ---------------------------------------------------------------- a group of shows
   *
   * ?group=<id>: shows sold together (a season, a festival pass). The page reads the group
   * (GET /v1/groups/{id}: title, showIds), lists its shows, draws the map of the first (or of
   * ?show=), and its Hold button holds the seats and places chosen in EVERY show of the group
   * with one POST /v1/groups/{id}/holds: all or nothing, decided in one step on the server. A
   * refusal names the show that refused, and nothing is held anywhere. The answer is one hold
   * per show under one group hold id (released whole by DELETE /v1/holds/{id}); every
   * show's hold is booked with the others in ONE payment ("Pay for all": POST /v1/bookings with
   * the group hold's id, one charge for the sum), each show's booking then its own ticket.
   */

  async function showGroup(gid, wanted) {
    state.view = 'picker';
    $('picker').hidden = false;
    const res = await api('GET', `/v1/groups/${encodeURIComponent(gid)}`);
    const ids = res.status === 200 && res.body && Array.isArray(res.body.showIds)
      ? res.body.showIds.filter((x) => typeof x === 'string' || typeof x === 'number').map(String) : [];
    if (!ids.length) {
      fatal(res.status === 404 ? `There is no group of shows ${gid}.`
        : res.status === 200 ? 'This group has no shows.' : problemText(res, 'Could not load this group of shows.'));
      return;
    }
    state.group = { id: String(res.body.id || gid), title: String(res.body.title || ''), showIds: ids, shows: new Map() };
    const showId = wanted && ids.includes(wanted) ? wanted : ids[0];
    renderGroup(showId);
    await showPicker(showId);
    if (wanted && !ids.includes(wanted)) say(`Show ${wanted} is not part of this group: here is show ${showId}.`, 'info');
  }

  function renderGroup(current) {
    const g = state.group;
    $('group-card').hidden = false;
    $('group-title').textContent = g.title || `Group ${g.id}`;
    const ul = $('group-shows');
    ul.textContent = '';
    for (const id of g.showIds) {
      const li = el('li', { 'data-show-id': id });
      const a = el('a', { href: `/?group=${encodeURIComponent(g.id)}&show=${encodeURIComponent(id)}` });
      if (id === current) a.setAttribute('aria-current', 'page');
      a.append(el('span', { class: 'group-show-title' }, `Show ${id}`));
      a.append(el('span', { class: 'muted group-show-when' }));
      li.append(a);
      ul.append(li);
      showInfo(id).then((show) => {
        if (!show) return;
        g.shows.set(id, show);
        a.querySelector('.group-show-title').textContent = show.title || `Show ${id}`;
        a.querySelector('.group-show-when').textContent = formatWhen(show.startsAt);
        if (state.phase === 'hold') renderPanel();
      });
    }
  }

  /* "show 16427 (Second night, Sat 12 Dec 2026, 20:00)" once its document is read, else "show 16427". */
  function showLabel(id) {
    const show = state.group && state.group.shows.get(String(id));
    const extra = show ? [show.title, formatWhen(show.startsAt)].filter(Boolean).join(', ') : '';
    return `show ${id}` + (extra ? ` (${extra})` : '');
  }

  function seatNames(ids) {
    return ids.slice().sort(seatSort).map((id) => {
      const s = state.seatById.get(id);
      return s ? `${s.row}${s.number}` : id;
    });
  }

  /* What a group hold costs: each show at its own prices (the seats' tiers from this map's
   * layout: a group's shows share their seats); null while a price is unknown. */
  function groupTotal(legs) {
    let sum = 0;
    for (const leg of legs) {
      const show = String(leg.showId) === String(state.showId) ? state.show : state.group.shows.get(leg.showId);
      const tiers = (show && show.priceTiers) || null;
      if (!tiers) return null;
      for (const id of leg.seatIds) {
        const s = state.seatById.get(id);
        if (!s || typeof tiers[s.tier] !== 'number') return null;
        sum += tiers[s.tier];
      }
      for (const [aid, n] of Object.entries(leg.areas || {})) {
        const a = ((show && show.areas) || []).find((x) => x && x.id === aid);
        if (!a || typeof tiers[a.tier] !== 'number') return null;
        sum += tiers[a.tier] * n;
      }
    }
    return sum;
  }

  function renderLegs(legs) {
    const ul = $('hold-legs');
    ul.textContent = '';
    for (const leg of legs) {
      const b = leg.booking;
      const li = el('li', { 'data-show-id': leg.showId, 'data-hold-id': leg.holdId, 'data-status': b ? 'CONFIRMED' : 'HELD' });
      const show = state.group.shows.get(leg.showId);
      li.append(el('p', { class: 'leg-title' }, (show && show.title) || `Show ${leg.showId}`));
      li.append(el('p', { class: 'leg-facts' }, [`Show ${leg.showId}`, show ? formatWhen(show.startsAt) : ''].filter(Boolean).join(' · ')));
      li.append(el('p', { class: 'leg-facts' }, itemsText(leg.seatIds, leg.areas) +
        (isNaN(leg.expiresAt) ? '' : ` · held until ${new Date(leg.expiresAt - state.skewMs).toLocaleTimeString()}`)));
      li.append(el('p', { class: 'leg-facts leg-state' }, b ? `Paid: booking ${b.bookingId}` : `Hold ${leg.holdId}`));
      ul.append(li);
    }
  }

  async function submitGroupHold(body, named) {
    state.busy = true;
    renderPanel();
    say('');
    showAlternatives([]);
    const res = await authApi('POST', `/v1/groups/${encodeURIComponent(state.group.id)}/holds`, body);
    state.busy = false;

    if (res.status === 201 && res.body && res.body.holdId && Array.isArray(res.body.holds)) {
      const b = res.body;
      const legs = b.holds.filter((h) => h && typeof h.holdId === 'string' && h.showId != null).map((h) => ({
        showId: String(h.showId),
        holdId: h.holdId,
        seatIds: Array.isArray(h.seatIds) ? h.seatIds : named,
        areas: h.areas && typeof h.areas === 'object' ? h.areas : (body.areas || null),
        expiresAt: Date.parse(h.expiresAt),
        version: h.version,
        booking: null,
      }));
      const here = legs.find((l) => l.showId === String(state.showId));
      const ids = here ? here.seatIds : named;
      const places = here ? here.areas : (body.areas || null);
      const times = legs.map((l) => l.expiresAt).filter((t) => !isNaN(t));
      let exp = Date.parse(b.expiresAt);
      if (isNaN(exp)) exp = times.length ? Math.min(...times) : serverNow() + 60000;
      state.hold = { holdId: b.holdId, group: true, legs, seatIds: ids, areas: places, expiresAt: exp };
      for (const id of ids) state.status.set(id, 'held');
      state.selected.clear();
      state.areaPick.clear();
      paintAll();
      if (here && typeof here.version === 'number') refreshSeats(false, here.version);
      setPhase('hold');
      startCountdown();
      say(`Held ${itemsText(ids, places)} for you in ${legs.length} show${legs.length === 1 ? '' : 's'}. ` +
        'Pay for all in one payment before the timer runs out (it shows the earliest expiry).', 'success');
      if (window.matchMedia && matchMedia('(max-width: 800px)').matches) {
        $('panel-hold').scrollIntoView({ block: 'nearest', behavior: 'smooth' });
      }
      return;
    }

    const p = res.body || {};
    const type = String(p.type || '').split('/').pop();
    const where = p.showId != null ? String(p.showId) : null;
    const here = (sid) => sid != null && String(sid) === String(state.showId);
    const nothing = ': nothing was held in any show.';
    if (res.status === 409 && type === 'seat-conflict') {
      let conflicts = p.conflicts && typeof p.conflicts === 'object' ? p.conflicts : {};
      if (!Object.keys(conflicts).length && where && Array.isArray(p.conflictingSeats)) conflicts = { [where]: p.conflictingSeats };
      const parts = [];
      for (const [sid, list] of Object.entries(conflicts)) {
        const ids = (Array.isArray(list) ? list : []).filter((x) => typeof x === 'string');
        if (!ids.length) continue;
        parts.push(`${listWords(seatNames(ids))} ${ids.length === 1 ? 'is' : 'are'} taken in ${showLabel(sid)}`);
        for (const id of ids) {
          state.selected.delete(id);
          if (here(sid)) state.status.set(id, 'held');
        }
      }
      paintAll();
      renderPanel();
      say((parts.length ? parts.join('; ') : `Seats are taken${where ? ' in ' + showLabel(where) : ''}`) + nothing +
        (state.selected.size ? ' Your other seats are still selected.' : ' Please choose other seats.'), 'error');
      refreshSeats(false);
      return;
    }
    if (res.status === 409 && type === 'seat-not-for-sale') {
      const kept = (Array.isArray(p.unavailableSeats) ? p.unavailableSeats : []).filter((x) => typeof x === 'string');
      for (const id of kept) {
        state.selected.delete(id);
        if (here(where)) state.status.set(id, 'unavailable');
      }
      paintAll();
      renderPanel();
      say((kept.length ? notForSaleText(kept) : 'Some of these seats are not for sale') +
        (where ? ` in ${showLabel(where)}` : '') + nothing, 'error');
      refreshSeats(false);
      return;
    }
    if (res.status === 409 && type === 'area-sold-out') {
      const area = typeof p.area === 'string' ? p.area : 'a standing area';
      const left = typeof p.available === 'number' ? p.available : null;
      if (here(where)) applyAreaFree(p.areas);
      renderPanel();
      say((left === 0 ? `${area} is sold out` : left != null ? `Only ${left} place${left === 1 ? '' : 's'} left in ${area}`
        : `Not that many places left in ${area}`) + (where ? ` in ${showLabel(where)}` : '') + nothing, 'error');
      return;
    }
    renderPanel();
    if (res.status === 401) {
      openAccount({ why: 'Your session has ended. Sign in again to hold these seats.', then: hold });
    }
    if (res.status === 422 && /\/seat-limit$/.test(String(p.type || ''))) {
      say(seatLimitText(p) + (where ? ` (${showLabel(where)})` : '') + ' Nothing was held in any show.', 'error');
      return;
    }
    const why = problemText(res, 'Could not hold these seats.');
    say(res.status >= 400 && res.status < 500 && res.status !== 401 && res.status !== 429
      ? sentence(why) + (where ? ` (${showLabel(where)})` : '') + ' Nothing was held in any show.' : why, 'error');
  }

  /* "Pay for all": ONE payment for every show's hold, all or nothing (POST /v1/bookings with the
   * group hold's id; the card is charged once, for the sum). The answer is the payment; its
   * "bookings" are each show's own booking, its own ticket (GET /v1/bookings/{id} adds the
   * ticket code and QR). A refusal books no show and charges nothing: every show stays held. */
  async function payAll() {
    const h = state.hold;
    if (!h || !h.group || state.busy) return;
    state.busy = true;
    state.paying = true;
    renderPanel();
    const n = h.legs.length;
    say(`Paying for ${n} show${n === 1 ? '' : 's'} in one payment…`, 'info', { persist: true });
    const res = await authApi('POST', '/v1/bookings', { holdId: h.holdId, paymentMethod: $('card-select').value });
    let p = null;
    let pending = null;   // a 202: the payment's id, and its last state seen
    if (res.status === 201 && res.body && res.body.status === 'CONFIRMED') {
      p = res.body;
    } else if (res.status === 202 && res.body && res.body.bookingId) {
      say('Payment pending: waiting for the card issuer…', 'info', { persist: true });
      pending = { id: res.body.bookingId, last: await waitBooking(res.body.bookingId) };
      if (pending.last && pending.last.status === 'CONFIRMED') p = pending.last;
    }
    if (p) {
      await payAllConfirmed(h, p);
      return;
    }
    state.paying = false;
    state.busy = false;
    renderPanel();
    const still = ' Nothing was charged, and every show is still held: try another card.';
    if (res.status === 402) {
      say('The card was declined.' + still, 'error');
      refreshLegs(h);
      return;
    }
    if (pending) {
      const st = pending.last && pending.last.status;
      if (st) {
        say(`The payment did not go through (${String(st).toLowerCase().replace(/_/g, ' ')}): no show was booked.` +
          (st === 'FAILED' ? ' Your seats are still held in every show: try another card.' : ''), 'error');
        refreshLegs(h);
      } else {
        say(`Payment still pending. Your payment reference is ${pending.id}; check My tickets in a minute.`, 'info', { persist: true });
      }
      return;
    }
    if (res.status === 401) {
      say('Your session has ended. Sign in again to pay: your seats stay held in every show until the timer runs out.', 'error');
      openAccount({ why: 'Sign in again to pay for the seats you hold.', then: pay });
      return;
    }
    say(sentence(problemText(res, 'The payment did not go through')) + ' No show was booked.', 'error');
    if (res.status === 404 || res.status === 409 || res.status === 410) refreshLegs(h);
    else tick();
  }

  /* The group's payment 'p' is CONFIRMED: each show's booking from its "bookings", with its
   * ticket (GET /v1/bookings/{member id}), then the tickets. */
  async function payAllConfirmed(h, p) {
    let members = Array.isArray(p.bookings) ? p.bookings : [];
    if (!members.length && p.bookingId) {
      // An answer without its list (it should have one): the payment's own resource lists them.
      const again = await authApi('GET', `/v1/bookings/${encodeURIComponent(p.bookingId)}`);
      if (again.status === 200 && again.body && Array.isArray(again.body.bookings)) members = again.body.bookings;
    }
    await Promise.all(h.legs.map(async (leg) => {
      const m = members.find((x) => x && x.showId != null && String(x.showId) === leg.showId && x.bookingId);
      if (!m) {
        leg.booking = { status: p.status, currency: p.currency };
        return;
      }
      const full = await authApi('GET', `/v1/bookings/${encodeURIComponent(m.bookingId)}`);
      leg.booking = Object.assign({ currency: p.currency }, m, full.status === 200 && full.body ? full.body : {});
    }));
    state.paying = false;
    state.busy = false;
    groupBooked(h, p);
  }

  /* Each show's hold after a refused payment (a decline puts every one back to HELD, maybe with a
   * new deadline; a late answer may have let them lapse): the countdown follows the earliest. */
  async function refreshLegs(h) {
    const looks = await Promise.all(h.legs.map((leg) =>
      authApi('GET', `/v1/holds/${encodeURIComponent(leg.holdId)}`)));
    if (state.hold !== h) return;
    let gone = false;
    looks.forEach((res, i) => {
      const st = res.status === 200 && res.body ? res.body.status : null;
      if (st === 'HELD' || st === 'PENDING_PAYMENT') {
        const exp = Date.parse(res.body.expiresAt);
        if (!isNaN(exp)) h.legs[i].expiresAt = exp;
      } else if (res.status === 200 || res.status === 404 || res.status === 410) {
        gone = true;
      }
    });
    if (gone) { expireHold(); return; }
    const times = h.legs.map((l) => l.expiresAt).filter((t) => !isNaN(t));
    if (times.length) h.expiresAt = Math.min(...times);
    renderPanel();
    tick();
  }

  /* A payment that answered 202: its answer once it has ended (CONFIRMED, or the state it ended
   * in), or null when it was still pending at the deadline. */
  async function waitBooking(bookingId) {
    const deadline = Date.now() + 120000;
    while (Date.now() < deadline) {
      await sleep(1000);
      const res = await authApi('GET', `/v1/bookings/${encodeURIComponent(bookingId)}`);
      const st = res.status === 200 && res.body ? res.body.status : null;
      if (st && st !== 'PENDING_PAYMENT' && st !== 'PENDING') return res.body;
    }
    return null;
  }

  function groupBooked(h, p) {
    clearInterval(state.countdownTimer);
    const here = h.legs.find((l) => l.showId === String(state.showId));
    for (const id of here ? here.seatIds : []) {
      state.myBooked.add(id);
      state.status.set(id, 'booked');
    }
    state.hold = null;
    paintAll();
    $('ticket').hidden = true;
    const box = $('group-tickets');
    box.hidden = false;
    box.textContent = '';
    for (const leg of h.legs) {
      const b = Object.assign({ areas: leg.areas }, leg.booking);
      const show = String(leg.showId) === String(state.showId) ? state.show
        : state.group.shows.get(leg.showId) || { title: `Show ${leg.showId}` };
      const t = el('div', { class: 'ticket', 'data-show-id': leg.showId, 'data-booking-id': b.bookingId || '' });
      const seats = Array.isArray(b.seatIds) && b.seatIds.length ? b.seatIds : leg.seatIds;
      t.append(...ticketParts(b, show, seats.length ? seatListText(seats) : ''));
      box.append(t);
    }
    setPhase('ticket');
    const n = h.legs.length;
    const paid = p && typeof p.amount === 'number' ? ` for ${money(p.amount, p.currency || showCurrency(state.show))}` : '';
    say(`Booked ${n} show${n === 1 ? '' : 's'} with one payment${paid}! Each show has its own ticket. Enjoy the shows.`, 'success');
  }

  /* ---------------------------------------------------------------- my tickets */

  const BOOKINGS_PAGE = 10;
  const STATUS_TEXT = {
    CONFIRMED: 'Confirmed', PENDING_PAYMENT: 'Payment pending', FAILED: 'Not booked', CANCELLED: 'Cancelled',
    HELD: 'Held', BOOKED: 'Booked',
  };
  /* byHold: hold id -> {li, attempts}: the booking listed for a hold, which its declined
   * attempts join; loose: declined attempts whose hold has no booking listed (yet). */
  const mine = { cursor: null, loading: false, holdsTimer: null, generation: 0, byHold: new Map(), loose: [] };

  /* A FAILED booking whose charge was given back (or is being given back): money that moved. */
  function isRefunded(b) {
    return b.status === 'FAILED' && (!!b.refundStatus || /refund/i.test(b.reason || '') ||
      (typeof b.refund === 'number' && b.refund > 0));
  }

  /* A payment attempt that took no money (a declined card, a payment that never went through):
   * an attempt of a booking, never a booking of its own. */
  function isAttempt(b) {
    return b.status === 'FAILED' && !isRefunded(b);
  }

  function reasonWords(reason) {
    const r = String(reason || '').replace(/[^a-z0-9_]/gi, ' ').replace(/_/g, ' ').trim().toLowerCase();
    return r || 'declined';
  }
  const showCache = new Map();

  /* The items of a list answer, whatever it calls them. */
  function listOf(body, name) {
    if (Array.isArray(body)) return body;
    if (body && Array.isArray(body.items)) return body.items;
    if (body && Array.isArray(body[name])) return body[name];
    return [];
  }

  function showInfo(id) {
    if (!showCache.has(id)) {
      showCache.set(id, api('GET', `/v1/shows/${encodeURIComponent(id)}`)
        .then((r) => (r.status === 200 && r.body ? r.body : null)));
    }
    return showCache.get(id);
  }

  function seatIdsText(ids) {
    return (Array.isArray(ids) ? ids : []).slice()
      .sort((a, b) => a.localeCompare(b, undefined, { numeric: true })).join(', ');
  }

  function ticketsSay(text, kind) {
    const m = $('tickets-message');
    m.hidden = !text;
    m.textContent = text || '';
    m.dataset.kind = kind || 'info';
  }

  /* Fills the title and time of a list item once its show is known. */
  function fillShow(li, showId) {
    showInfo(showId).then((show) => {
      li.querySelector('.my-title').textContent = (show && show.title) || `Show ${showId}`;
      const when = show ? formatWhen(show.startsAt) : '';
      li.querySelector('.my-when').textContent = when;
      li.querySelector('.my-when').hidden = !when;
    });
  }

  function showTickets() {
    state.view = 'tickets';
    $('tickets').hidden = false;
    document.title = 'My tickets — seatd';
    $('nav-tickets').setAttribute('aria-current', 'page');
    $('bookings-more').addEventListener('click', () => loadBookings(false));
    $('tickets-signin').addEventListener('click', () => openAccount({ why: 'Sign in to see your tickets.' }));
    loadTickets();
  }

  async function loadTickets(why) {
    const gen = ++mine.generation;
    clearInterval(mine.holdsTimer);
    $('my-holds').textContent = '';
    $('my-bookings').textContent = '';
    mine.byHold = new Map();
    mine.loose = [];
    renderLooseAttempts();
    $('tickets').dataset.loaded = 'false';
    if (!state.session) {
      $('tickets-lists').hidden = true;
      $('tickets-signedout').hidden = false;
      ticketsSay(why || '', 'info');
      openAccount({ why: 'Sign in to see your tickets and the seats you hold.' });
      return;
    }
    ticketsSay('');
    $('tickets-signedout').hidden = true;
    $('tickets-lists').hidden = false;
    mine.cursor = null;
    await Promise.all([loadHolds(gen), loadBookings(true, gen)]);
    if (gen === mine.generation) $('tickets').dataset.loaded = 'true';
  }

  async function loadHolds(gen) {
    const res = await authApi('GET', '/v1/me/holds');
    if (gen !== mine.generation) return;
    const list = $('my-holds');
    list.textContent = '';
    if (res.status !== 200) {
      $('holds-empty').hidden = true;
      if (!res.signedOut) ticketsSay(problemText(res, 'Could not load the seats you hold.'), 'error');
      return;
    }
    const holds = listOf(res.body, 'holds').filter((h) => h && h.holdId &&
      (h.status === 'HELD' || h.status === 'PENDING_PAYMENT') && Date.parse(h.expiresAt) > serverNow());
    $('holds-empty').hidden = holds.length > 0;
    for (const h of holds) {
      const li = el('li', { class: 'my-item hold-item', 'data-hold-id': h.holdId, 'data-status': h.status });
      li.append(el('p', { class: 'my-title' }, `Show ${h.showId}`));
      li.append(el('p', { class: 'muted my-when' }));
      const dl = el('dl', { class: 'my-facts' });
      const places = placesText(h.areas);
      if ((Array.isArray(h.seatIds) && h.seatIds.length) || !places) {
        dl.append(el('dt', {}, 'Seats'), el('dd', { class: 'my-seats' }, seatIdsText(h.seatIds)));
      }
      if (places) dl.append(el('dt', {}, 'Places'), el('dd', { class: 'my-places' }, places));
      const left = el('dd', { class: 'hold-left', 'data-expires': String(Date.parse(h.expiresAt)) });
      dl.append(el('dt', {}, h.status === 'PENDING_PAYMENT' ? 'Paying' : 'Pay within'), left);
      li.append(dl);
      const actions = el('div', { class: 'actions' });
      actions.append(el('a', { class: 'btn btn-primary', href: '/?show=' + encodeURIComponent(h.showId) }, 'Pay or release'));
      li.append(actions);
      list.append(li);
      fillShow(li, h.showId);
    }
    const tickHolds = () => {
      for (const e of list.querySelectorAll('.hold-left')) {
        const secs = Math.max(0, Math.ceil((Number(e.dataset.expires) - serverNow()) / 1000));
        e.textContent = secs > 0 ? `${String(Math.floor(secs / 60)).padStart(2, '0')}:${String(secs % 60).padStart(2, '0')}` : 'expired';
        e.closest('li').dataset.expired = String(secs === 0);
      }
    };
    tickHolds();
    if (holds.length) mine.holdsTimer = setInterval(tickHolds, 1000);
  }

  async function loadBookings(first, gen) {
    if (mine.loading && !first) return;
    gen = gen == null ? mine.generation : gen;
    mine.loading = true;
    const more = $('bookings-more');
    const done = busyButton(more, 'Loading…');
    const q = new URLSearchParams({ limit: String(BOOKINGS_PAGE) });
    if (!first && mine.cursor) q.set('cursor', mine.cursor);
    const res = await authApi('GET', `/v1/me/bookings?${q}`);
    // A FAILED entry of the list may not say why (the list carries fewer fields than the
    // booking): its own resource does, and whether money was given back.
    const items = res.status === 200 ? listOf(res.body, 'bookings') : [];
    await Promise.all(items.map(async (b, i) => {
      if (!b || b.status !== 'FAILED' || !b.bookingId || 'reason' in b || 'refundStatus' in b) return;
      const r = await authApi('GET', `/v1/bookings/${encodeURIComponent(b.bookingId)}`);
      if (r.status === 200 && r.body && r.body.bookingId === b.bookingId) items[i] = Object.assign({}, b, r.body);
    }));
    mine.loading = false;
    done();
    if (gen !== mine.generation) return;
    const list = $('my-bookings');
    if (res.status !== 200) {
      more.hidden = true;
      $('bookings-empty').hidden = true;
      if (!res.signedOut) ticketsSay(problemText(res, 'Could not load your bookings.'), 'error');
      return;
    }
    for (const b of items) {
      if (!b || !b.bookingId || list.querySelector(`[data-booking-id="${CSS.escape(b.bookingId)}"]`) ||
          mine.loose.some((x) => x.bookingId === b.bookingId)) continue;
      if (isAttempt(b)) {
        const owner = b.holdId && mine.byHold.get(b.holdId);
        if (owner) addAttempt(owner, b);
        else mine.loose.push(b);
        continue;
      }
      const li = bookingItem(b);
      list.append(li);
      if (b.holdId && !mine.byHold.has(b.holdId)) {
        const owner = { li, attempts: [] };
        mine.byHold.set(b.holdId, owner);
        // Attempts listed before their booking (the order of filing is not the order of paying).
        for (const a of mine.loose.filter((x) => x.holdId === b.holdId)) addAttempt(owner, a);
        mine.loose = mine.loose.filter((x) => x.holdId !== b.holdId);
      }
    }
    renderLooseAttempts();
    const c = res.body && (res.body.nextCursor != null ? res.body.nextCursor : res.body.cursor);
    // null on the last page
    mine.cursor = (typeof c === 'string' && c) || (typeof c === 'number' && String(c)) || null;
    more.hidden = !mine.cursor;
    $('bookings-empty').hidden = list.children.length > 0;
  }

  /* A declined attempt joins the booking of its hold: "1 earlier card payment was declined". */
  function addAttempt(owner, a) {
    owner.attempts.push(a);
    let note = owner.li.querySelector('.my-attempts');
    if (!note) {
      note = el('p', { class: 'muted my-attempts' });
      owner.li.querySelector('.my-facts').after(note);
    }
    const n = owner.attempts.length;
    const why = [...new Set(owner.attempts.map((x) => reasonWords(x.reason)))].join(', ');
    note.dataset.attempts = String(n);
    note.textContent = `${n === 1 ? 'An earlier payment attempt' : `${n} earlier payment attempts`} ` +
      `for these seats ${n === 1 ? 'was' : 'were'} not accepted (${why}); nothing was charged for ${n === 1 ? 'it' : 'them'}.`;
  }

  /* Declined attempts of holds that were never paid: not bookings, so not listed as such. */
  function renderLooseAttempts() {
    let note = $('bookings-attempts');
    if (!mine.loose.length) {
      if (note) note.remove();
      return;
    }
    if (!note) {
      note = el('p', { id: 'bookings-attempts', class: 'muted my-attempts' });
      $('my-bookings').after(note);
    }
    const n = mine.loose.length;
    const why = [...new Set(mine.loose.map((x) => reasonWords(x.reason)))].join(', ');
    note.textContent = `${n === 1 ? 'One payment attempt' : `${n} payment attempts`} ` +
      `(${why}) made no booking and charged nothing, so ${n === 1 ? 'it is' : 'they are'} not listed.`;
  }

  function bookingItem(b) {
    const refunded = isRefunded(b);
    const li = el('li', { class: 'my-item booking', 'data-booking-id': b.bookingId, 'data-status': refunded ? 'REFUNDED' : (b.status || '') });
    li.append(el('p', { class: 'my-title' }, b.showId != null ? `Show ${b.showId}` : 'Booking'));
    li.append(el('p', { class: 'muted my-when' }));
    const dl = el('dl', { class: 'my-facts' });
    const row = (k, v, cls) => dl.append(el('dt', {}, k), el('dd', cls ? { class: cls } : {}, v));
    const places = placesText(b.areas);
    if ((Array.isArray(b.seatIds) && b.seatIds.length) || !places) row('Seats', seatIdsText(b.seatIds), 'my-seats');
    if (places) row('Places', places, 'my-places');
    let status = STATUS_TEXT[b.status] || String(b.status || '').toLowerCase().replace(/_/g, ' ');
    if (refunded) status = b.refundStatus === 'pending' ? 'Not booked: refund on its way' : 'Not booked: refunded';
    row('Status', status, 'my-status');
    if (typeof b.amount === 'number') {
      const given = refunded && typeof b.refund === 'number' && b.refund > 0 ? b.refund : b.amount;
      row(b.status === 'CONFIRMED' ? 'Paid' : refunded ? (b.refundStatus === 'pending' ? 'To refund' : 'Refunded') : 'Amount',
        money(refunded ? given : b.amount, b.currency), 'my-amount');
    }
    if (b.status === 'CANCELLED' && typeof b.refund === 'number') row('Refund', money(b.refund, b.currency), 'my-refund-amount');
    row('Booking', b.bookingId, 'ticket-id');
    li.append(dl);
    if (refunded) {
      li.append(el('p', { class: 'muted my-refund' },
        /seats_lost/.test(b.reason || '')
          ? 'The seats were lost before the payment completed, so the charge was given back.'
          : 'The payment did not lead to a booking, so the charge was given back.'));
    }
    if (b.status === 'CONFIRMED') {
      const ticket = el('div', { class: 'ticket', hidden: '' });
      const btn = el('button', { class: 'btn show-ticket', type: 'button', 'aria-expanded': 'false' }, 'Show ticket');
      btn.addEventListener('click', () => toggleTicket(b, btn, ticket));
      const actions = el('div', { class: 'actions' });
      actions.append(btn);
      li.append(actions, ticket);
    }
    if (b.showId != null) fillShow(li, b.showId);
    return li;
  }

  async function toggleTicket(b, btn, box) {
    if (!box.hidden) {
      box.hidden = true;
      btn.textContent = 'Show ticket';
      btn.setAttribute('aria-expanded', 'false');
      return;
    }
    if (!box.childElementCount) {
      const done = busyButton(btn, 'Loading…');
      const [res, show] = await Promise.all([
        authApi('GET', `/v1/bookings/${encodeURIComponent(b.bookingId)}`),
        b.showId != null ? showInfo(b.showId) : Promise.resolve(null),
      ]);
      done();
      if (res.status !== 200 || !res.body) {
        ticketsSay(problemText(res, 'Could not load this ticket.'), 'error');
        return;
      }
      const full = Object.assign({}, b, res.body);
      box.append(...ticketParts(full, show || { title: `Show ${b.showId}` }, seatIdsText(full.seatIds)));
    }
    box.hidden = false;
    btn.textContent = 'Hide ticket';
    btn.setAttribute('aria-expanded', 'true');
  }

  /* ---------------------------------------------------------------- start */

  async function showPicker(id) {
    state.view = 'picker';
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

    initAreas();
    drawMap();
    initMapEvents();
    $('hold-btn').addEventListener('click', hold);
    $('clear-btn').addEventListener('click', () => {
      state.selected.clear();
      state.areaPick.clear();
      paintAll();
      renderPanel();
      say('');
      showAlternatives([]);
    });
    $('pay-btn').addEventListener('click', pay);
    $('release-btn').addEventListener('click', release);
    $('again-btn').addEventListener('click', () => { setPhase('select'); say(''); });
    $('notice-close').addEventListener('click', () => { say(''); showAlternatives([]); });
    initBestForm();
    // A group hold names its seats: best available is a single show's.
    $('best-form').hidden = !!state.group;
    initQueue();
    setPhase('select');

    setLive('connecting');
    await refreshSeats(false);
    connectWs();
    // Until the WebSocket says hello, keep the map fresh by polling.
    schedulePoll();
    resumeHold();
  }

  function start() {
    initSession();
    const params = new URLSearchParams(location.search);
    const id = params.get('show');
    const group = params.get('group');
    if (group) showGroup(group, id);
    else if (id) showPicker(id);
    else if (params.get('view') === 'tickets') showTickets();
    else showCatalogue();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
