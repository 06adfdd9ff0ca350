// Payment and tickets: My tickets (a declined card then a good one, a refund) and money written
// with its currency, the buyer's way.
//
// One of the seat-picker page's end-to-end tests (tests/browser/*.test.mjs), in real headless
// Chromium against a real stack; tests/browser/run brings the stack up and runs them all, one
// file at a time. The browser, the admin's and the first buyers' tokens, the test show and the
// page helpers come from harness.mjs. Screenshots land in artifacts/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import {
  BASE, RUN_TAG, mintToken, apiCall, newContext, openPicker, shot, noPageErrors, createShow,
  holdsPath, setup
} from './harness.mjs';

setup();

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
