package mvcc

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// migrate brings the store's key layout to storeFormat before recovery reads it. A store
// without a format record was written by format 1 (or is new, and holds nothing to move).
// Each chunk of keys moves in one synced batch that writes the new keys and deletes the old,
// so a crash part-way leaves every key in exactly one place and the next Open finishes the
// job; the format record is written last.
func (s *Store) migrate() error {
	f, err := s.metaInt(metaFormat)
	if err != nil {
		return err
	}
	switch {
	case f == storeFormat:
		return nil
	case f > storeFormat:
		return fmt.Errorf("mvcc: %s holds key layout format %d, and this build reads formats up to %d: run a newer continuum", s.cfg.Dir, f, storeFormat)
	}
	headers, err := s.moveKeys(prefixChangeV1, func(k []byte) []byte {
		if len(k) != 9 {
			return nil
		}
		return changeKey(int64(binary.BigEndian.Uint64(k[1:])))
	})
	if err != nil {
		return fmt.Errorf("mvcc: migrate change headers: %w", err)
	}
	origins, err := s.moveKeys(prefixOriginV1, func(k []byte) []byte {
		if len(k) != 17 {
			return nil
		}
		return append([]byte{prefixOrigin}, k[1:]...)
	})
	if err != nil {
		return fmt.Errorf("mvcc: migrate origin index: %w", err)
	}
	if err := s.db.Set(metaFormat, u64(storeFormat), pebble.Sync); err != nil {
		return fmt.Errorf("mvcc: write format: %w", err)
	}
	if headers+origins > 0 {
		s.log.Info("migrated the key layout", "from_format", 1, "to_format", storeFormat,
			"change_headers", headers, "origin_records", origins)
	}
	return nil
}

// migrateChunk bounds the keys one migration batch moves.
const migrateChunk = 10000

// moveKeys rewrites every key under prefix to newKey(key) (nil: the key is not one of the
// layout's, and is left where it is), keeping values, and returns how many moved.
func (s *Store) moveKeys(prefix byte, newKey func([]byte) []byte) (int, error) {
	moved := 0
	lower := []byte{prefix}
	for {
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: []byte{prefix + 1}})
		if err != nil {
			return moved, err
		}
		b := s.db.NewBatch()
		n := 0
		var last []byte
		for it.First(); it.Valid() && n < migrateChunk; it.Next() {
			last = append(last[:0], it.Key()...)
			nk := newKey(it.Key())
			if nk == nil {
				continue
			}
			_ = b.Set(nk, it.Value(), nil)
			_ = b.Delete(it.Key(), nil)
			n++
		}
		err = it.Error()
		it.Close()
		if err == nil && n > 0 {
			err = b.Commit(pebble.Sync)
		}
		b.Close()
		if err != nil {
			return moved, err
		}
		moved += n
		if n < migrateChunk {
			return moved, nil
		}
		// Keys left in place (unknown shapes) are skipped on the next pass.
		lower = append(last, 0)
	}
}
