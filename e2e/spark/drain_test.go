package spark

// berth worker drain under a running Spark job: the drained worker's
// executor is decommissioned as standalone's Worker decommissions its
// executors, and its blocks move before it exits.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/wire"
)

// decommissionConf is standalone's decommissioning with block migration.
var decommissionConf = []string{
	"spark.decommission.enabled=true", "spark.storage.decommission.enabled=true",
	"spark.storage.decommission.rddBlocks.enabled=true", "spark.storage.decommission.shuffleBlocks.enabled=true",
	// How often it looks again for blocks to move (30s): it exits only
	// after a round that finds none left.
	"spark.storage.decommission.replicationReattemptInterval=1s",
}

// berth worker drain mid-job (testdata/Migrate.java), with
// spark.decommission.enabled and block migration. Each of the app's two
// executors holds cached partitions and shuffle map outputs it built, and
// runs a task held until the test says, when one's worker is drained. That
// executor is decommissioned as its client hears of the drain, finishes its
// task, hands each of its cached partitions and map outputs to another
// executor (its stderr in berth's logs says so, block by block), and exits
// well before the drain's deadline (EXITED 0, not LOST at the deadline);
// berth starts another on the third worker. Read again once the driver has
// heard it is gone, the cache and the shuffle give the same answers, and
// nothing of either is computed again.
func TestSparkDrainDecommissions(t *testing.T) {
	t.Parallel()
	slots(t, 1)
	cl := startCluster(t, clusterSpec{workers: []testcluster.WorkerSpec{
		worker("w1", 1, "1g"), worker("w2", 1, "1g"), worker("w3", 1, "1g")}})
	dir := t.TempDir()
	goFile, readFile := filepath.Join(dir, "go"), filepath.Join(dir, "read")
	r := cl.submit(t, "drain", decommissionConf, "--class", "Migrate", appJar, "8", "300", goFile, readFile)
	id := r.appID()
	execs := cl.running(t, id, 2, 90*time.Second)
	r.waitLog(builtRe, 1, 2*time.Minute)
	r.waitLog(heldRe, 2, time.Minute)
	drained := execs[0]
	b := parseBuilt(t, r.log())
	cache, maps := b.on("cache", drained.ID), b.on("map", drained.ID)
	if len(cache) == 0 || len(maps) == 0 || len(b.computed) != 16 {
		t.Fatalf("executor %d built cached partitions %v and map outputs %v of %v: want some of the 8 of each there", drained.ID, cache, maps, b.computed)
	}
	if held := heldOn(r.log()); !slices.Contains(held, drained.ID) {
		t.Fatalf("the held tasks run on executors %v; want one on %d", held, drained.ID)
	}

	const deadline = 60 * time.Second
	if out, err := cl.berthCLI("", "worker", "drain", drained.WorkerID, "--deadline", deadline.String()); err != nil {
		t.Fatalf("berth worker drain %s: %v\n%s", drained.WorkerID, err, out)
	}
	start := time.Now()
	r.waitLog(regexp.MustCompile(fmt.Sprintf(`Decommission executors: %d\b`, drained.ID)), 1, 30*time.Second)
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cl.appWhen(t, id, deadline, fmt.Sprintf("executor %d on the drained worker %s to end", drained.ID, drained.WorkerID), func(a wire.AppStatus) error {
		if e := executor(t, a, drained.ID); !e.State.Finished() {
			return fmt.Errorf("executor %d %s", e.ID, e.State)
		}
		return nil
	})
	took := time.Since(start)
	r.waitLog(regexp.MustCompile(fmt.Sprintf(`berth: executor %d on worker \S+ ended `, drained.ID)), 1, 30*time.Second)
	if err := os.WriteFile(readFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r.wait(3*time.Minute, "Migrate OK")
	if m := afterRe.FindStringSubmatch(r.log()); m == nil {
		t.Errorf("no %q in the driver's log", afterRe)
	} else if m[1] != "none" {
		t.Errorf("read again after executor %d (which built cache %v, map %v) was gone, computed again: %s; want none", drained.ID, cache, maps, m[1])
	}

	a := cl.finished(t, id)
	logged := agree(t, r.log(), a)
	stderr := executorLog(t, cl, id, drained.ID)
	if e := executor(t, a, drained.ID); e.State != wire.ExecutorExited || !sameCode(e.ExitCode, intp(0)) {
		t.Errorf("the drained executor in berth: %+v; want EXITED 0 (decommissioned), after %s of a %s deadline", e, took, deadline)
	}
	// Spark's BlockManagerDecommissioner, block by block, on the executor.
	var moved []int
	for _, m := range rddMovedRe.FindAllStringSubmatch(stderr, -1) {
		if m[1] == b.rdd {
			p, _ := strconv.Atoi(m[2])
			moved = append(moved, p)
		}
	}
	slices.Sort(moved)
	if !slices.Equal(moved, cache) {
		t.Errorf("executor %d's stderr says it migrated cached partitions %v of rdd %s; it built %v", drained.ID, moved, b.rdd, cache)
	}
	shuffles := shuffleMovedRe.FindAllStringSubmatch(stderr, -1)
	for _, m := range shuffles {
		if m[2] == strconv.Itoa(drained.ID) || m[2] == "driver" {
			t.Errorf("executor %d migrated a map output to itself or the driver: %s", drained.ID, m[0])
		}
	}
	if len(shuffles) != len(maps) || !strings.Contains(stderr, "all blocks migrated, stopping") {
		t.Errorf("executor %d's stderr says it migrated %d map outputs (it wrote %d), then stopped: %v", drained.ID, len(shuffles), len(maps), strings.Contains(stderr, "all blocks migrated"))
	}
	if t.Failed() {
		t.Logf("executor %d's stderr:\n%s", drained.ID, stderr)
	}
	if got := logged[drained.ID]; got.appsFailure {
		t.Errorf("the drained executor in the driver's log: %s", got.line)
	}
	if want := fmt.Sprintf("berth: decommissioning executor %d: worker %s is being drained", drained.ID, drained.WorkerID); !strings.Contains(r.log(), want) {
		t.Errorf("the driver's log lacks %q", want)
	}
	for _, e := range a.Executors {
		if e.ID >= 2 && e.WorkerID == drained.WorkerID {
			t.Errorf("executor %d placed on the drained worker", e.ID)
		}
	}
	if len(a.Executors) != 3 || appsFailures(logged) != 0 {
		t.Errorf("executors %s: want the drained one replaced once, no failure", describe(a))
	}
}

// Migrate's lines: where it built what, the reads after the drain.
var (
	builtRe = regexp.MustCompile(`built rdd (\d+): ([^;\n]*); shuffle: 10 keys, 8000 values`)
	afterRe = regexp.MustCompile(`after the drain: cached count 8000, shuffle: 10 keys, 8000 values; computed again: ([^\n]*)`)
	// The scheduler's launch of a held task (stage 2), and where.
	heldRe = regexp.MustCompile(`Starting task \S+ in stage 2\.0 \(TID \d+\) \([^)]*executor (\d+),`)
	// Spark's BlockManagerDecommissioner: a cached block replicated (then
	// dropped here), a map output's files uploaded to a peer.
	rddMovedRe = regexp.MustCompile(`Block rdd_(\d+)_(\d+) migrated successfully`)
	// (ShuffleBlockInfo(shuffle, map) prints as migrate_shuffle_S_M).
	shuffleMovedRe = regexp.MustCompile(`Migrated migrate_shuffle_(\d+)_\d+ \(size: [^)]*\) to BlockManagerId\(([^,]+),`)
)

// built is Migrate's account of the first build: the cached RDD's id, and
// each computation, "cache P@E" or "map P@E" (partition P on executor E).
type built struct {
	rdd      string
	computed []string
}

func parseBuilt(t *testing.T, log string) built {
	t.Helper()
	m := builtRe.FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no %q in the driver's log", builtRe)
	}
	return built{rdd: m[1], computed: strings.Split(m[2], ", ")}
}

// on lists, sorted, the partitions of kind (cache, map) built on executor id.
func (b built) on(kind string, id int) []int {
	var out []int
	for _, c := range b.computed {
		var p, e int
		if k, rest, ok := strings.Cut(c, " "); ok && k == kind {
			if _, err := fmt.Sscanf(rest, "%d@%d", &p, &e); err == nil && e == id {
				out = append(out, p)
			}
		}
	}
	slices.Sort(out)
	return out
}

// heldOn lists the executors the held tasks were launched on.
func heldOn(log string) []int {
	var out []int
	for _, m := range heldRe.FindAllStringSubmatch(log, -1) {
		id, _ := strconv.Atoi(m[1])
		out = append(out, id)
	}
	return out
}

// executorLog is an executor's whole stderr, as berth logs keeps it.
func executorLog(t *testing.T, cl *sparkCluster, app string, id int) string {
	t.Helper()
	ctx, cancel := callCtx()
	defer cancel()
	rc, err := cl.c.ExecutorLogs(ctx, app, id, "stderr", 0)
	if err != nil {
		t.Fatalf("executor %d's stderr: %v", id, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("executor %d's stderr: %v", id, err)
	}
	return string(data)
}
