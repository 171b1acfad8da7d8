// Times PouchDB (a release bundle in Node.js, memory adapter) pulling a whole database.
//   node pouchdb_pull.js POUCHDB_DIR VERSION SOURCE_URL  ->  {"docs_written": N, "seconds": S}
// Trust a node's certificate with NODE_EXTRA_CA_CERTS.
'use strict';
const [pouchDir, version, source] = process.argv.slice(2);
const PouchDB = require(require('path').join(pouchDir, 'load-pouchdb.js'))(version);
const db = new PouchDB('bench-' + Date.now(), { adapter: 'memory' });
const started = process.hrtime.bigint();
db.replicate.from(source, { batch_size: 100 }).then((result) => {
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  console.log(JSON.stringify({ docs_written: result.docs_written, seconds }));
  process.exit(result.ok ? 0 : 1);
}, (error) => { console.error(String(error && error.stack || error)); process.exit(1); });
