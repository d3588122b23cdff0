package mvcc

import (
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// The NOSPACE alarm, as etcd's quota: once the database outgrows Config.QuotaBytes, requests that
// add data (Put, Txn with a put, LeaseGrant) fail with ErrNoSpace until an operator frees space
// (compact, defragment) and disarms the alarm; reads and deletes keep working. The alarm stays
// raised after space is freed until disarmed, as in etcd, so that operators notice.

// checkSpace refuses writes that add data while the NOSPACE alarm is raised.
func (s *Store) checkSpace() error {
	if s.alarm.Load() {
		return ErrNoSpace
	}
	return nil
}

// checkQuota raises the alarm if the database is over quota.
func (s *Store) checkQuota() {
	if s.cfg.QuotaBytes <= 0 || s.alarm.Load() {
		return
	}
	if total, _ := s.DBSize(); total > s.cfg.QuotaBytes {
		s.alarm.Store(true)
		s.log.Warn("database space exceeded; NOSPACE alarm raised", "size", total, "quota", s.cfg.QuotaBytes)
	}
}

// maybeCheckQuota checks the quota every 256 revisions (Pebble's metrics are not free).
func (s *Store) maybeCheckQuota(rev int64) {
	if rev&255 == 0 {
		s.checkQuota()
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

// DisarmNoSpace disarms the NOSPACE alarm; the next quota check raises it again if the database
// is still over quota.
func (s *Store) DisarmNoSpace() {
	s.alarm.Store(false)
	s.checkQuota()
}
