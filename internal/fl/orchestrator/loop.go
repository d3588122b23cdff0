package orchestrator

import (
	"context"
	"fmt"
	"time"

	"github.com/continuum-project/continuum/internal/fl/plan"
)

// loop is the controller's workflow (the seed's Fig. 2): collect features, configure, deploy,
// then monitor until the target is reached, reconfiguring on node changes.
func (j *run) loop(ctx context.Context) {
	defer close(j.done)
	ms, err := j.o.cfg.Members(ctx)
	if err != nil {
		j.fail(fmt.Errorf("collect node features: %w", err))
		return
	}
	// A host whose services run apart from this host's files gets nothing of them: no data
	// directory, and the partition table in the command line, within an argument's size.
	apart := ""
	for _, m := range ms {
		if apart == "" && j.o.cfg.Runner.Apart(m.Host) {
			apart = m.Host
		}
	}
	if j.spec.DataDir != "" && apart != "" {
		j.fail(fmt.Errorf("data_dir %s: the services of %s run apart from this host's files (pods of their own), where that folder is not: use a data set that ships with the services (digits, mnist1d)", j.spec.DataDir, apart))
		return
	}
	if j.spec.Partition.enabled() {
		if err := j.spec.Partition.apply(ms, j.spec.Dataset, j.o.isRemoved); err != nil {
			j.fail(fmt.Errorf("partition: %w", err))
			return
		}
	}
	j.members = map[string]Member{}
	j.ports = map[string]int{}
	for i, id := range sortedIDs(ms) {
		j.ports[id] = j.o.cfg.BasePort + i
	}
	for _, m := range ms {
		j.members[m.ID] = m
	}
	if err := j.writePartition(); err != nil {
		j.fail(err)
		return
	}
	if n := len(j.partition); n > maxInlineJSON && apart != "" {
		j.fail(fmt.Errorf("the partition table is %d bytes as JSON, over the %d a command-line argument may carry to the services that run apart (%s's): fewer clients or classes", n, maxInlineJSON, apart))
		return
	}
	obs, err := j.o.cfg.Runner.Observe(ctx)
	if err != nil {
		j.fail(fmt.Errorf("observe the nodes: %w", err))
		return
	}
	j.avail = j.availability(obs)
	conf, err := plan.Plan(j.availableNodes(), j.spec.Strategy, j.spec.budget(), j.options())
	if err != nil {
		j.fail(fmt.Errorf("configure: %w", err))
		return
	}
	conf = j.spec.withOverrides(conf)
	j.o.rec.event(time.Now(), Event{Kind: EventConfigure, Config: &conf, Available: j.status().Available})
	j.logf("configuration: %s", describe(conf))
	if _, err := j.apply(ctx, nil, conf, j.spec.Resume); err != nil {
		j.fail(fmt.Errorf("deploy: %w", err))
		return
	}
	j.mu.Lock()
	j.st.Config, j.st.Configs, j.st.State = conf, 1, "running"
	j.mu.Unlock()

	tick := time.NewTicker(j.o.cfg.Poll)
	defer tick.Stop()
	var stopDeadline time.Time
	for {
		select {
		case <-ctx.Done():
			j.stopAll()
			j.setDone("cancelled")
			return
		case reason := <-j.stopReq:
			if stopDeadline.IsZero() {
				stopDeadline = j.beginStop(ctx, reason)
			}
		case rep := <-j.reports:
			if reason := j.onReport(rep); reason != "" && stopDeadline.IsZero() {
				stopDeadline = j.beginStop(ctx, reason)
			}
		case <-tick.C:
		case <-j.o.wake:
		}
		if !stopDeadline.IsZero() {
			if j.globalExited(ctx) || time.Now().After(stopDeadline) {
				j.drainReports()
				j.stopAll()
				j.setDone("")
				return
			}
			continue
		}
		if finished, err := j.monitor(ctx); err != nil {
			j.fail(err)
			return
		} else if finished {
			j.drainReports()
			j.stopAll()
			j.setDone(fmt.Sprintf("%d global rounds done", j.spec.Rounds))
			return
		}
	}
}

// drainReports takes the reports already received: a global aggregator that exited has posted
// its last rounds' reports before it did (report.py's close), but the loop, which takes one
// event at a time, may not have taken them when it sees the exit (a job done at round 97 of 100,
// its last three rounds missing from rounds.csv, when rounds came 7 a second).
func (j *run) drainReports() {
	for {
		select {
		case rep := <-j.reports:
			j.onReport(rep)
		default:
			return
		}
	}
}

// onReport takes a service's report line; it returns a stop reason when the job's target is
// reached.
func (j *run) onReport(r Report) string {
	if r.Role != "global" || r.Event != "round" {
		return ""
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	c := j.st.Config
	j.st.Spent += c.CostPerEpoch * float64(c.Epochs*max(c.LocalRounds, 1))
	j.st.Round, j.st.Accuracy, j.st.Loss = r.Round, r.Accuracy, r.Loss
	j.o.rec.round(r, j.st.Spent, j.st.Configs)
	if p := j.pending; p != nil && r.T >= p.AppliedAt {
		p.ResumedAt, p.ResumeS = r.T, r.T-p.DetectedAt
		j.st.Reconfigurations[len(j.st.Reconfigurations)-1] = *p
		j.o.rec.event(time.Now(), Event{Kind: EventResumed, Round: r.Round, ResumeS: p.ResumeS, DetectedAt: p.DetectedAt})
		j.pending = nil
	}
	switch {
	case j.spec.TargetAccuracy > 0 && r.Accuracy != nil && *r.Accuracy >= j.spec.TargetAccuracy:
		return fmt.Sprintf("target accuracy %.3f reached at round %d (%.4f)", j.spec.TargetAccuracy, r.Round, *r.Accuracy)
	case j.spec.MaxCost > 0 && j.st.Spent >= j.spec.MaxCost:
		return fmt.Sprintf("communication budget %.0f spent at round %d (%.0f)", j.spec.MaxCost, r.Round, j.st.Spent)
	case r.Round >= j.spec.Rounds:
		return fmt.Sprintf("%d global rounds done", j.spec.Rounds)
	}
	return ""
}

func (j *run) setDone(reason string) {
	j.mu.Lock()
	if j.st.State != "failed" {
		j.st.State = "done"
		if reason != "" && j.st.Reason == "" {
			j.st.Reason = reason
		}
	}
	st := j.st
	j.mu.Unlock()
	j.o.rec.event(time.Now(), Event{Kind: EventStop, Reason: st.Reason, Round: st.Round, Accuracy: st.Accuracy, CostSpent: st.Spent})
	j.logf("job done: %s", st.Reason)
}

// beginStop asks the global aggregator to finish its round and exit; the loop then waits for it
// (bounded by the round timeout) before stopping everything.
func (j *run) beginStop(ctx context.Context, reason string) time.Time {
	j.mu.Lock()
	j.st.State, j.st.Reason = "stopping", reason
	global := j.st.Config.Global
	j.mu.Unlock()
	j.logf("stopping: %s", reason)
	_ = j.aggregator(global).Stop(ctx)
	return time.Now().Add(time.Duration(j.spec.RoundTimeout*float64(time.Second)) + 10*time.Second)
}

func (j *run) globalExited(ctx context.Context) bool {
	obs, err := j.o.cfg.Runner.Observe(ctx)
	if err != nil {
		return false
	}
	_, gone := obs.Exited[serviceName("global", j.status().Config.Global)]
	return gone
}
