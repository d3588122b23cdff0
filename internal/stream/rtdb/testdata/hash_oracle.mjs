// Prints the Firebase JS SDK's own hash (the node's hash(), which a transaction sends as "h") of
// values read from a realtime-db server, for ws_hash_test.go to compare with sdkHash:
//
//   node hash_oracle.mjs <node_modules dir> <host> <port> <ns> < values.json
//
// values.json is a JSON array; value i is written at /h/<i> (in batches of 40 keys, within the
// server's per-write limits), read back with get(), and its hash printed as one JSON array.
import { createRequire } from "node:module";
import path from "node:path";
import { readFileSync } from "node:fs";

const [modules, host, port, ns] = process.argv.slice(2);
const require = createRequire(path.join(modules, "index.js"));
const { initializeApp, deleteApp } = require("firebase/app");
const { getDatabase, connectDatabaseEmulator, ref, update, get } = require("firebase/database");

const values = JSON.parse(readFileSync(0, "utf8"));
const app = initializeApp({ projectId: "continuum", databaseURL: `http://${host}:${port}?ns=${ns}` });
const db = getDatabase(app);
connectDatabaseEmulator(db, host, Number(port));
for (let i = 0; i < values.length; i += 40) {
  const batch = {};
  values.slice(i, i + 40).forEach((v, j) => { batch[String(i + j)] = v; });
  await update(ref(db, "h"), batch);
}
const hashes = [];
for (let i = 0; i < values.length; i++) {
  const snap = await get(ref(db, `h/${i}`));
  hashes.push(snap._node.hash()); // the SDK's internal node: the hash its transactions send
}
console.log(JSON.stringify(hashes));
await deleteApp(app);
process.exit(0);
