package master

import (
	"testing"

	"github.com/berth-cluster/berth/wire"
)

// A refused submission has no id: its audit entry named nothing ("-")
// unless it had a name. It names its name, else the program it would
// have run.
func TestARefusedSubmissionsTargetSaysWhatItAskedFor(t *testing.T) {
	for _, c := range []struct {
		desc any
		want string
	}{
		{wire.AppDescription{Name: "etl", Command: []string{"/bin/etl"}}, "name:etl"},
		{wire.AppDescription{Command: []string{"/bin/etl", "--x"}}, "command:/bin/etl"},
		{wire.DriverDescription{Command: []string{"spark-submit"}}, "command:spark-submit"},
		{wire.DriverDescription{Name: "nightly"}, "name:nightly"},
		{wire.AppDescription{}, ""},
	} {
		if got := submissionName(c.desc); got != c.want {
			t.Errorf("%+v: %q, want %q", c.desc, got, c.want)
		}
	}
}
