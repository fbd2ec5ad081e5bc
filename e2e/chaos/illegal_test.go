package chaos

import (
	"fmt"
	"slices"
	"testing"

	"github.com/anishathalye/porcupine"
)

// whereIllegal finds where a partition that is not linearizable breaks:
// its ops in the order they were called, the longest prefix that still
// checks, and the op whose addition does not. A partition of a long run
// holds thousands of ops in the order they were answered, too many to read
// for the one that breaks it (two creates of one tenant, both answered
// 201, sat 1,300 lines into one). Prefixes are checked by bisection; a
// prefix that checks while a longer one does not is where to look.
func whereIllegal(part []porcupine.Operation) (byCall []porcupine.Operation, n int) {
	byCall = slices.Clone(part)
	slices.SortStableFunc(byCall, func(a, b porcupine.Operation) int {
		switch {
		case a.Call < b.Call:
			return -1
		case a.Call > b.Call:
			return 1
		}
		return 0
	})
	lo, hi := 1, len(byCall)
	for lo < hi {
		mid := (lo + hi) / 2
		if porcupine.CheckOperations(model.ToModel(), byCall[:mid]) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return byCall, lo
}

// describeIllegal says where part breaks: the ops before the first that
// cannot be added (at most context of them), and that op.
func describeIllegal(part []porcupine.Operation, context int) string {
	byCall, n := whereIllegal(part)
	from := max(0, n-1-context)
	return fmt.Sprintf("%d ops; the first %d by call time are linearizable, not with op %d (the last below):\n%s",
		len(part), n-1, n, describe(byCall[from:n]))
}

// The two creates that made the 100-fault run's history illegal, among
// reads and deletes answered in another order than they were called.
func TestWhereIllegalFindsTheOpThatBreaksAHistory(t *testing.T) {
	create := func(client int, out output, call, done int64) hop {
		return hop{client, input{kind: opCreateTenant, key: "tenant:s", id: "s", spec: "q"}, out, call, done}
	}
	read := func(client int, out output, call, done int64) hop {
		return hop{client, input{kind: opReadTenant, key: "tenant:s", id: "s"}, out, call, done}
	}
	del := hop{2, input{kind: opDeleteTenant, key: "tenant:s", id: "s"}, output{}, 30, 40}
	hops := []hop{
		read(1, output{spec: "q"}, 12, 20), create(0, output{}, 0, 10), del, read(1, output{status: 404}, 41, 45),
		create(3, output{}, 51, 60), create(1, output{}, 52, 61), read(0, output{spec: "q"}, 70, 80), read(2, output{spec: "q"}, 81, 90),
	}
	var part []porcupine.Operation
	for _, o := range hops {
		part = append(part, porcupine.Operation{ClientId: o.client, Input: o.in, Output: o.out, Call: o.call, Return: o.done})
	}
	byCall, n := whereIllegal(part)
	if got := byCall[n-1]; got.Call != 52 {
		t.Fatalf("the op found: %s called at %d, want the second create (52); %s", model.DescribeOperation(got.Input, got.Output), got.Call, describeIllegal(part, 3))
	}
	if !porcupine.CheckOperations(model.ToModel(), byCall[:n-1]) {
		t.Errorf("the prefix before the op found does not check")
	}
}
