package main

import (
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/experiment/kind"
)

// runRoot runs the root command with args and returns its stdout and stderr.
func runRoot(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := newRootCmd()
	var out, errOut strings.Builder
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), errOut.String(), err
}

// TestKindsLists: `continuum kinds` lists every kind once, under its system, systems in order,
// each with its keys and doc; `continuum kinds NAME` shows one's keys with their defaults, and an
// old name shows the kind it became with a warning.
func TestKindsLists(t *testing.T) {
	out, _, err := runRoot(t, "kinds")
	if err != nil {
		t.Fatal(err)
	}
	var system string
	var systems []string
	listed := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		switch {
		case line == "":
		case !strings.HasPrefix(line, " "):
			system = line
			systems = append(systems, system)
		case strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   "):
			name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
			listed[name] = system
		}
	}
	for i := 1; i < len(systems); i++ {
		if systems[i-1] >= systems[i] {
			t.Errorf("systems not sorted: %q before %q", systems[i-1], systems[i])
		}
	}
	all := kind.All()
	if len(listed) != len(all) {
		t.Errorf("%d kinds listed, %d registered:\n%s", len(listed), len(all), out)
	}
	for _, k := range all {
		if listed[k.Name] != k.System {
			t.Errorf("kind %s listed under %q, want its system %q", k.Name, listed[k.Name], k.System)
		}
	}
	if !strings.Contains(out, "doc:  docs/kv.md") || !strings.Contains(out, "keys: client_port, data_dir") {
		t.Errorf("no doc or keys line for kv:\n%s", out)
	}

	out, stderr, err := runRoot(t, "kinds", "pace")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kind:      shareddata-pace", "system:    shareddata", "class", "pulse", "timeout", "5s"} {
		if !strings.Contains(out, want) {
			t.Errorf("kinds pace: no %q in\n%s", want, out)
		}
	}
	if !strings.Contains(stderr, `"pace" is deprecated, use "shareddata-pace"`) {
		t.Errorf("kinds pace: stderr %q, want the deprecation", stderr)
	}
	if _, _, err := runRoot(t, "kinds", "nope"); err == nil || !strings.Contains(err.Error(), "shareddata-pace") {
		t.Errorf("unknown kind: %v, want the kinds listed", err)
	}
}
