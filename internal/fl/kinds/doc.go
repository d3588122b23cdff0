// Package kinds is the fl system's adapter to experiments: its kinds and its report section
// (the lead adds the fl-orchestrator kind and the "Federated learning" section). It imports the
// system's command package, so installing the system (one line in internal/systems/install)
// registers `continuum fl ...` and `continuum bench fl-plan` too.
package kinds

import _ "github.com/continuum-project/continuum/internal/fl/flcmd" // continuum fl plan, bench fl-plan
