package pace

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/shareddata"
)

type producer struct {
	cfg Config
	st  shareddata.Store
	rep *Report
}

// run publishes metrics on a fixed schedule (publication k is due at T0 + k*Period, so a slow
// publish delays the next one but does not shift the schedule) while a subscription applies
// the control that consumers publish for this producer.
func (p *producer) run(ctx context.Context, sess *loadgen.Session) error {
	sub, err := p.st.SubscribeControl(ctx, p.cfg.Group, p.cfg.ID, "")
	if err != nil {
		return err
	}
	var ctrl, gaps, bad atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for m := range sub.C {
			if m.Gap {
				gaps.Add(1)
				continue
			}
			h, err := decode(m.Value)
			if err != nil || h.kind != 'c' {
				bad.Add(1)
				continue
			}
			ctrl.Add(1)
			sess.Observe(OpCtrl, m.Received.Sub(h.published), nil)
			sess.Observe(OpLoop, m.Received.Sub(h.metrics), nil)
		}
	}()
	defer func() {
		sub.Close()
		wg.Wait()
		p.rep.ControlDelivered, p.rep.Gaps, p.rep.BadValues = ctrl.Load(), gaps.Load(), bad.Load()
		p.rep.Reconnects = sub.Reconnects()
	}()

	if p.cfg.OnReady != nil {
		p.cfg.OnReady()
	}
	t0 := sess.T0()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for seq := int64(0); ; seq++ {
		due := t0.Add(time.Duration(seq) * p.cfg.Period)
		timer.Reset(time.Until(due))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
		err := timed(ctx, sess, p.cfg.Timeout, OpPut, func(octx context.Context) error {
			v := encode(header{kind: 'm', published: time.Now(), seq: seq}, p.cfg.MetricsSize)
			return p.st.PublishMetrics(octx, p.cfg.Group, p.cfg.ID, v)
		})
		if err == nil {
			p.rep.Published++
		} else if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}
