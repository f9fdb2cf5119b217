package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/crdversion/kubectl-crdversion/internal/action"
)

var deprecateLong = templates.LongDesc(`
	Mark a version of a CustomResourceDefinition deprecated.

	Every request to a deprecated version gets a Warning header, which kubectl
	and client-go print: the text of --warning, or the API server's default,
	for example "stable.example.com/v1beta1 CronTab is deprecated; use
	stable.example.com/v1 CronTab". The API server counts these requests in
	apiserver_requested_deprecated_apis. --undo removes the deprecation.

	Preflight (warnings): the version is the storage version or kubectl's
	default; it is the only served version, so every client — the owning
	controllers too — gets the warning with nowhere to move; --warning does not
	name the API (group/version and kind), so clients log it without saying
	what it is about.`)

var deprecateExample = templates.Examples(`
	# Deprecate v1beta1 with the API server's default warning
	kubectl crdversion deprecate crontabs.stable.example.com v1beta1

	# With a custom warning
	kubectl crdversion deprecate crontabs.stable.example.com v1beta1 --warning "stable.example.com/v1beta1 CronTab is deprecated; use v1"

	# Undo it
	kubectl crdversion deprecate crontabs.stable.example.com v1beta1 --undo`)

// DeprecateOptions are the inputs of deprecate.
type DeprecateOptions struct {
	*EditOptions
	// Warning is the deprecationWarning; nil for the API server's default.
	Warning *string
	Undo    bool
}

// NewCmdDeprecate returns the deprecate command.
func NewCmdDeprecate(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	fl := NewEditFlags()
	var warning string
	var undo bool
	cmd := &cobra.Command{
		Use:                   "deprecate CRD_NAME VERSION [--warning TEXT | --undo] [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Mark a version of a CRD deprecated, with an optional warning",
		Long:                  deprecateLong,
		Example:               deprecateExample,
		ValidArgsFunction:     versionCompletion(f),
		RunE: runE(func(cmd *cobra.Command, args []string) (*DeprecateOptions, error) {
			eo, err := fl.toOptions(f, cmd, args, "deprecate", streams)
			if err != nil {
				return nil, err
			}
			o := &DeprecateOptions{EditOptions: eo, Undo: undo}
			if cmd.Flags().Changed("warning") {
				o.Warning = &warning
			}
			return o, nil
		}),
	}
	fl.AddFlags(cmd)
	cmd.Flags().StringVar(&warning, "warning", "", "The deprecationWarning clients get instead of the API server's default text.")
	cmd.Flags().BoolVar(&undo, "undo", false, "Remove the deprecation (deprecated: false, no deprecationWarning).")
	return cmd
}

// Validate checks the flags.
func (o *DeprecateOptions) Validate() error {
	if err := o.EditOptions.Validate(); err != nil {
		return err
	}
	if o.Warning != nil && o.Undo {
		return fmt.Errorf("--warning and --undo cannot be combined")
	}
	return nil
}

// Run reads the CRD, runs the preflight and writes.
func (o *DeprecateOptions) Run(ctx context.Context) error {
	r, err := o.load(ctx)
	if err != nil {
		return err
	}
	return r.finish(ctx, action.Deprecate(r.target, o.Version, o.Warning, o.Undo))
}
