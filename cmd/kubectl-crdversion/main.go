// Command kubectl-crdversion is the kubectl plugin `kubectl crdversion`: it
// takes a CustomResourceDefinition safely through the life of its API
// versions. See README.md.
package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/crdversion/kubectl-crdversion/internal/cli"
)

func main() {
	cli.QuietClientLogs()
	cmd := cli.NewRootCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	// SIGINT/SIGTERM cancel the context: a migration stops after the writes
	// in flight and keeps its checkpoint.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.Interrupted(ctx, cmd.ExecuteContext(ctx))
	stop()
	// diff, check-upgrade and doctor exit like kubectl diff: 1 when their
	// report has error-level findings (already printed), 2 or more when
	// they failed.
	var found *cli.FindingsError
	var failed *cli.CheckError
	switch {
	case errors.As(err, &found):
		os.Exit(1)
	case errors.As(err, &failed):
		cmdutil.CheckDiffErr(failed.Err)
	}
	// CheckErr prints API errors in kubectl's form ("Error from server
	// (NotFound): …", "error: …") and exits 1, or with the code of an
	// exec.CodeExitError.
	cmdutil.CheckErr(err)
}
