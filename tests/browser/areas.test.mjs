// Standing areas and sales channels (issue 30): free counts, holds of places, the feed's area
// counts, seats kept for a channel.
//
// One of the seat-picker page's end-to-end tests (tests/browser/*.test.mjs), in real headless
// Chromium against a real stack; tests/browser/run brings the stack up and runs them all, one
// file at a time. The browser, the admin's and the first buyers' tokens, the test show and the
// page helpers come from harness.mjs. Screenshots land in artifacts/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import {
  HERE, BASE, RUN_TAG, mintToken, apiCall, tokens, newContext, openPicker, seatClass, expectSeat,
  message, shot, noPageErrors, createShow, holdsPath, isHoldPost, setup
} from './harness.mjs';

setup();

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
  // Already so: passes at once, however slow the machine (a short timeout means "still so").
  const shows = ([a, t]) =>
    document.querySelector(`#areas [data-area="${a}"] .area-free`)?.textContent.trim() === t;
  if (await page.evaluate(shows, [id, text])) return;
  try {
    await page.waitForFunction(shows, [id, text], { timeout: Math.max(1, timeoutMs), polling: 25 });
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
