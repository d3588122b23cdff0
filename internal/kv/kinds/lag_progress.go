package kinds

import (
	"fmt"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/loadgen"
)

// lagProgress is the kv-lag kind's live progress: probes written and seen on the other member,
// and the replication lag over the last second (series "lag": p50, and p99 the worst
// instance's).
func lagProgress(map[string]*LagConfig) kind.Progress {
	return loadgen.Follow(func(t loadgen.ProgressLine) string {
		lag := t.Series["lag"]
		text := fmt.Sprintf("%.0f probes/s  seen %d of %d", lag.ThroughputRPS, lag.OK, lag.Sent)
		if lag.Errors > 0 {
			text += fmt.Sprintf(", %d failed", lag.Errors)
		}
		if lag.P99 > 0 {
			text += ", lag p50 " + loadgen.MsText(lag.P50) + " ms, p99 " + loadgen.MsText(lag.P99) + " ms"
		}
		return text
	})
}
