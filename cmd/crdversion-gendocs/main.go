// Command gendocs writes the command reference of kubectl crdversion into a
// folder (docs/commands for `make docs`).
package main

import (
	"fmt"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/crdversion/kubectl-crdversion/internal/cli"
	"github.com/crdversion/kubectl-crdversion/internal/clidocs"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gendocs DIR")
		os.Exit(2)
	}
	root := cli.NewRootCommand(genericiooptions.NewTestIOStreamsDiscard())
	if err := clidocs.Write(root, os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}
