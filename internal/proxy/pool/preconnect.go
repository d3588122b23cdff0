package pool

import (
	"context"
	"net"
	"sync"
	"time"
)

// Connections dialed ahead of need (preconnecting, as Envoy's preconnect_policy does).
//
// A request that needs a new connection to an instance waits an extra round trip for the TCP
// handshake: 40 ms to s4 in the QEdgeProxy set-up, whose answers take 59 ms against an 80 ms
// limit. Requests need new connections exactly when an instance starts to take traffic (the
// first requests of a service, an instance rejoining the pool) and when its share grows. The
// latency estimate does not charge that wait to the instance (attemptResult.lat), but the
// client still pays it. So for the qos strategy the service's transport dials through spares:
//   - a TCP probe's connection is kept as a spare rather than closed, so the first request
//     after a probe does not wait for a handshake;
//   - while an instance is in the pool, sparesPerInstance spares are kept dialed: when the
//     transport takes one, another is dialed at once;
//   - when the transport needs a connection and none is ready but one is being dialed, it
//     dials too and takes whichever is ready first (the earlier dial usually); the other
//     one stays as a spare, since demand just outgrew the connections.
//
// A spare is used within spareMaxAge and only if the server has neither closed it nor
// written to it (connUsable): a connection the server dropped would fail the request it
// carries, and the transport does not retry a request on a connection it has just dialed.

const (
	// spareMaxAge bounds how long a spare waits unused. Servers close connections on which
	// no request arrives: Go's http.Server after ReadHeaderTimeout (10 s in the proxy and
	// in http-echo, a common choice), Apache's mod_reqtimeout after 20 s.
	spareMaxAge = 5 * time.Second
	// sparesPerInstance is how many spares are kept ready for each pool member.
	sparesPerInstance = 1
	// maxSparesPerAddr bounds one address's spares (probes and races add to them).
	maxSparesPerAddr = 4
)

type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

type spareConn struct {
	C  net.Conn
	at time.Time
}

type spareSlot struct {
	Idle    []spareConn // oldest first
	want    int         // spares to keep ready (0: only what probes leave)
	dialing int         // spares being dialed
	arrived chan struct{}
}

// spares holds one service's spare connections by address. Its background dials end when
// close is called, which waits for them.
type spares struct {
	Dial   DialFunc
	maxAge time.Duration
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	Mu     sync.Mutex
	Slots  map[string]*spareSlot
	closed bool
}

func newSpares(dial DialFunc, maxAge time.Duration) *spares {
	ctx, cancel := context.WithCancel(context.Background())
	return &spares{Dial: dial, maxAge: maxAge, ctx: ctx, cancel: cancel, Slots: map[string]*spareSlot{}}
}

func (sp *spares) slotLocked(addr string) *spareSlot {
	sl := sp.Slots[addr]
	if sl == nil {
		sl = &spareSlot{arrived: make(chan struct{})}
		sp.Slots[addr] = sl
	}
	return sl
}

// addLocked keeps c as a spare of sl and wakes the dials racing for one.
func (sp *spares) addLocked(addr string, sl *spareSlot, c net.Conn) {
	if sp.closed || sp.Slots[addr] != sl || len(sl.Idle) >= maxSparesPerAddr {
		c.Close()
		return
	}
	sl.Idle = append(sl.Idle, spareConn{c, time.Now()})
	close(sl.arrived)
	sl.arrived = make(chan struct{})
}

// put keeps c, a connection to addr nothing has used, as a spare. An address that wants no
// spares (its instance is out of the pool, probed every interval) keeps only the newest: it
// is there for the first request if the instance rejoins.
func (sp *spares) put(addr string, c net.Conn) {
	sp.Mu.Lock()
	defer sp.Mu.Unlock()
	if sp.closed {
		c.Close()
		return
	}
	sl := sp.slotLocked(addr)
	if sl.want == 0 {
		for _, s := range sl.Idle {
			s.C.Close()
		}
		clear(sl.Idle)
		sl.Idle = sl.Idle[:0]
	}
	sp.addLocked(addr, sl, c)
}

// setWant sets how many spares to keep ready for addr (0 when its instance leaves the pool;
// the spares it has expire).
func (sp *spares) setWant(addr string, n int) {
	sp.Mu.Lock()
	defer sp.Mu.Unlock()
	if sp.closed || (n == 0 && sp.Slots[addr] == nil) {
		return
	}
	sl := sp.slotLocked(addr)
	sl.want = n
	sp.refillLocked(addr, sl)
}

// forget closes addr's spares (its instance is gone).
func (sp *spares) forget(addr string) {
	sp.Mu.Lock()
	defer sp.Mu.Unlock()
	if sl := sp.Slots[addr]; sl != nil {
		for _, s := range sl.Idle {
			s.C.Close()
		}
		delete(sp.Slots, addr)
	}
}

// refillLocked dials spares until addr has as many ready or being dialed as it wants. A
// failed dial is not retried here: the next take, setWant or sweep tries again, so an
// unreachable instance costs a dial per probe interval at most (and it soon leaves the pool).
func (sp *spares) refillLocked(addr string, sl *spareSlot) {
	for !sp.closed && len(sl.Idle)+sl.dialing < sl.want {
		sl.dialing++
		sp.wg.Add(1)
		go func() {
			defer sp.wg.Done()
			c, err := sp.Dial(sp.ctx, "tcp", addr)
			sp.Mu.Lock()
			defer sp.Mu.Unlock()
			sl.dialing--
			if err == nil {
				sp.addLocked(addr, sl, c)
			}
		}()
	}
}

// expireLocked closes sl's spares older than maxAge.
func (sp *spares) expireLocked(sl *spareSlot, now time.Time) {
	keep := sl.Idle[:0]
	for _, s := range sl.Idle {
		if now.Sub(s.at) < sp.maxAge {
			keep = append(keep, s)
		} else {
			s.C.Close()
		}
	}
	clear(sl.Idle[len(keep):])
	sl.Idle = keep
}

// sweep closes expired spares and tops up the ones wanted; the maintainer calls it.
func (sp *spares) sweep() {
	sp.Mu.Lock()
	defer sp.Mu.Unlock()
	now := time.Now()
	for addr, sl := range sp.Slots {
		sp.expireLocked(sl, now)
		sp.refillLocked(addr, sl)
		if len(sl.Idle) == 0 && sl.want == 0 && sl.dialing == 0 {
			delete(sp.Slots, addr)
		}
	}
}

// take returns a usable spare for addr, or nil, and starts dialing its replacement.
func (sp *spares) take(addr string) net.Conn {
	for {
		sp.Mu.Lock()
		sl := sp.Slots[addr]
		var c net.Conn
		if sl != nil {
			sp.expireLocked(sl, time.Now())
			if n := len(sl.Idle); n > 0 {
				c = sl.Idle[n-1].C // the newest is the likeliest to be open
				sl.Idle[n-1] = spareConn{}
				sl.Idle = sl.Idle[:n-1]
				sp.refillLocked(addr, sl)
			}
		}
		sp.Mu.Unlock()
		if c == nil || connUsable(c) {
			return c
		}
		c.Close()
	}
}

// dialContext is the transport's dialer: a spare if one is ready, else a race with a spare
// being dialed, else a plain dial.
func (sp *spares) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if c := sp.take(addr); c != nil {
		return c, nil
	}
	sp.Mu.Lock()
	sl := sp.Slots[addr]
	// A spare may have arrived since take looked: race then too, race takes it first.
	racing := !sp.closed && sl != nil && (sl.dialing > 0 || len(sl.Idle) > 0)
	if racing {
		sp.wg.Add(1) // the racing dial, below; under mu so that close cannot be waiting yet
	}
	sp.Mu.Unlock()
	if !racing {
		return sp.Dial(ctx, network, addr)
	}
	return sp.race(ctx, network, addr)
}

// race dials addr while a spare is being dialed for it and returns the first connection
// ready; if that is the spare, its own connection becomes a spare when it is ready. The
// caller has added the dial to sp.wg.
func (sp *spares) race(ctx context.Context, network, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	own := make(chan result, 1)
	var mu sync.Mutex // orders the dial's delivery with the caller giving up on it
	abandoned := false
	go func() {
		defer sp.wg.Done()
		c, err := sp.Dial(ctx, network, addr)
		mu.Lock()
		defer mu.Unlock()
		if !abandoned {
			own <- result{c, err}
		} else if err == nil {
			sp.put(addr, c)
		}
	}()
	for {
		// Read arrived before looking for a spare, so that one arriving in between wakes us.
		var arrived chan struct{}
		sp.Mu.Lock()
		if sl := sp.Slots[addr]; sl != nil && sl.dialing > 0 {
			arrived = sl.arrived
		}
		sp.Mu.Unlock()
		if c := sp.take(addr); c != nil {
			mu.Lock()
			abandoned = true
			select {
			case r := <-own:
				if r.err == nil {
					sp.put(addr, r.c)
				}
			default:
			}
			mu.Unlock()
			return c, nil
		}
		select {
		case r := <-own:
			return r.c, r.err
		case <-arrived: // nil when no spare is being dialed any more: wait for our own
		}
	}
}

// close closes every spare and waits for the dials under way.
func (sp *spares) close() {
	sp.Mu.Lock()
	sp.closed = true
	for addr, sl := range sp.Slots {
		for _, s := range sl.Idle {
			s.C.Close()
		}
		delete(sp.Slots, addr)
	}
	sp.Mu.Unlock()
	sp.cancel()
	sp.wg.Wait()
}
