"""The metrics of a `syncnode serve` process, read with prometheus_client's own parser.

    check_prometheus.py BASE_URL USER PASSWORD CA_FILE

Scrapes /_node/_local/_prometheus, runs a known workload (5 documents written, 3 read one by
one and 2 through _bulk_get, one 404, a gzip-encoded _all_docs), scrapes again and checks each
counter moved by exactly that much, the body bytes by exactly what crossed the wire. Prints
"prometheus: ok" or exits non-zero.
"""
import base64, gzip, json, ssl, sys, urllib.error, urllib.request
from prometheus_client.parser import text_string_to_metric_families

base, user, password, cafile = sys.argv[1:5]
context = ssl.create_default_context(cafile=cafile)
context.check_hostname = False
authorization = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


# Body bytes as they crossed the wire (urllib decodes no content coding): (sent, received) by the node.
wire = {"sent": 0, "received": 0}


def call(method, path, body=None, headers={}):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, method=method, data=data,
                                     headers={"Authorization": authorization, "Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, context=context) as response:
            raw = response.read()
            status = response.status
            encoding = response.headers.get("Content-Encoding")
    except urllib.error.HTTPError as error:
        raw, status, encoding = error.read(), error.code, error.headers.get("Content-Encoding")
    wire["sent"] += len(raw)
    wire["received"] += len(data or b"")
    return status, (gzip.decompress(raw) if encoding == "gzip" else raw).decode()


def scrape():
    global scrape_bytes
    status, text = call("GET", "/_node/_local/_prometheus")
    scrape_bytes = len(text.encode())
    assert status == 200, (status, text)
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            key = (sample.name, tuple(sorted(sample.labels.items())))
            samples[key] = sample.value
    return samples


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


assert call("PUT", "/metrics")[0] == 201
before = scrape()
before_scrape_bytes = scrape_bytes
wire = {"sent": 0, "received": 0}
for n in range(5):
    assert call("PUT", f"/metrics/doc{n}", {"n": n})[0] == 201
for n in range(3):
    assert call("GET", f"/metrics/doc{n}")[0] == 200
assert call("POST", "/metrics/_bulk_get", {"docs": [{"id": "doc3"}, {"id": "doc4"}]})[0] == 200
assert call("GET", "/metrics/missing")[0] == 404
# Bodies sent by _all_docs and _changes with include_docs count as read too (5 each).
assert call("GET", "/metrics/_all_docs?include_docs=true")[0] == 200
assert call("GET", "/metrics/_changes?include_docs=true")[0] == 200
# Gzip-encoded on request, decoded here by Python's own gzip; counted at its encoded size.
status, text = call("GET", "/metrics/_all_docs?include_docs=true&gzip", headers={"Accept-Encoding": "gzip"})
assert status == 200 and len(json.loads(text)["rows"]) == 5, text
crossed = dict(wire)
after = scrape()

moved = {
    "written": value(after, "syncnode_documents_written_total", database="metrics", origin="client")
    - value(before, "syncnode_documents_written_total", database="metrics", origin="client"),
    "read": value(after, "syncnode_documents_read_total") - value(before, "syncnode_documents_read_total"),
    "puts": value(after, "syncnode_http_requests_total", method="PUT", status="201")
    - value(before, "syncnode_http_requests_total", method="PUT", status="201"),
    "not_found": value(after, "syncnode_http_requests_total", method="GET", status="404")
    - value(before, "syncnode_http_requests_total", method="GET", status="404"),
    # The first scrape is counted by the second (a scrape is counted once its text is made).
    "latencies": value(after, "syncnode_http_request_duration_seconds_count") - value(before, "syncnode_http_request_duration_seconds_count"),
    "body_received": value(after, "syncnode_http_body_bytes_total", direction="received")
    - value(before, "syncnode_http_body_bytes_total", direction="received"),
    # The first scrape's own answer is counted by the second, as its latency is.
    "body_sent": value(after, "syncnode_http_body_bytes_total", direction="sent")
    - value(before, "syncnode_http_body_bytes_total", direction="sent"),
}
assert moved == {"written": 5, "read": 20, "puts": 5, "not_found": 1, "latencies": 14,
                 "body_received": crossed["received"], "body_sent": crossed["sent"] + before_scrape_bytes}, (moved, crossed)
assert value(after, "syncnode_database_size_bytes", database="metrics") > 0, after
assert value(after, "syncnode_open_connections") >= 1, after
assert ("syncnode_peers", (("state", "trusted"),)) in after, "a mesh node reports its peers"
print("prometheus: ok", json.dumps(moved))
