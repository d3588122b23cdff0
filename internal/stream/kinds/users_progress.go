package kinds

import (
	"fmt"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/stream/streamload"
)

// usersProgress is the stream-users kind's live progress in records: how many the users sent
// (series ack: one send each), how many reached the subscriber and how many were lost (series
// e2e: its successes and errors), and the lag, e2e's p99 over the last second (the worst
// instance's).
func usersProgress(map[string]*UsersConfig) kind.Progress {
	return loadgen.Follow(func(t loadgen.ProgressLine) string {
		e2e, ack := t.Series[streamload.SeriesE2E], t.Series[streamload.SeriesAck]
		sent := ack.Sent
		if sent == 0 {
			sent = e2e.Sent
		}
		text := fmt.Sprintf("%.0f records/s  delivered %d of %d sent", e2e.ThroughputRPS, e2e.OK, sent)
		if e2e.Errors == 0 {
			text += ", none lost"
		} else {
			text += fmt.Sprintf(", %d lost", e2e.Errors)
		}
		if e2e.P99 > 0 {
			text += ", lag p99 " + loadgen.MsText(e2e.P99) + " ms"
		}
		return text
	})
}
