package mvcc

import "sync"

// lessor keeps leases and the keys attached to them.
type lessor struct {
	s      *Store
	mu     sync.Mutex
	leases map[int64]*lease
}

type lease struct {
	id   int64
	keys map[string]struct{}
}

func newLessor(s *Store) *lessor { return &lessor{s: s, leases: map[int64]*lease{}} }

func (l *lessor) recover() error { return nil }

func (l *lessor) run() { defer l.s.bg.Done() }

func (l *lessor) exists(id int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.leases[id]
	return ok
}

func (l *lessor) attach(id int64, key []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ls, ok := l.leases[id]; ok {
		ls.keys[string(key)] = struct{}{}
	}
}

func (l *lessor) detach(id int64, key []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ls, ok := l.leases[id]; ok {
		delete(ls.keys, string(key))
	}
}
