// Package authtoken is the credential of a Continuum server that has no users of its own: one
// bearer token, kept in a file that the server generates (0600, in a 0700 directory) on its
// first start and reads on every later one, checked in constant time, and the rule that a
// server without a credential listens on loopback only.
//
// It owns the file, the comparison and the HTTP check; which endpoints a server protects, and
// its flags, are the server's. (The faas gateway's basic auth and the proxy's admin token are
// the same checks with their own files: OpenFaaS' two secret files, a given token file.)
package authtoken
