// Command testtime runs `go test -json` (or reads its stream) and prints what the suite cost: a
// table of every package's wall time, result and test count, slowest first, and, given the go
// command's action graph (-debug-actiongraph), what building the test binaries cost (compile and
// link time per package, compile time over all packages).
//
//	testtime [-actiongraph FILE] [-top N] -- go test -json -debug-actiongraph=FILE ... ./...
//	testtime [-actiongraph FILE] -bin DIR [-arg -test.FLAG=V]... -- PACKAGE...
//	testtime < saved.json
//
// With -bin it runs, one at a time, test binaries built beforehand by `go test -c -o DIR/`, as go
// test would run them (runBinaries): for a pass whose packages must not overlap, so that their
// links need not wait in line with their tests.
//
// The -json stream hides go test's usual output, so testtime prints it back the way go test
// would: a line per package as it ends ("ok", "FAIL", "?"), the build output, and in full the
// output of every test that failed (and of a failed package's tests still running when it ended,
// a panic or a timeout). A failing run stays readable in CI.
//
// The exit status is the command's own; reading a stream, it is 1 if anything failed. It owns no
// test logic: it only reads go test's events (cmd/test2json's format).
package main
