package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"
	"k8s.io/kubectl/pkg/util/term"

	"github.com/crdversion/kubectl-crdversion/internal/action"
	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/preflight"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/svm"
	"github.com/crdversion/kubectl-crdversion/internal/view"
)

var statusLong = templates.LongDesc(`
	Show where the API versions of a CustomResourceDefinition stand. Exit
	codes, as kubectl diff's: 0 no error-level finding, 1 error-level findings
	(the report is printed in full first), 2 status failed.

	The versions table lists, for each version in spec.versions and each one
	only left in status.storedVersions: served, storage, deprecated, whether it
	is in status.storedVersions, its rank in kubectl's version priority (the
	default version is marked), and whether its schema is identical to the
	storage version's. Below it: the conversion strategy, the number of objects
	(listed metadata only, page by page), the lifecycle state S0-S6, findings
	(errors, warnings, notes) and the next command to run. With Webhook
	conversion the objects are listed a second time through another served
	version, so that a conversion webhook that does not answer is reported.

	CRD_NAME is a CRD name (crontabs.stable.example.com) or a resource, short name or
	kind as kubectl resolves them (crontabs, ct, CronTab).

	With --contexts or --all-contexts, status reads the CRD in each cluster at
	once and prints one table — context, state, storage version, storedVersions,
	objects, blocking findings — and, for each version on its way out, whether
	it can leave the CRD manifest: only when no reachable cluster's
	status.storedVersions lists it, and never while a cluster cannot be read.
	Each blocking cluster comes with the command that unblocks it there; the
	exit code is 1 also when a cluster could not be read.`)

var statusExample = templates.Examples(`
	# Show the versions, state and next step of a CRD
	kubectl crdversion status crontabs.stable.example.com

	# The same, by short name, without counting objects
	kubectl crdversion status ct --count=false

	# Machine-readable output; the schema is in docs/output.md
	kubectl crdversion status crontabs.stable.example.com -o json

	# Only the lifecycle state
	kubectl crdversion status crontabs.stable.example.com -o jsonpath='{.state}'

	# The same CRD in three clusters: can v1beta1 leave the manifest?
	kubectl crdversion status crontabs.stable.example.com --contexts prod-eu,prod-us,staging --version v1beta1`)

// StatusFlags are the flags of status.
type StatusFlags struct {
	PrintFlags *genericclioptions.PrintFlags
	// Count lists the CRD's objects (metadata only) to count them.
	Count bool
	// ChunkSize is the page size of that list.
	ChunkSize int64
	// Fleet runs status against several contexts at once; Versions are the
	// versions whose verdict is asked (default: every version on its way out).
	Fleet    *FleetFlags
	Versions []string
	// VersionOrder is --version-order, oldest first.
	VersionOrder []string
	// References is --references: count the references to each version
	// other than the storage version.
	References bool
}

// NewStatusFlags returns the flags with their defaults.
func NewStatusFlags(conn *genericclioptions.ConfigFlags) *StatusFlags {
	return &StatusFlags{
		PrintFlags: genericclioptions.NewPrintFlags("").WithTypeSetter(report.Scheme),
		Count:      true,
		ChunkSize:  cluster.ChunkSize,
		Fleet:      newFleetFlags(conn, 30*time.Second),
	}
}

// StatusOptions are the inputs of `kubectl crdversion status`, resolved once.
type StatusOptions struct {
	// CRD is the argument naming the CRD.
	CRD        string
	Count      bool
	References bool
	ChunkSize  int64
	// Versions are the versions a fleet verdict is asked for.
	Versions []string
	// VersionOrder is the order of versions the user gave, oldest first.
	VersionOrder []string
	// contexts are the fleet's contexts; none outside fleet mode.
	contexts []string
	fleet    *FleetFlags
	// conn are the connection flags typed, repeated in printed commands.
	conn   []lifecycle.Flag
	client *cluster.Client
	print  printers.ResourcePrinterFunc
	genericiooptions.IOStreams
}

// NewCmdStatus returns the status command.
func NewCmdStatus(f cmdutil.Factory, streams genericiooptions.IOStreams, conn *genericclioptions.ConfigFlags) *cobra.Command {
	fl := NewStatusFlags(conn)
	cmd := &cobra.Command{
		Use:                   "status CRD_NAME [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Show the versions, lifecycle state, findings and next step of a CRD",
		Long:                  statusLong,
		Example:               statusExample,
		ValidArgsFunction:     crdNameCompletion(f),
		RunE: runE(func(cmd *cobra.Command, args []string) (*StatusOptions, error) {
			return fl.ToOptions(f, cmd, args, streams)
		}),
	}
	fl.PrintFlags.AddFlags(cmd)
	fl.Fleet.addFlags(cmd)
	cmd.Flags().StringSliceVar(&fl.Versions, "version", nil, "With --contexts or --all-contexts: the versions to ask about (can each leave the CRD manifest?); default every version that is not the storage version everywhere.")
	cmd.Flags().BoolVar(&fl.Count, "count", fl.Count, "Count the CRD's objects (a paged, metadata-only list in all namespaces).")
	cmd.Flags().Int64Var(&fl.ChunkSize, "chunk-size", fl.ChunkSize, "Objects per page when counting.")
	cmd.Flags().BoolVar(&fl.References, "references", false, "Count the owner references, scale targets and Helm release records that name each version other than the storage version (reads the metadata of every listable resource of the cluster: seconds on a large one).")
	addVersionOrderFlag(cmd.Flags(), &fl.VersionOrder)
	return checkCommand(cmd)
}

// ToOptions resolves the arguments, the printer and the client.
func (fl *StatusFlags) ToOptions(f cmdutil.Factory, cmd *cobra.Command, args []string, streams genericiooptions.IOStreams) (*StatusOptions, error) {
	if len(args) != 1 {
		return nil, usageErrorf(cmd, "exactly one CRD is required, got %d arguments", len(args))
	}
	if err := checkVersionNames("--version", fl.Versions...); err != nil {
		return nil, err
	}
	if err := checkVersionNames("--version-order", fl.VersionOrder...); err != nil {
		return nil, err
	}
	if len(fl.VersionOrder) > 0 && fl.Fleet.enabled() {
		return nil, fmt.Errorf("--version-order applies to one cluster: it cannot be combined with --contexts or --all-contexts")
	}
	if fl.References && fl.Fleet.enabled() {
		return nil, fmt.Errorf("--references applies to one cluster: it cannot be combined with --contexts or --all-contexts")
	}
	o := &StatusOptions{CRD: args[0], Count: fl.Count, References: fl.References, ChunkSize: fl.ChunkSize, Versions: fl.Versions, VersionOrder: fl.VersionOrder,
		fleet: fl.Fleet, conn: connectionFlags(cmd.Flags(), fl.Fleet.enabled()), IOStreams: streams}
	var err error
	if fl.Fleet.enabled() {
		if o.print, err = printerFunc(fl.PrintFlags, "status", humanPrinter(view.FleetStatus)); err != nil {
			return nil, err
		}
		o.contexts, err = fl.Fleet.resolve()
		return o, err
	}
	if o.print, err = printerFunc(fl.PrintFlags, "status", humanPrinter(view.Status)); err != nil {
		return nil, err
	}
	o.client, err = cluster.New(f)
	return o, err
}

// Validate checks the options without contacting the server.
func (o *StatusOptions) Validate() error {
	if o.ChunkSize <= 0 {
		return fmt.Errorf("--chunk-size must be positive, got %d", o.ChunkSize)
	}
	return nil
}

// Run reads the CRD, analyses it, counts its objects, prints the result
// and returns *FindingsError when a finding is an error (or, with
// --contexts, a cluster could not be read).
func (o *StatusOptions) Run(ctx context.Context) error {
	if len(o.contexts) > 0 {
		return o.runFleet(ctx)
	}
	r, err := action.Status(ctx, statusReader{o.client}, o.CRD, o.Count, o.ChunkSize, lifecycle.Options{VersionOrder: o.VersionOrder})
	if err != nil {
		return err
	}
	if o.References {
		finder := preflight.References{Client: o.client}
		if term.IsTerminal(o.ErrOut) {
			update, stop := view.ResourceProgress(o.ErrOut, "looking for references to "+r.CRD.Name)
			finder.Progress = update
			defer stop()
		}
		if r.References, err = action.StatusReferences(ctx, finder, r); err != nil {
			return fmt.Errorf("finding the references to %s: %w", r.CRD.Name, err)
		}
	}
	r.RenderCommands(o.conn)
	return printFindings(o.Out, o.print, r, r.Summary())
}

// statusReader is what status reads: the cluster, and its
// StorageVersionMigrations through svm.Runner.
type statusReader struct{ *cluster.Client }

// Migrations lists the StorageVersionMigrations (svm.Runner.Migrations).
func (s statusReader) Migrations(ctx context.Context) ([]svm.Migration, bool, error) {
	return (&svm.Runner{Client: s.Client}).Migrations(ctx)
}
