package persistence

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-cluster/berth/wire"
)

// Bolt keeps the state in a local bbolt file (--recovery-mode bolt): one
// master, Spark's FILESYSTEM recovery mode. Each record is one key in the
// bucket of its kind, so a write costs what it touches, not the whole state;
// the state also lives in memory for Load.
type Bolt struct {
	held // the state the file holds
	db   *bolt.DB
}

var metaBucket = []byte("meta")

// auditBucket holds the audit log, one entry a key: its number, big-endian.
var auditBucket = []byte("audit")

// OpenBolt opens (or creates) the state file at path. It fails after a
// second if another process holds the file.
func OpenBolt(path string) (*Bolt, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("opening %s: another master is using it", path)
		}
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	b := &Bolt{db: db}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range append([][]byte{metaBucket, auditBucket}, bucketNames()...) {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		b.state, err = b.read()
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	return b, nil
}

// bucketNames are the buckets of the records, one per kind.
func bucketNames() [][]byte {
	names := make([][]byte, len(recordKinds))
	for i, k := range recordKinds {
		names[i] = []byte(k.name())
	}
	return names
}

// Write applies cmds in memory and writes what they touched in one
// transaction, synced to disk before it returns.
func (b *Bolt) Write(ctx context.Context, cmds []Command) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return b.locked(func() error { return b.write(cmds) })
}

// write is Write once it holds the lock.
func (b *Bolt) write(cmds []Command) error {
	touched := map[Key]struct{}{}
	firstBefore, countBefore := b.state.auditFirst(), b.state.AuditCount
	applyErr := applyAll(b.state, cmds, func(k Key) { touched[k] = struct{}{} })
	err := b.db.Update(func(tx *bolt.Tx) error {
		for k := range touched {
			if err := b.writeKey(tx, k); err != nil {
				return err
			}
		}
		if err := writeAudit(tx, b.state, firstBefore, countBefore); err != nil {
			return err
		}
		return writeMeta(tx, b.state)
	})
	if err != nil {
		// Memory is ahead of the file now; read the file back so the two
		// agree again.
		if s, rerr := b.read(); rerr == nil {
			b.state = s
		}
		return fmt.Errorf("writing state: %w", err)
	}
	return applyErr
}

func (b *Bolt) writeKey(tx *bolt.Tx, k Key) error {
	bucket := tx.Bucket([]byte(k.Bucket))
	rec, ok := b.state.record(k)
	if !ok {
		return bucket.Delete([]byte(k.ID))
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return bucket.Put([]byte(k.ID), data)
}

func (b *Bolt) Barrier(context.Context) error { return nil }

func (b *Bolt) Close() error {
	b.close()
	return b.db.Close()
}

// read loads the whole state from the file.
func (b *Bolt) read() (*State, error) {
	s := NewState()
	err := b.db.View(func(tx *bolt.Tx) error {
		if err := readMeta(tx, s); err != nil {
			return err
		}
		if err := readAudit(tx, s); err != nil {
			return err
		}
		for _, kind := range recordKinds {
			// Each record under its key: Validate then refuses a key
			// that is not the record's id.
			err := tx.Bucket([]byte(kind.name())).ForEach(func(k, v []byte) error {
				if err := kind.decode(s, string(k), v); err != nil {
					return fmt.Errorf("%s/%s: %w", kind.name(), k, err)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Records are written one by one: check that together they still form
	// a state Apply can build on (leftover executors are dropped).
	s.Repair()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

type meta struct {
	Epoch            uint64           `json:"epoch"`
	NextAppNumber    int              `json:"nextAppNumber"`
	NextDriverNumber int              `json:"nextDriverNumber"`
	EndedSessions    map[string]int64 `json:"endedSessions,omitempty"`
	AuditCount       uint64           `json:"auditCount,omitempty"`
}

var metaKey = []byte("state")

func writeMeta(tx *bolt.Tx, s *State) error {
	data, err := json.Marshal(meta{s.Epoch, s.NextAppNumber, s.NextDriverNumber, s.EndedSessions, s.AuditCount})
	if err != nil {
		return err
	}
	return tx.Bucket(metaBucket).Put(metaKey, data)
}

func readMeta(tx *bolt.Tx, s *State) error {
	data := tx.Bucket(metaBucket).Get(metaKey)
	if data == nil {
		return nil
	}
	var m meta
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("meta: %w", err)
	}
	s.Epoch, s.NextAppNumber, s.NextDriverNumber = m.Epoch, m.NextAppNumber, m.NextDriverNumber
	s.EndedSessions, s.AuditCount = m.EndedSessions, m.AuditCount
	return nil
}

// auditFirst is the number of the oldest audit entry kept.
func (s *State) auditFirst() uint64 { return s.AuditCount - uint64(len(s.Audit)) }

// writeAudit puts the audit entries written since count was before, and
// deletes those dropped since first was.
func writeAudit(tx *bolt.Tx, s *State, first, before uint64) error {
	bucket := tx.Bucket(auditBucket)
	for n := first; n < s.auditFirst(); n++ {
		if err := bucket.Delete(auditKey(n)); err != nil {
			return err
		}
	}
	for n := max(before, s.auditFirst()); n < s.AuditCount; n++ {
		data, err := json.Marshal(s.Audit[n-s.auditFirst()])
		if err != nil {
			return err
		}
		if err := bucket.Put(auditKey(n), data); err != nil {
			return err
		}
	}
	return nil
}

// readAudit loads the audit entries, oldest first (keys sort by number).
func readAudit(tx *bolt.Tx, s *State) error {
	return tx.Bucket(auditBucket).ForEach(func(_, v []byte) error {
		var e wire.AuditEntry
		if err := json.Unmarshal(v, &e); err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		s.Audit = append(s.Audit, BoundAuditEntry(e)) // an older version kept whole what a caller sent
		return nil
	})
}

func auditKey(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

// decodeInto decodes one record; a stored null stays nil, for Validate to
// name.
func decodeInto[R any](key string, data []byte, m map[string]*R) error {
	var r *R
	if err := json.Unmarshal(data, &r); err != nil {
		return err
	}
	m[key] = r
	return nil
}
