package placement

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// A policy is made by a constructor registered under its name. The built-in
// ones register here; a policy written elsewhere (another package, another
// module) registers itself from its package's init with Register, and is
// then known to New, to the master's --placement and to the benchmarks
// (placement/gpushare registers the GPU-sharing baselines this way;
// examples/firstfit is a small example).
var registry = struct {
	sync.RWMutex
	ctors map[string]func(Options) (Policy, error)
}{ctors: map[string]func(Options) (Policy, error){
	"spread":  newSpread,
	"pack":    newPack,
	"bestfit": newBestFit,
}}

// Register makes the policy called name available to New. It refuses an
// empty name, a nil constructor and a name already taken.
func Register(name string, ctor func(Options) (Policy, error)) error {
	if name == "" || strings.ContainsAny(name, " ,\t\n") || ctor == nil {
		return fmt.Errorf("placement: cannot register policy %q: want a name without spaces or commas and a constructor", name)
	}
	registry.Lock()
	defer registry.Unlock()
	if _, taken := registry.ctors[name]; taken {
		return fmt.Errorf("placement: policy %q is already registered", name)
	}
	registry.ctors[name] = ctor
	return nil
}

// MustRegister is Register for a package's init: it panics on an error.
func MustRegister(name string, ctor func(Options) (Policy, error)) {
	if err := Register(name, ctor); err != nil {
		panic(err)
	}
}

// What New refuses, for a caller to tell which of its inputs is wrong
// (errors.Is) and name it as its user knows it, a flag say.
var (
	ErrUnknownPolicy = errors.New("unknown policy")
	ErrUnknownOrder  = errors.New("unknown worker order")
	ErrNegativeUnit  = errors.New("negative minimum core unit")
)

// New returns the policy called name configured by opts.
func New(name string, opts Options) (Policy, error) {
	registry.RLock()
	ctor, ok := registry.ctors[name]
	registry.RUnlock()
	if !ok {
		return nil, fmt.Errorf("placement: %w %q (known: %s)", ErrUnknownPolicy, name, strings.Join(Names(), ", "))
	}
	if opts.MinCoreUnit < 0 {
		return nil, fmt.Errorf("placement: %w: %d", ErrNegativeUnit, opts.MinCoreUnit)
	}
	if _, err := orderLess(opts.Order); err != nil {
		return nil, err
	}
	return ctor(opts)
}

// Names lists the registered policies, sorted.
func Names() []string {
	registry.RLock()
	defer registry.RUnlock()
	names := make([]string, 0, len(registry.ctors))
	for name := range registry.ctors {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
