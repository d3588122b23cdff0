//go:build tools

// Package tools pins the linters `make lint` runs beside go vet, built by `make setup` (the test
// stack, scripts/setup.sh) from the Go module proxy into the setup cache: staticcheck;
// govulncheck; and the Go vulnerability database as the module proxy serves it
// (golang.org/x/vulndb, whose data/osv holds every report), indexed by its own indexdb into a
// local database, since vuln.go.dev itself is not reachable from every machine (not from the
// reference one). A module of its own, so that the linters' dependencies never enter the main
// module's go.sum.
package tools

import (
	_ "golang.org/x/vuln/cmd/govulncheck"
	_ "golang.org/x/vulndb/cmd/indexdb"
	_ "honnef.co/go/tools/cmd/staticcheck"
)
