// Package shareddatacmd is the shared data platform's command line: `continuum shareddata`
// (its data by hand: set, get, keys, rm, publish, subscribe, state; and the maintain and
// freshness tools) and `continuum pace` (PACE producers and consumers).
package shareddatacmd
