package benchkit

import (
	"os"
	"strings"
	"testing"
)

func TestFormatting(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{CommandLine([]string{"continuum", "bench", "proxy", "--variant", "min build=bin/x", "--out", "a.md"}), "continuum bench proxy --variant 'min build=bin/x' --out a.md"},
		{CommandLine([]string{"continuum", "it's", ""}), `continuum 'it'\''s' ''`},
		{MiB(int64(12 << 20)), "12.0 MiB"},
		{MiB(1.5 * (1 << 20)), "1.5 MiB"},
		{YesNo(true), "yes"},
		{YesNo(false), "**no**"},
		{OneLine("a\nb", 10), "a b"},
		{OneLine("abcdef", 3), "abc..."},
		{Summarize([]float64{0.4, -0.1, 0.2}).Range("%+.1f"), " (-0.1–+0.4)"},
		{Summarize([]float64{0.4}).Range("%+.1f"), ""},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// TestInvocationKeepsEveryFlag: the "Regenerate with" line is the command as typed, so a smoke
// run (bench testbed --quick) cannot pass for a full one.
func TestInvocationKeepsEveryFlag(t *testing.T) {
	saved := os.Args
	t.Cleanup(func() { os.Args = saved })
	os.Args = []string{"/any/path/continuum", "bench", "testbed", "--quick", "--out", "results/a b.md"}
	if got, want := Invocation(), "continuum bench testbed --quick --out 'results/a b.md'"; got != want {
		t.Errorf("Invocation = %q, want %q", got, want)
	}
}

func TestLogf(t *testing.T) {
	var b strings.Builder
	Logf(&b, "rate %d", 5)
	Logf(nil, "discarded %d", 6) // must not panic
	if b.String() != "rate 5\n" {
		t.Fatalf("Logf wrote %q", b.String())
	}
}
