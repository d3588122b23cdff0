package mvcc

import (
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// The NOSPACE alarm, as etcd's quota: once the database outgrows Config.QuotaBytes, requests that
// add data (Put, Txn with a put, LeaseGrant) fail with ErrNoSpace until an operator frees space
// (compact, defragment) and disarms the alarm; reads and deletes keep working. The alarm stays
// raised after space is freed until disarmed, as in etcd, so that operators notice.

// checkSpace refuses a write that adds about cost bytes while the NOSPACE alarm is raised, and
// raises the alarm if the write would take the database over quota (as etcd's quota check).
func (s *Store) checkSpace(cost int) error {
	if s.alarm.Load() {
		return ErrNoSpace
	}
	q := s.cfg.QuotaBytes
	if q <= 0 {
		return nil
	}
	if s.sizeEst.Load()+s.sizeDelta.Load()+int64(cost) <= q {
		return nil
	}
	if s.refreshSize()+int64(cost) <= q {
		return nil
	}
	s.raise()
	return ErrNoSpace
}

// refreshSize reads Pebble's disk usage and restarts counting the bytes written since.
func (s *Store) refreshSize() int64 {
	total, _ := s.DBSize()
	s.sizeDelta.Store(0)
	s.sizeEst.Store(total)
	return total
}

func (s *Store) raise() {
	if !s.alarm.Swap(true) {
		s.log.Warn("database space exceeded; NOSPACE alarm raised", "size", s.sizeEst.Load(), "quota", s.cfg.QuotaBytes)
	}
}

// checkQuota raises the alarm if the database is over quota.
func (s *Store) checkQuota() {
	if s.cfg.QuotaBytes <= 0 || s.alarm.Load() {
		return
	}
	if s.refreshSize() > s.cfg.QuotaBytes {
		s.raise()
	}
}

// wrote accounts for n bytes written; Pebble's metrics are re-read every MiB.
func (s *Store) wrote(n int) {
	if s.cfg.QuotaBytes > 0 && s.sizeDelta.Add(int64(n)) > 1<<20 {
		s.refreshSize()
	}
}

// Alarms returns the raised alarms.
func (s *Store) Alarms() []pb.AlarmType {
	if s.alarm.Load() {
		return []pb.AlarmType{pb.AlarmType_NOSPACE}
	}
	return nil
}

// RaiseNoSpace raises the NOSPACE alarm.
func (s *Store) RaiseNoSpace() { s.alarm.Store(true) }

// DisarmNoSpace disarms the NOSPACE alarm; it is raised again by the next write that would take
// the database over quota.
func (s *Store) DisarmNoSpace() {
	s.alarm.Store(false)
	s.refreshSize()
}
