package server

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/kv/mvcc"
	"github.com/continuum-project/continuum/internal/kv/replication"
)

// EventCaughtUp is the "event" of an events-file line written when this member, after its
// stream to a peer (re)opened, holds everything that peer held at that moment.
const EventCaughtUp = "caught_up"

// EventStorage is the "event" of the line a member writes as it shuts down: its storage
// engine's write counters since it started (Event.Storage).
const EventStorage = "storage"

// StorageCounters is an EventStorage line's figures (mvcc.StorageIO).
type StorageCounters struct {
	WALBytes       uint64  `json:"wal_bytes"`
	FlushedBytes   uint64  `json:"flushed_bytes"`
	CompactedBytes uint64  `json:"compacted_bytes"`
	Compactions    int64   `json:"compactions"`
	WriteAmp       float64 `json:"write_amp"`
}

// EventConflict is the "event" of the line written when a peer's write lost, on this member, to
// a concurrent write of the same key (mvcc.Conflict): Event.Conflict holds it.
const EventConflict = "conflict"

// ConflictRecord is an EventConflict line's figures. Key and LostValue are base64 in JSON (as
// etcd's JSON output writes keys and values); stamps are "<HLC wall ns>.<logical>@<origin hex>".
type ConflictRecord struct {
	Key         []byte `json:"key"`
	Kept        string `json:"kept_stamp"`
	KeptDeleted bool   `json:"kept_deleted,omitempty"`
	Lost        string `json:"lost_stamp"`
	LostValue   []byte `json:"lost_value,omitempty"`
	LostDeleted bool   `json:"lost_deleted,omitempty"`
	Origin      string `json:"origin"` // the name of the member whose write lost (its id in hex if unknown)
	Revision    int64  `json:"revision"`
}

// Event is one line of the --events-file: a JSON object per replication event, for tools that
// measure a member from outside (the testbed's convergence figures) without parsing its logs.
type Event struct {
	Event  string `json:"event"`
	Member string `json:"member"`
	Peer   string `json:"peer,omitempty"`
	// ReconnectAt is when the peer's stream opened, CaughtUpAt when this member held what the
	// peer held then (wall clock, RFC 3339 with nanoseconds).
	ReconnectAt        time.Time        `json:"reconnect_at,omitzero"`
	CaughtUpAt         time.Time        `json:"caught_up_at,omitzero"`
	DisconnectedForS   float64          `json:"disconnected_for_s,omitempty"`
	ChangesSinceReopen uint64           `json:"changes,omitempty"`
	Storage            *StorageCounters `json:"storage,omitempty"`
	Conflict           *ConflictRecord  `json:"conflict,omitempty"`
}

// eventLog appends Events to a file, one write per line so that a killed member leaves only
// whole lines behind.
type eventLog struct {
	mu     sync.Mutex
	f      *os.File
	member string
}

func openEventLog(path, member string) (*eventLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--events-file: %w", err)
	}
	return &eventLog{f: f, member: member}, nil
}

// caughtUp records a replication catch-up; it is replication.Config.OnCatchUp.
func (l *eventLog) caughtUp(c replication.CatchUp) {
	l.write(Event{Event: EventCaughtUp, Member: l.member, Peer: c.Peer, ReconnectAt: c.ReconnectAt.UTC(),
		CaughtUpAt: c.CaughtUpAt.UTC(), DisconnectedForS: c.DisconnectedFor.Seconds(), ChangesSinceReopen: c.Changes})
}

// storage records the storage engine's counters (at shutdown).
func (l *eventLog) storage(io mvcc.StorageIO) {
	if l == nil {
		return
	}
	l.write(Event{Event: EventStorage, Member: l.member, Storage: &StorageCounters{WALBytes: io.WALBytes,
		FlushedBytes: io.FlushedBytes, CompactedBytes: io.CompactedBytes, Compactions: io.Compactions, WriteAmp: io.WriteAmp()}})
}

// conflict records a peer's write that lost here.
func (l *eventLog) conflict(c *ConflictRecord) {
	if l == nil {
		return
	}
	l.write(Event{Event: EventConflict, Member: l.member, Conflict: c})
}

func (l *eventLog) write(e Event) {
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		_, _ = l.f.Write(append(b, '\n'))
	}
}

func (l *eventLog) close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}
