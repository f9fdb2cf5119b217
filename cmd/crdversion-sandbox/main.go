// Command crdversion-sandbox runs a real Kubernetes control plane — the
// kube-apiserver of Kubernetes v1.37 on an embedded etcd — in one process,
// for trying kubectl crdversion without a cluster. Nothing is downloaded.
//
//	crdversion-sandbox --kubeconfig /tmp/sandbox/kubeconfig [--apply FILE_OR_DIR]... [-- COMMAND ARGS...]
//
// It writes a kubeconfig to the given path, creates the CRDs and objects of
// each --apply path, prints one line when ready, and serves until SIGINT or
// SIGTERM. With a COMMAND after "--", it runs the command with KUBECONFIG
// set, then stops and exits with the command's exit code.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/crdversion/kubectl-crdversion/internal/e2e/apiserver"
	"github.com/crdversion/kubectl-crdversion/internal/e2e/fixture"
)

type stringList []string

func (s *stringList) String() string     { return fmt.Sprint(*s) }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("crdversion-sandbox", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "path to write the sandbox's kubeconfig to (required)")
	var apply stringList
	fs.Var(&apply, "apply", "a YAML file or directory of CRDs and objects to create once the server is ready (repeatable)")
	logs := fs.Bool("server-logs", false, "print the API server's logs on stderr")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: crdversion-sandbox --kubeconfig PATH [--apply FILE_OR_DIR]... [-- COMMAND ARGS...]\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "error: --kubeconfig is required")
		return 2
	}
	path, err := filepath.Abs(*kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}

	var log io.Writer
	if *logs {
		log = os.Stderr
	}
	started := time.Now()
	srv, err := apiserver.Start(apiserver.Options{Log: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "error: starting the sandbox:", err)
		return 1
	}
	defer srv.Stop()
	if err := apiserver.WriteKubeconfig(path, srv.Config); err != nil {
		fmt.Fprintln(os.Stderr, "error: writing the kubeconfig:", err)
		return 1
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(apply) > 0 {
		objs, err := fixture.Read(apply...)
		if err == nil {
			_, err = fixture.Apply(ctx, srv.Config, objs)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "error: --apply:", err)
			return 1
		}
	}
	fmt.Fprintf(os.Stderr, "sandbox ready in %.1fs: kube-apiserver %s, kubeconfig %s\n", time.Since(started).Seconds(), srv.Config.Host, path)

	if command := fs.Args(); len(command) > 0 {
		cmd := exec.CommandContext(ctx, command[0], command[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.Env = append(os.Environ(), "KUBECONFIG="+path)
		err := cmd.Run()
		var exitErr *exec.ExitError
		switch {
		case errors.As(err, &exitErr):
			return exitErr.ExitCode()
		case err != nil:
			fmt.Fprintln(os.Stderr, "error:", err)
			return 1
		}
		return 0
	}
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "sandbox stopping")
	return 0
}
