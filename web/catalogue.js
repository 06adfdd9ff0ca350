/* seatd seat picker: the catalogue (the page without ?show=: the shows, each with its date, seat
 * count and price range) and fatal(), the page's last word when it cannot go on. */
'use strict';

  /* ---------------------------------------------------------------- catalogue */

  async function showCatalogue() {
    state.view = 'catalogue';
    $('catalogue').hidden = false;
    const res = await api('GET', '/v1/shows?size=50');
    if (res.status !== 200 || !res.body) {
      fatal(problemText(res, 'Could not load the shows.'));
      return;
    }
    const list = $('show-list');
    list.textContent = '';
    const items = res.body.items || [];
    $('catalogue-empty').hidden = items.length > 0;
    for (const s of items) {
      const li = el('li');
      const a = el('a', { href: '/?show=' + encodeURIComponent(s.id) });
      a.append(el('span', { class: 'show-name' }, s.title || `Show ${s.id}`));
      const meta = [formatWhen(s.startsAt), s.seatCount ? `${s.seatCount.toLocaleString()} seats` : '']
        .filter(Boolean).join(' · ');
      a.append(el('span', { class: 'muted' }, meta));
      const prices = priceRangeText(s);
      if (prices) a.append(el('span', { class: 'show-price' }, prices));
      li.append(a);
      list.append(li);
    }
  }

  function fatal(text) {
    $('picker').hidden = true;
    $('catalogue').hidden = true;
    $('tickets').hidden = true;
    $('fatal').hidden = false;
    $('fatal-text').textContent = text;
  }
