package kinds_test

import "github.com/continuum-project/continuum/internal/experiment/kind/kindtest"

// The other systems' kinds these tests put beside iot's own, as stubs: importing them
// (internal/systems/install) would link every system into this test binary.
func init() { kindtest.Stub("faas-function", "faas-microservice", "mosquitto") }
