package testbed

import (
	"fmt"
	"github.com/continuum-project/continuum/internal/platform"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Inject applies a fault and returns a one-line description of what it did (for event logs).
func (tb *Testbed) Inject(f Fault) (string, error) {
	switch f.Action {
	case FaultPartition:
		return tb.partition(f)
	case FaultHeal:
		return tb.heal(f)
	case FaultLink:
		return tb.changeLink(f)
	case FaultKill:
		if f.Component != "" {
			p, err := tb.Proc(f.Component)
			if err != nil {
				return "", err
			}
			return "killed " + f.Component, p.Kill()
		}
		return tb.signalNode(f.Node, syscall.SIGKILL, "killed")
	case FaultPause:
		return tb.signalNode(f.Node, syscall.SIGSTOP, "paused")
	case FaultResume:
		return tb.signalNode(f.Node, syscall.SIGCONT, "resumed")
	case FaultCPU:
		return tb.setCPU(f)
	case FaultRestart:
		p, err := tb.Proc(f.Component)
		if err != nil {
			return "", err
		}
		return "restarted " + f.Component, p.Restart(5 * time.Second)
	}
	return "", fmt.Errorf("unknown fault action %q (allowed: %s)", f.Action, strings.Join(FaultActions, ", "))
}

// linkName names link i as the topology does ("edge-cloud" for between: [edge, cloud]), however
// a fault wrote its ends, so that status, fault answers and errors name a link one way.
func (tb *Testbed) linkName(i int) string {
	l := tb.Topo.Links[i]
	return l.Between[0] + "-" + l.Between[1]
}

func (tb *Testbed) linkIndex(ends []string) (int, error) {
	if len(ends) != 2 {
		return 0, fmt.Errorf("link must name two nodes, got %v", ends)
	}
	i, ok := tb.links[pairKey(ends[0], ends[1])]
	if !ok {
		var all []string
		for _, j := range tb.links {
			all = append(all, tb.linkName(j))
		}
		sort.Strings(all)
		return 0, fmt.Errorf("no link between %s and %s (links: %s)", ends[0], ends[1], strings.Join(all, ", "))
	}
	return i, nil
}

func (tb *Testbed) partition(f Fault) (string, error) {
	var links []int
	var groups [][]int
	var what string
	switch {
	case len(f.Link) > 0:
		i, err := tb.linkIndex(f.Link)
		if err != nil {
			return "", err
		}
		links, what = []int{i}, "cut link "+tb.linkName(i)
	case f.Node != "":
		n, err := tb.node(f.Node)
		if err != nil {
			return "", err
		}
		links, what = tb.fab.LinksOf(n.idx), "isolated "+f.Node
	case len(f.Groups) > 0:
		var parts []string
		for _, g := range f.Groups {
			var idx []int
			for _, name := range g {
				n, err := tb.node(name)
				if err != nil {
					return "", err
				}
				idx = append(idx, n.idx)
			}
			groups = append(groups, idx)
			parts = append(parts, "["+strings.Join(g, ",")+"]")
		}
		what = "split " + strings.Join(parts, " | ")
	default:
		return "", fmt.Errorf("partition needs one of: node (isolate it), link [a, b] (cut it), groups [[...], [...]] (split)")
	}
	id, err := tb.fab.Partition(links, groups)
	if err != nil {
		return "", err
	}
	tb.mu.Lock()
	tb.faults[id] = f
	tb.mu.Unlock()
	return what, nil
}

// heal undoes all partitions, or those matching the fault's node, link or groups.
func (tb *Testbed) heal(f Fault) (string, error) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if f.Node == "" && len(f.Link) == 0 && len(f.Groups) == 0 {
		n := len(tb.faults)
		clear(tb.faults)
		return fmt.Sprintf("healed %d partition(s)", n), tb.fab.Heal(0)
	}
	var healed int
	var active []string
	for id, p := range tb.faults {
		if platform.SamePartition(p, f) {
			if err := tb.fab.Heal(id); err != nil {
				return "", err
			}
			delete(tb.faults, id)
			healed++
		} else {
			active = append(active, platform.DescribePartition(p))
		}
	}
	if healed == 0 {
		return "", fmt.Errorf("no active partition matches %s (active: %s)", platform.DescribePartition(f), strings.Join(active, "; "))
	}
	return "healed " + platform.DescribePartition(f), nil
}

func (tb *Testbed) changeLink(f Fault) (string, error) {
	i, err := tb.linkIndex(f.Link)
	if err != nil {
		return "", err
	}
	p := tb.fab.LinkProps(i)
	var changed []string
	if f.Delay != nil {
		p.Delay = f.Delay.Duration
		changed = append(changed, "delay="+p.Delay.String())
	}
	if f.Jitter != nil {
		p.Jitter = f.Jitter.Duration
		changed = append(changed, "jitter="+p.Jitter.String())
	}
	if f.Loss != nil {
		p.Loss = float64(*f.Loss)
		changed = append(changed, fmt.Sprintf("loss=%g%%", p.Loss*100))
	}
	if f.Bandwidth != nil {
		p.Bandwidth = int64(*f.Bandwidth)
		changed = append(changed, fmt.Sprintf("bandwidth=%dbit/s", p.Bandwidth))
	}
	if len(changed) == 0 {
		return "", fmt.Errorf("link fault changes nothing: set one of delay, jitter, loss, bandwidth")
	}
	if p.Jitter > p.Delay {
		return "", fmt.Errorf("jitter %v must not exceed delay %v", p.Jitter, p.Delay)
	}
	return fmt.Sprintf("link %s %s", tb.linkName(i), strings.Join(changed, " ")), tb.fab.SetLinkProps(i, p)
}

func (tb *Testbed) signalNode(name string, sig syscall.Signal, verb string) (string, error) {
	n, err := tb.node(name)
	if err != nil {
		return "", err
	}
	count, err := tb.cg.signal(n.cgroup, sig)
	return fmt.Sprintf("%s %s (%d processes)", verb, name, count), err
}

func (tb *Testbed) setCPU(f Fault) (string, error) {
	n, err := tb.node(f.Node)
	if err != nil {
		return "", err
	}
	if f.CPUs == nil || *f.CPUs < 0 {
		return "", fmt.Errorf("cpu fault needs cpus >= 0 (0 = unlimited)")
	}
	if err := tb.cg.setCPU(n.cgroup, *f.CPUs); err != nil {
		return "", err
	}
	tb.mu.Lock()
	n.cpus = *f.CPUs
	tb.mu.Unlock()
	return fmt.Sprintf("cpu %s=%g cores", f.Node, *f.CPUs), nil
}

// LinkStatus describes one link for status output.
type LinkStatus struct {
	Between   [2]string `json:"between"`
	Up        bool      `json:"up"`
	Delay     string    `json:"delay"`
	Jitter    string    `json:"jitter"`
	Loss      float64   `json:"loss"`
	Bandwidth int64     `json:"bandwidth_bps"`
	Queue     int       `json:"queue"` // packets that may wait for the bandwidth limit
}

func (tb *Testbed) linkStatus() []LinkStatus {
	out := make([]LinkStatus, len(tb.Topo.Links))
	for i, l := range tb.Topo.Links {
		p := tb.fab.LinkProps(i)
		out[i] = LinkStatus{Between: [2]string{l.Between[0], l.Between[1]}, Up: tb.fab.LinkUp(i),
			Delay: p.Delay.String(), Jitter: p.Jitter.String(), Loss: p.Loss, Bandwidth: p.Bandwidth, Queue: p.Queue}
	}
	return out
}

// RTT returns the configured round-trip delay between two nodes along the current routes, and
// false when one cannot reach the other.
func (tb *Testbed) RTT(a, b string) (time.Duration, bool) {
	na, err1 := tb.node(a)
	nb, err2 := tb.node(b)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	p1, d1 := tb.fab.Path(na.idx, nb.idx)
	p2, d2 := tb.fab.Path(nb.idx, na.idx)
	if p1 == nil || p2 == nil {
		return 0, false
	}
	return time.Duration(d1 + d2), true
}
