#!/usr/bin/python3
"""check_schemas.py - the API description's request schemas say what the server enforces.

    check_schemas.py OPENAPI_JSON

Validates sample request bodies against the document's component schemas (JSON Schema 2020-12,
$refs resolved within the document, as tests/e2e/validate_responses.py does) and fails (exit 1)
on any that the schema accepts where the server refuses it, or refuses where the server takes
it: a client generated from the document then refuses what the server would refuse. Each
sample states what the worker does with it (worker/handlers/*.c); the end-to-end suites check
the other direction on every request the server accepted (validate_responses.py). Also checks
that every `examples` value of a component schema validates against its schema.

Debian's python3-jsonschema (deploy/install-deps); run with /usr/bin/python3.
"""
import json
import sys

import jsonschema

ACCEPT, REFUSE = True, False


def show(**over):
    """A POST /v1/shows body the server takes, with 'over' members replaced (None: left out)."""
    body = {"title": "Dune", "startsAt": "2030-12-24T20:00:00Z",
            "priceTiers": {"standard": 1200},
            "seats": [{"id": "A1", "row": "A", "number": 1}, {"id": "A2", "row": "A", "number": 2}]}
    body.update(over)
    return {k: v for k, v in body.items() if v is not None}


def seats(*first):
    """A layout whose first seat is 'first' (members over row A number 1), then seat A2."""
    s = {"id": "A1", "row": "A", "number": 1}
    for f in first:
        s.update(f)
    return show(seats=[s, {"id": "A2", "row": "A", "number": 2}])


HOLD_ID = "42-h3f9a0c1d2e3f4a5b6c7d"
IDS = ["A%d" % i for i in range(1, 12)]

# (component schema, sample, what the worker does with it, where or why)
SAMPLES = [
    # POST /v1/shows/{id}/holds (handlers/holds.c: seatd_handle_holds_create, best_check)
    ("HoldCreate", {}, REFUSE, "neither seatIds nor best: 400"),
    ("HoldCreate", {"seatIds": ["A1"]}, ACCEPT, "seats by id"),
    ("HoldCreate", {"best": {"count": 2}}, ACCEPT, "best available"),
    ("HoldCreate", {"seatIds": ["A1"], "idempotencyKey": "k-1.x_y"}, ACCEPT, "with a key"),
    ("HoldCreate", {"seatIds": ["A1"], "note": 1}, ACCEPT, "other members are ignored"),
    ("HoldCreate", {"best": {"count": 2, "tier": "vip", "accessible": False, "x": 1}}, ACCEPT,
     "best's other members are ignored"),
    ("HoldCreate", {"seatIds": ["A1"], "best": {"count": 1}}, REFUSE, "both: 400"),
    ("HoldCreate", {"seatIds": ["A1"], "best": None}, REFUSE, "a null best is a bad best: 400"),
    ("HoldCreate", {"best": {"count": 1}, "seatIds": None}, REFUSE, "best with seatIds: 400"),
    ("HoldCreate", {"seatIds": None}, REFUSE, "seatIds required: 400"),
    ("HoldCreate", {"seatIds": "A1"}, REFUSE, "not an array: 400"),
    ("HoldCreate", {"seatIds": []}, REFUSE, "400 empty-seat-set"),
    ("HoldCreate", {"seatIds": IDS[:10]}, ACCEPT, "10 seats: --max-seats-per-hold"),
    ("HoldCreate", {"seatIds": IDS[:11]}, REFUSE, "11 seats: 400 too-many-seats"),
    ("HoldCreate", {"seatIds": ["A1", "A1"]}, REFUSE, "400 duplicate-seat"),
    ("HoldCreate", {"seatIds": ["A{1}"]}, REFUSE, "400 invalid-seat-id"),
    ("HoldCreate", {"seatIds": ["A" * 17]}, REFUSE, "over 16 characters: 400 invalid-seat-id"),
    ("HoldCreate", {"best": {}}, REFUSE, "best.count required: 400"),
    ("HoldCreate", {"best": {"count": 0}}, REFUSE, "best.count from 1: 400"),
    ("HoldCreate", {"best": {"count": 10}}, ACCEPT, "best.count up to --max-seats-per-hold"),
    ("HoldCreate", {"best": {"count": 11}}, REFUSE, "best.count over --max-seats-per-hold: 400"),
    ("HoldCreate", {"best": {"count": 2.5}}, REFUSE, "best.count an integer: 400"),
    ("HoldCreate", {"best": {"count": 1, "tier": "no tier!"}}, REFUSE, "best.tier a name: 400"),
    ("HoldCreate", {"best": {"count": 1, "accessible": "yes"}}, REFUSE, "a boolean: 400"),
    ("HoldCreate", {"seatIds": ["A1"], "idempotencyKey": "a b"}, REFUSE, "key grammar: 400"),
    ("HoldCreate", {"seatIds": ["A1"], "idempotencyKey": "a:b"}, REFUSE, "no ':' in a key: 400"),
    ("HoldCreate", {"seatIds": ["A1"], "idempotencyKey": "k" * 128}, ACCEPT, "128 characters"),
    ("HoldCreate", {"seatIds": ["A1"], "idempotencyKey": "k" * 129}, REFUSE, "129: 400"),
    # POST /v1/bookings (handlers/bookings.c)
    ("BookingCreate", {"holdId": HOLD_ID, "paymentMethod": "tok_ok"}, ACCEPT, "a booking"),
    ("BookingCreate", {"holdId": HOLD_ID}, REFUSE, "paymentMethod required: 400"),
    ("BookingCreate", {"holdId": HOLD_ID, "paymentMethod": "TOK OK"}, REFUSE, "token grammar"),
    ("BookingCreate", {"holdId": "42-x", "paymentMethod": "tok_ok"}, REFUSE,
     "not a hold id: 404 not-found"),
    ("TicketVerify", {"token": "t" * 2047}, ACCEPT, "up to 2047 bytes"),
    ("TicketVerify", {"token": "t" * 2048}, REFUSE, "over 2047 bytes: 400"),
    # POST /v1/shows (handlers/shows.c: seatd_handle_shows_create; layout.c; timefmt.c)
    ("ShowCreate", show(), ACCEPT, "a show"),
    ("ShowCreate", show(startsAt="2030-12-24t20:00:00.123456789z"), ACCEPT,
     "lower-case t and z, 9 digits of fraction"),
    ("ShowCreate", show(startsAt="2030-12-24T20:00:00+01:00"), REFUSE, "UTC only: 400"),
    ("ShowCreate", show(startsAt="2030-12-24T20:00:00.1234567890Z"), REFUSE,
     "10 digits of fraction: 400"),
    ("ShowCreate", show(startsAt="2030-12-24 20:00:00Z"), REFUSE, "no T: 400"),
    ("ShowCreate", show(startsAt="2030-12-24T20:00Z"), REFUSE, "no seconds: 400"),
    ("ShowCreate", show(startsAt="2030-13-24T20:00:00Z"), REFUSE, "month 13: 400"),
    ("ShowCreate", show(startsAt="2030-12-24T24:00:00Z"), REFUSE, "hour 24: 400"),
    ("ShowCreate", show(startsAt="1969-12-31T23:59:59Z"), REFUSE, "before 1970: 400"),
    ("ShowCreate", show(startsAt=None), REFUSE, "startsAt required: 400"),
    ("ShowCreate", show(salesCloseAt="2030-12-24T19:30:00Z"), ACCEPT, "sales close earlier"),
    ("ShowCreate", show(salesCloseAt="2030-12-24T19:30:00-01:00"), REFUSE, "UTC only: 400"),
    ("ShowCreate", show(title="é" * 200), ACCEPT, "200 characters (400 bytes)"),
    ("ShowCreate", show(title="é" * 201), REFUSE, "201 characters: 400"),
    ("ShowCreate", show(title=""), REFUSE, "empty: 400"),
    ("ShowCreate", show(title="evil\u001b[2J"), REFUSE, "a control character: 400"),
    ("ShowCreate", show(title="x\u0085"), REFUSE, "a C1 control character: 400"),
    ("ShowCreate", show(screen="1\u0085"), REFUSE, "a control character in screen: 400"),
    ("ShowCreate", show(holdTtlSeconds=0), REFUSE, "holdTtlSeconds from 1: 400"),
    ("ShowCreate", show(holdTtlSeconds=86400), ACCEPT, "holdTtlSeconds up to a day"),
    ("ShowCreate", show(orphanRule="sometimes"), REFUSE, "off or block: 400"),
    ("ShowCreate", show(priceTiers={}), REFUSE, "1 to 16 tiers: 400"),
    ("ShowCreate", show(seats=[]), REFUSE, "400 empty-seat-set"),
    ("ShowCreate", show(queue={"opensAt": "2029-01-01T10:00:00Z"}), ACCEPT, "a queued show"),
    ("ShowCreate", show(queue={"opensAt": "2029-01-01T10:00:00+00:00"}), REFUSE,
     "queue.opensAt UTC only: 400"),
    ("ShowCreate", show(queue={"opensAt": "2029-01-01T10:00:00Z", "seatsPerShopper": 101}),
     REFUSE, "queue.seatsPerShopper up to 100: 400"),
    ("ShowCreate", seats({"number": 2147483647, "id": "A9"}), ACCEPT, "a seat number up to 2^31-1"),
    ("ShowCreate", seats({"number": 2147483648}), REFUSE, "a seat number over 2^31-1: 400"),
    ("ShowCreate", seats({"number": -1}), REFUSE, "a negative seat number: 400"),
    ("ShowCreate", seats({"row": "A\tB"}), REFUSE, "a control character in a row: 400"),
    ("ShowCreate", seats({"accessible": True, "companions": ["A2"]}), ACCEPT,
     "a wheelchair space and its companion"),
    ("ShowCreate", seats({"accessible": True, "companion": "A2"}), ACCEPT, "DESIGN.md's word"),
    ("ShowCreate", seats({"companions": ["A2"]}), REFUSE, "companions of a seat not accessible"),
    ("ShowCreate", seats({"accessible": False, "companion": "A2"}), REFUSE,
     "a companion of a seat not accessible: 400"),
    ("ShowCreate", seats({"accessible": True, "companion": "A2", "companions": ["A2"]}), REFUSE,
     "companion and companions: 400"),
    ("ShowCreate", seats({"accessible": True, "companions": ["A2", "A2"]}), REFUSE,
     "a companion twice: 400"),
    # POST /v1/auth/register, /login, /v1/admin/users (handlers/accounts.c; account.c)
    ("Register", {"email": "ann@example.com", "password": "correct horse"}, ACCEPT, "an account"),
    ("Register", {"email": " Ann@Example.COM ", "password": "éééééééé"}, ACCEPT,
     "trimmed, lower-cased; 8 characters (16 bytes)"),
    ("Register", {"email": "ann@example.com", "password": "1234567"}, REFUSE, "7 characters: 400"),
    ("Register", {"email": "ann@example.com", "password": "p" * 128}, ACCEPT, "128 characters"),
    ("Register", {"email": "ann@example.com", "password": "p" * 129}, REFUSE, "129: 400"),
    ("Register", {"email": "ann", "password": "correct horse"}, REFUSE, "not an email: 400"),
    ("Register", {"email": "ann@localhost", "password": "correct horse"}, REFUSE,
     "a domain without a dot: 400"),
    ("Register", {"email": "a@b@example.com", "password": "correct horse"}, REFUSE, "two @: 400"),
    ("Register", {"email": "ann@example.com", "password": "correct horse", "name": ""}, REFUSE,
     "an empty name: 400"),
    ("Register", {"email": "ann@example.com", "password": "correct horse", "name": "A\nB"},
     REFUSE, "a control character in a name: 400"),
    ("Login", {"email": "ann@example.com", "password": "short"}, REFUSE,
     "under 8 characters: 400, not a login attempt"),
    ("Login", {"email": "ann@example.com", "password": "password"}, ACCEPT,
     "a common password is tried (401 if wrong), not refused"),
    ("UserCreate", {"email": "op@example.com", "password": "correct horse", "admin": True},
     ACCEPT, "an operator"),
    ("UserCreate", {"email": "op@example.com", "password": "correct horse", "admin": "yes"},
     REFUSE, "admin a boolean: 400"),
]

# (path, method, parameter, value, what the worker does with it, why): query parameters typed as
# what they are (a client sends the integer's digits).
PARAMS = [
    ("/v1/shows/{id}/availability", "get", "minVersion", 0, ACCEPT, "a version"),
    ("/v1/shows/{id}/availability", "get", "minVersion", 10**18 - 1, ACCEPT, "18 digits"),
    ("/v1/shows/{id}/availability", "get", "minVersion", 10**18, REFUSE, "19 digits: 400"),
    ("/v1/shows/{id}/availability", "get", "minVersion", -1, REFUSE, "negative: 400"),
    ("/v1/shows/{id}/seats", "get", "minVersion", 118, ACCEPT, "a version"),
    ("/v1/shows/{id}/seats", "get", "minVersion", 1.5, REFUSE, "not an integer: 400"),
    ("/v1/shows/{id}/seats/ws", "get", "since", 121, ACCEPT, "a version"),
    ("/v1/shows/{id}/seats/ws", "get", "since", -1, REFUSE, "negative: 400"),
    ("/v1/shows", "get", "size", 101, REFUSE, "at most 100 a page: 400"),
    ("/v1/me/bookings", "get", "limit", 100, ACCEPT, "at most 100 a page"),
]


def short(value):
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 160 else text[:150] + "…(%d)" % len(text)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8") as f:
        doc = json.load(f)
    resolver = jsonschema.RefResolver.from_schema(doc)
    schemas = doc["components"]["schemas"]
    failures = []

    def errors(schema, instance):
        v = jsonschema.Draft202012Validator(schema, resolver=resolver)
        return ["%s: %s" % ("/".join(str(p) for p in e.absolute_path) or "(root)", e.message)
                for e in v.iter_errors(instance)]

    for name, schema in schemas.items():
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as e:
            failures.append("components.schemas.%s is not a valid schema: %s" % (name, e.message))
            continue
        for ex in schema.get("examples", []) if isinstance(schema, dict) else []:
            for m in errors(schema, ex):
                failures.append("components.schemas.%s: its example %s: %s"
                                % (name, json.dumps(ex), m))
    for name, sample, server_accepts, why in SAMPLES:
        errs = errors(schemas[name], sample)
        if server_accepts and errs:
            failures.append("%s refuses %s, which the server accepts (%s): %s"
                            % (name, short(sample), why, errs[0]))
        elif not server_accepts and not errs:
            failures.append("%s accepts %s, which the server refuses (%s)"
                            % (name, short(sample), why))
    for path, method, name, value, server_accepts, why in PARAMS:
        prm = [p for p in doc["paths"][path][method]["parameters"] if p.get("name") == name]
        if not prm:
            failures.append("%s %s has no parameter %s" % (method.upper(), path, name))
            continue
        errs = errors(prm[0]["schema"], value)
        label = "%s %s ?%s" % (method.upper(), path, name)
        if server_accepts and errs:
            failures.append("%s refuses %r, which the server accepts (%s): %s"
                            % (label, value, why, errs[0]))
        elif not server_accepts and not errs:
            failures.append("%s accepts %r, which the server refuses (%s)" % (label, value, why))
    for f in failures:
        print("check_schemas: " + f, file=sys.stderr)
    print("check_schemas: %d request bodies and %d query parameters against the schemas of %s, "
          "%d schemas' examples, %d failures" % (len(SAMPLES), len(PARAMS), sys.argv[1],
                           sum(1 for s in schemas.values() if isinstance(s, dict) and "examples" in s),
                           len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
