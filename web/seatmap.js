/* seatd seat picker: the seat map. Seat statuses as the buyer sees them (held, booked, kept for a
 * sales channel), drawing the layout to scale as SVG, the legend, keyboard navigation, and
 * choosing seats on it. */
'use strict';

  /* ---------------------------------------------------------------- the map */

  function displayStatus(id) {
    if (state.selected.has(id)) return 'selected';
    if (state.hold && state.hold.seatIds.includes(id)) return 'mine';
    if (state.myBooked.has(id)) return 'booked';
    return state.status.get(id) || 'available';
  }

  const STATUS_WORDS = {
    available: 'available', held: 'held', booked: 'booked', mine: 'held for you', selected: 'selected',
    unavailable: 'not for sale',
  };
  const TAKEN_WORDS = {
    held: 'held by someone else', booked: 'already booked', mine: 'already held for you', unavailable: 'not for sale',
  };
  /* The statuses this page knows how to draw; anything else the server may say one day is
   * drawn (and refused) as not for sale rather than breaking the map. */
  const KNOWN_STATUS = new Set(['available', 'held', 'booked', 'unavailable']);
  function serverStatus(st) {
    return KNOWN_STATUS.has(st) ? st : 'unavailable';
  }

  function seatLabel(seat, status) {
    const price = tierPrice(seat.tier);
    return `Row ${seat.row} seat ${seat.number}, ${seat.tier}` +
      (seat.accessible ? ', wheelchair space' : '') +
      (price != null ? `, ${showMoney(price)}` : '') + `, ${STATUS_WORDS[status] || status}`;
  }

  function paintSeat(id) {
    const e = state.els.get(id);
    const seat = state.seatById.get(id);
    if (!e || !seat) return;
    const s = displayStatus(id);
    const extra = (seat.accessible ? ' accessible' : '') + (companionIds.has(id) ? ' companion' : '');
    const locked = mapLocked ? '1' : '';
    if (e.dataset.status === s && e.dataset.extra === extra && (e.dataset.locked || '') === locked) return;
    e.dataset.locked = locked;
    e.dataset.status = s;
    e.dataset.extra = extra;
    e.setAttribute('class', `seat ${s} tier-${seat.tierIndex}${extra}`);
    e.setAttribute('aria-label', seatLabel(seat, s));
    e.setAttribute('aria-pressed', s === 'selected' ? 'true' : 'false');
    e.setAttribute('aria-disabled', !mapLocked && (s === 'available' || s === 'selected') ? 'false' : 'true');
  }

  let mapLocked = false;   // a queued show outside the buyer's turn: no seat can be chosen

  /* The companion seats of the wheelchair spaces the buyer has selected or holds. */
  let companionIds = new Set();
  function computeCompanions() {
    const out = new Set();
    const mine = [...state.selected].concat(state.hold ? state.hold.seatIds : []);
    for (const id of mine) {
      const s = state.seatById.get(id);
      if (s && s.accessible && Array.isArray(s.companions)) {
        for (const c of s.companions) if (state.seatById.has(c)) out.add(c);
      }
    }
    companionIds = out;
  }

  function paintAll() {
    computeCompanions();
    for (const id of state.els.keys()) paintSeat(id);
    const kept = document.querySelector('#legend [data-legend="unavailable"]');
    if (kept) kept.hidden = !anyUnavailable();
  }

  function anyUnavailable() {
    for (const st of state.status.values()) if (st === 'unavailable') return true;
    return false;
  }

  /* Seat positions come in layout units; the pitch is the smallest gap between neighbours. */
  function gridOf(seats) {
    const xs = [...new Set(seats.map((s) => s.x))].sort((a, b) => a - b);
    const ys = [...new Set(seats.map((s) => s.y))].sort((a, b) => a - b);
    const minGap = (v) => {
      let g = Infinity;
      for (let i = 1; i < v.length; i++) if (v[i] - v[i - 1] > 1e-9) g = Math.min(g, v[i] - v[i - 1]);
      return g;
    };
    let pitch = Math.min(minGap(xs), minGap(ys));
    if (!isFinite(pitch) || pitch <= 0) pitch = 1;
    return { pitch, minX: xs[0], maxX: xs[xs.length - 1], minY: ys[0], maxY: ys[ys.length - 1] };
  }

  const LABEL_W = 1.0;   // the row-label column, in seat units
  const SCREEN_H = 2.2;  // the screen bar and the gap below it

  function drawMap() {
    const map = $('map');
    map.textContent = '';
    state.els.clear();
    const seats = state.layout;
    if (!seats.length) return;

    const tiers = Object.keys((state.show && state.show.priceTiers) || {});
    for (const s of seats) {
      if (!tiers.includes(s.tier)) tiers.push(s.tier);
    }
    const g = gridOf(seats);
    const cols = (g.maxX - g.minX) / g.pitch + 1;
    const rows = (g.maxY - g.minY) / g.pitch + 1;
    const width = LABEL_W + cols + 0.1;
    const height = SCREEN_H + rows + 0.2;
    map.setAttribute('viewBox', `0 0 ${width} ${height}`);
    map.dataset.units = String(width);

    // The hatch of the seats kept for a sales channel ("Not for sale"; CSS fills them with it).
    const defs = svg('defs');
    const hatch = svg('pattern', {
      id: 'kept-hatch', patternUnits: 'userSpaceOnUse', width: 0.22, height: 0.22, patternTransform: 'rotate(45)',
    });
    hatch.append(svg('rect', { class: 'kept-bg', x: 0, y: 0, width: 0.22, height: 0.22 }));
    hatch.append(svg('rect', { class: 'kept-line', x: 0, y: 0, width: 0.06, height: 0.22 }));
    defs.append(hatch);
    map.append(defs);

    // The screen.
    const sx = LABEL_W + cols * 0.08, sw = cols * 0.84;
    map.append(svg('path', {
      class: 'screen',
      d: `M ${sx} 0.9 Q ${sx + sw / 2} 0.35 ${sx + sw} 0.9`,
    }));
    map.append(svg('text', {
      class: 'screen-label', x: LABEL_W + cols / 2, y: 1.45, 'text-anchor': 'middle',
    }, 'SCREEN'));

    // Rows: their letters in the left column, drawn on the rail (#row-rail), a narrow SVG of
    // the same scale laid over that column and kept at the left edge of the scroller, so that
    // a hall wider than the screen still says which row is which when scrolled sideways.
    const rail = $('row-rail');
    rail.textContent = '';
    rail.setAttribute('viewBox', `0 0 ${LABEL_W} ${height}`);
    rail.dataset.units = String(LABEL_W);
    rail.append(svg('rect', { class: 'rail-bg', x: 0, y: SCREEN_H - 0.1, width: LABEL_W, height: rows + 0.3, rx: 0.25 }));
    const rowsByName = new Map();
    for (const s of seats) {
      if (!rowsByName.has(s.row)) rowsByName.set(s.row, []);
      rowsByName.get(s.row).push(s);
    }
    const labels = svg('g', { class: 'row-labels' });
    for (const [name, list] of rowsByName) {
      const y = list.reduce((a, s) => a + s.y, 0) / list.length;
      const cy = SCREEN_H + (y - g.minY) / g.pitch + 0.5;
      labels.append(svg('text', {
        x: LABEL_W / 2, y: cy, 'text-anchor': 'middle', 'dominant-baseline': 'central', 'data-row': name,
      }, name));
    }
    rail.append(labels);

    const group = svg('g', { class: 'seats' });
    for (const s of seats) {
      s.tierIndex = Math.max(0, tiers.indexOf(s.tier)) % 4;
      const x = LABEL_W + (s.x - g.minX) / g.pitch;
      const y = SCREEN_H + (s.y - g.minY) / g.pitch;
      s.cx = x + 0.5;
      s.cy = y + 0.5;
      const r = svg('rect', {
        // The whole cell is the seat (and its tap target); a stroke in the card's colour
        // draws the gap between neighbours.
        x, y, width: 1, height: 1, rx: 0.28,
        'data-seat': s.id, role: 'button', tabindex: '-1',
      });
      // The number follows its seat, so that CSS can colour it by the seat's status.
      group.append(r, svg('text', {
        class: 'seat-num', x: s.cx, y: s.cy, 'text-anchor': 'middle',
        'dominant-baseline': 'central', 'aria-hidden': 'true',
      }, String(s.number)));
      if (s.accessible) {
        const comp = Array.isArray(s.companions) && s.companions.length
          ? ` (companion seats ${s.companions.join(', ')})` : '';
        r.append(svg('title', {}, `Row ${s.row} seat ${s.number}: wheelchair space${comp}`));
        // The wheelchair mark: a ring inside the cell, after the number (CSS colours the
        // number through the sibling right after the seat).
        group.append(svg('rect', {
          class: 'wc-ring', x: x + 0.1, y: y + 0.1, width: 0.8, height: 0.8, rx: 0.2, 'aria-hidden': 'true',
        }));
      }
      state.els.set(s.id, r);
    }
    map.append(group);
    buildNavigation();
    paintAll();
    const first = seats[0].id;
    setFocusable(first);
    drawLegend(tiers);
    sizeMap();
  }

  /* Fit the map to its box; on touch screens never let a seat cell go below 32 px (the map
   * then scrolls sideways), and never blow a small hall up beyond 44 px a seat. */
  function sizeMap() {
    const map = $('map');
    const units = Number(map.dataset.units || 0);
    if (!units) return;
    const box = $('map-scroll').clientWidth;
    const coarse = window.matchMedia && matchMedia('(pointer: coarse)').matches;
    const minUnit = coarse ? 32 : 0;
    const w = Math.min(Math.max(box, units * minUnit), units * 44);
    map.style.width = `${Math.floor(w)}px`;
    state.unitPx = Math.floor(w) / units;
    const rail = $('row-rail');
    rail.style.width = `${LABEL_W * state.unitPx}px`;
    rail.style.marginRight = `${-LABEL_W * state.unitPx}px`;
    $('map-inner').classList.toggle('dense', state.unitPx < 17);
    const scroller = $('map-scroll');
    if (!scroller.dataset.centred && scroller.scrollWidth > scroller.clientWidth) {
      // A hall wider than the phone: start in the middle, where most people want to sit.
      scroller.dataset.centred = '1';
      scroller.scrollLeft = (scroller.scrollWidth - scroller.clientWidth) / 2;
    }
  }

  /* A tier that only standing areas use ("standing"): not a seat colour, not a seat choice. */
  function areaOnlyTier(t) {
    return state.areas.some((a) => a.tier === t) && !state.layout.some((s) => s.tier === t);
  }

  function drawLegend(tiers) {
    const legend = $('legend');
    legend.textContent = '';
    for (const t of tiers) {
      if (areaOnlyTier(t)) continue;   // priced in the standing areas' card instead
      const price = tierPrice(t);
      const li = el('li');
      // The colour drawMap() gave the tier's seats (also for a tier with no seat in this hall).
      li.append(el('span', { class: `swatch seat-swatch available tier-${tiers.indexOf(t) % 4}`, 'aria-hidden': 'true' }));
      li.append(el('span', {}, tierName(t)));
      if (price != null) li.append(el('strong', { class: 'price' }, showMoney(price)));
      legend.append(li);
    }
    for (const [cls, word] of [['selected', 'Selected'], ['mine', 'Held for you'], ['held', 'Held'], ['booked', 'Sold'],
      ['unavailable', 'Not for sale']]) {
      const li = el('li', { class: 'legend-status', 'data-legend': cls });
      // Seats kept for a sales channel (the box office, a partner): only shown when the show keeps any.
      if (cls === 'unavailable') li.hidden = !anyUnavailable();
      li.append(el('span', { class: `swatch seat-swatch ${cls}`, 'aria-hidden': 'true' }));
      li.append(el('span', {}, word));
      legend.append(li);
    }
    if (state.layout.some((s) => s.accessible)) {
      const li = el('li', { class: 'legend-status legend-wheelchair' });
      li.append(el('span', { class: 'swatch seat-swatch available wc-swatch', 'aria-hidden': 'true' }));
      li.append(el('span', {}, 'Wheelchair space'));
      legend.append(li);
      const li2 = el('li', { class: 'legend-status' });
      li2.append(el('span', { class: 'swatch seat-swatch available companion-swatch', 'aria-hidden': 'true' }));
      li2.append(el('span', {}, 'Companion seat'));
      legend.append(li2);
    }
  }

  /* Keyboard: one seat is in the tab order; arrows move between seats. */
  let nav = { rows: [] };
  function buildNavigation() {
    const byRow = new Map();
    for (const s of state.layout) {
      const key = s.cy.toFixed(2);
      if (!byRow.has(key)) byRow.set(key, []);
      byRow.get(key).push(s);
    }
    const rows = [...byRow.values()].sort((a, b) => a[0].cy - b[0].cy);
    rows.forEach((r, ri) => {
      r.sort((a, b) => a.cx - b.cx);
      r.forEach((s, si) => { s.ri = ri; s.si = si; });
    });
    nav = { rows };
  }

  function setFocusable(id) {
    if (state.focusId && state.els.get(state.focusId)) state.els.get(state.focusId).setAttribute('tabindex', '-1');
    state.focusId = id;
    const e = state.els.get(id);
    if (e) e.setAttribute('tabindex', '0');
  }

  function moveFocus(fromId, key) {
    const s = state.seatById.get(fromId);
    if (!s) return;
    let target = null;
    if (key === 'ArrowLeft') target = nav.rows[s.ri][s.si - 1];
    else if (key === 'ArrowRight') target = nav.rows[s.ri][s.si + 1];
    else if (key === 'ArrowUp' || key === 'ArrowDown') {
      const row = nav.rows[s.ri + (key === 'ArrowUp' ? -1 : 1)];
      if (row) target = row.reduce((best, c) => (Math.abs(c.cx - s.cx) < Math.abs(best.cx - s.cx) ? c : best));
    }
    if (target) {
      setFocusable(target.id);
      state.els.get(target.id).focus();
    }
  }

  function onSeatActivate(id) {
    setFocusable(id);
    const status = displayStatus(id);
    if (state.phase === 'hold' || state.busy) {
      if (status === 'available') say('Pay for or release the seats you hold before choosing more.', 'info');
      return;
    }
    if (!mayShop()) {
      // A queued show sells only during the buyer's turn: nothing to select before (or after).
      if (status === 'available' || status === 'selected') say(queueBlockedText(), 'info');
      else {
        const seat = state.seatById.get(id);
        say(`Row ${seat.row} seat ${seat.number} is ${TAKEN_WORDS[status] || status}.`, 'info');
      }
      return;
    }
    if (state.phase === 'ticket') setPhase('select');
    if (status === 'selected') {
      state.selected.delete(id);
    } else if (status === 'available') {
      if (state.selected.size + placesCount() >= MAX_SELECT) {
        say(placesCount() ? `You can choose up to ${MAX_SELECT} seats and places at a time.`
          : `You can choose up to ${MAX_SELECT} seats at a time.`, 'info');
        return;
      }
      state.selected.add(id);
    } else {
      const seat = state.seatById.get(id);
      say(`Row ${seat.row} seat ${seat.number} is ${TAKEN_WORDS[status] || status}.`, 'info');
      return;
    }
    say('');
    showAlternatives([]);
    paintAll();
    renderPanel();
  }

  function initMapEvents() {
    const map = $('map');
    map.addEventListener('click', (ev) => {
      const t = ev.target.closest && ev.target.closest('[data-seat]');
      if (t) onSeatActivate(t.getAttribute('data-seat'));
    });
    map.addEventListener('keydown', (ev) => {
      const t = ev.target.closest && ev.target.closest('[data-seat]');
      if (!t) return;
      const id = t.getAttribute('data-seat');
      if (ev.key === 'Enter' || ev.key === ' ') {
        ev.preventDefault();
        onSeatActivate(id);
      } else if (ev.key.startsWith('Arrow')) {
        ev.preventDefault();
        moveFocus(id, ev.key);
      }
    });
    // Scrolled sideways: the rail of row letters gets a backing, as it now lies over seats.
    const scroller = $('map-scroll');
    scroller.addEventListener('scroll', () => {
      $('map-inner').classList.toggle('scrolled', scroller.scrollLeft > 1);
    }, { passive: true });
    if (window.ResizeObserver) new ResizeObserver(sizeMap).observe($('map-scroll'));
    else window.addEventListener('resize', sizeMap);
  }
