/* seatd seat picker: My tickets (?view=tickets): the buyer's holds, bookings and payment attempts,
 * paged, each ticket shown on demand. */
'use strict';

  /* ---------------------------------------------------------------- my tickets */

  const BOOKINGS_PAGE = 10;
  const STATUS_TEXT = {
    CONFIRMED: 'Confirmed', PENDING_PAYMENT: 'Payment pending', FAILED: 'Not booked', CANCELLED: 'Cancelled',
    HELD: 'Held', BOOKED: 'Booked',
  };
  /* byHold: hold id -> {li, attempts}: the booking listed for a hold, which its declined
   * attempts join; loose: declined attempts whose hold has no booking listed (yet). */
  const mine = { cursor: null, loading: false, holdsTimer: null, generation: 0, byHold: new Map(), loose: [] };

  /* A FAILED booking whose charge was given back (or is being given back): money that moved. */
  function isRefunded(b) {
    return b.status === 'FAILED' && (!!b.refundStatus || /refund/i.test(b.reason || '') ||
      (typeof b.refund === 'number' && b.refund > 0));
  }

  /* A payment attempt that took no money (a declined card, a payment that never went through):
   * an attempt of a booking, never a booking of its own. */
  function isAttempt(b) {
    return b.status === 'FAILED' && !isRefunded(b);
  }

  function reasonWords(reason) {
    const r = String(reason || '').replace(/[^a-z0-9_]/gi, ' ').replace(/_/g, ' ').trim().toLowerCase();
    return r || 'declined';
  }
  const showCache = new Map();

  /* The items of a list answer, whatever it calls them. */
  function listOf(body, name) {
    if (Array.isArray(body)) return body;
    if (body && Array.isArray(body.items)) return body.items;
    if (body && Array.isArray(body[name])) return body[name];
    return [];
  }

  function showInfo(id) {
    if (!showCache.has(id)) {
      showCache.set(id, api('GET', `/v1/shows/${encodeURIComponent(id)}`)
        .then((r) => (r.status === 200 && r.body ? r.body : null)));
    }
    return showCache.get(id);
  }

  function seatIdsText(ids) {
    return (Array.isArray(ids) ? ids : []).slice()
      .sort((a, b) => a.localeCompare(b, undefined, { numeric: true })).join(', ');
  }

  function ticketsSay(text, kind) {
    const m = $('tickets-message');
    m.hidden = !text;
    m.textContent = text || '';
    m.dataset.kind = kind || 'info';
  }

  /* Fills the title and time of a list item once its show is known. */
  function fillShow(li, showId) {
    showInfo(showId).then((show) => {
      li.querySelector('.my-title').textContent = (show && show.title) || `Show ${showId}`;
      const when = show ? formatWhen(show.startsAt) : '';
      li.querySelector('.my-when').textContent = when;
      li.querySelector('.my-when').hidden = !when;
    });
  }

  function showTickets() {
    state.view = 'tickets';
    $('tickets').hidden = false;
    document.title = 'My tickets — seatd';
    $('nav-tickets').setAttribute('aria-current', 'page');
    $('bookings-more').addEventListener('click', () => loadBookings(false));
    $('tickets-signin').addEventListener('click', () => openAccount({ why: 'Sign in to see your tickets.' }));
    loadTickets();
  }

  async function loadTickets(why) {
    const gen = ++mine.generation;
    clearInterval(mine.holdsTimer);
    $('my-holds').textContent = '';
    $('my-bookings').textContent = '';
    mine.byHold = new Map();
    mine.loose = [];
    renderLooseAttempts();
    $('tickets').dataset.loaded = 'false';
    if (!state.session) {
      $('tickets-lists').hidden = true;
      $('tickets-signedout').hidden = false;
      ticketsSay(why || '', 'info');
      openAccount({ why: 'Sign in to see your tickets and the seats you hold.' });
      return;
    }
    ticketsSay('');
    $('tickets-signedout').hidden = true;
    $('tickets-lists').hidden = false;
    mine.cursor = null;
    await Promise.all([loadHolds(gen), loadBookings(true, gen)]);
    if (gen === mine.generation) $('tickets').dataset.loaded = 'true';
  }

  async function loadHolds(gen) {
    const res = await authApi('GET', '/v1/me/holds');
    if (gen !== mine.generation) return;
    const list = $('my-holds');
    list.textContent = '';
    if (res.status !== 200) {
      $('holds-empty').hidden = true;
      if (!res.signedOut) ticketsSay(problemText(res, 'Could not load the seats you hold.'), 'error');
      return;
    }
    const holds = listOf(res.body, 'holds').filter((h) => h && h.holdId &&
      (h.status === 'HELD' || h.status === 'PENDING_PAYMENT') && Date.parse(h.expiresAt) > serverNow());
    $('holds-empty').hidden = holds.length > 0;
    for (const h of holds) {
      const li = el('li', { class: 'my-item hold-item', 'data-hold-id': h.holdId, 'data-status': h.status });
      li.append(el('p', { class: 'my-title' }, `Show ${h.showId}`));
      li.append(el('p', { class: 'muted my-when' }));
      const dl = el('dl', { class: 'my-facts' });
      const places = placesText(h.areas);
      if ((Array.isArray(h.seatIds) && h.seatIds.length) || !places) {
        dl.append(el('dt', {}, 'Seats'), el('dd', { class: 'my-seats' }, seatIdsText(h.seatIds)));
      }
      if (places) dl.append(el('dt', {}, 'Places'), el('dd', { class: 'my-places' }, places));
      const left = el('dd', { class: 'hold-left', 'data-expires': String(Date.parse(h.expiresAt)) });
      dl.append(el('dt', {}, h.status === 'PENDING_PAYMENT' ? 'Paying' : 'Pay within'), left);
      li.append(dl);
      const actions = el('div', { class: 'actions' });
      actions.append(el('a', { class: 'btn btn-primary', href: '/?show=' + encodeURIComponent(h.showId) }, 'Pay or release'));
      li.append(actions);
      list.append(li);
      fillShow(li, h.showId);
    }
    const tickHolds = () => {
      for (const e of list.querySelectorAll('.hold-left')) {
        const secs = Math.max(0, Math.ceil((Number(e.dataset.expires) - serverNow()) / 1000));
        e.textContent = secs > 0 ? `${String(Math.floor(secs / 60)).padStart(2, '0')}:${String(secs % 60).padStart(2, '0')}` : 'expired';
        e.closest('li').dataset.expired = String(secs === 0);
      }
    };
    tickHolds();
    if (holds.length) mine.holdsTimer = setInterval(tickHolds, 1000);
  }

  async function loadBookings(first, gen) {
    if (mine.loading && !first) return;
    gen = gen == null ? mine.generation : gen;
    mine.loading = true;
    const more = $('bookings-more');
    const done = busyButton(more, 'Loading…');
    const q = new URLSearchParams({ limit: String(BOOKINGS_PAGE) });
    if (!first && mine.cursor) q.set('cursor', mine.cursor);
    const res = await authApi('GET', `/v1/me/bookings?${q}`);
    // A FAILED entry of the list may not say why (the list carries fewer fields than the
    // booking): its own resource does, and whether money was given back.
    const items = res.status === 200 ? listOf(res.body, 'bookings') : [];
    await Promise.all(items.map(async (b, i) => {
      if (!b || b.status !== 'FAILED' || !b.bookingId || 'reason' in b || 'refundStatus' in b) return;
      const r = await authApi('GET', `/v1/bookings/${encodeURIComponent(b.bookingId)}`);
      if (r.status === 200 && r.body && r.body.bookingId === b.bookingId) items[i] = Object.assign({}, b, r.body);
    }));
    mine.loading = false;
    done();
    if (gen !== mine.generation) return;
    const list = $('my-bookings');
    if (res.status !== 200) {
      more.hidden = true;
      $('bookings-empty').hidden = true;
      if (!res.signedOut) ticketsSay(problemText(res, 'Could not load your bookings.'), 'error');
      return;
    }
    for (const b of items) {
      if (!b || !b.bookingId || list.querySelector(`[data-booking-id="${CSS.escape(b.bookingId)}"]`) ||
          mine.loose.some((x) => x.bookingId === b.bookingId)) continue;
      if (isAttempt(b)) {
        const owner = b.holdId && mine.byHold.get(b.holdId);
        if (owner) addAttempt(owner, b);
        else mine.loose.push(b);
        continue;
      }
      const li = bookingItem(b);
      list.append(li);
      if (b.holdId && !mine.byHold.has(b.holdId)) {
        const owner = { li, attempts: [] };
        mine.byHold.set(b.holdId, owner);
        // Attempts listed before their booking (the order of filing is not the order of paying).
        for (const a of mine.loose.filter((x) => x.holdId === b.holdId)) addAttempt(owner, a);
        mine.loose = mine.loose.filter((x) => x.holdId !== b.holdId);
      }
    }
    renderLooseAttempts();
    const c = res.body && (res.body.nextCursor != null ? res.body.nextCursor : res.body.cursor);
    // null on the last page
    mine.cursor = (typeof c === 'string' && c) || (typeof c === 'number' && String(c)) || null;
    more.hidden = !mine.cursor;
    $('bookings-empty').hidden = list.children.length > 0;
  }

  /* A declined attempt joins the booking of its hold: "1 earlier card payment was declined". */
  function addAttempt(owner, a) {
    owner.attempts.push(a);
    let note = owner.li.querySelector('.my-attempts');
    if (!note) {
      note = el('p', { class: 'muted my-attempts' });
      owner.li.querySelector('.my-facts').after(note);
    }
    const n = owner.attempts.length;
    const why = [...new Set(owner.attempts.map((x) => reasonWords(x.reason)))].join(', ');
    note.dataset.attempts = String(n);
    note.textContent = `${n === 1 ? 'An earlier payment attempt' : `${n} earlier payment attempts`} ` +
      `for these seats ${n === 1 ? 'was' : 'were'} not accepted (${why}); nothing was charged for ${n === 1 ? 'it' : 'them'}.`;
  }

  /* Declined attempts of holds that were never paid: not bookings, so not listed as such. */
  function renderLooseAttempts() {
    let note = $('bookings-attempts');
    if (!mine.loose.length) {
      if (note) note.remove();
      return;
    }
    if (!note) {
      note = el('p', { id: 'bookings-attempts', class: 'muted my-attempts' });
      $('my-bookings').after(note);
    }
    const n = mine.loose.length;
    const why = [...new Set(mine.loose.map((x) => reasonWords(x.reason)))].join(', ');
    note.textContent = `${n === 1 ? 'One payment attempt' : `${n} payment attempts`} ` +
      `(${why}) made no booking and charged nothing, so ${n === 1 ? 'it is' : 'they are'} not listed.`;
  }

  function bookingItem(b) {
    const refunded = isRefunded(b);
    const li = el('li', { class: 'my-item booking', 'data-booking-id': b.bookingId, 'data-status': refunded ? 'REFUNDED' : (b.status || '') });
    li.append(el('p', { class: 'my-title' }, b.showId != null ? `Show ${b.showId}` : 'Booking'));
    li.append(el('p', { class: 'muted my-when' }));
    const dl = el('dl', { class: 'my-facts' });
    const row = (k, v, cls) => dl.append(el('dt', {}, k), el('dd', cls ? { class: cls } : {}, v));
    const places = placesText(b.areas);
    if ((Array.isArray(b.seatIds) && b.seatIds.length) || !places) row('Seats', seatIdsText(b.seatIds), 'my-seats');
    if (places) row('Places', places, 'my-places');
    let status = STATUS_TEXT[b.status] || String(b.status || '').toLowerCase().replace(/_/g, ' ');
    if (refunded) status = b.refundStatus === 'pending' ? 'Not booked: refund on its way' : 'Not booked: refunded';
    row('Status', status, 'my-status');
    if (typeof b.amount === 'number') {
      const given = refunded && typeof b.refund === 'number' && b.refund > 0 ? b.refund : b.amount;
      row(b.status === 'CONFIRMED' ? 'Paid' : refunded ? (b.refundStatus === 'pending' ? 'To refund' : 'Refunded') : 'Amount',
        money(refunded ? given : b.amount, b.currency), 'my-amount');
    }
    if (b.status === 'CANCELLED' && typeof b.refund === 'number') row('Refund', money(b.refund, b.currency), 'my-refund-amount');
    row('Booking', b.bookingId, 'ticket-id');
    li.append(dl);
    if (refunded) {
      li.append(el('p', { class: 'muted my-refund' },
        /seats_lost/.test(b.reason || '')
          ? 'The seats were lost before the payment completed, so the charge was given back.'
          : 'The payment did not lead to a booking, so the charge was given back.'));
    }
    if (b.status === 'CONFIRMED') {
      const ticket = el('div', { class: 'ticket', hidden: '' });
      const btn = el('button', { class: 'btn show-ticket', type: 'button', 'aria-expanded': 'false' }, 'Show ticket');
      btn.addEventListener('click', () => toggleTicket(b, btn, ticket));
      const actions = el('div', { class: 'actions' });
      actions.append(btn);
      li.append(actions, ticket);
    }
    if (b.showId != null) fillShow(li, b.showId);
    return li;
  }

  async function toggleTicket(b, btn, box) {
    if (!box.hidden) {
      box.hidden = true;
      btn.textContent = 'Show ticket';
      btn.setAttribute('aria-expanded', 'false');
      return;
    }
    if (!box.childElementCount) {
      const done = busyButton(btn, 'Loading…');
      const [res, show] = await Promise.all([
        authApi('GET', `/v1/bookings/${encodeURIComponent(b.bookingId)}`),
        b.showId != null ? showInfo(b.showId) : Promise.resolve(null),
      ]);
      done();
      if (res.status !== 200 || !res.body) {
        ticketsSay(problemText(res, 'Could not load this ticket.'), 'error');
        return;
      }
      const full = Object.assign({}, b, res.body);
      box.append(...ticketParts(full, show || { title: `Show ${b.showId}` }, seatIdsText(full.seatIds)));
    }
    box.hidden = false;
    btn.textContent = 'Hide ticket';
    btn.setAttribute('aria-expanded', 'true');
  }
