// Box-office rules (issue 13): best available, alternatives, no orphan seats, wheelchair spaces.
//
// One of the seat-picker page's end-to-end tests (tests/browser/*.test.mjs), in real headless
// Chromium against a real stack; tests/browser/run brings the stack up and runs them all, one
// file at a time. The browser, the admin's and the first buyers' tokens, the test show and the
// page helpers come from harness.mjs. Screenshots land in artifacts/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import {
  BASE, RUN_TAG, mintToken, apiCall, showBody, newContext, openPicker, seatClass, expectSeat,
  message, shot, noPageErrors, createShow, holdsPath, isHoldPost, setup
} from './harness.mjs';

setup();

/* ---------------------------------------------------------------- box-office rules (issue 13) */

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
