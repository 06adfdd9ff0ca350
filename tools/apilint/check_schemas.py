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

# (component schema, sample, what the server does with it, why)
SAMPLES = [
    ("HoldCreate", {}, REFUSE, "neither seatIds nor best: 400"),
    ("HoldCreate", {"seatIds": ["A1"]}, ACCEPT, "seats by id"),
    ("HoldCreate", {"best": {"count": 2}}, ACCEPT, "best available"),
    ("HoldCreate", {"seatIds": ["A1"], "idempotencyKey": "k-1"}, ACCEPT, "with a key"),
    ("HoldCreate", {"seatIds": ["A1"], "best": {"count": 1}}, REFUSE, "both: 400"),
]


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
                            % (name, json.dumps(sample), why, errs[0]))
        elif not server_accepts and not errs:
            failures.append("%s accepts %s, which the server refuses (%s)"
                            % (name, json.dumps(sample), why))
    for f in failures:
        print("check_schemas: " + f, file=sys.stderr)
    print("check_schemas: %d samples against the request schemas of %s, %d schemas' examples, "
          "%d failures" % (len(SAMPLES), sys.argv[1],
                           sum(1 for s in schemas.values() if isinstance(s, dict) and "examples" in s),
                           len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
