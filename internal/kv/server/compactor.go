package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/continuum-project/continuum/internal/kv/mvcc"
)

// compactor is etcd's auto compaction. periodic: the revision is sampled every tenth of the
// retention (of an hour for retentions over an hour) and the store compacted to the newest sample
// at least one retention old, so history covers at least the retention. revision: every 5
// minutes, compact to current revision - retention.
type compactor struct {
	periodic  bool
	retention time.Duration // periodic
	revs      int64         // revision
	interval  time.Duration
}

// newCompactor parses etcd's --auto-compaction-mode and --auto-compaction-retention; nil means
// disabled.
func newCompactor(mode, retention string) (*compactor, error) {
	// The mode is checked even when compaction is off, as etcd does: a typo must not pass
	// unnoticed until someone sets a retention.
	if mode != "" && mode != "periodic" && mode != "revision" {
		return nil, fmt.Errorf("--auto-compaction-mode %q: unknown mode, want periodic or revision", mode)
	}
	if retention == "" || retention == "0" {
		return nil, nil
	}
	switch mode {
	case "periodic", "":
		d, err := time.ParseDuration(retention)
		if err != nil {
			h, herr := strconv.ParseInt(retention, 10, 64)
			if herr != nil {
				return nil, fmt.Errorf("--auto-compaction-retention %q: want a duration (1h, 30m) or a number of hours", retention)
			}
			d = time.Duration(h) * time.Hour
		}
		if d <= 0 {
			return nil, nil
		}
		iv := d
		if iv > time.Hour {
			iv = time.Hour
		}
		return &compactor{periodic: true, retention: d, interval: iv / 10}, nil
	case "revision":
		n, err := strconv.ParseInt(retention, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("--auto-compaction-retention %q: want a number of revisions in revision mode", retention)
		}
		if n == 0 {
			return nil, nil
		}
		return &compactor{revs: n, interval: 5 * time.Minute}, nil
	}
	return nil, nil // unreachable: the mode was checked above
}

func (c *compactor) run(stop <-chan struct{}, st *mvcc.Store, log *slog.Logger) {
	t := time.NewTicker(c.interval)
	defer t.Stop()
	type sample struct {
		at  time.Time
		rev int64
	}
	var hist []sample
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			var target int64
			if c.periodic {
				hist = append(hist, sample{now, st.Rev()})
				for len(hist) > 0 && now.Sub(hist[0].at) >= c.retention {
					target = hist[0].rev
					hist = hist[1:]
				}
			} else {
				target = st.Rev() - c.revs
			}
			if target <= st.CompactRev() {
				continue
			}
			err := st.Compact(context.Background(), target, false)
			if err != nil && !errors.Is(err, mvcc.ErrCompacted) {
				log.Warn("auto compaction", "revision", target, "err", err)
				continue
			}
			log.Info("auto compaction", "revision", target)
		}
	}
}
