package mvcc

import (
	"sync"
	"sync/atomic"
)

// DefaultConflictLogSize is how many conflicts a store keeps when Config.ConflictLogSize is 0.
const DefaultConflictLogSize = 1024

// Conflict is a peer's op that lost, on this member, to the version or deletion the key already
// held: its value is not in the key's history here and never will be on any member (last writer
// wins by Stamp), so the store records it instead of dropping it silently.
//
// Why a losing op means concurrent writes: a member that had applied the kept write before it
// made the lost one would have stamped the lost one higher (its hybrid logical clock observed
// the kept write's time), so the lost write's author had not seen the kept one. Between two
// members (an edge and a cloud) the converse holds too: changes of one origin arrive in order,
// so a kept version that was written after seeing the lost write would have reached this member
// after it. With three or more members forwarding for each other, the kept write may have been
// made by a member that had seen the lost one and reach this member first (the lost write then
// was not concurrent but overwritten in order): such a record is a false alarm, never a missing
// one. Every concurrent loser is recorded at least on the member that made the winning write,
// which holds the winner before the loser arrives.
type Conflict struct {
	Key []byte
	// Kept is the stamp of what the key keeps (KeptDeleted: a deletion); Lost the stamp of the
	// op that lost, whose origin (Lost.Origin) made the change Change.
	Kept        Stamp
	KeptDeleted bool
	Lost        Stamp
	Change      ChangeID
	// LostValue is the value the lost op would have written (nil with LostDeleted: it was a
	// deletion, so the key lives on here although its author had deleted it).
	LostValue   []byte
	LostDeleted bool
	// Revision is the local revision at which the losing change was applied (and recorded).
	Revision int64
}

// conflictLog is a bounded ring of the latest conflicts; the oldest are dropped first, and the
// total counts every conflict ever recorded since the store opened (so a reader can tell that it
// missed some). It lives in memory only: a restart empties it.
type conflictLog struct {
	mu    sync.Mutex
	ring  []Conflict // guarded by mu
	next  int        // guarded by mu: where the next conflict goes
	full  bool       // guarded by mu
	total atomic.Uint64
}

func newConflictLog(size int) *conflictLog {
	if size <= 0 {
		size = DefaultConflictLogSize
	}
	return &conflictLog{ring: make([]Conflict, size)}
}

func (l *conflictLog) add(c Conflict) {
	l.mu.Lock()
	l.ring[l.next] = c
	l.next++
	if l.next == len(l.ring) {
		l.next, l.full = 0, true
	}
	l.mu.Unlock()
	l.total.Add(1)
}

func (l *conflictLog) list() []Conflict {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.full {
		return append([]Conflict(nil), l.ring[:l.next]...)
	}
	out := make([]Conflict, 0, len(l.ring))
	out = append(out, l.ring[l.next:]...)
	return append(out, l.ring[:l.next]...)
}

// Conflicts returns the conflicts this store recorded since it opened, oldest first: the last
// Config.ConflictLogSize of them.
func (s *Store) Conflicts() []Conflict { return s.conflicts.list() }

// ConflictsTotal counts every conflict recorded since the store opened, including those the
// bounded log no longer holds.
func (s *Store) ConflictsTotal() uint64 { return s.conflicts.total.Load() }

// loseOp records, while applying a peer's change, that its op lost to what key holds (stamp
// kept). A deletion that loses to a deletion loses nothing and is not recorded. The conflict is
// published with the change's commit group, once durable (runSyncer), so that a reader never
// sees a conflict whose change a crash could still undo.
func (w *writeTxn) loseOp(op Op, kept Stamp) {
	_, live := w.s.ix.get(op.Key, w.rev)
	if op.Delete && !live {
		return
	}
	c := Conflict{Key: append([]byte(nil), op.Key...), Kept: kept, KeptDeleted: !live, Lost: w.stamp,
		Change: w.remote.ID, LostDeleted: op.Delete, Revision: w.rev}
	if !op.Delete {
		c.LostValue = append([]byte(nil), op.Value...)
	}
	w.conflicts = append(w.conflicts, c)
}

// publishConflicts adds a durable group's conflicts to the log and hands each to
// Config.OnConflict.
func (s *Store) publishConflicts(cs []Conflict) {
	for _, c := range cs {
		s.conflicts.add(c)
		if s.cfg.OnConflict != nil {
			s.cfg.OnConflict(c)
		}
	}
}
