package pace

import (
	"context"
	"fmt"
	"time"

	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/shareddata"
)

type consumer struct {
	cfg Config
	st  shareddata.Store
	rep *Report
	n   int64 // events processed, for alternating consistencies
}

// fill makes the state queue exactly capacity entries of the metrics size, as a consumer
// that has run for a while has (the seed's 1 MB state), before anything is measured.
func (c *consumer) fill(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := c.st.StateClear(ctx, c.cfg.ID); err != nil {
		return fmt.Errorf("clear state of %s: %w", c.cfg.ID, err)
	}
	filler := encode(header{kind: 'm', published: time.Unix(0, 0)}, c.cfg.MetricsSize)
	n := int64(c.cfg.capacity())
	for i := int64(0); i < n; i++ {
		if err := c.st.StatePut(ctx, c.cfg.ID, i, filler); err != nil {
			return fmt.Errorf("fill state of %s: %w", c.cfg.ID, err)
		}
	}
	if err := c.st.StateSetIndices(ctx, c.cfg.ID, n, 0); err != nil {
		return fmt.Errorf("fill state of %s: %w", c.cfg.ID, err)
	}
	return nil
}

// run handles the group's metrics one at a time, in delivery order, until ctx ends.
func (c *consumer) run(ctx context.Context, sess *loadgen.Session) error {
	sub, err := c.st.SubscribeMetrics(ctx, c.cfg.Group, "")
	if err != nil {
		return err
	}
	defer func() {
		sub.Close()
		c.rep.Reconnects = sub.Reconnects()
	}()
	if c.cfg.OnReady != nil {
		c.cfg.OnReady()
	}
	for {
		var m shareddata.Message
		var ok bool
		select {
		case <-ctx.Done():
			return ctx.Err()
		case m, ok = <-sub.C:
		}
		if !ok {
			return sub.Err()
		}
		if m.Gap {
			c.rep.Gaps++
			continue
		}
		h, err := decode(m.Value)
		if err != nil || h.kind != 'm' {
			c.rep.BadValues++
			continue
		}
		c.rep.Delivered++
		sess.Observe(OpNotify, m.Received.Sub(h.published), nil)
		start := time.Now()
		if err := c.process(ctx, sess, m, h); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			continue
		}
		c.rep.Processed++
		sess.Observe(OpProcess, time.Since(start), nil)
	}
}

// process is the callback of seeds/000 §4.2 for one metrics publication.
func (c *consumer) process(ctx context.Context, sess *loadgen.Session, m shareddata.Message, h header) error {
	cfg, id := c.cfg, c.cfg.ID
	op := func(name string, f func(ctx context.Context) error) error {
		return timed(ctx, sess, cfg.Timeout, name, f)
	}
	if cfg.Mode == ModeAtomic {
		if err := op(OpPush, func(octx context.Context) error {
			_, err := c.st.StatePush(octx, id, cfg.capacity(), m.Value)
			return err
		}); err != nil {
			return err
		}
	} else {
		get, read := OpGetLin, shareddata.WithConsistency(shareddata.Linearizable)
		if cfg.Consistency == ReadSerializable || cfg.Consistency == ReadBoth && c.n%2 == 1 {
			get, read = OpGetSer, shareddata.WithConsistency(shareddata.Serializable)
		}
		c.n++
		// (1) the queue's indices
		var head, tail int64
		if err := op(get, func(octx context.Context) (err error) {
			head, tail, err = c.st.StateIndices(octx, id, read)
			return err
		}); err != nil {
			return err
		}
		// (2) remove the oldest entry once the queue is full
		if head-tail >= int64(cfg.capacity()) {
			if err := op(OpDel, func(octx context.Context) error { return c.st.StateDelete(octx, id, tail) }); err != nil {
				return err
			}
			tail++
		}
		// (3) append the new metrics, (4) advance the indices
		if err := op(OpPut, func(octx context.Context) error { return c.st.StatePut(octx, id, head, m.Value) }); err != nil {
			return err
		}
		if err := op(OpPut, func(octx context.Context) error { return c.st.StateSetIndices(octx, id, head+1, tail) }); err != nil {
			return err
		}
		// (5) read the whole state
		if err := op(get, func(octx context.Context) error {
			_, err := c.st.StateRead(octx, id, read)
			return err
		}); err != nil {
			return err
		}
	}
	// (6) inference
	if cfg.Inference > 0 {
		t := time.NewTimer(cfg.Inference)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	// (7) control for the producer, answering its metrics
	return op(OpPut, func(octx context.Context) error {
		v := encode(header{kind: 'c', published: time.Now(), metrics: h.published, seq: h.seq}, cfg.ControlSize)
		return c.st.PublishControl(octx, cfg.Group, m.Name, id, v)
	})
}
