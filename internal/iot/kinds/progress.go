package kinds

import (
	"fmt"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/iot"
	"github.com/continuum-project/continuum/internal/loadgen"
)

// newProgress is the iot kind's live progress in readings: each of the emulator's requests
// (series t_rr) carries a batch of its instance's Batch readings, so readings = batches x
// batch size, summed over the instances; p99 is t_rr's over the last second, the worst
// instance's.
func newProgress(cfgs map[string]*Config) kind.Progress {
	var f *loadgen.Follower
	f = loadgen.Follow(func(loadgen.ProgressLine) string {
		var rate float64
		var delivered, batches, failed int64
		var p99 float64
		for inst, pl := range f.Latest() {
			rr := pl.Series[iot.SeriesRR]
			b := int64(1)
			if c := cfgs[inst]; c != nil && c.Batch > 0 {
				b = int64(c.Batch)
			}
			rate += rr.ThroughputRPS * float64(b)
			delivered += rr.OK * b
			batches += rr.Sent
			failed += rr.Errors
			p99 = max(p99, rr.P99)
		}
		text := fmt.Sprintf("%.0f readings/s  delivered %d in %d batches", rate, delivered, batches)
		if failed == 0 {
			text += ", none failed"
		} else {
			noun := "batches"
			if failed == 1 {
				noun = "batch"
			}
			text += fmt.Sprintf(", %d %s failed (%.1f%%)", failed, noun, 100*float64(failed)/float64(max(batches, failed)))
		}
		if p99 > 0 {
			text += ", p99 " + loadgen.MsText(p99) + " ms"
		}
		return text
	})
	return f
}
