package compat

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// env is what a conformance case gets: a client of the target's server and a key prefix of
// its own, so that the cases of one suite can share a server.
type env struct {
	t      *testing.T
	tg     *target
	s      *server
	c      *clientv3.Client
	prefix string
}

func (e *env) k(name string) string { return e.prefix + name }

func (e *env) put(key, val string, opts ...clientv3.OpOption) *clientv3.PutResponse {
	e.t.Helper()
	return res(e.c.Put(testCtx(e.t, 10*time.Second), key, val, opts...)).must(e.t)
}

func (e *env) get(key string, opts ...clientv3.OpOption) *clientv3.GetResponse {
	e.t.Helper()
	return res(e.c.Get(testCtx(e.t, 10*time.Second), key, opts...)).must(e.t)
}

func (e *env) rev() int64 {
	e.t.Helper()
	return e.get("health").Header.Revision
}

type conformanceCase struct {
	name string
	run  func(e *env)
}

// runCases runs cases in order against one fresh server per target.
func runCases(t *testing.T, cases []conformanceCase) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		s := tg.start(t, serverOptions{})
		c := s.client(t)
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				tc.run(&env{t: t, tg: tg, s: s, c: c, prefix: t.Name() + "/"})
			})
		}
	})
}
