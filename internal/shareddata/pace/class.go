// Package pace is PACE, the producer and consumer emulator of seeds/000, over the NPM platform
// (package shareddata). A producer publishes metrics of size μ every ν for its group and
// applies the control it receives; a consumer reacts to every metrics publication of its
// group by updating its fixed-size state queue, reading it whole, running an emulated
// inference and publishing control for the producer. Every operation's duration is measured
// per operation type (package loadgen's Session), as every workload's are.
//
// The consumer runs the seed's flow (mode "pace": seven steps, each a separate round trip) or
// the platform's (mode "atomic": one StatePush, then control). Unlike the seed's PACE, a
// producer keeps a fixed schedule (its period does not drift by the time a publish takes),
// and the end-to-end control loop (metrics published to control applied) is measured too.
//
// It does not start servers or know the testbed; the pace kind (shareddata/kinds) places one
// process per producer and consumer on nodes.
package pace

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Class is a traffic class of seeds/000 Table 1: metrics of MetricsSize bytes every Period.
type Class struct {
	Name        string
	MetricsSize int
	Period      time.Duration
}

// Classes are the seed's four traffic classes (1 kB = 1000 bytes, as the seed counts).
var Classes = map[string]Class{
	"pulse": {Name: "pulse", MetricsSize: 1000, Period: time.Second},
	"ping":  {Name: "ping", MetricsSize: 1000, Period: 100 * time.Millisecond},
	"burst": {Name: "burst", MetricsSize: 100_000, Period: time.Second},
	"wave":  {Name: "wave", MetricsSize: 100_000, Period: 100 * time.Millisecond},
}

// DefaultClass is the class a producer or consumer has unless told otherwise.
const DefaultClass = "pulse"

// LookupClass finds a class by name (case-insensitive).
func LookupClass(name string) (Class, error) {
	c, ok := Classes[strings.ToLower(name)]
	if !ok {
		names := make([]string, 0, len(Classes))
		for n := range Classes {
			names = append(names, n)
		}
		sort.Strings(names)
		return Class{}, fmt.Errorf("traffic class %q: want one of %s", name, strings.Join(names, ", "))
	}
	return c, nil
}

// Defaults of the seed's experiments and of PACE.
const (
	DefaultStateSize   = 1_000_000 // the seed's 1 MB state
	DefaultControlSize = 1000      // PACE's control value
	DefaultInference   = 50 * time.Millisecond
)

// Consumer modes.
const (
	ModePACE   = "pace"   // the seed's seven separate round trips
	ModeAtomic = "atomic" // StatePush (one atomic round trip), then control
)

// Operation types (series names). The consumer's reads are get_lin or get_ser by their
// consistency.
const (
	OpPut     = "put"         // a write: metrics (producer), a state entry, indices, control (consumer)
	OpGetLin  = "get_lin"     // a linearizable read
	OpGetSer  = "get_ser"     // a serializable read
	OpDel     = "del"         // deleting the oldest state entry
	OpPush    = "push"        // StatePush (atomic mode)
	OpNotify  = "notify"      // metrics published -> delivered to a consumer
	OpCtrl    = "ctrl_notify" // control published -> delivered to its producer
	OpLoop    = "loop"        // metrics published -> the control computed from them delivered to the producer
	OpProcess = "process"     // a consumer's whole callback, from delivery to control published
)
