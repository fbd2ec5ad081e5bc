package placement_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/placement"
)

// A policy written outside the package registers itself and is then known
// to New and Names like the built-in ones.
func TestRegisterMakesAPolicyKnown(t *testing.T) {
	name := fmt.Sprintf("test-registered-%d", time.Now().UnixNano()) // -count=N registers anew
	ctor := func(opts placement.Options) (placement.Policy, error) {
		p, err := placement.New("pack", opts)
		return named{p, name}, err
	}
	if err := placement.Register(name, ctor); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(placement.Names(), name) {
		t.Fatalf("Names() = %v, without the registered policy", placement.Names())
	}
	if _, err := placement.New(name, placement.Options{}); err != nil {
		t.Fatalf("New: %v", err)
	}
	for _, bad := range []struct {
		name string
		ctor func(placement.Options) (placement.Policy, error)
		want string
	}{
		{name, ctor, "already registered"},
		{"spread", ctor, "already registered"},
		{"", ctor, "cannot register"},
		{"two words", ctor, "cannot register"},
		{"a,b", ctor, "cannot register"},
		{"no-constructor", nil, "cannot register"},
	} {
		if err := placement.Register(bad.name, bad.ctor); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Register(%q): %v, want an error with %q", bad.name, err, bad.want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("MustRegister of a taken name did not panic")
		}
	}()
	placement.MustRegister("spread", ctor)
}

// named renames a policy.
type named struct {
	placement.Policy
	name string
}

func (n named) Name() string { return n.name }

func (n named) MinCoreUnit() int { return n.Policy.(placement.UnitPolicy).MinCoreUnit() }
