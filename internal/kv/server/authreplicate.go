package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The auth store in a cluster.
//
// Replication: the whole store (enabled flag, users, roles) travels as one value beside the
// data, on every Sync stream's first batch and heartbeats (replication.Config.StateOut/In),
// and each copy carries the revision of the change that made it (authRev): etcd's counter,
// then the change's stamp (wall time, member id), the wall time made larger than the previous
// stamp's as a hybrid logical clock does. A member adopts a copy whose revision is larger than
// its own and takes that revision as it is, so every member ends with the copy of the last
// change, and with the same revision, whatever the order copies arrive in, and a member that
// relays its copy spreads it through a partial mesh.
//
// Invariants, which token checks rely on: a member's revision only grows; a change made on a
// member is ordered after every copy that member had adopted (its counter is one more, its
// stamp later); two members with the same revision hold the same copy. So a token issued at
// revision r (carried whole in a JWT) is judged the same on every member: old wherever the
// store has moved past r, whichever member made the change.
//
// Two changes made concurrently on two members (a partition) do not merge: the copy with the
// larger revision wins whole (the side that made more changes, else the later stamp), and the
// other side's changes are lost. What bounds this is the majority gate: a member that has not
// heard from a majority of the cluster (itself included) for longer than
// Config.AuthMajorityTimeout refuses every auth change (checkAuthChange), and every KV write
// while auth is enabled. A member cut off from the majority therefore stops making auth
// changes within the timeout, and a revocation made on the majority side either reaches a
// member or stops its writes within the timeout plus the heartbeat. Inside that window (and
// in the first timeout after a member starts) a change on the cut-off side can still win
// over one made on the majority side; make auth changes on one member, or on the majority
// side. Reads are not bounded (a member cut off keeps serving reads with the permissions it
// knows), as reads of its own state are what a local-first member is for.

// authStamp is a change's stamp: the wall time on the member that made it (larger than the
// stamp of every copy it had), then the member's id.
type authStamp struct {
	Wall   int64  `json:"wall"`
	Member uint64 `json:"member"`
}

// String is the stamp as a JWT carries it (the "stamp" claim): wall.member, in decimal.
func (a authStamp) String() string {
	return strconv.FormatInt(a.Wall, 10) + "." + strconv.FormatUint(a.Member, 10)
}

func parseAuthStamp(s string) (authStamp, bool) {
	w, m, ok := strings.Cut(s, ".")
	if !ok {
		return authStamp{}, false
	}
	wall, err1 := strconv.ParseInt(w, 10, 64)
	member, err2 := strconv.ParseUint(m, 10, 64)
	return authStamp{Wall: wall, Member: member}, err1 == nil && err2 == nil
}

// authRev is the auth store's revision as the cluster orders it: etcd's counter (every change
// but auth enable bumps it, as in etcd; what AuthStatus shows and a JWT's "revision" claim
// holds), then the stamp of the change that made the copy. Rev 0 is nobody's revision.
type authRev struct {
	Rev   uint64
	Stamp authStamp
}

// less is the cluster's order of revisions: a token issued at r is old where r.less(current).
func (r authRev) less(o authRev) bool {
	if r.Rev != o.Rev {
		return r.Rev < o.Rev
	}
	if r.Stamp.Wall != o.Stamp.Wall {
		return r.Stamp.Wall < o.Stamp.Wall
	}
	return r.Stamp.Member < o.Stamp.Member
}

// next is the revision of a local change on a store at r.
func (r authRev) next(bump bool, member uint64) authRev {
	if bump {
		r.Rev++
	}
	w := time.Now().UnixNano()
	if w <= r.Stamp.Wall {
		w = r.Stamp.Wall + 1
	}
	r.Stamp = authStamp{Wall: w, Member: member}
	return r
}

// replicaState is StateOut: the encoded copy, kept by commitLocked (nil before any change:
// nothing to spread, a fresh member adopts whatever comes).
func (a *authStore) replicaState() []byte {
	if p := a.encoded.Load(); p != nil {
		return *p
	}
	return nil
}

// adopt is StateIn: take a peer's copy if its revision is larger, with that revision (JWTs
// issued before are old here, as on the member that made the change), and drop the simple
// tokens of users whose password changed or who are gone, as a local change would.
func (a *authStore) adopt(b []byte) error {
	var st authState
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("auth state from a peer: %w", err)
	}
	if err := st.validate(); err != nil {
		return fmt.Errorf("auth state from a peer: %w", err)
	}
	if st.Enabled { // before auth is on here, outside the lock (see dummyHash)
		if _, err := a.dummyHash(); err != nil {
			return err
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	rev := authRev{Rev: st.Revision, Stamp: st.Stamp}
	if !a.rev().less(rev) {
		return nil
	}
	old := a.users
	a.users = map[string]*authpb.User{}
	for _, u := range st.Users {
		a.users[string(u.Name)] = u
	}
	a.roles = map[string]*authpb.Role{}
	for _, r := range st.Roles {
		a.roles[string(r.Name)] = r
	}
	// A user deleted and added again, or whose password changed, has another PasswordAt
	// (compared beside the hash for copies made by members that kept none).
	oldAt := a.passwordAt
	a.passwordAt = map[string]authRev{}
	for n, r := range st.PasswordAt {
		a.passwordAt[n] = r
	}
	for name, u := range old {
		if nu := a.users[name]; nu == nil || !bytes.Equal(nu.Password, u.Password) || oldAt[name] != a.passwordAt[name] {
			a.tokens.invalidateUser(name)
		}
	}
	// Auth disabled, or disabled and enabled again (another EnabledAt) where this member did
	// not see it: every simple token goes, as on the member that disabled it.
	wasOn := a.enabled.Load()
	reenabled := st.EnabledAt != a.enabledAt
	a.enabled.Store(st.Enabled)
	a.enabledAt = st.EnabledAt
	if wasOn && (!st.Enabled || reenabled) {
		a.tokens.disable()
	}
	if st.Enabled && (!wasOn || reenabled) {
		a.tokens.enable()
	}
	return a.commitLocked(rev)
}

// majorityWatch keeps when this member last heard from a majority of the cluster, for the
// write bound. It is computed every tick from the replicator's per-peer contact times, not per
// request, so a write pays one atomic load for it.
//
// The time survives a restart: it is saved in <data-dir>/majority-heard (unix ns, decimal) at
// most once a second while it moves, and when the member stops, and a restarted member starts
// from it, so a restart does not buy a fresh timeout of grace on a copy that may have missed a
// revocation (the saved time lags the real one by at most a second, which only closes the gate
// earlier). A member without the file starts as having never heard from a majority if auth
// is enabled in its data dir and --initial-cluster names other members (its gate is closed
// until it hears from a majority), else as having heard at its start.
type majorityWatch struct {
	heardAt atomic.Int64 // unix ns
	path    string
	saved   int64 // the time last saved (watchMajority's goroutine only)
}

const (
	majorityTick = 100 * time.Millisecond
	majorityFile = "majority-heard"
	majoritySave = time.Second
)

// initMajority sets heardAt before the member serves (clustered members only).
func (s *Server) initMajority() {
	w := &s.majority
	w.path = filepath.Join(s.cfg.DataDir, majorityFile)
	now := time.Now().UnixNano()
	if b, err := os.ReadFile(w.path); err == nil {
		if at, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && at > 0 {
			w.heardAt.Store(min(at, now)) // a clock stepped back does not extend the grace
			w.saved = at
			return
		}
		s.log.Warn("unreadable record of when this member last heard from a majority; starting as never having heard", "file", w.path)
	}
	if s.auth.isEnabled() && len(s.cfg.InitialCluster) > 1 {
		w.heardAt.Store(0)
		return
	}
	w.heardAt.Store(now)
}

// saveMajority writes heardAt if it moved by majoritySave since the last save (force: if it
// moved at all).
func (s *Server) saveMajority(force bool) {
	w := &s.majority
	at := w.heardAt.Load()
	if at == w.saved || (!force && at-w.saved < int64(majoritySave)) {
		return
	}
	if err := writeFileAtomic(w.path, []byte(strconv.FormatInt(at, 10)+"\n")); err != nil {
		s.log.Warn("save when this member last heard from a majority", "file", w.path, "err", err)
		return
	}
	w.saved = at
}

// DefaultAuthMajorityTimeout is --auth-majority-timeout's default; minAuthMajorityTimeout is
// three replication heartbeats (replication.Config.Heartbeat, 1 s), the silence after which
// replication itself takes a link for dead.
const (
	DefaultAuthMajorityTimeout = 30 * time.Second
	minAuthMajorityTimeout     = 3 * time.Second
)

// watchMajority runs until the server stops (clustered members only, after initMajority).
func (s *Server) watchMajority() {
	defer s.wg.Done()
	defer s.saveMajority(true)
	t := time.NewTicker(majorityTick)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.saveMajority(false)
		n := len((&clusterServer{s: s}).members())
		need := n / 2 // peers needed besides this member for a majority of n
		if need == 0 {
			s.majority.heardAt.Store(time.Now().UnixNano())
			continue
		}
		var contacts []int64
		for _, p := range s.repl.Peers() {
			if !p.LastContact.IsZero() {
				contacts = append(contacts, p.LastContact.UnixNano())
			}
		}
		if len(contacts) < need {
			continue // never heard from enough peers: keep the last time
		}
		sort.Slice(contacts, func(i, j int) bool { return contacts[i] > contacts[j] })
		if at := contacts[need-1]; at > s.majority.heardAt.Load() {
			s.majority.heardAt.Store(at)
		}
	}
}

// The refusals of a member cut off from the majority (checkMajority's what).
const (
	writeRefused        = "write refused: authentication is enabled and this member has not heard from a majority of the cluster for %v (--auth-majority-timeout %v), so it may not know of a revocation; reads are served"
	memberChangeRefused = "member change refused: this member has not heard from a majority of the cluster for %v; a membership change needs one within %v (three replication heartbeats, whatever --auth-majority-timeout %v), as etcd's needs a quorum; make it on a member that reaches the majority"
	authChangeRefused   = "auth change refused: this member has not heard from a majority of the cluster for %v (--auth-majority-timeout %v), so its copy of the auth store may be stale and its change would replace changes made on the majority side; make auth changes on a member that reaches the majority"
)

// checkMajority refuses a write (KV writes and lease grants, renewals and revocations while
// auth is enabled, every auth change) when this member has not heard from a majority for
// longer than --auth-majority-timeout, with codes.Unavailable, as etcd refuses a write on a
// member without a leader; what is the refusal's text, with the silence and the timeout.
func (s *Server) checkMajority(what string) error {
	if s.repl == nil || s.cfg.AuthMajorityTimeout <= 0 {
		return nil
	}
	since := time.Duration(time.Now().UnixNano() - s.majority.heardAt.Load())
	if since <= s.cfg.AuthMajorityTimeout {
		return nil
	}
	return status.Errorf(codes.Unavailable, "continuum kv: "+what, since.Round(time.Millisecond), s.cfg.AuthMajorityTimeout)
}

// checkMemberChange gates every membership change (MemberAdd, MemberRemove, MemberUpdate,
// MemberPromote), whether auth is enabled or not and whatever --auth-majority-timeout (0
// included): the member must have heard from a majority of the cluster within three
// replication heartbeats (minAuthMajorityTimeout), as etcd needs a quorum for a membership
// change. A member cut off from the majority could otherwise remove the members it cannot
// reach, count itself a majority of what is left, reopen the auth gate, and after the heal
// spread removals that evict the real majority.
func (s *Server) checkMemberChange(ctx context.Context) error {
	if err := s.checkAdmin(ctx); err != nil {
		return err
	}
	if s.repl == nil {
		return nil
	}
	bound := minAuthMajorityTimeout
	since := time.Duration(time.Now().UnixNano() - s.majority.heardAt.Load())
	if since <= bound {
		return nil
	}
	return status.Errorf(codes.Unavailable, "continuum kv: "+memberChangeRefused, since.Round(time.Millisecond), bound, s.cfg.AuthMajorityTimeout)
}

// txnWrites reports whether a Txn may write (the bound spares read-only transactions).
func txnWrites(r *pb.TxnRequest) bool {
	for _, ops := range [][]*pb.RequestOp{r.Success, r.Failure} {
		for _, op := range ops {
			switch u := op.Request.(type) {
			case *pb.RequestOp_RequestPut, *pb.RequestOp_RequestDeleteRange:
				return true
			case *pb.RequestOp_RequestTxn:
				if u.RequestTxn != nil && txnWrites(u.RequestTxn) {
					return true
				}
			}
		}
	}
	return false
}
