/* seatd seat picker: live seat status. Snapshots and versioned deltas, the status map read over
 * HTTP (conditional, ?minVersion=), the polling fallback, and the show's WebSocket with its
 * reconnect backoff. */
'use strict';

  /* ---------------------------------------------------------------- seat status */

  /* 'areas': the standing areas' free counts of the same version (absent: unchanged). */
  function applySnapshot(version, seats, areas) {
    if (state.version != null && version < state.version) return false;
    state.version = version;
    state.etag = `"${version}"`;
    for (const [id, st] of Object.entries(seats || {})) state.status.set(id, serverStatus(st));
    applyAreaFree(areas);
    afterStatusChange();
    return true;
  }

  function applyDelta(msg) {
    const from = msg.fromVersion != null ? msg.fromVersion : msg.version;
    if (state.version == null) { refreshSeats(); return; }
    if (msg.version <= state.version) return;            // already have it
    if (from > state.version + 1) { refreshSeats(); return; }  // a gap: refetch
    for (const c of msg.changes || []) if (c && typeof c.seat === 'string') state.status.set(c.seat, serverStatus(c.status));
    state.version = msg.version;
    state.etag = `"${msg.version}"`;
    applyAreaFree(msg.areas);   // {"FLOOR": 482}: the free counts after this change
    afterStatusChange();
  }

  /* A selected seat that someone else took (or that is now kept for a sales channel) is no
   * longer selectable. */
  function afterStatusChange() {
    const lost = [], kept = [];
    for (const id of state.selected) {
      const st = state.status.get(id) || 'available';
      if (st !== 'available') {
        state.selected.delete(id);
        (st === 'unavailable' ? kept : lost).push(id);
      }
    }
    paintAll();
    if (lost.length || kept.length) {
      lost.sort(seatSort);
      kept.sort(seatSort);
      say([lost.length ? takenMessage(lost) : '', kept.length ? notForSaleText(kept) + ' any more' : '']
        .filter(Boolean).join('; ') + '.', 'error');
      renderPanel();
    }
  }

  /* "Seat A1 is not for sale", "Seats A1 and A2 are not for sale". */
  function notForSaleText(ids) {
    const w = seatWord(ids);
    return w.charAt(0).toUpperCase() + w.slice(1) + (ids.length === 1 ? ' is' : ' are') + ' not for sale';
  }

  /* Bit i of a base64 bitmap (bit 0 = the most significant bit of byte 0; past the end: 0). */
  function bitmapBits(b64) {
    const bytes = atob(b64 || '');
    return (i) => (i >> 3) < bytes.length && ((bytes.charCodeAt(i >> 3) >> (7 - (i & 7))) & 1) === 1;
  }

  /* The availability resource (two bitmaps, under 1 KB for 2,000 seats, and a third,
   * "blocked", for the free seats a show keeps for a sales channel) as a status map. */
  function availabilitySeats(body) {
    const held = bitmapBits(body.held);
    const booked = bitmapBits(body.booked);
    const blocked = bitmapBits(typeof body.blocked === 'string' ? body.blocked : '');
    const seats = {};
    state.seatIdAt.forEach((id, i) => {
      if (id) seats[id] = booked(i) ? 'booked' : held(i) ? 'held' : blocked(i) ? 'unavailable' : 'available';
    });
    return seats;
  }

  /* Reads the seat status. 'minVersion' (the version of this buyer's own change) makes any
   * cache on the way answer at least that new; plain reads may be up to ~2 s old. */
  let refreshing = null;
  function refreshSeats(conditional, minVersion) {
    if (refreshing && minVersion == null) return refreshing;
    const headers = conditional && state.etag ? { 'If-None-Match': state.etag } : {};
    const q = minVersion != null ? `?minVersion=${minVersion}` : '';
    const p = api('GET', `/v1/shows/${encodeURIComponent(state.showId)}/availability${q}`, undefined, headers)
      .then((res) => {
        if (res.status === 200 && res.body && typeof res.body.version === 'number') {
          applySnapshot(res.body.version, availabilitySeats(res.body), res.body.areas);
        }
        return res.status;
      })
      .finally(() => { if (refreshing === p) refreshing = null; });
    refreshing = p;
    return p;
  }

  function schedulePoll() {
    clearTimeout(state.pollTimer);
    const every = state.wsLive ? POLL_SAFETY_MS : POLL_FALLBACK_MS;
    state.pollTimer = setTimeout(async () => {
      await refreshSeats(true);
      schedulePoll();
    }, every);
  }

  function setLive(mode) {
    const live = $('live');
    live.dataset.mode = mode;
    live.textContent = mode === 'ws' ? 'live' : mode === 'polling' ? 'auto-refresh' : 'connecting…';
    live.title = mode === 'ws' ? 'Live seat updates (WebSocket)'
      : 'Live connection unavailable: refreshing every half second';
  }

  function connectWs() {
    clearTimeout(state.wsTimer);
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const since = state.version != null ? `?since=${state.version}` : '';
    let ws;
    try {
      ws = new WebSocket(`${proto}//${location.host}/v1/shows/${encodeURIComponent(state.showId)}/seats/ws${since}`);
    } catch (_) {
      wsDown();
      return;
    }
    state.ws = ws;
    // The feed works: stop the fast polling.
    const live = () => {
      if (state.ws !== ws || state.wsLive) return;
      state.wsLive = true;
      state.wsAttempt = 0;
      setLive('ws');
      schedulePoll();
    };
    ws.onopen = live; // live as soon as it is open, even on a show where nothing changes
    ws.onmessage = (ev) => {
      let msg;
      try { msg = JSON.parse(ev.data); } catch (_) { return; }
      if (msg && msg.type === 'queue') { onQueueFrame(msg); live(); return; }
      if (typeof msg.version !== 'number') return;
      if (msg.type === 'snapshot') applySnapshot(msg.version, msg.seats, msg.areas);
      else if (msg.type === 'delta') applyDelta(msg);
      else if (msg.type === 'version') { if (state.version == null || msg.version > state.version) refreshSeats(false, msg.version); }
      else return;
      live();
    };
    ws.onclose = () => { if (state.ws === ws) wsDown(); };
    ws.onerror = () => { /* onclose follows */ };
  }

  function wsDown() {
    state.ws = null;
    const wasLive = state.wsLive;
    state.wsLive = false;
    setLive('polling');
    if (wasLive) refreshSeats(true);
    schedulePoll();
    const base = Math.min(WS_BACKOFF_MAX_MS, 500 * 2 ** state.wsAttempt);
    state.wsAttempt = Math.min(state.wsAttempt + 1, 10);
    state.wsTimer = setTimeout(connectWs, base / 2 + Math.random() * base / 2);
  }
