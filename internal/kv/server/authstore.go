package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The root user and role, with etcd's rules: auth enable needs a user "root" holding the role
// "root" (the role needs no definition: holding it grants everything); while auth is enabled
// neither can be deleted and root cannot lose the role, so the cluster can always be
// administered.
const (
	rootUser = "root"
	rootRole = "root"
)

// authFile holds the auth store in the data directory, beside members.json.
const authFile = "auth.json"

// errNoPasswordUser is etcd's answer to a password given for a user added with
// --no-password. etcd's v3rpc layer has no rpctypes error for it, so it reaches clients as
// codes.Unknown with the auth package's text; so it does here.
var errNoPasswordUser = status.Error(codes.Unknown, "auth: authentication failed, password was given for no password user")

// authState is what authStore persists: etcd's auth buckets (enabled flag, revision, users,
// roles), as JSON. Passwords are bcrypt hashes.
type authState struct {
	Enabled  bool           `json:"enabled"`
	Revision uint64         `json:"revision"`
	Users    []*authpb.User `json:"users,omitempty"`
	Roles    []*authpb.Role `json:"roles,omitempty"`
	// Stamp orders copies of the store between members (authreplicate.go).
	Stamp authStamp `json:"stamp"`
	// EnabledAt is the revision of the last auth enable, PasswordAt per user the revision of
	// its add or last password change: a member adopting a copy whose EnabledAt differs from
	// its own missed a disable (and enable) and drops every simple token, one whose
	// PasswordAt for a user differs drops that user's (authStore.adopt).
	EnabledAt  authRev            `json:"enabled_at"`
	PasswordAt map[string]authRev `json:"password_at,omitempty"`
}

// validate checks a state read from disk or from a peer: named, non-null users, roles and
// permissions, permission ranges etcd would accept, and a revision (>= 1).
func (st *authState) validate() error {
	if st.Revision == 0 {
		return errors.New("auth revision 0: revisions start at 1")
	}
	users := map[string]bool{}
	for i, u := range st.Users {
		if u == nil || len(u.Name) == 0 {
			return fmt.Errorf("user %d has no name", i)
		}
		if users[string(u.Name)] {
			return fmt.Errorf("user %q listed twice", u.Name)
		}
		users[string(u.Name)] = true
	}
	roles := map[string]bool{}
	for i, r := range st.Roles {
		if r == nil || len(r.Name) == 0 {
			return fmt.Errorf("role %d has no name", i)
		}
		if roles[string(r.Name)] {
			return fmt.Errorf("role %q listed twice", r.Name)
		}
		roles[string(r.Name)] = true
		for j, p := range r.KeyPermission {
			if p == nil || !validPermRange(p.Key, p.RangeEnd) {
				return fmt.Errorf("role %q: permission %d is not a valid key range", r.Name, j)
			}
		}
	}
	return nil
}

// authStore is the member's users, roles and permissions, with etcd's rules and errors.
//
// The request path reads only enabled (one atomic load when auth is off); when it is on, a
// permission check takes mu for reading and walks the caller's merged permissions (perms),
// which every change rebuilds whole, as etcd rebuilds its range permission cache.
type authStore struct {
	path string
	cost int // bcrypt cost of new passwords

	enabled atomic.Bool
	// revision is written under mu (with the state it is the revision of), read without it.
	revision atomic.Pointer[authRev]

	mu    sync.RWMutex
	users map[string]*authpb.User // guarded by mu
	roles map[string]*authpb.Role // guarded by mu
	perms map[string]*userPerms   // guarded by mu; per user, rebuilt on every change

	// member is this member's id (revisions' stamps); encoded is the copy peers get
	// (replicaState).
	member  uint64
	encoded atomic.Pointer[[]byte]

	// enabledAt and passwordAt are authState's EnabledAt and PasswordAt; guarded by mu.
	enabledAt  authRev
	passwordAt map[string]authRev

	// dummyHash is compared against when a user is unknown, so that "no such user" costs
	// the same bcrypt work as "wrong password" (etcd answers the first at once; see
	// docs/kv.md, Authentication). It is hashed once, when auth is first on (at open, by
	// enable, or by adopting a copy that has it on), so before any password is checked; a
	// member whose auth stays off hashes nothing (a bcrypt hash at the default cost was most
	// of a server's start: ~0.4 s of CPU under -race, in every test that starts one).
	dummyHash func() ([]byte, error)

	tokens tokenProvider
}

// openAuthStore loads <dataDir>/auth.json, or starts an empty store at revision 1 (etcd's
// first auth revision).
func openAuthStore(dataDir string, cost int, tokens tokenProvider) (*authStore, error) {
	if cost == 0 {
		cost = bcrypt.DefaultCost
	}
	if cost < bcrypt.MinCost || cost > bcrypt.MaxCost {
		return nil, fmt.Errorf("--bcrypt-cost %d: must be between %d and %d", cost, bcrypt.MinCost, bcrypt.MaxCost)
	}
	a := &authStore{
		path: filepath.Join(dataDir, authFile), cost: cost, tokens: tokens,
		dummyHash: sync.OnceValues(func() ([]byte, error) {
			return bcrypt.GenerateFromPassword([]byte("continuum kv: no such user"), cost)
		}),
		users: map[string]*authpb.User{}, roles: map[string]*authpb.Role{}, passwordAt: map[string]authRev{},
	}
	var st authState
	b, err := os.ReadFile(a.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		st.Revision = 1
	case err != nil:
		return nil, err
	default:
		if err := json.Unmarshal(b, &st); err != nil {
			return nil, fmt.Errorf("%s: %w", a.path, err)
		}
		if err := st.validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", a.path, err)
		}
	}
	for _, u := range st.Users {
		a.users[string(u.Name)] = u
	}
	for _, r := range st.Roles {
		a.roles[string(r.Name)] = r
	}
	a.revision.Store(&authRev{Rev: st.Revision, Stamp: st.Stamp})
	if st.Enabled {
		if _, err := a.dummyHash(); err != nil {
			return nil, err
		}
	}
	a.enabled.Store(st.Enabled)
	a.enabledAt = st.EnabledAt
	for n, r := range st.PasswordAt {
		a.passwordAt[n] = r
	}
	if st.Stamp != (authStamp{}) {
		a.encoded.Store(&b)
	}
	a.rebuildLocked()
	return a, nil
}

// isEnabled is the request path's whole cost while auth is off.
func (a *authStore) isEnabled() bool { return a.enabled.Load() }

func (a *authStore) rev() authRev { return *a.revision.Load() }

// changeLocked commits a local change: a new revision (the counter bumped if bump; a new
// stamp always, so that the change is ordered after every copy this member had).
func (a *authStore) changeLocked(bump bool) error {
	return a.commitLocked(a.rev().next(bump, a.member))
}

// commitLocked sets the revision (a local change's, or an adopted copy's), rebuilds the
// permission cache and writes the store; on a write error the in-memory state is still
// changed, and the caller reports the error.
func (a *authStore) commitLocked(rev authRev) error {
	a.revision.Store(&rev)
	a.rebuildLocked()
	st := authState{Enabled: a.enabled.Load(), Revision: rev.Rev, Stamp: rev.Stamp, EnabledAt: a.enabledAt, PasswordAt: a.passwordAt}
	for _, n := range sortedKeys(a.users) {
		st.Users = append(st.Users, a.users[n])
	}
	for _, n := range sortedKeys(a.roles) {
		st.Roles = append(st.Roles, a.roles[n])
	}
	b, err := json.Marshal(&st)
	if err != nil {
		return err
	}
	a.encoded.Store(&b)
	if err := writeFileAtomic(a.path, b); err != nil {
		return fmt.Errorf("save %s: %w", a.path, err)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// writeFileAtomic writes via a synced temporary file and a rename: a crash leaves the old
// file or the new one.
func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func hasRootRole(u *authpb.User) bool {
	i := sort.SearchStrings(u.Roles, rootRole)
	return i < len(u.Roles) && u.Roles[i] == rootRole
}

// enable turns auth on if root exists with the root role (etcd's AuthEnable; enabling twice
// is not an error and does not bump the revision).
func (a *authStore) enable() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.enabled.Load() {
		return nil
	}
	u := a.users[rootUser]
	if u == nil {
		return rpctypes.ErrGRPCRootUserNotExist
	}
	if !hasRootRole(u) {
		return rpctypes.ErrGRPCRootRoleNotExist
	}
	if _, err := a.dummyHash(); err != nil {
		return err
	}
	a.enabled.Store(true)
	a.tokens.enable()
	rev := a.rev().next(false, a.member)
	a.enabledAt = rev
	return a.commitLocked(rev)
}

func (a *authStore) disable() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.enabled.Load() {
		return nil
	}
	a.enabled.Store(false)
	a.tokens.disable()
	return a.changeLocked(true)
}

// checkPassword is etcd's CheckPassword: the bcrypt comparison runs outside the lock. An
// unknown user is compared against a dummy hash of the same cost, so the answer takes as long
// as for a wrong password.
func (a *authStore) checkPassword(name, password string) (authRev, error) {
	if !a.enabled.Load() {
		return authRev{}, rpctypes.ErrGRPCAuthNotEnabled
	}
	a.mu.RLock()
	u := a.users[name]
	rev := a.rev()
	a.mu.RUnlock()
	hash, err := a.dummyHash()
	if err != nil {
		return authRev{}, err
	}
	if u != nil {
		if u.Options != nil && u.Options.NoPassword {
			return authRev{}, errNoPasswordUser
		}
		hash = u.Password
	}
	if bcrypt.CompareHashAndPassword(hash, []byte(password)) != nil || u == nil {
		return authRev{}, rpctypes.ErrGRPCAuthFailed
	}
	return rev, nil
}

// hashPassword is done by the API layer, outside the store's lock, as etcd does.
func (a *authStore) hashPassword(p string) ([]byte, error) {
	return bcrypt.GenerateFromPassword([]byte(p), a.cost)
}

func (a *authStore) userAdd(name string, hash []byte, opts *authpb.UserAddOptions) error {
	if name == "" {
		return rpctypes.ErrGRPCUserEmpty
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.users[name] != nil {
		return rpctypes.ErrGRPCUserAlreadyExist
	}
	if opts == nil {
		opts = &authpb.UserAddOptions{}
	}
	u := &authpb.User{Name: []byte(name), Options: opts}
	if !opts.NoPassword {
		u.Password = hash
	}
	a.users[name] = u
	rev := a.rev().next(true, a.member)
	a.passwordAt[name] = rev
	return a.commitLocked(rev)
}

func (a *authStore) userDelete(name string) error {
	if a.enabled.Load() && name == rootUser {
		return rpctypes.ErrGRPCInvalidAuthMgmt
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.users[name] == nil {
		return rpctypes.ErrGRPCUserNotFound
	}
	delete(a.users, name)
	delete(a.passwordAt, name)
	a.tokens.invalidateUser(name)
	return a.changeLocked(true)
}

func (a *authStore) userChangePassword(name string, hash []byte) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.users[name]
	if u == nil {
		return rpctypes.ErrGRPCUserNotFound
	}
	nu := &authpb.User{Name: u.Name, Roles: u.Roles, Options: u.Options}
	if u.Options == nil || !u.Options.NoPassword {
		nu.Password = hash
	}
	a.users[name] = nu
	a.tokens.invalidateUser(name)
	rev := a.rev().next(true, a.member)
	a.passwordAt[name] = rev
	return a.commitLocked(rev)
}

func (a *authStore) userGrantRole(user, role string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.users[user]
	if u == nil {
		return rpctypes.ErrGRPCUserNotFound
	}
	if role != rootRole && a.roles[role] == nil {
		return rpctypes.ErrGRPCRoleNotFound
	}
	i := sort.SearchStrings(u.Roles, role)
	if i < len(u.Roles) && u.Roles[i] == role {
		return nil // etcd ignores a duplicate grant, without a new revision
	}
	roles := append(append([]string{}, u.Roles...), role)
	sort.Strings(roles)
	a.users[user] = &authpb.User{Name: u.Name, Password: u.Password, Options: u.Options, Roles: roles}
	return a.changeLocked(true)
}

func (a *authStore) userRevokeRole(user, role string) error {
	if a.enabled.Load() && user == rootUser && role == rootRole {
		return rpctypes.ErrGRPCInvalidAuthMgmt
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.users[user]
	if u == nil {
		return rpctypes.ErrGRPCUserNotFound
	}
	var roles []string
	for _, r := range u.Roles {
		if r != role {
			roles = append(roles, r)
		}
	}
	if len(roles) == len(u.Roles) {
		return rpctypes.ErrGRPCRoleNotGranted
	}
	a.users[user] = &authpb.User{Name: u.Name, Password: u.Password, Options: u.Options, Roles: roles}
	return a.changeLocked(true)
}

func (a *authStore) userGet(name string) ([]string, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	u := a.users[name]
	if u == nil {
		return nil, rpctypes.ErrGRPCUserNotFound
	}
	return append([]string(nil), u.Roles...), nil
}

func (a *authStore) userList() []string {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return sortedKeys(a.users)
}

func (a *authStore) hasRole(user, role string) bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	u := a.users[user]
	if u == nil {
		return false
	}
	for _, r := range u.Roles {
		if r == role {
			return true
		}
	}
	return false
}

func (a *authStore) roleAdd(name string) error {
	if name == "" {
		return rpctypes.ErrGRPCRoleEmpty
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.roles[name] != nil {
		return rpctypes.ErrGRPCRoleAlreadyExist
	}
	a.roles[name] = &authpb.Role{Name: []byte(name)}
	return a.changeLocked(true)
}

// rootPerm is what RoleGet shows for the root role: read and write on every key.
var rootPerm = authpb.Permission{PermType: authpb.READWRITE, Key: []byte{}, RangeEnd: []byte{0}}

func (a *authStore) roleGet(name string) ([]*authpb.Permission, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	r := a.roles[name]
	if r == nil {
		return nil, rpctypes.ErrGRPCRoleNotFound
	}
	if name == rootRole {
		p := rootPerm
		return []*authpb.Permission{&p}, nil
	}
	return append([]*authpb.Permission(nil), r.KeyPermission...), nil
}

func (a *authStore) roleList() []string {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return sortedKeys(a.roles)
}

// roleDelete also takes the role from every user holding it, as etcd does.
func (a *authStore) roleDelete(name string) error {
	if a.enabled.Load() && name == rootRole {
		return rpctypes.ErrGRPCInvalidAuthMgmt
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.roles[name] == nil {
		return rpctypes.ErrGRPCRoleNotFound
	}
	delete(a.roles, name)
	for n, u := range a.users {
		var roles []string
		for _, r := range u.Roles {
			if r != name {
				roles = append(roles, r)
			}
		}
		if len(roles) != len(u.Roles) {
			a.users[n] = &authpb.User{Name: u.Name, Password: u.Password, Options: u.Options, Roles: roles}
		}
	}
	return a.changeLocked(true)
}

// validPermRange is etcd's rule: a key is required; the end is empty (one key), after the key,
// or "\x00" (every key from the key on).
func validPermRange(key, end []byte) bool {
	if len(key) == 0 {
		return false
	}
	return len(end) == 0 || bytes.Compare(key, end) < 0 || isOpenEnd(end)
}

func isOpenEnd(end []byte) bool { return len(end) == 1 && end[0] == 0 }

// roleGrantPermission replaces the type of a permission with the same key and end, or adds it;
// a role's permissions stay sorted by key, as etcd keeps them.
func (a *authStore) roleGrantPermission(name string, p *authpb.Permission) error {
	if p == nil {
		return rpctypes.ErrGRPCPermissionNotGiven
	}
	if !validPermRange(p.Key, p.RangeEnd) {
		return rpctypes.ErrGRPCInvalidAuthMgmt
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.roles[name]
	if r == nil {
		return rpctypes.ErrGRPCRoleNotFound
	}
	perms := make([]*authpb.Permission, 0, len(r.KeyPermission)+1)
	replaced := false
	for _, q := range r.KeyPermission {
		if bytes.Equal(q.Key, p.Key) && bytes.Equal(q.RangeEnd, p.RangeEnd) {
			q = &authpb.Permission{Key: q.Key, RangeEnd: q.RangeEnd, PermType: p.PermType}
			replaced = true
		}
		perms = append(perms, q)
	}
	if !replaced {
		perms = append(perms, &authpb.Permission{Key: p.Key, RangeEnd: p.RangeEnd, PermType: p.PermType})
		sort.SliceStable(perms, func(i, j int) bool { return bytes.Compare(perms[i].Key, perms[j].Key) < 0 })
	}
	a.roles[name] = &authpb.Role{Name: r.Name, KeyPermission: perms}
	return a.changeLocked(true)
}

func (a *authStore) roleRevokePermission(name string, key, end []byte) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.roles[name]
	if r == nil {
		return rpctypes.ErrGRPCRoleNotFound
	}
	var perms []*authpb.Permission
	for _, q := range r.KeyPermission {
		if !bytes.Equal(q.Key, key) || !bytes.Equal(q.RangeEnd, end) {
			perms = append(perms, q)
		}
	}
	if len(perms) == len(r.KeyPermission) {
		return rpctypes.ErrGRPCPermissionNotGranted
	}
	a.roles[name] = &authpb.Role{Name: r.Name, KeyPermission: perms}
	return a.changeLocked(true)
}

// status is AuthStatus' answer.
func (a *authStore) status() *pb.AuthStatusResponse {
	return &pb.AuthStatusResponse{Header: &pb.ResponseHeader{}, Enabled: a.enabled.Load(), AuthRevision: a.rev().Rev}
}
