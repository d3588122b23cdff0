package report

import (
	"fmt"
	"strings"

	"github.com/continuum-project/continuum/internal/report/chart"
)

// Named is one setup's value in a headline.
type Named struct {
	Name  string
	Value float64
}

// maxHeadlineItems is how many setups a headline lists; more are summed up by their range.
const maxHeadlineItems = 6

// Spread prints setups' values for a headline: "continuum kv 0 ms; etcd 4100 ms", or with many
// setups their range, "from 12 ms (a) to 340 ms (b) over 24 setups", so a headline stays one
// line. unit follows each value ("ms", "%", "" for counts).
func Spread(vals []Named, unit string) string {
	f := func(v float64) string {
		s := chart.FormatNum(v)
		switch unit {
		case "":
			return s
		case "%":
			return s + "%"
		}
		return s + " " + unit
	}
	if len(vals) <= maxHeadlineItems {
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = v.Name + " " + f(v.Value)
			if v.Name == "" {
				parts[i] = f(v.Value)
			}
		}
		return strings.Join(parts, "; ")
	}
	lo, hi := vals[0], vals[0]
	for _, v := range vals {
		if v.Value < lo.Value {
			lo = v
		}
		if v.Value > hi.Value {
			hi = v
		}
	}
	return fmt.Sprintf("from %s (%s) to %s (%s) over %d setups", f(lo.Value), lo.Name, f(hi.Value), hi.Name, len(vals))
}

// ComboName names a combination in headlines by its swept parameters' labels ("" when nothing
// was swept).
func ComboName(c Combination) string { return strings.Join(c.Params, ", ") }
