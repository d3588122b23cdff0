package mvcc

import (
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// The NOSPACE alarm, as etcd's quota: once the stored data outgrows Config.QuotaBytes, requests
// that add data (Put, Txn with a put, LeaseGrant) fail with ErrNoSpace until an operator frees space
// (compact; defragment) and disarms the alarm; reads and deletes keep working. The alarm stays
// raised after space is freed until disarmed, as in etcd, so that operators notice.
//
// The quota limits the logical size of the data: the bytes of all revision records (keys, values,
// history until compacted) and change headers, uncompressed. That is what etcd's backend size
// roughly measures, it is exact and immediate (Pebble's disk usage lags behind flushes and paced
// file deletion, and compression makes it depend on the values), and compaction frees it at once.

// checkSpace refuses a write that adds about cost bytes while the NOSPACE alarm is raised, and
// raises the alarm if the write would take the data over quota (as etcd's quota check).
func (s *Store) checkSpace(cost int) error {
	if s.alarm.Load() {
		return ErrNoSpace
	}
	if q := s.cfg.QuotaBytes; q > 0 && s.logical.Load()+int64(cost) > q {
		s.raise()
		return ErrNoSpace
	}
	return nil
}

func (s *Store) raise() {
	if !s.alarm.Swap(true) {
		s.log.Warn("database space exceeded; NOSPACE alarm raised", "size", s.logical.Load(), "quota", s.cfg.QuotaBytes)
	}
}

// checkQuota raises the alarm if the data is over quota.
func (s *Store) checkQuota() {
	if q := s.cfg.QuotaBytes; q > 0 && s.logical.Load() > q {
		s.raise()
	}
}

// DataSize is the logical size of the stored data that the quota limits.
func (s *Store) DataSize() int64 { return s.logical.Load() }

// Alarms returns the raised alarms.
func (s *Store) Alarms() []pb.AlarmType {
	if s.alarm.Load() {
		return []pb.AlarmType{pb.AlarmType_NOSPACE}
	}
	return nil
}

// RaiseNoSpace raises the NOSPACE alarm.
func (s *Store) RaiseNoSpace() { s.alarm.Store(true) }

// DisarmNoSpace disarms the NOSPACE alarm; the next write that would take the data over quota
// raises it again.
func (s *Store) DisarmNoSpace() { s.alarm.Store(false) }
