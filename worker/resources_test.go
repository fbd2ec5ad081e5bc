package worker

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/wire"
)

func TestParseResources(t *testing.T) {
	script := filepath.Join(t.TempDir(), "gpus.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho '{\"name\":\"gpu\",\"addresses\":[\"GPU-a\",\"GPU-b\"]}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := ParseResources(context.Background(), []string{"fpga=3", "gpu:discovery=" + script})
	want := map[string][]string{"fpga": {"0", "1", "2"}, "gpu": {"GPU-a", "GPU-b"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseResources = %v, %v; want %v", got, err, want)
	}
	if got, err := ParseResources(context.Background(), nil); got != nil || err != nil {
		t.Errorf("no flag: %v, %v", got, err)
	}
	for _, bad := range []string{"gpu=0", "gpu=x", "gpu", "Gpu=1", "gpu:discovery=/no/such"} {
		if _, err := ParseResources(context.Background(), []string{bad}); err == nil || !strings.Contains(err.Error(), "--resource") {
			t.Errorf("%q: %v, want an error naming --resource", bad, err)
		}
	}
}

// A process learns its addresses (and its share of a shared GPU) from its
// environment and, where its argv says {{RESOURCES}}, from a file in
// Spark's resources-file format.
func TestResourceEnvAndFile(t *testing.T) {
	env := map[string]string{}
	resourceEnv(env, wire.ResourceGrants{"gpu": {Addresses: []string{"3"}, Share: 0.25}, "fpga": {Addresses: []string{"0", "1"}}})
	want := map[string]string{
		"BERTH_RESOURCE_GPU": "3", "BERTH_RESOURCE_GPU_SHARE": "0.25", "CUDA_VISIBLE_DEVICES": "3",
		"BERTH_RESOURCE_FPGA": "0,1",
	}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("env %v, want %v", env, want)
	}
	data, err := resourcesFileContent("spark.executor", wire.ResourceGrants{"gpu": {Addresses: []string{"0", "1"}}})
	if err != nil {
		t.Fatal(err)
	}
	var file []struct {
		ID        struct{ ComponentName, ResourceName string } `json:"id"`
		Addresses []string                                     `json:"addresses"`
	}
	if err := json.Unmarshal(data, &file); err != nil || len(file) != 1 || file[0].ID.ComponentName != "spark.executor" ||
		file[0].ID.ResourceName != "gpu" || !reflect.DeepEqual(file[0].Addresses, []string{"0", "1"}) {
		t.Errorf("resources file %s: %v", data, err)
	}
}

// A launch naming addresses the worker does not offer is refused.
func TestLaunchWithUnofferedAddressesIsRefused(t *testing.T) {
	w := &Worker{cfg: Config{Resources: map[string][]string{"gpu": {"0", "1"}}}}
	if err := w.checkGrants(wire.ResourceGrants{"gpu": {Addresses: []string{"1"}}}); err != nil {
		t.Errorf("an offered address: %v", err)
	}
	for _, g := range []wire.ResourceGrants{
		{"gpu": {Addresses: []string{"7"}}},
		{"fpga": {Addresses: []string{"0"}}},
		{"gpu": {}},
		{"gpu": {Addresses: []string{"0"}, Share: 1.5}},
	} {
		if err := w.checkGrants(g); err == nil {
			t.Errorf("grant %v accepted", g)
		}
	}
}

// The resources file is written for a process granted resources, or one
// whose argv names it anywhere (inside a shell command too), and only then.
func TestResourcesFileIsWrittenWhenNamed(t *testing.T) {
	dir := "/work/app-1/0"
	path := filepath.Join(dir, resourcesFile)
	for _, c := range []struct {
		argv      []string
		resources wire.ResourceGrants
		want      bool
	}{
		{[]string{"cat", path}, nil, true},
		{[]string{"sh", "-c", "cat " + path + " >&2"}, nil, true},
		{[]string{"sleep", "1"}, wire.ResourceGrants{"gpu": {Addresses: []string{"0"}}}, true},
		{[]string{"sleep", "1"}, nil, false},
		{[]string{"cat", filepath.Join("/work/app-1/1", resourcesFile)}, nil, false},
	} {
		p := &proc{dir: dir, argv: c.argv, resources: c.resources}
		if got := p.needsResourcesFile(); got != c.want {
			t.Errorf("argv %q, resources %v: needs the file %v, want %v", c.argv, c.resources, got, c.want)
		}
	}
}
