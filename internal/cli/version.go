package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/version"
)

// NewCmdVersion returns the version command; it needs no cluster.
func NewCmdVersion(streams genericiooptions.IOStreams) *cobra.Command {
	printFlags := genericclioptions.NewPrintFlags("").WithTypeSetter(report.Scheme)
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of the plugin",
		Long:  templates.LongDesc(`Print the version, commit, Go version and platform of this build.`),
		Example: templates.Examples(`
			# Print the version
			kubectl crdversion version

			# As JSON
			kubectl crdversion version -o json`),
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			info := version.Get()
			if *printFlags.OutputFormat == "" {
				_, err := fmt.Fprintf(streams.Out, "kubectl-crdversion %s (commit %s, %s, %s)\n", info.Version, info.Commit, info.GoVersion, info.Platform)
				return err
			}
			p, err := toPrinter(printFlags)
			if err != nil {
				return err
			}
			return p.PrintObj(&report.Version{Info: info}, streams.Out)
		},
	}
	printFlags.AddFlags(cmd)
	return cmd
}
