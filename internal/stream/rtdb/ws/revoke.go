package ws

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/continuum-project/continuum/internal/stream/rtdb/auth"
)

// Listens are judged by the rules when they start, and again whenever what the judgement
// depended on changes: the connection's caller ("auth", "gauth", "unauth", the ID token's
// expiry) or the database's rules (PUT /.settings/rules.json, seen through the hub's watch).
// A listen the rules no longer allow is cancelled as Firebase cancels it: a "c" push naming its
// path (and, for a query, the query), on which the SDK drops the listen and calls its cancel
// callback with permission_denied; nothing of it is sent afterwards.
//
// Exactness: from the moment the change is known (markAuthDirty, or the hub closing the rules
// channel, which it does before queueing any event of a later revision) until the guard has
// judged every listen again, takeAllLocked leaves the listens' events in the hub, so no event
// reaches a caller whose permission is being reconsidered. "auth"/"unauth" wait for the
// judgement before their "ok", so the cancels come first. An event of a revision the hub has
// applied comes after every rules change up to it was seen; a listen's first value, read at a
// revision the watch may not have reached yet, is held (takeAllLocked) while the guard waits
// for the hub to reach it (Hub.WaitApplied), so a rules change just before that read is seen
// before the value is sent.

// markAuthDirty records that the caller changed and wakes the guard. Called after the change,
// with authn.mu held (the lock order is authn.mu, then fwdMu).
func (c *wsConn) markAuthDirty() {
	c.fwdMu.Lock()
	c.judgeDue = true
	c.epoch++
	c.fwdMu.Unlock()
	c.signalGuard()
}

// signalGuard wakes the guard without waiting.
func (c *wsConn) signalGuard() {
	select {
	case c.guardSig <- struct{}{}:
	default:
	}
}

// joinLocked adds a new listen l, judged by itself after the connection's epoch was epoch: if
// the caller or the rules changed since (the epoch moved, or rulesCh is closed), a round that
// did not see l may have judged the others, so a judgement of all is made due. The caller
// holds fwdMu.
func (c *wsConn) joinLocked(l *wsListen, epoch uint64) {
	c.fwd[l] = struct{}{}
	if c.epoch != epoch || c.heldLocked() {
		c.judgeDue = true
		c.signalGuard()
	}
}

// heldLocked says whether the listens' events must wait for a judgement. The caller holds fwdMu.
func (c *wsConn) heldLocked() bool {
	if c.judgeDue {
		return true
	}
	select {
	case <-c.rulesCh:
		return true
	default:
		return false
	}
}

// recheckListens has the guard judge every listen again and waits until it has (or the
// connection closes): what the reading goroutine calls after changing the caller.
func (c *wsConn) recheckListens() {
	done := make(chan struct{})
	select {
	case c.recheck <- done:
	case <-c.closing:
		return
	}
	select {
	case <-done:
	case <-c.closing:
	}
}

// guard is the goroutine that judges the listens again when the rules or the caller change.
// It ends when the connection closes.
func (c *wsConn) guard() {
	for {
		c.fwdMu.Lock()
		rules := c.rulesCh
		c.fwdMu.Unlock()
		var done chan struct{}
		select {
		case <-c.closing:
			return
		case <-rules:
		case <-c.guardSig:
		case done = <-c.recheck:
		}
		if err := c.guardRound(done != nil); err != nil {
			// Neither allowed nor denied (the kv did not answer): the connection ends, so the
			// SDK reconnects and listens again, judged afresh, rather than keep reading unjudged.
			select {
			case <-c.closing:
			default:
				c.log.Warn("websocket: cannot judge the listens again; closing the connection", "err", err)
			}
			c.close()
		}
		if done != nil {
			close(done)
		}
	}
}

// guardRound waits for the revision held first values wait for (takeAllLocked), then judges
// every listen again when asked to (judge) or when a judgement is due (heldLocked), or else
// takes the events that were held.
func (c *wsConn) guardRound(judge bool) error {
	c.fwdMu.Lock()
	rev := c.waitRev
	c.fwdMu.Unlock()
	if rev > 0 {
		ctx, cancel := context.WithTimeout(c.s.ws.ctx, c.s.cfg.RequestTimeout)
		err := c.s.hub.WaitApplied(ctx, rev)
		cancel()
		if err != nil {
			return err
		}
	}
	c.fwdMu.Lock()
	if c.waitRev == rev {
		c.waitRev = 0 // a later one set meanwhile signalled the guard again
	}
	if !judge && !c.heldLocked() {
		c.takeAllLocked()
		c.fwdMu.Unlock()
		return nil
	}
	c.fwdMu.Unlock()
	return c.judgeListens()
}

// judgeListens judges every listen of the connection as its caller is now, under the rules in
// force now, cancels those denied, and lets the others' events flow again.
func (c *wsConn) judgeListens() error {
	ctx, cancel := context.WithTimeout(c.s.ws.ctx, c.s.cfg.RequestTimeout)
	defer cancel()
	// The rules channel is taken before the judgement, and judgeDue cleared before the caller
	// is read: a change during the judgement closes the new channel or sets judgeDue again,
	// and the listens stay held until the next round.
	rules, err := c.s.hub.RulesChanged(ctx, c.ns)
	if err != nil {
		return err
	}
	c.fwdMu.Lock()
	c.judgeDue = false
	ls := make([]*wsListen, 0, len(c.fwd))
	for l := range c.fwd {
		ls = append(ls, l)
	}
	c.fwdMu.Unlock()
	ctx = c.withAuth(ctx)
	var denied []*wsListen
	for _, l := range ls {
		switch err := c.s.st.ReadAllowedLazy(ctx, c.ns, l.path); {
		case errors.Is(err, auth.ErrPermissionDenied):
			denied = append(denied, l)
		case err != nil:
			return err
		}
	}
	c.fwdMu.Lock()
	for _, l := range denied {
		if l.stopped {
			continue
		}
		l.stopped, l.held = true, nil
		delete(c.fwd, l)
		if !l.queued { // not acknowledged yet: its listen request answers permission_denied
			l.queued, l.denied = true, true
			close(l.first)
			continue
		}
		c.sendBytes(l.revokedMessage())
	}
	c.rulesCh = rules
	c.epoch++
	c.takeAllLocked()
	c.fwdMu.Unlock()
	for _, l := range denied {
		l.sub.Close()
	}
	return nil
}

// revokedMessage is the "c" push that cancels l: {"a":"c","b":{"p":<path>[,"q":[<query>]]}}.
// The SDK (PersistentConnection.onListenRevoked_) finds the listen by its path and, for a
// query, by the unique key of each object of q, which is the query object the listen sent.
func (l *wsListen) revokedMessage() []byte {
	b := map[string]any{"p": "/" + strings.Join(l.path, "/")}
	if l.tag != nil && len(l.q) > 0 {
		b["q"] = []json.RawMessage{l.q}
	}
	return encodeMsg(map[string]any{"t": "d", "d": map[string]any{"a": "c", "b": b}})
}
