package wire

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseConstraint(t *testing.T) {
	for in, want := range map[string]Constraint{
		"gpu-model=T4,P100": {Label: "gpu-model", In: []string{"T4", "P100"}},
		"zone!=b":           {Label: "zone", NotIn: []string{"b"}},
		"k8s.io/arch=amd64": {Label: "k8s.io/arch", In: []string{"amd64"}},
	} {
		got, err := ParseConstraint(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseConstraint(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "gpu-model", "gpu-model=", "=T4", "gpu-model=T4,", "gpu model=T4", "gpu-model=T 4", "!=x", strings.Repeat("k", 64) + "=v"} {
		if c, err := ParseConstraint(bad); err == nil {
			t.Errorf("ParseConstraint(%q) = %+v, want an error", bad, c)
		}
	}
}

func TestConstraintSatisfied(t *testing.T) {
	t4 := map[string]string{"gpu-model": "T4", "zone": "a"}
	cases := []struct {
		c    Constraint
		l    map[string]string
		want bool
	}{
		{Constraint{Label: "gpu-model", In: []string{"T4", "P100"}}, t4, true},
		{Constraint{Label: "gpu-model", In: []string{"P100"}}, t4, false},
		{Constraint{Label: "gpu-model", In: []string{"T4"}}, nil, false}, // in: the label must be set
		{Constraint{Label: "zone", NotIn: []string{"a"}}, t4, false},
		{Constraint{Label: "zone", NotIn: []string{"b"}}, t4, true},
		{Constraint{Label: "zone", NotIn: []string{"a"}}, nil, true}, // notIn: an unset label satisfies it
	}
	for _, tc := range cases {
		if got := tc.c.Satisfied(tc.l); got != tc.want {
			t.Errorf("%s on %v: %v, want %v", tc.c, tc.l, got, tc.want)
		}
	}
	if Satisfies(t4, []Constraint{{Label: "gpu-model", In: []string{"T4"}}, {Label: "zone", In: []string{"b"}}}) {
		t.Error("Satisfies: every constraint must hold")
	}
}

func TestLabels(t *testing.T) {
	if k, v, err := ParseLabel("gpu-model=T4"); err != nil || k != "gpu-model" || v != "T4" {
		t.Errorf("ParseLabel: %q %q %v", k, v, err)
	}
	for _, bad := range []string{"gpu-model", "=T4", "gpu-model=", "a b=c", "k=\x1b[2J", "k=a,b"} {
		if _, _, err := ParseLabel(bad); err == nil {
			t.Errorf("ParseLabel(%q) accepted", bad)
		}
	}
	many := map[string]string{}
	for i := range MaxLabels + 1 {
		many["k"+strings.Repeat("x", i)] = "v"
	}
	if err := CheckLabels(many); err == nil {
		t.Error("more than MaxLabels labels accepted")
	}
	if got := LabelList(map[string]string{"zone": "a", "gpu-model": "T4"}); got != "gpu-model=T4,zone=a" {
		t.Errorf("LabelList = %q", got)
	}
}

// Constraints that no labels could satisfy together are refused (the app
// would wait for ever); those that some could are not.
func TestConstraintsThatCanNeverHoldAreRefused(t *testing.T) {
	in := func(label string, vs ...string) Constraint { return Constraint{Label: label, In: vs} }
	notIn := func(label string, vs ...string) Constraint { return Constraint{Label: label, NotIn: vs} }
	for _, c := range []struct {
		cs []Constraint
		ok bool
	}{
		{[]Constraint{in("zone", "a"), in("zone", "b")}, false},
		{[]Constraint{in("zone", "a"), notIn("zone", "a")}, false},
		{[]Constraint{in("zone", "a", "b"), in("zone", "b", "c")}, true},
		{[]Constraint{in("zone", "a", "b"), notIn("zone", "a")}, true},
		{[]Constraint{notIn("zone", "a"), notIn("zone", "b")}, true},
		{[]Constraint{in("zone", "a"), in("gpu-model", "T4")}, true},
	} {
		err := CheckConstraints(c.cs)
		if (err == nil) != c.ok {
			t.Errorf("%+v: %v, want accepted %v", c.cs, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "can never hold together") {
			t.Errorf("%+v: %v", c.cs, err)
		}
	}
}
