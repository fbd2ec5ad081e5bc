package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// Custom resources (GPUs, FPGAs...) a worker offers: --resource NAME=COUNT
// (addresses 0..COUNT-1) or --resource NAME:discovery=PATH, a script whose
// stdout is Spark's ResourceInformation JSON, {"name":"gpu","addresses":
// ["0","1"]}. The master assigns the addresses; the worker gives a process
// its own as BERTH_RESOURCE_<NAME> (and CUDA_VISIBLE_DEVICES for "gpu"), and
// as a file in Spark's resources-file format where its argv says
// {{RESOURCES}}.

// discoveryTimeout bounds a discovery script.
const discoveryTimeout = 30 * time.Second

// ParseResources turns --resource values into the offer, running discovery
// scripts. Every error names the flag and the value.
func ParseResources(ctx context.Context, specs []string) (map[string][]string, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	offer := map[string][]string{}
	for _, spec := range specs {
		name, addrs, err := parseResource(ctx, spec)
		if err != nil {
			return nil, fmt.Errorf("--resource %q: %w", spec, err)
		}
		if _, dup := offer[name]; dup {
			return nil, fmt.Errorf("--resource %q: resource %s given twice", spec, name)
		}
		offer[name] = addrs
	}
	if err := wire.CheckResourceOffer(offer); err != nil {
		return nil, fmt.Errorf("--resource: %w", err)
	}
	return offer, nil
}

func parseResource(ctx context.Context, spec string) (string, []string, error) {
	if name, path, ok := strings.Cut(spec, ":discovery="); ok {
		addrs, err := discover(ctx, name, path)
		return name, addrs, err
	}
	name, count, ok := strings.Cut(spec, "=")
	if !ok {
		return "", nil, errors.New("want NAME=COUNT or NAME:discovery=PATH")
	}
	n, err := strconv.Atoi(count)
	if err != nil || n < 1 || n > wire.MaxResourceAddresses {
		return "", nil, fmt.Errorf("count %q: want 1 to %d", count, wire.MaxResourceAddresses)
	}
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = strconv.Itoa(i)
	}
	return name, addrs, nil
}

// discover runs a discovery script and reads its answer.
func discover(ctx context.Context, name, path string) ([]string, error) {
	if !wire.ValidResourceName(name) {
		return nil, fmt.Errorf("resource name %q: want a lowercase letter then lowercase letters, digits or _", name)
	}
	ctx, cancel := context.WithTimeout(ctx, discoveryTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("discovery script %s did not answer within %s", path, discoveryTimeout)
		}
		return nil, fmt.Errorf("discovery script %s: %w%s", path, err, tail(stderr.String()))
	}
	var info struct {
		Name      string   `json:"name"`
		Addresses []string `json:"addresses"`
	}
	if err := json.Unmarshal(out, &info); err != nil {
		return nil, fmt.Errorf("discovery script %s printed %q: want {\"name\":%q,\"addresses\":[...]}: %w", path, tail(string(out)), name, err)
	}
	if info.Name != name {
		return nil, fmt.Errorf("discovery script %s answered for resource %q, not %q", path, info.Name, name)
	}
	if len(info.Addresses) == 0 {
		return nil, fmt.Errorf("discovery script %s found no %s addresses", path, name)
	}
	return info.Addresses, nil
}

func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 200 {
		s = "…" + s[len(s)-200:]
	}
	if s == "" {
		return ""
	}
	return ": " + s
}

// checkGrants refuses a command giving addresses this worker does not offer.
func (w *Worker) checkGrants(g wire.ResourceGrants) error {
	for name, grant := range g {
		offered := w.cfg.Resources[name]
		if len(grant.Addresses) == 0 || !(grant.Share >= 0 && grant.Share < 1) {
			return fmt.Errorf("resources: %s: malformed grant", name)
		}
		for _, a := range grant.Addresses {
			if !slices.Contains(offered, a) {
				return fmt.Errorf("resources: %s address %q is not offered by this worker", name, a)
			}
		}
	}
	return nil
}

// resourceEnv adds a process's resources to its environment.
func resourceEnv(env map[string]string, g wire.ResourceGrants) {
	for name, grant := range g {
		list := strings.Join(grant.Addresses, ",")
		env[wire.ResourceEnvName(name)] = list
		if grant.Share > 0 {
			env[wire.ResourceEnvName(name)+wire.EnvResourceShareSuffix] = strconv.FormatFloat(grant.Share, 'f', -1, 64)
		}
		if name == "gpu" {
			env[wire.EnvCUDAVisible] = list
		}
	}
}

// resourcesFile is the file {{RESOURCES}} names, in the process's directory.
const resourcesFile = "resources.json"

// needsResourcesFile: the process was granted resources, or its argv names
// the file anywhere, not only as a whole argument: `sh -c 'cat
// {{RESOURCES}}'` must find a file (an empty list) too.
func (p *proc) needsResourcesFile() bool {
	path := filepath.Join(p.dir, resourcesFile)
	return p.resources != nil || slices.ContainsFunc(p.argv, func(arg string) bool { return strings.Contains(arg, path) })
}

// resourcesFileContent is a process's resources in Spark's resources-file
// format (a list of ResourceAllocation):
// [{"id":{"componentName":"spark.executor","resourceName":"gpu"},"addresses":["0"]}].
func resourcesFileContent(component string, g wire.ResourceGrants) ([]byte, error) {
	type id struct {
		ComponentName string `json:"componentName"`
		ResourceName  string `json:"resourceName"`
	}
	type allocation struct {
		ID        id       `json:"id"`
		Addresses []string `json:"addresses"`
		Share     float64  `json:"share,omitempty"`
	}
	names := make([]string, 0, len(g))
	for name := range g {
		names = append(names, name)
	}
	sort.Strings(names)
	list := make([]allocation, 0, len(names))
	for _, name := range names {
		list = append(list, allocation{ID: id{component, name}, Addresses: g[name].Addresses, Share: g[name].Share})
	}
	data, err := json.Marshal(list)
	return append(data, '\n'), err
}
