package tree

import (
	"crypto/rand"
	"sync"
	"time"
)

// pushChars is Firebase's push-id alphabet, in ASCII order so that ids sort as strings.
const pushChars = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"

// PushIDs generates Firebase's 20-character push ids: 8 characters of the time in ms (base 64,
// most significant first), then 12 random characters; ids made within one millisecond reuse the
// random part incremented by one, so ids from one generator sort in creation order. A clock that
// steps back keeps the last time, so the order holds then too.
type PushIDs struct {
	mu     sync.Mutex
	lastMs int64
	rnd    [12]byte
	now    func() time.Time
}

// NewPushIDs returns a generator reading now (time.Now when nil).
func NewPushIDs(now func() time.Time) *PushIDs {
	if now == nil {
		now = time.Now
	}
	return &PushIDs{now: now}
}

// Next returns the next push id.
func (g *PushIDs) Next() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	ms := g.now().UnixMilli()
	if ms <= g.lastMs {
		ms = g.lastMs
		i := 11
		for ; i >= 0 && g.rnd[i] == 63; i-- {
			g.rnd[i] = 0
		}
		if i >= 0 {
			g.rnd[i]++
		} else { // 64^12 ids in one ms: move to the next ms
			ms++
			g.newRandom()
		}
	} else {
		g.newRandom()
	}
	g.lastMs = ms
	var id [20]byte
	t := ms
	for i := 7; i >= 0; i-- {
		id[i] = pushChars[t%64]
		t /= 64
	}
	for i, r := range g.rnd {
		id[8+i] = pushChars[r]
	}
	return string(id[:])
}

func (g *PushIDs) newRandom() {
	_, _ = rand.Read(g.rnd[:])
	for i := range g.rnd {
		g.rnd[i] &= 63
	}
}
