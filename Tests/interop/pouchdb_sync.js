// PouchDB (a release bundle, in Node.js) replicating with a node both ways.
//   node pouchdb_sync.js POUCHDB_DIR VERSION NODE_DB_URL
// NODE_DB_URL carries the credentials (https://user:pass@127.0.0.1:PORT/db); trust the node's
// certificate with NODE_EXTRA_CA_CERTS. Prints one JSON line of what each side holds afterwards;
// the Swift test compares it with the node. Exits non-zero when a replication fails.
'use strict';
const [pouchDir, version, remoteURL] = process.argv.slice(2);
const PouchDB = require(require('path').join(pouchDir, 'load-pouchdb.js'))(version);

// Documents as PouchDB shows them: every leaf's rev, the winner, the body and attachment digests.
async function describe(db) {
  const out = {};
  const all = await db.allDocs({ include_docs: true, conflicts: true, attachments: true });
  for (const row of all.rows) {
    const doc = row.doc;
    const atts = {};
    for (const [name, att] of Object.entries(doc._attachments || {})) {
      atts[name] = { content_type: att.content_type, digest: att.digest, data: att.data, revpos: att.revpos };
    }
    out[row.id] = { winner: doc._rev, conflicts: (doc._conflicts || []).sort(), v: doc.v, attachments: atts };
  }
  return out;
}

async function main() {
  const remote = new PouchDB(remoteURL);
  const local = new PouchDB('local-' + Date.now(), { adapter: 'memory' });
  await local.bulkDocs([
    { _id: 'pouch-plain', v: 1 },
    { _id: 'pouch-att', v: 2, _attachments: {
      'hello.txt': { content_type: 'text/plain', data: Buffer.from('hello from pouchdb').toString('base64') },
      'bytes.bin': { content_type: 'application/octet-stream', data: Buffer.from([0, 1, 2, 250, 255]).toString('base64') },
    } },
  ]);
  const edited = await local.get('pouch-plain');
  await local.put({ ...edited, v: 11 });
  // A conflict of two 32-hex branches (PouchDB's own shape) and one of node-made shape.
  await local.bulkDocs([
    { _id: 'pouch-conflict', _rev: '2-4d3ab0f2bc0d4c7f9d1e2a3b4c5d6e7f', v: 'a',
      _revisions: { start: 2, ids: ['4d3ab0f2bc0d4c7f9d1e2a3b4c5d6e7f', '00000000000000000000000000000001'] } },
    { _id: 'pouch-conflict', _rev: '2-c0ffee00c0ffee00c0ffee00c0ffee00', v: 'b',
      _revisions: { start: 2, ids: ['c0ffee00c0ffee00c0ffee00c0ffee00', '00000000000000000000000000000001'] } },
  ], { new_edits: false });
  const deleted = await local.put({ _id: 'pouch-deleted', v: 0 });
  await local.remove('pouch-deleted', deleted.rev);

  const pushed = await local.replicate.to(remote);
  const fresh = new PouchDB('fresh-' + Date.now(), { adapter: 'memory' });
  const pulled = await fresh.replicate.from(remote);
  // Live for a moment: a change on the node arrives while PouchDB listens.
  const live = fresh.replicate.from(remote, { live: true, retry: true });
  const arrived = new Promise((resolve) => fresh.changes({ live: true, since: 'now', doc_ids: ['live-from-node'] })
    .on('change', (c) => resolve(c)));
  await remote.put({ _id: 'live-from-node', v: 42 });
  const change = await Promise.race([arrived, new Promise((_, reject) => setTimeout(() => reject(new Error('live change not seen in 20 s')), 20000))]);
  live.cancel();
  console.log(JSON.stringify({
    pushed: { ok: pushed.ok, docs_written: pushed.docs_written, doc_write_failures: pushed.doc_write_failures },
    pulled: { ok: pulled.ok, docs_written: pulled.docs_written, doc_write_failures: pulled.doc_write_failures },
    live: change.id,
    local: await describe(local),
    fresh: await describe(fresh),
  }));
}

// Exit once reported: the cancelled live replication's long poll would hold the process until the node's heartbeat.
main().then(() => process.exit(0), (error) => { console.error(String(error && error.stack || error)); process.exit(1); });
