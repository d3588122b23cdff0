package experiment

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/testbed"
)

// kvMetrics reports, for every heal event of a run, how long after it each continuum kv member
// held everything its peers across the partition held when their replication streams reopened.
// The members log "caught up with peer" with the wall time (package replication); since every
// member runs on this host, their clocks are the runner's, and the measurement needs no client
// connection across the partition (a probe's own reconnection would be in its figure).
//
// Metrics: kv/<member>/caught_up_after_heal_s and kv/all/converged_after_heal_s (the latest
// member), with one field per heal: heal1, heal2, ... A member that logged no catch-up after a
// heal (its streams never broke) is left out of that heal's figures.
func kvMetrics(out RunOutput) map[string]map[string]float64 {
	var heals []time.Time
	var bounds []time.Time // the next partition after each heal (zero: none)
	for _, ev := range out.Events {
		switch ev.Action {
		case testbed.FaultHeal:
			heals = append(heals, out.T0.Add(ev.At))
			bounds = append(bounds, time.Time{})
		case testbed.FaultPartition:
			if n := len(bounds); n > 0 && bounds[n-1].IsZero() {
				bounds[n-1] = out.T0.Add(ev.At)
			}
		}
	}
	if len(heals) == 0 {
		return nil
	}
	m := map[string]map[string]float64{}
	all := map[string]float64{}
	for _, in := range out.Instances {
		lines, err := catchUps(in.Log)
		if err != nil {
			continue
		}
		fields := map[string]float64{}
		for i, heal := range heals {
			first := map[string]time.Time{} // per peer: its first catch-up after the heal
			for _, c := range lines {
				if c.reconnect.Before(heal) || (!bounds[i].IsZero() && !c.reconnect.Before(bounds[i])) {
					continue
				}
				if t, ok := first[c.peer]; !ok || c.at.Before(t) {
					first[c.peer] = c.at
				}
			}
			if len(first) == 0 {
				continue
			}
			var latest time.Time
			for _, t := range first {
				if t.After(latest) {
					latest = t
				}
			}
			key := fmt.Sprintf("heal%d", i+1)
			fields[key] = latest.Sub(heal).Seconds()
			all[key] = max(all[key], fields[key])
		}
		if len(fields) > 0 {
			m["kv/"+in.Name+"/caught_up_after_heal_s"] = fields
		}
	}
	if len(all) > 0 {
		m["kv/all/converged_after_heal_s"] = all
	}
	return m
}

// catchUp is one "caught up with peer" log line.
type catchUp struct {
	peer          string
	reconnect, at time.Time
}

// catchUps reads a kv member's log (slog's text format) for its catch-up lines.
func catchUps(path string) ([]catchUp, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []catchUp
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, `msg="caught up with peer"`) {
			continue
		}
		attrs := logfmt(line)
		rec, err1 := time.Parse(time.RFC3339Nano, attrs["reconnect_at"])
		at, err2 := time.Parse(time.RFC3339Nano, attrs["caught_up_at"])
		if err1 != nil || err2 != nil || attrs["peer"] == "" {
			continue
		}
		out = append(out, catchUp{peer: attrs["peer"], reconnect: rec, at: at})
	}
	return out, sc.Err()
}

// logfmt splits a line of slog's text format into its key=value attributes (values quoted with
// Go syntax when they contain spaces or quotes).
func logfmt(line string) map[string]string {
	attrs := map[string]string{}
	for len(line) > 0 {
		line = strings.TrimLeft(line, " ")
		eq := strings.IndexByte(line, '=')
		if eq <= 0 {
			break
		}
		key, rest := line[:eq], line[eq+1:]
		var val string
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				break
			}
			val, _ = strconv.Unquote(q)
			rest = rest[len(q):]
		} else if sp := strings.IndexByte(rest, ' '); sp >= 0 {
			val, rest = rest[:sp], rest[sp:]
		} else {
			val, rest = rest, ""
		}
		attrs[key] = val
		line = rest
	}
	return attrs
}
