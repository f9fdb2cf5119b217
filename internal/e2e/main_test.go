// Package e2e holds the integration tests of kubectl crdversion. TestMain
// starts one real kube-apiserver (with embedded etcd) for the package and
// builds the plugin binary; each test works on CRDs of its own API group, so
// tests never see each other's objects.
//
// A test that owns its API group calls t.Parallel(): the tests mostly wait
// (the API server catching up, usage windows), so several run at once
// (make test's -parallel). These stay serial, and so run first, alone:
// the TestFault… tests (a restarted API server, etcd compaction, webhooks
// on every CRD write), the API Priority and Fairness and identity
// measurements, the sweeps that see every CRD (doctor --all, the corpus,
// the pruning differential test), the tests that install real CRDs under
// their own names (Gateway API, Flux), and the tests that run the storage
// version migrator and garbage collector controllers, which act on the
// whole API server. Run as shards (shards_test.go, .ci/e2e-shards), those
// groups get API servers of their own and run beside the parallel tests.
package e2e

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/crdversion/kubectl-crdversion/internal/cli"
	"github.com/crdversion/kubectl-crdversion/internal/e2e/apiserver"
)

var (
	update      = flag.Bool("update", false, "rewrite the golden files under testdata/golden instead of comparing with them")
	serverLogs  = flag.Bool("server-logs", false, "print the kube-apiserver's and etcd's logs")
	srv         *apiserver.Server
	pluginDir   string // holds the built kubectl-crdversion binary
	repoRoot, _ = filepath.Abs("../..")
)

// pluginEnv names a directory holding a kubectl-crdversion binary built
// from this tree, used instead of building one.
const pluginEnv = "CRDVERSION_E2E_PLUGIN"

// setupErr is why the API server or the plugin binary is missing; every
// test then fails with it (see newClients).
var setupErr error

func TestMain(m *testing.M) {
	if apiserver.IsInstanceProcess() {
		// One kube-apiserver of the HA control plane (usage_test.go).
		if err := apiserver.RunInstance(); err != nil {
			panic(err)
		}
		return
	}
	if apiserver.IsServerProcess() {
		// A test's own API server (ownServer).
		if err := apiserver.RunServerProcess(); err != nil {
			panic(err)
		}
		return
	}
	if spec := os.Getenv("CRDVERSION_BENCH_LOOP"); spec != "" {
		// BenchmarkMigrate's sequential loop, run as a process of its own.
		if err := sequentialLoop(spec); err != nil {
			panic(err)
		}
		return
	}
	if spec := os.Getenv("CRDVERSION_BENCH_CEILING"); spec != "" {
		// BenchmarkMigrate's ceiling, run as a process of its own.
		if err := ceilingProcess(spec); err != nil {
			panic(err)
		}
		return
	}
	if spec := os.Getenv("CRDVERSION_BENCH_PROMOTE"); spec != "" {
		// BenchmarkPromoteStoragePreflight's phases, each a process of its own.
		if err := promoteProcess(spec); err != nil {
			panic(err)
		}
		return
	}
	if name := os.Getenv("CRDVERSION_MF_BENCH_SCAN"); name != "" {
		// BenchmarkManagedFieldsScan's scan, run as a process of its own.
		if err := scanProcess(name); err != nil {
			panic(err)
		}
		return
	}
	if spec := os.Getenv("CRDVERSION_BENCH_PROBE"); spec != "" {
		// BenchmarkMigrate's foreground probe, run as a process of its own.
		if err := probeProcess(spec); err != nil {
			panic(err)
		}
		return
	}
	flag.Parse()
	run, err := applyShard()
	if err != nil {
		panic(err)
	}
	if !run {
		return
	}
	stop := setup()
	defer stop()
	defer stopUsageFixtures()
	crossCheckEveryMeasurement()
	defer os.Remove(crossCheckFile)
	// Returning is enough: the testing package exits with m.Run's code
	// once the clean-ups above have run.
	m.Run()
}

// crossCheckFile is the file of cli.CrossCheckEnv of the runs in this
// process ("" in benchmarks, which measure as users run); each run of the
// plugin binary gets a file of its own (executeWithin).
var crossCheckFile string

// crossCheckEveryMeasurement makes every migrate, retire --migrate and
// promote-storage of the tests — the plugin binary's and those run in
// process — measure each loss pass that reads also by dry runs
// (cli.CrossCheckEnv): the differential test of the two designs over
// every loss case, corpus CRD and fault the tests build. A run whose
// reads disagree with its dry runs fails its test (plugin,
// noDisagreementIn), even where the test's own assertions passed.
func crossCheckEveryMeasurement() {
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		return
	}
	crossCheckFile = filepath.Join(os.TempDir(), fmt.Sprintf("crdversion-crosscheck-%d", os.Getpid()))
	if err := os.Setenv(cli.CrossCheckEnv, crossCheckFile); err != nil {
		panic(err)
	}
}

// setup starts the API server and builds the plugin binary; it returns the
// clean-up.
func setup() func() {
	var log io.Writer
	if *serverLogs {
		log = os.Stderr
	}
	opts := apiserver.Options{Log: log}
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		// Benchmarks compact etcd themselves between phases, so that
		// the API server's periodic compaction (every 5 minutes) does
		// not land inside one phase and not another.
		opts.ExtraFlags = append(opts.ExtraFlags, "--etcd-compaction-interval=0")
	}
	// Start also routes klog, once for the process, to the servers' log:
	// the command trees that tests run in process leave it alone (the
	// binary's main quiets it once, cli.QuietClientLogs).
	s, err := apiserver.Start(opts)
	if err != nil {
		setupErr = fmt.Errorf("starting the API server: %w", err)
		return func() {}
	}
	srv = s
	// The test server is the default cluster of every command the tests
	// run, in process (plugin) and as a binary, as for a user whose
	// kubeconfig selects it.
	if err := os.Setenv("KUBECONFIG", s.Kubeconfig); err != nil {
		setupErr = err
		return s.Stop
	}
	if dir := os.Getenv(pluginEnv); dir != "" {
		// Built once for every shard (.ci/e2e-shards).
		pluginDir = dir
		return s.Stop
	}
	dir, err := os.MkdirTemp("", "crdversion-plugin-")
	if err != nil {
		setupErr = err
		return s.Stop
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-crdversion"), "github.com/crdversion/kubectl-crdversion/cmd/kubectl-crdversion")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		setupErr = fmt.Errorf("building the plugin: %w", err)
	}
	pluginDir = dir
	return func() {
		s.Stop()
		os.RemoveAll(dir)
	}
}
