package kinds

import (
	"fmt"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/shareddata/pace"
)

// paceProgress is the pace kind's live progress in control loops: a producer's series loop
// times each loop from its metrics published to the consumer's control delivered back, so its
// successes are the loops closed (p99 over the last second, the worst producer's); consumers'
// callbacks (series process) are counted beside them.
func paceProgress(map[string]*Config) kind.Progress {
	return loadgen.Follow(func(t loadgen.ProgressLine) string {
		loop, proc := t.Series[pace.OpLoop], t.Series[pace.OpProcess]
		text := fmt.Sprintf("%.0f loops/s  closed %d control loops, %d metrics processed", loop.ThroughputRPS, loop.OK, proc.OK)
		if t.Errors > 0 {
			text += fmt.Sprintf(", %d operations failed", t.Errors)
		}
		if loop.P99 > 0 {
			text += ", loop p99 " + loadgen.MsText(loop.P99) + " ms"
		}
		return text
	})
}
