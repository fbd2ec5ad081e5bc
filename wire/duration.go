package wire

import (
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a length of time written in JSON as Go writes durations:
// "90s", "1m30s", "500ms" (a bare number is refused: its unit would be a
// guess).
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration as a string, such as \"90s\" or \"5m\", not %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as \"90s\" or \"5m\": %w", err)
	}
	*d = Duration(v)
	return nil
}

// D is d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MaxStopAfterDisconnect bounds stopAfterDisconnect: a week out of touch
// is an outage nobody waits out.
const MaxStopAfterDisconnect = 7 * 24 * time.Hour

// CheckStopAfterDisconnect checks an app's or a driver's
// stopAfterDisconnect: 0 (never) or from a second to a week.
func CheckStopAfterDisconnect(d Duration) error {
	if d != 0 && (d.D() < time.Second || d.D() > MaxStopAfterDisconnect) {
		return fmt.Errorf("stopAfterDisconnect %s: want 0 (never stop) or from 1s to %s", d.D(), MaxStopAfterDisconnect)
	}
	return nil
}
