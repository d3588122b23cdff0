package shareddata

import (
	"context"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/backoff"
)

// Cursor is a position in a subscription's history, taken from Message.Cursor: it names one
// message, and subscribing from it to the same channels delivers exactly what came after it.
// The empty cursor means "from now". etcd and kv cursors are "<revision>.<index>" (a revision
// of the member the client talks to, and the event's index in it: one SetAndPublish on
// several channels is one revision); Redis cursors are "<stream ID>.<publication number>",
// one per channel ("<channel>=<id>.<n>,...") for a subscription to several.
type Cursor string

// Message is one delivered publication.
type Message struct {
	// Channel is the SDL channel (Subscribe); empty for metrics and control.
	Channel string
	// Name is the producer (metrics) or the consumer (control) that published it.
	Name  string
	Value []byte
	// Cursor is this message's position: subscribing from it (to the same channels)
	// delivers exactly what came after it.
	Cursor Cursor
	// Gap marks a message without a value: publications between the previous message and
	// the next one are no longer held by the backend (etcd compacted them, a Redis stream
	// trimmed them) and were not delivered.
	Gap bool
	// Received is when the subscriber got it (for latency measurements).
	Received time.Time
}

// Subscription delivers messages on C until Close, the Store's Close, or the context given
// to Subscribe ends; then C is closed. It survives connection loss: it reconnects with
// backoff and resumes after the last message it delivered, so delivery is at least once and
// in publication order, with Gap messages where history was lost.
type Subscription struct {
	// C delivers messages; it is closed when the subscription ends.
	C <-chan Message

	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	err    error
	// reconnects counts resumptions after an error (for tests and metrics).
	reconnects int
}

// subscribe starts run in a goroutine with a channel it sends on; send returns false once the
// subscription is closing.
func subscribe(parent context.Context, run func(ctx context.Context, s *Subscription, send func(Message) bool) error) *Subscription {
	ctx, cancel := context.WithCancel(parent)
	out := make(chan Message, 64)
	s := &Subscription{C: out, cancel: cancel, done: make(chan struct{})}
	send := func(m Message) bool {
		m.Received = time.Now()
		select {
		case out <- m:
			return true
		case <-ctx.Done():
			return false
		}
	}
	go func() {
		defer close(s.done)
		defer close(out)
		err := run(ctx, s, send)
		if ctx.Err() == nil {
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
		}
	}()
	return s
}

// Close ends the subscription and waits for its goroutine. It returns the error that ended
// the subscription before Close, if any.
func (s *Subscription) Close() error {
	s.cancel()
	<-s.done
	return s.Err()
}

// Done is closed when the subscription has ended.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Err is the error that ended the subscription (nil while it runs or after Close).
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Reconnects is how many times the subscription resumed after losing its stream.
func (s *Subscription) Reconnects() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reconnects
}

func (s *Subscription) reconnected() {
	s.mu.Lock()
	s.reconnects++
	s.mu.Unlock()
}

// reconnectBackoff is the wait before a subscription's reconnect attempt: 50 ms doubling to 2 s,
// back to 50 ms once the stream delivers again.
func reconnectBackoff() backoff.Backoff {
	return backoff.Backoff{Min: 50 * time.Millisecond, Max: 2 * time.Second}
}
