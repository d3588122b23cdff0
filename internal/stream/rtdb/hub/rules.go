package hub

import (
	"context"
	"strings"

	"github.com/continuum-project/continuum/internal/stream/rtdb/store"
)

// RulesChanged returns a channel closed when the stored rules of database ns change after
// this call: replaced or removed by PUT /.settings/rules.json on any server of the same kv
// (the hub's watch sees the key), or possibly changed (the watch failed and restarted, so a
// change may have been missed). A listener takes it before judging its read, and judges again
// when it is closed: a change the judgement did not see closes the channel taken before it.
//
// The channel is closed when the hub dispatches the revision of the change, before it queues
// any event of a later revision: a reader that takes events and then finds the channel open
// knows that no rules change precedes them (an event's revision is one the hub applied, except
// a subscription's first put, read at a revision the watch may not have reached yet). The
// hub's watch is started if it was not (so a change right after the call is seen).
func (h *Hub) RulesChanged(ctx context.Context, ns string) (<-chan struct{}, error) {
	if err := h.start(ctx); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	ch := h.rulesCh[ns]
	if ch == nil {
		if h.rulesCh == nil {
			h.rulesCh = map[string]chan struct{}{}
		}
		ch = make(chan struct{})
		h.rulesCh[ns] = ch
	}
	return ch, nil
}

// rulesChangedLocked closes the rules channel of ns (every namespace's when all is set); the
// next RulesChanged makes a new one. The caller holds h.mu.
func (h *Hub) rulesChangedLocked(ns string, all bool) {
	for n, ch := range h.rulesCh {
		if all || n == ns {
			close(ch)
			delete(h.rulesCh, n)
		}
	}
}

// rulesNamespace is the namespace whose rules key k is, if it is one.
func (h *Hub) rulesNamespace(k string) (string, bool) {
	return strings.CutPrefix(k, store.RulesKeyPrefix(h.cfg.Prefix))
}
