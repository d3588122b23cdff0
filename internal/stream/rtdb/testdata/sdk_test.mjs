// Drives a realtime-db server with the official Firebase JS SDK (npm firebase, Node build) over
// its WebSocket protocol. Run by ws_sdk_test.go:
//
//   node sdk_test.mjs <node_modules dir> <host> <port> <ns>
//
// Each check prints one line "ok <name>" or "FAIL <name>: <why>"; the exit status is 0 only if
// every check passed. Waits are for events, each bounded by a deadline (no fixed sleeps).
import { createRequire } from "node:module";
import path from "node:path";

const [modules, host, portStr, ns] = process.argv.slice(2);
const require = createRequire(path.join(modules, "index.js"));
const { initializeApp, deleteApp } = require("firebase/app");
const {
  getDatabase, connectDatabaseEmulator, ref, set, update, push, remove, get, query, orderByKey,
  limitToLast, onValue, onChildAdded, onChildChanged, onChildRemoved, runTransaction,
  onDisconnect, goOffline, serverTimestamp, increment,
} = require("firebase/database");

const port = Number(portStr);
const DEADLINE_MS = 60000; // generous: the machine is shared; a correct run takes well under 1 s per check
let apps = 0;
const live = [];

function client() {
  const app = initializeApp({ projectId: "continuum", databaseURL: `http://${host}:${port}?ns=${ns}` }, `c${apps++}`);
  const db = getDatabase(app);
  connectDatabaseEmulator(db, host, port);
  live.push(app);
  return db;
}

// until resolves when pred() holds, re-checked by check() calls from listeners.
function waiter(name, pred) {
  let resolve, reject;
  const p = new Promise((res, rej) => { resolve = res; reject = rej; });
  const timer = setTimeout(() => reject(new Error(`${name}: not seen within ${DEADLINE_MS} ms`)), DEADLINE_MS);
  const check = () => { if (pred()) { clearTimeout(timer); resolve(); } };
  return { p, check };
}

function eq(a, b) { return JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b)); }
function sortKeys(v) {
  if (v && typeof v === "object" && !Array.isArray(v)) {
    return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeys(v[k])]));
  }
  return v;
}
function want(what, got, exp) {
  if (!eq(got, exp)) throw new Error(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(exp)}`);
}

const checks = [];
function check(name, fn) { checks.push([name, fn]); }

check("set, update, push, remove and get", async () => {
  const db = client();
  await set(ref(db, "crud/a"), { x: 1, s: "hi", b: true });
  want("get after set", (await get(ref(db, "crud/a"))).val(), { x: 1, s: "hi", b: true });
  await update(ref(db, "crud/a"), { x: 2, "deep/y": 3 });
  want("get after update", (await get(ref(db, "crud/a"))).val(), { x: 2, s: "hi", b: true, deep: { y: 3 } });
  const r = await push(ref(db, "crud/list"), { n: 1 });
  if (!/^[-0-9A-Za-z_]{20}$/.test(r.key)) throw new Error(`push id ${r.key}: want 20 push-id characters`);
  want("get after push", (await get(ref(db, `crud/list/${r.key}`))).val(), { n: 1 });
  await remove(ref(db, "crud/a"));
  want("get after remove", (await get(ref(db, "crud/a"))).val(), null);
  await set(ref(db, "crud/sv"), { at: serverTimestamp(), n: increment(2) });
  await update(ref(db, "crud/sv"), { n: increment(3) });
  const sv = (await get(ref(db, "crud/sv"))).val();
  if (typeof sv.at !== "number" || sv.at < Date.now() - 3600e3) throw new Error(`server timestamp ${sv.at}`);
  want("increment", sv.n, 5);
});

check("onValue sees every value in order", async () => {
  const db = client(), other = client();
  const seen = [];
  const w = waiter("onValue", () => eq(seen, [null, 5, { a: 1 }, { a: 1, b: 2 }, null]));
  const unsub = onValue(ref(db, "val/v"), (s) => { seen.push(s.val()); w.check(); });
  // Each write waits for the listener to have seen the previous value (the server's order).
  const upto = (n) => new Promise((res, rej) => {
    const t = setTimeout(() => rej(new Error(`onValue saw ${JSON.stringify(seen)}`)), DEADLINE_MS);
    const iv = setInterval(() => { if (seen.length >= n) { clearInterval(iv); clearTimeout(t); res(); } }, 5);
  });
  await upto(1);
  await set(ref(other, "val/v"), 5); await upto(2);
  await set(ref(other, "val/v"), { a: 1 }); await upto(3);
  await update(ref(other, "val/v"), { b: 2 }); await upto(4);
  await remove(ref(other, "val/v"));
  await w.p.catch((e) => { throw new Error(`${e.message}; saw ${JSON.stringify(seen)}`); });
  unsub();
});

check("onChildAdded, onChildChanged, onChildRemoved", async () => {
  const db = client(), other = client();
  const evs = [];
  const r = ref(db, "kids");
  const exp = ["added a 1", "changed a 2", "added b {\"n\":1}", "changed b {\"n\":2}", "removed a 2"];
  const w = waiter("child events", () => evs.length >= exp.length);
  const u1 = onChildAdded(r, (s) => { evs.push(`added ${s.key} ${JSON.stringify(s.val())}`); w.check(); });
  const u2 = onChildChanged(r, (s) => { evs.push(`changed ${s.key} ${JSON.stringify(s.val())}`); w.check(); });
  const u3 = onChildRemoved(r, (s) => { evs.push(`removed ${s.key} ${JSON.stringify(s.val())}`); w.check(); });
  await get(ref(db, "kids")); // the listens are in place once a later request answered
  const o = (p) => ref(other, p);
  await set(o("kids/a"), 1);
  await set(o("kids/a"), 2);
  await set(o("kids/b"), { n: 1 });
  await update(o("kids/b"), { n: 2 });
  await remove(o("kids/a"));
  await w.p.catch((e) => { throw new Error(`${e.message}; saw ${JSON.stringify(evs)}`); });
  want("child events", evs, exp);
  u1(); u2(); u3();
});

check("a query listen (orderByKey, limitToLast)", async () => {
  const db = client(), other = client();
  for (const k of ["k1", "k2", "k3"]) await set(ref(other, `q/${k}`), k);
  let last = null;
  const w = waiter("query", () => eq(last, { k3: "k3", k4: "k4" }));
  const unsub = onValue(query(ref(db, "q"), orderByKey(), limitToLast(2)), (s) => { last = s.val(); w.check(); });
  await set(ref(other, "q/k4"), "k4");
  await w.p.catch((e) => { throw new Error(`${e.message}; last ${JSON.stringify(last)}`); });
  unsub();
});

check("two clients see each other's writes", async () => {
  const a = client(), b = client();
  let atA = null, atB = null;
  const wa = waiter("A sees B's write", () => eq(atA, { fromA: 1, fromB: 2 }));
  const wb = waiter("B sees A's write", () => eq(atB, { fromA: 1, fromB: 2 }));
  onValue(ref(a, "two"), (s) => { atA = s.val(); wa.check(); });
  onValue(ref(b, "two"), (s) => { atB = s.val(); wb.check(); });
  await set(ref(a, "two/fromA"), 1);
  await set(ref(b, "two/fromB"), 2);
  await Promise.all([wa.p, wb.p]).catch((e) => { throw new Error(`${e.message}; A ${JSON.stringify(atA)} B ${JSON.stringify(atB)}`); });
});

check("runTransaction: 10 concurrent incrementers total exactly", async () => {
  const n = 10, rounds = 5;
  const dbs = Array.from({ length: n }, () => client());
  // One increment each, all at once: every round of conflicting puts has a winner, so each
  // loser commits within 10 reruns, far below the SDK's 25: none may fail.
  await Promise.all(dbs.map(async (db) => {
    const res = await runTransaction(ref(db, "tx/counter"), (v) => (v || 0) + 1);
    if (!res.committed) throw new Error("a transaction did not commit");
  }));
  want("counter after one round", (await get(ref(dbs[0], "tx/counter"))).val(), n);
  // Then 5 increments each, back to back: a client can lose more than 25 rounds in a row (the
  // SDK then fails the transaction with "maxretry", as against Firebase); the application
  // reruns it. Every committed transaction counts exactly once, none twice.
  let aborted = 0;
  await Promise.all(dbs.map(async (db) => {
    for (let i = 0; i < rounds; i++) {
      for (;;) {
        const res = await runTransaction(ref(db, "tx/counter"), (v) => (v || 0) + 1).catch((e) => {
          if (e.message !== "maxretry") throw e;
          return { committed: false };
        });
        if (res.committed) break;
        aborted++;
      }
    }
  }));
  want("counter", (await get(ref(dbs[0], "tx/counter"))).val(), n + n * rounds);
  console.log(`info transactions rerun after maxretry: ${aborted} of ${n * rounds}`);
  // A transaction on a subtree (hash of an object) and one that aborts.
  await set(ref(dbs[0], "tx/obj"), { a: 1, b: "x", c: { d: 2.5 }, e: [1, 2] });
  const r = await runTransaction(ref(dbs[1], "tx/obj"), (v) => (v ? { ...v, a: v.a + 1 } : v));
  if (!r.committed) throw new Error("object transaction did not commit");
  want("object after transaction", (await get(ref(dbs[2], "tx/obj"))).val(), { a: 2, b: "x", c: { d: 2.5 }, e: [1, 2] });
});

check("onDisconnect runs when the connection drops", async () => {
  const watcher = client(), leaver = client();
  await set(ref(leaver, "presence/u1"), "online");
  await onDisconnect(ref(leaver, "presence/cancelled")).set("should not appear");
  await onDisconnect(ref(leaver, "presence/cancelled")).cancel();
  await onDisconnect(ref(leaver, "presence/info")).update({ left: true, at: serverTimestamp() });
  await onDisconnect(ref(leaver, "presence/u1")).set("offline");
  let v = null;
  const w = waiter("onDisconnect write", () => v === "offline");
  onValue(ref(watcher, "presence/u1"), (s) => { v = s.val(); w.check(); });
  goOffline(leaver);
  await w.p;
  const p = (await get(ref(watcher, "presence"))).val();
  if (p.cancelled !== undefined) throw new Error("a cancelled onDisconnect ran");
  if (!p.info || p.info.left !== true || typeof p.info.at !== "number") throw new Error(`onDisconnect update: ${JSON.stringify(p.info)}`);
});

check("values over one WebSocket frame (16384) both ways", async () => {
  const a = client(), b = client();
  const big = "é".repeat(30000) + "x".repeat(20000);
  let got = null;
  const w = waiter("big value", () => got === big);
  onValue(ref(b, "big/v"), (s) => { got = s.val(); w.check(); });
  await set(ref(a, "big/v"), big);
  await w.p;
});

let failed = 0;
for (const [name, fn] of checks) {
  try {
    await fn();
    console.log(`ok ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e && e.message ? e.message : e}`);
  }
}
await Promise.all(live.map((app) => deleteApp(app).catch(() => {})));
process.exit(failed ? 1 : 0);
