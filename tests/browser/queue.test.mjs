// The waiting room (issues 15 and 32): join, wait, be let in, hold with the admission; a buyer
// who paid is shown the purchase.
//
// One of the seat-picker page's end-to-end tests (tests/browser/*.test.mjs), in real headless
// Chromium against a real stack; tests/browser/run brings the stack up and runs them all, one
// file at a time. The browser, the admin's and the first buyers' tokens, the test show and the
// page helpers come from harness.mjs. Screenshots land in artifacts/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  BASE, RUN_TAG, mintToken, apiCall, showBody, tokens, newContext, seatClass, message, shot,
  noPageErrors, inView, setup
} from './harness.mjs';

setup();

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
