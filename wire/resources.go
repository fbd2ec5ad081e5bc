package wire

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Custom resources (GPUs, FPGAs, anything countable with addresses), as in
// Spark standalone 3+. A worker offers each resource as a list of
// addresses (RegisterWorker.Resources); an executor or driver asks for an
// amount per resource (ResourceAmounts): a whole number of addresses, or a
// share below 1 of a single address (GPU sharing). The master assigns
// specific addresses (ResourceGrants), exclusive while the process runs for
// whole amounts; shares of one address never add up to more than 1.

// ResourceAmounts maps a resource name to the amount asked for: an integer
// number of addresses, or a fraction below 1 of one address.
type ResourceAmounts map[string]float64

// ResourceGrant is what one process was given of one resource.
type ResourceGrant struct {
	Addresses []string `json:"addresses"`
	// Share, when below 1, is the fraction of the single address the process
	// shares with others; absent for whole addresses.
	Share float64 `json:"share,omitempty"`
}

// ResourceGrants maps a resource name to what a process was given.
type ResourceGrants map[string]ResourceGrant

// Limits on custom resources.
const (
	MaxResources         = 16   // resource names per worker, app or driver
	MaxResourceAddresses = 1024 // addresses per resource on one worker
	MaxResourceAmount    = MaxResourceAddresses
	// ResourceUnit is the smallest share of an address: amounts are counted
	// in thousandths (placement.Whole).
	ResourceUnit = 1000
)

// EnvResourcePrefix starts the variable naming a process's addresses of one
// resource: BERTH_RESOURCE_GPU=0,1. EnvResourceShareSuffix ends the one
// giving its share of a shared address: BERTH_RESOURCE_GPU_SHARE=0.46.
// A process given GPUs also gets CUDA_VISIBLE_DEVICES (EnvCUDAVisible).
const (
	EnvResourcePrefix      = "BERTH_RESOURCE_"
	EnvResourceShareSuffix = "_SHARE"
	EnvCUDAVisible         = "CUDA_VISIBLE_DEVICES"
	// PlaceholderResources in argv becomes the path of a JSON file listing
	// the process's resources in Spark's resources-file format.
	PlaceholderResources = "{{RESOURCES}}"
)

var (
	resourceName    = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)
	resourceAddress = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)
)

// ValidResourceName reports whether name may name a resource: a lowercase
// letter then up to 31 lowercase letters, digits or underscores (it becomes
// part of an environment variable's name).
func ValidResourceName(name string) bool { return resourceName.MatchString(name) }

// ResourceEnvName is the variable giving a process its addresses of name.
func ResourceEnvName(name string) string { return EnvResourcePrefix + strings.ToUpper(name) }

// CheckResourceOffer checks a worker's offered resources.
func CheckResourceOffer(offer map[string][]string) error {
	if len(offer) > MaxResources {
		return fmt.Errorf("%d resources offered, at most %d", len(offer), MaxResources)
	}
	for name, addrs := range offer {
		if !ValidResourceName(name) {
			return fmt.Errorf("resource name %q: want a lowercase letter then lowercase letters, digits or _ (at most 32)", clip(name))
		}
		if len(addrs) == 0 || len(addrs) > MaxResourceAddresses {
			return fmt.Errorf("resource %s: %d addresses, want 1 to %d", name, len(addrs), MaxResourceAddresses)
		}
		seen := make(map[string]bool, len(addrs))
		for _, a := range addrs {
			if !resourceAddress.MatchString(a) {
				return fmt.Errorf("resource %s: address %q: want 1 to 64 of letters, digits and _.:-", name, clip(a))
			}
			if seen[a] {
				return fmt.Errorf("resource %s: address %q listed twice", name, clip(a))
			}
			seen[a] = true
		}
	}
	return nil
}

// Milli converts the amounts to thousandths of an address (what placement
// counts in), checking each: a known name, more than 0, and either a whole
// number up to MaxResourceAmount or a fraction below 1 of at least 0.001.
func (r ResourceAmounts) Milli() (map[string]int, error) {
	if len(r) == 0 {
		return nil, nil
	}
	if len(r) > MaxResources {
		return nil, fmt.Errorf("%d resources asked for, at most %d", len(r), MaxResources)
	}
	out := make(map[string]int, len(r))
	for name, amount := range r {
		if !ValidResourceName(name) {
			return nil, fmt.Errorf("resource name %q: want a lowercase letter then lowercase letters, digits or _ (at most 32)", clip(name))
		}
		if math.IsNaN(amount) || amount <= 0 || amount > MaxResourceAmount {
			return nil, fmt.Errorf("resource %s: amount %v, want more than 0 and at most %d", name, amount, MaxResourceAmount)
		}
		if amount >= 1 && amount != math.Trunc(amount) {
			return nil, fmt.Errorf("resource %s: amount %v: a share of an address must be below 1, more than 1 must be whole", name, amount)
		}
		milli := int(math.Round(amount * ResourceUnit))
		if milli < 1 {
			return nil, fmt.Errorf("resource %s: amount %v is below the smallest share, 0.001", name, amount)
		}
		out[name] = milli
	}
	return out, nil
}

// ParseResourceAmount parses NAME=AMOUNT (a CLI flag's value).
func ParseResourceAmount(s string) (string, float64, error) {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return "", 0, fmt.Errorf("%q: want NAME=AMOUNT, e.g. gpu=1 or gpu=0.5", clip(s))
	}
	amount, err := strconv.ParseFloat(value, 64)
	if err != nil {
		return "", 0, fmt.Errorf("%q: amount %q is not a number", clip(s), clip(value))
	}
	if _, err := (ResourceAmounts{name: amount}).Milli(); err != nil {
		return "", 0, err
	}
	return name, amount, nil
}

// String renders the amounts sorted by name: "fpga=0.5,gpu=1".
func (r ResourceAmounts) String() string {
	names := slices.Sorted(maps.Keys(r))
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = name + "=" + strconv.FormatFloat(r[name], 'f', -1, 64)
	}
	return strings.Join(parts, ",")
}

// String renders the grants sorted by name: "fpga=2(0.5) gpu=0,1".
func (g ResourceGrants) String() string {
	names := slices.Sorted(maps.Keys(g))
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = name + "=" + strings.Join(g[name].Addresses, ",")
		if s := g[name].Share; s > 0 && s < 1 {
			parts[i] += "(" + strconv.FormatFloat(s, 'f', -1, 64) + ")"
		}
	}
	return strings.Join(parts, " ")
}

// ResourceUse is one resource of a worker as the master sees it.
type ResourceUse struct {
	Name      string   `json:"name"`
	Addresses []string `json:"addresses"`
	// Used is the share of each address in use (index for index with
	// Addresses): 0 free, 1 taken whole.
	Used []float64 `json:"used"`
	// Free is the addresses wholly free.
	Free int `json:"free"`
}

// DescribeTotals renders the workers' resources for people: "gpu 5/6
// free" ("" when they offer none).
func DescribeTotals(ts []ResourceTotal) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = fmt.Sprintf("%s %d/%d free", t.Name, t.Free, t.Addresses)
	}
	return strings.Join(parts, ", ")
}

// DescribeFree renders a worker's resources for people, free of offered
// per name: "gpu 1/2 free" ("-" when it offers none). berth status and the
// UI show them so.
func DescribeFree(rs []ResourceUse) string {
	if len(rs) == 0 {
		return "-"
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%s %d/%d free", r.Name, r.Free, len(r.Addresses))
	}
	return strings.Join(parts, ", ")
}
