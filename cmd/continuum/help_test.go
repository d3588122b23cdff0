package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// walk calls fn on every command of the tree.
func walk(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		walk(sub, fn)
	}
}

// unseen matches citations of documents outside the repository: the seed documents by their
// folder (docs/seeds.md names them) and the project's issues.
var unseen = regexp.MustCompile(`seeds/\d+|\b[Ii]ssue #?\d+`)

// Every flag's help reads right, and no help cites what a user cannot see: a back-quoted word in a usage becomes the value's placeholder
// in pflag's help, so it must be one (upper case: --kv-arg FLAG), not a quoted command
// (--kv-arg continuum kv); and no default is shown as Go's %f ([2000.000000,...]).
func TestFlagHelpReadsRight(t *testing.T) {
	walk(newRootCmd(), func(c *cobra.Command) {
		for _, text := range []string{c.Short, c.Long, c.Example} {
			if m := unseen.FindString(text); m != "" {
				t.Errorf("%s: help cites %q, which a user of the repository cannot see (name the paper, or docs/seeds.md)", c.CommandPath(), m)
			}
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if strings.Contains(f.Usage, "`") {
				name, _ := pflag.UnquoteUsage(f)
				if strings.IndexFunc(name, func(r rune) bool { return unicode.IsLower(r) || unicode.IsSpace(r) }) >= 0 {
					t.Errorf("%s --%s: help shows the value as %q: back quotes mark a placeholder (write it in upper case, or drop the quotes)", c.CommandPath(), f.Name, name)
				}
			}
			if m := unseen.FindString(f.Usage); m != "" {
				t.Errorf("%s --%s: help cites %q, which a user of the repository cannot see (name the paper, or docs/seeds.md)", c.CommandPath(), f.Name, m)
			}
			if strings.Contains(f.DefValue, ".000000") {
				t.Errorf("%s --%s: default shown as %s", c.CommandPath(), f.Name, f.DefValue)
			}
		})
	})
}

func TestBenchKVHelp(t *testing.T) {
	root := newRootCmd()
	var out strings.Builder
	root.SetOut(&out)
	root.SetArgs([]string{"bench", "kv", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--kv-arg FLAG", "--rates numbers", "(default 2000,3000,"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("bench kv --help lacks %q:\n%s", want, out.String())
		}
	}
}

// A command run without its argument names it.
func TestMissingArgumentNamed(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run"}, "missing SCENARIO.yaml (usage: continuum run SCENARIO.yaml"},
		{[]string{"report"}, "missing DIR (usage: continuum report DIR"},
		{[]string{"kv", "snapshot", "restore", "--data-dir", "x"}, "missing FILE"},
		// Not an argument, but refused before anything starts too.
		{[]string{"run", "--repeats", "-1", "scenarios/quickstart.yaml"}, "--repeats -1: want the number of runs of each combination, at least 1 (0, the default, keeps the scenario's repeats)"},
	} {
		root := newRootCmd()
		root.SetArgs(tc.args)
		if err := root.Execute(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("continuum %s: %v, want %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

func TestFormatDrops(t *testing.T) {
	if got, want := formatDrops(map[string]uint64{"queue": 3, "loss": 0, "partition": 12}), "loss 0, partition 12, queue 3"; got != want {
		t.Errorf("formatDrops = %q, want %q", got, want)
	}
	if got := formatDrops(nil); got != "none" {
		t.Errorf("formatDrops(nil) = %q", got)
	}
}

// `report` on the folder that holds results directories names them.
func TestReportOnParentListsResults(t *testing.T) {
	parent := t.TempDir()
	for _, d := range []string{"quickstart-1/runs", "not-results"} {
		if err := os.MkdirAll(filepath.Join(parent, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	root := newRootCmd()
	root.SetArgs([]string{"report", parent})
	err := root.Execute()
	if err == nil || !strings.Contains(err.Error(), "results directories inside it (newest last): quickstart-1") ||
		!strings.Contains(err.Error(), "continuum report "+filepath.Join(parent, "quickstart-1")) {
		t.Errorf("report on a parent folder: %v", err)
	}
}

// TestHelpGroups: `continuum --help` lists the engine's commands first and every other visible
// command in its system's group; the stream commands' old top-level names still run, hidden,
// saying what to type instead.
func TestHelpGroups(t *testing.T) {
	root := newRootCmd()
	groups := root.Groups()
	if len(groups) < 5 || groups[0].ID != "engine" {
		t.Fatalf("groups %+v: want the engine's first, then the systems'", groups)
	}
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" {
			continue
		}
		if c.GroupID == "" {
			t.Errorf("continuum %s: in no help group", c.Name())
		}
	}
	for name, group := range map[string]string{"run": "engine", "kinds": "engine", "kv": "kv", "stream": "stream", "fl": "fl", "pace": "shareddata"} {
		if c, _, err := root.Find([]string{name}); err != nil || c.GroupID != group {
			t.Errorf("continuum %s: group %q (%v), want %q", name, c.GroupID, err, group)
		}
	}
	for old, now := range map[string]string{"realtime-db": "stream realtime-db", "stream-bridge": "stream bridge", "stream-aggregator": "stream aggregator", "stream-users": "stream users"} {
		c, _, err := root.Find([]string{old})
		if err != nil || c.Name() != old || !c.Hidden || !strings.Contains(c.Deprecated, "continuum "+now) {
			t.Errorf("continuum %s: %v hidden=%v deprecated=%q, want a hidden alias of continuum %s", old, err, c.Hidden, c.Deprecated, now)
		}
		if c, _, err := root.Find(strings.Fields(now)); err != nil || c.Hidden {
			t.Errorf("continuum %s: %v", now, err)
		}
	}
	for _, helper := range []string{"container-run", "container-exec", "kafka-topics", "redis-cluster"} {
		if c, _, err := root.Find([]string{helper}); err != nil || !c.Hidden {
			t.Errorf("continuum %s: %v, want a hidden helper that still runs", helper, err)
		}
	}
}
