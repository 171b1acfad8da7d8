"""couchdb-python 1.2 against a SyncNode listener."""
import functools, http.client, ssl, sys, uuid
import couchdb, couchdb.http

base, user, password, pem = sys.argv[1:5]
context = ssl.create_default_context(cafile=pem)
couchdb.http.HTTPSConnection = functools.partial(http.client.HTTPSConnection, context=context)
scheme, rest = base.split("://", 1)
from urllib.parse import quote
server = couchdb.Server(f"{scheme}://{quote(user, safe='')}:{quote(password, safe='')}@{rest}/")

assert server.version(), "GET / gave no version"
name = "cdbpy-" + uuid.uuid4().hex[:8]
db = server.create(name)
assert name in server and name in list(server)

# CRUD
doc = {"_id": "doc1", "a": 1, "nested": {"list": [1, 2, "três"]}}
doc_id, rev1 = db.save(doc)
assert doc_id == "doc1" and rev1.startswith("1-")
got = db["doc1"]
assert got["a"] == 1 and got["nested"]["list"][2] == "três" and got.rev == rev1
got["a"] = 2
db["doc1"] = got
assert db["doc1"]["a"] == 2 and db["doc1"].rev.startswith("2-")
stale = dict(doc, _rev=rev1)
try:
    db.save(stale)
    raise AssertionError("saving a stale revision must conflict")
except couchdb.http.ResourceConflict:
    pass

# Attachments (bytes: couchdb-python miscounts non-ASCII str lengths)
current = db["doc1"]
db.put_attachment(current, b"hello world", filename="hello.txt", content_type="text/plain")
assert db.get_attachment("doc1", "hello.txt").read() == b"hello world"
with_att = db["doc1"]
assert with_att["_attachments"]["hello.txt"]["stub"] is True
assert with_att["_attachments"]["hello.txt"]["length"] == 11

# _bulk_docs, including a conflict reported per document
results = db.update([{"_id": "b1", "x": 1}, {"_id": "b2", "x": 2}, {"_id": "doc1", "x": 3}])
assert [ok for ok, _, _ in results] == [True, True, False], results

# _all_docs
rows = list(db.view("_all_docs", include_docs=True))
assert [r.id for r in rows] == ["b1", "b2", "doc1"], [r.id for r in rows]
assert rows[0].doc["x"] == 1
keyed = list(db.view("_all_docs", keys=["b1", "nope"]))
assert keyed[0].id == "b1" and keyed[1].get("error") == "not_found"

# _changes, normal and continuous (ends at the timeout, heartbeats in between)
normal = db.changes(since=0)
assert {r["id"] for r in normal["results"]} == {"doc1", "b1", "b2"}
lines = list(db.changes(feed="continuous", since=0, timeout=1000, heartbeat=300))
assert {l["id"] for l in lines if "id" in l} == {"doc1", "b1", "b2"}
assert "last_seq" in lines[-1]

# delete by id (HEAD + ETag) and by document
del db["b2"]
assert "b2" not in db
db.delete(db["b1"])
assert len(db) == 1

# Server-side replication driven by the client (POST /_replicate): local to local...
copy = name + "-copy"
result = server.replicate(name, copy, create_target=True)
assert result["ok"] and result["history"][0]["docs_written"] == 3, result  # doc1 and two tombstones
assert server[copy]["doc1"]["a"] == 2
# ...and continuous to a URL (this same node, its certificate pinned by fingerprint), then cancelled.
import base64, hashlib, time
der = ssl.PEM_cert_to_DER_cert(open(pem).read())
fp = base64.urlsafe_b64encode(hashlib.sha256(der).digest()).decode().rstrip("=")
remote = f"https://{quote(user, safe='')}:{quote(password, safe='')}@127.0.0.1:{rest.split(':')[-1]}/{copy}?fp={fp}"
started = server.replicate(name, remote, continuous=True)
assert started["ok"] and started["_local_id"], started
db.save({"_id": "live", "v": 1})
deadline = time.time() + 15
while "live" not in server[copy] and time.time() < deadline:
    time.sleep(0.05)
assert "live" in server[copy], "a continuous server-side replication did not carry a new document"
assert server.replicate(name, remote, continuous=True, cancel=True)["ok"]
try:
    server.replicate("no-such-db", copy)
    raise AssertionError("replicating a missing database must fail")
except couchdb.http.ResourceNotFound:
    pass
del server[copy]

del server[name]
assert name not in server
print("couchdb-python: ok")
