package mvcc

import (
	"bytes"
	"sync"

	"github.com/google/btree"
)

// revision names one revision record: the revision of the write request and the op's position
// within it.
type revision struct{ main, sub int64 }

// entry is one version of a key as the index keeps it: enough to answer compares, counts and
// keys-only reads, and to compute the next version, without reading Pebble.
type entry struct {
	rev     revision
	create  int64 // create_revision (0 for a tombstone)
	version int64 // version (0 for a tombstone)
	lease   int64
	tomb    bool
}

// keyIndex holds a key's versions in ascending revision order, and the stamp of the latest
// version or deletion (replication's last-writer-wins register). A keyIndex may have no entries
// and only a stamp: a deletion from a peer that found no live version, which must still win over
// older puts that arrive after it.
type keyIndex struct {
	key     []byte
	stamp   Stamp
	entries []entry
}

// at returns the key's version visible at revision rev, if the key exists then.
func (ki *keyIndex) at(rev int64) (entry, bool) {
	for i := len(ki.entries) - 1; i >= 0; i-- {
		e := ki.entries[i]
		if e.rev.main <= rev {
			return e, !e.tomb
		}
	}
	return entry{}, false
}

// index maps keys to their versions; it is etcd's kvindex. It holds every version that Pebble
// holds, including versions newer than the store's visible revision (written, not yet durable):
// readers pass the revision they read at and never see those.
type index struct {
	mu   sync.RWMutex
	tree *btree.BTreeG[*keyIndex]
	// retainStamps keeps a key's stamp when compaction removes its last version (a member of a
	// cluster: a peer's older put may still arrive and must lose to the deletion).
	retainStamps bool
}

func newIndex() *index {
	return &index{tree: btree.NewG(32, func(a, b *keyIndex) bool { return bytes.Compare(a.key, b.key) < 0 })}
}

// get returns key's version visible at rev.
func (ix *index) get(key []byte, rev int64) (entry, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	ki, ok := ix.tree.Get(&keyIndex{key: key})
	if !ok {
		return entry{}, false
	}
	return ki.at(rev)
}

// visit calls fn with every key in [key, end) that exists at rev, in key order, until fn returns
// false. end == nil means the single key; len(end) == 0 (not nil) means no upper bound. fn runs
// under the index's read lock: it must not block.
func (ix *index) visit(key, end []byte, rev int64, fn func(key []byte, e entry) bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if end == nil {
		if ki, ok := ix.tree.Get(&keyIndex{key: key}); ok {
			if e, ok := ki.at(rev); ok {
				fn(ki.key, e)
			}
		}
		return
	}
	if len(end) > 0 && bytes.Compare(key, end) >= 0 {
		return
	}
	ix.tree.AscendGreaterOrEqual(&keyIndex{key: key}, func(ki *keyIndex) bool {
		if len(end) > 0 && bytes.Compare(ki.key, end) >= 0 {
			return false
		}
		if e, ok := ki.at(rev); ok {
			return fn(ki.key, e)
		}
		return true
	})
}

// add appends a version with stamp st (rev must be greater than the key's existing versions).
func (ix *index) add(key []byte, e entry, st Stamp) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.addLocked(key, e, st)
}

func (ix *index) addLocked(key []byte, e entry, st Stamp) {
	ki, ok := ix.tree.Get(&keyIndex{key: key})
	if !ok {
		if e.tomb && st.IsZero() {
			return
		}
		ki = &keyIndex{key: bytes.Clone(key)}
		ix.tree.ReplaceOrInsert(ki)
	}
	ki.entries = append(ki.entries, e)
	if ki.stamp.Less(st) {
		ki.stamp = st
	}
}

// stamp returns the stamp of key's latest version or deletion (zero: none known).
func (ix *index) stamp(key []byte) Stamp {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ki, ok := ix.tree.Get(&keyIndex{key: key}); ok {
		return ki.stamp
	}
	return Stamp{}
}

// observeDeletion raises key's stamp to st without a version: a peer's deletion of a key that
// has no live version here.
func (ix *index) observeDeletion(key []byte, st Stamp) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ki, ok := ix.tree.Get(&keyIndex{key: key})
	if !ok {
		ki = &keyIndex{key: bytes.Clone(key)}
		ix.tree.ReplaceOrInsert(ki)
	}
	if ki.stamp.Less(st) {
		ki.stamp = st
	}
}

// compactChunk compacts at most limit keys starting at from, keeping for each key only the
// versions newer than rev plus the version visible at rev (unless that is a tombstone), and adds
// the kept version visible at rev to keep. Keys left with no version are dropped, or with
// retainStamps kept with their stamp only (the deletion records that hold the stamp on disk are
// kept too; see compactBackend). It returns the key to continue from (nil: done). Working in
// chunks keeps the write lock short, so that compaction never stalls requests.
//
// A kept stamp stamped before collectBefore (a wall time, see frontier.go) is dropped too.
func (ix *index) compactChunk(from []byte, rev int64, limit int, keep map[revision]struct{}, collectBefore int64) (next []byte) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	var drop []*keyIndex
	n := 0
	ix.tree.AscendGreaterOrEqual(&keyIndex{key: from}, func(ki *keyIndex) bool {
		if n == limit {
			next = ki.key
			return false
		}
		n++
		// i: the last version at or before rev.
		i := -1
		for j := len(ki.entries) - 1; j >= 0; j-- {
			if ki.entries[j].rev.main <= rev {
				i = j
				break
			}
		}
		if i < 0 {
			if len(ki.entries) == 0 && ix.retainStamps && ki.stamp.Time.Wall < collectBefore {
				drop = append(drop, ki) // a deletion that found no version here, now collectible
			}
			return true
		}
		if ki.entries[i].tomb {
			i++ // the tombstone goes too: nothing before it is visible at or after rev
		} else {
			keep[ki.entries[i].rev] = struct{}{}
		}
		if i > 0 {
			ki.entries = append(ki.entries[:0:0], ki.entries[i:]...)
		}
		if len(ki.entries) == 0 {
			if !ix.retainStamps || ki.stamp.IsZero() || ki.stamp.Time.Wall < collectBefore {
				drop = append(drop, ki)
			}
		}
		return true
	})
	for _, ki := range drop {
		ix.tree.Delete(ki)
	}
	return next
}

// keyCount returns the number of keys the index holds (live or with history).
func (ix *index) keyCount() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.tree.Len()
}
