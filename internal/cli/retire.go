package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"
	"k8s.io/kubectl/pkg/util/term"

	"github.com/crdversion/kubectl-crdversion/internal/action"
	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/fairness"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/migrate"
	"github.com/crdversion/kubectl-crdversion/internal/preflight"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/retire"
	"github.com/crdversion/kubectl-crdversion/internal/view"
)

var retireLong = templates.LongDesc(`
	Retire an old version of a CustomResourceDefinition: take, in order, the
	steps of the Kubernetes task page "Versions in CustomResourceDefinitions"
	for removing it, each after its preflight: 1. clients moved off the
	version (--usage-window, --usage-history); 2. no owner reference or
	scale target naming it (--repair-references); 3. the version unserved; 4. another version the
	storage version; 5. every object rewritten at the storage version and
	status.storedVersions trimmed (--migrate); 6. no managedFields entry
	naming the version (--clean-managed-fields); 7. the version removed from
	spec.versions; 8. what the conversion can drop now.

	retire plans every step, measures client usage, checks its permissions
	and asks the API server, with server-side dry runs, whether it accepts
	each write. When a step is blocked it prints the plan and the command that
	unblocks it and changes nothing; otherwise it takes the steps in order,
	planning again after each. Every step is idempotent: a re-run resumes at
	the first step not done. --dry-run=client prints the plan; --dry-run=server
	also shows the API server's answers.

	See docs/retire.md for each step, and docs/usage.md for the client-usage
	check and its sources.`)

var retireExample = templates.Examples(`
	# See the plan: each step done, to do or blocked, and why
	kubectl crdversion retire crontabs.stable.example.com v1beta1 --dry-run

	# Retire v1beta1, migrating objects and cleaning managedFields as needed
	kubectl crdversion retire crontabs.stable.example.com v1beta1 --migrate --clean-managed-fields

	# The plan with the API server's answers: each write sent as a server-side dry run
	kubectl crdversion retire crontabs.stable.example.com v1beta1 --migrate --dry-run=server

	# Watch client traffic for a minute before deciding
	kubectl crdversion retire crontabs.stable.example.com v1beta1 --usage-window 1m --dry-run

	# The plan for machines
	kubectl crdversion retire crontabs.stable.example.com v1beta1 --dry-run -o json`)

// RetireFlags are retire's flags, bound to cobra.
type RetireFlags struct {
	PrintFlags *genericclioptions.PrintFlags
	UsageFlags
	Migrate            bool
	CleanManagedFields bool
	RepairReferences   bool
	SkipReferenceCheck bool
	AllowPruning       pruningFlag
	// VersionOrder is --version-order, oldest first.
	VersionOrder []string
	// Engine are the migrate engine's options set by flags: page size,
	// writes in flight, field manager.
	Engine   migrate.Options
	Progress bool
	// OwnPriorityLevel is --own-priority-level: the shares of the
	// migration's own priority level (0: none).
	OwnPriorityLevel int32
	// Fleet runs retire in several clusters, each independently.
	Fleet *FleetFlags
	genericiooptions.IOStreams
}

// NewRetireFlags returns retire's flags with their defaults; conn are the
// root command's connection flags, which fleet mode copies per context.
func NewRetireFlags(streams genericiooptions.IOStreams, conn *genericclioptions.ConfigFlags) *RetireFlags {
	return &RetireFlags{
		PrintFlags: genericclioptions.NewPrintFlags("").WithTypeSetter(report.Scheme),
		UsageFlags: UsageFlags{UsageWindow: 15 * time.Second},
		Engine:     migrate.DefaultOptions(),
		Progress:   true,
		Fleet:      newFleetFlags(conn, 30*time.Minute),
		IOStreams:  streams,
	}
}

// AddFlags binds the flags to cmd.
func (fl *RetireFlags) AddFlags(cmd *cobra.Command) {
	fl.PrintFlags.AddFlags(cmd)
	cmdutil.AddDryRunFlag(cmd)
	cmdutil.AddFieldManagerFlagVar(cmd, &fl.Engine.FieldManager, FieldManager)
	fl.UsageFlags.addFlags(cmd, fl.UsageWindow)
	fl.Fleet.addFlags(cmd)
	f := cmd.Flags()
	f.BoolVar(&fl.Migrate, "migrate", false, "When objects may still be stored at the version, rewrite them all at the storage version and trim status.storedVersions (as kubectl crdversion migrate does).")
	addPruningFlag(f, &fl.AllowPruning, "With --migrate, alone: rewrite the objects even when the storage version drops or changes fields they have, or they cannot be measured (the measurement is then skipped). With paths (--allow-pruning=.spec.hostPort,...): accept losing or changing those paths and what is under them; every other loss still refuses.")
	f.BoolVar(&fl.CleanManagedFields, "clean-managed-fields", false, "Rewrite managedFields entries that name the version so that they name the storage version.")
	f.BoolVar(&fl.RepairReferences, "repair-references", false, "Rewrite the owner references, scale targets and Helm release records that name the version so that they name the storage version, before unserving it (as kubectl crdversion repair-references does).")
	addReferenceFlag(cmd, &fl.SkipReferenceCheck)
	f.Int64Var(&fl.Engine.ChunkSize, "chunk-size", fl.Engine.ChunkSize, "Objects per list page.")
	f.IntVar(&fl.Engine.Concurrency, "concurrency", fl.Engine.Concurrency, "Writes in flight at once (migration and managedFields clean-up).")
	f.BoolVar(&fl.Progress, "progress", fl.Progress, "Show a progress bar while migrating (on a terminal only).")
	f.Int32Var(&fl.OwnPriorityLevel, "own-priority-level", 0, fmt.Sprintf("With --migrate: run the migration, its loss measurement included, in a priority level of API Priority and Fairness of its own, of this many nominal concurrency shares (alone: %d), at the fixed --concurrency, as kubectl crdversion migrate --own-priority-level does: a FlowSchema and a PriorityLevelConfiguration created for it and removed after it. Needs create and delete on flowschemas and prioritylevelconfigurations; not for system:masters, which APF exempts.", fairness.DefaultShares))
	f.Lookup("own-priority-level").NoOptDefVal = fmt.Sprint(fairness.DefaultShares)
	addVersionOrderFlag(f, &fl.VersionOrder)
}

// RetireOptions are the inputs of one retire command, resolved once from
// its flags and arguments.
type RetireOptions struct {
	CRD, Version string
	DryRun       lifecycle.DryRun
	// Retire are the executor's options (dry run, --migrate,
	// --clean-managed-fields, --skip-usage-check, connection flags).
	Retire   retire.Options
	Usage    preflight.UsageConfig
	Engine   migrate.Options
	Progress bool
	// AllowPruning lets --migrate rewrite objects whose fields the storage
	// version drops; AllowPruningPaths accepts losing these paths only.
	AllowPruning      bool
	AllowPruningPaths []string
	// OwnPriorityLevel is action.Retire.OwnPriorityLevel; the writes then
	// go at the fixed --concurrency (Engine.MaxLatency 0).
	OwnPriorityLevel int32

	// fleet and contexts: the clusters of a fleet run (--contexts,
	// --all-contexts); client the cluster otherwise.
	fleet    *FleetFlags
	contexts []string
	client   *cluster.Client
	// print prints the report (-o, or the human view); log is where the
	// progress log goes: stdout, or stderr when stdout carries -o output.
	print printers.ResourcePrinterFunc
	log   io.Writer
	// refresh is the command that refreshes kubectl's cached discovery
	// (refreshCommand).
	refresh string
	genericiooptions.IOStreams
}

// NewCmdRetire returns the retire command.
func NewCmdRetire(f cmdutil.Factory, streams genericiooptions.IOStreams, conn *genericclioptions.ConfigFlags) *cobra.Command {
	fl := NewRetireFlags(streams, conn)
	cmd := &cobra.Command{
		Use:                   "retire CRD_NAME VERSION [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Remove an old version in order: clients, unserve, migrate, managedFields, removal",
		Long:                  retireLong,
		Example:               retireExample,
		ValidArgsFunction:     versionCompletion(f),
		RunE: runE(func(cmd *cobra.Command, args []string) (*RetireOptions, error) {
			return fl.ToOptions(f, cmd, args)
		}),
	}
	fl.AddFlags(cmd)
	return cmd
}

// ToOptions takes "CRD VERSION", resolves -o, the dry-run strategy and the
// connection flags, and builds the client (or resolves the fleet's
// contexts from the kubeconfig).
func (fl *RetireFlags) ToOptions(f cmdutil.Factory, cmd *cobra.Command, args []string) (*RetireOptions, error) {
	if len(args) != 2 {
		return nil, usageErrorf(cmd, "a CRD and a version are required, got %d arguments", len(args))
	}
	if err := checkVersionNames("", args[1]); err != nil {
		return nil, err
	}
	if err := checkVersionNames("--version-order", fl.VersionOrder...); err != nil {
		return nil, err
	}
	if (fl.AllowPruning.all || len(fl.AllowPruning.paths) > 0) && !fl.Migrate {
		return nil, usageErrorf(cmd, "--allow-pruning applies to --migrate only (retire rewrites no object without it)")
	}
	if cmd.Flags().Changed("own-priority-level") {
		switch {
		case !fl.Migrate:
			return nil, usageErrorf(cmd, "--own-priority-level applies to --migrate only (retire rewrites no object without it)")
		case fl.OwnPriorityLevel <= 0:
			return nil, fmt.Errorf("--own-priority-level must be positive (nominal concurrency shares), got %d", fl.OwnPriorityLevel)
		}
	}
	dryRun, err := dryRunFlag(cmd)
	if err != nil {
		return nil, err
	}
	o := &RetireOptions{CRD: args[0], Version: args[1], DryRun: dryRun, Usage: fl.UsageFlags.config(), Engine: fl.Engine,
		Progress: fl.Progress, AllowPruning: fl.AllowPruning.all, AllowPruningPaths: fl.AllowPruning.paths, OwnPriorityLevel: fl.OwnPriorityLevel, log: fl.Out, refresh: refreshCommand(cmd.Flags()), IOStreams: fl.IOStreams}
	if fl.OwnPriorityLevel > 0 {
		// The priority level, not a latency budget, spares the others.
		o.Engine.MaxLatency = 0
	}
	o.Retire = retire.Options{DryRun: dryRun,
		SkipUsageCheck: fl.SkipUsageCheck, Migrate: fl.Migrate, CleanManagedFields: fl.CleanManagedFields, VersionOrder: fl.VersionOrder,
		SkipReferenceCheck: fl.SkipReferenceCheck, RepairReferences: fl.RepairReferences,
		Carried: append(usageFlagsGiven(cmd.Flags()), changedFlags(cmd.Flags(), []string{"own-priority-level"})...), Global: connectionFlags(cmd.Flags(), fl.Fleet.enabled())}
	human := humanPrinter(printRetireLogged)
	if fl.Fleet.enabled() {
		human = humanPrinter(view.FleetRetire)
	}
	if o.print, err = printerFunc(fl.PrintFlags, "retire", human); err != nil {
		return nil, err
	}
	if *fl.PrintFlags.OutputFormat != "" {
		o.log = fl.ErrOut
	}
	if fl.Fleet.enabled() {
		o.fleet = fl.Fleet
		o.contexts, err = fl.Fleet.resolve()
		return o, err
	}
	o.client, err = cluster.New(f)
	return o, err
}

// Validate checks the flag rules; it sends no request.
func (o *RetireOptions) Validate() error {
	switch {
	case o.Engine.ChunkSize <= 0:
		return fmt.Errorf("--chunk-size must be positive, got %d", o.Engine.ChunkSize)
	case o.Engine.Concurrency <= 0:
		return fmt.Errorf("--concurrency must be positive, got %d", o.Engine.Concurrency)
	case o.Engine.Concurrency > migrate.MaxConcurrency:
		return fmt.Errorf("--concurrency %d is more than %d writes in flight, more than an API server serves at once (600 by default)", o.Engine.Concurrency, migrate.MaxConcurrency)
	case o.Engine.FieldManager == "":
		return fmt.Errorf("--field-manager must not be empty")
	}
	return o.Usage.Validate()
}

// Run retires the version (in every cluster of a fleet run) and prints the
// report: the progress log as it goes, or the RetirePlan with -o.
func (o *RetireOptions) Run(ctx context.Context) error {
	if o.fleet != nil {
		return o.runFleet(ctx)
	}
	crd, err := o.client.ResolveCRD(ctx, o.CRD)
	if err != nil {
		return err
	}
	progress := o.Progress && term.IsTerminal(o.ErrOut)
	rep, runErr := o.retire(ctx, o.client, crd, o.Retire, o.log, o.ErrOut, progress)
	if err := o.print(rep, o.Out); err != nil {
		return err
	}
	return runErr
}

// retire runs the executor on one cluster, its progress log going to log
// (warnings to errOut), and returns the run's report.
func (o *RetireOptions) retire(ctx context.Context, c *cluster.Client, crd *apiextensionsv1.CustomResourceDefinition, opts retire.Options, log, errOut io.Writer, progress bool) (*report.Retire, error) {
	mf := c.ManagedFieldsSource(o.Engine.ChunkSize, map[string][]string{crd.Name: {o.Version}})
	u, err := preflight.NewUsage(c, o.Usage, mf)
	if err != nil {
		return &report.Retire{CRD: crd.Name, Version: o.Version}, err
	}
	rc := &action.Retire{Cluster: action.Live{Client: c}, Usage: u, ManagedFields: mf, Engine: o.Engine, AllowPruning: o.AllowPruning, AllowPruningPaths: o.AllowPruningPaths,
		CrossCheck: crossCheckFile() != "", OwnPriorityLevel: o.OwnPriorityLevel, DryRun: o.DryRun,
		References: referenceFinder(c, errOut), Patcher: cluster.ReferencePatcher{Client: c, FieldManager: o.Engine.FieldManager}, Admission: c}
	if progress {
		u.Waiting = waitProgress(errOut, o.Usage.Window)
		rc.Progress = func(name string) (func(migrate.Progress), func()) { return view.ProgressBar(errOut, name) }
	}
	l := &view.RetireLog{Log: log, ErrOut: errOut, Sources: u.Describe(), Refresh: o.refresh}
	res, err := (&retire.Executor{Cluster: rc, Events: l.Event}).Run(ctx, crd, o.Version, opts)
	err = recordDisagreement(crossCheckFile(), err)
	return report.NewRetire(crd.Name, o.Version, o.DryRun != lifecycle.DryRunNone, res), err
}

// printRetireLogged is the human view of a retire report: the progress log,
// already written as the run went; nothing is left to print.
func printRetireLogged(io.Writer, *report.Retire) error { return nil }
