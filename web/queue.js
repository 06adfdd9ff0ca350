/* seatd seat picker: the waiting room of a queued show: joining, the place and its progress,
 * the queue frames of the WebSocket, the admission, and the map locked outside the buyer's turn. */
'use strict';

  /* ---------------------------------------------------------------- the waiting room
   *
   * A queued show (its "queue" settings) sells only to admitted shoppers. The page joins the
   * queue (one place per account: a second join answers the same ticket, kept per show in
   * localStorage), shows the place and a progress bar, and follows the show's WebSocket:
   * each `queue` frame says how many have been admitted so far and whether the room is OPEN
   * or SOLD_OUT. The page works out its own place from its number (so a million waiters cost
   * the server one frame each, not a million reads), and reads its place again only when its
   * number comes up (or at the opening), to fetch the admission, and every 15 s as a safety
   * net. The admission goes with every hold as the Seatd-Admission header.
   */

  function queued() { return !!(state.show && state.show.queue); }
  /* An admission that is still good on the server's clock (the room's deadline). */
  function admissionLive() {
    const q = state.queue;
    return !!(q && q.state === 'ADMITTED' && q.admission && (!q.expiresAt || q.expiresAt > serverNow()));
  }
  function mayShop() { return !queued() || admissionLive(); }

  /* Why a seat of a queued show cannot be chosen right now, in the buyer's words. */
  function queueBlockedText() {
    const q = state.queue;
    if (state.queueBooked.length && !admissionLive()) return 'You have booked your seats for this show: your tickets are under My tickets.';
    if (!q) return 'Join the queue first: you can choose seats once it is your turn.';
    if (q.state === 'WAITING') return 'You are in the queue: you can choose seats once it is your turn.';
    if (q.state === 'SOLD_OUT') return 'Sold out: every seat of this show has been sold.';
    if (q.state === 'CLOSED') return 'Sales for this show have closed.';
    return 'Your turn has passed: join the queue again to choose seats.';
  }
  function queueKey() { return 'seatd.queue.' + state.showId; }

  function rememberTicket(ticket) {
    try { if (ticket) localStorage.setItem(queueKey(), ticket); else localStorage.removeItem(queueKey()); } catch (_) { /* private mode */ }
  }

  function storedTicket() {
    try { return localStorage.getItem(queueKey()); } catch (_) { return null; }
  }

  function applyPlace(p) {
    const before = state.queue && state.queue.state;
    state.queue = {
      ticket: p.ticket,
      state: p.state,
      position: p.position || 0,
      number: p.number || 0,
      admittedThrough: p.admittedThrough || 0,
      queueState: p.queueState,
      opensAt: p.opensAt,
      eta: typeof p.estimatedWaitSeconds === 'number' ? p.estimatedWaitSeconds : null,
      admission: p.admission || null,
      expiresAt: p.expiresAt ? Date.parse(p.expiresAt) : null,
    };
    rememberTicket(p.ticket);
    if (state.queue.state === 'ADMITTED' && before !== 'ADMITTED') {
      say('It is your turn: choose your seats.', 'success');
    }
    renderQueue();
    if (state.phase === 'select') setPhase('select');
    scheduleQueuePoll();
  }

  async function joinQueue() {
    if (!state.session) {
      openAccount({ why: 'Sign in to join the queue for this show.', then: joinQueue });
      return;
    }
    $('queue-join').disabled = true;
    const res = await authApi('POST', `/v1/shows/${encodeURIComponent(state.showId)}/queue`);
    $('queue-join').disabled = false;
    if ((res.status === 201 || res.status === 200) && res.body && res.body.ticket) {
      applyPlace(res.body);
      return;
    }
    if (res.status === 401) openAccount({ why: 'Sign in to join the queue for this show.', then: joinQueue });
    say(problemText(res, 'Could not join the queue.'), 'error');
  }

  async function fetchPlace() {
    const ticket = (state.queue && state.queue.ticket) || storedTicket();
    if (!ticket || !state.session || state.queueBusy) return;
    state.queueBusy = true;
    const res = await authApi('GET', `/v1/queue/${encodeURIComponent(ticket)}`);
    state.queueBusy = false;
    if (res.status === 200 && res.body) {
      applyPlace(res.body);
    } else if (res.status === 404) { // not this account's ticket (another signed in here)
      rememberTicket(null);
      state.queue = null;
      renderQueue();
      setPhase(state.phase);
    } else {
      scheduleQueuePoll();
    }
  }

  function scheduleQueuePoll() {
    clearTimeout(state.queueTimer);
    const q = state.queue;
    if (!q) return;
    let wait = QUEUE_POLL_MS;
    if (q.state === 'ADMITTED' && q.expiresAt) wait = Math.max(250, q.expiresAt - serverNow() + 250);
    else if (q.state !== 'WAITING' && q.state !== 'SOLD_OUT') return;
    state.queueTimer = setTimeout(() => {
      if (state.queue && state.queue.state === 'ADMITTED') renderQueue();
      fetchPlace();
    }, wait);
  }

  /* A waiting-room frame: my place follows from my number; the server is asked only when
   * my number comes up or the room opens (with a little jitter, so a crowd does not ask at
   * the same millisecond). */
  function onQueueFrame(msg) {
    if (typeof msg.admittedThrough !== 'number' || typeof msg.state !== 'string') return;
    state.queueRoom = msg;
    const q = state.queue;
    if (!q) { renderQueue(); return; }
    if (q.number) q.admittedThrough = Math.max(q.admittedThrough, msg.admittedThrough);
    if (q.state === 'WAITING' || q.state === 'SOLD_OUT' || q.state === 'CLOSED') {
      if (msg.state === 'SOLD_OUT' || msg.state === 'CLOSED') {
        q.state = msg.state;
        q.queueState = msg.state;
      } else if (msg.state === 'OPEN') {
        if (q.state !== 'WAITING') q.state = 'WAITING';
        const opening = q.queueState === 'PENDING' || !q.number;
        q.queueState = 'OPEN';
        if (opening || msg.admittedThrough >= q.number) {
          setTimeout(fetchPlace, opening ? Math.random() * 2000 : Math.random() * 300);
        }
      }
    }
    renderQueue();
  }

  function mmss(ms) {
    const s = Math.max(0, Math.ceil(ms / 1000));
    return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
  }

  function renderQueue() {
    const panel = $('queue-panel');
    clearTimeout(state.queueTick);
    if (!queued()) { panel.hidden = true; return; }
    panel.hidden = false;
    const q = state.queue;
    const opens = state.show.queue.opensAt;
    let text = '', detail = '', progress = null, join = null, shown = q ? q.state : 'NONE';
    // What the buyer did with their turn comes first: seats held or bought are theirs whatever
    // the admission does next (it lapses after admissionSeconds, bought or not), so neither a
    // countdown nor "your turn has passed" belongs beside them.
    if (state.phase === 'hold' && state.hold) {
      shown = 'HOLDING';
      text = 'Your seats are held.';
      detail = 'Pay before the hold\'s own timer below runs out; the waiting room\'s time limit no longer applies to them.';
    } else if (state.phase === 'ticket' || (state.queueBooked.length && !admissionLive())) {
      shown = 'BOOKED';
      text = state.queueBooked.length
        ? `You booked ${seatListText(state.queueBooked)} for this show.`
        : 'You booked your seats for this show.';
      detail = admissionLive()
        ? 'Your tickets are under My tickets. Your turn in the waiting room is still on: "Pick more seats" to add seats.'
        : 'Your tickets are under My tickets.';
    } else if (!q) {
      text = 'Tickets for this show are sold through a waiting room.';
      detail = Date.parse(opens) > serverNow()
        ? `The sale opens ${formatWhen(opens)}. Everyone who joins before then gets a random place in line at the opening: there is no need to rush.`
        : 'Join the queue; you will be let in as soon as seats are there for you.';
      join = 'Join the queue';
    } else if (q.state === 'WAITING' && (q.queueState === 'PENDING' || !q.number)) {
      text = `You are in the queue. The sale opens ${formatWhen(q.opensAt || opens)}.`;
      detail = 'Everyone who joins before the opening gets a random place in line at the opening; arriving earlier makes no difference.';
    } else if (q.state === 'WAITING') {
      const ahead = Math.max(0, q.number - q.admittedThrough - 1);
      text = ahead ? `You are number ${q.number.toLocaleString()} in line: ${ahead.toLocaleString()} ahead of you.` : 'You are next.';
      progress = q.number ? Math.min(1, q.admittedThrough / q.number) : 0;
      detail = q.eta != null && q.eta > 0 ? `About ${q.eta < 90 ? q.eta + ' seconds' : Math.round(q.eta / 60) + ' minutes'} to go. Keep this page open.` : 'Keep this page open: it tells you when it is your turn.';
    } else if (q.state === 'ADMITTED' && admissionLive()) {
      text = `It is your turn! Choose your seats within ${mmss((q.expiresAt || 0) - serverNow())}.`;
      progress = 1;
      detail = 'Hold seats before the time is up; once held, you have the hold\'s own time to pay.';
      state.queueTick = setTimeout(renderQueue, 1000);
    } else if (q.state === 'ADMITTED') {
      // The deadline passed on our clock; the server's word (EXPIRED) is on its way.
      shown = 'EXPIRED';
      text = 'Your turn has ended.';
      detail = 'Checking your place…';
    } else if (q.state === 'SOLD_OUT') {
      text = 'Sold out: every seat of this show has been sold.';
      detail = 'Nobody further in line will be let in. If seats come back, the queue moves on and this page tells you.';
    } else if (q.state === 'EXPIRED' && !state.queueBookedKnown) {
      text = 'Your turn has ended.';
      detail = 'Checking your bookings…';
    } else if (q.state === 'EXPIRED') {
      text = 'Your turn has passed.';
      detail = 'Join again for a place at the back of the line.';
      join = 'Join again';
    } else if (q.state === 'CLOSED') {
      text = 'Sales for this show have closed.';
    }
    panel.dataset.state = shown;
    $('queue-text').textContent = text;
    $('queue-detail').textContent = detail;
    const bar = $('queue-progress');
    bar.hidden = progress == null;
    if (progress != null) bar.value = progress;
    const btn = $('queue-join');
    btn.hidden = !join;
    if (join) btn.textContent = join;
    // After a purchase, more seats only while the turn lasts.
    $('again-btn').hidden = !mayShop();
    $('queue-tickets').hidden = !(shown === 'BOOKED' && state.phase !== 'ticket');
    lockMap();
  }

  /* Seats of a queued show can be chosen only during the buyer's turn. */
  function lockMap() {
    const locked = !mayShop();
    $('map').classList.toggle('locked', locked);
    if (locked === mapLocked && !(locked && (state.selected.size || state.areaPick.size))) return;
    mapLocked = locked;
    if (locked) {
      state.selected.clear();
      state.areaPick.clear();
    }
    paintAll();
    renderPanel();
  }

  /* The seats this buyer booked on this queued show before (another visit, another tab). */
  async function loadQueueBookings() {
    if (!queued() || !state.session) return;
    const res = await authApi('GET', '/v1/me/bookings?limit=50');
    state.queueBookedKnown = true;   // an error too: the buyer is not kept waiting for it
    if (res.status !== 200) { renderQueue(); return; }
    const seats = new Set(state.queueBooked);
    for (const b of listOf(res.body, 'bookings')) {
      if (b && String(b.showId) === String(state.showId) && b.status === 'CONFIRMED' && Array.isArray(b.seatIds)) {
        for (const id of b.seatIds) seats.add(id);
      }
    }
    state.queueBooked = [...seats];
    renderQueue();
    if (state.phase === 'select') setPhase('select');
  }

  function initQueue() {
    if (!queued()) return;
    $('queue-join').addEventListener('click', joinQueue);
    renderQueue();
    if (state.session && storedTicket()) fetchPlace();
    loadQueueBookings();
  }
