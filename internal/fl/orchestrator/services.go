package orchestrator

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/continuum-project/continuum/internal/fl/plan"
)

// serviceName is the process name of node id's service in a role: fl-ga-<id>, fl-la-<id>,
// fl-cl-<id> (as the seed named its Kubernetes services).
func serviceName(role, id string) string {
	switch role {
	case "global":
		return "fl-ga-" + id
	case "local":
		return "fl-la-" + id
	}
	return "fl-cl-" + id
}

func roleOf(name string) string {
	switch {
	case strings.HasPrefix(name, "fl-cls-"):
		return "clients"
	case strings.HasPrefix(name, "fl-ga-"):
		return "global"
	case strings.HasPrefix(name, "fl-la-"):
		return "local"
	}
	return "client"
}

// roleIn is node id's role in conf ("" when it has none).
func roleIn(conf plan.Config, id string) string {
	if id == conf.Global {
		return "global"
	}
	for _, c := range conf.Clusters {
		if c.Aggregator == id {
			return "local"
		}
		for _, cl := range c.Clients {
			if cl == id {
				return "client"
			}
		}
	}
	for _, cl := range conf.Clients {
		if cl == id {
			return "client"
		}
	}
	return ""
}

// parents maps every node of conf but the global aggregator to its parent.
func parents(conf plan.Config) map[string]string {
	out := map[string]string{}
	for _, c := range conf.Clusters {
		out[c.Aggregator] = conf.Global
		for _, cl := range c.Clients {
			out[cl] = c.Aggregator
		}
	}
	for _, cl := range conf.Clients {
		out[cl] = conf.Global
	}
	return out
}

// clientsOf lists conf's clients in order.
func clientsOf(conf plan.Config) []string {
	var out []string
	for _, c := range conf.Clusters {
		out = append(out, c.Clients...)
	}
	out = append(out, conf.Clients...)
	sort.Strings(out)
	return out
}

// childCount is how many children aggregator id has in conf.
func childCount(conf plan.Config, id string) int {
	if id == conf.Global {
		if len(conf.Clusters) > 0 {
			return len(conf.Clusters)
		}
		return len(conf.Clients)
	}
	c, _ := clusterOf(conf, id)
	return len(c.Clients)
}

func clusterOf(conf plan.Config, agg string) (plan.Cluster, bool) {
	for _, c := range conf.Clusters {
		if c.Aggregator == agg {
			return c, true
		}
	}
	return plan.Cluster{}, false
}

// describe is a configuration in one line, like the seed's printout.
func describe(c plan.Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, global %s", c.Strategy, c.Global)
	for _, cl := range c.Clusters {
		fmt.Fprintf(&b, " [%s: %s]", cl.Aggregator, strings.Join(cl.Clients, " "))
	}
	if len(c.Clients) > 0 {
		fmt.Fprintf(&b, " [%s]", strings.Join(c.Clients, " "))
	}
	fmt.Fprintf(&b, ", KLD %.4f, cost/epoch %.2f, epochs %d, local rounds %d", c.KLD, c.CostPerEpoch, c.Epochs, c.LocalRounds)
	return b.String()
}

func (j *run) python(role string, args ...string) []string {
	return append([]string{j.o.cfg.Python.Interpreter, "-m", "continuum_fl", role}, args...)
}

func (j *run) env() []string {
	return []string{"PYTHONPATH=" + j.o.cfg.Python.Src, "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1"}
}

// serviceEnv is env plus the token of node id's service in role (auth.go).
func (j *run) serviceEnv(role, id string) []string {
	return append(j.env(), ServicesTokenEnv+"="+j.o.ServiceToken(role, id))
}

// aggregatorEnv is serviceEnv plus the token of aggregator id's control API, which only that
// aggregator gets.
func (j *run) aggregatorEnv(role, id string) []string {
	return append(j.serviceEnv(role, id), ControlTokenEnv+"="+j.o.ControlToken(id))
}

func (j *run) serviceOut(name string) string {
	return filepath.Join(j.o.cfg.Out, "services", name)
}

// trainArgs are the flags every service shares: the data set, the model, the seed, the reports.
func (j *run) trainArgs(out string) []string {
	s := j.spec
	args := []string{"--dataset", s.Dataset, "--seed", strconv.FormatInt(s.Seed, 10), "--out", out, "--report", j.o.cfg.API}
	if s.DataDir != "" {
		args = append(args, "--data-dir", s.DataDir)
	}
	return args
}

func (j *run) aggregatorArgs(conf plan.Config, id string, localRounds, minClients int) []string {
	port := j.ports[id]
	s := j.spec
	return []string{"--id", id, "--listen", "0.0.0.0:" + strconv.Itoa(port), "--control", "0.0.0.0:" + strconv.Itoa(port+1000),
		"--rounds", strconv.Itoa(s.Rounds), "--local-rounds", strconv.Itoa(localRounds), "--min-clients", strconv.Itoa(minClients),
		"--epochs", strconv.Itoa(conf.Epochs), "--lr", strconv.FormatFloat(s.LR, 'g', -1, 64),
		"--batch-size", strconv.Itoa(s.BatchSize), "--round-timeout", strconv.FormatFloat(s.RoundTimeout, 'g', -1, 64)}
}

func (j *run) globalService(conf plan.Config, resume bool) Service {
	name := serviceName("global", conf.Global)
	out := j.serviceOut(name)
	args := j.aggregatorArgs(conf, conf.Global, 1, childCount(conf, conf.Global))
	args = append(args, j.trainArgs(out)...)
	if resume {
		args = append(args, "--resume-url", strings.TrimSuffix(j.o.cfg.API, "/")+"/model/latest")
	}
	return Service{Name: name, Node: conf.Global, Host: j.members[conf.Global].Host, Args: j.python("aggregator", args...), Env: j.aggregatorEnv("global", conf.Global), Out: out}
}

func (j *run) localService(conf plan.Config, c plan.Cluster) Service {
	name := serviceName("local", c.Aggregator)
	out := j.serviceOut(name)
	args := j.aggregatorArgs(conf, c.Aggregator, conf.LocalRounds, len(c.Clients))
	args = append(args, "--parent", j.flowerAddr(conf.Global))
	args = append(args, j.trainArgs(out)...)
	return Service{Name: name, Node: c.Aggregator, Host: j.members[c.Aggregator].Host, Args: j.python("aggregator", args...), Env: j.aggregatorEnv("local", c.Aggregator), Out: out}
}

func (j *run) clientService(id, parent string) Service {
	name := serviceName("client", id)
	out := j.serviceOut(name)
	args := append([]string{"--id", id, "--server", j.flowerAddr(parent)}, j.partitionArgs(j.members[id].Host)...)
	if p := j.members[id].FailProb; p > 0 {
		args = append(args, "--fail-prob", strconv.FormatFloat(p, 'g', -1, 64))
	}
	args = append(args, j.trainArgs(out)...)
	return Service{Name: name, Node: id, Host: j.members[id].Host, Args: j.python("client", args...), Env: j.serviceEnv("client", id), Out: out}
}

// groupService is the process running the clients ids of host h (Config.GroupClients): one
// Python process with one Flower connection per client, sharing PyTorch's memory.
func (j *run) groupService(h string, ids []string, parent map[string]string) (Service, error) {
	name := "fl-cls-" + h
	out := j.serviceOut(name)
	type spec struct {
		ID       string  `json:"id"`
		Server   string  `json:"server"`
		FailProb float64 `json:"fail_prob,omitempty"`
	}
	specs := make([]spec, 0, len(ids))
	for _, id := range ids {
		specs = append(specs, spec{ID: id, Server: j.flowerAddr(parent[id]), FailProb: j.members[id].FailProb})
	}
	sig, err := json.Marshal(specs)
	if err != nil {
		return Service{}, err
	}
	b, _ := json.Marshal(map[string]any{"clients_by_node": map[string]any{h: specs}})
	var args []string
	if j.o.cfg.Runner.Apart(h) { // no file of this host's reaches it: the plan in its command line
		if len(b) > maxInlineJSON {
			return Service{}, fmt.Errorf("the clients of %s: their plan is %d bytes as JSON, over the %d a command-line argument may carry", h, len(b), maxInlineJSON)
		}
		args = []string{"--plan-json", string(b)}
	} else {
		if err := os.MkdirAll(out, 0o755); err != nil {
			return Service{}, err
		}
		planFile := filepath.Join(out, "plan.json")
		if err := os.WriteFile(planFile, b, 0o644); err != nil {
			return Service{}, err
		}
		args = []string{"--plan", planFile}
	}
	args = append(append(append(args, "--node", h), j.partitionArgs(h)...), j.trainArgs(out)...)
	tokens := make(map[string]string, len(ids))
	for _, id := range ids {
		tokens[id] = j.o.ServiceToken("client", id)
	}
	tb, _ := json.Marshal(tokens)
	if len(tb) > maxInlineJSON {
		return Service{}, fmt.Errorf("the clients of %s: their %d tokens are %d bytes, over the %d an environment variable may carry: fewer clients per host", h, len(ids), len(tb), maxInlineJSON)
	}
	return Service{Name: name, Host: h, Args: j.python("clients", args...), Env: append(j.env(), GroupTokensEnv+"="+string(tb)), Out: out,
		Clients: append([]string(nil), ids...), Signature: string(sig)}, nil
}
