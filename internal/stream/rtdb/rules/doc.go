// Package rules parses and evaluates Firebase Realtime Database security rules: the JSON file
// (`{"rules": {...}}` with `.read`, `.write`, `.validate`, `.indexOn` and `$variables`, comments
// allowed as Firebase allows them) and the expression language in the subset the Firebase
// emulator evaluates (auth, now, root, data, newData, $variables, snapshot and string methods,
// the JavaScript-like operators).
//
// It knows nothing of HTTP or kv: the caller gives it the database's values through Data, which
// it reads lazily (only the paths an expression asks for), and it answers "may this caller read
// this path" and "may this caller make these writes". Semantics, as Firebase documents them:
//   - .read and .write cascade: a grant at a node grants everything below it, and a deeper rule
//     cannot take it back; without a grant on the way from the root to the path, access is denied.
//   - .validate must hold at every node of the new data at or under a written path that has a
//     rule and a non-null new value; it does not cascade and is not evaluated for deletions.
//   - A multi-path write is allowed only if every one of its paths is, each seeing the data after
//     all of them (newData).
//   - An expression that fails (a type error, a null where a string was needed, a read error)
//     evaluates to false.
package rules
