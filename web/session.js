/* seatd seat picker: the session. The buyer's account (sign in, sign up, the access token and
 * its refresh, shared by every tab) or an operator's token; authApi(), the API call made as
 * whoever is signed in; the "who is signed in" strip and the sign-in / sign-up dialog. */
'use strict';

  /* ---------------------------------------------------------------- the session
   *
   * Two ways to be someone:
   *   - an account, the buyer's way: sign in with email and password; the server answers an
   *     access token (a JWT, about 15 minutes) and a refresh token. The page sends the access
   *     token as `Authorization: Bearer` and trades the refresh token for a new pair shortly
   *     before the access token runs out, or when a call answers 401;
   *   - an operator's token (`seatctl token`), pasted under "Operator" or handed over in the
   *     fragment (#token=…): used as it is, never refreshed.
   *
   * Storage: the account's pair lives in localStorage, not sessionStorage. A buyer who closes
   * the tab and comes back tomorrow should still find their tickets, and every tab of the site
   * must share ONE refresh token: the server rotates it on every refresh and treats a second
   * use of an old one as theft (it revokes the whole session). sessionStorage is per tab and is
   * copied into a duplicated tab, which would leave two tabs with the same refresh token racing
   * each other into a revoked session. The price of localStorage is that a script running in
   * this origin could read it: the CSP allows only the page's own scripts, and the page never
   * puts server text into markup (textContent only). Tokens are never logged and never put in
   * a URL the server sees.
   *
   * Refreshing: at most one refresh of a refresh token is ever in flight. Within a tab, callers
   * share one promise; across tabs, the refresh runs under a Web Lock (or, where the browser
   * has none, a short lease in localStorage), and whoever gets it re-reads the stored pair
   * first: if another tab already rotated it, it adopts the new pair instead of replaying the
   * old token (a replay would sign the buyer out everywhere).
   */

  const SESSION_KEY = 'seatd.session';      // the account: {accessToken, accessExp, lifetimeMs, refreshToken, email, name}
  const LEASE_KEY = 'seatd.refresh-lease';  // the cross-tab refresh lease, without Web Locks
  const PROFILE_KEY = 'seatd.profile';      // {email, name} of the last account created here: no secret
  let storageOk = true;                     // false: private mode or full; the session lives in memory

  function readStoredSession() {
    if (!storageOk) return state.session && state.session.kind === 'account' ? state.session : null;
    try {
      const s = JSON.parse(localStorage.getItem(SESSION_KEY) || 'null');
      return s && typeof s.refreshToken === 'string' && s.refreshToken &&
        typeof s.accessToken === 'string' ? Object.assign(s, { kind: 'account' }) : null;
    } catch (_) {
      return null;
    }
  }

  function storeSession(s) {
    if (!storageOk) return;
    try {
      if (s) localStorage.setItem(SESSION_KEY, JSON.stringify(s));
      else localStorage.removeItem(SESSION_KEY);
    } catch (_) {
      storageOk = false;
    }
  }

  function storeOperatorToken(token) {
    try {
      if (token) localStorage.setItem(TOKEN_KEY, token);
      else localStorage.removeItem(TOKEN_KEY);
    } catch (_) { /* private mode: keep it in memory */ }
  }

  /* The pair a login or a refresh answered, with who it is for. */
  function pairFrom(body, who) {
    const lifetimeMs = (typeof body.expiresIn === 'number' && body.expiresIn > 0 ? body.expiresIn : 900) * 1000;
    return {
      kind: 'account',
      accessToken: body.accessToken,
      refreshToken: body.refreshToken,
      // On this browser's clock, counted from when the answer arrived: no clock skew.
      accessExp: Date.now() + lifetimeMs,
      lifetimeMs,
      email: who.email || '',
      name: who.name || '',
    };
  }

  /* How long before the access token runs out the page refreshes it: a fifth of its lifetime,
   * between 5 s and 60 s (a minute for the usual 15). */
  function refreshLead(s) {
    return Math.min(60000, Math.max(5000, (s.lifetimeMs || 900000) / 5));
  }

  function adoptSession(s) {
    state.session = s;
    renderWho();
    scheduleRefresh();
  }

  function scheduleRefresh() {
    clearTimeout(state.refreshTimer);
    const s = state.session;
    if (!s || s.kind !== 'account') return;
    const wait = Math.max(0, s.accessExp - refreshLead(s) - Date.now());
    state.refreshTimer = setTimeout(() => refreshSession(s.refreshToken), Math.min(wait, 0x7fffffff));
  }

  /* Runs 'fn' while holding the one cross-tab refresh lock. */
  function withRefreshLock(fn) {
    if (navigator.locks && typeof navigator.locks.request === 'function') {
      return navigator.locks.request('seatd.refresh', () => fn());
    }
    return withLease(fn);
  }

  /* Without Web Locks: a lease in localStorage (written, then read back after a moment, so
   * that of two tabs writing at once only the last writer goes ahead). It expires by itself
   * if its tab dies. */
  async function withLease(fn) {
    const me = uuid();
    const read = () => { try { return JSON.parse(localStorage.getItem(LEASE_KEY) || 'null'); } catch (_) { return null; } };
    for (let tries = 0; tries < 200; tries++) {
      const lease = read();
      if (!lease || !(lease.until > Date.now())) {
        try {
          localStorage.setItem(LEASE_KEY, JSON.stringify({ id: me, until: Date.now() + 8000 }));
        } catch (_) {
          return fn();   // no storage: this tab is alone with its session anyway
        }
        await sleep(40);
        const now = read();
        if (now && now.id === me) {
          try {
            return await fn();
          } finally {
            const after = read();
            if (after && after.id === me) { try { localStorage.removeItem(LEASE_KEY); } catch (_) { /* gone */ } }
          }
        }
      }
      await sleep(50 + Math.random() * 100);
    }
    return fn();
  }

  /* Brings the access token up to date. 'stale' is the refresh token of the pair whose access
   * token is expiring or was refused: a stored pair with another refresh token is a newer one.
   * (Refresh tokens rotate and are random. Access tokens are not compared: a server that mints
   * them without a "jti" gives the same bytes twice within one second.) Resolves to 'ok'
   * (state.session is usable), 'ended' (signed out) or 'error' (no answer: the session is kept
   * and tried again later). */
  let refreshFlight = null;
  function refreshSession(stale) {
    if (!refreshFlight) {
      refreshFlight = withRefreshLock(() => refreshLocked(stale))
        .catch(() => 'error')
        .finally(() => { refreshFlight = null; });
    }
    return refreshFlight;
  }

  async function refreshLocked(stale) {
    const s = readStoredSession();
    if (!s) {
      // Signed out in another tab, or the storage was cleared.
      if (state.session && state.session.kind === 'account') sessionEnded('Your session has ended. Please sign in again.');
      return 'ended';
    }
    if (s.refreshToken !== stale && s.accessExp - Date.now() > refreshLead(s)) {
      adoptSession(s);            // another tab refreshed while this one waited
      return 'ok';
    }
    const res = await api('POST', '/v1/auth/refresh', { refreshToken: s.refreshToken });
    if (res.status === 200 && res.body && res.body.accessToken && res.body.refreshToken) {
      const next = pairFrom(res.body, s);
      storeSession(next);
      adoptSession(next);
      return 'ok';
    }
    if (res.status === 400 || res.status === 401 || res.status === 403) {
      const now = readStoredSession();
      if (now && now.refreshToken !== s.refreshToken) {   // a tab without the lock got there first
        adoptSession(now);
        return 'ok';
      }
      storeSession(null);
      sessionEnded('Your session has ended. Please sign in again.');
      return 'ended';
    }
    // No answer, 429 or 5xx: the refresh token is probably still good. Try again soon.
    clearTimeout(state.refreshTimer);
    const wait = res.status === 429 ? retryAfterSeconds(res) * 1000 : 10000;
    state.refreshTimer = setTimeout(() => refreshSession(s.refreshToken), wait);
    return 'error';
  }

  const SIGNED_OUT = () => ({ status: 401, body: null, headers: new Headers(), signedOut: true });

  /* An API call as the signed-in buyer: refreshes first when the access token is about to run
   * out, and once more (then retries once) when the server answers 401. A 401 is answered
   * before any handler runs, so the retry cannot do anything twice. */
  async function authApi(method, path, body, extraHeaders) {
    let s = state.session;
    if (!s) return SIGNED_OUT();
    if (s.kind === 'account' && s.accessExp - Date.now() < 5000) {
      await refreshSession(s.refreshToken);
      s = state.session;
      if (!s) return SIGNED_OUT();
    }
    const token = s.accessToken;
    let res = await api(method, path, body, extraHeaders, token);
    if (res.status === 401 && s.kind === 'account') {
      await refreshSession(s.refreshToken);
      if (state.session && state.session.refreshToken !== s.refreshToken) {
        res = await api(method, path, body, extraHeaders, state.session.accessToken);
      } else if (!state.session) {
        res.signedOut = true;
      }
    }
    return res;
  }

  /* The session is gone (revoked, expired, signed out elsewhere): forget it and tell the view. */
  function sessionEnded(why, byBuyer) {
    const was = state.session;
    clearTimeout(state.refreshTimer);
    state.session = null;
    renderWho();
    if (was) onSignedOut(why, !!byBuyer);
  }

  async function signOut() {
    const s = state.session;
    if (!s) return;
    $('signout-btn').disabled = true;
    if (s.kind === 'account') {
      // Under the refresh lock, so that the token revoked is the current one, not one that a
      // refresh in flight is about to replace.
      await withRefreshLock(async () => {
        const cur = readStoredSession() || s;
        await api('POST', '/v1/auth/logout', { refreshToken: cur.refreshToken });
        storeSession(null);
      });
    } else {
      storeOperatorToken('');
    }
    $('signout-btn').disabled = false;
    sessionEnded('You are signed out.', true);
  }

  /* ---------------------------------------------------------------- who is signed in */

  function renderWho() {
    const s = state.session;
    const who = $('who');
    $('signin-open').hidden = !!s;
    $('signout-btn').hidden = !s;
    if (!s) {
      who.textContent = '';
      who.dataset.state = 'none';
      return;
    }
    if (s.kind === 'account') {
      const c = jwtClaims(s.accessToken) || {};
      who.textContent = `signed in as ${s.name || c.name || s.email || c.email || c.sub || 'you'}`;
      who.dataset.state = 'ok';
      return;
    }
    const c = jwtClaims(s.accessToken);
    if (!c || !c.sub) {
      who.textContent = 'token unreadable';
      who.dataset.state = 'bad';
    } else if (c.exp && c.exp * 1000 < Date.now()) {
      who.textContent = `${c.sub}: token expired`;
      who.dataset.state = 'bad';
    } else {
      who.textContent = `signed in as ${c.sub}`;
      who.dataset.state = 'ok';
    }
  }

  /* An operator's token replaces any account session in this browser. */
  function useOperatorToken(token) {
    token = (token || '').trim();
    if (!token) return;
    const acct = readStoredSession();
    if (acct) {
      storeSession(null);
      api('POST', '/v1/auth/logout', { refreshToken: acct.refreshToken });
    }
    clearTimeout(state.refreshTimer);
    storeOperatorToken(token);
    state.session = { kind: 'operator', accessToken: token };
    renderWho();
  }

  function initSession() {
    // An operator's token comes in the fragment (#token=…), which browsers never send to the
    // server, so it reaches no access log; a ?token= in the query is not read (it would be).
    const params = new URLSearchParams(location.hash.replace(/^#/, ''));
    const token = params.get('token');
    if (token) {
      // Keep it, then take it out of the address bar (and of the history).
      params.delete('token');
      const h = params.toString();
      history.replaceState(null, '', location.pathname + location.search + (h ? '#' + h : ''));
      useOperatorToken(token);
    } else {
      const acct = readStoredSession();
      let op = '';
      try { op = localStorage.getItem(TOKEN_KEY) || ''; } catch (_) { op = ''; }
      if (acct) adoptSession(acct);
      else if (op) state.session = { kind: 'operator', accessToken: op };
    }
    renderWho();

    // Another tab signed in, refreshed or signed out.
    window.addEventListener('storage', (ev) => {
      if (ev.key !== SESSION_KEY && ev.key !== null) return;
      const s = readStoredSession();
      const cur = state.session;
      if (!s) {
        if (cur && cur.kind === 'account') sessionEnded('You signed out in another tab.');
      } else if (!cur || cur.kind !== 'account' || cur.refreshToken !== s.refreshToken) {
        const wasOut = !cur;
        adoptSession(s);
        if (wasOut) onSignedIn(false);
      }
    });
    // Timers sleep in background tabs: catch up when the buyer comes back.
    document.addEventListener('visibilitychange', () => {
      const s = state.session;
      if (document.visibilityState === 'visible' && s && s.kind === 'account' &&
          s.accessExp - Date.now() < refreshLead(s)) refreshSession(s.refreshToken);
    });

    initAccountForms();
  }

  /* ---------------------------------------------------------------- sign in, sign up */

  function accountSay(text, kind) {
    const m = $('account-message');
    m.hidden = !text;
    m.textContent = text || '';
    m.dataset.kind = kind || 'error';
  }

  function selectTab(which) {
    const signup = which === 'signup';
    $('tab-signin').setAttribute('aria-selected', String(!signup));
    $('tab-signup').setAttribute('aria-selected', String(signup));
    $('signin-form').hidden = signup;
    $('signup-form').hidden = !signup;
    $('account-title').textContent = signup ? 'Create your account' : 'Sign in';
    accountSay('');
  }

  /* Shows the sign-in card. 'why' says what for; 'then' runs once the buyer is signed in. */
  function openAccount({ why, tab, then } = {}) {
    const card = $('account');
    card.hidden = false;
    $('account-why').hidden = !why;
    $('account-why').textContent = why || '';
    state.afterSignIn = then || null;
    selectTab(tab || 'signin');
    const first = tab === 'signup' ? $('signup-email') : $('signin-email');
    card.scrollIntoView({ block: 'nearest' });
    first.focus({ preventScroll: true });
  }

  function closeAccount() {
    $('account').hidden = true;
    state.afterSignIn = null;
    accountSay('');
  }

  /* Client-side checks, in the server's terms (NIST 800-63B: length only, 8 to 128). */
  function checkCredentials(email, password, creating) {
    if (!email) return 'Enter your email address.';
    if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) return 'That email address does not look right.';
    if (!password) return 'Enter your password.';
    const n = [...password].length;
    if (creating && n < 8) return `Password too short: use at least 8 characters (this one has ${n}).`;
    if (creating && n > 128) return 'Password too long: use at most 128 characters.';
    return '';
  }

  function busyButton(btn, busyText) {
    const idle = btn.dataset.idle || btn.textContent;
    btn.dataset.idle = idle;
    btn.disabled = true;
    btn.textContent = busyText;
    return () => { btn.disabled = false; btn.textContent = idle; };
  }

  let loginBlockedUntil = 0;

  async function signIn(email, password, name) {
    const wait = Math.ceil((loginBlockedUntil - Date.now()) / 1000);
    if (wait > 0) {
      accountSay(`Too many attempts. Try again in ${wait} s.`);
      return false;
    }
    const res = await api('POST', '/v1/auth/login', { email, password });
    if (res.status === 200 && res.body && res.body.accessToken && res.body.refreshToken) {
      let known = {};
      try { known = JSON.parse(localStorage.getItem(PROFILE_KEY) || '{}') || {}; } catch (_) { known = {}; }
      const s = pairFrom(res.body, {
        email: email.toLowerCase(),
        name: name || (known.email === email.toLowerCase() ? known.name : ''),
      });
      storeOperatorToken('');
      storeSession(s);
      adoptSession(s);
      accountSay('');
      onSignedIn(true);
      return true;
    }
    if (res.status === 401) accountSay('Wrong email or password.');
    else if (res.status === 429) {
      const s = retryAfterSeconds(res);
      loginBlockedUntil = Date.now() + s * 1000;
      accountSay(`Too many attempts. Try again in ${s} s.`);
    } else if (res.status === 400) accountSay('Enter your email address and your password.');
    else accountSay(res.status >= 500 ? 'The service is busy. Try again in a moment.' : problemText(res, 'Could not sign you in.'));
    return false;
  }

  async function signUp(name, email, password) {
    const body = { email, password };
    if (name) body.name = name;
    const res = await api('POST', '/v1/auth/register', body);
    if (res.status === 201) {
      try {
        localStorage.setItem(PROFILE_KEY, JSON.stringify({
          email: (res.body && res.body.email) || email.toLowerCase(), name: (res.body && res.body.name) || name,
        }));
      } catch (_) { /* only for the greeting */ }
      // A newcomer should not have to type it all again: sign in straight away.
      return signIn(email, password, (res.body && res.body.name) || name);
    }
    if (res.status === 409) {
      accountSay('This email is already registered. Sign in instead, or use another email.');
      return false;
    }
    if (res.status === 400) {
      const b = res.body || {};
      const text = `${b.type || ''} ${b.title || ''} ${b.detail || ''}`.toLowerCase();
      const n = [...password].length;
      if (/common|weak|breach|guess/.test(text)) accountSay('That password is too common. Choose one that is harder to guess.');
      else if (/email/.test(text)) accountSay('That email address does not look right.');
      else if (n < 8 || /short/.test(text)) accountSay('Password too short: use at least 8 characters.');
      else if (n > 128 || /long/.test(text)) accountSay('Password too long: use at most 128 characters.');
      else accountSay(b.detail || 'Please check your email and password.');
      return false;
    }
    if (res.status === 429) {
      accountSay(`Too many attempts. Try again in ${retryAfterSeconds(res)} s.`);
      return false;
    }
    accountSay(res.status >= 500 ? 'The service is busy. Try again in a moment.' : problemText(res, 'Could not create the account.'));
    return false;
  }

  function initAccountForms() {
    $('signin-open').addEventListener('click', () => openAccount({}));
    $('signout-btn').addEventListener('click', signOut);
    $('account-close').addEventListener('click', closeAccount);
    $('tab-signin').addEventListener('click', () => selectTab('signin'));
    $('tab-signup').addEventListener('click', () => selectTab('signup'));

    $('signin-form').addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const email = $('signin-email').value.trim();
      const password = $('signin-password').value;
      const bad = checkCredentials(email, password, false);
      if (bad) { accountSay(bad); return; }
      const done = busyButton($('signin-submit'), 'Signing in…');
      const ok = await signIn(email, password);
      done();
      if (ok) $('signin-password').value = '';
    });

    $('signup-form').addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const name = $('signup-name').value.trim();
      const email = $('signup-email').value.trim();
      const password = $('signup-password').value;
      const bad = checkCredentials(email, password, true);
      if (bad) { accountSay(bad); return; }
      const done = busyButton($('signup-submit'), 'Creating your account…');
      const ok = await signUp(name, email, password);
      done();
      if (ok) $('signup-password').value = '';
    });

    $('identity').addEventListener('submit', (ev) => {
      ev.preventDefault();
      const t = $('token-input').value;
      $('token-input').value = '';
      if (!t.trim()) return;
      useOperatorToken(t);
      onSignedIn(true);
    });
  }

  /* Someone is signed in now: close the card, go on with what they were doing. */
  function onSignedIn(here) {
    const then = state.afterSignIn;
    closeAccount();
    if (state.view === 'tickets') loadTickets();
    else if (state.view === 'picker') {
      if (here) say(`Welcome${state.session && state.session.name ? ', ' + state.session.name : ''}! You are signed in.`, 'success');
      if (then) then();
      else resumeHold();
      if (queued() && !state.queue && storedTicket()) fetchPlace();
      if (queued()) loadQueueBookings();
    }
  }

  function onSignedOut(why, byBuyer) {
    if (state.view === 'tickets') {
      loadTickets(why);
    } else if (state.view === 'picker') {
      if (state.hold && byBuyer) {
        // The hold stays the account's on the server (it expires by itself, or the buyer signs
        // in again and finds it under My tickets); this page no longer acts on it. A session
        // that merely ran out keeps it on screen: signing in again lets the buyer pay.
        clearInterval(state.countdownTimer);
        state.hold = null;
        paintAll();
      }
      if (state.phase !== 'ticket') setPhase('select');
      say(why, 'info');
    }
  }
