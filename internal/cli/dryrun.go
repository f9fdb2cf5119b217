package cli

import (
	"github.com/spf13/cobra"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// dryRunFlag reads --dry-run once, as kubectl reads it (so that a bare
// --dry-run means client and a wrong value is refused the same way), and
// converts it to the one value every layer below carries to the request.
func dryRunFlag(cmd *cobra.Command) (lifecycle.DryRun, error) {
	s, err := cmdutil.GetDryRunStrategy(cmd)
	if err != nil {
		return lifecycle.DryRunNone, err
	}
	return dryRunOf(s), nil
}

// dryRunOf is kubectl's dry-run strategy as a lifecycle.DryRun.
func dryRunOf(s cmdutil.DryRunStrategy) lifecycle.DryRun {
	switch s {
	case cmdutil.DryRunClient:
		return lifecycle.DryRunClient
	case cmdutil.DryRunServer:
		return lifecycle.DryRunServer
	}
	return lifecycle.DryRunNone
}

// strategyOf is d as kubectl's dry-run strategy, for kubectl's printers.
func strategyOf(d lifecycle.DryRun) cmdutil.DryRunStrategy {
	switch d {
	case lifecycle.DryRunClient:
		return cmdutil.DryRunClient
	case lifecycle.DryRunServer:
		return cmdutil.DryRunServer
	}
	return cmdutil.DryRunNone
}
