// The seat-picker page, end to end, in real headless Chromium against a real stack
// (nginx -> seatd workers -> redis, and the fake payment gateway).
//
//   SEATD_BASE=http://127.0.0.1:8280 SEATD_RUN_DIR=run/8280 node --test seatpicker.test.mjs
//
// SEATD_RUN_DIR holds the stack's jwt_secret: the admin (who creates the shows) and the buyers
// of the first tests get tokens minted with it, as an operator would with `seatctl token`. The
// accounts test at the end mints nothing for its buyer: she signs up and signs in on the page.
// The tests create their own small shows (5 rows x 10 seats, short hold TTL), so they never touch
// the demo show and run against any stack. Screenshots land in artifacts/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const HERE = dirname(fileURLToPath(import.meta.url));
const ARTIFACTS = join(HERE, 'artifacts');
const BASE = (process.env.SEATD_BASE || 'http://127.0.0.1:8280').replace(/\/$/, '');
const RUN_DIR = process.env.SEATD_RUN_DIR || join(HERE, '..', '..', 'run', new URL(BASE).port || '80');
const CHROMIUM = process.env.SEATD_CHROMIUM || '/usr/bin/chromium';
const HOLD_TTL_S = 6;           // short, so that the expiry step is quick; long enough to pay
const LIVE_DEADLINE_MS = 1000;  // "B sees A's hold within a second, without reloading"

const SECRET = readFileSync(join(RUN_DIR, 'jwt_secret'), 'utf8').trim();
const RUN_TAG = randomUUID().slice(0, 8);

/* HS256, the same claims as `seatctl token`: sub, iat, exp, and role "admin" for admins. */
function mintToken(sub, { admin = false, ttl = 3600 } = {}) {
  const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  const claims = { sub, iat: now, exp: now + ttl };
  if (admin) claims.role = 'admin';
  const data = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(claims)}`;
  return `${data}.${createHmac('sha256', SECRET).update(data).digest('base64url')}`;
}

async function apiCall(method, path, token, body) {
  const headers = { Accept: 'application/json' };
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(BASE + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, body: json, text };
}

function showBody() {
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
let showId;
const tokens = {};
const contexts = [];

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

/* ---------------------------------------------------------------- page helpers */

async function newContext(opts = {}) {
  // A fixed locale: money is written the buyer's way (en-US: "€18.00"; see the currency test).
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 860 }, locale: 'en-US', ...opts });
  contexts.push(ctx);
  return ctx;
}

/* A page's view of the seat feed, which the test can stall (a slow network), then release:
 * WebSocket frames from the server and the GET …/availability polls are held back while frozen. */
async function installFeedValve(page) {
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

async function openPicker(ctx, token, { valve = false, show = showId } = {}) {
  const page = await ctx.newPage();
  page.on('pageerror', (err) => { page.__errors = (page.__errors || []).concat(String(err)); });
  const feed = valve ? await installFeedValve(page) : null;
  await page.goto(`${BASE}/?show=${encodeURIComponent(show)}#token=${encodeURIComponent(token)}`);
  await page.waitForSelector('#map [data-seat="E10"]');
  // The status map has arrived once some seat carries a status class.
  await page.waitForFunction(() => document.querySelector('#map [data-seat="A1"]').dataset.status);
  return { page, feed };
}

const seatClass = (page, id) => page.getAttribute(`#map [data-seat="${id}"]`, 'class');

async function expectSeat(page, id, status, timeoutMs, why) {
  try {
    await page.waitForFunction(
      ([sid, st]) => document.querySelector(`#map [data-seat="${sid}"]`)?.classList.contains(st),
      [id, status], { timeout: Math.max(1, timeoutMs), polling: 25 });
  } catch {
    assert.fail(`${why}: seat ${id} should be "${status}" within ${timeoutMs} ms; it is "${await seatClass(page, id)}"`);
  }
}

const message = (page) => page.textContent('#message');

async function shot(page, name) {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true, animations: 'disabled' });
}

function noPageErrors(...pages) {
  for (const p of pages) assert.deepEqual(p.__errors || [], [], 'uncaught errors in the page');
}

/* ---------------------------------------------------------------- the journey */

test('two buyers: live hold, conflict, decline then pay, and a hold that expires', async (t) => {
  const ctxA = await newContext();
  const ctxB = await newContext();
  const { page: a } = await openPicker(ctxA, tokens.a);
  const { page: b, feed: bFeed } = await openPicker(ctxB, tokens.b, { valve: true });
  // B's second tab, whose feed the test stalls: the buyer whose map is a moment behind.
  const { page: b2, feed: b2Feed } = await openPicker(ctxB, tokens.b, { valve: true });

  assert.match(await a.textContent('#who'), new RegExp(`alice-${RUN_TAG}`));
  assert.equal(await a.getAttribute('#map [data-seat="C7"]', 'aria-label'), 'Row C seat 7, premium, €18.00, available');
  assert.match(await a.textContent('#legend'), /Premium\s*€18\.00/);

  await t.test('A holds C7 and B sees it held within a second, without reloading', async () => {
    b2Feed.freeze();
    await a.click('#map [data-seat="C7"]');
    assert.match(await seatClass(a, 'C7'), /\bselected\b/);
    assert.match(await a.textContent('#selection-text'), /C7/);
    const held = a.waitForResponse((r) => r.url().endsWith(`/v1/shows/${showId}/holds`) && r.request().method() === 'POST');
    await a.click('#hold-btn');
    const res = await held;
    const heldAt = Date.now();
    assert.equal(res.status(), 201);
    await expectSeat(b, 'C7', 'held', LIVE_DEADLINE_MS - (Date.now() - heldAt), 'B\'s live map');
    t.diagnostic(`B saw C7 held ${Date.now() - heldAt} ms after A's 201; B's feed: ${
      bFeed.wsFrames ? `WebSocket (${bFeed.wsFrames} frames)` : 'polling fallback'} (badge "${await b.getAttribute('#live', 'data-mode')}")`);
    await expectSeat(a, 'C7', 'mine', 1000, 'A\'s own hold');
    assert.match(await a.textContent('#countdown'), /^00:0[0-9]$/);
    assert.equal(await a.isVisible('#pay-btn'), true);
    // Clicking a seat somebody else holds does nothing but say so.
    await b.click('#map [data-seat="C7"]', { force: true });  // aria-disabled: not a target
    assert.match(await message(b), /Row C seat 7 is held by someone else/);
    await expectSeat(b, 'C7', 'held', 100, 'B clicked a held seat');
    await shot(a, 'desktop-a-holding');
  });

  await t.test('B, a moment behind, tries to hold C7 too and is told C7 was just taken', async () => {
    // B's second tab has not heard about A's hold yet: C7 still looks free there.
    assert.match(await seatClass(b2, 'C7'), /\bavailable\b/);
    await b2.click('#map [data-seat="C7"]');
    await b2.click('#map [data-seat="C8"]');
    const conflict = b2.waitForResponse((r) => r.url().endsWith('/holds') && r.request().method() === 'POST');
    await b2.click('#hold-btn');
    assert.equal((await conflict).status(), 409);
    await b2.waitForFunction(() => /just taken/.test(document.querySelector('#message').textContent));
    assert.match(await message(b2), /^C7 was just taken\b/);
    assert.equal(await b2.getAttribute('#message', 'data-kind'), 'error');
    // C7 is deselected, C8 stays selected, and the map shows C7 held once it catches up.
    assert.doesNotMatch(await seatClass(b2, 'C7'), /\bselected\b/);
    assert.match(await seatClass(b2, 'C8'), /\bselected\b/);
    b2Feed.thaw();
    await expectSeat(b2, 'C7', 'held', 2000, 'B\'s second tab after the conflict');
    await shot(b2, 'desktop-b-conflict');
    await b2.click('#clear-btn');
    await expectSeat(b2, 'C8', 'available', 500, 'B cleared the selection');
  });

  await t.test('A\'s card is declined, the seats stay held; a good card gets the ticket', async () => {
    await a.selectOption('#card-select', 'tok_declined');
    await a.click('#pay-btn');
    await a.waitForFunction(() => /declined/i.test(document.querySelector('#message').textContent));
    assert.equal(await message(a), 'Card declined — your seats are still held, try another card');
    assert.equal(await a.isVisible('#panel-hold'), true);
    await expectSeat(a, 'C7', 'mine', 100, 'declined: still A\'s');

    await a.selectOption('#card-select', 'tok_ok');
    await a.click('#pay-btn');
    await a.waitForSelector('#panel-ticket:not([hidden])', { timeout: 5000 });
    const ticket = await a.textContent('#ticket');
    assert.match(ticket, new RegExp(`Browser test ${RUN_TAG}`));
    assert.match(ticket, /Seats\s*C7/);
    assert.match(ticket, /Paid\s*€18\.00/);
    const bookingId = (await a.textContent('.ticket-id')).trim();
    assert.ok(bookingId.length > 0, 'the ticket shows a booking id');
    const check = await apiCall('GET', `/v1/bookings/${encodeURIComponent(bookingId)}`, tokens.a);
    assert.equal(check.status, 200);
    assert.equal(check.body.status, 'CONFIRMED');
    await expectSeat(a, 'C7', 'booked', 500, 'A\'s map after paying');
    await expectSeat(b, 'C7', 'booked', 2000, 'B\'s live map after A paid');
    await shot(a, 'desktop-a-ticket');
  });

  await t.test('a second hold by A runs out: both maps show the seat available again', async () => {
    await a.click('#map [data-seat="D5"]');
    const held = a.waitForResponse((r) => r.url().endsWith('/holds') && r.request().method() === 'POST');
    await a.click('#hold-btn');
    assert.equal((await held).status(), 201);
    const heldAt = Date.now();
    await expectSeat(a, 'D5', 'mine', 500, 'A\'s second hold');
    await expectSeat(b, 'D5', 'held', LIVE_DEADLINE_MS, 'B\'s live map, second hold');
    const deadline = HOLD_TTL_S * 1000 + 2000;
    await a.waitForFunction(() => /hold expired/.test(document.querySelector('#message').textContent),
      undefined, { timeout: deadline - (Date.now() - heldAt), polling: 50 });
    assert.ok(Date.now() - heldAt >= HOLD_TTL_S * 1000 - 1000, 'the countdown did not end early');
    assert.equal(await a.isVisible('#panel-hold'), false);
    await shot(a, 'desktop-a-expired');
    await expectSeat(a, 'D5', 'available', deadline - (Date.now() - heldAt), 'A\'s map after expiry');
    await expectSeat(b, 'D5', 'available', deadline - (Date.now() - heldAt), 'B\'s map after expiry');
    t.diagnostic(`D5 available on both maps ${Date.now() - heldAt} ms after the hold (TTL ${HOLD_TTL_S} s)`);
    await shot(b, 'desktop-b-map');
  });

  noPageErrors(a, b, b2);
});

test('on a 375x667 phone: the map fits, controls stack, tap targets are at least 32 px', async () => {
  const ctx = await newContext({
    viewport: { width: 375, height: 667 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true,
  });
  const { page } = await openPicker(ctx, tokens.phone);
  await page.tap('#map [data-seat="B4"]');
  await page.tap('#map [data-seat="B5"]');
  assert.match(await page.textContent('#selection-text'), /2 seats: B4, B5/);
  assert.equal(await page.textContent('#selection-total'), 'Total €24.00');

  const m = await page.evaluate(() => {
    const box = (sel) => document.querySelector(sel).getBoundingClientRect();
    const seat = box('#map [data-seat="B4"]');
    const panel = box('.panel');
    const map = box('.map-card');
    return {
      docWidth: document.documentElement.scrollWidth,
      seat: [seat.width, seat.height],
      hold: box('#hold-btn').height,
      panelBelowMap: panel.top >= map.bottom,
      mapScrollWidth: document.querySelector('#map-scroll').scrollWidth,
      mapClientWidth: document.querySelector('#map-scroll').clientWidth,
    };
  });
  assert.ok(m.docWidth <= 375, `the page does not scroll sideways (width ${m.docWidth})`);
  assert.ok(m.seat[0] >= 32 && m.seat[1] >= 32, `a seat's tap target is at least 32 px (${m.seat})`);
  assert.ok(m.mapScrollWidth <= m.mapClientWidth + 1, `a 10-seat row fits the phone (${m.mapScrollWidth} > ${m.mapClientWidth})`);
  assert.ok(m.hold >= 32, `the hold button is at least 32 px tall (${m.hold})`);
  assert.ok(m.panelBelowMap, 'the panel stacks below the map');
  for (const sel of ['#best-count', '#best-tier', '#best-btn']) {
    const h = await page.evaluate((q) => document.querySelector(q).getBoundingClientRect().height, sel);
    assert.ok(h >= 32, `${sel} is at least 32 px tall (${h})`);
  }
  await shot(page, 'phone-selected');

  await page.tap('#hold-btn');
  await page.waitForSelector('#panel-hold:not([hidden])');
  await expectSeat(page, 'B4', 'mine', 1000, 'phone hold');
  for (const sel of ['#pay-btn', '#release-btn', '#card-select']) {
    const h = await page.evaluate((s) => document.querySelector(s).getBoundingClientRect().height, sel);
    assert.ok(h >= 32, `${sel} is at least 32 px tall (${h})`);
  }
  await page.locator('#panel-hold').scrollIntoViewIfNeeded();
  await shot(page, 'phone-holding');
  await page.tap('#release-btn');
  await page.waitForFunction(() => /released/.test(document.querySelector('#message').textContent));
  await expectSeat(page, 'B4', 'available', 1000, 'phone release');
  noPageErrors(page);
});

test('on a show where nothing happens, the page says "live" within a second of loading', async () => {
  const res = await apiCall('POST', '/v1/shows', tokens.admin, { ...showBody(), title: `Quiet ${RUN_TAG}` });
  assert.equal(res.status, 201, res.text);
  const ctx = await newContext();
  const page = await ctx.newPage();
  page.on('pageerror', (err) => { page.__errors = (page.__errors || []).concat(String(err)); });
  const requests = [];
  page.on('request', (req) => requests.push(new URL(req.url()).pathname));
  const started = Date.now();
  await page.goto(`${BASE}/?show=${encodeURIComponent(res.body.id)}&token=${encodeURIComponent(tokens.a)}`);
  await page.waitForFunction(() => document.querySelector('#live')?.dataset.mode === 'ws',
    undefined, { timeout: 1000, polling: 20 });
  const ms = Date.now() - started;
  assert.equal(await page.textContent('#live'), 'live');
  assert.ok(ms <= 1000, `live after ${ms} ms`);
  // The map came from the bitmaps, not the per-seat JSON.
  await page.waitForFunction(() => document.querySelector('#map [data-seat="A1"]').dataset.status === 'available');
  assert.ok(requests.some((p) => p.endsWith('/availability')), 'the page read /availability');
  assert.ok(!requests.some((p) => p.endsWith('/seats')), 'the page did not read the JSON map');
  noPageErrors(page);
});

test('without ?show= the page lists the shows and links them', async () => {
  const ctx = await newContext();
  const page = await ctx.newPage();
  await page.goto(`${BASE}/`);
  const link = page.locator(`#show-list a[href="/?show=${encodeURIComponent(showId)}"]`);
  await link.waitFor();
  assert.match(await link.textContent(), new RegExp(`Browser test ${RUN_TAG}`));
  await shot(page, 'desktop-catalogue');
});

/* ---------------------------------------------------------------- box-office rules (issue 13) */

/* Each step has its own show and its own buyer (a buyer may hold at most 10 seats per show). */
async function createShow(title, extra = {}) {
  const res = await apiCall('POST', '/v1/shows', tokens.admin,
    { ...showBody(), title: `${title} ${RUN_TAG}`, holdTtlSeconds: 120, ...extra });
  assert.equal(res.status, 201, `creating the show: ${res.text}`);
  return res.body.id;
}

const holdsPath = (id) => `/v1/shows/${id}/holds`;
const isHoldPost = (id) => (r) => r.url().endsWith(holdsPath(id)) && r.request().method() === 'POST';
const mineSeats = (page) => page.$$eval('#map .seat.mine', (els) => els.map((e) => e.getAttribute('data-seat')));
const seatNum = (id) => Number(id.slice(1));
const sorted = (ids) => ids.slice().sort((a, b) => (a[0] === b[0] ? seatNum(a) - seatNum(b) : a < b ? -1 : 1));

/* "C7–C9", as the page writes a block of one row. */
function blockText(ids) {
  const s = sorted(ids);
  return s.length === 1 ? s[0] : `${s[0]}–${s[s.length - 1]}`;
}

function assertAdjacent(ids, why) {
  const s = sorted(ids);
  assert.ok(s.every((id) => id[0] === s[0][0]), `${why}: one row (${s})`);
  assert.ok(s.every((id, i) => i === 0 || seatNum(id) === seatNum(s[i - 1]) + 1), `${why}: side by side (${s})`);
}

/* The page shows exactly these seats as the buyer's hold, and the API agrees. */
async function expectHeld(page, token, holdId, ids, why) {
  await page.waitForSelector('#panel-hold:not([hidden])');
  for (const id of ids) await expectSeat(page, id, 'mine', 1000, why);
  assert.deepEqual(sorted(await mineSeats(page)), sorted(ids), `${why}: the seats shown as yours`);
  assert.match(await page.textContent('#countdown'), /^0[12]:\d\d$/, `${why}: the countdown runs`);
  assert.equal(await page.isVisible('#pay-btn'), true, `${why}: Pay`);
  const check = await apiCall('GET', `/v1/holds/${encodeURIComponent(holdId)}`, token);
  assert.equal(check.status, 200, check.text);
  assert.equal(check.body.status, 'HELD');
  assert.deepEqual(sorted(check.body.seatIds), sorted(ids), `${why}: the hold in the API`);
}

test('box office: best available, alternatives, no orphan seats, wheelchair spaces', async (t) => {
  const pages = [];

  await t.test('best available of 3 seats holds 3 adjacent seats and shows them held', async () => {
    const show = await createShow('Best');
    const tok = mintToken(`bea-${RUN_TAG}`);
    const { page } = await openPicker(await newContext(), tok, { show });
    pages.push(page);
    const tiers = await page.$$eval('#best-tier option', (os) => os.map((o) => o.value));
    assert.deepEqual(tiers, ['', 'standard', 'premium', 'vip'], 'the tiers of the show, or any');
    await page.selectOption('#best-count', '3');
    const answer = page.waitForResponse(isHoldPost(show));
    await page.click('#best-btn');
    const res = await answer;
    assert.equal(res.status(), 201);
    assert.deepEqual(JSON.parse(res.request().postData()).best, { count: 3 });
    const body = await res.json();
    assert.equal(body.seatIds.length, 3);
    assertAdjacent(body.seatIds, 'best available');
    assert.notEqual(body.split, true);
    await expectHeld(page, tok, body.holdId, body.seatIds, 'best available');
    assert.equal(await page.textContent('#hold-seats'), sorted(body.seatIds).join(', '));
    assert.equal(await page.isVisible('#hold-split'), false, 'no "not side by side" note');
    assert.match(await message(page), new RegExp(`^Held ${sorted(body.seatIds).join(', ')} for you\\.`));
    await shot(page, 'best-available-held');
  });

  await t.test('a conflict offers the alternatives and one tap holds the alternative', async () => {
    const show = await createShow('Conflict');
    const tok = mintToken(`cid-${RUN_TAG}`);
    const { page, feed } = await openPicker(await newContext(), tok, { show, valve: true });
    pages.push(page);
    feed.freeze();   // this buyer's map is a moment behind
    for (const id of ['C4', 'C5', 'C6']) await page.click(`#map [data-seat="${id}"]`);
    const other = await apiCall('POST', holdsPath(show), mintToken(`ozzy-${RUN_TAG}`),
      { seatIds: ['C5'], idempotencyKey: randomUUID() });
    assert.equal(other.status, 201, other.text);
    const refused = page.waitForResponse(isHoldPost(show));
    await page.click('#hold-btn');
    const res = await refused;
    assert.equal(res.status(), 409);
    const problem = await res.json();
    assert.match(problem.type, /seat-conflict$/);
    assert.ok(problem.alternatives.length >= 1, 'the server proposed alternatives');
    await page.waitForSelector('#alternatives button');
    assert.match(await message(page), /^C5 was just taken\. Take (these seats|one of these blocks) instead/);
    const buttons = await page.$$eval('#alternatives button', (bs) => bs.map((b) => b.textContent));
    assert.deepEqual(buttons, problem.alternatives.map((a) => `Take ${blockText(a)} instead`));
    await shot(page, 'conflict-alternatives');

    const alt = problem.alternatives[0];
    const taken = page.waitForResponse(isHoldPost(show));
    await page.click('#alternatives button >> nth=0');
    const res2 = await taken;
    assert.equal(res2.status(), 201, 'one tap holds the alternative');
    assert.deepEqual(JSON.parse(res2.request().postData()).seatIds, sorted(alt), 'a named hold of exactly those seats');
    await expectHeld(page, tok, (await res2.json()).holdId, alt, 'the alternative');
    assert.equal(await page.isVisible('#alternatives'), false, 'the proposals are gone');
    feed.thaw();
  });

  await t.test('with orphanRule "block" an orphaning selection is refused in words; the proposed block is one tap', async () => {
    const show = await createShow('Orphan', { orphanRule: 'block' });
    const info = await apiCall('GET', `/v1/shows/${show}`);
    assert.equal(info.body.orphanRule, 'block');
    const tok = mintToken(`ora-${RUN_TAG}`);
    const { page } = await openPicker(await newContext(), tok, { show });
    pages.push(page);
    // B2 and B3 leave B1 alone at the row end.
    await page.click('#map [data-seat="B2"]');
    await page.click('#map [data-seat="B3"]');
    const refused = page.waitForResponse(isHoldPost(show));
    await page.click('#hold-btn');
    const res = await refused;
    assert.equal(res.status(), 409);
    const problem = await res.json();
    assert.match(problem.type, /orphan-seat$/);
    assert.deepEqual(problem.orphanSeats, ['B1']);
    assert.ok(problem.alternatives.length >= 1, 'a block that strands none');
    const alt = problem.alternatives[0];
    await page.waitForSelector('#alternatives button');
    assert.equal(await message(page),
      `That would leave seat B1 on its own — pick a different block or take ${blockText(alt)}.`);
    assert.equal(await page.getAttribute('#message', 'data-kind'), 'error');
    assert.equal(await page.textContent('#alternatives button >> nth=0'), `Take ${blockText(alt)} instead`);
    const none = await apiCall('GET', `/v1/shows/${show}/seats`);
    assert.ok(!['held', 'booked'].includes(none.body.seats.B2), 'nothing was held');
    await shot(page, 'orphan-refused');

    const taken = page.waitForResponse(isHoldPost(show));
    await page.click('#alternatives button >> nth=0');
    const res2 = await taken;
    assert.equal(res2.status(), 201);
    assert.deepEqual(JSON.parse(res2.request().postData()).seatIds, sorted(alt));
    await expectHeld(page, tok, (await res2.json()).holdId, alt, 'the proposed block');
  });

  await t.test('wheelchair spaces are marked on the map and in the legend; companions show when selected', async () => {
    const body = showBody();
    for (const s of body.seats) {
      if (s.id === 'E1') Object.assign(s, { accessible: true, companions: ['E2'] });
      if (s.id === 'E10') Object.assign(s, { accessible: true, companions: ['E8', 'E9'] });
    }
    const show = await createShow('Wheelchair', { seats: body.seats });
    const tok = mintToken(`wes-${RUN_TAG}`);
    const { page } = await openPicker(await newContext(), tok, { show });
    pages.push(page);
    assert.equal(await page.getAttribute('#map [data-seat="E1"]', 'aria-label'),
      'Row E seat 1, vip, wheelchair space, €26.00, available');
    assert.match(await seatClass(page, 'E1'), /\baccessible\b/);
    assert.doesNotMatch(await seatClass(page, 'E5'), /\baccessible\b/);
    assert.doesNotMatch(await page.getAttribute('#map [data-seat="E5"]', 'aria-label'), /wheelchair/);
    assert.equal(await page.textContent('#map [data-seat="E10"] title'),
      'Row E seat 10: wheelchair space (companion seats E8, E9)');
    assert.equal(await page.locator('#map .wc-ring').count(), 2, 'a mark on each space');
    assert.match(await page.textContent('#legend'), /Wheelchair space/);

    await page.click('#map [data-seat="E10"]');
    assert.match(await seatClass(page, 'E10'), /\bselected\b/);
    assert.equal(await page.textContent('#companions-text'), 'E10 is a wheelchair space; its companion seats: E8, E9.');
    for (const c of ['E8', 'E9']) assert.match(await seatClass(page, c), /\bcompanion\b/);
    assert.doesNotMatch(await seatClass(page, 'E7'), /\bcompanion\b/);
    await shot(page, 'wheelchair-selected');
    await page.click('#clear-btn');
    assert.doesNotMatch(await seatClass(page, 'E9'), /\bcompanion\b/);
    assert.equal(await page.isVisible('#companions-text'), false);

    // Best available with a wheelchair space: one space and its companion, in one tap.
    await page.selectOption('#best-count', '2');
    await page.check('#best-accessible');
    const answer = page.waitForResponse(isHoldPost(show));
    await page.click('#best-btn');
    const res = await answer;
    assert.equal(res.status(), 201);
    assert.deepEqual(JSON.parse(res.request().postData()).best, { count: 2, accessible: true });
    const held = await res.json();
    assert.ok(['E1,E2', 'E9,E10'].includes(sorted(held.seatIds).join(',')), `a space and its companion (${held.seatIds})`);
    await expectHeld(page, tok, held.holdId, held.seatIds, 'accessible best available');
  });

  await t.test('no block together: a split says "not side by side"; nothing at all is said in words', async () => {
    // One row of 10; someone else holds A2, A5 and A8: free A1, A3-A4, A6-A7, A9-A10.
    const body = showBody();
    const show = await createShow('Scattered', { seats: body.seats.filter((s) => s.row === 'A') });
    const other = await apiCall('POST', holdsPath(show), mintToken(`sam-${RUN_TAG}`),
      { seatIds: ['A2', 'A5', 'A8'], idempotencyKey: randomUUID() });
    assert.equal(other.status, 201, other.text);
    const tok = mintToken(`nob-${RUN_TAG}`);
    const page = await (await newContext()).newPage();
    pages.push(page);
    page.on('pageerror', (err) => { page.__errors = (page.__errors || []).concat(String(err)); });
    await page.goto(`${BASE}/?show=${encodeURIComponent(show)}#token=${encodeURIComponent(tok)}`);
    await page.waitForFunction(() => document.querySelector('#map [data-seat="A2"]')?.dataset.status === 'held');

    await page.selectOption('#best-count', '3');
    let answer = page.waitForResponse(isHoldPost(show));
    await page.click('#best-btn');
    let res = await answer;
    assert.equal(res.status(), 201);
    const split = await res.json();
    assert.equal(split.split, true, 'two blocks');
    await expectHeld(page, tok, split.holdId, split.seatIds, 'the split');
    assert.equal(await page.isVisible('#hold-split'), true);
    assert.match(await page.textContent('#hold-split'), /^These seats are not side by side/);
    await shot(page, 'best-available-split');
    await page.click('#release-btn');
    await page.waitForSelector('#panel-select:not([hidden])');

    await page.selectOption('#best-count', '5');
    await page.selectOption('#best-tier', 'standard');
    answer = page.waitForResponse(isHoldPost(show));
    await page.click('#best-btn');
    res = await answer;
    assert.equal(res.status(), 409);
    assert.match((await res.json()).type, /no-block-available$/);
    await page.waitForFunction(() => /together/.test(document.querySelector('#message').textContent));
    assert.match(await message(page), /^Sorry, no 5 seats together are left in standard\. Try fewer seats/);
    assert.equal(await page.isVisible('#panel-hold'), false);
  });

  noPageErrors(...pages);
});

/* ---------------------------------------------------------------- accounts */

/* The newcomer's journey: no token from any tool reaches this browser. The only minted token
 * in here is the admin's, which creates the show (an operator's job, not the buyer's). */
test('a newcomer signs up, holds, pays and finds the ticket under My tickets; signs out and in again', async (t) => {
  const created = await apiCall('POST', '/v1/shows', tokens.admin,
    { ...showBody(), title: `Accounts ${RUN_TAG}`, holdTtlSeconds: 120 });
  assert.equal(created.status, 201, created.text);
  const acctShow = created.body.id;
  const email = `Nia.${RUN_TAG}@Example.COM`;   // the server keeps it lower-cased
  const password = `tangerine lighthouse ${RUN_TAG}`;
  const minted = new Set(Object.values(tokens).map((tok) => `Bearer ${tok}`));

  const ctx = await newContext();
  const sent = { auth: new Set(), refresh: 0, login: 0 };
  ctx.on('request', (req) => {
    const a = req.headers().authorization;
    if (a) sent.auth.add(a);
    const p = new URL(req.url()).pathname;
    if (p === '/v1/auth/refresh') sent.refresh += 1;
    if (p === '/v1/auth/login') sent.login += 1;
  });
  const watch = (page) => {
    page.on('pageerror', (err) => { page.__errors = (page.__errors || []).concat(String(err)); });
    return page;
  };
  const page = watch(await ctx.newPage());
  const stored = () => page.evaluate(() => JSON.parse(localStorage.getItem('seatd.session') || 'null'));
  const accountMessage = () => page.textContent('#account-message');
  const waitText = (sel, re, timeout = 5000) => page.waitForFunction(
    ([s, src]) => new RegExp(src).test(document.querySelector(s)?.textContent || ''), [sel, re.source], { timeout });

  await page.goto(`${BASE}/?show=${encodeURIComponent(acctShow)}`);
  await page.waitForSelector('#map [data-seat="E10"]');
  await page.waitForFunction(() => document.querySelector('#map [data-seat="A1"]').dataset.status);
  assert.equal(await page.isVisible('#signin-open'), true, 'a newcomer sees "Sign in"');
  assert.equal(await page.textContent('#who'), '');
  let bookingId;

  await t.test('holding while signed out asks to sign in; signing up refuses a short, then a common password', async () => {
    await page.click('#map [data-seat="E3"]');
    await page.click('#map [data-seat="E4"]');
    await page.click('#hold-btn');
    await page.waitForSelector('#account:not([hidden])');
    assert.match(await page.textContent('#account-why'), /Sign in or create an account to hold these seats/);
    assert.match(await seatClass(page, 'E3'), /\bselected\b/, 'the selection stays');
    await page.click('#tab-signup');
    await page.fill('#signup-name', 'Nia');
    await page.fill('#signup-email', email);
    await page.fill('#signup-password', 'short7!');
    await page.click('#signup-submit');
    assert.match(await accountMessage(), /^Password too short: use at least 8 characters/);
    await page.fill('#signup-password', 'password');
    await page.click('#signup-submit');
    await waitText('#account-message', /too common/);
    assert.equal(await stored(), null, 'no session yet');
    await shot(page, 'account-signup-refused');
  });

  await t.test('signing up signs in and holds the selection; paying gets the ticket', async () => {
    await page.fill('#signup-password', password);
    const held = page.waitForResponse((r) => r.url().endsWith(`/v1/shows/${acctShow}/holds`) && r.request().method() === 'POST');
    await page.click('#signup-submit');
    assert.equal((await held).status(), 201);
    await page.waitForSelector('#account', { state: 'hidden' });
    assert.equal(await page.textContent('#who'), 'signed in as Nia');
    assert.equal(await page.isVisible('#signout-btn'), true);
    await page.waitForSelector('#panel-hold:not([hidden])');
    await expectSeat(page, 'E3', 'mine', 1000, 'the newcomer\'s hold');
    const s = await stored();
    assert.ok(s && s.refreshToken && s.accessToken, 'the session is kept in localStorage');
    await page.selectOption('#card-select', 'tok_ok');
    await page.click('#pay-btn');
    await page.waitForSelector('#panel-ticket:not([hidden])', { timeout: 5000 });
    assert.match(await page.textContent('#ticket'), /Seats\s*E3, E4/);
    bookingId = (await page.textContent('#ticket .ticket-id')).trim();
    assert.ok(bookingId, 'a booking id');
    await shot(page, 'account-ticket');
  });

  await t.test('My tickets shows the booking confirmed with its QR, and a live hold that the picker picks up again', async () => {
    await page.click('#map [data-seat="E6"]');
    await page.click('#hold-btn');
    await page.waitForSelector('#panel-hold:not([hidden])');
    await page.click('#nav-tickets');
    await page.waitForSelector('#tickets[data-loaded="true"]');
    const booking = page.locator(`.booking[data-booking-id="${bookingId}"]`);
    await booking.waitFor();
    assert.match(await booking.textContent(), new RegExp(`Accounts ${RUN_TAG}`));
    assert.equal((await booking.locator('.my-status').textContent()).trim(), 'Confirmed');
    assert.equal((await booking.locator('.my-seats').textContent()).trim(), 'E3, E4');
    await booking.locator('.show-ticket').click();
    await booking.locator('img.qr').waitFor();
    assert.match(await booking.locator('.ticket-token').textContent(), /^T1\./);
    const hold = page.locator('.hold-item');
    assert.equal(await hold.count(), 1, 'one live hold');
    assert.equal((await hold.locator('.my-seats').textContent()).trim(), 'E6');
    assert.match(await hold.locator('.hold-left').textContent(), /^[01]\d:\d\d$/);
    await shot(page, 'account-my-tickets');
    // Back to the show: the picker finds the hold again and can release it.
    await hold.locator('a').click();
    await page.waitForSelector('#panel-hold:not([hidden])');
    await expectSeat(page, 'E6', 'mine', 2000, 'the picked-up hold');
    assert.match(await message(page), /You still hold E6/);
    await page.click('#release-btn');
    await page.waitForFunction(() => /released/.test(document.querySelector('#message').textContent));
  });

  await t.test('signing out revokes the session; the same email cannot sign up twice; a wrong password is refused', async () => {
    await page.click('#nav-tickets');
    await page.waitForSelector('#tickets[data-loaded="true"]');
    const before = await stored();
    await page.click('#signout-btn');
    await page.waitForSelector('#signin-open:not([hidden])');
    assert.equal(await stored(), null, 'nothing stays in localStorage');
    assert.equal(await page.textContent('#who'), '');
    await page.waitForSelector('#tickets-signedout:not([hidden])');
    assert.equal(await page.locator('.booking').count(), 0, 'no tickets shown once signed out');
    const replay = await apiCall('POST', '/v1/auth/refresh', null, { refreshToken: before.refreshToken });
    assert.equal(replay.status, 401, 'the signed-out refresh token is dead');

    await page.click('#tab-signup');
    await page.fill('#signup-email', email.toLowerCase());
    await page.fill('#signup-password', `another ${password}`);
    await page.click('#signup-submit');
    await waitText('#account-message', /already registered/);
    assert.equal(await accountMessage(), 'This email is already registered. Sign in instead, or use another email.');

    await page.click('#tab-signin');
    await page.fill('#signin-email', email);
    await page.fill('#signin-password', `${password}!`);
    await page.click('#signin-submit');
    await waitText('#account-message', /Wrong/);
    assert.equal(await accountMessage(), 'Wrong email or password.');
    await shot(page, 'account-wrong-password');
  });

  await t.test('when the server throttles, the page says how long to wait', async () => {
    await page.route('**/v1/auth/login', (route) => route.fulfill({
      status: 429, headers: { 'Retry-After': '42', 'Content-Type': 'application/problem+json' },
      body: JSON.stringify({ type: 'https://seatd.dev/problems/rate-limited', title: 'too many requests', status: 429 }),
    }), { times: 1 });
    await page.fill('#signin-password', password);
    await page.click('#signin-submit');
    await waitText('#account-message', /Too many/);
    assert.match(await accountMessage(), /^Too many attempts\. Try again in 4[12] s\.$/);
    // The page itself waits: a second try within the window sends nothing.
    const logins = sent.login;
    await page.click('#signin-submit');
    assert.match(await accountMessage(), /^Too many attempts\. Try again in \d+ s\.$/);
    assert.equal(sent.login, logins, 'no login sent while throttled');
  });

  await t.test('signing in again shows the ticket again', async () => {
    // The throttle window above is the page's own (the server never throttled): lift it.
    await page.reload();
    await page.waitForSelector('#account:not([hidden])');
    await page.fill('#signin-email', email);
    await page.fill('#signin-password', password);
    await page.click('#signin-submit');
    await page.waitForSelector('#account', { state: 'hidden' });
    assert.equal(await page.textContent('#who'), 'signed in as Nia');
    await page.waitForSelector('#tickets[data-loaded="true"]');
    const booking = page.locator(`.booking[data-booking-id="${bookingId}"]`);
    await booking.waitFor();
    assert.equal((await booking.locator('.my-status').textContent()).trim(), 'Confirmed');
    assert.equal(await page.locator('.hold-item').count(), 0, 'the released hold is gone');
  });

  await t.test('two tabs whose access token ran out refresh it once between them, and both stay signed in', async () => {
    await page.evaluate(() => {
      const s = JSON.parse(localStorage.getItem('seatd.session'));
      s.accessExp = 0;
      localStorage.setItem('seatd.session', JSON.stringify(s));
    });
    const before = (await stored()).refreshToken;
    const refreshes = sent.refresh;
    const [p1, p2] = [watch(await ctx.newPage()), watch(await ctx.newPage())];
    await Promise.all([p1, p2].map((p) => p.goto(`${BASE}/?view=tickets`)));
    for (const p of [p1, p2]) {
      await p.waitForSelector('#tickets[data-loaded="true"]');
      await p.locator(`.booking[data-booking-id="${bookingId}"]`).waitFor({ timeout: 2000 });
      assert.equal(await p.textContent('#who'), 'signed in as Nia');
    }
    assert.equal(sent.refresh - refreshes, 1, 'exactly one refresh for two tabs');
    const after = await stored();
    assert.notEqual(after.refreshToken, before, 'the refresh token was rotated');
    assert.ok(after.accessExp > Date.now() + 60000, 'a fresh access token');
    noPageErrors(p1, p2);
    await p1.close();
    await p2.close();
  });

  await t.test('a refused access token is refreshed and the call retried', async () => {
    await page.evaluate(() => {
      const s = JSON.parse(localStorage.getItem('seatd.session'));
      s.accessToken = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJub2JvZHkifQ.c2lnbmF0dXJl';
      localStorage.setItem('seatd.session', JSON.stringify(s));
    });
    const refreshes = sent.refresh;
    await page.reload();
    await page.waitForSelector('#tickets[data-loaded="true"]');
    await page.locator(`.booking[data-booking-id="${bookingId}"]`).waitFor({ timeout: 2000 });
    assert.equal(sent.refresh - refreshes, 1, 'one refresh after the 401s');
    assert.equal(await page.isVisible('#signout-btn'), true);
  });

  await t.test('on a phone, signing in and My tickets fit the screen', async () => {
    const phone = await newContext({ viewport: { width: 375, height: 667 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
    const p = watch(await phone.newPage());
    await p.goto(`${BASE}/?view=tickets`);
    await p.waitForSelector('#account:not([hidden])');
    await p.fill('#signin-email', email);
    await p.fill('#signin-password', password);
    await p.tap('#signin-submit');
    await p.locator(`.booking[data-booking-id="${bookingId}"]`).waitFor({ timeout: 5000 });
    await p.locator('.show-ticket').first().tap();
    await p.locator('.booking img.qr').waitFor();
    const m = await p.evaluate(() => ({
      docWidth: document.documentElement.scrollWidth,
      signout: document.querySelector('#signout-btn').getBoundingClientRect().height,
      ticketBtn: document.querySelector('.show-ticket').getBoundingClientRect().height,
    }));
    assert.ok(m.docWidth <= 375, `no sideways scrolling (width ${m.docWidth})`);
    assert.ok(m.signout >= 32 && m.ticketBtn >= 32, `tap targets at least 32 px (${m.signout}, ${m.ticketBtn})`);
    await shot(p, 'phone-my-tickets');
    noPageErrors(p);
  });

  await t.test('more than a page of bookings: "Show more" brings the older ones', async () => {
    // Ten more bookings, straight through the API with the page's own access token (a buyer
    // may hold at most 10 seats per show: 8 more here, 2 on the first test's show).
    const { accessToken } = await stored();
    const book = async (show, seat) => {
      const h = await apiCall('POST', `/v1/shows/${encodeURIComponent(show)}/holds`, accessToken,
        { seatIds: [seat], idempotencyKey: randomUUID() });
      assert.equal(h.status, 201, h.text);
      const b = await apiCall('POST', '/v1/bookings', accessToken, { holdId: h.body.holdId, paymentMethod: 'tok_ok' });
      assert.equal(b.status, 201, b.text);
    };
    for (let n = 1; n <= 8; n++) await book(acctShow, `A${n}`);
    for (const seat of ['A1', 'A2']) await book(showId, seat);
    await page.reload();
    await page.waitForSelector('#tickets[data-loaded="true"]');
    assert.equal(await page.locator('.booking').count(), 10, 'a page of ten');
    assert.equal(await page.isVisible('#bookings-more'), true);
    assert.equal(await page.locator(`.booking[data-booking-id="${bookingId}"]`).count(), 0, 'the oldest is on the next page');
    assert.match(await page.locator('.booking').first().textContent(), new RegExp(`Browser test ${RUN_TAG}`), 'newest first');
    await page.click('#bookings-more');
    await page.locator(`.booking[data-booking-id="${bookingId}"]`).waitFor();
    assert.equal(await page.locator('.booking').count(), 11);
    await page.waitForSelector('#bookings-more', { state: 'hidden' });
    await shot(page, 'account-my-tickets-paged');
  });

  for (const a of sent.auth) assert.ok(!minted.has(a), 'no token minted by a tool reached the buyer\'s browser');
  assert.ok(sent.auth.size > 0, 'the page sent its own access tokens');
  noPageErrors(page);
});

/* ---------------------------------------------------------------- the waiting room (issue 15) */

test('a queued show: join, wait, be let in, hold with the admission; the next in line is told sold out', async () => {
  const seats = [1, 2].map((n) => ({ id: `A${n}`, row: 'A', number: n, tier: 'standard', x: n, y: 1 }));
  const opens = new Date(Date.now() - 5000).toISOString().replace(/\.\d+Z$/, 'Z');
  const res = await apiCall('POST', '/v1/shows', tokens.admin, {
    ...showBody(), title: `On sale ${RUN_TAG}`, seats,
    queue: { opensAt: opens, maxShoppers: 1, admissionSeconds: 60, seatsPerShopper: 2 },
  });
  assert.equal(res.status, 201, res.text);
  const show = res.body.id;
  const qa = mintToken(`qa-${RUN_TAG}`);
  const qb = mintToken(`qb-${RUN_TAG}`);
  const open = async (tok) => {
    const ctx = await newContext();
    const page = await ctx.newPage();
    page.on('pageerror', (err) => { page.__errors = (page.__errors || []).concat(String(err)); });
    await page.goto(`${BASE}/?show=${encodeURIComponent(show)}#token=${encodeURIComponent(tok)}`);
    await page.waitForSelector('#map [data-seat="A2"]');
    await page.waitForSelector('#queue-join:not([hidden])');
    return page;
  };
  const a = await open(qa);
  // Before joining: the waiting room, no way to hold.
  assert.equal(await a.isVisible('#panel-select'), false, 'no seat choice before admission');
  await a.click('#queue-join');
  await a.waitForFunction(() => document.querySelector('#queue-panel').dataset.state === 'ADMITTED');
  assert.match(await a.textContent('#queue-text'), /your turn/i);
  assert.equal(await a.isVisible('#panel-select'), true, 'admitted: seats can be chosen');

  const b = await open(qb);
  await b.click('#queue-join');
  await b.waitForFunction(() => document.querySelector('#queue-panel').dataset.state === 'WAITING');
  assert.match(await b.textContent('#queue-text'), /next|in line/i);
  assert.equal(await b.isVisible('#panel-select'), false, 'waiting: no seat choice');
  await b.waitForSelector('#queue-progress:not([hidden])');
  await shot(b, 'queue-waiting');

  // A holds both seats with the admission (the header), then pays.
  await a.click('#map [data-seat="A1"]');
  await a.click('#map [data-seat="A2"]');
  await a.click('#hold-btn');
  await a.waitForSelector('#panel-hold:not([hidden])');
  const holds = await apiCall('GET', '/v1/me/holds', qa);
  assert.equal(holds.status, 200, holds.text);
  const holdId = (holds.body.holds || holds.body.items || [])[0]?.holdId;
  assert.ok(holdId, holds.text);
  const paid = await apiCall('POST', '/v1/bookings', qa, { holdId, paymentMethod: 'tok_ok' });
  assert.equal(paid.status, 201, paid.text);
  const soldAt = Date.now();
  // B is told at once, by the show's WebSocket: sold out, nobody else let in.
  await b.waitForFunction(() => document.querySelector('#queue-panel').dataset.state === 'SOLD_OUT',
    undefined, { timeout: 2000, polling: 25 });
  const ms = Date.now() - soldAt;
  assert.ok(ms <= 1500, `sold out shown after ${ms} ms`);
  assert.match(await b.textContent('#queue-text'), /sold out/i);
  await shot(b, 'queue-sold-out');
  noPageErrors(a, b);
});

/* ---------------------------------------------------------------- a newcomer's first hour (issue 32) */

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };

/* Is the element wholly inside the window, and on top there (not behind something else)? */
function inView(page, sel) {
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

async function shotView(page, name) {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), animations: 'disabled' });
}

test('a queued show: a buyer who paid is shown the purchase, never "your turn has passed", also past the admission deadline and after a reload', async (t) => {
  const ADMISSION_S = 10;   // the least the API takes (queue.admissionSeconds 10-3600)
  const seats = [1, 2, 3, 4, 5, 6].map((n) => ({ id: `A${n}`, row: 'A', number: n, tier: 'standard', x: n, y: 1 }));
  const opens = new Date(Date.now() - 5000).toISOString().replace(/\.\d+Z$/, 'Z');
  const res = await apiCall('POST', '/v1/shows', tokens.admin, {
    ...showBody(), title: `Short turn ${RUN_TAG}`, seats, holdTtlSeconds: 120,
    queue: { opensAt: opens, maxShoppers: 10, admissionSeconds: ADMISSION_S, seatsPerShopper: 2 },
  });
  assert.equal(res.status, 201, res.text);
  const show = res.body.id;
  const toks = { pia: mintToken(`pia-${RUN_TAG}`), hal: mintToken(`hal-${RUN_TAG}`) };
  const open = async (tok) => {
    const ctx = await newContext();
    // Every text the waiting room ever shows, to catch a moment of "join again" as well.
    await ctx.addInitScript(() => {
      window.__queueTexts = [];
      document.addEventListener('DOMContentLoaded', () => {
        const p = document.querySelector('#queue-panel');
        new MutationObserver(() => {
          const text = `${p.dataset.state}: ${p.innerText.replace(/\s+/g, ' ')}`;
          if (!p.hidden && window.__queueTexts.at(-1) !== text) window.__queueTexts.push(text);
        }).observe(p, { subtree: true, childList: true, characterData: true, attributes: true });
      });
    });
    const page = await ctx.newPage();
    page.on('pageerror', (err) => { page.__errors = (page.__errors || []).concat(String(err)); });
    page.__placeReads = [];   // when the page's reads of its place were answered
    page.on('response', (r) => { if (/\/v1\/queue\//.test(r.url())) page.__placeReads.push(Date.now()); });
    await page.goto(`${BASE}/?show=${encodeURIComponent(show)}#token=${encodeURIComponent(tok)}`);
    await page.waitForSelector('#map [data-seat="A6"]');
    await page.waitForSelector('#queue-join:not([hidden])');
    return page;
  };
  const panelState = (page) => page.getAttribute('#queue-panel', 'data-state');
  const queueText = async (page) => (await page.innerText('#queue-panel')).replace(/\s+/g, ' ');
  const LAPSED = /passed|join again|within \d+:\d\d/i;
  const pia = await open(toks.pia);
  const hal = await open(toks.hal);
  const deadline = {};

  await t.test('before joining, a tapped seat is not selected: the page says to join the queue first', async () => {
    await pia.click('#map [data-seat="A3"]', { force: true });   // aria-disabled: not a target
    assert.doesNotMatch(await seatClass(pia, 'A3'), /\bselected\b/);
    assert.match(await message(pia), /join the queue first/i);
    const v = await inView(pia, '#message');
    assert.ok(v.inside && v.onTop, `the message is in view (${v.box})`);
    assert.equal(await pia.isVisible('#panel-select'), false);
  });

  await t.test('joined and admitted, Pia holds the best 2 seats and pays: beside the ticket, the purchase, no countdown', async () => {
    for (const [name, page] of [['pia', pia], ['hal', hal]]) {
      await page.click('#queue-join');
      await page.waitForFunction(() => document.querySelector('#queue-panel').dataset.state === 'ADMITTED');
      const ticket = await page.evaluate((id) => localStorage.getItem(`seatd.queue.${id}`), show);
      const place = await apiCall('GET', `/v1/queue/${encodeURIComponent(ticket)}`, toks[name]);
      assert.equal(place.body.state, 'ADMITTED', place.text);
      deadline[name] = { ticket, at: Date.parse(place.body.expiresAt) };
    }
    await pia.selectOption('#best-count', '2');
    await pia.click('#best-btn');
    await pia.waitForSelector('#panel-hold:not([hidden])');
    assert.doesNotMatch(await queueText(pia), LAPSED, 'no admission countdown beside the held seats');
    assert.equal(await panelState(pia), 'HOLDING');
    await pia.selectOption('#card-select', 'tok_ok');
    await pia.click('#pay-btn');
    await pia.waitForSelector('#panel-ticket:not([hidden])', { timeout: 5000 });
    assert.match(await message(pia), /Booked!/);
    const text = await queueText(pia);
    assert.doesNotMatch(text, LAPSED, 'no countdown beside the ticket');
    assert.match(text, /You booked A\d, A\d for this show/);
    assert.equal(await panelState(pia), 'BOOKED');
    assert.equal(await pia.isVisible('#queue-join'), false);
    assert.equal(await pia.isVisible('#queue-progress'), false);
    await shot(pia, 'queue-booked');

    // Hal holds, and is still paying when his turn ends.
    await hal.selectOption('#best-count', '2');
    await hal.click('#best-btn');
    await hal.waitForSelector('#panel-hold:not([hidden])');
    assert.equal(await panelState(hal), 'HOLDING');
  });

  await t.test('past the admission deadline: still the purchase (and still the held seats), never "your turn has passed"', async () => {
    const last = Math.max(deadline.pia.at, deadline.hal.at);
    t.diagnostic(`admissions end ${last - Date.now()} ms from now`);
    await sleep(Math.max(0, last - Date.now()) + 2000);
    for (const name of ['pia', 'hal']) {
      const place = await apiCall('GET', `/v1/queue/${encodeURIComponent(deadline[name].ticket)}`, toks[name]);
      assert.equal(place.body.state, 'EXPIRED', `the server says ${name}'s turn has lapsed: ${place.text}`);
    }
    // Each page has read its place since (the server's "EXPIRED"): what it shows now is its
    // answer to the lapse.
    for (const [name, page] of [['pia', pia], ['hal', hal]]) {
      const since = Date.now();
      while (!page.__placeReads.some((at) => at > deadline[name].at)) {
        assert.ok(Date.now() - since < 10000, `${name}'s page read its place after the deadline (reads at ${
          page.__placeReads.map((at) => at - deadline[name].at).join(', ')} ms from it)`);
        await sleep(100);
      }
    }
    await sleep(500);
    assert.doesNotMatch(await queueText(pia), LAPSED, 'past the deadline, beside the ticket');
    assert.equal(await pia.isVisible('#queue-join'), false, 'no "Join again"');
    assert.equal(await panelState(pia), 'BOOKED');
    assert.equal(await pia.isVisible('#panel-ticket'), true, 'the ticket stays');
    assert.equal(await pia.isVisible('#again-btn'), false, '"Pick more seats" only while the turn lasts');
    await shot(pia, 'queue-booked-after-deadline');

    assert.doesNotMatch(await queueText(hal), LAPSED, 'past the deadline, beside the held seats');
    assert.equal(await panelState(hal), 'HOLDING');
    assert.equal(await hal.isVisible('#pay-btn'), true, 'the held seats can still be paid for');
    await hal.click('#pay-btn');
    await hal.waitForSelector('#panel-ticket:not([hidden])', { timeout: 5000 });
    assert.equal(await panelState(hal), 'BOOKED');
    assert.doesNotMatch(await queueText(hal), LAPSED);
    for (const [name, page] of [['pia', pia], ['hal', hal]]) {
      const seen = await page.evaluate(() => window.__queueTexts);
      assert.ok(!seen.some((s) => /passed|join again/i.test(s)), `${name} never saw a lapsed turn: ${seen.join(' | ')}`);
    }
  });

  await t.test('reloaded after the deadline, the page shows the purchase; a tapped seat says so', async () => {
    await pia.reload();
    await pia.waitForSelector('#map [data-seat="A6"]');
    await pia.waitForFunction(() => document.querySelector('#queue-panel').dataset.state === 'BOOKED', undefined, { timeout: 5000 });
    assert.match(await queueText(pia), /You booked A\d, A\d for this show/);
    assert.equal(await pia.isVisible('#queue-join'), false);
    assert.equal(await pia.isVisible('#queue-tickets'), true, 'a way to the tickets');
    const seen = await pia.evaluate(() => window.__queueTexts);
    assert.ok(!seen.some((s) => /passed|join again/i.test(s)), `not even for a moment: ${seen.join(' | ')}`);
    const free = await pia.$$eval('#map .seat.available', (els) => els.map((e) => e.getAttribute('data-seat')));
    if (free.length) {
      await pia.click(`#map [data-seat="${free[0]}"]`, { force: true });
      assert.doesNotMatch(await seatClass(pia, free[0]), /\bselected\b/);
      assert.match(await message(pia), /booked your seats/i);
    }
    await shot(pia, 'queue-booked-reloaded');
  });
  noPageErrors(pia, hal);
});

test('on a 390x844 phone, a refusal is shown in view: "Find best seats" with 10 seats already bought', async () => {
  // A hall of 20 rows: on a phone the page is much longer than the screen (the demo show's is
  // about 2,100 px), so the button and the top of the page are never in view together.
  const seats = [];
  for (let r = 0; r < 20; r++) {
    const row = String.fromCharCode(65 + r);
    for (let n = 1; n <= 10; n++) seats.push({ id: `${row}${n}`, row, number: n, tier: r < 10 ? 'standard' : 'premium', x: n, y: r + 1 });
  }
  const show = await createShow('Limit', { seats });
  const tok = mintToken(`lim-${RUN_TAG}`);
  const ten = Array.from({ length: 10 }, (_, i) => `A${i + 1}`);
  const h = await apiCall('POST', holdsPath(show), tok, { seatIds: ten, idempotencyKey: randomUUID() });
  assert.equal(h.status, 201, h.text);
  const b = await apiCall('POST', '/v1/bookings', tok, { holdId: h.body.holdId, paymentMethod: 'tok_ok' });
  assert.equal(b.status, 201, b.text);
  const { page } = await openPicker(await newContext(PHONE), tok, { show });
  const answer = page.waitForResponse(isHoldPost(show));
  await page.tap('#best-btn');
  const res = await answer;
  assert.equal(res.status(), 422);
  assert.match((await res.json()).type, /seat-limit$/);
  await page.waitForFunction(() => document.querySelector('#message').textContent.length > 0);
  const v = await inView(page, '#message');
  assert.ok(v.inside, `the refusal is inside the window (${v.box})`);
  assert.ok(v.onTop, 'and not covered');
  assert.match(await message(page), /already have 10 seats for this show/);
  const btn = await inView(page, '#best-btn');
  assert.ok(btn.inside && btn.onTop, `the button just tapped stays in view, not under the message (${btn.box})`);
  const y = await page.evaluate(() => window.scrollY);
  assert.ok(y > 400, `the buyer was scrolled down to the button (${y} px)`);
  await shotView(page, 'phone-refusal-in-view');

  // A seat tapped at the top of the page: the answer is in view there as well.
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.tap('#map [data-seat="A1"]', { force: true });
  assert.match(await message(page), /Row A seat 1 is already booked/);
  const v2 = await inView(page, '#message');
  assert.ok(v2.inside && v2.onTop, `in view at the top of the page too (${v2.box})`);
  // Dismissed, it is gone and leaves no room behind.
  await page.tap('#notice-close');
  assert.equal(await page.isVisible('#notice'), false);
  noPageErrors(page);
});

test('on a phone, the row letters stay in view when a wide hall is scrolled sideways', async () => {
  const seats = [];
  ['A', 'B', 'C', 'D', 'E'].forEach((row, ri) => {
    for (let n = 1; n <= 30; n++) seats.push({ id: `${row}${n}`, row, number: n, tier: ri < 3 ? 'standard' : 'premium', x: n, y: ri + 1 });
  });
  const show = await createShow('Wide', { seats });
  const { page } = await openPicker(await newContext(PHONE), mintToken(`wid-${RUN_TAG}`), { show });
  const dims = await page.evaluate(() => {
    const s = document.querySelector('#map-scroll');
    return { sw: s.scrollWidth, cw: s.clientWidth };
  });
  assert.ok(dims.sw > dims.cw * 2, `a 30-seat row is wider than the phone (${dims.sw} vs ${dims.cw})`);
  for (const where of ['end', 'middle']) {
    await page.evaluate((w) => {
      const s = document.querySelector('#map-scroll');
      s.scrollLeft = w === 'end' ? s.scrollWidth : (s.scrollWidth - s.clientWidth) / 2;
    }, where);
    await page.waitForTimeout(100);
    const labels = await page.evaluate(() => {
      const box = document.querySelector('#map-scroll').getBoundingClientRect();
      return [...document.querySelectorAll('.row-labels text')].map((t) => {
        const r = t.getBoundingClientRect();
        const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
        return {
          row: t.textContent,
          inside: r.width > 0 && r.left >= box.left - 0.5 && r.right <= box.right + 0.5,
          atLeft: r.left - box.left < 40,
          onTop: !!hit && t.ownerSVGElement.contains(hit),
          left: Math.round(r.left - box.left),
        };
      });
    });
    assert.deepEqual(labels.map((l) => l.row), ['A', 'B', 'C', 'D', 'E']);
    for (const l of labels) {
      assert.ok(l.inside && l.atLeft, `scrolled to the ${where}: row ${l.row}'s letter is at the left edge of the map (x ${l.left})`);
      assert.ok(l.onTop, `scrolled to the ${where}: row ${l.row}'s letter is not under a seat`);
    }
    await shotView(page, `phone-wide-hall-${where}`);
  }
  // A tap on a seat right of the letters still selects it.
  const target = await page.evaluate(() => {
    const box = document.querySelector('#map-scroll').getBoundingClientRect();
    const seat = [...document.querySelectorAll('#map [data-seat^="C"]')]
      .find((e) => e.getBoundingClientRect().left > box.left + 60);
    return seat.getAttribute('data-seat');
  });
  await page.tap(`#map [data-seat="${target}"]`);
  assert.match(await seatClass(page, target), /\bselected\b/);
  noPageErrors(page);
});

test('My tickets: a declined card then a good one is one booking, the decline an attempt of it; an unpaid decline is no booking', async () => {
  const show = await createShow('Tickets');
  const tok = mintToken(`tix-${RUN_TAG}`);
  const { page } = await openPicker(await newContext(), tok, { show });
  await page.click('#map [data-seat="C3"]');
  await page.click('#map [data-seat="C4"]');
  await page.click('#hold-btn');
  await page.waitForSelector('#panel-hold:not([hidden])');
  await page.selectOption('#card-select', 'tok_declined');
  await page.click('#pay-btn');
  await page.waitForFunction(() => /declined/i.test(document.querySelector('#message').textContent));
  await page.selectOption('#card-select', 'tok_ok');
  await page.click('#pay-btn');
  await page.waitForSelector('#panel-ticket:not([hidden])', { timeout: 5000 });
  const bookingId = (await page.textContent('#ticket .ticket-id')).trim();
  // Another hold, declined, then let go: no booking at all.
  const h = await apiCall('POST', holdsPath(show), tok, { seatIds: ['D1'], idempotencyKey: randomUUID() });
  assert.equal(h.status, 201, h.text);
  const d = await apiCall('POST', '/v1/bookings', tok, { holdId: h.body.holdId, paymentMethod: 'tok_declined' });
  assert.equal(d.status, 402, d.text);
  assert.equal((await apiCall('DELETE', `/v1/holds/${encodeURIComponent(h.body.holdId)}`, tok)).status, 200);
  // The API lists the attempts as FAILED bookings; the page decides how to show them.
  const listed = await apiCall('GET', '/v1/me/bookings?limit=20', tok);
  const st = (listed.body.bookings || []).map((x) => x.status).sort();
  assert.deepEqual(st, ['CONFIRMED', 'FAILED', 'FAILED'], listed.text);

  await page.goto(`${BASE}/?view=tickets`);
  await page.waitForSelector('#tickets[data-loaded="true"]');
  assert.equal(await page.locator('.booking').count(), 1, 'one booking: the one that was paid');
  const booking = page.locator(`.booking[data-booking-id="${bookingId}"]`);
  assert.equal((await booking.locator('.my-status').textContent()).trim(), 'Confirmed');
  assert.equal((await booking.locator('.my-seats').textContent()).trim(), 'C3, C4');
  assert.equal((await booking.locator('.my-amount').textContent()).trim(), '€36.00');
  assert.match(await booking.locator('.my-attempts').textContent(),
    /^An earlier payment attempt for these seats was not accepted \(card declined\); nothing was charged for it\.$/);
  assert.match(await page.textContent('#bookings-attempts'), /^One payment attempt \(card declined\) made no booking and charged nothing, so it is not listed\.$/);
  assert.doesNotMatch(await page.textContent('#tickets'), /payment failed/i);
  await shot(page, 'my-tickets-declined-then-paid');

  // Money given back (a charge that landed after the seats were lost) is a refund, said so. The
  // fake gateway cannot lose seats on demand: the entry is added to the API's answer.
  await page.route(/\/v1\/me\/bookings(\?|$)/, async (route) => {
    const r = await route.fetch();
    const body = await r.json();
    body.bookings.unshift({
      bookingId: `${show}-brefunded`, status: 'FAILED', holdId: `${show}-hgone`, showId: show, seatIds: ['E1'],
      amount: 2600, currency: 'EUR', reason: 'seats_lost_refunded', refundStatus: 'succeeded', refund: 2600,
      createdAt: new Date().toISOString(),
    });
    await route.fulfill({ response: r, json: body });
  });
  await page.reload();
  await page.waitForSelector('#tickets[data-loaded="true"]');
  const refunded = page.locator(`.booking[data-booking-id="${show}-brefunded"]`);
  assert.equal(await page.locator('.booking').count(), 2);
  assert.equal((await refunded.locator('.my-status').textContent()).trim(), 'Not booked: refunded');
  assert.match(await refunded.textContent(), /Refunded\s*€26\.00/);
  assert.doesNotMatch(await page.textContent('#tickets'), /payment failed/i);
  await shot(page, 'my-tickets-refunded');
  noPageErrors(page);
});

test('money carries its currency, written the buyer\'s way: legend, tiers, selection, hold, ticket, catalogue', async (t) => {
  const show = await createShow('Prices');
  await t.test('en-US: €12.00', async () => {
    const tok = mintToken(`eur-${RUN_TAG}`);
    const { page } = await openPicker(await newContext(), tok, { show });
    const legend = await page.textContent('#legend');
    assert.match(legend, /Standard\s*€12\.00/);
    assert.match(legend, /Premium\s*€18\.00/);
    assert.match(legend, /VIP\s*€26\.00/);
    const tiers = await page.$$eval('#best-tier option', (os) => os.map((o) => o.textContent));
    assert.deepEqual(tiers, ['Any', 'Standard (€12.00)', 'Premium (€18.00)', 'VIP (€26.00)']);
    await page.click('#map [data-seat="A1"]');
    await page.click('#map [data-seat="A2"]');
    assert.equal(await page.textContent('#selection-total'), 'Total €24.00');
    await page.click('#hold-btn');
    await page.waitForSelector('#panel-hold:not([hidden])');
    assert.equal(await page.textContent('#hold-total'), 'Total €24.00');
    await shot(page, 'desktop-prices-held');
    await page.click('#pay-btn');
    await page.waitForSelector('#panel-ticket:not([hidden])', { timeout: 5000 });
    assert.equal((await page.textContent('#ticket .ticket-amount')).trim(), '€24.00');

    await page.goto(`${BASE}/`);
    const link = page.locator(`#show-list a[href="/?show=${encodeURIComponent(show)}"]`);
    await link.waitFor();
    assert.match(await link.locator('.show-price').textContent(), /^€12\.00\s*[–-]\s*€26\.00$/);
    await shot(page, 'desktop-catalogue-prices');
    noPageErrors(page);
  });
  await t.test('de-DE: 12,00 €', async () => {
    const tok = mintToken(`eud-${RUN_TAG}`);
    const { page } = await openPicker(await newContext({ locale: 'de-DE' }), tok, { show });
    assert.match(await page.textContent('#legend'), /Standard\s*12,00\s€/);
    await page.click('#map [data-seat="B1"]');
    await page.click('#map [data-seat="B2"]');
    assert.match(await page.textContent('#selection-total'), /^Total 24,00\s€$/);
    await page.goto(`${BASE}/`);
    const link = page.locator(`#show-list a[href="/?show=${encodeURIComponent(show)}"]`);
    await link.waitFor();
    assert.match(await link.locator('.show-price').textContent(), /^12,00\s*(€\s*)?[–-]\s*26,00\s€$/);
    noPageErrors(page);
  });
});

/* ---------------------------------------------------------------- standing areas (issue 30) */

/* The demo show, as deploy/up posts it (deploy/demo-show), with a hold TTL long enough to pay. */
async function createDemoShow() {
  const body = JSON.parse(execFileSync(join(HERE, '..', '..', 'deploy', 'demo-show'), ['120'], { encoding: 'utf8' }));
  body.title = `${body.title} ${RUN_TAG}`;
  const res = await apiCall('POST', '/v1/shows', tokens.admin, body);
  assert.equal(res.status, 201, `creating the demo show: ${res.text}`);
  return res.body.id;
}

const areaItem = (page, id) => page.locator(`#areas [data-area="${id}"]`);
const areaFreeText = async (page, id) => (await areaItem(page, id).locator('.area-free').textContent()).trim();

async function expectAreaFree(page, id, text, timeoutMs, why) {
  try {
    await page.waitForFunction(([a, t]) =>
      document.querySelector(`#areas [data-area="${a}"] .area-free`)?.textContent.trim() === t,
    [id, text], { timeout: Math.max(1, timeoutMs), polling: 25 });
  } catch {
    assert.fail(`${why}: area ${id} should say "${text}" within ${timeoutMs} ms; it says "${await areaFreeText(page, id)}"`);
  }
}

test('standing areas: shown with their free counts, held with seats, sold out, refusals in words', async (t) => {
  const demo = await createDemoShow();
  const tokA = mintToken(`ava-${RUN_TAG}`);
  const tokB = mintToken(`ben-${RUN_TAG}`);
  const { page: a } = await openPicker(await newContext(), tokA, { show: demo });
  const { page: b, feed: bFeed } = await openPicker(await newContext(), tokB, { show: demo, valve: true });

  await t.test('the demo show\'s areas are shown with their tier, price and free counts', async () => {
    assert.equal(await a.isVisible('#areas-card'), true);
    assert.deepEqual(await a.$$eval('#areas [data-area]', (els) => els.map((e) => e.dataset.area)), ['FLOOR', 'BALCONY']);
    await expectAreaFree(a, 'FLOOR', '500 of 500 places free', 2000, 'the demo show\'s FLOOR');
    await expectAreaFree(a, 'BALCONY', '120 of 120 places free', 2000, 'the demo show\'s BALCONY');
    assert.equal((await areaItem(a, 'FLOOR').locator('.area-tier').textContent()).trim(), 'Standing · €9.00 a place');
    assert.equal((await areaItem(a, 'BALCONY').locator('.area-tier').textContent()).trim(), 'Standard · €12.00 a place');
    // Accessible: the count and the steppers have names; nothing chosen yet, so "fewer" is off.
    assert.equal(await a.getByLabel('Places in FLOOR').inputValue(), '0');
    assert.equal(await a.getByRole('button', { name: 'One place more in FLOOR' }).isEnabled(), true);
    assert.equal(await a.getByRole('button', { name: 'One place fewer in FLOOR' }).isDisabled(), true);
    // The "standing" tier has no seat: neither a seat colour in the legend nor a seat choice.
    assert.doesNotMatch(await a.textContent('#legend'), /Standing/);
    assert.ok(!(await a.$$eval('#best-tier option', (os) => os.map((o) => o.value))).includes('standing'));
    await shot(a, 'areas-demo-show');
  });

  let holdId;
  await t.test('2 FLOOR places and a seat are held in one POST; the other buyer\'s FLOOR count drops by 2 live', async () => {
    await a.click('#map [data-seat="C7"]');
    await a.getByRole('button', { name: 'One place more in FLOOR' }).click();
    await a.getByRole('button', { name: 'One place more in FLOOR' }).click();
    assert.equal(await a.getByLabel('Places in FLOOR').inputValue(), '2');
    assert.equal(await a.textContent('#selection-text'), '1 seat: C7; FLOOR × 2');
    assert.equal(await a.textContent('#selection-total'), 'Total €30.00');   // 12.00 + 2 x 9.00
    assert.equal((await a.textContent('#hold-btn')).trim(), 'Hold 1 seat and 2 places');
    await shot(a, 'areas-chosen');

    const answer = a.waitForResponse(isHoldPost(demo));
    await a.click('#hold-btn');
    const res = await answer;
    const sent = res.request().postDataJSON();
    assert.deepEqual(sent.seatIds, ['C7']);
    assert.deepEqual(sent.areas, { FLOOR: 2 });
    assert.equal(res.status(), 201, await res.text());
    const heldAt = Date.now();
    const body = await res.json();
    assert.deepEqual(body.areas, { FLOOR: 2 });
    holdId = body.holdId;
    await a.waitForSelector('#panel-hold:not([hidden])');
    assert.equal(await a.textContent('#hold-seats'), 'C7, FLOOR × 2');
    assert.equal(await a.textContent('#hold-total'), 'Total €30.00');
    await expectSeat(a, 'C7', 'mine', 1000, 'A\'s hold');
    // While holding, no more places can be chosen.
    assert.equal(await a.getByLabel('Places in FLOOR').isDisabled(), true);
    const check = await apiCall('GET', `/v1/holds/${encodeURIComponent(holdId)}`, tokA);
    assert.equal(check.status, 200, check.text);
    assert.deepEqual(check.body.areas, { FLOOR: 2 });
    assert.deepEqual(check.body.seatIds, ['C7']);

    // B's page hears it from the live feed (a delta's "areas"), not from a reload.
    let live = true;
    try {
      await expectAreaFree(b, 'FLOOR', '498 of 500 places free', 2000, 'B\'s live FLOOR count');
    } catch (err) {
      live = false;
      t.diagnostic(`not live: ${err.message}; B's feed: ${bFeed.wsFrames} frames, ${bFeed.areaFrames} with "areas"`);
    }
    t.diagnostic(`B's FLOOR count ${live ? `dropped ${Date.now() - heldAt} ms after A's 201` : 'did not drop live'}; ` +
      `B's WebSocket frames: ${bFeed.wsFrames}, with "areas": ${bFeed.areaFrames}`);
    await expectSeat(b, 'C7', 'held', 2000, 'B\'s live map');
    await expectAreaFree(a, 'FLOOR', '498 of 500 places free', 2000, 'A\'s own FLOOR count');
    await expectAreaFree(b, 'BALCONY', '120 of 120 places free', 100, 'B\'s BALCONY, untouched');
    assert.ok(live, 'B\'s FLOOR count dropped by 2 through the live feed within 2 s');
    await shot(b, 'areas-live-count');
  });

  await t.test('paid: the ticket and My tickets list the places', async (st) => {
    await a.click('#pay-btn');
    await a.waitForSelector('#panel-ticket:not([hidden])', { timeout: 5000 });
    const ticket = await a.textContent('#ticket');
    assert.match(ticket, /Seats\s*C7/);
    assert.match(ticket, /Places\s*FLOOR × 2/);
    assert.match(ticket, /Paid\s*€30\.00/);
    const bookingId = (await a.textContent('#ticket .ticket-id')).trim();
    const check = await apiCall('GET', `/v1/bookings/${encodeURIComponent(bookingId)}`, tokA);
    assert.equal(check.status, 200, check.text);
    assert.deepEqual(check.body.areas, { FLOOR: 2 });
    await shot(a, 'areas-ticket');
    await a.goto(`${BASE}/?view=tickets`);
    await a.waitForSelector('#tickets[data-loaded="true"]');
    const booking = a.locator(`.booking[data-booking-id="${bookingId}"]`);
    assert.equal((await booking.locator('.my-seats').textContent()).trim(), 'C7');
    // The list shows the places its entries carry (GET /v1/me/bookings).
    const listed = await apiCall('GET', '/v1/me/bookings?limit=10', tokA);
    const entry = (listed.body.bookings || []).find((x) => x.bookingId === bookingId);
    if (entry && entry.areas) {
      assert.equal((await booking.locator('.my-places').textContent()).trim(), 'FLOOR × 2');
    } else {
      st.diagnostic('GET /v1/me/bookings carries no "areas" yet: the list cannot name the places (the ticket below does)');
      assert.equal(await booking.locator('.my-places').count(), 0);
    }
    // The ticket (the booking itself) names them.
    await booking.locator('.show-ticket').click();
    await booking.locator('.ticket-places').waitFor();
    assert.equal((await booking.locator('.ticket-places').textContent()).trim(), 'FLOOR × 2');
    await shot(a, 'areas-my-tickets');
  });

  await t.test('places alone: the POST has no seatIds; the hold summary lists them; released, they come back', async () => {
    await b.getByRole('button', { name: 'One place more in BALCONY' }).click();
    assert.equal((await b.textContent('#hold-btn')).trim(), 'Hold 1 place');
    assert.equal(await b.textContent('#selection-total'), 'Total €12.00');
    const answer = b.waitForResponse(isHoldPost(demo));
    await b.click('#hold-btn');
    const res = await answer;
    const sent = res.request().postDataJSON();
    assert.equal('seatIds' in sent, false, `no seatIds: ${JSON.stringify(sent)}`);
    assert.deepEqual(sent.areas, { BALCONY: 1 });
    assert.equal(res.status(), 201, await res.text());
    await b.waitForSelector('#panel-hold:not([hidden])');
    assert.equal(await b.textContent('#hold-seats'), 'BALCONY × 1');
    await expectAreaFree(b, 'BALCONY', '119 of 120 places free', 2000, 'B\'s BALCONY after the hold');
    await b.click('#release-btn');
    await b.waitForFunction(() => /released/.test(document.querySelector('#message').textContent));
    await expectAreaFree(b, 'BALCONY', '120 of 120 places free', 3000, 'B\'s BALCONY after the release');
  });
  noPageErrors(b);

  await t.test('a sold-out area says so and its stepper is disabled', async () => {
    const show = await createShow('Pit', { priceTiers: { standard: 1200, premium: 1800, vip: 2600, standing: 900 },
      areas: [{ id: 'PIT', capacity: 1, tier: 'standing' }, { id: 'LAWN', capacity: 3, tier: 'standing' }] });
    const taker = mintToken(`tak-${RUN_TAG}`);
    const h = await apiCall('POST', holdsPath(show), taker, { areas: { PIT: 1 }, idempotencyKey: randomUUID() });
    assert.equal(h.status, 201, h.text);
    const { page } = await openPicker(await newContext(), mintToken(`sol-${RUN_TAG}`), { show });
    await expectAreaFree(page, 'PIT', 'Sold out', 2000, 'PIT, held by another buyer');
    await expectAreaFree(page, 'LAWN', '3 of 3 places free', 100, 'LAWN');
    assert.equal(await areaItem(page, 'PIT').getAttribute('data-soldout'), 'true');
    assert.equal(await page.getByLabel('Places in PIT').isDisabled(), true);
    assert.equal(await page.getByRole('button', { name: 'One place more in PIT' }).isDisabled(), true);
    assert.equal(await page.getByRole('button', { name: 'One place fewer in PIT' }).isDisabled(), true);
    assert.equal(await page.getByRole('button', { name: 'One place more in LAWN' }).isEnabled(), true);
    await shot(page, 'areas-sold-out');
    noPageErrors(page);
  });

  await t.test('too few places left when holding: "only 1 place left in LAWN", nothing held; an unknown area in words', async () => {
    const show = await createShow('Lawn', { priceTiers: { standard: 1200, premium: 1800, vip: 2600, standing: 900 },
      areas: [{ id: 'LAWN', capacity: 3, tier: 'standing' }] });
    const { page, feed } = await openPicker(await newContext(), mintToken(`law-${RUN_TAG}`), { show, valve: true });
    await expectAreaFree(page, 'LAWN', '3 of 3 places free', 2000, 'LAWN before');
    for (let i = 0; i < 3; i++) await page.getByRole('button', { name: 'One place more in LAWN' }).click();
    assert.equal(await page.getByLabel('Places in LAWN').inputValue(), '3');
    assert.equal(await page.getByRole('button', { name: 'One place more in LAWN' }).isDisabled(), true, 'no more than are free');
    // Someone else takes 2 while this page's feed is stalled: it still shows 3 free.
    feed.freeze();
    const other = await apiCall('POST', holdsPath(show), mintToken(`oth-${RUN_TAG}`), { areas: { LAWN: 2 }, idempotencyKey: randomUUID() });
    assert.equal(other.status, 201, other.text);
    const answer = page.waitForResponse(isHoldPost(show));
    await page.click('#hold-btn');
    const res = await answer;
    assert.equal(res.status(), 409);
    const p = await res.json();
    assert.match(p.type, /area-sold-out$/);
    assert.equal(p.available, 1);
    await page.waitForFunction(() => /left in LAWN/.test(document.querySelector('#message').textContent));
    assert.match(await message(page), /^Only 1 place left in LAWN \(you asked for 3\)\. Nothing was held/);
    assert.equal(await page.getAttribute('#message', 'data-kind'), 'error');
    assert.equal(await page.isVisible('#panel-hold'), false, 'nothing held');
    // The refusal's counts are shown, and the choice is cut back to what is left.
    await expectAreaFree(page, 'LAWN', '1 of 3 places free', 500, 'LAWN after the refusal');
    assert.equal(await page.getByLabel('Places in LAWN').inputValue(), '1');
    await shot(page, 'areas-refused');
    feed.thaw();

    // A 400: the page asks for an area the show does not have (the request is altered on its way).
    await page.route((u) => u.pathname.endsWith(holdsPath(show)), (route) => {
      const body = route.request().postDataJSON();
      route.continue({ postData: JSON.stringify({ ...body, areas: { NOPE: 1 } }) });
    });
    const bad = page.waitForResponse(isHoldPost(show));
    await page.click('#hold-btn');
    assert.equal((await bad).status(), 400);
    await page.waitForFunction(() => /NOPE/.test(document.querySelector('#message').textContent));
    assert.equal(await message(page), 'Area NOPE is not in this show. Nothing was held. Reload the page to see what is on sale.');
    assert.equal(await page.isVisible('#panel-hold'), false);
    noPageErrors(page);
  });
  noPageErrors(a);
});

test('standing areas follow the feed: a snapshot\'s "areas" {id: {capacity, available}}, a delta\'s {id: free}, absent is unchanged', async () => {
  // A scripted WebSocket server stands in for the real one, so that each frame of the protocol
  // is tried on its own (the real feed is in the test above).
  const show = await createShow('Feed', { priceTiers: { standard: 1200, premium: 1800, vip: 2600, standing: 900 },
    areas: [{ id: 'FLOOR', capacity: 50, tier: 'standing' }, { id: 'BALC', capacity: 20, tier: 'standard' }] });
  const page = await (await newContext()).newPage();
  page.on('pageerror', (err) => { page.__errors = (page.__errors || []).concat(String(err)); });
  let feed = null;
  await page.routeWebSocket(/\/v1\/shows\/[^/]+\/seats\/ws/, (ws) => { feed = ws; });
  await page.goto(`${BASE}/?show=${encodeURIComponent(show)}#token=${encodeURIComponent(mintToken(`fee-${RUN_TAG}`))}`);
  await page.waitForFunction(() => document.querySelector('#map [data-seat="A1"]')?.dataset.status);
  await expectAreaFree(page, 'FLOOR', '50 of 50 places free', 2000, 'from the availability document');
  await page.waitForFunction(() => document.querySelector('#live').dataset.mode === 'ws');
  assert.ok(feed, 'the page opened the WebSocket');
  const v = (await apiCall('GET', `/v1/shows/${show}/availability`)).body.version;
  const send = (frame) => feed.send(JSON.stringify(frame));

  send({ type: 'snapshot', version: v + 1, seats: {}, areas: { FLOOR: { capacity: 50, available: 40 }, BALC: { capacity: 20, available: 20 } } });
  await expectAreaFree(page, 'FLOOR', '40 of 50 places free', 1000, 'after a snapshot');
  send({ type: 'delta', fromVersion: v + 2, version: v + 2, changes: [], areas: { FLOOR: 37 } });
  await expectAreaFree(page, 'FLOOR', '37 of 50 places free', 1000, 'after a delta naming FLOOR');
  await expectAreaFree(page, 'BALC', '20 of 20 places free', 100, 'BALC, which the delta did not name');
  send({ type: 'delta', fromVersion: v + 3, version: v + 3, changes: [{ seat: 'A1', status: 'held' }] });
  await expectSeat(page, 'A1', 'held', 1000, 'a delta without "areas"');
  await expectAreaFree(page, 'FLOOR', '37 of 50 places free', 100, 'FLOOR after a delta without "areas"');
  // An older frame changes nothing.
  send({ type: 'delta', fromVersion: v + 2, version: v + 2, changes: [], areas: { FLOOR: 45 } });
  await page.waitForTimeout(150);
  await expectAreaFree(page, 'FLOOR', '37 of 50 places free', 100, 'FLOOR after a stale delta');

  // Places chosen beyond what is left are cut back, in words; sold out disables the stepper.
  await page.getByRole('button', { name: 'One place more in BALC' }).click();
  await page.getByRole('button', { name: 'One place more in BALC' }).click();
  assert.equal(await page.textContent('#selection-text'), 'BALC × 2');
  send({ type: 'delta', fromVersion: v + 4, version: v + 4, changes: [], areas: { BALC: 1 } });
  await expectAreaFree(page, 'BALC', '1 of 20 places free', 1000, 'BALC down to 1');
  assert.equal(await page.getByLabel('Places in BALC').inputValue(), '1');
  assert.equal(await message(page), 'Only 1 place left in BALC: your places were cut back.');
  send({ type: 'delta', fromVersion: v + 5, version: v + 5, changes: [], areas: { BALC: 0 } });
  await expectAreaFree(page, 'BALC', 'Sold out', 1000, 'BALC sold out');
  assert.equal(await page.getByLabel('Places in BALC').inputValue(), '0');
  assert.equal(await page.getByLabel('Places in BALC').isDisabled(), true);
  assert.equal(await page.getByRole('button', { name: 'One place more in BALC' }).isDisabled(), true);
  assert.equal(await message(page), 'BALC just sold out: your places were cut back.');
  assert.equal(await page.isDisabled('#hold-btn'), true, 'nothing left to hold');
  noPageErrors(page);
});

/* ---------------------------------------------------------------- sales channels (issue 30) */

const isNotForSale = (page) => page.waitForFunction(() => /not for sale/.test(document.querySelector('#message').textContent));

test('seats kept for a sales channel: "Not for sale" on the map and in the legend, never selectable, a 409 in words', async (t) => {
  const kept = await createShow('Channels', { channels: { boxoffice: { seatIds: ['A1', 'A2'] } } });
  const tok = mintToken(`cara-${RUN_TAG}`);   // a buyer's token: no channels
  const { page, feed } = await openPicker(await newContext(), tok, { show: kept, valve: true });

  await t.test('A1 and A2 are drawn as not for sale, A3 as for sale, and the legend says what that is', async () => {
    for (const id of ['A1', 'A2']) await expectSeat(page, id, 'unavailable', 2000, 'a seat kept for the box office');
    assert.match(await seatClass(page, 'A3'), /\bavailable\b/);
    assert.equal(await page.getAttribute('#map [data-seat="A1"]', 'aria-label'), 'Row A seat 1, standard, €12.00, not for sale');
    assert.equal(await page.getAttribute('#map [data-seat="A1"]', 'aria-disabled'), 'true');
    assert.equal(await page.isVisible('#legend [data-legend="unavailable"]'), true, 'the legend names them');
    assert.equal((await page.textContent('#legend [data-legend="unavailable"]')).trim(), 'Not for sale');
    const seats = await apiCall('GET', `/v1/shows/${kept}/seats`);
    assert.equal(seats.body.seats.A1, 'unavailable', 'the API agrees');
    await shot(page, 'channels-not-for-sale');
  });

  await t.test('without the WebSocket, the availability document\'s "blocked" bitmap alone says so', async () => {
    const poller = await (await newContext()).newPage();
    poller.on('pageerror', (err) => { poller.__errors = (poller.__errors || []).concat(String(err)); });
    await poller.routeWebSocket(/\/seats\/ws/, (ws) => ws.close());
    const seen = [];
    poller.on('response', (r) => { if (/\/availability(\?|$)/.test(r.url())) seen.push(r.status()); });
    await poller.goto(`${BASE}/?show=${encodeURIComponent(kept)}#token=${encodeURIComponent(tok)}`);
    await poller.waitForSelector('#map [data-seat="E10"]');
    for (const id of ['A1', 'A2']) await expectSeat(poller, id, 'unavailable', 2000, 'from the availability document');
    assert.match(await seatClass(poller, 'A3'), /\bavailable\b/);
    assert.ok(seen.includes(200), 'the availability document was read');
    const doc = await apiCall('GET', `/v1/shows/${kept}/availability`);
    assert.equal(typeof doc.body.blocked, 'string', 'the document has "blocked"');
    noPageErrors(poller);
    await poller.close();
  });

  await t.test('clicking a kept seat selects nothing and says so', async () => {
    await page.click('#map [data-seat="A1"]', { force: true });   // aria-disabled: not a target
    assert.doesNotMatch(await seatClass(page, 'A1'), /\b(selected|mine|held)\b/);
    assert.equal(await message(page), 'Row A seat 1 is not for sale.');
    assert.equal(await page.isDisabled('#hold-btn'), true, 'nothing to hold');
  });

  await t.test('a seat kept while it was selected: "Seat A3 is not for sale", nothing held, the rest still selected', async () => {
    await page.click('#map [data-seat="A3"]');
    await page.click('#map [data-seat="A5"]');
    feed.freeze();   // the page does not hear of the new channel before it holds
    const put = await apiCall('PUT', `/v1/admin/shows/${kept}/channels/partner`, tokens.admin, { seatIds: ['A3'] });
    assert.equal(put.status, 200, put.text);
    const held = page.waitForResponse(isHoldPost(kept));
    await page.click('#hold-btn');
    const res = await held;
    assert.equal(res.status(), 409);
    assert.match((await res.json()).type, /\/seat-not-for-sale$/);
    await isNotForSale(page);
    assert.equal(await message(page), 'Seat A3 is not for sale. Nothing was held; your other seats are still selected.');
    assert.match(await seatClass(page, 'A3'), /\bunavailable\b/);
    assert.match(await seatClass(page, 'A5'), /\bselected\b/);
    feed.thaw();
    const mine = await apiCall('GET', '/v1/me/holds', tok);
    assert.equal(mine.status, 200, mine.text);
    const live = (mine.body.holds || mine.body.items || []).filter((h) => String(h.showId) === String(kept) && h.status === 'HELD');
    assert.deepEqual(live, [], 'nothing held');
  });

  await t.test('the channels released: the seats come on sale live, the legend entry goes', async () => {
    for (const ch of ['boxoffice', 'partner']) {
      const del = await apiCall('DELETE', `/v1/admin/shows/${kept}/channels/${ch}`, tokens.admin);
      assert.ok(del.status === 200 || del.status === 204, del.text);
    }
    for (const id of ['A1', 'A2', 'A3']) await expectSeat(page, id, 'available', 3000, 'released by the admin');
    assert.equal(await page.isVisible('#legend [data-legend="unavailable"]'), false);
  });
  noPageErrors(page);
});

/* ---------------------------------------------------------------- event groups (issue 30) */

test('a group of two shows: one POST holds in both, a refusal names the show and holds nothing, "Pay for all" is ONE payment', async (t) => {
  const first = await createShow('Group night 1');
  const second = await createShow('Group night 2', { groupWith: first });
  const g = await apiCall('POST', '/v1/groups', tokens.admin, { title: `Season ${RUN_TAG}`, showIds: [first, second] });
  assert.equal(g.status, 201, `creating the group: ${g.text}`);
  const gid = g.body.id;
  const tok = mintToken(`gus-${RUN_TAG}`);
  const rival = mintToken(`olga-${RUN_TAG}`);
  const page = await (await newContext()).newPage();
  page.on('pageerror', (err) => { page.__errors = (page.__errors || []).concat(String(err)); });
  const holdPosts = [];
  const bookingPosts = [];
  page.on('request', (r) => {
    const path = new URL(r.url()).pathname;
    if (r.method() === 'POST' && /\/holds$/.test(path)) holdPosts.push({ path, body: r.postDataJSON() });
    if (r.method() === 'POST' && path === '/v1/bookings') bookingPosts.push(r.postDataJSON());
  });
  const groupHoldAnswer = () => page.waitForResponse((r) =>
    new URL(r.url()).pathname === `/v1/groups/${gid}/holds` && r.request().method() === 'POST');
  const bookingAnswer = () => page.waitForResponse((r) =>
    new URL(r.url()).pathname === '/v1/bookings' && r.request().method() === 'POST');
  await page.goto(`${BASE}/?group=${encodeURIComponent(gid)}#token=${encodeURIComponent(tok)}`);
  await page.waitForSelector('#map [data-seat="E10"]');
  await page.waitForFunction(() => document.querySelector('#map [data-seat="A1"]').dataset.status);

  await t.test('the page shows the group\'s title, its two shows and the first show\'s map', async () => {
    assert.equal(await page.textContent('#group-title'), `Season ${RUN_TAG}`);
    await page.waitForFunction((n) => [...document.querySelectorAll('#group-shows .group-show-title')]
      .map((e) => e.textContent).join('|') === n, `Group night 1 ${RUN_TAG}|Group night 2 ${RUN_TAG}`);
    assert.equal(await page.getAttribute(`#group-shows [data-show-id="${first}"] a`, 'aria-current'), 'page');
    assert.equal(await page.textContent('#show-title'), `Group night 1 ${RUN_TAG}`);
    assert.equal(await page.isVisible('#best-form'), false, 'best available is a single show\'s');
  });

  await t.test('D5 taken in the second show: the refusal names that show, nothing is held in the first', async () => {
    const taken = await apiCall('POST', `/v1/shows/${second}/holds`, rival, { seatIds: ['D5'] });
    assert.equal(taken.status, 201, taken.text);
    await page.click('#map [data-seat="D5"]');
    const answer = groupHoldAnswer();
    await page.click('#hold-btn');
    const res = await answer;
    assert.equal(res.status(), 409);
    assert.deepEqual((await res.json()).conflicts, { [second]: ['D5'] });
    await page.waitForFunction(() => /nothing was held/.test(document.querySelector('#message').textContent));
    assert.match(await message(page),
      new RegExp(`^D5 is taken in show ${second} \\(Group night 2 ${RUN_TAG}, [^)]+\\): nothing was held in any show\\.`));
    assert.doesNotMatch(await seatClass(page, 'D5'), /\b(selected|mine)\b/);
    const mine = await apiCall('GET', '/v1/me/holds', tok);
    assert.equal(mine.status, 200, mine.text);
    assert.deepEqual((mine.body.holds || mine.body.items || []).filter((h) => h.status === 'HELD'), [],
      'nothing held in either show');
    const s1 = await apiCall('GET', `/v1/shows/${first}/seats?minVersion=0`);
    assert.equal(s1.body.seats.D5, 'available', 'D5 of the first show is still free');
  });

  let answer;
  await t.test('C7 is held in both shows with ONE POST /v1/groups/{id}/holds', async () => {
    holdPosts.length = 0;
    await page.click('#map [data-seat="C7"]');
    const waiting = groupHoldAnswer();
    await page.click('#hold-btn');
    const res = await waiting;
    assert.equal(res.status(), 201);
    answer = await res.json();
    await expectSeat(page, 'C7', 'mine', 1000, 'the group hold, on this show\'s map');
    assert.deepEqual(holdPosts, [{ path: `/v1/groups/${gid}/holds`, body: { seatIds: ['C7'] } }], 'one POST, the group\'s');
    assert.deepEqual(answer.holds.map((h) => h.showId).sort(), [first, second].sort());
    for (const leg of answer.holds) {
      const h = await apiCall('GET', `/v1/holds/${encodeURIComponent(leg.holdId)}`, tok);
      assert.equal(h.status, 200, h.text);
      assert.equal(h.body.status, 'HELD');
      assert.deepEqual(h.body.seatIds, ['C7']);
      const seats = await apiCall('GET', `/v1/shows/${leg.showId}/seats?minVersion=${leg.version}`);
      assert.equal(seats.body.seats.C7, 'held', `C7 held in show ${leg.showId}`);
    }
    assert.deepEqual(await page.$$eval('#hold-legs li', (els) => els.map((e) => e.dataset.showId)), [first, second]);
    assert.match(await page.textContent('#hold-legs'), new RegExp(`Group night 2 ${RUN_TAG}`));
    assert.equal(await page.textContent('#pay-btn'), 'Pay for all');
    assert.equal(await page.isVisible('#hold-charge-note'), true);
    assert.match(await page.textContent('#hold-charge-note'), /^One payment for all the shows/);
    assert.match(await page.textContent('#hold-charge-note'), /ticket comes separately/);
    assert.match(await page.textContent('#hold-total'), /^Total €36\.00 for 2 shows$/);
    await shot(page, 'group-held');
  });

  /* The gateway's own ledger (the stack's runtime folder): the charges made for a hold. */
  const chargesFor = (holdId) => readFileSync(join(RUN_DIR, 'gateway-ledger.jsonl'), 'utf8').split('\n')
    .filter((l) => l.trim()).map((l) => JSON.parse(l))
    .filter((rec) => rec.type === 'charge' && rec.charge.metadata && rec.charge.metadata.holdId === holdId);

  await t.test('a declined card: ONE POST, nothing charged, nothing booked, every show still held', async () => {
    bookingPosts.length = 0;
    await page.selectOption('#card-select', 'tok_declined');
    const waiting = bookingAnswer();
    await page.click('#pay-btn');
    const res = await waiting;
    assert.equal(res.status(), 402);
    await page.waitForFunction(() => /declined/.test(document.querySelector('#message').textContent));
    assert.equal(await message(page),
      'The card was declined. Nothing was charged, and every show is still held: try another card.');
    assert.deepEqual(bookingPosts, [{ holdId: answer.holdId, paymentMethod: 'tok_declined' }], 'one POST, the group hold\'s');
    for (const leg of answer.holds) {
      const h = await apiCall('GET', `/v1/holds/${encodeURIComponent(leg.holdId)}`, tok);
      assert.equal(h.status, 200, h.text);
      assert.equal(h.body.status, 'HELD', `show ${leg.showId} still held`);
    }
    assert.equal(await page.isVisible('#panel-hold'), true);
    assert.equal(await page.textContent('#pay-btn'), 'Pay for all');
    assert.equal(await page.isEnabled('#pay-btn'), true);
    await expectSeat(page, 'C7', 'mine', 1000, 'still held on this show\'s map');
    const charged = chargesFor(answer.holdId);
    assert.deepEqual(charged.map((c) => c.charge.status), ['failed'], 'one attempt at the gateway, declined');
    for (const leg of answer.holds) assert.deepEqual(chargesFor(leg.holdId), [], `no charge of show ${leg.showId}'s own`);
  });

  await t.test('"Pay for all" with a good card: ONE POST, ONE charge for the sum, a ticket for each show', async () => {
    bookingPosts.length = 0;
    await page.selectOption('#card-select', 'tok_ok');
    const waiting = bookingAnswer();
    await page.click('#pay-btn');
    const res = await waiting;
    assert.equal(res.status(), 201);
    const paid = await res.json();
    assert.equal(paid.status, 'CONFIRMED');
    assert.equal(paid.holdId, answer.holdId);
    await page.waitForSelector('#panel-ticket:not([hidden]) #group-tickets .ticket:nth-child(2)', { timeout: 15000 });
    assert.deepEqual(bookingPosts, [{ holdId: answer.holdId, paymentMethod: 'tok_ok' }], 'ONE POST /v1/bookings, the group hold\'s');
    const tickets = await page.$$eval('#group-tickets .ticket', (els) => els.map((e) => ({
      show: e.dataset.showId, booking: e.dataset.bookingId, status: e.querySelector('.ticket-status').textContent,
      token: e.querySelector('.ticket-token')?.textContent || '' })));
    assert.deepEqual(tickets.map((x) => x.show), [first, second]);
    const members = new Map(paid.bookings.map((m) => [String(m.showId), m.bookingId]));
    assert.deepEqual(tickets.map((x) => x.booking), [members.get(first), members.get(second)],
      'each ticket is its show\'s booking from the payment\'s answer');
    let sum = 0;
    for (const x of tickets) {
      assert.equal(x.status, 'Confirmed');
      assert.notEqual(x.booking, paid.bookingId, 'a show\'s ticket, never the payment');
      const b = await apiCall('GET', `/v1/bookings/${encodeURIComponent(x.booking)}`, tok);
      assert.equal(b.status, 200, b.text);
      assert.equal(b.body.status, 'CONFIRMED');
      assert.equal(String(b.body.showId), x.show);
      assert.deepEqual(b.body.seatIds, ['C7']);
      assert.equal(b.body.holdId, answer.holds.find((h) => h.showId === x.show).holdId);
      assert.equal(b.body.paidWith, paid.bookingId);
      assert.ok(b.body.ticketToken, 'the show\'s booking has a ticket code');
      assert.equal(x.token, b.body.ticketToken, 'the ticket shown is that booking\'s');
      sum += b.body.amount;
    }
    assert.equal(sum, 3600, 'C7 is premium (€18.00) in each show');
    const p = await apiCall('GET', `/v1/bookings/${encodeURIComponent(paid.bookingId)}`, tok);
    assert.equal(p.status, 200, p.text);
    assert.equal(p.body.amount, sum, 'the payment is the sum of the shows');
    const charged = chargesFor(answer.holdId).filter((c) => c.charge.status === 'succeeded');
    assert.equal(charged.length, 1, 'the gateway charged once');
    assert.equal(charged[0].charge.amount, sum, 'for the sum');
    assert.equal(charged[0].key, paid.bookingId, 'keyed by the payment');
    for (const leg of answer.holds) assert.deepEqual(chargesFor(leg.holdId), [], `no charge of show ${leg.showId}'s own`);
    assert.match(await message(page), /^Booked 2 shows with one payment for €36\.00! Each show has its own ticket/);
    await expectSeat(page, 'C7', 'booked', 1000, 'booked on this show\'s map');
    await shot(page, 'group-booked');
  });
  noPageErrors(page);
});

test('a group payment answered 202: the page follows the payment until CONFIRMED, then shows each show\'s ticket', async () => {
  const first = await createShow('Group pending 1');
  const second = await createShow('Group pending 2', { groupWith: first });
  const g = await apiCall('POST', '/v1/groups', tokens.admin, { title: `Pending ${RUN_TAG}`, showIds: [first, second] });
  assert.equal(g.status, 201, `creating the group: ${g.text}`);
  const tok = mintToken(`penny-${RUN_TAG}`);
  const page = await (await newContext()).newPage();
  page.on('pageerror', (err) => { page.__errors = (page.__errors || []).concat(String(err)); });
  await page.goto(`${BASE}/?group=${encodeURIComponent(g.body.id)}#token=${encodeURIComponent(tok)}`);
  await page.waitForSelector('#map [data-seat="E10"]');
  await page.waitForFunction(() => document.querySelector('#map [data-seat="A1"]').dataset.status);
  await page.click('#map [data-seat="A4"]');
  await page.click('#hold-btn');
  await page.waitForSelector('#panel-hold:not([hidden]) #hold-legs li:nth-child(2)');

  // The gateway answers at once; the card issuer that keeps a payment pending is played here:
  // the page is told 202 (the payment made, its outcome to be looked up), and must look it up.
  let payment = null;
  const polls = [];
  page.on('request', (r) => {
    if (r.method() === 'GET' && payment && new URL(r.url()).pathname === `/v1/bookings/${payment.bookingId}`) polls.push(r.url());
  });
  await page.route(/\/v1\/bookings$/, async (route) => {
    if (route.request().method() !== 'POST') return route.continue();
    const r = await route.fetch();
    payment = await r.json();
    await route.fulfill({
      status: 202, headers: { Location: `/v1/bookings/${payment.bookingId}` },
      json: { bookingId: payment.bookingId, status: 'PENDING_PAYMENT', holdId: payment.holdId },
    });
  });
  await page.selectOption('#card-select', 'tok_ok');
  await page.click('#pay-btn');
  await page.waitForSelector('#panel-ticket:not([hidden]) #group-tickets .ticket:nth-child(2)', { timeout: 15000 });
  assert.equal(payment.status, 'CONFIRMED', 'the real answer behind the 202');
  assert.ok(polls.length >= 1, 'the page looked the payment up');
  const tickets = await page.$$eval('#group-tickets .ticket', (els) => els.map((e) => ({
    show: e.dataset.showId, booking: e.dataset.bookingId, token: e.querySelector('.ticket-token')?.textContent || '' })));
  const members = new Map(payment.bookings.map((m) => [String(m.showId), m.bookingId]));
  assert.deepEqual(tickets.map((x) => [x.show, x.booking]), [[first, members.get(first)], [second, members.get(second)]]);
  for (const x of tickets) assert.ok(x.token, `show ${x.show}'s ticket has its code`);
  assert.match(await message(page), /^Booked 2 shows with one payment for €24\.00!/);
  noPageErrors(page);
});
