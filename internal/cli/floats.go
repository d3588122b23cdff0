package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// Float64sVar declares a flag of comma-separated numbers bound to p, like pflag's
// Float64SliceVar but written as given (2000,2500.5), in the help's default too, not as
// [2000.000000,2500.500000]. The first use replaces the default; a repeated flag appends.
func Float64sVar(fs *pflag.FlagSet, p *[]float64, name string, value []float64, usage string) {
	*p = append([]float64(nil), value...)
	fs.Var(&floats{p: p}, name, usage)
}

type floats struct {
	p       *[]float64
	changed bool
}

func (f *floats) String() string {
	if f.p == nil {
		return ""
	}
	parts := make([]string, len(*f.p))
	for i, v := range *f.p {
		parts[i] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

func (f *floats) Set(s string) error {
	var vs []float64
	for _, part := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
		if err != nil {
			return fmt.Errorf("%q is not a number: want comma-separated numbers, e.g. 2000,5000", part)
		}
		vs = append(vs, v)
	}
	if !f.changed {
		*f.p = vs
		f.changed = true
	} else {
		*f.p = append(*f.p, vs...)
	}
	return nil
}

func (f *floats) Type() string { return "numbers" }
