// Drives a realtime-db server enforcing auth_ws_revoke_test.go's revokeRules (emulator mode:
// "owner" is an admin) with the official Firebase JS SDK over its WebSocket protocol: an
// onDisconnect write the rules deny rejects its promise with PERMISSION_DENIED, and a listener
// whose read the rules stop allowing gets its cancel callback (the server's "c" push) and no
// more values. Run by auth_sdk_test.go:
//
//   node auth_sdk_revoke.mjs <node_modules dir> <host> <port> <ns>
//
// Prints "ok <name>" or "FAIL <name>: <why>" per check; exits 0 only if all passed.
import { createRequire } from "node:module";
import path from "node:path";

const [modules, host, portStr, ns] = process.argv.slice(2);
const require = createRequire(path.join(modules, "index.js"));
const { initializeApp, deleteApp } = require("firebase/app");
const { getDatabase, connectDatabaseEmulator, ref, set, onValue, onDisconnect, enableLogging } = require("firebase/database");
if (process.env.DBG) enableLogging(true);

const port = Number(portStr);
const DEADLINE_MS = Number(process.env.DEADLINE_MS || 60000);
let apps = 0;
const live = [];

function client(uid) {
  const app = initializeApp({ projectId: "continuum", databaseURL: `http://${host}:${port}?ns=${ns}` }, `c${apps++}`);
  const db = getDatabase(app);
  connectDatabaseEmulator(db, host, port, uid ? { mockUserToken: { sub: uid } } : {});
  live.push(app);
  return db;
}

function deadline(name, p) {
  let timer;
  const t = new Promise((_, rej) => { timer = setTimeout(() => rej(new Error(`${name}: nothing within ${DEADLINE_MS} ms`)), DEADLINE_MS); });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

const isDenied = (e) => /permission.denied/i.test(String(e && (e.code || e.message)));

async function denied(what, p) {
  try {
    await deadline(what, p);
  } catch (e) {
    if (isDenied(e)) return;
    throw new Error(`${what}: ${e}, want PERMISSION_DENIED`);
  }
  throw new Error(`${what}: allowed, want PERMISSION_DENIED`);
}

// admin writes through REST as "owner" (an admin in emulator mode).
async function admin(method, p, body) {
  const r = await fetch(`http://${host}:${port}${p}${p.includes("?") ? "&" : "?"}ns=${ns}&auth=owner`, { method, body });
  if (r.status !== 200) throw new Error(`${method} ${p}: ${r.status} ${await r.text()}`);
}

const checks = [];
function check(name, fn) { checks.push([name, fn]); }

check("onDisconnect writes the rules deny reject at registration", async () => {
  const db = client("ada");
  await denied("onDisconnect().set on another user's node", onDisconnect(ref(db, "users/bob/status")).set("offline"));
  await denied("onDisconnect().update with a denied path", onDisconnect(ref(db, "/")).update({ "pub/a": 1, "secret/b": 2 }));
  await deadline("onDisconnect().set on own node", onDisconnect(ref(db, "users/ada/status")).set("offline"));
});

check("a listener the new rules deny is cancelled, and gets no more values", async () => {
  const db = client("ada");
  const values = [];
  let cancelled;
  const cancel = new Promise((res) => { cancelled = res; });
  await deadline("first value", new Promise((res) => {
    onValue(ref(db, "pub"), (s) => { values.push(s.val()); res(); }, (err) => cancelled(err));
  }));
  const seen = [];
  await deadline("first value of /open", new Promise((res) => {
    onValue(ref(db, "open"), (s) => { seen.push(s.val()); res(); });
  }));
  await admin("PUT", "/.settings/rules.json", JSON.stringify({ rules: { pub: { ".read": false, ".write": true }, open: { ".read": true, ".write": true } } }));
  const err = await deadline("cancel callback", cancel);
  if (!isDenied(err)) throw new Error(`cancel callback with ${err}, want PERMISSION_DENIED`);
  const n = values.length;
  await admin("PUT", "/pub/hidden.json", JSON.stringify("secret"));
  await deadline("a later value on /open", new Promise((res) => {
    onValue(ref(db, "open/x"), (s) => { if (s.val() === 1) res(); });
    set(ref(db, "open/x"), 1);
  }));
  if (values.length !== n) throw new Error(`the cancelled listener got ${JSON.stringify(values.slice(n))} after its cancel`);
});

let failed = 0;
for (const [name, fn] of checks) {
  try {
    await fn();
    console.log(`ok ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e && e.stack ? e.stack.split("\n")[0] : e}`);
  }
}
await Promise.all(live.map((a) => deleteApp(a)));
process.exit(failed ? 1 : 0);
