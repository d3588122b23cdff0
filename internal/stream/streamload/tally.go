package streamload

import (
	"sync/atomic"
	"time"
)

// tally is every record's fate, one slot per (user, seq): written by the user that sends it
// and by the subscriber that receives it, so every field is atomic. Invariant: a slot's sentUS
// and intendedUS are stored before its record is sent, so a subscriber that receives a record
// always finds them (its arrival follows the send).
type tally struct {
	requests   int
	intendedUS []atomic.Int64 // when the record was due (its user's schedule); 0: never sent
	sentUS     []atomic.Int64 // when it was sent, the record's sent_us
	receivedUS []atomic.Int64 // its first receipt
	acked      []atomic.Bool
	receipts   []atomic.Uint32

	duplicated, mismatched, partial, foreign, snapshot atomic.Int64
}

func newTally(users, requests int) *tally {
	n := users * requests
	return &tally{requests: requests, intendedUS: make([]atomic.Int64, n), sentUS: make([]atomic.Int64, n),
		receivedUS: make([]atomic.Int64, n), acked: make([]atomic.Bool, n), receipts: make([]atomic.Uint32, n)}
}

func (t *tally) slot(user, seq int) (int, bool) {
	i := user*t.requests + seq
	if user < 0 || seq < 0 || seq >= t.requests || i >= len(t.sentUS) {
		return 0, false
	}
	return i, true
}

// counts are the totals over every slot.
type counts struct {
	Sent, Acked, Received, ReceivedUnacked, Lost, Unacked int64
	MaxLatencyMS                                          float64
}

func (t *tally) counts() counts {
	var c counts
	for i := range t.sentUS {
		if t.sentUS[i].Load() == 0 {
			continue
		}
		c.Sent++
		acked, got := t.acked[i].Load(), t.receipts[i].Load() > 0
		switch {
		case acked && got:
			c.Acked++
			c.Received++
		case acked:
			c.Acked++
			c.Lost++
		case got:
			c.Received++
			c.ReceivedUnacked++
		default:
			c.Unacked++
		}
		if got {
			c.MaxLatencyMS = max(c.MaxLatencyMS, float64(t.receivedUS[i].Load()-t.intendedUS[i].Load())/1000)
		}
	}
	return c
}

// pending reports whether an acknowledged record has not been received yet.
func (t *tally) pending() bool {
	for i := range t.sentUS {
		if t.acked[i].Load() && t.receipts[i].Load() == 0 {
			return true
		}
	}
	return false
}

// timelineRow is one second of sending (records due in it): how many were sent,
// acknowledged, received and lost, and when the last of them arrived (seconds from t0).
type timelineRow struct {
	Sent, Acked, Received, Lost int64
	LastReceiptS                float64
}

func (t *tally) timeline(t0 time.Time) []timelineRow {
	var rows []timelineRow
	t0us := t0.UnixMicro()
	for i := range t.sentUS {
		due := t.intendedUS[i].Load()
		if t.sentUS[i].Load() == 0 {
			continue
		}
		sec := int(max(due-t0us, 0) / 1e6)
		for len(rows) <= sec {
			rows = append(rows, timelineRow{})
		}
		r := &rows[sec]
		r.Sent++
		acked, got := t.acked[i].Load(), t.receipts[i].Load() > 0
		if acked {
			r.Acked++
		}
		if got {
			r.Received++
			r.LastReceiptS = max(r.LastReceiptS, float64(t.receivedUS[i].Load()-t0us)/1e6)
		} else if acked {
			r.Lost++
		}
	}
	return rows
}
