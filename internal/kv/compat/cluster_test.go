package compat

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/testenv"
)

// startKVCluster starts n continuum kv processes m0.. as one cluster; peers names, per member,
// the members it pulls from (nil: all others).
func startKVCluster(t *testing.T, n int, peers map[string][]string) []*server {
	t.Helper()
	return startCluster(t, kvTarget, n, serverOptions{}, peers)
}

// startCluster starts n members m0.. of tg as one cluster (peers: continuum kv only), every
// process before waiting for any, as an etcd member serves only once it has a quorum.
func startCluster(t *testing.T, tg *target, n int, o serverOptions, peers map[string][]string) []*server {
	t.Helper()
	bin := tg.require(t)
	clientPorts, peerPorts := make([]int, n), make([]int, n)
	var ic []string
	for i := 0; i < n; i++ {
		clientPorts[i], peerPorts[i] = testenv.FreePort(t), testenv.FreePort(t)
		ic = append(ic, fmt.Sprintf("m%d=http://127.0.0.1:%d", i, peerPorts[i]))
	}
	dir := t.TempDir()
	var out []*server
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("m%d", i)
		client := fmt.Sprintf("http://127.0.0.1:%d", clientPorts[i])
		peer := fmt.Sprintf("http://127.0.0.1:%d", peerPorts[i])
		s := &server{tg: tg, name: name, dataDir: filepath.Join(dir, name), endpoint: client[len("http://"):], bin: bin}
		s.args = []string{"--name", name, "--data-dir", s.dataDir,
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer,
			"--initial-cluster", strings.Join(ic, ","), "--initial-cluster-token", "compat"}
		if tg.continuum {
			s.args = append([]string{"kv"}, s.args...)
			if p := peers[name]; p != nil {
				s.args = append(s.args, "--peers", strings.Join(p, ","))
			}
		} else {
			s.args = append(s.args, "--initial-advertise-peer-urls", peer, "--log-level", "warn")
		}
		s.args = append(s.args, o.flags()...)
		s.proc = startProcess(t, filepath.Join(dir, name+".log"), bin, s.args...)
		t.Cleanup(func() {
			s.proc.stop(10 * time.Second)
			if t.Failed() {
				t.Logf("%s log tail:\n%s", name, s.proc.logTail(20))
			}
		})
		out = append(out, s)
	}
	for _, s := range out {
		s.waitReady(t)
	}
	return out
}

func etcdctlJSON(t *testing.T, ctl string, out any, args ...string) {
	t.Helper()
	b, err := exec.Command(ctl, append(append([]string{"-w", "json"}, ctlTimeouts...), args...)...).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("etcdctl %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	// `--cluster` commands print one JSON document per endpoint or an array, by version.
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("etcdctl %s: %v\n%s", strings.Join(args, " "), err, b)
	}
}

// TestEtcdctlAgainstCluster: 3-member, partial-mesh and 5-member ring clusters answer etcdctl's cluster
// commands as etcd's would: member list with every member's URLs, endpoint status and hashkv
// across the cluster (found through member list), equal hashes once writes have spread.
func TestEtcdctlAgainstCluster(t *testing.T) {
	ctl, err := toolBinary("CONTINUUM_ETCDCTL_BIN", "etcdctl")
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		n     int
		peers map[string][]string
	}{
		"3 full mesh":    {3, nil},
		"3 partial mesh": {3, map[string][]string{"m0": {"m1"}, "m1": {"m0", "m2"}, "m2": {"m1"}}},
		// A ring: m0 and m2 are two hops apart through either side.
		"5 ring": {5, map[string][]string{"m0": {"m1", "m4"}, "m1": {"m0", "m2"}, "m2": {"m1", "m3"}, "m3": {"m2", "m4"}, "m4": {"m3", "m0"}}},
	} {
		t.Run(name, func(t *testing.T) {
			n := tc.n
			ms := startKVCluster(t, n, tc.peers)
			for i, s := range ms {
				if out, err := exec.Command(ctl, "--endpoints", s.endpoint, "put", fmt.Sprintf("k%d", i), "v").CombinedOutput(); err != nil {
					t.Fatalf("put on m%d: %v\n%s", i, err, out)
				}
			}
			var ml struct {
				Header struct {
					ClusterID uint64 `json:"cluster_id"`
				}
				Members []struct {
					ID         uint64
					Name       string
					PeerURLs   []string
					ClientURLs []string
				}
			}
			deadline := time.Now().Add(15 * time.Second)
			for {
				etcdctlJSON(t, ctl, &ml, "--endpoints", ms[2].endpoint, "member", "list")
				known := 0
				for _, m := range ml.Members {
					if len(m.ClientURLs) == 1 && len(m.PeerURLs) == 1 {
						known++
					}
				}
				if len(ml.Members) == n && known == n {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("member list from m2: %+v", ml.Members)
				}
				time.Sleep(50 * time.Millisecond)
			}
			for {
				var hk []struct {
					Endpoint string
					HashKV   struct{ Hash uint32 } `json:"HashKV"`
				}
				etcdctlJSON(t, ctl, &hk, "--endpoints", ms[0].endpoint, "endpoint", "hashkv", "--cluster")
				same := len(hk) == n
				for i := 1; same && i < n; i++ {
					same = hk[i].HashKV.Hash == hk[0].HashKV.Hash
				}
				if same {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("endpoint hashkv --cluster: %+v", hk)
				}
				time.Sleep(50 * time.Millisecond)
			}
			var st []struct {
				Endpoint string
				Status   struct {
					Header struct {
						MemberID uint64 `json:"member_id"`
					}
				}
			}
			// ms[1] may still be learning the others' client URLs (a ring spreads them a hop at
			// a time): ask until it lists them all.
			for {
				st = nil
				etcdctlJSON(t, ctl, &st, "--endpoints", ms[1].endpoint, "endpoint", "status", "--cluster")
				if len(st) == n {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("endpoint status --cluster: %d endpoints, want %d: %+v", len(st), n, st)
				}
				time.Sleep(50 * time.Millisecond)
			}
			ids := map[uint64]bool{}
			for _, s := range st {
				ids[s.Status.Header.MemberID] = true
			}
			for _, m := range ml.Members {
				if !ids[m.ID] {
					t.Fatalf("member %s (id %x) in member list but no endpoint status reports it: %+v", m.Name, m.ID, st)
				}
			}
		})
	}
}
