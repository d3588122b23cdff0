// Package rest serves the REST protocol of the Firebase Realtime Database and its emulator
// (`/path.json?ns=<database>`: GET, PUT, PATCH, POST, DELETE, with print, shallow, queries,
// ETags and if-match), and the admin paths beside it: /.settings/rules.json (a database's
// security rules) and /.conflicts.json (the writes that lost on the kv member, read through
// package kvclient).
//
// # ETags
//
// The ETag of a value is the standard base64 of the SHA-1 of its canonical JSON (keys sorted, no
// spaces, numbers as stored, null as "null"): the same form as Firebase's, not the same bytes.
// GET with "X-Firebase-ETag: true" returns it; PUT or DELETE with "if-match: <etag>" writes only
// if the value is unchanged, else answers 412 with the current value and its ETag, which is how
// the Admin SDKs run transactions over REST.
//
// It does not own the tree in kv or the rules (package store), streaming GETs (package sse) or
// credentials (package auth); it maps their errors to Firebase's answers.
package rest
