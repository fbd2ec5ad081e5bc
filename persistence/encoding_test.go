package persistence

// The State's encoding is what Raft snapshots, operators' snapshot files
// and a bolt file's records hold, so it never changes by accident: a
// refactoring of how the package lists its record kinds (issue 34) must
// leave every byte as it was. testdata/encoding holds states as the build
// before that refactoring encoded them; every later build must decode
// them, find them valid, and encode them, and the same states built by
// Apply, to exactly those bytes. The upgrade fixtures (upgrade_test.go)
// check that old files still load; these check that nothing is written
// differently.

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

var generateEncoding = flag.Bool("encoding.generate", false, "write testdata/encoding from this build (only files that do not exist) and exit the test")

const encodingDir = "testdata/encoding"

// encodingStates are the states kept, as the commands that build them: an
// empty one (every map empty, the optional ones left out), and the one the
// 2026-11-26 upgrade fixture's log entries make (a release's fixtures never
// change): a record of every kind, a finished app and driver, a signed-out
// session and an audit entry, through a restore.
func encodingStates(t *testing.T) map[string][][]Command {
	var entries []fixtureEntry
	readJSON(t, filepath.Join(upgradeDir, "2026-11-26", "entries.json"), &entries)
	var full [][]Command
	for i, e := range entries {
		cmds, err := Decode(e.Data)
		if err != nil {
			t.Fatalf("entry %d (%v): %v", i, e.Types, err)
		}
		full = append(full, cmds)
	}
	return map[string][][]Command{"empty": nil, "full": full}
}

func TestStateEncodingIsKept(t *testing.T) {
	states := encodingStates(t)
	if *generateEncoding {
		if err := os.MkdirAll(encodingDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, batches := range states {
			s, path := applyAndWrite(t, batches)
			data, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			for file, data := range map[string][]byte{name + ".json": data, name + ".bolt.json": dumpBolt(t, path)} {
				if _, err := os.Stat(filepath.Join(encodingDir, file)); err == nil {
					t.Fatalf("%s exists: a kept encoding is never rewritten", file)
				}
				writeFile(t, filepath.Join(encodingDir, file), data)
			}
		}
		return
	}
	for name, batches := range states {
		t.Run(name, func(t *testing.T) {
			golden, err := os.ReadFile(filepath.Join(encodingDir, name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			goldenBolt, err := os.ReadFile(filepath.Join(encodingDir, name+".bolt.json"))
			if err != nil {
				t.Fatal(err)
			}
			same := func(what string, s *State) {
				t.Helper()
				if err := s.Validate(); err != nil {
					t.Errorf("%s: %v", what, err)
				}
				got, err := json.Marshal(s)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, golden) {
					t.Errorf("%s encodes differently from %s.json:\n got %s\nwant %s", what, name, got, golden)
				}
			}

			// Built by Apply, and written to a bolt file by the same
			// commands: the same state, the same records in the file.
			s, path := applyAndWrite(t, batches)
			same("the state built by Apply", s)
			same("its clone", s.Clone())
			if got := dumpBolt(t, path); !bytes.Equal(got, goldenBolt) {
				t.Errorf("the bolt file holds other bytes than %s.bolt.json:\n got %s\nwant %s", name, got, goldenBolt)
			}

			// The kept bolt file's records, put in a file and opened:
			// what a file written before reads as.
			old := filepath.Join(t.TempDir(), "old.db")
			loadBolt(t, old, goldenBolt)
			b, err := OpenBolt(old)
			if err != nil {
				t.Fatalf("a bolt file of the kept records: %v", err)
			}
			fromBolt, _ := b.Load(context.Background())
			b.Close()
			same("the kept bolt file, opened", fromBolt)

			if name == "full" {
				// The release's own files, written by its build: its
				// bolt file and its Raft snapshot read as exactly this.
				work := t.TempDir()
				if err := os.CopyFS(work, os.DirFS(filepath.Join(upgradeDir, "2026-11-26", "datadir"))); err != nil {
					t.Fatal(err)
				}
				b, err := OpenBolt(filepath.Join(work, "state.db"))
				if err != nil {
					t.Fatal(err)
				}
				fromRelease, _ := b.Load(context.Background())
				b.Close()
				same("the 2026-11-26 release's bolt file", fromRelease)
				snap, err := os.ReadFile(filepath.Join(upgradeDir, "2026-11-26", "raft-snapshot.json"))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(snap, append(golden, '\n')) {
					t.Errorf("the 2026-11-26 release's Raft snapshot is not %s.json", name)
				}
			}

			// Read back as a Raft snapshot is, and written as one.
			read, err := decodeSnapshot(bytes.NewReader(golden))
			if err != nil {
				t.Fatalf("the kept encoding does not decode: %v", err)
			}
			same("the kept encoding decoded", read)
			var persisted bytes.Buffer
			if err := (&fsmSnapshot{state: read}).Persist(&bufferSink{Buffer: &persisted}); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(persisted.Bytes(), append(golden, '\n')) {
				t.Errorf("a Raft snapshot of it is not the kept encoding:\n got %s", persisted.Bytes())
			}
		})
	}
}

// applyAndWrite applies batches to a new state, and writes them to a new
// bolt file, returned closed.
func applyAndWrite(t *testing.T, batches [][]Command) (*State, string) {
	t.Helper()
	s, path := NewState(), filepath.Join(t.TempDir(), "state.db")
	b, err := OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, cmds := range batches {
		if err := applyAll(s, cmds, nil); err != nil {
			t.Fatal(err)
		}
		if err := b.Write(context.Background(), cmds); err != nil {
			t.Fatal(err)
		}
	}
	return s, path
}

// dumpBolt lists a bolt file's buckets, keys (hex: the audit log's are
// numbers) and values, in order, as JSON. An empty bucket is left out: a
// kind added later has one in every file, and writes nothing else.
func dumpBolt(t *testing.T, path string) []byte {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dump := map[string]map[string]string{}
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
			return bk.ForEach(func(k, v []byte) error {
				if dump[string(name)] == nil {
					dump[string(name)] = map[string]string{}
				}
				dump[string(name)][hex.EncodeToString(k)] = string(v)
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.MarshalIndent(dump, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(data, '\n')
}

// loadBolt writes a dump of dumpBolt into a new bolt file at path.
func loadBolt(t *testing.T, path string, data []byte) {
	t.Helper()
	var dump map[string]map[string]string
	if err := json.Unmarshal(data, &dump); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		for name, kv := range dump {
			bk, err := tx.CreateBucket([]byte(name))
			if err != nil {
				return err
			}
			for k, v := range kv {
				key, err := hex.DecodeString(k)
				if err != nil {
					return err
				}
				if err := bk.Put(key, []byte(v)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
