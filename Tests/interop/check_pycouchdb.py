"""pycouchdb against a SyncNode listener."""
import os, sys, uuid

base, user, password, pem = sys.argv[1:5]
os.environ["REQUESTS_CA_BUNDLE"] = pem  # pycouchdb resets `verify`; the bundle variable survives
import pycouchdb
from pycouchdb import exceptions

scheme, rest = base.split("://", 1)
# pycouchdb does not percent-decode URL credentials: pass them as they are (no @ or : in them).
server = pycouchdb.Server(f"{scheme}://{user}:{password}@{rest}/", authmethod="basic", timeout=30)
assert server.info()["uuid"]
name = "pycouch-" + uuid.uuid4().hex[:8]
db = server.create(name)
assert db is not None and name in server

doc = db.save({"_id": "doc1", "a": 1})
assert doc["_rev"].startswith("1-")
doc["a"] = 2
doc = db.save(doc)
assert db.get("doc1")["a"] == 2 and doc["_rev"].startswith("2-")

doc = db.put_attachment(doc, b"\x00\x01binary\xff", filename="data.bin", content_type="application/octet-stream")
assert db.get_attachment(doc, "data.bin") == b"\x00\x01binary\xff"

saved = db.save_bulk([{"_id": "b1", "x": 1}, {"_id": "b2", "x": 2}])
assert all(d["_rev"].startswith("1-") for d in saved)
try:
    db.save_bulk([{"_id": "b1", "x": 9}])
    raise AssertionError("a bulk write over an existing document without _rev must conflict")
except exceptions.Conflict:
    pass

every = db.all(as_list=True)
assert [r["id"] for r in every] == ["b1", "b2", "doc1"] and every[0]["doc"]["x"] == 1
assert [r["id"] for r in db.all(keys=["b2"], as_list=True)] == ["b2"]

last_seq, results = db.changes_list(since=0)
assert {r["id"] for r in results} == {"b1", "b2", "doc1"} and last_seq

messages = []
db.changes_feed(lambda message, db: messages.append(message), since=0, timeout=1000, heartbeat=300)
assert {m["id"] for m in messages if "id" in m} == {"b1", "b2", "doc1"}, messages

db.delete("b2")
assert "b2" not in db
server.delete(name)
assert name not in server
print("pycouchdb: ok")
