/* seatd seat picker: standing areas (places sold by count, not by seat): their free counts,
 * the places chosen per area, and their list beside the map. */
'use strict';

  /* ---------------------------------------------------------------- standing areas
   *
   * A show may sell places in standing areas (general admission: "FLOOR", 500 places) beside
   * its seats. The show document names them ([{id, capacity, tier}]); their free counts come
   * with the status map (the availability document and the WebSocket's snapshot:
   * {"FLOOR":{"capacity":500,"available":482}}) and with each delta ({"FLOOR":482}, the count
   * after the change); an area a frame does not name did not change. The buyer chooses a
   * number of places per area, and they go into the one hold with the seats: all or nothing.
   */

  function initAreas() {
    const list = Array.isArray(state.show && state.show.areas) ? state.show.areas : [];
    state.areas = list.filter((a) => a && typeof a.id === 'string' && /^[A-Za-z0-9_-]+$/.test(a.id));
    $('areas-card').hidden = !state.areas.length;
    const ul = $('areas');
    ul.textContent = '';
    for (const a of state.areas) ul.append(areaItem(a));
    renderAreas();
  }

  function areaOf(id) {
    return state.areas.find((a) => a.id === id) || null;
  }

  /* One area's card: name, tier and price, "N of C places free" and a stepper. The area id
   * ([A-Za-z0-9_-], checked above) is used as it is in element ids. */
  function areaItem(a) {
    const li = el('li', { class: 'area', 'data-area': a.id });
    const head = el('div', { class: 'area-head' });
    head.append(el('h3', { class: 'area-name', id: `area-name-${a.id}` }, a.id));
    const price = tierPrice(a.tier);
    head.append(el('span', { class: 'area-tier' },
      tierName(String(a.tier || '')) + (price != null ? ` · ${showMoney(price)} a place` : '')));
    li.append(head);
    li.append(el('p', { class: 'area-free', id: `area-free-${a.id}` }));
    const step = el('div', { class: 'stepper', role: 'group', 'aria-labelledby': `area-name-${a.id}` });
    const label = el('label', { for: `area-qty-${a.id}`, class: 'area-qty-label' }, 'Places');
    label.append(el('span', { class: 'sr-only' }, ` in ${a.id}`));
    const less = el('button', { type: 'button', class: 'btn step-btn area-less', 'aria-label': `One place fewer in ${a.id}`,
      'aria-controls': `area-qty-${a.id}` }, '−');
    const qty = el('input', { id: `area-qty-${a.id}`, class: 'area-qty', type: 'number', min: '0', step: '1',
      value: '0', inputmode: 'numeric', autocomplete: 'off', 'aria-describedby': `area-free-${a.id}` });
    const more = el('button', { type: 'button', class: 'btn step-btn area-more', 'aria-label': `One place more in ${a.id}`,
      'aria-controls': `area-qty-${a.id}` }, '+');
    less.addEventListener('click', () => choosePlaces(a.id, pickOf(a.id) - 1));
    more.addEventListener('click', () => choosePlaces(a.id, pickOf(a.id) + 1));
    qty.addEventListener('change', () => choosePlaces(a.id, Math.floor(Number(qty.value) || 0)));
    step.append(label, less, qty, more);
    li.append(step);
    return li;
  }

  function pickOf(id) {
    return state.areaPick.get(id) || 0;
  }

  /* Places chosen in every area together. */
  function placesCount() {
    let n = 0;
    for (const v of state.areaPick.values()) n += v;
    return n;
  }

  /* The places chosen as a hold's "areas" member ({"FLOOR": 2}), null for none. */
  function pickedAreas() {
    const out = {};
    for (const a of state.areas) if (pickOf(a.id) > 0) out[a.id] = pickOf(a.id);
    return Object.keys(out).length ? out : null;
  }

  /* The most places the buyer may choose in area 'id': what is free, and what is left of the
   * hold limit after the seats and the other areas' places. */
  function areaMax(id) {
    const free = state.areaFree.get(id);
    if (typeof free !== 'number') return 0;
    const room = MAX_SELECT - state.selected.size - (placesCount() - pickOf(id));
    return Math.max(0, Math.min(free, room));
  }

  function choosePlaces(id, n) {
    if (state.phase === 'hold' || state.busy) return;
    if (!mayShop()) { say(queueBlockedText(), 'info'); renderAreas(); return; }
    if (state.phase === 'ticket') setPhase('select');
    const max = areaMax(id);
    const want = Math.max(0, n);
    if (want > max) {
      const free = state.areaFree.get(id);
      say(typeof free === 'number' && free <= max
        ? (free === 0 ? `${id} is sold out.` : `Only ${free} place${free === 1 ? '' : 's'} left in ${id}.`)
        : `You can choose up to ${MAX_SELECT} seats and places at a time.`, 'info');
    } else {
      say('');
    }
    const v = Math.min(want, max);
    if (v > 0) state.areaPick.set(id, v);
    else state.areaPick.delete(id);
    renderPanel();
  }

  /* "FLOOR × 2, BALCONY × 1" for a hold's, a booking's or a ticket's "areas" ('' for none). */
  function placesText(areas) {
    if (!areas || typeof areas !== 'object') return '';
    return Object.entries(areas).filter(([, n]) => typeof n === 'number' && n > 0)
      .map(([id, n]) => `${id} × ${n}`).join(', ');
  }

  /* Seats and places, as the hold summary and the ticket list them. */
  function itemsText(seatIds, areas) {
    return [seatIds && seatIds.length ? seatListText(seatIds) : '', placesText(areas)].filter(Boolean).join(', ');
  }

  /* What the places cost at their areas' tiers; null when a price is unknown. */
  function placesTotal(areas) {
    let sum = 0;
    for (const [id, n] of Object.entries(areas || {})) {
      const a = areaOf(id);
      const p = a ? tierPrice(a.tier) : null;
      if (p == null) return null;
      sum += p * n;
    }
    return sum;
  }

  /* Free counts from the server: {"FLOOR":{"capacity":500,"available":482}} (status map,
   * snapshot, refusal) or {"FLOOR":482} (delta). Places chosen beyond what is now free are
   * cut back, and the buyer is told. */
  function applyAreaFree(areas) {
    if (!areas || typeof areas !== 'object' || !state.areas.length) return;
    for (const [id, v] of Object.entries(areas)) {
      const a = areaOf(id);
      if (!a) continue;
      const free = typeof v === 'number' ? v : v && typeof v.available === 'number' ? v.available : null;
      if (v && typeof v.capacity === 'number') a.capacity = v.capacity;
      if (free != null && isFinite(free)) state.areaFree.set(id, Math.max(0, free));
    }
    const cut = [];
    for (const a of state.areas) {
      const free = state.areaFree.get(a.id);
      if (typeof free === 'number' && pickOf(a.id) > free) {
        if (free > 0) state.areaPick.set(a.id, free);
        else state.areaPick.delete(a.id);
        cut.push(free === 0 ? `${a.id} just sold out` : `only ${free} place${free === 1 ? '' : 's'} left in ${a.id}`);
      }
    }
    renderAreas();
    if (cut.length) {
      const text = listWords(cut);
      say(text.charAt(0).toUpperCase() + text.slice(1) + ': your places were cut back.', 'error');
      renderPanel();
    }
  }

  function renderAreas() {
    if (!state.areas.length) return;
    const choosing = state.phase !== 'hold' && !state.busy && mayShop();
    for (const a of state.areas) {
      const li = $('areas').querySelector(`[data-area="${CSS.escape(a.id)}"]`);
      if (!li) continue;
      const free = state.areaFree.get(a.id);
      const known = typeof free === 'number';
      const cap = typeof a.capacity === 'number' ? a.capacity : null;
      const soldOut = known && free === 0;
      li.dataset.free = known ? String(free) : '';
      li.dataset.soldout = String(soldOut);
      const line = li.querySelector('.area-free');
      line.textContent = !known ? (cap != null ? `${cap.toLocaleString()} places` : '')
        : soldOut ? 'Sold out'
          : `${free.toLocaleString()} of ${(cap != null ? cap : free).toLocaleString()} place${cap === 1 ? '' : 's'} free`;
      const pick = pickOf(a.id);
      const max = areaMax(a.id);
      const qty = li.querySelector('.area-qty');
      if (document.activeElement !== qty || qty.value !== String(pick)) qty.value = String(pick);
      qty.max = String(Math.max(pick, max));
      qty.disabled = !choosing || !known || soldOut;
      li.querySelector('.area-less').disabled = qty.disabled || pick <= 0;
      li.querySelector('.area-more').disabled = qty.disabled || pick >= max;
      li.classList.toggle('picked', pick > 0);
    }
  }
