package rtdb

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/continuum-project/continuum/internal/kv/mvcc"
	"github.com/continuum-project/continuum/internal/kv/replication"
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
func (s *Server) serveConflicts(ctx context.Context, w http.ResponseWriter, method, ns, print string) error {
	if method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		return &httpError{http.StatusMethodNotAllowed, fmt.Sprintf("%s %s: only GET is allowed", method, ConflictsPath)}
	}
	switch print {
	case "", "pretty", "silent":
	default:
		return badRequest("Invalid print argument %q: want pretty or silent", print)
	}
	base := s.st.key(ns, nil)
	resp, err := replication.QueryConflicts(ctx, s.kv.ActiveConnection(), []byte(base))
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
			cf.Lost = json.RawMessage(c.LostValue)
			if !json.Valid(c.LostValue) { // not written by a realtime database: show its bytes
				b, _ := json.Marshal(string(c.LostValue))
				cf.Lost = b
			}
		}
		out.Conflicts = append(out.Conflicts, cf)
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

func stampText(st mvcc.Stamp) string {
	return fmt.Sprintf("%d.%d@%x", st.Time.Wall, st.Time.Logical, st.Origin)
}
