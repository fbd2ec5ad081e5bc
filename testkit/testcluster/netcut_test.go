package testcluster

import (
	"slices"
	"testing"
)

// A run's table is stale once its pid is gone; other tables, and names
// that only look alike, are left alone.
func TestStaleCutTables(t *testing.T) {
	listing := "table inet berth_cut_100\ntable inet berth_cut_200\ntable inet filter\n" +
		"table inet berth_cut_x\ntable ip berth_cut_300\n  table inet berth_cut_400  \n"
	alive := func(pid int) bool { return pid == 200 }
	got := staleCutTables(listing, alive)
	want := []string{"berth_cut_100", "berth_cut_400"}
	if !slices.Equal(got, want) {
		t.Fatalf("stale tables = %v, want %v", got, want)
	}
}
