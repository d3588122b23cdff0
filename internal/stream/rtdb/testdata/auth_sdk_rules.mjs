// Drives a realtime-db server that enforces security rules (auth_test.go's docRules, emulator
// mode) with the official Firebase JS SDK over its WebSocket protocol. Run by auth_sdk_test.go:
//
//   node auth_sdk_rules.mjs <node_modules dir> <host> <port> <ns>
//
// Prints "ok <name>" or "FAIL <name>: <why>" per check; exits 0 only if all passed.
import { createRequire } from "node:module";
import path from "node:path";

const [modules, host, portStr, ns] = process.argv.slice(2);
const require = createRequire(path.join(modules, "index.js"));
const { initializeApp, deleteApp } = require("firebase/app");
const { getDatabase, connectDatabaseEmulator, ref, set, update, get, onValue, enableLogging } = require("firebase/database");
if (process.env.DBG) enableLogging(true);

const port = Number(portStr);
const DEADLINE_MS = Number(process.env.DEADLINE_MS || 60000);
let apps = 0;
const live = [];

// client connects as the mock user uid (an unsigned token, as the emulator takes), or as no one.
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

async function denied(what, p) {
  try {
    await deadline(what, p);
  } catch (e) {
    if (/permission.denied/i.test(String(e && (e.code || e.message)))) return;
    throw new Error(`${what}: ${e}, want PERMISSION_DENIED`);
  }
  throw new Error(`${what}: allowed, want PERMISSION_DENIED`);
}

const checks = [];
function check(name, fn) { checks.push([name, fn]); }

check("own data: set, update, get", async () => {
  const db = client("ada");
  await deadline("set", set(ref(db, "users/ada"), { name: "Ada", age: 36 }));
  await deadline("update", update(ref(db, "users/ada"), { age: 37 }));
  const v = (await deadline("get", get(ref(db, "users/ada")))).val();
  if (v.name !== "Ada" || v.age !== 37) throw new Error(`got ${JSON.stringify(v)}`);
});

check("another user's data is denied", async () => {
  const db = client("ada");
  await denied("set users/bob", set(ref(db, "users/bob/name"), "Bob"));
  await denied("get users/bob", get(ref(db, "users/bob")));
});

check("validation: a name over 20 characters is denied", async () => {
  const db = client("ada");
  await denied("long name", set(ref(db, "users/ada/name"), "x".repeat(30)));
  await denied("string age", set(ref(db, "users/ada/age"), "old"));
});

check("a listener on a denied path is cancelled", async () => {
  const db = client("ada");
  await deadline("onValue cancel", new Promise((res, rej) => {
    onValue(ref(db, "users/bob"), () => rej(new Error("onValue fired on a denied path")),
      (err) => (/permission.denied/i.test(String(err && (err.code || err.message))) ? res() : rej(err)));
  }));
});

check("an unauthenticated client is denied; a listener on own data sees writes", async () => {
  const anon = client(null);
  await denied("anonymous get", get(ref(anon, "users/ada")));
  const db = client("ada");
  const seen = [];
  await deadline("onValue", new Promise((res) => {
    onValue(ref(db, "users/ada/age"), (s) => { seen.push(s.val()); if (s.val() === 40) res(); });
    set(ref(db, "users/ada/age"), 40);
  }));
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
