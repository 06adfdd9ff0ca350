// What the seat-picker page's end-to-end tests (tests/browser/*.test.mjs: real headless Chromium
// against a real stack, nginx -> seatd workers -> redis, and the fake payment gateway) share: the
// stack's address and secret, tokens, the API, the test show, the browser and the page helpers.
//
//   SEATD_BASE=http://127.0.0.1:8280 SEATD_RUN_DIR=run/8280 node --test --test-concurrency=1 *.test.mjs
//
// SEATD_RUN_DIR holds the stack's jwt_secret: the admin (who creates the shows) and the buyers
// of the first tests get tokens minted with it, as an operator would with `seatctl token`. The
// accounts test mints nothing for its buyer: she signs up and signs in on the page.
// The tests create their own small shows (5 rows x 10 seats, short hold TTL), so they never touch
// the demo show and run against any stack. Screenshots land in artifacts/.
//
// Each test file calls setup() once, at its top: before its tests it mints the tokens, creates
// the test show and starts a browser; after them it closes the browser. Node runs each file in a
// process of its own, so each has its own RUN_TAG (the names of its buyers and shows), its own
// test show and its own browser; tests/browser/run runs the files one at a time.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const HERE = dirname(fileURLToPath(import.meta.url));
const ARTIFACTS = join(HERE, 'artifacts');
export const BASE = (process.env.SEATD_BASE || 'http://127.0.0.1:8280').replace(/\/$/, '');
export const RUN_DIR = process.env.SEATD_RUN_DIR || join(HERE, '..', '..', 'run', new URL(BASE).port || '80');
const CHROMIUM = process.env.SEATD_CHROMIUM || '/usr/bin/chromium';
export const HOLD_TTL_S = 6;           // short, so that the expiry step is quick; long enough to pay
export const LIVE_DEADLINE_MS = 1000;  // "B sees A's hold within a second, without reloading"

const SECRET = readFileSync(join(RUN_DIR, 'jwt_secret'), 'utf8').trim();
export const RUN_TAG = randomUUID().slice(0, 8);

/* HS256, the same claims as `seatctl token`: sub, iat, exp, and role "admin" for admins. */
export function mintToken(sub, { admin = false, ttl = 3600 } = {}) {
  const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  const claims = { sub, iat: now, exp: now + ttl };
  if (admin) claims.role = 'admin';
  const data = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(claims)}`;
  return `${data}.${createHmac('sha256', SECRET).update(data).digest('base64url')}`;
}

export async function apiCall(method, path, token, body) {
  const headers = { Accept: 'application/json' };
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(BASE + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, body: json, text };
}

export function showBody() {
  const seats = [];
  const rows = ['A', 'B', 'C', 'D', 'E'];
  rows.forEach((row, ri) => {
    const tier = ri < 2 ? 'standard' : ri < 4 ? 'premium' : 'vip';
    for (let n = 1; n <= 10; n++) seats.push({ id: `${row}${n}`, row, number: n, tier, x: n, y: ri + 1 });
  });
  return {
    title: `Browser test ${RUN_TAG}`,
    startsAt: new Date(Date.now() + 2 * 86400e3).toISOString().replace(/\.\d+Z$/, 'Z'),
    holdTtlSeconds: HOLD_TTL_S,
    priceTiers: { standard: 1200, premium: 1800, vip: 2600 },
    seats,
  };
}

let browser;
export let showId;
export const tokens = {};
const contexts = [];

export function setup() {
  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    tokens.admin = mintToken(`admin-${RUN_TAG}`, { admin: true });
    tokens.a = mintToken(`alice-${RUN_TAG}`);
    tokens.b = mintToken(`bob-${RUN_TAG}`);
    tokens.phone = mintToken(`pat-${RUN_TAG}`);
    const res = await apiCall('POST', '/v1/shows', tokens.admin, showBody());
    assert.equal(res.status, 201, `creating the test show: ${res.text}`);
    showId = res.body.id;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  });

  after(async () => {
    for (const c of contexts) await c.close().catch(() => {});
    if (browser) await browser.close();
  });
}

/* ---------------------------------------------------------------- page helpers */

export async function newContext(opts = {}) {
  // A fixed locale: money is written the buyer's way (en-US: "€18.00"; see the currency test).
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 860 }, locale: 'en-US', ...opts });
  contexts.push(ctx);
  return ctx;
}

/* A page's view of the seat feed, which the test can stall (a slow network), then release:
 * WebSocket frames from the server and the GET …/availability polls are held back while frozen. */
export async function installFeedValve(page) {
  const valve = { frozen: false, waiting: [], wsOpened: 0, wsFrames: 0, areaFrames: 0 };
  const flushOrQueue = (fn) => (valve.frozen ? valve.waiting.push(fn) : fn());
  await page.routeWebSocket(/\/v1\/shows\/[^/]+\/seats\/ws/, (ws) => {
    let server;
    try {
      server = ws.connectToServer();
    } catch {
      ws.close();
      return;
    }
    valve.wsOpened += 1;
    server.onMessage((msg) => {
      valve.wsFrames += 1;
      if (typeof msg === 'string' && msg.includes('"areas"')) valve.areaFrames += 1;   // standing areas' counts
      flushOrQueue(() => ws.send(msg));
    });
    // 1005/1006 are reported, never sent: pass those on as a plain close.
    const closeArgs = (code, reason) => (code && code !== 1005 && code !== 1006 ? { code, reason } : undefined);
    server.onClose((code, reason) => flushOrQueue(() => ws.close(closeArgs(code, reason))));
    ws.onMessage((msg) => server.send(msg));
    ws.onClose((code, reason) => server.close(closeArgs(code, reason)));
  });
  await page.route(/\/v1\/shows\/[^/]+\/(seats|availability)(\?.*)?$/, (route) => flushOrQueue(() => route.continue()));
  valve.freeze = () => { valve.frozen = true; };
  valve.thaw = () => {
    valve.frozen = false;
    for (const fn of valve.waiting.splice(0)) fn();
  };
  return valve;
}

export async function openPicker(ctx, token, { valve = false, show = showId } = {}) {
  const page = await ctx.newPage();
  page.on('pageerror', (err) => { page.__errors = (page.__errors || []).concat(String(err)); });
  const feed = valve ? await installFeedValve(page) : null;
  await page.goto(`${BASE}/?show=${encodeURIComponent(show)}#token=${encodeURIComponent(token)}`);
  await page.waitForSelector('#map [data-seat="E10"]');
  // The status map has arrived once some seat carries a status class.
  await page.waitForFunction(() => document.querySelector('#map [data-seat="A1"]').dataset.status);
  return { page, feed };
}

export const seatClass = (page, id) => page.getAttribute(`#map [data-seat="${id}"]`, 'class');

export async function expectSeat(page, id, status, timeoutMs, why) {
  // Already so: passes at once, however slow the machine (a short timeout means "still so").
  const is = ([sid, st]) => document.querySelector(`#map [data-seat="${sid}"]`)?.classList.contains(st) === true;
  if (await page.evaluate(is, [id, status])) return;
  try {
    await page.waitForFunction(is, [id, status], { timeout: Math.max(1, timeoutMs), polling: 25 });
  } catch {
    assert.fail(`${why}: seat ${id} should be "${status}" within ${timeoutMs} ms; it is "${await seatClass(page, id)}"`);
  }
}

export const message = (page) => page.textContent('#message');

export async function shot(page, name) {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true, animations: 'disabled' });
}

export function noPageErrors(...pages) {
  for (const p of pages) assert.deepEqual(p.__errors || [], [], 'uncaught errors in the page');
}
/* ---------------------------------------------------------------- shows and holds */

/* Each step has its own show and its own buyer (a buyer may hold at most 10 seats per show). */
export async function createShow(title, extra = {}) {
  const res = await apiCall('POST', '/v1/shows', tokens.admin,
    { ...showBody(), title: `${title} ${RUN_TAG}`, holdTtlSeconds: 120, ...extra });
  assert.equal(res.status, 201, `creating the show: ${res.text}`);
  return res.body.id;
}

export const holdsPath = (id) => `/v1/shows/${id}/holds`;
export const isHoldPost = (id) => (r) => r.url().endsWith(holdsPath(id)) && r.request().method() === 'POST';

/* ---------------------------------------------------------------- phones */

export const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };

/* Is the element wholly inside the window, and on top there (not behind something else)? */
export function inView(page, sel) {
  return page.evaluate((q) => {
    const e = document.querySelector(q);
    const r = e.getBoundingClientRect();
    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    return {
      inside: r.width > 0 && r.height > 0 && r.top >= 0 && r.left >= 0 &&
        r.bottom <= window.innerHeight && r.right <= window.innerWidth,
      onTop: !!hit && e.contains(hit),
      box: `${Math.round(r.left)},${Math.round(r.top)} to ${Math.round(r.right)},${Math.round(r.bottom)} in ${window.innerWidth}x${window.innerHeight}`,
    };
  }, sel);
}

export async function shotView(page, name) {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), animations: 'disabled' });
}
