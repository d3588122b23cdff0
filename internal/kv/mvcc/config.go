package mvcc

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// FsyncMode says when a write is made durable relative to its acknowledgement.
type FsyncMode int

const (
	// FsyncBatch: every write is fsynced before it is acknowledged; concurrent writes share one
	// fsync (group commit). The default.
	FsyncBatch FsyncMode = iota
	// FsyncAlways: every write gets its own fsync, one after another (slow; for comparison).
	FsyncAlways
	// FsyncNever: writes are acknowledged once in the OS page cache; a machine crash (not a
	// process crash) may lose acknowledged writes.
	FsyncNever
)

func (m FsyncMode) String() string {
	switch m {
	case FsyncAlways:
		return "always"
	case FsyncNever:
		return "never"
	default:
		return "batch"
	}
}

// ParseFsyncMode parses "always", "batch" or "never".
func ParseFsyncMode(s string) (FsyncMode, error) {
	switch s {
	case "always":
		return FsyncAlways, nil
	case "batch", "":
		return FsyncBatch, nil
	case "never":
		return FsyncNever, nil
	}
	return 0, fmt.Errorf("fsync mode %q: want always, batch or never", s)
}

// Config configures a Store.
type Config struct {
	// Dir is the directory of the Pebble database (created if missing).
	Dir string
	// Fsync says when writes become durable; see FsyncMode.
	Fsync FsyncMode
	// QuotaBytes is the space quota: when the database grows beyond it, the store raises the
	// NOSPACE alarm and refuses writes that add data until space is freed and the alarm disarmed.
	// 0 disables the quota.
	QuotaBytes int64
	// CacheBytes is the size of Pebble's block cache.
	CacheBytes int64
	// CompactionBatch is how many revision records a compaction deletes per Pebble batch, and how
	// many index keys it compacts per lock hold.
	CompactionBatch int
	// MinLeaseTTL is the smallest TTL a lease gets (etcd: 1.5 election timeouts rounded up, 2 s by default).
	MinLeaseTTL time.Duration
	// Replicated says the store is a member of a cluster (package replication): compaction
	// keeps the stamps of deleted keys, so that a peer's older put that arrives late still loses
	// to the deletion.
	Replicated bool
	// ConflictLogSize bounds the log of peers' ops that lost to concurrent writes (Conflicts;
	// 0: DefaultConflictLogSize).
	ConflictLogSize int
	// OnConflict, if set, is called with each conflict once its change is durable, from the
	// store's commit goroutine: it must return quickly and must not call into the store.
	OnConflict func(Conflict)
	// Logger receives the store's logs (nil: discard).
	Logger *slog.Logger
	// Now is the physical clock for the HLC and leases (nil: time.Now).
	Now func() time.Time
}

// DefaultConfig returns the defaults for a store in dir.
func DefaultConfig(dir string) Config {
	return Config{
		Dir:             dir,
		Fsync:           FsyncBatch,
		QuotaBytes:      2 << 30,
		CacheBytes:      64 << 20,
		CompactionBatch: 1000,
		MinLeaseTTL:     2 * time.Second,
	}
}

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	switch {
	case c.Dir == "":
		return errors.New("mvcc: Dir is required")
	case c.QuotaBytes < 0:
		return errors.New("mvcc: QuotaBytes must be >= 0")
	case c.ConflictLogSize < 0:
		return errors.New("mvcc: ConflictLogSize must be >= 0")
	case c.CompactionBatch <= 0:
		return errors.New("mvcc: CompactionBatch must be > 0")
	case c.Fsync < FsyncBatch || c.Fsync > FsyncNever:
		return fmt.Errorf("mvcc: unknown Fsync mode %d", c.Fsync)
	}
	return nil
}
