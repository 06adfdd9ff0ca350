#!/usr/bin/env node
/*
 * tests/faults/ledger.js LEDGER PREFIX - the fake gateway's charges whose idempotency key (the
 * booking id) starts with PREFIX, one line each:
 *   <key> <charge status> <amount> <amount refunded>
 * The ledger is deploy/gateway/gateway.js's append-only JSONL (one record per charge or
 * refund); a torn last line is ignored, as the gateway itself does.
 */
'use strict';
const fs = require('fs');
const [path, prefix] = process.argv.slice(2);
if (!path || prefix === undefined) {
    process.stderr.write('usage: ledger.js LEDGER PREFIX\n');
    process.exit(2);
}
let text = '';
try {
    text = fs.readFileSync(path, 'utf8');
} catch (e) {
    if (e.code !== 'ENOENT') throw e;
}
const byId = new Map(); /* charge id -> {key, status, amount, refunded} */
const lines = text.split('\n');
lines.forEach((line, i) => {
    if (line.trim() === '') return;
    let rec;
    try {
        rec = JSON.parse(line);
    } catch (e) {
        if (i === lines.length - 1) return;
        throw e;
    }
    if (rec.type === 'charge') {
        byId.set(rec.charge.id, { key: rec.key, status: rec.charge.status,
                                  amount: rec.charge.amount, refunded: 0 });
    } else if (rec.type === 'refund') {
        const ch = byId.get(rec.refund.charge);
        if (ch) ch.refunded += rec.refund.amount;
    }
});
const out = [];
for (const ch of byId.values())
    if (ch.key.startsWith(prefix)) out.push(`${ch.key} ${ch.status} ${ch.amount} ${ch.refunded}`);
process.stdout.write(out.join('\n') + (out.length ? '\n' : ''));
