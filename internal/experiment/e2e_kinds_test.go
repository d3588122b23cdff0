package experiment

// The end-to-end tests (executeE2E) run real scenarios, whose kinds are the systems': the only
// import of a system by the runner's tests, allow-listed in internal/systems/install's layering
// test. Tests of the runner's own logic use kinds registered by the tests themselves.
import _ "github.com/continuum-project/continuum/internal/systems/install"
