package main

import (
	"encoding/json"
	"os"
	"strings"
	"time"
)

// action is one node of the go command's action graph as -debug-actiongraph writes it
// (cmd/go/internal/work's actionJSON): the field names are the go command's, and the format
// is undocumented, so everything here degrades to "not visible" when a field is missing.
type action struct {
	Mode      string
	Package   string
	NeedBuild bool
	TimeStart time.Time
	TimeDone  time.Time
	CmdReal   time.Duration
	CmdUser   time.Duration
	CmdSys    time.Duration
}

// buildCost is what building a run's test binaries cost, as the action graph recorded it.
type buildCost struct {
	Compiles     int           // packages compiled (not found in the build cache)
	CompileCPU   time.Duration // the compilers' user+system time, all packages
	CompileReal  time.Duration // their wall time, summed over packages
	Links        int
	LinkReal     time.Duration
	Vets         int
	VetReal      time.Duration
	First, Last  time.Time                // the first compile's start, the last link's end
	PerPackage   map[string]time.Duration // compile of the package, its test variant and testmain
	LinkPackage  map[string]time.Duration // linking the package's test binary
	LinkFinished map[string]time.Time
}

// readActionGraph reads the file go test -debug-actiongraph=FILE wrote when it ended.
func readActionGraph(path string) (*buildCost, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var actions []action
	if err := json.Unmarshal(raw, &actions); err != nil {
		return nil, err
	}
	return costOf(actions), nil
}

func costOf(actions []action) *buildCost {
	c := &buildCost{PerPackage: map[string]time.Duration{}, LinkPackage: map[string]time.Duration{}, LinkFinished: map[string]time.Time{}}
	span := func(a action) {
		if c.First.IsZero() || a.TimeStart.Before(c.First) {
			c.First = a.TimeStart
		}
		if a.TimeDone.After(c.Last) {
			c.Last = a.TimeDone
		}
	}
	for _, a := range actions {
		if a.CmdReal == 0 { // not run: in the cache, or a bookkeeping action
			continue
		}
		// A test binary's own packages: "p" (p and its test variant, both listed as p),
		// "p_test" (the external tests) and "p.test" (the generated main).
		own := strings.TrimSuffix(strings.TrimSuffix(a.Package, ".test"), "_test")
		switch a.Mode {
		case "build":
			c.Compiles++
			c.CompileCPU += a.CmdUser + a.CmdSys
			c.CompileReal += a.CmdReal
			c.PerPackage[own] += a.CmdReal
			span(a)
		case "link":
			c.Links++
			c.LinkReal += a.CmdReal
			c.LinkPackage[own] += a.CmdReal
			c.LinkFinished[own] = a.TimeDone
			span(a)
		case "vet":
			c.Vets++
			c.VetReal += a.CmdReal
		}
	}
	return c
}
