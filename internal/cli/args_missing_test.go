package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestRequiredArgs(t *testing.T) {
	for use, want := range map[string][]string{
		"run SCENARIO.yaml [--set path=value]... [--out DIR] [--repeats N]": {"SCENARIO.yaml"},
		"restore FILE --data-dir DIR":                                       {"FILE"},
		"set NAMESPACE KEY=VALUE...":                                        {"NAMESPACE", "KEY=VALUE"},
		"keys NAMESPACE [PREFIX]":                                           {"NAMESPACE"},
		"down (--name NAME | --all)":                                        nil,
		"publish {NAMESPACE CHANNEL DATA | --x}":                            nil,
	} {
		if got := requiredArgs(use); !slices.Equal(got, want) {
			t.Errorf("requiredArgs(%q) = %q, want %q", use, got, want)
		}
	}
}

func TestNameMissingArgs(t *testing.T) {
	root := &cobra.Command{Use: "continuum", SilenceUsage: true, SilenceErrors: true}
	run := &cobra.Command{Use: "run SCENARIO.yaml [--out DIR]", Args: cobra.ExactArgs(1), RunE: func(*cobra.Command, []string) error { return nil }}
	set := &cobra.Command{Use: "set NAMESPACE KEY=VALUE...", Args: cobra.MinimumNArgs(2), RunE: func(*cobra.Command, []string) error { return nil }}
	root.AddCommand(run, set)
	NameMissingArgs(root)
	for _, tc := range []struct {
		args []string
		want string // "" for no error
	}{
		{[]string{"run"}, "missing SCENARIO.yaml (usage: continuum run SCENARIO.yaml [--out DIR])"},
		{[]string{"run", "a.yaml"}, ""},
		{[]string{"run", "a.yaml", "b.yaml"}, `"a.yaml" "b.yaml": accepts 1 arg(s), received 2 (usage: continuum run`},
		{[]string{"set"}, "missing NAMESPACE KEY=VALUE (usage: continuum set NAMESPACE KEY=VALUE...)"},
		{[]string{"set", "ns"}, "missing KEY=VALUE (usage:"},
	} {
		root.SetArgs(tc.args)
		err := root.Execute()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
	}
}
