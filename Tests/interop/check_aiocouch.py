"""aiocouch against a SyncNode listener."""
import asyncio, ssl, sys, uuid
import aiohttp
from aiocouch import CouchDB

base, user, password, pem = sys.argv[1:5]


async def main():
    context = ssl.create_default_context(cafile=pem)
    async with CouchDB(base, user=user, password=password, connector=aiohttp.TCPConnector(ssl=context)) as couch:
        await couch.check_credentials()
        assert (await couch.info())["couchdb"] == "Welcome"
        name = "aio-" + uuid.uuid4().hex[:8]
        db = await couch.create(name)
        assert name in await couch.keys()

        doc = await db.create("doc1", data={"a": 1})
        await doc.save()
        assert doc.rev.startswith("1-")
        doc["a"] = 2
        await doc.save()
        assert (await db.get("doc1"))["a"] == 2
        info = await doc.info()
        assert info["rev"] == doc.rev, info

        attachment = doc.attachment("hello.txt")
        await attachment.save(b"hello world", "text/plain")
        assert await attachment.exists()
        assert await attachment.fetch() == b"hello world"
        assert attachment.content_type.startswith("text/plain")

        async with db.create_docs(["b1", "b2"]) as bulk:
            pass
        assert sorted(d.id for d in bulk.ok) == ["b1", "b2"], bulk.response
        async with db.update_docs(["b1", "b2"]) as bulk:
            async for d in bulk:
                d["x"] = 1
        assert len(bulk.ok) == 2, bulk.response

        ids = [d.id async for d in db.docs()]
        assert ids == ["b1", "b2", "doc1"], ids
        assert [k async for k in db.akeys()] == ids

        normal = [e.json async for e in db.changes(since=0)]
        assert {e["id"] for e in normal} == {"b1", "b2", "doc1"}, normal
        continuous = [e.json async for e in db.changes(feed="continuous", since=0, timeout=1000)]
        assert {e["id"] for e in continuous if "id" in e} == {"b1", "b2", "doc1"}, continuous
        assert "last_seq" in continuous[-1]

        # Mango: an index and a find through it (aiocouch pages with bookmarks).
        async with db.update_docs(["b1", "b2"]) as bulk:
            async for d in bulk:
                d["kind"] = "bee"
                d["n"] = int(d.id[1])
        made = await db.index({"fields": ["kind", "n"]}, name="by-kind")
        assert made["result"] == "created", made
        found = [d.id async for d in db.find({"kind": "bee", "n": {"$gt": 1}})]
        assert found == ["b2"], found
        every = [d.id async for d in db.find({"kind": {"$exists": True}}, limit=1)]
        assert every == ["b1"], every

        await doc.delete()
        await db.delete()
        assert name not in await couch.keys()
    print("aiocouch: ok")


asyncio.run(main())
