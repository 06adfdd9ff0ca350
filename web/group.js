/* seatd seat picker: event groups (?group=): shows sold together, one group hold across them and
 * "Pay for all", one payment for every show's hold. */
'use strict';

  /* ---------------------------------------------------------------- a group of shows
   *
   * ?group=<id>: shows sold together (a season, a festival pass). The page reads the group
   * (GET /v1/groups/{id}: title, showIds), lists its shows, draws the map of the first (or of
   * ?show=), and its Hold button holds the seats and places chosen in EVERY show of the group
   * with one POST /v1/groups/{id}/holds: all or nothing, decided in one step on the server. A
   * refusal names the show that refused, and nothing is held anywhere. The answer is one hold
   * per show under one group hold id (released whole by DELETE /v1/holds/{id}); every
   * show's hold is booked with the others in ONE payment ("Pay for all": POST /v1/bookings with
   * the group hold's id, one charge for the sum), each show's booking then its own ticket.
   */

  async function showGroup(gid, wanted) {
    state.view = 'picker';
    $('picker').hidden = false;
    const res = await api('GET', `/v1/groups/${encodeURIComponent(gid)}`);
    const ids = res.status === 200 && res.body && Array.isArray(res.body.showIds)
      ? res.body.showIds.filter((x) => typeof x === 'string' || typeof x === 'number').map(String) : [];
    if (!ids.length) {
      fatal(res.status === 404 ? `There is no group of shows ${gid}.`
        : res.status === 200 ? 'This group has no shows.' : problemText(res, 'Could not load this group of shows.'));
      return;
    }
    state.group = { id: String(res.body.id || gid), title: String(res.body.title || ''), showIds: ids, shows: new Map() };
    const showId = wanted && ids.includes(wanted) ? wanted : ids[0];
    renderGroup(showId);
    await showPicker(showId);
    if (wanted && !ids.includes(wanted)) say(`Show ${wanted} is not part of this group: here is show ${showId}.`, 'info');
  }

  function renderGroup(current) {
    const g = state.group;
    $('group-card').hidden = false;
    $('group-title').textContent = g.title || `Group ${g.id}`;
    const ul = $('group-shows');
    ul.textContent = '';
    for (const id of g.showIds) {
      const li = el('li', { 'data-show-id': id });
      const a = el('a', { href: `/?group=${encodeURIComponent(g.id)}&show=${encodeURIComponent(id)}` });
      if (id === current) a.setAttribute('aria-current', 'page');
      a.append(el('span', { class: 'group-show-title' }, `Show ${id}`));
      a.append(el('span', { class: 'muted group-show-when' }));
      li.append(a);
      ul.append(li);
      showInfo(id).then((show) => {
        if (!show) return;
        g.shows.set(id, show);
        a.querySelector('.group-show-title').textContent = show.title || `Show ${id}`;
        a.querySelector('.group-show-when').textContent = formatWhen(show.startsAt);
        if (state.phase === 'hold') renderPanel();
      });
    }
  }

  /* "show 16427 (Second night, Sat 12 Dec 2026, 20:00)" once its document is read, else "show 16427". */
  function showLabel(id) {
    const show = state.group && state.group.shows.get(String(id));
    const extra = show ? [show.title, formatWhen(show.startsAt)].filter(Boolean).join(', ') : '';
    return `show ${id}` + (extra ? ` (${extra})` : '');
  }

  function seatNames(ids) {
    return ids.slice().sort(seatSort).map((id) => {
      const s = state.seatById.get(id);
      return s ? `${s.row}${s.number}` : id;
    });
  }

  /* What a group hold costs: each show at its own prices (the seats' tiers from this map's
   * layout: a group's shows share their seats); null while a price is unknown. */
  function groupTotal(legs) {
    let sum = 0;
    for (const leg of legs) {
      const show = String(leg.showId) === String(state.showId) ? state.show : state.group.shows.get(leg.showId);
      const tiers = (show && show.priceTiers) || null;
      if (!tiers) return null;
      for (const id of leg.seatIds) {
        const s = state.seatById.get(id);
        if (!s || typeof tiers[s.tier] !== 'number') return null;
        sum += tiers[s.tier];
      }
      for (const [aid, n] of Object.entries(leg.areas || {})) {
        const a = ((show && show.areas) || []).find((x) => x && x.id === aid);
        if (!a || typeof tiers[a.tier] !== 'number') return null;
        sum += tiers[a.tier] * n;
      }
    }
    return sum;
  }

  function renderLegs(legs) {
    const ul = $('hold-legs');
    ul.textContent = '';
    for (const leg of legs) {
      const b = leg.booking;
      const li = el('li', { 'data-show-id': leg.showId, 'data-hold-id': leg.holdId, 'data-status': b ? 'CONFIRMED' : 'HELD' });
      const show = state.group.shows.get(leg.showId);
      li.append(el('p', { class: 'leg-title' }, (show && show.title) || `Show ${leg.showId}`));
      li.append(el('p', { class: 'leg-facts' }, [`Show ${leg.showId}`, show ? formatWhen(show.startsAt) : ''].filter(Boolean).join(' · ')));
      li.append(el('p', { class: 'leg-facts' }, itemsText(leg.seatIds, leg.areas) +
        (isNaN(leg.expiresAt) ? '' : ` · held until ${new Date(leg.expiresAt - state.skewMs).toLocaleTimeString()}`)));
      li.append(el('p', { class: 'leg-facts leg-state' }, b ? `Paid: booking ${b.bookingId}` : `Hold ${leg.holdId}`));
      ul.append(li);
    }
  }

  async function submitGroupHold(body, named) {
    state.busy = true;
    renderPanel();
    say('');
    showAlternatives([]);
    const res = await authApi('POST', `/v1/groups/${encodeURIComponent(state.group.id)}/holds`, body);
    state.busy = false;

    if (res.status === 201 && res.body && res.body.holdId && Array.isArray(res.body.holds)) {
      const b = res.body;
      const legs = b.holds.filter((h) => h && typeof h.holdId === 'string' && h.showId != null).map((h) => ({
        showId: String(h.showId),
        holdId: h.holdId,
        seatIds: Array.isArray(h.seatIds) ? h.seatIds : named,
        areas: h.areas && typeof h.areas === 'object' ? h.areas : (body.areas || null),
        expiresAt: Date.parse(h.expiresAt),
        version: h.version,
        booking: null,
      }));
      const here = legs.find((l) => l.showId === String(state.showId));
      const ids = here ? here.seatIds : named;
      const places = here ? here.areas : (body.areas || null);
      const times = legs.map((l) => l.expiresAt).filter((t) => !isNaN(t));
      let exp = Date.parse(b.expiresAt);
      if (isNaN(exp)) exp = times.length ? Math.min(...times) : serverNow() + 60000;
      state.hold = { holdId: b.holdId, group: true, legs, seatIds: ids, areas: places, expiresAt: exp };
      for (const id of ids) state.status.set(id, 'held');
      state.selected.clear();
      state.areaPick.clear();
      paintAll();
      if (here && typeof here.version === 'number') refreshSeats(false, here.version);
      setPhase('hold');
      startCountdown();
      say(`Held ${itemsText(ids, places)} for you in ${legs.length} show${legs.length === 1 ? '' : 's'}. ` +
        'Pay for all in one payment before the timer runs out (it shows the earliest expiry).', 'success');
      if (window.matchMedia && matchMedia('(max-width: 800px)').matches) {
        $('panel-hold').scrollIntoView({ block: 'nearest', behavior: 'smooth' });
      }
      return;
    }

    const p = res.body || {};
    const type = String(p.type || '').split('/').pop();
    const where = p.showId != null ? String(p.showId) : null;
    const here = (sid) => sid != null && String(sid) === String(state.showId);
    const nothing = ': nothing was held in any show.';
    if (res.status === 409 && type === 'seat-conflict') {
      let conflicts = p.conflicts && typeof p.conflicts === 'object' ? p.conflicts : {};
      if (!Object.keys(conflicts).length && where && Array.isArray(p.conflictingSeats)) conflicts = { [where]: p.conflictingSeats };
      const parts = [];
      for (const [sid, list] of Object.entries(conflicts)) {
        const ids = (Array.isArray(list) ? list : []).filter((x) => typeof x === 'string');
        if (!ids.length) continue;
        parts.push(`${listWords(seatNames(ids))} ${ids.length === 1 ? 'is' : 'are'} taken in ${showLabel(sid)}`);
        for (const id of ids) {
          state.selected.delete(id);
          if (here(sid)) state.status.set(id, 'held');
        }
      }
      paintAll();
      renderPanel();
      say((parts.length ? parts.join('; ') : `Seats are taken${where ? ' in ' + showLabel(where) : ''}`) + nothing +
        (state.selected.size ? ' Your other seats are still selected.' : ' Please choose other seats.'), 'error');
      refreshSeats(false);
      return;
    }
    if (res.status === 409 && type === 'seat-not-for-sale') {
      const kept = (Array.isArray(p.unavailableSeats) ? p.unavailableSeats : []).filter((x) => typeof x === 'string');
      for (const id of kept) {
        state.selected.delete(id);
        if (here(where)) state.status.set(id, 'unavailable');
      }
      paintAll();
      renderPanel();
      say((kept.length ? notForSaleText(kept) : 'Some of these seats are not for sale') +
        (where ? ` in ${showLabel(where)}` : '') + nothing, 'error');
      refreshSeats(false);
      return;
    }
    if (res.status === 409 && type === 'area-sold-out') {
      const area = typeof p.area === 'string' ? p.area : 'a standing area';
      const left = typeof p.available === 'number' ? p.available : null;
      if (here(where)) applyAreaFree(p.areas);
      renderPanel();
      say((left === 0 ? `${area} is sold out` : left != null ? `Only ${left} place${left === 1 ? '' : 's'} left in ${area}`
        : `Not that many places left in ${area}`) + (where ? ` in ${showLabel(where)}` : '') + nothing, 'error');
      return;
    }
    renderPanel();
    if (res.status === 401) {
      openAccount({ why: 'Your session has ended. Sign in again to hold these seats.', then: hold });
    }
    if (res.status === 422 && /\/seat-limit$/.test(String(p.type || ''))) {
      say(seatLimitText(p) + (where ? ` (${showLabel(where)})` : '') + ' Nothing was held in any show.', 'error');
      return;
    }
    const why = problemText(res, 'Could not hold these seats.');
    say(res.status >= 400 && res.status < 500 && res.status !== 401 && res.status !== 429
      ? sentence(why) + (where ? ` (${showLabel(where)})` : '') + ' Nothing was held in any show.' : why, 'error');
  }

  /* "Pay for all": ONE payment for every show's hold, all or nothing (POST /v1/bookings with the
   * group hold's id; the card is charged once, for the sum). The answer is the payment; its
   * "bookings" are each show's own booking, its own ticket (GET /v1/bookings/{id} adds the
   * ticket code and QR). A refusal books no show and charges nothing: every show stays held. */
  async function payAll() {
    const h = state.hold;
    if (!h || !h.group || state.busy) return;
    state.busy = true;
    state.paying = true;
    renderPanel();
    const n = h.legs.length;
    say(`Paying for ${n} show${n === 1 ? '' : 's'} in one payment…`, 'info', { persist: true });
    const res = await authApi('POST', '/v1/bookings', { holdId: h.holdId, paymentMethod: $('card-select').value });
    let p = null;
    let pending = null;   // a 202: the payment's id, and its last state seen
    if (res.status === 201 && res.body && res.body.status === 'CONFIRMED') {
      p = res.body;
    } else if (res.status === 202 && res.body && res.body.bookingId) {
      say('Payment pending: waiting for the card issuer…', 'info', { persist: true });
      pending = { id: res.body.bookingId, last: await waitBooking(res.body.bookingId) };
      if (pending.last && pending.last.status === 'CONFIRMED') p = pending.last;
    }
    if (p) {
      await payAllConfirmed(h, p);
      return;
    }
    state.paying = false;
    state.busy = false;
    renderPanel();
    const still = ' Nothing was charged, and every show is still held: try another card.';
    if (res.status === 402) {
      say('The card was declined.' + still, 'error');
      refreshLegs(h);
      return;
    }
    if (pending) {
      const st = pending.last && pending.last.status;
      if (st) {
        say(`The payment did not go through (${String(st).toLowerCase().replace(/_/g, ' ')}): no show was booked.` +
          (st === 'FAILED' ? ' Your seats are still held in every show: try another card.' : ''), 'error');
        refreshLegs(h);
      } else {
        say(`Payment still pending. Your payment reference is ${pending.id}; check My tickets in a minute.`, 'info', { persist: true });
      }
      return;
    }
    if (res.status === 401) {
      say('Your session has ended. Sign in again to pay: your seats stay held in every show until the timer runs out.', 'error');
      openAccount({ why: 'Sign in again to pay for the seats you hold.', then: pay });
      return;
    }
    say(sentence(problemText(res, 'The payment did not go through')) + ' No show was booked.', 'error');
    if (res.status === 404 || res.status === 409 || res.status === 410) refreshLegs(h);
    else tick();
  }

  /* The group's payment 'p' is CONFIRMED: each show's booking from its "bookings", with its
   * ticket (GET /v1/bookings/{member id}), then the tickets. */
  async function payAllConfirmed(h, p) {
    let members = Array.isArray(p.bookings) ? p.bookings : [];
    if (!members.length && p.bookingId) {
      // An answer without its list (it should have one): the payment's own resource lists them.
      const again = await authApi('GET', `/v1/bookings/${encodeURIComponent(p.bookingId)}`);
      if (again.status === 200 && again.body && Array.isArray(again.body.bookings)) members = again.body.bookings;
    }
    await Promise.all(h.legs.map(async (leg) => {
      const m = members.find((x) => x && x.showId != null && String(x.showId) === leg.showId && x.bookingId);
      if (!m) {
        leg.booking = { status: p.status, currency: p.currency };
        return;
      }
      const full = await authApi('GET', `/v1/bookings/${encodeURIComponent(m.bookingId)}`);
      leg.booking = Object.assign({ currency: p.currency }, m, full.status === 200 && full.body ? full.body : {});
    }));
    state.paying = false;
    state.busy = false;
    groupBooked(h, p);
  }

  /* Each show's hold after a refused payment (a decline puts every one back to HELD, maybe with a
   * new deadline; a late answer may have let them lapse): the countdown follows the earliest. */
  async function refreshLegs(h) {
    const looks = await Promise.all(h.legs.map((leg) =>
      authApi('GET', `/v1/holds/${encodeURIComponent(leg.holdId)}`)));
    if (state.hold !== h) return;
    let gone = false;
    looks.forEach((res, i) => {
      const st = res.status === 200 && res.body ? res.body.status : null;
      if (st === 'HELD' || st === 'PENDING_PAYMENT') {
        const exp = Date.parse(res.body.expiresAt);
        if (!isNaN(exp)) h.legs[i].expiresAt = exp;
      } else if (res.status === 200 || res.status === 404 || res.status === 410) {
        gone = true;
      }
    });
    if (gone) { expireHold(); return; }
    const times = h.legs.map((l) => l.expiresAt).filter((t) => !isNaN(t));
    if (times.length) h.expiresAt = Math.min(...times);
    renderPanel();
    tick();
  }

  /* A payment that answered 202: its answer once it has ended (CONFIRMED, or the state it ended
   * in), or null when it was still pending at the deadline. */
  async function waitBooking(bookingId) {
    const deadline = Date.now() + 120000;
    while (Date.now() < deadline) {
      await sleep(1000);
      const res = await authApi('GET', `/v1/bookings/${encodeURIComponent(bookingId)}`);
      const st = res.status === 200 && res.body ? res.body.status : null;
      if (st && st !== 'PENDING_PAYMENT' && st !== 'PENDING') return res.body;
    }
    return null;
  }

  function groupBooked(h, p) {
    clearInterval(state.countdownTimer);
    const here = h.legs.find((l) => l.showId === String(state.showId));
    for (const id of here ? here.seatIds : []) {
      state.myBooked.add(id);
      state.status.set(id, 'booked');
    }
    state.hold = null;
    paintAll();
    $('ticket').hidden = true;
    const box = $('group-tickets');
    box.hidden = false;
    box.textContent = '';
    for (const leg of h.legs) {
      const b = Object.assign({ areas: leg.areas }, leg.booking);
      const show = String(leg.showId) === String(state.showId) ? state.show
        : state.group.shows.get(leg.showId) || { title: `Show ${leg.showId}` };
      const t = el('div', { class: 'ticket', 'data-show-id': leg.showId, 'data-booking-id': b.bookingId || '' });
      const seats = Array.isArray(b.seatIds) && b.seatIds.length ? b.seatIds : leg.seatIds;
      t.append(...ticketParts(b, show, seats.length ? seatListText(seats) : ''));
      box.append(t);
    }
    setPhase('ticket');
    const n = h.legs.length;
    const paid = p && typeof p.amount === 'number' ? ` for ${money(p.amount, p.currency || showCurrency(state.show))}` : '';
    say(`Booked ${n} show${n === 1 ? '' : 's'} with one payment${paid}! Each show has its own ticket. Enjoy the shows.`, 'success');
  }
