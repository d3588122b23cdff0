package mvcc

import (
	"bytes"
	"sync"
	"unsafe"

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

// The index holds a record per key, and the key index is most of a member's live heap (over half
// of it with 100k keys). It is laid out so that the garbage collector has almost nothing to follow
// in it: the B-tree holds keyRec values with no pointers in them (a lookup probe's key is the only
// one, nil in stored records), key bytes live in append-only chunks (keyArena) and versions in a
// chunked slot array (versionArena) linked newest first. A pointer per key and version made each
// GC cycle's mark phase several times longer than the rest of the heap's, and requests that
// arrived meanwhile paid for it in p99 (docs/benchmarks/kv-single-node.md).

// keyRec is one key in the tree: where its bytes are, its newest version (0: none), and the
// stamp of its latest version or deletion (replication's last-writer-wins register). A record may
// have no versions and only a stamp: a deletion from a peer that found no live version, which must
// still win over older puts that arrive after it.
type keyRec struct {
	// probe points at a lookup probe's key (its length in ref.n); nil in records the tree
	// holds. A []byte would make every record 16 bytes larger for a field only probes use.
	probe unsafe.Pointer
	ref   keyRef
	head  uint32
	stamp Stamp
}

// index maps keys to their versions; it is etcd's kvindex. It holds every version that Pebble
// holds, including versions newer than the store's visible revision (written, not yet durable):
// readers pass the revision they read at and never see those.
type index struct {
	mu   sync.RWMutex
	tree *btree.BTreeG[keyRec]
	keys keyArena
	vers versionArena
	// retainStamps keeps a key's stamp when compaction removes its last version (a member of a
	// cluster: a peer's older put may still arrive and must lose to the deletion).
	retainStamps bool
}

func newIndex() *index {
	ix := &index{}
	ix.tree = btree.NewG(32, func(a, b keyRec) bool { return bytes.Compare(ix.keyOf(&a), ix.keyOf(&b)) < 0 })
	return ix
}

// keyOf returns a record's key. Stored keys' bytes are never overwritten, so callers may keep the
// slice after the lock is released.
func (ix *index) keyOf(r *keyRec) []byte {
	if r.probe != nil {
		return unsafe.Slice((*byte)(r.probe), r.ref.n)
	}
	return ix.keys.bytes(r.ref)
}

// probe returns a record that compares as key, for lookups; it is valid while key is.
func probe(key []byte) keyRec {
	return keyRec{probe: unsafe.Pointer(unsafe.SliceData(key)), ref: keyRef{n: uint32(len(key))}}
}

func (ix *index) find(key []byte) (keyRec, bool) {
	return ix.tree.Get(probe(key))
}

// at returns r's version visible at revision rev, if the key exists then.
func (ix *index) at(r *keyRec, rev int64) (entry, bool) {
	for id := r.head; id != 0; {
		n := ix.vers.node(id)
		if n.rev.main <= rev {
			return n.entry(), !n.tomb
		}
		id = n.prev
	}
	return entry{}, false
}

// latest returns r's newest version (a tombstone included); ok is false when it has none.
func (ix *index) latest(r *keyRec) (e entry, ok bool) {
	if r.head == 0 {
		return entry{}, false
	}
	return ix.vers.node(r.head).entry(), true
}

// get returns key's version visible at rev.
func (ix *index) get(key []byte, rev int64) (entry, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	r, ok := ix.find(key)
	if !ok {
		return entry{}, false
	}
	return ix.at(&r, rev)
}

// has reports whether the index still holds version rev of key.
func (ix *index) has(key []byte, rev revision) bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	r, ok := ix.find(key)
	if !ok {
		return false
	}
	for id := r.head; id != 0; {
		n := ix.vers.node(id)
		if n.rev == rev {
			return true
		}
		id = n.prev
	}
	return false
}

// visit calls fn with every key in [key, end) that exists at rev, in key order, until fn returns
// false. end == nil means the single key; len(end) == 0 (not nil) means no upper bound. fn runs
// under the index's read lock: it must not block.
func (ix *index) visit(key, end []byte, rev int64, fn func(key []byte, e entry) bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if end == nil {
		if r, ok := ix.find(key); ok {
			if e, ok := ix.at(&r, rev); ok {
				fn(ix.keyOf(&r), e)
			}
		}
		return
	}
	if len(end) > 0 && bytes.Compare(key, end) >= 0 {
		return
	}
	ix.tree.AscendGreaterOrEqual(probe(key), func(r keyRec) bool {
		k := ix.keyOf(&r)
		if len(end) > 0 && bytes.Compare(k, end) >= 0 {
			return false
		}
		if e, ok := ix.at(&r, rev); ok {
			return fn(k, e)
		}
		return true
	})
}

// ascendLatest calls fn with every key the index holds, in key order, with its stamp and newest
// version (has is false for a key with only a stamp), until fn returns false. fn runs under the
// index's read lock: it must not block.
func (ix *index) ascendLatest(fn func(key []byte, st Stamp, e entry, has bool) bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	ix.tree.Ascend(func(r keyRec) bool {
		e, has := ix.latest(&r)
		return fn(ix.keyOf(&r), r.stamp, e, has)
	})
}

// add appends a version with stamp st (rev must be greater than the key's existing versions).
func (ix *index) add(key []byte, e entry, st Stamp) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.addLocked(key, e, st)
}

func (ix *index) addLocked(key []byte, e entry, st Stamp) {
	r, ok := ix.find(key)
	if !ok {
		if e.tomb && st.IsZero() {
			return
		}
		r = keyRec{ref: ix.keys.add(key)}
	}
	r.head = ix.vers.add(e, r.head)
	if r.stamp.Less(st) {
		r.stamp = st
	}
	ix.tree.ReplaceOrInsert(r)
}

// stamp returns the stamp of key's latest version or deletion (zero: none known).
func (ix *index) stamp(key []byte) Stamp {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if r, ok := ix.find(key); ok {
		return r.stamp
	}
	return Stamp{}
}

// observeDeletion raises key's stamp to st without a version: a peer's deletion of a key that
// has no live version here.
func (ix *index) observeDeletion(key []byte, st Stamp) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	r, ok := ix.find(key)
	if ok && !r.stamp.Less(st) {
		return
	}
	if !ok {
		r = keyRec{ref: ix.keys.add(key)}
	}
	r.stamp = st
	ix.tree.ReplaceOrInsert(r)
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
	// The tree cannot change during Ascend: records to drop or rewrite are applied after it.
	var drop, update []keyRec
	var moved []keyRef // old places of moved keys: released once the tree holds their new ones
	n := 0
	ix.tree.AscendGreaterOrEqual(probe(from), func(r keyRec) bool {
		if n == limit {
			next = ix.keyOf(&r)
			return false
		}
		n++
		gone, changed := ix.compactKey(&r, rev, keep, collectBefore)
		if gone {
			drop = append(drop, r)
			return true
		}
		// A key in a mostly dead chunk moves to the current one, so that the chunk is freed
		// once the last of its survivors has moved. Compaction visits every key, so a chunk
		// stays sparse until the next compaction at most (its survivors may be visited before
		// the deletions that made it sparse).
		if ix.keys.sparse(r.ref.chunk) {
			moved = append(moved, r.ref)
			r.ref = ix.keys.add(ix.keys.bytes(r.ref))
			changed = true
		}
		if changed {
			update = append(update, r)
		}
		return true
	})
	for _, r := range update {
		ix.tree.ReplaceOrInsert(r) // equal keys: replaces the record in place
	}
	for _, ref := range moved {
		ix.keys.release(ref)
	}
	for _, r := range drop {
		ix.tree.Delete(r)
		ix.keys.release(r.ref)
	}
	return next
}

// compactKey drops r's versions that compaction at rev removes, recording the one it keeps in
// keep. It reports whether the key goes altogether, and whether r changed (its head).
func (ix *index) compactKey(r *keyRec, rev int64, keep map[revision]struct{}, collectBefore int64) (gone, changed bool) {
	// cut: the last version at or before rev; newer: the version after it (0: cut is the head).
	var cut, newer uint32
	for id := r.head; id != 0; id = ix.vers.node(id).prev {
		if ix.vers.node(id).rev.main <= rev {
			cut = id
			break
		}
		newer = id
	}
	if cut == 0 {
		// With no version at all, a deletion that found no version here: gone once collectible.
		return r.head == 0 && ix.retainStamps && r.stamp.Time.Wall < collectBefore, false
	}
	c := ix.vers.node(cut)
	release := c.prev // everything before cut goes
	if c.tomb {
		release = cut // the tombstone goes too: nothing before it is visible at or after rev
	} else {
		keep[c.rev] = struct{}{}
	}
	if release == 0 {
		return false, false
	}
	if release == cut {
		if newer == 0 {
			r.head, changed = 0, true
		} else {
			ix.vers.node(newer).prev = 0
		}
	} else {
		c.prev = 0
	}
	ix.vers.releaseChain(release)
	if r.head == 0 && (!ix.retainStamps || r.stamp.IsZero() || r.stamp.Time.Wall < collectBefore) {
		return true, changed
	}
	return false, changed
}

// keyCount returns the number of keys the index holds (live or with history).
func (ix *index) keyCount() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.tree.Len()
}

// keyChunkSize is the size of a key chunk; a key longer than a quarter of it gets a chunk of its
// own, freed with the key.
const keyChunkSize = 64 << 10

// keyRef locates a key's bytes in the key arena.
type keyRef struct{ chunk, off, n uint32 }

// keyArena holds keys' bytes in append-only chunks. Bytes are never overwritten once written, so a
// key slice handed out stays valid even after its chunk is dropped (the garbage collector keeps
// the chunk while the slice lives). A chunk is dropped when none of its keys is live.
type keyArena struct {
	chunks [][]byte // nil: a dropped chunk, its slot free for reuse
	live   []int    // live key bytes per chunk
	free   []uint32 // slots of dropped chunks
	tail   uint32   // 1 + the chunk new keys go to (0: none yet)
}

func (a *keyArena) bytes(r keyRef) []byte {
	if r.n == 0 {
		return nil
	}
	return a.chunks[r.chunk][r.off : r.off+r.n : r.off+r.n]
}

// add copies key into the arena.
func (a *keyArena) add(key []byte) keyRef {
	n := len(key)
	if n > keyChunkSize/4 {
		c := a.slot(make([]byte, 0, n))
		a.chunks[c] = append(a.chunks[c], key...)
		a.live[c] = n
		return keyRef{chunk: c, n: uint32(n)}
	}
	if a.tail == 0 || len(a.chunks[a.tail-1])+n > keyChunkSize {
		if old := a.tail; old != 0 && a.live[old-1] == 0 {
			a.drop(old - 1)
		}
		a.tail = a.slot(make([]byte, 0, keyChunkSize)) + 1
	}
	c := a.tail - 1
	off := len(a.chunks[c])
	a.chunks[c] = append(a.chunks[c], key...)
	a.live[c] += n
	return keyRef{chunk: c, off: uint32(off), n: uint32(n)}
}

// slot stores a new chunk and returns its number.
func (a *keyArena) slot(b []byte) uint32 {
	if k := len(a.free); k > 0 {
		c := a.free[k-1]
		a.free = a.free[:k-1]
		a.chunks[c], a.live[c] = b, 0
		return c
	}
	a.chunks = append(a.chunks, b)
	a.live = append(a.live, 0)
	return uint32(len(a.chunks) - 1)
}

// release marks a key's bytes dead, dropping its chunk when nothing in it is live (the chunk
// still being filled is dropped when it is replaced, if nothing in it is live then).
func (a *keyArena) release(r keyRef) {
	if r.n == 0 {
		return
	}
	a.live[r.chunk] -= int(r.n)
	if a.live[r.chunk] == 0 && r.chunk+1 != a.tail {
		a.drop(r.chunk)
	}
}

func (a *keyArena) drop(c uint32) {
	a.chunks[c] = nil
	a.free = append(a.free, c)
}

// sparse reports whether chunk c is a full shared chunk with under a quarter of it live.
func (a *keyArena) sparse(c uint32) bool {
	return c+1 != a.tail && cap(a.chunks[c]) == keyChunkSize && a.live[c] < keyChunkSize/4
}

// versionChunkBits sets the number of versions per version chunk (4096).
const versionChunkBits = 12

// version is an entry in the arena, flattened so that the link to the key's next older version
// (0: none) fills what would be the entry's padding: 48 bytes, not 56.
type version struct {
	rev                    revision
	create, version, lease int64
	prev                   uint32
	tomb                   bool
}

func (v *version) entry() entry {
	return entry{rev: v.rev, create: v.create, version: v.version, lease: v.lease, tomb: v.tomb}
}

// versionArena holds versions in fixed-size chunks, addressed by ids from 1; released versions
// are reused, linked through prev. Chunks never move, so growing never copies the index.
type versionArena struct {
	chunks [][]version
	used   uint32 // ids handed out so far, released ones included
	free   uint32 // a released id (0: none)
}

func (a *versionArena) node(id uint32) *version {
	id--
	return &a.chunks[id>>versionChunkBits][id&(1<<versionChunkBits-1)]
}

// add stores e with prev as its older version and returns its id.
func (a *versionArena) add(e entry, prev uint32) uint32 {
	id := a.free
	if id != 0 {
		a.free = a.node(id).prev
	} else {
		if a.used == uint32(len(a.chunks))<<versionChunkBits {
			a.chunks = append(a.chunks, make([]version, 1<<versionChunkBits))
		}
		a.used++
		id = a.used
	}
	*a.node(id) = version{rev: e.rev, create: e.create, version: e.version, lease: e.lease, prev: prev, tomb: e.tomb}
	return id
}

// releaseChain releases id and every older version linked from it.
func (a *versionArena) releaseChain(id uint32) {
	for id != 0 {
		n := a.node(id)
		next := n.prev
		*n = version{prev: a.free}
		a.free = id
		id = next
	}
}
