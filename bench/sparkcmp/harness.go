package sparkcmp

import (
	"archive/zip"
	"context"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berth-cluster/berth/internal/spawn"
)

//go:embed driver/*.java
var driverSources embed.FS

// driverClass is the application's main class, in the default package.
const driverClass = "BerthBenchDriver"

// harness is what the measures share: the two systems, the driver
// application and its settings, the report being filled.
type harness struct {
	cfg       *config
	ps        *procs
	dir       string
	jar       string // the driver application, built from driver/*.java
	props     string // the drivers' properties file, the same for both systems
	berth     *berthCluster
	spark     *sparkCluster
	rep       *report
	progress  func(format string, args ...any)
	hostCores int

	seq      atomic.Int64
	mu       sync.Mutex
	examples map[string]string // system → its first spark-submit's command line
}

// systems are the two, in the order every round runs them.
func (h *harness) systems() []system { return []system{h.berth, h.spark} }

// driverProperties are every driver's settings: where it binds (executors
// connect to it), no UI (many drivers run at once, and its port is no
// part of the comparison), the executors' heap, and the listener that
// reports the executors.
func driverProperties(cfg *config) string {
	props := fmt.Sprintf(`# berthbench's drivers, on berth and on Spark standalone alike (spark-submit --properties-file)
spark.driver.host          %s
spark.driver.bindAddress   %s
spark.ui.enabled           false
spark.executor.memory      %s
spark.extraListeners       BerthBenchListener
`, driverIP, driverIP, cfg.executorMemory)
	if cfg.javaOptions != "" {
		props += fmt.Sprintf("spark.driver.extraJavaOptions    %s\nspark.executor.extraJavaOptions  %s\n", cfg.javaOptions, cfg.javaOptions)
	}
	return props
}

// buildDriver compiles the driver application against SPARK_HOME's jars
// and packs it as a jar in dir.
func buildDriver(ctx context.Context, sparkHome, dir string) (string, error) {
	src, classes := filepath.Join(dir, "driver-src"), filepath.Join(dir, "driver-classes")
	for _, d := range []string{src, classes} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	names, err := fs.Glob(driverSources, "driver/*.java")
	if err != nil {
		return "", err
	}
	args := []string{"--release", "17", "-nowarn", "-cp", filepath.Join(sparkHome, "jars", "*"), "-d", classes}
	for _, n := range names {
		data, err := driverSources.ReadFile(n)
		if err != nil {
			return "", err
		}
		path := filepath.Join(src, filepath.Base(n))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return "", err
		}
		args = append(args, path)
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, javaTool("javac"), args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("compiling the driver application (javac, a JDK 17 or later): %w\n%s", err, out)
	}
	jar := filepath.Join(dir, "berthbench-driver.jar")
	return jar, zipDir(classes, jar)
}

// zipDir writes the files of dir into a jar (a zip, with a manifest).
func zipDir(dir, jar string) error {
	f, err := os.Create(jar)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	w, err := zw.Create("META-INF/MANIFEST.MF")
	if err == nil {
		_, err = io.WriteString(w, "Manifest-Version: 1.0\r\nMain-Class: "+driverClass+"\r\n\r\n")
	}
	if err == nil {
		err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(dir, path)
			if err != nil {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			w, err := zw.Create(filepath.ToSlash(rel))
			if err != nil {
				return err
			}
			_, err = w.Write(data)
			return err
		})
	}
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", jar, err)
	}
	return nil
}

// submit starts one spark-submit of the driver application to s. The
// driver's stdout is read as it comes; the process is killed at the end
// of the run if it still runs then.
func (h *harness) submit(ctx context.Context, s system, spec appSpec) (*app, error) {
	n := h.seq.Add(1)
	args := []string{"--master", s.masterURL(), "--properties-file", h.props, "--name", spec.name, "--class", driverClass}
	args = append(args, s.submitArgs()...)
	for _, kv := range spec.conf {
		args = append(args, "--conf", kv)
	}
	args = append(append(args, h.jar), spec.driverArgs()...)
	submit := filepath.Join(h.cfg.sparkHome, "bin", "spark-submit")
	h.mu.Lock()
	if _, ok := h.examples[s.name()]; !ok {
		h.examples[s.name()] = "SPARK_HOME=" + h.cfg.sparkHome + " " + submit + " " + strings.Join(args, " ")
	}
	h.mu.Unlock()

	a := &app{system: s.name(), spec: spec, log: filepath.Join(h.dir, "apps", fmt.Sprintf("%04d-%s-%s.log", n, strings.ToLower(s.name()), spec.name)),
		changed: make(chan struct{}), done: make(chan struct{})}
	if err := os.MkdirAll(filepath.Dir(a.log), 0o755); err != nil {
		return nil, err
	}
	logf, err := os.Create(a.log)
	if err != nil {
		return nil, err
	}
	a.cmd = exec.Command(submit, args...)
	a.cmd.Env = append(baseEnv(), "SPARK_HOME="+h.cfg.sparkHome)
	a.cmd.Stderr = logf
	a.cmd.SysProcAttr = spawn.Attr() // dies with this process, even SIGKILLed
	stdout, err := a.cmd.StdoutPipe()
	if err == nil {
		a.stdin, err = a.cmd.StdinPipe()
	}
	if err != nil {
		logf.Close()
		return nil, err
	}
	a.start = time.Now()
	if err := spawn.Start(ctx, a.cmd, nil); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting spark-submit for %s: %w", spec.name, err)
	}
	h.ps.host.Cleanup(a.kill)
	go a.read(stdout, logf)
	return a, nil
}

// baseEnv is what every process gets of this one's environment.
func baseEnv() []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir()}
	if jh := os.Getenv("JAVA_HOME"); jh != "" {
		env = append(env, "JAVA_HOME="+jh)
	}
	return env
}

// javaTool is java, javac ... of JAVA_HOME if set, else from PATH.
func javaTool(name string) string {
	if jh := os.Getenv("JAVA_HOME"); jh != "" {
		return filepath.Join(jh, "bin", name)
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return name
}

func javaPath() string { return javaTool("java") }
