package worker

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Placeholders are replaced in the env's values as in argv: a Spark
// executor's SPARK_LOG_URL_STDOUT names its own executor id.
func TestPlaceholdersInTheEnvironmentsValues(t *testing.T) {
	fm, w := startParallel(t, nil)
	launch := launchOf("app-env", 7, helperCmd(t, "print-env"), map[string]string{"SPARK_LOG_URL_STDOUT": "https://m/ui/logs?app={{APP_ID}}&executor={{EXECUTOR_ID}}"})
	w.mustCall(200, "POST", "/v1/executors", launch)
	fm.waitFinal(t, "app-env", 7)
	var out struct{ Env []string }
	raw, err := os.ReadFile(filepath.Join(w.execDir("app-env", 7), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	data := string(raw)
	if err := json.Unmarshal([]byte(strings.TrimSpace(data)), &out); err != nil {
		t.Fatalf("%q: %v", data, err)
	}
	env := strings.Join(out.Env, "\n")
	if !strings.Contains(env, "SPARK_LOG_URL_STDOUT=https://m/ui/logs?app=app-env&executor=7") {
		t.Errorf("env %s: want its value substituted", env)
	}
}
