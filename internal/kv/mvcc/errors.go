package mvcc

import "errors"

// Errors returned by the store; internal/kv/server maps each to etcd's wire error.
var (
	ErrCompacted      = errors.New("mvcc: required revision has been compacted")
	ErrFutureRev      = errors.New("mvcc: required revision is a future revision")
	ErrKeyNotFound    = errors.New("mvcc: key not found")
	ErrLeaseNotFound  = errors.New("lease not found")
	ErrLeaseExists    = errors.New("lease already exists")
	ErrLeaseTTLTooBig = errors.New("too large lease TTL")
	ErrNoSpace        = errors.New("mvcc: database space exceeded")
	ErrClosed         = errors.New("mvcc: store closed")
)
