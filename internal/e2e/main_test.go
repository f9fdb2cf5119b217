// Package e2e holds the integration tests of kubectl crdversion. TestMain
// starts one real kube-apiserver (with embedded etcd) for the package and
// builds the plugin binary; each test works on CRDs of its own API group, so
// tests never see each other's objects.
package e2e

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/crdversion/kubectl-crdversion/internal/e2e/apiserver"
)

var (
	update      = flag.Bool("update", false, "rewrite the golden files under testdata/golden instead of comparing with them")
	serverLogs  = flag.Bool("server-logs", false, "print the kube-apiserver's and etcd's logs")
	srv         *apiserver.Server
	pluginDir   string // holds the built kubectl-crdversion binary
	repoRoot, _ = filepath.Abs("../..")
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var log io.Writer
	if *serverLogs {
		log = os.Stderr
	}
	s, err := apiserver.Start(apiserver.Options{Log: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the API server:", err)
		return 1
	}
	defer s.Stop()
	srv = s

	dir, err := os.MkdirTemp("", "crdversion-plugin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-crdversion"), "github.com/crdversion/kubectl-crdversion/cmd/kubectl-crdversion")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the plugin:", err)
		return 1
	}
	pluginDir = dir
	return m.Run()
}
