// Package admission holds the checks of what the master's API admits: an
// app's and a driver's description, a tenant, a queue's settings, and a
// state to restore, whose records must each pass the check the API would
// have made of them. Each check is pure and answers a 400 (an
// httpx.StatusError) that names the field. The master runs them on every
// request and restore; berth operator snapshot inspect runs the restore's
// on a file, so that it refuses what a master would.
package admission

import (
	"net/http"
	"strings"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/internal/termtext"
	"github.com/berth-cluster/berth/wire"
)

// BadRequest is the 400 every check answers.
func BadRequest(format string, args ...any) error {
	return httpx.Errorf(http.StatusBadRequest, format, args...)
}

// Range refuses v outside lo..hi, naming the field.
func Range(name string, v, lo, hi int) error {
	if v < lo || v > hi {
		return BadRequest("%s is %d; it must be between %d and %d", name, v, lo, hi)
	}
	return nil
}

// Name refuses a name (field names its JSON field) that holds a
// character a terminal acts on (termtext.Unsafe: C0 and C1 controls, DEL,
// bidirectional overrides and isolates) or invalid UTF-8. Names are shown
// to operators, by berth status among others, and a name exists to be
// read: it has no use for them. Commands and environments are not checked
// so: programs legitimately take such arguments, and berth escapes them
// when it shows them.
func Name(field, value string) error {
	if !termtext.Safe(value) {
		return BadRequest("%s %q holds a control character, a bidirectional formatting character or invalid UTF-8", field, value)
	}
	return nil
}

func checkCommand(argv []string) error {
	if len(argv) == 0 || argv[0] == "" {
		return BadRequest("command is empty: give the program and its arguments")
	}
	if len(argv) > wire.MaxCommandArgs {
		return BadRequest("command has %d arguments, more than %d", len(argv), wire.MaxCommandArgs)
	}
	for i, a := range argv {
		if strings.ContainsRune(a, 0) {
			return BadRequest("command argument %d contains a NUL byte", i)
		}
	}
	return nil
}

func checkEnv(env map[string]string) error {
	for k, v := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return BadRequest("environment variable %q is not valid (a name without '=' or NUL)", k)
		}
	}
	return nil
}

// checkPlacementClass checks a description's queue name (its existence is
// the master's to check, against its queues) and priority.
func checkPlacementClass(queue string, priority int) error {
	if queue != "" {
		if err := wire.CheckQueueName("queue", queue); err != nil {
			return BadRequest("%v", err)
		}
	}
	if err := wire.CheckPriority(priority); err != nil {
		return BadRequest("%v", err)
	}
	return nil
}
