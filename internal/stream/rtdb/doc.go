// Package rtdb is a Firebase-compatible realtime database served over HTTP, whose JSON tree
// lives in continuum kv (or any etcd v3 server) through etcd's clientv3. It assembles the
// server from the packages that do each job, and routes requests between them:
//
//   - tree: values, paths, queries and ETags, with no kv (what every other package shares);
//   - store: the tree in kv (key layout, guarded Txn writes, server values) and the security
//     rules applied to every read and write;
//   - auth: who a request comes from (secrets, ID tokens), carried in a context;
//   - hub: one kv watch turned into per-listener events;
//   - rest: the REST protocol (/path.json) and the admin paths (rules, conflicts);
//   - sse: REST streaming (Accept: text/event-stream), server and client;
//   - ws: the WebSocket protocol the SDKs speak (/.ws) and the dashboard;
//   - rules: the security rules language.
//
// Package rtdb owns the server's configuration (Config), its lifetime (New, Run, Close) and
// the routing (ServeHTTP); each package's doc says what it does.
package rtdb
