package replication

import (
	"time"
)

// DefaultMaxClockOffset is CockroachDB's default maximum clock offset: NTP keeps healthy clocks
// within a few ms of each other, so half a second ahead is a broken clock, not drift.
const DefaultMaxClockOffset = 500 * time.Millisecond

// offsetLogEvery bounds the alarm's log lines to one per peer per interval; the counter and the
// gauge say how often and how far.
const offsetLogEvery = time.Minute

func (r *Replicator) now() time.Time {
	if r.cfg.Now != nil {
		return r.cfg.Now()
	}
	return time.Now()
}

// checkClock measures how far ahead of this member's clock peer's batch, received at at, was
// stamped, and raises the max-offset alarm when that is more than Config.MaxClockOffset. It
// looks at the batch's send time (the peer's clock at sending) and at its changes' timestamps
// (a change may have been stamped by a third member whose clock runs ahead).
func (r *Replicator) checkClock(peer string, b *SyncBatch, at time.Time) {
	ahead, known := time.Duration(0), false
	if b.SentNano != 0 {
		ahead, known = time.Duration(b.SentNano-at.UnixNano()), true
	}
	worst := ahead
	for i := range b.Changes {
		worst = max(worst, time.Duration(b.Changes[i].Time.Wall-at.UnixNano()))
	}
	exceeded := r.cfg.MaxClockOffset > 0 && worst > r.cfg.MaxClockOffset
	var logIt bool
	var name string
	r.mu.Lock()
	if ps := r.peers[peer]; ps != nil {
		if known {
			ps.ClockAhead = ahead
		}
		if exceeded {
			ps.OffsetExceeded++
			if at.Sub(r.offsetLogged[peer]) >= offsetLogEvery {
				r.offsetLogged[peer] = at
				logIt, name = true, ps.Member.Name
			}
		}
	}
	r.mu.Unlock()
	if logIt {
		r.log.Warn("peer clock ahead of this member's by more than the max clock offset; its changes are applied, but timestamps run ahead of real time (check the peer's clock synchronisation)",
			"peer", name, "url", peer, "ahead", worst.Round(time.Millisecond), "max_clock_offset", r.cfg.MaxClockOffset)
	}
}
