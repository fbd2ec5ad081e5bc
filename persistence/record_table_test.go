package persistence

import (
	"reflect"
	"strings"
	"testing"
)

// recordKinds and State's fields say the same: every map of records in
// State is one kind's, under the bucket its JSON name says, optional
// exactly when its JSON field is omitempty (a kind added after the first
// release: older snapshots lack it), and no bucket is one bolt keeps for
// itself. A map added to State without its entry fails here.
func TestRecordKindsAreTheStatesMaps(t *testing.T) {
	st := reflect.TypeFor[State]()
	declared := map[string]bool{}
	for _, k := range recordKinds {
		var s State
		k.makeMap(&s)
		v := reflect.ValueOf(s)
		var fields []reflect.StructField
		for i := range st.NumField() {
			if f := st.Field(i); f.Type.Kind() == reflect.Map && !v.Field(i).IsNil() {
				fields = append(fields, f)
			}
		}
		if len(fields) != 1 {
			t.Errorf("kind %s makes %d maps of State, want its own", k.name(), len(fields))
			continue
		}
		f := fields[0]
		declared[f.Name] = true
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != string(k.name()) {
			t.Errorf("kind %s is State.%s, whose JSON name is %q", k.name(), f.Name, name)
		}
		if optional := !k.missing(&State{}); optional != strings.Contains(opts, "omitempty") {
			t.Errorf("kind %s: optional %v, but State.%s's JSON tag is %q", k.name(), optional, f.Name, f.Tag.Get("json"))
		}
		if string(k.name()) == string(metaBucket) || string(k.name()) == string(auditBucket) {
			t.Errorf("kind %s: bolt keeps that bucket for itself", k.name())
		}
	}
	for i := range st.NumField() {
		f := st.Field(i)
		if f.IsExported() && f.Type.Kind() == reflect.Map && f.Type.Elem().Kind() == reflect.Pointer && !declared[f.Name] {
			t.Errorf("State.%s is a map of records that recordKinds does not declare", f.Name)
		}
	}
}

// A kind's commands through the table: put keeps a copy under the key and
// tells touched; delete of an absent id changes nothing and tells nothing.
func TestKindPutAndDelete(t *testing.T) {
	s := &State{} // an optional kind's map may be missing: put makes it
	var touched []Key
	rec := func(k Key) { touched = append(touched, k) }
	put := PutQueue(QueueRecord{Name: "etl", Weight: 2})
	if err := s.Apply(put, rec); err != nil {
		t.Fatal(err)
	}
	put.Queue.Weight = 9 // the command's record, changed after: the state's is a copy
	if got := s.Queues["etl"]; got == nil || got.Weight != 2 {
		t.Fatalf("queues[etl] = %+v", got)
	}
	if err := s.Apply(DeleteQueue("none"), rec); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(DeleteQueue("etl"), rec); err != nil {
		t.Fatal(err)
	}
	if want := []Key{{BucketQueues, "etl"}, {BucketQueues, "etl"}}; !reflect.DeepEqual(touched, want) || len(s.Queues) != 0 {
		t.Fatalf("touched %v, queues %v: want %v and none", touched, s.Queues, want)
	}
}
