package kinds_test

import "github.com/continuum-project/continuum/internal/experiment/kind/kindtest"

// The other systems' kinds these tests put beside the baselines' own, as stubs: importing them
// (internal/systems/install) would link every system into this test binary. The kv kind's own
// tests (its member commands, its validation) are kv's: internal/kv/kinds.
func init() { kindtest.Stub("kv", "http-echo") }
