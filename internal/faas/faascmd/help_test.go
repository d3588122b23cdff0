package faascmd

import (
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/faas/gateway"
)

// `faas gateway --help` describes every key --function accepts, each on its own line: the help
// is written from the parser's table, and a key the parser gains shows here without an edit.
func TestGatewayHelpListsEveryFunctionKey(t *testing.T) {
	cmd := newFaaSGatewayCmd()
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--help"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	help := out.String()
	lines := map[string]bool{}
	for _, l := range strings.Split(help, "\n") {
		if f := strings.Fields(l); len(f) > 1 && strings.HasPrefix(l, "  ") {
			lines[f[0]] = true
		}
	}
	keys := gateway.FunctionKeys()
	if len(keys) < 20 {
		t.Fatalf("FunctionKeys() = %v: the table lost keys", keys)
	}
	for _, k := range keys {
		if !lines[k] {
			t.Errorf("help has no line for --function key %q:\n%s", k, help)
		}
		// And the parser takes each key the help lists (an unknown key fails before any
		// check of the function as a whole).
		if _, err := gateway.ParseFunction("name=f," + k + "=x"); err != nil && strings.Contains(err.Error(), "unknown key") {
			t.Errorf("help lists %q, but the parser refuses it: %v", k, err)
		}
	}
}
