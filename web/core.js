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
 *
 * The page is a set of classic scripts, loaded in this order by index.html (defer), sharing
 * one global scope (their top-level functions and constants):
 *   core.js, session.js, catalogue.js, seatmap.js, live.js, areas.js, queue.js,
 *   checkout.js, group.js, tickets.js, main.js.
 * A script may call any function at any time once the page has started (start(), in main.js,
 * runs last); at load time it may use only what the scripts before it declared.
 * This file: the page's limits, its state, the helpers every part uses (money, words, the
 * clock, api(): the HTTP client), and the messages (say()).
 */
'use strict';

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
