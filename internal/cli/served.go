package cli

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/crdversion/kubectl-crdversion/internal/edit"
)

// NewCmdServe returns the serve command.
func NewCmdServe(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return newServedCommand(f, streams, true)
}

// NewCmdUnserve returns the unserve command.
func NewCmdUnserve(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return newServedCommand(f, streams, false)
}

func newServedCommand(f cmdutil.Factory, streams genericiooptions.IOStreams, served bool) *cobra.Command {
	name, short, long, example := "serve", "Serve a version of a CRD again", templates.LongDesc(`
		Set served: true on a version of a CustomResourceDefinition, so that its
		endpoint is back in the API.`), templates.Examples(`
		# Serve v1beta1 of a CRD again
		kubectl crdversion serve crontabs.stable.example.com v1beta1`)
	if !served {
		name, short, long, example = "unserve", "Stop serving a version of a CRD", templates.LongDesc(`
			Set served: false on a version of a CustomResourceDefinition: its
			endpoint leaves the API, and clients that still use it fail.

			Preflight: the version is not the storage version, and another version
			stays served. Objects stay readable through the other versions. Check
			that no client still requests the version first; kubectl crdversion
			retire does this from the API server's metrics.`), templates.Examples(`
			# Stop serving v1beta1 after clients moved to v1
			kubectl crdversion unserve crontabs.stable.example.com v1beta1

			# See what would change, validated by the API server, without writing
			kubectl crdversion unserve crontabs.stable.example.com v1beta1 --dry-run=server`)
	}
	o := newEditOptions(name, streams)
	cmd := &cobra.Command{
		Use:                   name + " CRD_NAME VERSION [flags]",
		DisableFlagsInUseLine: true,
		Short:                 short,
		Long:                  long,
		Example:               example,
		ValidArgsFunction:     versionCompletion(f),
		RunE: o.runE(f, nil, func(ctx context.Context, _ *cobra.Command) error {
			return runSetServed(ctx, o, served)
		}),
	}
	o.addFlags(cmd)
	return cmd
}

func runSetServed(ctx context.Context, o *EditOptions, served bool) error {
	crd, err := o.load(ctx)
	if err != nil {
		return err
	}
	return o.apply(ctx, edit.SetServed(crd, o.Version, served))
}
