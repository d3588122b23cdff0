package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/continuum-project/continuum/internal/kv/kvclient"
	"github.com/continuum-project/continuum/internal/stream/rtdb/auth"
)

// ConflictsPath is where a server lists the writes that lost to concurrent ones on its kv member
// (GET only, ?ns= as elsewhere). A path starting with "." cannot be a Firebase key, so it never
// shadows data (as Firebase's own "/.settings/rules.json").
const ConflictsPath = "/.conflicts.json"

// Conflicts is the answer to GET /.conflicts.json: the kv member's conflict log for one
// namespace (mvcc.Conflict), oldest first.
type Conflicts struct {
	// Member is the name of the kv member the server reads through.
	Member string `json:"member"`
	// Total counts every conflict that member recorded since it started, over all namespaces,
	// including those its bounded log (1024 by default) no longer holds.
	Total     uint64     `json:"total"`
	Conflicts []Conflict `json:"conflicts"`
	// Hidden are leaves stored with children under them: one side wrote the leaf while the
	// other, cut off from it, wrote under it. Both keys survive (they are different keys, so no
	// stamp decides between them), reads show the children, and the next write at or above the
	// leaf removes it. Read from the namespace as it is now, on every member alike.
	Hidden []HiddenLeaf `json:"hidden"`
}

// HiddenLeaf is a leaf that reads do not show because children exist under it.
type HiddenLeaf struct {
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value"`
}

// Conflict is one leaf write that lost. Writes are stored one kv key per leaf, so a subtree
// written on both sides while cut off gives one Conflict per leaf of the losing write whose key
// the winner also wrote or deleted.
type Conflict struct {
	Path string `json:"path"` // the leaf's path, "/" for the root
	// Lost is the value the losing write put there (null with LostDeleted: it deleted the leaf
	// and the leaf lives on); Origin is the name of the kv member that took that write.
	Lost        json.RawMessage `json:"lost"`
	LostDeleted bool            `json:"lost_deleted"`
	Origin      string          `json:"origin"`
	// KeptDeleted: what won was a deletion (the value now read there is null).
	KeptDeleted bool `json:"kept_deleted"`
	// The stamps (HLC wall ns.logical@member id, hex) that decided: the greater one wins.
	LostStamp string `json:"lost_stamp"`
	KeptStamp string `json:"kept_stamp"`
	// Revision is the kv revision, on the member read, at which the losing write arrived.
	Revision int64 `json:"revision"`
}

// serveConflicts answers GET /.conflicts.json?ns=: the kv member's conflict log under the
// namespace, read through the Status service of continuum kv on the server's kv connection.
// Admins only (a database secret; "owner" in emulator mode), as /.settings/rules.json: the lost
// values come from anywhere in the tree, and no rule grants a caller what someone else lost.
func (s *Server) serveConflicts(ctx context.Context, w http.ResponseWriter, method, ns, print string) error {
	if a := auth.AuthFrom(ctx); a == nil || !a.Admin {
		return auth.ErrPermissionDenied
	}
	if method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		return &httpError{http.StatusMethodNotAllowed, fmt.Sprintf("%s %s: only GET is allowed", method, ConflictsPath)}
	}
	switch print {
	case "", "pretty", "silent":
	default:
		return badRequest("Invalid print argument %q: want pretty or silent", print)
	}
	base := s.st.Key(ns, nil)
	resp, err := kvclient.QueryConflicts(ctx, s.kv.ActiveConnection(), []byte(base))
	if status.Code(err) == codes.Unimplemented {
		return &httpError{http.StatusNotImplemented, fmt.Sprintf("%s: the kv store at %s keeps no conflict log "+
			"(it is not a member of a continuum kv cluster: conflicts arise only between members)", ConflictsPath, strings.Join(s.cfg.KVEndpoints, ","))}
	}
	if err != nil {
		return fmt.Errorf("conflict log: %w", err)
	}
	out := Conflicts{Member: resp.Name(resp.MemberID), Total: resp.Total, Conflicts: []Conflict{}}
	for _, c := range resp.Conflicts {
		path, ok := leafPath(base, string(c.Key))
		if !ok {
			continue // another namespace whose name starts with this one's
		}
		cf := Conflict{Path: path, LostDeleted: c.LostDeleted, KeptDeleted: c.KeptDeleted, Origin: resp.Name(c.Lost.Origin),
			LostStamp: stampText(c.Lost), KeptStamp: stampText(c.Kept), Revision: c.Revision, Lost: json.RawMessage("null")}
		if cf.Origin == "" {
			cf.Origin = fmt.Sprintf("%x", c.Lost.Origin)
		}
		if !c.LostDeleted {
			cf.Lost = jsonOrString(c.LostValue) // not JSON: not written by a realtime database
		}
		out.Conflicts = append(out.Conflicts, cf)
	}
	if out.Hidden, err = s.hiddenLeaves(ctx, base); err != nil {
		return fmt.Errorf("hidden leaves: %w", err)
	}
	if print == "silent" {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	var b []byte
	if print == "pretty" {
		b, err = json.MarshalIndent(out, "", "  ")
	} else {
		b, err = json.Marshal(out)
	}
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Write(b)
	return nil
}

// leafPath is the Firebase path of kv key k under the namespace key base.
func leafPath(base, k string) (string, bool) {
	switch {
	case k == base:
		return "/", true
	case strings.HasPrefix(k, base+"/"):
		return k[len(base):], true
	}
	return "", false
}

func stampText(st kvclient.Stamp) string {
	return fmt.Sprintf("%d.%d@%x", st.Time.Wall, st.Time.Logical, st.Origin)
}

// hiddenLeaves finds the leaves under base that have children: it lists the namespace's keys
// (keys only, one Range), then reads the values of those whose path is an ancestor of another
// key. It reads the whole namespace's key list, which is why it is only on this admin path.
func (s *Server) hiddenLeaves(ctx context.Context, base string) ([]HiddenLeaf, error) {
	resp, err := s.kv.Txn(ctx).Then(clientv3.OpGet(base), clientv3.OpGet(base+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly())).Commit()
	if err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	for _, r := range resp.Responses {
		for _, kv := range r.GetResponseRange().Kvs {
			keys[string(kv.Key)] = true
		}
	}
	hidden := map[string]bool{}
	for k := range keys {
		for a := k; len(a) > len(base); {
			a = a[:strings.LastIndexByte(a, '/')]
			if keys[a] {
				hidden[a] = true
			}
		}
	}
	out := []HiddenLeaf{}
	if len(hidden) == 0 {
		return out, nil
	}
	var ops []clientv3.Op
	for k := range hidden {
		ops = append(ops, clientv3.OpGet(k))
	}
	// A Txn holds at most 128 ops (kv's and etcd's default): read in slices of 100, each at
	// its own revision (a value written meanwhile shows as it is then; a leaf gone is skipped).
	for len(ops) > 0 {
		n := min(len(ops), 100)
		r, err := s.kv.Txn(ctx).Then(ops[:n]...).Commit()
		if err != nil {
			return nil, err
		}
		ops = ops[n:]
		for _, rr := range r.Responses {
			for _, kv := range rr.GetResponseRange().Kvs {
				path, _ := leafPath(base, string(kv.Key))
				out = append(out, HiddenLeaf{Path: path, Value: jsonOrString(kv.Value)})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// jsonOrString is b when it is JSON (a leaf the database wrote), else b as a JSON string.
func jsonOrString(b []byte) json.RawMessage {
	if json.Valid(b) {
		return append(json.RawMessage(nil), b...)
	}
	q, _ := json.Marshal(string(b))
	return q
}
