package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"
	"k8s.io/kubectl/pkg/util/term"

	"github.com/crdversion/kubectl-crdversion/internal/action"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/preflight"
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

			Preflight: the version is not the storage version; another version
			stays served; no object's owner reference or scale target, and no Helm release record, names it
			(every listable resource's metadata is read: once the version is
			unserved the garbage collector cannot resolve such an owner, so the
			object is never deleted, and an autoscaler that maps its target by
			version cannot find it; kubectl crdversion repair-references rewrites
			them); no webhook or policy rule of the resource is left with no
			version to match through (an Exact rule that lists only this version;
			fix the rule where it comes from). A resource or rule that cannot be
			read makes these checks unknown, and unserve refuses;
			--skip-reference-check skips them. And no client uses it: no request to the version during
			--usage-window and no watch open on it on any API server instance
			(each one's /metrics, read twice --usage-window apart, or the
			history of --prometheus-url / --prometheus-service), no write through
			it in the objects' managedFields, and, with --audit-log, no client of
			it in the audit logs. Evidence from before the window counts too
			(--usage-history, a day by default): requests an instance counted
			since it started that the window does not explain make the verdict
			unknown, and a managedFields write or an audited request inside the
			span is a client. When an instance or a source cannot be read the
			verdict is unknown and unserve refuses, naming what it could not see
			and the ways to see it. The evidence is printed; --skip-usage-check
			skips the check, and the output records it. Objects stay readable
			through the other versions.`), templates.Examples(`
			# Stop serving v1beta1 after clients moved to v1
			kubectl crdversion unserve crontabs.stable.example.com v1beta1

			# Watch for clients for a minute first
			kubectl crdversion unserve crontabs.stable.example.com v1beta1 --usage-window 1m

			# Look at a week of history in Prometheus, and name the clients from the audit logs
			kubectl crdversion unserve crontabs.stable.example.com v1beta1 --usage-window 7d \
			  --prometheus-service monitoring/prometheus-k8s:9090 --audit-log audit-1.log --audit-log audit-2.log

			# See what would change, validated by the API server, without writing
			kubectl crdversion unserve crontabs.stable.example.com v1beta1 --dry-run=server`)
	}
	fl := NewEditFlags()
	var usageFlags UsageFlags
	var skipReferences bool
	cmd := &cobra.Command{
		Use:                   name + " CRD_NAME VERSION [flags]",
		DisableFlagsInUseLine: true,
		Short:                 short,
		Long:                  long,
		Example:               example,
		ValidArgsFunction:     versionCompletion(f),
		RunE: runE(func(cmd *cobra.Command, args []string) (*ServedOptions, error) {
			eo, err := fl.toOptions(f, cmd, args, name, streams)
			if err != nil {
				return nil, err
			}
			return &ServedOptions{EditOptions: eo, Served: served, Usage: usageFlags, SkipReferenceCheck: skipReferences}, nil
		}),
	}
	fl.AddFlags(cmd)
	if !served {
		usageFlags.addFlags(cmd, 15*time.Second)
		addReferenceFlag(cmd, &skipReferences)
	}
	return cmd
}

// ServedOptions are the inputs of serve and unserve.
type ServedOptions struct {
	*EditOptions
	// Served is true for serve, false for unserve.
	Served bool
	Usage  UsageFlags
	// SkipReferenceCheck is --skip-reference-check (unserve).
	SkipReferenceCheck bool
}

// Validate checks the flags.
func (o *ServedOptions) Validate() error {
	if err := o.EditOptions.Validate(); err != nil {
		return err
	}
	return o.Usage.config().Validate()
}

// Run reads the CRD, runs the preflight (for unserve, the client-usage
// check) and writes.
func (o *ServedOptions) Run(ctx context.Context) error {
	r, err := o.load(ctx)
	if err != nil {
		return err
	}
	var m action.UsageMeasurer
	if o.client != nil && !o.Served {
		u, err := preflight.NewUsage(o.client, o.Usage.config(), nil)
		if err != nil {
			return err
		}
		if term.IsTerminal(o.ErrOut) {
			u.Waiting = waitProgress(o.ErrOut, o.Usage.UsageWindow)
		}
		m = u
	}
	uo := action.UsageOptions{
		Skip:  o.Usage.SkipUsageCheck,
		Write: o.DryRun != lifecycle.DryRunClient && o.Filename == "",
		Measuring: func(gv, sources string) {
			fmt.Fprintf(o.ErrOut, "Measuring the client usage of %s from %s…\n", gv, sources)
		}}
	if o.client != nil {
		uo.Permissions = o.client
		uo.SkipReferences = o.SkipReferenceCheck
		uo.References = referenceFinder(o.client, o.ErrOut)
		uo.Admission = o.client
	}
	res, err := action.SetServed(ctx, m, r.target, o.Version, o.Served, uo)
	if err != nil {
		return err
	}
	return r.finish(ctx, res)
}

// addReferenceFlag binds --skip-reference-check (unserve, retire).
func addReferenceFlag(cmd *cobra.Command, skip *bool) {
	cmd.Flags().BoolVar(skip, "skip-reference-check", false, "Do not look for owner references, scale targets and Helm release records that name the version (the output records that the check was skipped).")
}
