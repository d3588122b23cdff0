package compat

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/testenv"
)

// ctlStep is one etcdctl invocation. {lease} in args is replaced by the id the last
// `lease grant` printed. want, if set, is a substring the output must contain on any target.
type ctlStep struct {
	args  []string
	stdin string
	want  string
	// stream: a command that never ends (watch); its output is what arrived until want did
	// and for this time more (see streamUntil).
	stream time.Duration
}

// streamUntil waits for a started command that never ends (a watch) to write want (at once
// when want is empty), then for window more, then kills it; it returns early when the command
// exits by itself (or its context's deadline kills it). Waiting for want rather than a fixed
// window from the start: etcdctl with --user first waits for a bcrypt comparison, about a
// second on a busy machine, and the watch's answer then came after the window had closed.
func streamUntil(cmd *exec.Cmd, out *testenv.SyncBuffer, want string, window time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for want != "" && !strings.Contains(out.String(), want) {
		select {
		case err := <-done:
			return err
		case <-tick.C:
		}
	}
	select {
	case err := <-done:
		return err
	case <-time.After(window):
	}
	_ = cmd.Process.Kill()
	return <-done
}

// ctlScript runs on a fresh member, so revisions are the same on every target.
var ctlScript = []ctlStep{
	{args: []string{"put", "a", "1"}, want: "OK"},
	{args: []string{"put", "b", "2"}, want: "OK"},
	{args: []string{"put", "a", "3", "--prev-kv"}, want: "OK\na\n1"},
	{args: []string{"put", "c/1", "x"}},
	{args: []string{"put", "c/2", "y"}},
	{args: []string{"get", "a"}, want: "a\n3"},
	{args: []string{"get", "a", "-w", "json"}, want: `"count":1`},
	{args: []string{"get", "a", "-w", "fields"}, want: `"Version" : 2`},
	{args: []string{"get", "a", "c"}, want: "a\n3\nb\n2"},
	{args: []string{"get", "c/", "--prefix"}, want: "c/1\nx\nc/2\ny"},
	{args: []string{"get", "b", "--from-key", "--keys-only"}, want: "b\n\nc/1"},
	{args: []string{"get", "", "--prefix", "--limit", "2", "-w", "json"}, want: `"more":true`},
	{args: []string{"get", "", "--prefix", "--count-only", "-w", "fields"}, want: `"Count" : 4`},
	{args: []string{"get", "", "--prefix", "--sort-by", "MODIFY", "--order", "DESCEND", "--print-value-only"}, want: "y\nx\n3\n2"},
	{args: []string{"get", "", "--prefix", "--sort-by", "VALUE", "--order", "ASCEND"}},
	{args: []string{"get", "a", "--rev", "2"}, want: "a\n1"},
	{args: []string{"get", "a", "--rev", "100"}, want: "required revision is a future revision"},
	{args: []string{"put", "", "v"}, want: "key is not provided"},
	{args: []string{"del", "b"}, want: "1"},
	{args: []string{"del", "b"}, want: "0"},
	{args: []string{"del", "c/", "--prefix", "--prev-kv"}, want: "2\nc/1\nx\nc/2\ny"},
	{args: []string{"txn"}, stdin: "value(\"x\") = \"1\"\n\nput x 2\n\nput x 1\n\n", want: "FAILURE\n\nOK"},
	{args: []string{"txn", "-w", "json"}, stdin: "value(\"x\") = \"1\"\nmod(\"a\") > \"0\"\n\nput x 2\nget a\n\nput x 1\n\n", want: `"succeeded":true`},
	{args: []string{"txn"}, stdin: "version(\"x\") = \"2\"\ncreate(\"x\") > \"0\"\n\ndel x\n\n\n", want: "SUCCESS\n\n1"},
	{args: []string{"lease", "grant", "60"}, want: "granted with TTL(60s)"},
	{args: []string{"put", "l", "v", "--lease={lease}"}, want: "OK"},
	{args: []string{"lease", "timetolive", "{lease}", "--keys"}, want: "attached keys([l])"},
	{args: []string{"lease", "list"}, want: "found 1 leases"},
	{args: []string{"lease", "keep-alive", "--once", "{lease}"}, want: "keepalived with TTL(60)"},
	{args: []string{"lease", "revoke", "{lease}"}, want: "revoked"},
	{args: []string{"lease", "timetolive", "{lease}"}, want: "already expired"},
	{args: []string{"get", "l"}},
	{args: []string{"watch", "--prefix", "", "--rev", "3", "--prev-kv"}, stream: 1500 * time.Millisecond, want: "PUT\na\n1\na\n3"},
	{args: []string{"compaction", "4"}, want: "compacted revision 4"},
	{args: []string{"compaction", "4"}, want: "required revision has been compacted"},
	{args: []string{"get", "a", "--rev", "3"}, want: "required revision has been compacted"},
	{args: []string{"compaction", "--physical", "5"}, want: "compacted revision 5"},
	{args: []string{"watch", "a", "--rev", "2"}, stream: time.Second, want: "compacted"},
	{args: []string{"defrag"}, want: "Finished defragmenting etcd member"},
	{args: []string{"endpoint", "status", "-w", "json"}, want: `"revision":`},
	{args: []string{"endpoint", "status"}, want: "true, false"},
	{args: []string{"endpoint", "health"}, want: "is healthy"},
	{args: []string{"member", "list"}, want: "started, compat,"},
	{args: []string{"member", "list", "-w", "json"}, want: `"name":"compat"`},
	{args: []string{"alarm", "list"}},
	{args: []string{"get", "", "--prefix", "-w", "json"}},
}

var (
	reLease = regexp.MustCompile(`lease ([0-9a-f]+) granted`)
	// Values that legitimately differ between members and stores.
	ctlNormalise = []struct {
		re   *regexp.Regexp
		with string
	}{
		{regexp.MustCompile(`(?m)^\{"level":.*\n?`), ""},           // client retry logs
		{regexp.MustCompile(`127\.0\.0\.1:\d+`), "127.0.0.1:PORT"}, // ports
		{regexp.MustCompile(`"(cluster_id|member_id|raft_term|ID|leader|raftIndex|raftTerm|raftAppliedIndex|dbSize|dbSizeInUse|dbSizeQuota|ClusterID|MemberID|RaftTerm)"( ?: ?)\d+`), `"$1"${2}N`},
		{regexp.MustCompile(`\b[0-9a-f]{12,16}\b`), "ID"}, // member, cluster, lease ids
		{regexp.MustCompile(`"(version|storageVersion)":"[^"]*"`), `"$1":"V"`},
		{regexp.MustCompile(`"peerURLs":\[[^\]]*\],?`), ""},                                                 // peers are part 2's
		{regexp.MustCompile(`(?m)^(ID, started, [^,]*), [^,]*, `), "$1, PEERS, "},                           // member list
		{regexp.MustCompile(`(true|false), (true|false), \d+, \d+, \d+,`), "$1, $2, TERM, INDEX, APPLIED,"}, // endpoint status
		{regexp.MustCompile(`took =? ?[0-9.]+[µnm]?s`), "took D"},
		{regexp.MustCompile(`remaining\(\d+s\)`), "remaining(Ns)"},
		{regexp.MustCompile(`\b\d+(\.\d+)? [kMG]?B\b`), "SIZE"},
		{regexp.MustCompile(`\b\d+%`), "P%"},
		{regexp.MustCompile(`\b3\.\d+\.\d+\b`), "V"},
	}
)

func normaliseCtl(s string) string {
	for _, n := range ctlNormalise {
		s = n.re.ReplaceAllString(s, n.with)
	}
	return s
}

// etcdctlOutputs runs ctlScript against s and returns each step's normalised output.
func etcdctlOutputs(t *testing.T, ctl string, s *server) []string {
	return runCtlScript(t, ctl, s, ctlScript)
}

// ctlTimeouts are etcdctl's timeouts for a busy machine. --dial-timeout (default 2 s) also
// bounds the Authenticate a client with --user makes as it connects: a bcrypt comparison
// that, at a load average of ~30, took longer and failed steps with "context deadline
// exceeded" on both etcd and kv. --command-timeout (default 5 s) bounds the request itself.
var ctlTimeouts = []string{"--dial-timeout", "10s", "--command-timeout", "10s"}

// runCtlScript runs script against s and returns each step's normalised output.
func runCtlScript(t *testing.T, ctl string, s *server, script []ctlStep) []string {
	var outs []string
	lease := "0"
	for i, st := range script {
		args := append(append([]string{"--endpoints", s.endpoint}, ctlTimeouts...), st.args...)
		for j := range args {
			args[j] = strings.ReplaceAll(args[j], "{lease}", lease)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // both of ctlTimeouts, and then some
		cmd := exec.CommandContext(ctx, ctl, args...)
		cmd.Stdin = strings.NewReader(st.stdin)
		var out testenv.SyncBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		var err error
		if st.stream > 0 {
			if err = cmd.Start(); err != nil {
				t.Fatalf("step %d etcdctl %s: %v", i, strings.Join(st.args, " "), err)
			}
			err = streamUntil(cmd, &out, st.want, st.stream)
		} else {
			err = cmd.Run()
		}
		cancel()
		code := 0
		var ee *exec.ExitError
		switch {
		case st.stream > 0:
			code = -1 // killed at the end of its window; not compared
		case errors.As(err, &ee):
			code = ee.ExitCode()
		case err != nil:
			t.Fatalf("step %d etcdctl %s: %v", i, strings.Join(st.args, " "), err)
		}
		raw := out.String()
		if m := reLease.FindStringSubmatch(raw); m != nil {
			lease = m[1]
		}
		if st.want != "" && !strings.Contains(raw, st.want) {
			t.Errorf("step %d etcdctl %s: output %q does not contain %q", i, strings.Join(st.args, " "), raw, st.want)
		}
		outs = append(outs, fmt.Sprintf("exit %d\n%s", code, normaliseCtl(raw)))
	}
	return outs
}

// TestEtcdctl runs one etcdctl script against each target; on continuum kv every step's
// output, normalised for ids, ports, sizes, durations and versions, must equal etcd's.
func TestEtcdctl(t *testing.T) {
	t.Parallel()
	ctl, err := toolBinary("CONTINUUM_ETCDCTL_BIN", "etcdctl")
	if err != nil {
		requireOrSkip(t, err.Error())
	}
	var reference []string
	forEachTarget(t, func(t *testing.T, tg *target) {
		s := tg.start(t, serverOptions{})
		outs := etcdctlOutputs(t, ctl, s)
		if tg == etcdTarget {
			reference = outs
			return
		}
		if reference == nil {
			t.Log("no etcd reference outputs (etcd skipped or failed): checked expected substrings only")
			return
		}
		for i := range outs {
			if outs[i] != reference[i] {
				t.Errorf("step %d etcdctl %s:\n--- etcd\n%q\n--- %s\n%q", i, strings.Join(ctlScript[i].args, " "),
					reference[i], tg.name, outs[i])
			}
		}
	})
}
