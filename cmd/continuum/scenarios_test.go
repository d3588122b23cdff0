package main

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/experiment"
	"github.com/continuum-project/continuum/internal/testbed"
)

// shippedScenarios lists every scenario file under scenarios/ (topology files, which scenarios
// include with topology_file, are not scenarios).
func shippedScenarios(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(filepath.Join("..", "..", "scenarios"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		base := filepath.Base(p)
		switch {
		case d.IsDir() && base == "topologies":
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(base, ".yaml") || strings.HasPrefix(base, "topology"):
			return nil
		}
		files = append(files, p)
		return nil
	})
	if err != nil || len(files) < 10 {
		t.Fatalf("scenarios/: %d files, %v", len(files), err)
	}
	return files
}

// Every shipped scenario passes `continuum run --check`: every sweep combination loads and every
// instance's command line builds.
func TestShippedScenariosCheck(t *testing.T) {
	for _, f := range shippedScenarios(t) {
		if _, err := experiment.Check(f, experiment.Options{Binary: "/usr/local/bin/continuum", Platform: testbed.Provider{}}); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// Every command line a kind builds for the continuum binary, in every run of every shipped
// scenario, is accepted by the binary's own command-line parser: a kind can never emit a flag,
// a flag value or an argument the command rejects.
func TestKindCommandLinesParse(t *testing.T) {
	const bin = "/usr/local/bin/continuum"
	checked := 0
	for _, f := range shippedScenarios(t) {
		cmds, err := experiment.DryCommands(f, t.TempDir(), experiment.Options{Binary: bin, Platform: testbed.Provider{}})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for key, args := range cmds {
			if len(args) == 0 || args[0] != bin {
				continue // another program (etcd, redis-server): its own parser
			}
			if err := parseOnly(args[1:]); err != nil {
				t.Errorf("%s %s: %q: %v", f, key, args[1:], err)
			}
			checked++
		}
	}
	if checked < 20 {
		t.Fatalf("only %d continuum command lines checked", checked)
	}
	// The check itself catches a bad line.
	if err := parseOnly([]string{"kv", "--no-such-flag", "x"}); err == nil {
		t.Fatal("an unknown flag parsed")
	}
	if err := parseOnly([]string{"load", "http", "--rate", "fast"}); err == nil {
		t.Fatal("a bad flag value parsed")
	}
}

// parseOnly resolves args to a subcommand of a fresh root command and parses its flags and
// positional arguments as Execute would, without running it.
func parseOnly(args []string) error {
	root := newRootCmd()
	c, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if c == root || !c.Runnable() {
		return errUnknownCommand(args)
	}
	if err := c.ParseFlags(rest); err != nil {
		return err
	}
	if err := c.ValidateArgs(c.Flags().Args()); err != nil {
		return err
	}
	if err := c.ValidateRequiredFlags(); err != nil {
		return err
	}
	return c.ValidateFlagGroups()
}

type errUnknownCommand []string

func (e errUnknownCommand) Error() string { return "no runnable command for " + strings.Join(e, " ") }

// --only and --run pick runs of a shipped sweep, and --check's count and wall time follow.
func TestCheckSelectsRuns(t *testing.T) {
	f := filepath.Join("..", "..", "scenarios", "kv", "partition.yaml")
	opts := experiment.Options{Binary: "/usr/local/bin/continuum", Platform: testbed.Provider{}}
	all, err := experiment.Check(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	if all.Runs != 2 || all.WallTime != 2*(all.Duration+experiment.RunOverhead) {
		t.Fatalf("all runs: %d run(s), wall time %v for duration %v; want 2 runs of duration + %v", all.Runs, all.WallTime, all.Duration, experiment.RunOverhead)
	}
	for _, sel := range []experiment.Selection{{Only: "etcd"}, {Only: "components=continuum kv"}, {Run: 2}} {
		opts.Select = sel
		res, err := experiment.Check(f, opts)
		if err != nil || res.Runs != 1 || res.WallTime != all.WallTime/2 {
			t.Errorf("%+v: %+v, %v; want 1 run", sel, res, err)
		}
	}
	opts.Select = experiment.Selection{Only: "redis"}
	if _, err := experiment.Check(f, opts); err == nil || !strings.Contains(err.Error(), "--run 2: components=etcd") {
		t.Errorf("--only redis: %v; want an error listing the runs", err)
	}
}
