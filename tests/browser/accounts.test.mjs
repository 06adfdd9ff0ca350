// Accounts: a newcomer signs up, holds, pays, finds the ticket under My tickets, signs out and
// in again. No token minted by a tool reaches her browser: she signs up and signs in on the page.
//
// One of the seat-picker page's end-to-end tests (tests/browser/*.test.mjs), in real headless
// Chromium against a real stack; tests/browser/run brings the stack up and runs them all, one
// file at a time. The browser, the admin's and the first buyers' tokens, the test show and the
// page helpers come from harness.mjs. Screenshots land in artifacts/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import {
  BASE, RUN_TAG, apiCall, showBody, showId, tokens, newContext, seatClass, expectSeat, message,
  shot, noPageErrors, setup
} from './harness.mjs';

setup();

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
    // may hold at most 10 seats per show: 8 more here, 2 on this file's test show).
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
