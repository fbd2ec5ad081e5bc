package persistence

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/berth-cluster/berth/wire"
)

// Type tags a command. Tags are never reused or renumbered: a log written
// by one version is read by every later one.
type Type uint8

const (
	TypeBumpEpoch      Type = 1
	TypePutApp         Type = 2
	TypeDeleteApp      Type = 3 // written by no master now, still applied: old logs hold it
	TypePutDriver      Type = 4
	TypeDeleteDriver   Type = 5 // as TypeDeleteApp
	TypePutWorker      Type = 6
	TypeDeleteWorker   Type = 7
	TypePutMaster      Type = 8
	TypeDeleteMaster   Type = 9
	TypePutExecutor    Type = 10
	TypeDeleteExecutor Type = 11
	TypeEndSession     Type = 12
	TypePutQueue       Type = 13
	TypeDeleteQueue    Type = 14
	TypePutTenant      Type = 15
	TypeDeleteTenant   Type = 16
	TypeAudit          Type = 17
	// TypeRestore replaces the state with an operator's snapshot (berth
	// operator snapshot restore). Never marked IgnoreUnknownTypeFlag: a
	// master that skipped it would drift from the others for good.
	TypeRestore Type = 18
	// TypeEndedExecutor keeps an executor's end for its app's status
	// (ended_executors.go). Written with IgnoreUnknownTypeFlag and always
	// beside a DeleteExecutor: an older master that skips it still drops
	// the placement, and only loses the line of history.
	TypeEndedExecutor Type = 19

	// typeBatch tags an encoded entry holding several commands.
	typeBatch Type = 64

	// IgnoreUnknownTypeFlag marks a command that a master which does not
	// know its type may skip (Nomad's IgnoreUnknownTypeFlag). A new command
	// type whose loss an older master can live with is written with the flag
	// set, so a rolling upgrade does not stop older masters at that entry.
	IgnoreUnknownTypeFlag Type = 128
)

// String names the type as its table entry does; the flag does not change
// the name.
func (t Type) String() string {
	if k, ok := kindOf(t); ok {
		return k.name
	}
	if t&^IgnoreUnknownTypeFlag == typeBatch {
		return "Batch" // an encoding tag, not a command: not in the table
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// Command is one change to the State. Type says which payload field is set.
type Command struct {
	Type     Type            `json:"-"`
	App      *AppRecord      `json:"app,omitempty"`
	Driver   *DriverRecord   `json:"driver,omitempty"`
	Worker   *WorkerRecord   `json:"worker,omitempty"`
	Master   *MasterRecord   `json:"master,omitempty"`
	Executor *ExecutorRecord `json:"executor,omitempty"`
	Session  *EndedSession   `json:"session,omitempty"`
	Queue    *QueueRecord    `json:"queue,omitempty"`
	Tenant   *TenantRecord   `json:"tenant,omitempty"`
	Audit    *AuditRecord    `json:"audit,omitempty"`
	Restore  *RestoreRecord  `json:"restore,omitempty"`
	Ended    *EndedExecutor  `json:"ended,omitempty"`
	ID       string          `json:"id,omitempty"` // of the record a Delete removes
	// Retain bounds the finished apps (or drivers) kept, when a Put records
	// one that ended; the oldest beyond it are dropped.
	Retain int `json:"retain,omitempty"`
}

// Constructors for the commands the master writes (the others are built as
// literals, by the tests of how old logs apply).

func BumpEpoch() Command { return Command{Type: TypeBumpEpoch} }
func PutApp(r AppRecord, retain int) Command {
	return Command{Type: TypePutApp, App: &r, Retain: retain}
}
func PutDriver(r DriverRecord, retain int) Command {
	return Command{Type: TypePutDriver, Driver: &r, Retain: retain}
}
func PutWorker(r WorkerRecord) Command     { return Command{Type: TypePutWorker, Worker: &r} }
func DeleteWorker(id string) Command       { return Command{Type: TypeDeleteWorker, ID: id} }
func PutMaster(r MasterRecord) Command     { return Command{Type: TypePutMaster, Master: &r} }
func DeleteMaster(id string) Command       { return Command{Type: TypeDeleteMaster, ID: id} }
func PutExecutor(r ExecutorRecord) Command { return Command{Type: TypePutExecutor, Executor: &r} }
func DeleteExecutor(appID string, id int) Command {
	return Command{Type: TypeDeleteExecutor, ID: ExecutorKey(appID, id)}
}

// EndExecutor is the end of a placed executor: its status as it ended
// kept for its app, then its placement dropped (in this order: the status
// is kept only for an executor still placed, so a second end of it, one
// another write made first, adds nothing).
func EndExecutor(appID string, st wire.ExecutorStatus) []Command {
	return []Command{
		{Type: TypeEndedExecutor | IgnoreUnknownTypeFlag, Ended: &EndedExecutor{AppID: appID, Status: st}},
		DeleteExecutor(appID, st.ID),
	}
}
func EndSession(e EndedSession) Command { return Command{Type: TypeEndSession, Session: &e} }
func PutQueue(r QueueRecord) Command    { return Command{Type: TypePutQueue, Queue: &r} }
func DeleteQueue(name string) Command   { return Command{Type: TypeDeleteQueue, ID: name} }
func PutTenant(r TenantRecord) Command  { return Command{Type: TypePutTenant, Tenant: &r} }
func DeleteTenant(name string) Command  { return Command{Type: TypeDeleteTenant, ID: name} }
func Audit(r AuditRecord) Command       { return Command{Type: TypeAudit, Audit: &r} }
func Restore(r RestoreRecord) Command   { return Command{Type: TypeRestore, Restore: &r} }

// ErrUnknownType is returned for a command whose type this version does not
// know and which is not marked with IgnoreUnknownTypeFlag.
var ErrUnknownType = errors.New("unknown command type")

var errMissingPayload = errors.New("command without its record")

// resolve finds the table entry of a command type. An unknown type is
// skipped (nil entry, nil error) if marked with IgnoreUnknownTypeFlag, and
// refused otherwise. Check, Apply and Decode all decide through it.
func resolve(t Type) (*commandKind, error) {
	if k, ok := kindOf(t); ok {
		return k, nil
	}
	if t&IgnoreUnknownTypeFlag != 0 {
		return nil, nil
	}
	return nil, fmt.Errorf("%w %s", ErrUnknownType, t)
}

// Check reports whether Apply would accept c, without a state: its type is
// known (or marked ignorable) and it carries the record its type needs. The
// master's writer checks every command before batching it with others.
func (c Command) Check() error {
	_, err := c.kind()
	return err
}

// kind is Check returning the table entry that applies c: nil for an
// ignorable unknown type.
func (c Command) kind() (*commandKind, error) {
	k, err := resolve(c.Type)
	if err != nil || k == nil {
		return nil, err
	}
	if !k.payload.valid(c) {
		return nil, fmt.Errorf("%s: %w (%s)", c.Type, errMissingPayload, k.payload.field)
	}
	return k, nil
}

// batchItem is one command inside a batch entry.
type batchItem struct {
	Type    Type            `json:"t"`
	Payload json.RawMessage `json:"p"`
}

// Encode turns commands into one log entry: a type byte, then the JSON
// payload. Several commands become one batch entry, applied atomically.
func Encode(cmds []Command) ([]byte, error) {
	if len(cmds) == 1 {
		payload, err := json.Marshal(cmds[0])
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", cmds[0].Type, err)
		}
		return append([]byte{byte(cmds[0].Type)}, payload...), nil
	}
	items := make([]batchItem, len(cmds))
	for i, c := range cmds {
		payload, err := json.Marshal(c)
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", c.Type, err)
		}
		items[i] = batchItem{Type: c.Type, Payload: payload}
	}
	payload, err := json.Marshal(items)
	if err != nil {
		return nil, fmt.Errorf("encoding batch: %w", err)
	}
	return append([]byte{byte(typeBatch)}, payload...), nil
}

// Decode reverses Encode. Commands of an unknown type marked with
// IgnoreUnknownTypeFlag are left out; any other unknown type, or malformed
// data, is an error and no command of the entry is returned.
func Decode(data []byte) ([]Command, error) {
	if len(data) == 0 {
		return nil, errors.New("empty log entry")
	}
	tag, payload := Type(data[0]), data[1:]
	if tag != typeBatch {
		c, skip, err := decodeOne(tag, payload)
		if err != nil || skip {
			return nil, err
		}
		return []Command{c}, nil
	}
	var items []batchItem
	if err := json.Unmarshal(payload, &items); err != nil {
		return nil, fmt.Errorf("decoding batch: %w", err)
	}
	cmds := make([]Command, 0, len(items))
	for _, it := range items {
		c, skip, err := decodeOne(it.Type, it.Payload)
		if err != nil {
			return nil, err
		}
		if !skip {
			cmds = append(cmds, c)
		}
	}
	return cmds, nil
}

func decodeOne(t Type, payload []byte) (c Command, skip bool, err error) {
	k, err := resolve(t)
	if err != nil {
		return Command{}, false, err
	}
	if k == nil {
		return Command{}, true, nil // an ignorable unknown type
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return Command{}, false, fmt.Errorf("decoding %s: %w", t, err)
	}
	c.Type = t
	return c, false, nil
}
