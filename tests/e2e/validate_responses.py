#!/usr/bin/python3
"""validate_responses.py - checks every HTTP answer the e2e suites received against the OpenAPI
document (api/openapi.json).

    validate_responses.py OPENAPI_JSON RESPONSE_LOG --port PORT

RESPONSE_LOG holds one JSON line per response (tests/support/http_client.c writes it when
SEATD_E2E_RESPONSE_LOG is set): host, port, method, path, status, headers, body, and the
request's body (requestBody) when it had one; and one per
WebSocket text frame (tests/integration/test_live_client.h): "ws": true, path, frame, each
validated against its operation's `x-websocket.serverFrames`. Answers from
seatd (nginx on PORT, or a worker's unix socket) are checked; others (the fake gateway) are
skipped. For each answer: the path is matched to a path template and the method to its
operation (HEAD as GET, without a body); a request that matches no operation is held to the
document's `x-unrouted-responses`. The status must be documented for that operation, every
header the response declares `required` must be present and match its schema, the
Content-Type must be one the response declares, and a JSON body must validate against the
response's schema ($refs resolved in the document; JSON Schema 2020-12). And the document must
not be stricter than the server: a JSON request body the server answered 2xx must validate
against its operation's requestBody schema. Any mismatch, or an undocumented status, fails the
run (exit 1). Prints a summary with per-operation counts.

Debian's python3-jsonschema (deploy/install-deps); run with /usr/bin/python3.
"""
import argparse
import collections
import json
import re
import sys

import jsonschema

API_PREFIXES = ("/v1/",)


def load_log(path):
    entries = []
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            line = raw.decode("utf-8", errors="replace").strip()
            if line:
                try:
                    entries.append(json.loads(line))
                except ValueError as e:
                    raise SystemExit("%s:%d: not JSON (%s)" % (path, n, e))
    return entries


class Document:
    def __init__(self, doc):
        self.doc = doc
        self.resolver = jsonschema.RefResolver.from_schema(doc)
        for name, schema in doc["components"]["schemas"].items():
            try:
                jsonschema.Draft202012Validator.check_schema(schema)
            except jsonschema.SchemaError as e:
                raise SystemExit("components.schemas.%s is not a valid schema: %s" % (name, e))
        self.templates = []
        for tmpl, item in doc["paths"].items():
            segs = tmpl.split("/")
            rx = "^" + "/".join("[^/]+" if s.startswith("{") else re.escape(s) for s in segs) + "$"
            literal = sum(1 for s in segs if not s.startswith("{"))
            self.templates.append((literal, tmpl, re.compile(rx), item))
        # The most literal segments first: "/v1/shows/new" would beat "/v1/shows/{id}".
        self.templates.sort(key=lambda t: -t[0])

    def deref(self, obj):
        while isinstance(obj, dict) and "$ref" in obj:
            _, obj = self.resolver.resolve(obj["$ref"])
        return obj

    def match(self, path):
        for _, tmpl, rx, item in self.templates:
            if rx.match(path):
                return tmpl, item
        return None, None

    def validate(self, instance, schema):
        v = jsonschema.Draft202012Validator(schema, resolver=self.resolver)
        errs = sorted(v.iter_errors(instance), key=lambda e: list(e.absolute_path))
        return ["%s: %s" % ("/".join(str(p) for p in e.absolute_path) or "(root)", e.message)
                for e in errs[:3]]


def check_frame(d, e):
    """A WebSocket text frame: validated against its operation's x-websocket.serverFrames."""
    tmpl, item = d.match(e["path"].split("?", 1)[0])
    ws = ((item or {}).get("get") or {}).get("x-websocket")
    if ws is None:
        return "(frame on an undocumented WebSocket)", ["no x-websocket for %s" % e["path"]]
    try:
        frame = json.loads(e["frame"])
    except ValueError as ex:
        return "%s frame" % item["get"]["operationId"], ["frame is not JSON: %s" % ex]
    kind = frame.get("type") if isinstance(frame, dict) else None
    label = "%s frame %s" % (item["get"]["operationId"], kind)
    return label, ["frame " + m for m in d.validate(frame, ws["serverFrames"])]


def operation(d, e):
    """The operation a logged request matched (HEAD as GET), or None."""
    method = e["method"].upper()
    tmpl, item = d.match(e["path"].split("?", 1)[0])
    if item is None:
        return None
    return item.get("head" if method == "HEAD" and "head" in item else
                    ("get" if method == "HEAD" else method.lower()))


def check_request(d, e):
    """A request the server accepted (2xx) with a JSON body must be one the document accepts:
    its operation's requestBody schema, when the document declares one, is no stricter than the
    server. Returns a list of problems."""
    body = e.get("requestBody")
    if not body or not str(e.get("status", "")).startswith("2"):
        return []
    op = operation(d, e)
    req = d.deref((op or {}).get("requestBody") or {})
    media = (req.get("content") or {}).get("application/json")
    if op is None or media is None:
        return []
    try:
        instance = json.loads(body)
    except ValueError as ex:
        return ["the server accepted a request body that is not JSON: %s" % ex]
    return ["accepted request body " + m for m in d.validate(instance, media.get("schema", {}))]


def check(d, e):
    """Returns (operation label, list of problems) for one logged response and its request."""
    if e.get("ws"):
        return check_frame(d, e)
    label, errs = check_response(d, e)
    return label, errs + check_request(d, e)


def check_response(d, e):
    """Returns (operation label, list of problems) for one logged response."""
    method = e["method"].upper()
    path = e["path"].split("?", 1)[0]
    status = str(e["status"])
    headers = {}
    for name, value in e["headers"]:
        headers.setdefault(name.lower(), value)
    tmpl, item = d.match(path)
    op = None
    if item is not None:
        op = item.get("head" if method == "HEAD" and "head" in item else
                      ("get" if method == "HEAD" else method.lower()))
    if op is not None:
        label = op.get("operationId", "%s %s" % (method, tmpl))
        responses = op["responses"]
    else:
        label = "(unrouted)"
        responses = d.doc["x-unrouted-responses"]
    if status not in responses:
        return label, ["status %s is not documented (documented: %s)"
                       % (status, ", ".join(sorted(responses)))]
    resp = d.deref(responses[status])
    errs = []
    for name, h in (resp.get("headers") or {}).items():
        h = d.deref(h)
        value = headers.get(name.lower())
        if value is None:
            if h.get("required"):
                errs.append("required header %s is missing" % name)
            continue
        if "schema" in h:
            errs += ["header %s: %s" % (name, m) for m in d.validate(value, h["schema"])]
    body = e.get("body") or ""
    content = resp.get("content") or {}
    if method == "HEAD" or status in ("101", "304"):
        return label, errs
    if not content:
        if body:
            errs.append("a body, where the document declares none")
        return label, errs
    ctype = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    media = content.get(ctype)
    if media is None:
        errs.append("Content-Type %r is not one of %s" % (ctype, ", ".join(sorted(content))))
        return label, errs
    if "content-encoding" in headers:
        return label, errs  # a compressed body: its media type was checked, not its content
    if ctype.endswith("json"):
        try:
            instance = json.loads(body)
        except ValueError as ex:
            return label, errs + ["body is not JSON: %s" % ex]
        errs += ["body " + m for m in d.validate(instance, media.get("schema", {}))]
    elif "schema" in media:
        errs += ["body " + m for m in d.validate(body, media["schema"])]
    return label, errs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("openapi")
    ap.add_argument("log")
    ap.add_argument("--port", type=int, required=True, help="nginx's port (answers from seatd)")
    ap.add_argument("--quiet", action="store_true", help="print only failures and the total")
    ap.add_argument("--allow-empty", action="store_true",
                    help="no logged response is not a failure (a filtered run)")
    a = ap.parse_args()
    with open(a.openapi) as f:
        d = Document(json.load(f))
    entries = load_log(a.log)
    per_op = collections.Counter()
    failures = []
    skipped = collections.Counter()
    checked = 0
    for e in entries:
        if not (e.get("host", "").startswith("unix:") or e.get("port") == a.port):
            skipped["another server"] += 1
            continue
        path = e["path"].split("?", 1)[0]
        if d.match(path)[0] is None and not path.startswith(API_PREFIXES):
            skipped["not an API path (%s)" % path] += 1
            continue
        label, errs = check(d, e)
        checked += 1
        per_op[label if e.get("ws") else "%s %s" % (label, e["status"])] += 1
        if errs:
            failures.append((e, label, errs))
    if not a.quiet:
        print("validate_responses: per operation and status:")
        for k in sorted(per_op):
            print("  %6d  %s" % (per_op[k], k))
        for k in sorted(skipped):
            print("  skipped %d: %s" % (skipped[k], k))
    for e, label, errs in failures[:40]:
        print("MISMATCH %s %s -> %s (%s):" % (e.get("method", "WS"), e["path"][:120],
                                              e.get("status", "frame"), label), file=sys.stderr)
        for m in errs:
            print("    " + m[:400], file=sys.stderr)
        print("    body: " + (e.get("body") or e.get("frame") or "")[:300], file=sys.stderr)
        if e.get("requestBody"):
            print("    request body: " + e["requestBody"][:300], file=sys.stderr)
    print("validate_responses: %d responses and frames validated against %s, %d operations seen, "
          "%d mismatches" % (checked, a.openapi, len({k.rsplit(" ", 1)[0] for k in per_op}),
                             len(failures)))
    if checked == 0 and not a.allow_empty:
        print("validate_responses: no responses were logged", file=sys.stderr)
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
