#!/usr/bin/env node
/*
 * gateway.js - the fake card gateway seatd develops and tests against.
 *
 * A real HTTP server (Node's built-in http module, no dependencies) with the semantics of a
 * card gateway: idempotency keys (one charge per key, replays answer the first response, a
 * different body under the same key is 422, a replay while the first is in flight is 409),
 * test tokens that succeed, decline, are slow, hang, or fail after charging, full and partial
 * refunds, and a lookup by idempotency key for reconciliation. See README.md for the API.
 *
 * State is an append-only JSONL ledger (one record per charge or refund, fsync'd), replayed at
 * start: a restart loses nothing and replays still answer the first result. A charge that is
 * still "processing" (tok_slow) when the process dies was never recorded: it did not happen.
 *
 *   node deploy/gateway/gateway.js --port P --ledger FILE
 *   env: GATEWAY_PORT, GATEWAY_LEDGER, GATEWAY_SLOW_MS (default 5000)
 *
 * Binds 127.0.0.1 only. One JSON line per request on stdout; a "listening" line when ready.
 */
'use strict';

const http = require('http');
const fs = require('fs');
const crypto = require('crypto');

const MAX_BODY = 16 * 1024;
const MAX_AMOUNT = 1e9;
const KEY_RE = /^[\x21-\x7e]{1,255}$/;
const CURRENCY_RE = /^[A-Z]{3}$/;
const ID_RE = /^(ch|re)_[A-Za-z0-9]{1,60}$/;

/* ---------------------------------------------------------------------------------------- */
/* Configuration                                                                            */
/* ---------------------------------------------------------------------------------------- */

function usage(msg) {
    if (msg) process.stderr.write(`gateway: ${msg}\n`);
    process.stderr.write('usage: node gateway.js --port P --ledger FILE ' +
                         '(or env GATEWAY_PORT, GATEWAY_LEDGER; GATEWAY_SLOW_MS)\n');
    process.exit(msg ? 2 : 0);
}

function parseArgs(argv) {
    const cfg = {
        port: process.env.GATEWAY_PORT,
        ledger: process.env.GATEWAY_LEDGER,
        slowMs: process.env.GATEWAY_SLOW_MS,
    };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        if (a === '--help' || a === '-h') usage();
        else if (a === '--port' && i + 1 < argv.length) cfg.port = argv[++i];
        else if (a === '--ledger' && i + 1 < argv.length) cfg.ledger = argv[++i];
        else if (a === '--slow-ms' && i + 1 < argv.length) cfg.slowMs = argv[++i];
        else usage(`unknown argument ${a}`);
    }
    const port = Number(cfg.port);
    if (cfg.port === undefined || !Number.isInteger(port) || port < 0 || port > 65535)
        usage('--port (0-65535) is required');
    if (!cfg.ledger) usage('--ledger FILE is required');
    const slowMs = cfg.slowMs === undefined ? 5000 : Number(cfg.slowMs);
    if (!Number.isInteger(slowMs) || slowMs < 0) usage('GATEWAY_SLOW_MS must be an integer >= 0');
    return { port, ledger: cfg.ledger, slowMs };
}

const cfg = parseArgs(process.argv.slice(2));

function log(obj) {
    process.stdout.write(JSON.stringify({ ts: new Date().toISOString(), ...obj }) + '\n');
}

/* ---------------------------------------------------------------------------------------- */
/* State and the ledger                                                                     */
/* ---------------------------------------------------------------------------------------- */

const charges = new Map();     /* charge idempotency key -> {fp, response:{status, body}, id} */
const chargesById = new Map(); /* charge id -> charge object (amountRefunded kept current) */
const chargeOrder = [];        /* charge ids in the order they were made (the listing's order) */
const chargeIndex = new Map(); /* charge id -> its position in chargeOrder (the list cursor) */
const refunds = new Map();     /* refund idempotency key -> {fp, response, id} */
const refundsById = new Map(); /* refund id -> refund object */
const inflight = new Map();    /* charge idempotency key -> {fp} while tok_slow is processing */
const slowTimers = new Set();
const stats = { charges: 0, succeeded: 0, refunds: 0, refundedAmount: 0, byKey: {} };

function keyStats(key) {
    if (!stats.byKey[key]) stats.byKey[key] = { charges: 0, refunds: 0, refundedAmount: 0 };
    return stats.byKey[key];
}

/* Applies one ledger record to the in-memory state; used by replay and by live writes. */
function apply(rec) {
    if (rec.type === 'charge') {
        const ch = { ...rec.charge, amountRefunded: 0, refunded: false, refunds: [] };
        if (ch.createdMs === undefined) ch.createdMs = ch.created * 1000; /* an older ledger */
        chargesById.set(ch.id, ch);
        chargeIndex.set(ch.id, chargeOrder.length);
        chargeOrder.push(ch.id);
        charges.set(rec.key, { fp: rec.fp, response: rec.response, id: ch.id });
        stats.charges++;
        if (ch.status === 'succeeded') stats.succeeded++;
        keyStats(rec.key).charges++;
    } else if (rec.type === 'refund') {
        const re = rec.refund;
        const ch = chargesById.get(re.charge);
        if (!ch) throw new Error(`refund ${re.id} names unknown charge ${re.charge}`);
        ch.amountRefunded += re.amount;
        ch.refunded = ch.amountRefunded >= ch.amount;
        ch.refunds.push(re.id);
        refundsById.set(re.id, re);
        refunds.set(rec.key, { fp: rec.fp, response: rec.response, id: re.id });
        stats.refunds++;
        stats.refundedAmount += re.amount;
        const ks = keyStats(ch.idempotencyKey);
        ks.refunds++;
        ks.refundedAmount += re.amount;
    } else {
        throw new Error(`unknown record type ${rec.type}`);
    }
}

function replayLedger(path) {
    let text = '';
    try {
        text = fs.readFileSync(path, 'utf8');
    } catch (e) {
        if (e.code !== 'ENOENT') throw e;
    }
    const lines = text.split('\n');
    let n = 0;
    lines.forEach((line, i) => {
        if (line.trim() === '') return;
        let rec;
        try {
            rec = JSON.parse(line);
        } catch (e) {
            /* Only a torn last line (a crash mid-append) is tolerated. */
            if (i === lines.length - 1) {
                log({ level: 'WARN', msg: 'ignoring torn last ledger line', line: i + 1 });
                return;
            }
            throw new Error(`ledger ${path}:${i + 1}: ${e.message}`);
        }
        apply(rec);
        n++;
    });
    const fd = fs.openSync(path, 'a');
    /* Start appending on a fresh line if the last write was torn. */
    if (text.length > 0 && !text.endsWith('\n')) fs.writeSync(fd, '\n');
    return { fd, records: n };
}

const ledger = replayLedger(cfg.ledger);

/* Appends 'rec' durably, then applies it: the state never holds what the ledger lacks. */
function commit(rec) {
    fs.writeSync(ledger.fd, JSON.stringify(rec) + '\n');
    fs.fsyncSync(ledger.fd);
    apply(rec);
}

/* ---------------------------------------------------------------------------------------- */
/* Helpers                                                                                  */
/* ---------------------------------------------------------------------------------------- */

function newId(prefix) {
    return prefix + '_' + crypto.randomBytes(12).toString('hex');
}

/* A canonical fingerprint of a parsed body: key order does not matter. */
function canonical(v) {
    if (Array.isArray(v)) return '[' + v.map(canonical).join(',') + ']';
    if (v !== null && typeof v === 'object')
        return '{' + Object.keys(v).sort().map((k) => JSON.stringify(k) + ':' + canonical(v[k]))
            .join(',') + '}';
    return JSON.stringify(v);
}

function fingerprint(body) {
    return crypto.createHash('sha256').update(canonical(body)).digest('hex');
}

function send(res, status, body, extraHeaders) {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    res.writeHead(status, {
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(text),
        ...(extraHeaders || {}),
    });
    res.end(text);
}

function errorBody(type, code, message, extra) {
    return { error: { type, code, message }, ...(extra || {}) };
}

function sendError(res, status, type, code, message, extra) {
    res.locals.code = code;
    send(res, status, errorBody(type, code, message, extra));
}

function invalid(res, code, message) {
    sendError(res, 400, 'invalid_request_error', code, message);
}

function replay(res, stored) {
    res.locals.replayed = true;
    send(res, stored.status, stored.body, { 'Idempotent-Replayed': 'true' });
}

function chargeView(ch) {
    return {
        id: ch.id, object: 'charge', status: ch.status, amount: ch.amount, currency: ch.currency,
        idempotencyKey: ch.idempotencyKey, source: ch.source, description: ch.description,
        metadata: ch.metadata, created: ch.created, createdMs: ch.createdMs,
        amountRefunded: ch.amountRefunded, refunded: ch.refunded, refunds: ch.refunds,
        ...(ch.status === 'failed' ? { failureCode: ch.failureCode,
                                       failureMessage: ch.failureMessage } : {}),
    };
}

/* ---------------------------------------------------------------------------------------- */
/* Charges                                                                                  */
/* ---------------------------------------------------------------------------------------- */

const DECLINES = {
    tok_declined: ['card_declined', 'Your card was declined.'],
    tok_insufficient_funds: ['insufficient_funds', 'Your card has insufficient funds.'],
};
const SUCCEEDS = new Set(['tok_ok', 'tok_slow', 'tok_hang', 'tok_error_after_charge']);

function validateCharge(b) {
    if (b === null || typeof b !== 'object' || Array.isArray(b))
        return ['invalid_body', 'the body must be a JSON object'];
    if (!Number.isInteger(b.amount) || b.amount <= 0 || b.amount > MAX_AMOUNT)
        return ['invalid_amount', `amount must be an integer in 1..${MAX_AMOUNT} (minor units)`];
    if (typeof b.currency !== 'string' || !CURRENCY_RE.test(b.currency))
        return ['invalid_currency', 'currency must be 3 upper-case letters'];
    if (typeof b.source !== 'string' || b.source.length === 0 || b.source.length > 255)
        return ['invalid_source_format', 'source must be a token string'];
    if (b.description !== undefined && (typeof b.description !== 'string' ||
                                        b.description.length > 1000))
        return ['invalid_description', 'description must be a string of at most 1000 characters'];
    if (b.metadata !== undefined && (b.metadata === null || typeof b.metadata !== 'object' ||
                                     Array.isArray(b.metadata)))
        return ['invalid_metadata', 'metadata must be an object'];
    return null;
}

/* Records the charge for 'key' and returns the response to send (and to replay later). */
function recordCharge(key, fp, b) {
    const now = Date.now();
    const ch = {
        id: newId('ch'), object: 'charge', amount: b.amount, currency: b.currency,
        idempotencyKey: key, source: b.source, description: b.description || '',
        metadata: b.metadata || {}, created: Math.floor(now / 1000), createdMs: now,
    };
    let response;
    if (SUCCEEDS.has(b.source)) {
        ch.status = 'succeeded';
        const view = {
            id: ch.id, object: 'charge', status: 'succeeded', amount: ch.amount,
            currency: ch.currency, idempotencyKey: key, source: ch.source,
            description: ch.description, metadata: ch.metadata, created: ch.created,
            createdMs: ch.createdMs,
        };
        if (b.source === 'tok_error_after_charge')
            response = { status: 500, body: JSON.stringify(errorBody(
                'api_error', 'internal_error', 'the gateway failed after processing the charge')) };
        else
            response = { status: 201, body: JSON.stringify(view) };
    } else {
        const [code, message] = DECLINES[b.source] ||
            ['invalid_source', 'No such token: the source is not a known test token.'];
        ch.status = 'failed';
        ch.failureCode = code;
        ch.failureMessage = message;
        response = { status: 402, body: JSON.stringify(errorBody(
            'card_error', code, message, { chargeId: ch.id, status: 'failed' })) };
    }
    commit({ type: 'charge', key, fp, charge: ch, response });
    return response;
}

function createCharge(req, res, b) {
    const key = res.locals.key;
    const err = validateCharge(b);
    if (err) return invalid(res, err[0], err[1]);
    res.locals.source = b.source;
    const fp = fingerprint(b);
    const busy = inflight.get(key);
    if (busy) {
        if (busy.fp !== fp)
            return sendError(res, 422, 'idempotency_error', 'idempotency_key_reused',
                             'this idempotency key was used with a different request');
        return sendError(res, 409, 'idempotency_error', 'idempotency_key_in_use',
                         'a request with this idempotency key is still being processed');
    }
    const prior = charges.get(key);
    if (prior) {
        if (prior.fp !== fp)
            return sendError(res, 422, 'idempotency_error', 'idempotency_key_reused',
                             'this idempotency key was used with a different request');
        return replay(res, prior.response);
    }
    if (b.source === 'tok_slow') {
        inflight.set(key, { fp });
        const t = setTimeout(() => {
            slowTimers.delete(t);
            inflight.delete(key);
            const response = recordCharge(key, fp, b);
            if (!res.destroyed && !res.headersSent) send(res, response.status, response.body);
        }, cfg.slowMs);
        slowTimers.add(t);
        return;
    }
    const response = recordCharge(key, fp, b);
    if (b.source === 'tok_hang') {
        /* Charged, but the answer never comes: the socket stays open until the client quits. */
        res.locals.hung = true;
        return;
    }
    send(res, response.status, response.body);
}

/* GET /v1/charges?startingAfter=<ch_id>&limit=N: the charges made after that one (all of
 * them without a cursor), oldest first, at most 'limit' (1-100, default 10), the way card
 * providers list charges with a cursor. A reconciler walks the ledger with it: it keeps the id
 * of the last charge it has checked and asks for the ones after it. */
function listCharges(res, params) {
    const after = params.get('startingAfter');
    const limitText = params.get('limit');
    const limit = limitText === null ? 10 : Number(limitText);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100)
        return invalid(res, 'invalid_limit', 'limit must be an integer in 1..100');
    let from = 0;
    if (after !== null && after !== '') {
        const at = chargeIndex.get(after);
        if (at === undefined)
            return invalid(res, 'invalid_starting_after', 'startingAfter names no charge');
        from = at + 1;
    }
    const ids = chargeOrder.slice(from, from + limit);
    send(res, 200, { object: 'list', data: ids.map((id) => chargeView(chargesById.get(id))),
                     hasMore: from + ids.length < chargeOrder.length });
}

function getCharge(res, ch) {
    if (!ch) return sendError(res, 404, 'invalid_request_error', 'resource_missing',
                              'no such charge');
    send(res, 200, chargeView(ch));
}

function lookupCharge(res, key) {
    if (!key || !KEY_RE.test(key))
        return invalid(res, 'invalid_idempotency_key', 'idempotencyKey query parameter required');
    res.locals.key = key;
    if (inflight.has(key))
        return sendError(res, 409, 'idempotency_error', 'charge_in_progress',
                         'the charge for this idempotency key is still being processed');
    const entry = charges.get(key);
    getCharge(res, entry ? chargesById.get(entry.id) : null);
}

/* ---------------------------------------------------------------------------------------- */
/* Refunds                                                                                  */
/* ---------------------------------------------------------------------------------------- */

function createRefund(req, res, b) {
    const key = res.locals.key;
    if (b === null || typeof b !== 'object' || Array.isArray(b))
        return invalid(res, 'invalid_body', 'the body must be a JSON object');
    if (typeof b.charge !== 'string' || !ID_RE.test(b.charge) || !b.charge.startsWith('ch_'))
        return invalid(res, 'invalid_charge', 'charge must be a charge id (ch_...)');
    if (b.amount !== undefined &&
        (!Number.isInteger(b.amount) || b.amount <= 0 || b.amount > MAX_AMOUNT))
        return invalid(res, 'invalid_amount', `amount must be an integer in 1..${MAX_AMOUNT}`);
    if (b.reason !== undefined && (typeof b.reason !== 'string' || b.reason.length > 1000))
        return invalid(res, 'invalid_reason', 'reason must be a string of at most 1000 characters');
    const fp = fingerprint(b);
    const prior = refunds.get(key);
    if (prior) {
        if (prior.fp !== fp)
            return sendError(res, 422, 'idempotency_error', 'idempotency_key_reused',
                             'this idempotency key was used with a different request');
        return replay(res, prior.response);
    }
    const ch = chargesById.get(b.charge);
    if (!ch) return sendError(res, 404, 'invalid_request_error', 'resource_missing',
                              'no such charge');
    if (ch.status !== 'succeeded')
        return invalid(res, 'charge_not_refundable', 'only a succeeded charge can be refunded');
    const remaining = ch.amount - ch.amountRefunded;
    if (remaining <= 0)
        return invalid(res, 'charge_already_refunded', 'the charge is fully refunded');
    const amount = b.amount === undefined ? remaining : b.amount;
    if (amount > remaining)
        return invalid(res, 'amount_too_large',
                       `the refund exceeds what is left of the charge (${remaining})`);
    const re = {
        id: newId('re'), object: 'refund', charge: ch.id, amount, currency: ch.currency,
        status: 'succeeded', reason: b.reason || '', idempotencyKey: key,
        created: Math.floor(Date.now() / 1000),
    };
    const view = { ...re, chargeAmountRefunded: ch.amountRefunded + amount };
    const response = { status: 201, body: JSON.stringify(view) };
    commit({ type: 'refund', key, fp, refund: re, response });
    send(res, response.status, response.body);
}

/* ---------------------------------------------------------------------------------------- */
/* HTTP                                                                                     */
/* ---------------------------------------------------------------------------------------- */

/* Reads a JSON body of at most MAX_BODY bytes, then calls fn(parsed). */
function withJsonBody(req, res, fn) {
    const chunks = [];
    let size = 0;
    let failed = false;
    req.on('data', (c) => {
        if (failed) return;
        size += c.length;
        if (size > MAX_BODY) {
            failed = true;
            res.setHeader('Connection', 'close');
            invalid(res, 'body_too_large', `the body exceeds ${MAX_BODY} bytes`);
            res.on('finish', () => req.socket.destroy());
            return;
        }
        chunks.push(c);
    });
    req.on('end', () => {
        if (failed) return;
        let body;
        try {
            body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch (e) {
            return invalid(res, 'invalid_json', 'the body is not valid JSON');
        }
        fn(body);
    });
}

function requireKey(req, res) {
    const key = req.headers['idempotency-key'];
    if (key === undefined) {
        invalid(res, 'missing_idempotency_key', 'the Idempotency-Key header is required');
        return null;
    }
    if (!KEY_RE.test(key)) {
        invalid(res, 'invalid_idempotency_key', 'Idempotency-Key must be 1-255 visible ASCII');
        return null;
    }
    res.locals.key = key;
    return key;
}

function route(req, res) {
    const url = new URL(req.url, 'http://gateway');
    const path = url.pathname;
    const m = req.method;
    if (path === '/healthz') {
        if (m !== 'GET' && m !== 'HEAD') return sendError(res, 405, 'invalid_request_error',
                                                          'method_not_allowed', 'use GET');
        return send(res, 200, { ok: true });
    }
    if (path === '/v1/stats') {
        if (m !== 'GET') return sendError(res, 405, 'invalid_request_error',
                                          'method_not_allowed', 'use GET');
        return send(res, 200, stats);
    }
    if (path === '/v1/charges') {
        if (m === 'POST') {
            if (requireKey(req, res) === null) return;
            return withJsonBody(req, res, (b) => createCharge(req, res, b));
        }
        if (m === 'GET' && url.searchParams.has('idempotencyKey'))
            return lookupCharge(res, url.searchParams.get('idempotencyKey'));
        if (m === 'GET') return listCharges(res, url.searchParams);
        return sendError(res, 405, 'invalid_request_error', 'method_not_allowed',
                         'use POST or GET');
    }
    if (path.startsWith('/v1/charges/')) {
        if (m !== 'GET') return sendError(res, 405, 'invalid_request_error',
                                          'method_not_allowed', 'use GET');
        return getCharge(res, chargesById.get(path.slice('/v1/charges/'.length)));
    }
    if (path === '/v1/refunds') {
        if (m !== 'POST') return sendError(res, 405, 'invalid_request_error',
                                           'method_not_allowed', 'use POST');
        if (requireKey(req, res) === null) return;
        return withJsonBody(req, res, (b) => createRefund(req, res, b));
    }
    if (path.startsWith('/v1/refunds/')) {
        if (m !== 'GET') return sendError(res, 405, 'invalid_request_error',
                                          'method_not_allowed', 'use GET');
        const re = refundsById.get(path.slice('/v1/refunds/'.length));
        if (!re) return sendError(res, 404, 'invalid_request_error', 'resource_missing',
                                  'no such refund');
        return send(res, 200, re);
    }
    sendError(res, 404, 'invalid_request_error', 'not_found', 'no such route');
}

const server = http.createServer((req, res) => {
    const started = process.hrtime.bigint();
    res.locals = {};
    res.on('close', () => {
        /* One line per request, when it ends (answered, hung up on, or cut at shutdown). */
        const l = res.locals;
        log({
            method: req.method, path: req.url, status: res.headersSent ? res.statusCode : null,
            ms: Number((process.hrtime.bigint() - started) / 1000000n),
            key: l.key, source: l.source, code: l.code, replayed: l.replayed || undefined,
            hung: l.hung || undefined, aborted: res.writableFinished ? undefined : true,
        });
    });
    try {
        route(req, res);
    } catch (e) {
        log({ level: 'ERROR', msg: 'handler failed', error: String(e && e.stack || e) });
        if (!res.headersSent) sendError(res, 500, 'api_error', 'internal_error', 'internal error');
    }
});
server.keepAliveTimeout = 5000;

function shutdown(sig) {
    log({ msg: 'shutting down', signal: sig });
    for (const t of slowTimers) clearTimeout(t);
    slowTimers.clear();
    server.close(() => {
        fs.closeSync(ledger.fd);
        process.exit(0);
    });
    server.closeAllConnections();
}
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));

server.on('error', (e) => {
    log({ level: 'ERROR', msg: 'listen failed', error: e.message });
    process.exit(1);
});
server.listen(cfg.port, '127.0.0.1', () => {
    log({ msg: 'listening', host: '127.0.0.1', port: server.address().port,
          ledger: cfg.ledger, records: ledger.records, slowMs: cfg.slowMs });
});
