package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestFloat64sVar(t *testing.T) {
	var rates []float64
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	Float64sVar(fs, &rates, "rates", []float64{2000, 2500.5}, "rates")
	if got := fs.FlagUsages(); !strings.Contains(got, "(default 2000,2500.5)") {
		t.Errorf("help shows the default as %q, want 2000,2500.5", got)
	}
	if err := fs.Parse([]string{"--rates", "1,2", "--rates=3"}); err != nil {
		t.Fatal(err)
	}
	if want := []float64{1, 2, 3}; !slices.Equal(rates, want) {
		t.Errorf("rates %v, want %v (the first use replaces the default, a repeat appends)", rates, want)
	}
	err := fs.Parse([]string{"--rates", "1,x"})
	if err == nil || !strings.Contains(err.Error(), `"x" is not a number`) {
		t.Errorf("--rates 1,x: %v", err)
	}
}
