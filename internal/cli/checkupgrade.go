package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/manifest"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/upgrade"
	"github.com/crdversion/kubectl-crdversion/internal/view"
)

var checkUpgradeLong = templates.LongDesc(`
	Check a new release's CustomResourceDefinitions against the live cluster
	before applying them.

	For each CRD in the manifests (multi-document YAML, or a directory of
	them; -f repeated, as for kubectl apply, reads every file given): would the API server reject the update (a version of the live
	status.storedVersions missing from the new spec.versions, a changed scope
	or kind, not exactly one storage version), would stored data be lost or
	stored objects be rejected on their next write (the schema findings of
	diff), how kubectl's default version changes, and which served versions
	disappear (clients that still use them break). The prediction from these
	rules is checked with a server-side dry-run update of each CRD (one
	request per CRD; --server-dry-run=false skips it).

	When the release removes versions that status.storedVersions still lists,
	the output gives the kubectl crdversion commands that make the apply
	succeed, in order: the release's storage version added or served if
	needed, made the storage version, every object rewritten at it and
	status.storedVersions trimmed (migrate), then the apply.

	Exit codes, as kubectl diff: 0 every CRD can be applied without
	error-level findings, 1 a CRD would be rejected or has error-level
	findings, 2 the check failed.`)

var checkUpgradeExample = templates.Examples(`
	# Check cert-manager's next release before applying it
	kubectl crdversion check-upgrade -f cert-manager.crds.yaml

	# A directory of CRD manifests, as JSON
	kubectl crdversion check-upgrade -f gateway-api/standard/ -o json

	# A release in two files, checked together as kubectl apply applies them
	kubectl crdversion check-upgrade -f crds/ -f extra-crd.yaml

	# Every cluster of the kubeconfig: where would the release be rejected?
	kubectl crdversion check-upgrade -f cert-manager.crds.yaml --all-contexts`)

// CheckUpgradeFlags are check-upgrade's flags, bound to the command.
type CheckUpgradeFlags struct {
	PrintFlags   *genericclioptions.PrintFlags
	Filenames    []string
	Recursive    bool
	ServerDryRun bool
	// Fleet checks the release against several contexts at once.
	Fleet *FleetFlags
	genericiooptions.IOStreams
}

// NewCheckUpgradeFlags returns check-upgrade's flags with their defaults;
// conn are the connection flags each context of a fleet run copies.
func NewCheckUpgradeFlags(conn *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *CheckUpgradeFlags {
	return &CheckUpgradeFlags{PrintFlags: genericclioptions.NewPrintFlags("").WithTypeSetter(report.Scheme), ServerDryRun: true,
		Fleet: newFleetFlags(conn, time.Minute), IOStreams: streams}
}

// AddFlags binds the flags to cmd.
func (fl *CheckUpgradeFlags) AddFlags(cmd *cobra.Command) {
	fl.PrintFlags.AddFlags(cmd)
	cmd.Flags().StringSliceVarP(&fl.Filenames, "filename", "f", nil, "Manifest files or directories with the release's CRDs (other kinds are ignored); repeat -f, as for kubectl apply, to check several.")
	cmd.Flags().BoolVarP(&fl.Recursive, "recursive", "R", false, "Read the directories of -f recursively.")
	cmd.Flags().BoolVar(&fl.ServerDryRun, "server-dry-run", fl.ServerDryRun, "Confirm each prediction with a server-side dry-run update of the CRD.")
	fl.Fleet.addFlags(cmd)
}

// CheckUpgradeOptions are check-upgrade's inputs, resolved once from the
// flags; Run does not change them.
type CheckUpgradeOptions struct {
	// Filenames are the release's manifest files and directories, in the
	// order given.
	Filenames    []string
	Recursive    bool
	ServerDryRun bool
	// Contexts are the kubeconfig contexts of a fleet run; empty for one
	// cluster.
	Contexts []string

	fleet  *FleetFlags
	getter genericclioptions.RESTClientGetter
	// conn are the connection flags typed, repeated in printed commands.
	conn  []lifecycle.Flag
	print printers.ResourcePrinterFunc
	genericiooptions.IOStreams
}

// NewCmdCheckUpgrade returns the check-upgrade command.
func NewCmdCheckUpgrade(f cmdutil.Factory, streams genericiooptions.IOStreams, conn *genericclioptions.ConfigFlags) *cobra.Command {
	fl := NewCheckUpgradeFlags(conn, streams)
	cmd := &cobra.Command{
		Use:                   "check-upgrade -f FILENAME [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Predict what applying a release's CRDs does, and how to make it safe",
		Long:                  checkUpgradeLong,
		Example:               checkUpgradeExample,
		RunE: runE(func(cmd *cobra.Command, args []string) (*CheckUpgradeOptions, error) {
			return fl.ToOptions(f, cmd, args)
		}),
	}
	fl.AddFlags(cmd)
	return checkCommand(cmd)
}

// ToOptions resolves the flags and arguments: the release's files, the -o
// printer, the connection flags to repeat and, in a fleet run, the
// contexts (read from the kubeconfig). It builds no client: each cluster's
// check builds its own.
func (fl *CheckUpgradeFlags) ToOptions(f cmdutil.Factory, cmd *cobra.Command, args []string) (*CheckUpgradeOptions, error) {
	if len(args) > 0 {
		return nil, usageErrorf(cmd, "unexpected arguments %v; the release's CRDs are given with -f", args)
	}
	files := nonEmpty(fl.Filenames)
	if len(files) == 0 {
		return nil, usageErrorf(cmd, "-f FILENAME is required")
	}
	o := &CheckUpgradeOptions{Filenames: files, Recursive: fl.Recursive, ServerDryRun: fl.ServerDryRun,
		fleet: fl.Fleet, getter: f, conn: connectionFlags(cmd.Flags(), fl.Fleet.enabled()), IOStreams: fl.IOStreams}
	var err error
	if fl.Fleet.enabled() {
		if o.print, err = printerFunc(fl.PrintFlags, "check-upgrade", humanPrinter(view.FleetUpgrade)); err != nil {
			return nil, err
		}
		o.Contexts, err = fl.Fleet.resolve()
		return o, err
	}
	o.print, err = printerFunc(fl.PrintFlags, "check-upgrade", humanPrinter(view.UpgradeCheck))
	return o, err
}

// Validate checks the options; ToOptions has checked every flag rule
// check-upgrade has.
func (o *CheckUpgradeOptions) Validate() error { return nil }

// Run reads the release, checks every CRD of it against one cluster or
// every context of a fleet run, prints the report and returns
// *FindingsError when a CRD would be rejected or has error-level findings
// (or, in a fleet run, the answer is not yes).
func (o *CheckUpgradeOptions) Run(ctx context.Context) error {
	docs, err := upgrade.ReadRelease(o.Filenames, o.Recursive)
	if err != nil {
		return err
	}
	if len(o.Contexts) > 0 {
		return o.runFleet(ctx, docs)
	}
	r, err := o.check(ctx, o.getter, o.conn, docs)
	if err != nil {
		return err
	}
	return printFindings(o.Out, o.print, r, r.Summary)
}

// source names the release in the report: the files as given.
func (o *CheckUpgradeOptions) source() string { return strings.Join(o.Filenames, ", ") }

// check is the check of every CRD of docs against the cluster getter
// connects to; conn are the connection flags of the printed commands.
func (o *CheckUpgradeOptions) check(ctx context.Context, getter genericclioptions.RESTClientGetter, conn []lifecycle.Flag, docs []manifest.CRDDoc) (*report.UpgradeCheck, error) {
	c, err := cluster.New(getter)
	if err != nil {
		return nil, err
	}
	checker := &upgrade.Checker{Cluster: c, ServerDryRun: o.ServerDryRun, FieldManager: FieldManager, PageSize: cluster.ChunkSize,
		Apply: upgrade.ApplyCommand(o.Filenames, o.Recursive), Conn: conn}
	plans, err := checker.Check(ctx, docs)
	if err != nil {
		return nil, err
	}
	r := &report.UpgradeCheck{Source: o.source()}
	for _, p := range plans {
		r.Add(p)
	}
	return r, nil
}
