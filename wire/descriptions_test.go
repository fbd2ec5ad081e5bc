package wire

import (
	"encoding/json"
	"testing"
	"time"
)

// The descriptions marshal with their fields in the order they always
// had: a submission's idempotency hash is of its description as
// marshalled, so a retry that reaches a master of another version must
// hash alike. ProcessSpec's fields, embedded, sit where each description
// used to spell them out.
func TestDescriptionsMarshalInTheirOrder(t *testing.T) {
	one := 1
	spec := ProcessSpec{Queue: "q", Priority: 2, StopAfterDisconnect: Duration(time.Second), Ports: []string{"http"},
		Checks: []Check{{Name: "x"}}, Restart: &RestartPolicy{Attempts: &one}, Constraints: []Constraint{{Label: "l", In: []string{"v"}}}}
	app := AppDescription{Name: "n", Command: []string{"c"}, Env: map[string]string{"a": "b"}, MaxCores: 4, CoresPerExecutor: 1,
		MemoryPerExecutorMB: 5, InitialExecutorLimit: &one, ResourcesPerExecutor: ResourceAmounts{"gpu": 1}, ProcessSpec: spec,
		Gang: 2, GangRestart: true, UIURL: "u", Detached: true}
	driver := DriverDescription{Name: "n", Command: []string{"c"}, Cores: 1, MemoryMB: 2, Supervise: true, Resources: ResourceAmounts{"gpu": 1}, ProcessSpec: spec}
	const common = `"queue":"q","priority":2,"stopAfterDisconnect":"1s","ports":["http"],"checks":[{"name":"x","type":""}],"restart":{"attempts":1},"constraints":[{"label":"l","in":["v"]}]`
	for _, c := range []struct {
		what string
		v    any
		want string
	}{
		{"app", app, `{"name":"n","command":["c"],"env":{"a":"b"},"maxCores":4,"coresPerExecutor":1,"memoryPerExecutorMB":5,"initialExecutorLimit":1,"resourcesPerExecutor":{"gpu":1},` + common + `,"gang":2,"gangRestart":true,"uiUrl":"u","detached":true}`},
		{"driver", driver, `{"name":"n","command":["c"],"cores":1,"memoryMB":2,"supervise":true,"resources":{"gpu":1},` + common + `}`},
	} {
		got, err := json.Marshal(c.v)
		if err != nil || string(got) != c.want {
			t.Errorf("%s marshals as %s (%v), want %s", c.what, got, err, c.want)
		}
	}
}
