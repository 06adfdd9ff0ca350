// Event groups (issue 30): one hold across the shows of a group, one payment for all.
//
// One of the seat-picker page's end-to-end tests (tests/browser/*.test.mjs), in real headless
// Chromium against a real stack; tests/browser/run brings the stack up and runs them all, one
// file at a time. The browser, the admin's and the first buyers' tokens, the test show and the
// page helpers come from harness.mjs. Screenshots land in artifacts/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  BASE, RUN_DIR, RUN_TAG, mintToken, apiCall, tokens, newContext, seatClass, expectSeat, message,
  shot, noPageErrors, createShow, setup
} from './harness.mjs';

setup();

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
