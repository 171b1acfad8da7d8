// PouchDB (a release bundle, in Node.js) pulling from a node with a selector and with doc_ids.
//   node pouchdb_selector.js POUCHDB_DIR VERSION NODE_DB_URL
// NODE_DB_URL carries the credentials; trust the node's certificate with NODE_EXTRA_CA_CERTS.
// Prints one JSON line: the IDs each replication brought, and the one a live filtered
// replication brought after a non-matching and a matching write on the node.
'use strict';
const [pouchDir, version, remoteURL] = process.argv.slice(2);
const PouchDB = require(require('path').join(pouchDir, 'load-pouchdb.js'))(version);

async function ids(db) {
  return (await db.allDocs()).rows.map((row) => row.id).sort();
}

async function main() {
  const remote = new PouchDB(remoteURL);
  const bySelector = new PouchDB('selector-' + Date.now(), { adapter: 'memory' });
  const pulled = await bySelector.replicate.from(remote, { selector: { type: 'order' } });
  const byIDs = new PouchDB('ids-' + Date.now(), { adapter: 'memory' });
  await byIDs.replicate.from(remote, { doc_ids: ['d7', 'd8'] });

  // Live and filtered: the node's feed answers only when a matching change comes.
  const live = bySelector.replicate.from(remote, { live: true, retry: true, selector: { type: 'order' } });
  const arrived = new Promise((resolve) => live.on('change', (info) => {
    const found = info.docs.map((d) => d._id);
    if (found.length) resolve(found);
  }));
  await remote.put({ _id: 'live-note', type: 'note' });
  await remote.put({ _id: 'live-order', type: 'order' });
  const liveIDs = await Promise.race([arrived, new Promise((_, reject) => setTimeout(() => reject(new Error('live change not seen in 20 s')), 20000))]);
  live.cancel();
  console.log(JSON.stringify({
    pulled: { ok: pulled.ok, docs_written: pulled.docs_written, doc_write_failures: pulled.doc_write_failures },
    selector: await ids(bySelector),
    docIDs: await ids(byIDs),
    live: liveIDs,
  }));
}

// Exit once reported: the cancelled live replication's long poll would hold the process until the node's heartbeat.
main().then(() => process.exit(0), (error) => { console.error(String(error && error.stack || error)); process.exit(1); });
