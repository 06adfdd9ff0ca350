/* seatd seat picker: checkout. The side panel (selection, hold, ticket), holding seats and
 * places (chosen or best available, with alternatives when refused), the hold's countdown and
 * release, paying with the test card, the booking's outcome and the ticket, and resuming a hold. */
'use strict';

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
