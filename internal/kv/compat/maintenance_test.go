package compat

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-semver/semver"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/continuum-project/continuum/internal/testenv"
)

func TestMaintenance(t *testing.T) {
	t.Parallel()
	runCases(t, maintenanceCases)
}

// minVersion is the oldest etcd version for which Kubernetes uses RequestProgress (3.5.13 in
// the 3.5 line); a store must report at least this.
var minVersion = semver.New("3.5.13")

var maintenanceCases = []conformanceCase{
	{"status", func(e *env) {
		e.put(e.k("a"), "1")
		cur := e.rev()
		st := res(e.c.Status(testCtx(e.t, 5*time.Second), e.s.endpoint)).must(e.t)
		v, err := semver.NewVersion(st.Version)
		if err != nil {
			e.t.Fatalf("status version %q is not semver: %v", st.Version, err)
		}
		if v.LessThan(*minVersion) {
			e.t.Fatalf("status version %s < %s", v, minVersion)
		}
		if st.DbSize <= 0 || st.Header.Revision != cur {
			e.t.Fatalf("status: db size %d, revision %d (want %d)", st.DbSize, st.Header.Revision, cur)
		}
		// A single member leads itself (etcdctl's IS LEADER column).
		if st.Leader == 0 || st.Leader != st.Header.MemberId {
			e.t.Fatalf("status: leader %x, member %x", st.Leader, st.Header.MemberId)
		}
		e.t.Logf("version %s, db size %d, in use %d", st.Version, st.DbSize, st.DbSizeInUse)
	}},
	{"defragment", func(e *env) {
		for i := range 100 {
			e.put(e.k(fmt.Sprint(i%10)), strings.Repeat("x", 1000))
		}
		res(e.c.Defragment(testCtx(e.t, 30*time.Second), e.s.endpoint)).must(e.t)
		if r := e.get(e.k(""), clientv3.WithPrefix(), clientv3.WithCountOnly()); r.Count != 10 {
			e.t.Fatalf("after defragment: %d keys, want 10", r.Count)
		}
		e.put(e.k("after"), "1")
	}},
	{"hash_kv", func(e *env) {
		// Two fresh members given the same writes have the same hash; a further write on one
		// changes it.
		a, b := e.tg.start(e.t, serverOptions{}), e.tg.start(e.t, serverOptions{})
		ca, cb := a.client(e.t), b.client(e.t)
		ctx := testCtx(e.t, 10*time.Second)
		for _, c := range []*clientv3.Client{ca, cb} {
			for i := range 20 {
				res(c.Put(ctx, fmt.Sprintf("k%d", i%7), fmt.Sprint(i))).must(e.t)
			}
			res(c.Delete(ctx, "k3")).must(e.t)
		}
		ha := res(ca.HashKV(ctx, a.endpoint, 0)).must(e.t)
		hb := res(cb.HashKV(ctx, b.endpoint, 0)).must(e.t)
		if ha.Hash != hb.Hash || ha.Header.Revision != hb.Header.Revision {
			e.t.Fatalf("same data, hashes %d at %d and %d at %d", ha.Hash, ha.Header.Revision, hb.Hash, hb.Header.Revision)
		}
		if again := res(ca.HashKV(ctx, a.endpoint, 0)).must(e.t); again.Hash != ha.Hash {
			e.t.Fatalf("hash not stable: %d then %d", ha.Hash, again.Hash)
		}
		res(ca.Put(ctx, "k1", "different")).must(e.t)
		hc := res(ca.HashKV(ctx, a.endpoint, 0)).must(e.t)
		if hc.Hash == ha.Hash {
			e.t.Fatal("a further write left the hash unchanged")
		}
		// A hash at a past revision ignores later writes.
		if past := res(ca.HashKV(ctx, a.endpoint, ha.Header.Revision)).must(e.t); past.Hash != ha.Hash {
			e.t.Fatalf("hash at revision %d: %d, want %d", ha.Header.Revision, past.Hash, ha.Hash)
		}
	}},
	{"alarm", func(e *env) {
		ctx := testCtx(e.t, 5*time.Second)
		if r := res(e.c.AlarmList(ctx)).must(e.t); len(r.Alarms) != 0 {
			e.t.Fatalf("alarms on a healthy member: %v", r.Alarms)
		}
		st := res(e.c.Status(ctx, e.s.endpoint)).must(e.t)
		res(e.c.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: st.Header.MemberId, Alarm: etcdserverpb.AlarmType_NOSPACE})).must(e.t)
	}},
	{"member_list", func(e *env) {
		ctx := testCtx(e.t, 5*time.Second)
		r := res(e.c.MemberList(ctx)).must(e.t)
		if len(r.Members) != 1 {
			e.t.Fatalf("members %v", r.Members)
		}
		m := r.Members[0]
		if m.Name != e.s.name || len(m.ClientURLs) != 1 || m.ClientURLs[0] != "http://"+e.s.endpoint || m.IsLearner {
			e.t.Fatalf("member %+v, want name %s client URL http://%s", m, e.s.name, e.s.endpoint)
		}
		st := res(e.c.Status(ctx, e.s.endpoint)).must(e.t)
		if m.ID != st.Header.MemberId || r.Header.ClusterId != st.Header.ClusterId {
			e.t.Fatalf("member id %x / cluster %x, status says %x / %x", m.ID, r.Header.ClusterId, st.Header.MemberId, st.Header.ClusterId)
		}
	}},
	{"auth", func(e *env) {
		ctx := testCtx(e.t, 5*time.Second)
		// The auth suites (auth_test.go) compare the Auth API itself; here: it answers, off.
		st, err := e.c.AuthStatus(ctx)
		if err != nil || st.Enabled || st.AuthRevision != 1 {
			e.t.Fatalf("auth status: %v %+v, want disabled at revision 1", err, st)
		}
	}},
	{"metrics_and_health", func(e *env) {
		port := testenv.FreePort(e.t)
		e.tg.start(e.t, serverOptions{metricsPort: port})
		for path, want := range map[string]string{"/health": `"health":"true"`, "/metrics": "# TYPE "} {
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
			if err != nil {
				e.t.Fatalf("GET %s: %v", path, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
				e.t.Errorf("GET %s: %d %.200q, want 200 containing %q", path, resp.StatusCode, body, want)
			}
		}
	}},
}
