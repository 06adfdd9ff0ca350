/* seatd seat picker: bootstrapping. Opening a show's picker, and start(): the view the URL asks
 * for (catalogue, picker, group, My tickets), run once the page is parsed. Loaded last. */
'use strict';

  /* ---------------------------------------------------------------- start */

  async function showPicker(id) {
    state.view = 'picker';
    state.showId = id;
    $('picker').hidden = false;
    const enc = encodeURIComponent(id);
    const [showRes, layoutRes] = await Promise.all([
      api('GET', `/v1/shows/${enc}`),
      api('GET', `/v1/shows/${enc}/layout`),
    ]);
    if (showRes.status !== 200 || !showRes.body) {
      fatal(showRes.status === 404 ? `There is no show ${id}.` : problemText(showRes, 'Could not load the show.'));
      return;
    }
    if (layoutRes.status !== 200 || !layoutRes.body || !Array.isArray(layoutRes.body.seats)) {
      fatal(problemText(layoutRes, 'Could not load the seat layout.'));
      return;
    }
    state.show = showRes.body;
    document.title = `${state.show.title} — seatd`;
    $('show-title').textContent = state.show.title || `Show ${id}`;
    $('show-when').textContent = formatWhen(state.show.startsAt);
    state.layout = layoutRes.body.seats.filter((s) => s && typeof s.id === 'string' &&
      typeof s.x === 'number' && typeof s.y === 'number');
    state.seatById = new Map(state.layout.map((s) => [s.id, s]));
    // Seat i of the layout is bit i of the availability bitmaps.
    state.seatIdAt = layoutRes.body.seats.map((s) => (s && typeof s.id === 'string' ? s.id : null));

    initAreas();
    drawMap();
    initMapEvents();
    $('hold-btn').addEventListener('click', hold);
    $('clear-btn').addEventListener('click', () => {
      state.selected.clear();
      state.areaPick.clear();
      paintAll();
      renderPanel();
      say('');
      showAlternatives([]);
    });
    $('pay-btn').addEventListener('click', pay);
    $('release-btn').addEventListener('click', release);
    $('again-btn').addEventListener('click', () => { setPhase('select'); say(''); });
    $('notice-close').addEventListener('click', () => { say(''); showAlternatives([]); });
    initBestForm();
    // A group hold names its seats: best available is a single show's.
    $('best-form').hidden = !!state.group;
    initQueue();
    setPhase('select');

    setLive('connecting');
    await refreshSeats(false);
    connectWs();
    // Until the WebSocket says hello, keep the map fresh by polling.
    schedulePoll();
    resumeHold();
  }

  function start() {
    initSession();
    const params = new URLSearchParams(location.search);
    const id = params.get('show');
    const group = params.get('group');
    if (group) showGroup(group, id);
    else if (id) showPicker(id);
    else if (params.get('view') === 'tickets') showTickets();
    else showCatalogue();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
