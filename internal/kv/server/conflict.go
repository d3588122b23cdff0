package server

import (
	"fmt"

	"github.com/continuum-project/continuum/internal/kv/mvcc"
)

// conflict reports a peer's write that lost here to a concurrent one (mvcc.Config.OnConflict):
// a log line at Warn (a value written by a client is gone from the cluster), and a line in the
// --events-file. The value itself is logged only in the events file, not in the log. It runs on
// the store's commit goroutine, so it only formats and appends.
func (s *Server) conflict(c mvcc.Conflict) {
	origin := fmt.Sprintf("%x", c.Lost.Origin)
	if s.repl != nil {
		for _, m := range s.repl.Members() {
			if m.ID == c.Lost.Origin && m.Name != "" {
				origin = m.Name
			}
		}
	}
	s.log.Warn("peer write lost to a concurrent write (last writer wins)", "key", string(c.Key), "origin", origin,
		"lost_stamp", stampString(c.Lost), "kept_stamp", stampString(c.Kept), "lost_deleted", c.LostDeleted,
		"kept_deleted", c.KeptDeleted, "revision", c.Revision)
	s.events.conflict(&ConflictRecord{Key: c.Key, Kept: stampString(c.Kept), KeptDeleted: c.KeptDeleted,
		Lost: stampString(c.Lost), LostValue: c.LostValue, LostDeleted: c.LostDeleted, Origin: origin, Revision: c.Revision})
}

func stampString(st mvcc.Stamp) string {
	return fmt.Sprintf("%d.%d@%x", st.Time.Wall, st.Time.Logical, st.Origin)
}
