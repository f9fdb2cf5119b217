package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	watchtools "k8s.io/client-go/tools/watch"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"
	"k8s.io/kubectl/pkg/util/term"

	"github.com/crdversion/kubectl-crdversion/internal/action"
	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/fairness"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/migrate"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/svm"
	"github.com/crdversion/kubectl-crdversion/internal/view"
)

var migrateLong = templates.LongDesc(`
	Rewrite every stored object of a CustomResourceDefinition at its storage
	version, then trim status.storedVersions to that version, so that an old
	version can leave spec.versions.

	Each object is sent a no-op merge patch through the storage version,
	pinned to its uid and resourceVersion: it never creates an object or
	overwrites another writer's change. Before writing, migrate measures what
	the rewrite would lose (every object read at its stored version and
	dry-run written through the storage version) and refuses, changing
	nothing, unless --allow-pruning; it also refuses to run before
	promote-storage. storedVersions is trimmed only after a complete pass in
	which no object failed; the exit code is 1 when one failed or a trim that
	was due did not happen. --checkpoint FILE makes a run resumable;
	--engine=server lets the kube-controller-manager rewrite the objects
	(a StorageVersionMigration).

	See docs/migrate.md for the outcomes per object, the refusals, the trim
	guard and the server engine.`)

var migrateExample = templates.Examples(`
	# Migrate every CronTab to the storage version and trim storedVersions
	kubectl crdversion migrate crontabs.stable.example.com

	# A large CRD: more writes in flight, resumable
	kubectl crdversion migrate crontabs.stable.example.com --concurrency 64 --checkpoint /tmp/crontabs.migrate

	# Check every object (conversion, validation, admission) without writing
	kubectl crdversion migrate crontabs.stable.example.com --dry-run=server

	# Machine-readable report
	kubectl crdversion migrate crontabs.stable.example.com -o json

	# Let the kube-controller-manager rewrite the objects (StorageVersionMigration), for at most 30 minutes
	kubectl crdversion migrate crontabs.stable.example.com --engine=server --timeout=30m

	# Show the StorageVersionMigration that would be created
	kubectl crdversion migrate crontabs.stable.example.com --engine=server --dry-run=client`)

// MigrateFlags are the flags of migrate.
type MigrateFlags struct {
	PrintFlags   *genericclioptions.PrintFlags
	Engine       migrate.Options
	QPS          float32
	Burst        int
	Progress     bool
	AllowPruning pruningFlag
	EngineName   string
	Timeout      time.Duration
	// MaxSpeed sets Engine.MaxLatency to 0.
	MaxSpeed bool
	// VersionOrder is --version-order, oldest first.
	VersionOrder []string
	// OwnPriorityLevel is --own-priority-level: nominal concurrency
	// shares, 0 for none.
	OwnPriorityLevel int32
}

// MigrateOptions are the inputs of migrate, resolved once.
type MigrateOptions struct {
	CRD string
	// Engine tunes the client engine (its DryRun carries
	// --dry-run=server|client).
	Engine     migrate.Options
	EngineName string
	DryRun     lifecycle.DryRun
	QPS        float32
	Burst      int
	Progress   bool
	// AllowPruning accepts a migration that drops fields (conversion None).
	AllowPruning bool
	// AllowPruningPaths accept losing these paths only (--allow-pruning=PATHS).
	AllowPruningPaths []string
	// Timeout bounds the whole run (0: none).
	Timeout time.Duration
	// VersionOrder is the order of versions the user gave, oldest first.
	VersionOrder []string
	// OwnPriorityLevel is the shares of the run's own priority level (0:
	// none; action.MigrateOptions.OwnPriorityLevel).
	OwnPriorityLevel int32
	// changed are the client-engine flags given, refused with --engine=server.
	changed []string
	// maxSpeedAndLatency is a --max-speed given with a non-zero --max-latency.
	maxSpeedAndLatency time.Duration

	client *cluster.Client
	print  func(*apiextensionsv1.CustomResourceDefinition, *migrate.Result, string) error
	// printRefused prints the report of a run the measurement refused
	// (-o json|yaml only).
	printRefused func(*migrate.Result) error
	genericiooptions.IOStreams
}

// NewCmdMigrate returns the migrate command.
func NewCmdMigrate(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	fl := &MigrateFlags{
		PrintFlags: genericclioptions.NewPrintFlags("").WithTypeSetter(report.Scheme),
		Engine:     migrate.DefaultOptions(),
		// Above what a large API server takes from 64 writes in flight, so
		// that --concurrency and API Priority and Fairness bound the load,
		// not a client-side limiter (docs/performance.md).
		QPS:        2000,
		Burst:      4000,
		Progress:   true,
		EngineName: migrate.EngineClient,
	}
	cmd := &cobra.Command{
		Use:                   "migrate CRD_NAME [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Rewrite every stored object at the storage version, then trim storedVersions",
		Long:                  migrateLong,
		Example:               migrateExample,
		ValidArgsFunction:     crdNameCompletion(f),
		RunE: runE(func(cmd *cobra.Command, args []string) (*MigrateOptions, error) {
			return fl.ToOptions(f, cmd, args, streams)
		}),
	}
	fl.PrintFlags.AddFlags(cmd)
	cmdutil.AddDryRunFlag(cmd)
	cmdutil.AddFieldManagerFlagVar(cmd, &fl.Engine.FieldManager, FieldManager)
	c := cmd.Flags()
	c.Int64Var(&fl.Engine.ChunkSize, "chunk-size", fl.Engine.ChunkSize, "Objects per list page.")
	c.IntVar(&fl.Engine.Concurrency, "concurrency", fl.Engine.Concurrency, "Writes in flight at once: the most with --max-latency, exactly that many with --max-speed.")
	c.DurationVar(&fl.Engine.MaxLatency, "max-latency", fl.Engine.MaxLatency, "Latency budget of the writes: the number in flight adapts (1 to --concurrency) so that the p90 latency of recent writes stays within it, sparing the API server's other clients. 0 is --max-speed.")
	c.BoolVar(&fl.MaxSpeed, "max-speed", false, "Write at the fixed --concurrency, as fast as the API server takes it, whatever that does to its other clients' latency (--max-latency=0).")
	c.Float32Var(&fl.QPS, "qps", fl.QPS, "Client-side limit of requests per second (0: none; the API server's priority and fairness still applies).")
	c.IntVar(&fl.Burst, "burst", fl.Burst, "Client-side burst of requests above --qps.")
	c.IntVar(&fl.Engine.Retries, "retries", fl.Engine.Retries, "Retries of a write that failed with a server error or a timeout (with exponential backoff). 429 answers are retried after their Retry-After.")
	c.DurationVar(&fl.Engine.Unreachable, "unreachable-timeout", fl.Engine.Unreachable, "How long a write keeps being retried while the API server cannot be reached at all (refused or lost connections, as during a control-plane restart); not counted in --retries.")
	c.BoolVar(&fl.Engine.NoTrim, "no-trim", false, "Rewrite the objects but leave status.storedVersions as it is.")
	c.StringVar(&fl.Engine.Checkpoint, "checkpoint", "", "File recording progress after each page; a run with the same file resumes after the last completed page.")
	addPruningFlag(c, &fl.AllowPruning, "Alone: migrate even when objects lose or change fields, or cannot be measured; neither the measurement (each object read and sent the run's update as a server-side dry run, compared as a whole) nor the schemas' prediction runs. With paths (--allow-pruning=.spec.hostPort,...): accept losing or changing those paths and what is under them; every other loss still refuses.")
	c.BoolVar(&fl.Progress, "progress", fl.Progress, "Show a progress bar with rate and ETA, or with --engine=server the migration's status (on a terminal only).")
	c.StringVar(&fl.EngineName, "engine", fl.EngineName, "Who rewrites the objects: client (this process) or server (a StorageVersionMigration carried out by the kube-controller-manager).")
	addVersionOrderFlag(c, &fl.VersionOrder)
	c.DurationVar(&fl.Timeout, "timeout", 0, "The longest the run may take (0: no limit). When it runs out nothing is trimmed; with --engine=server the StorageVersionMigration goes on in the cluster.")
	c.Int32Var(&fl.OwnPriorityLevel, "own-priority-level", 0, fmt.Sprintf("Run in a priority level of API Priority and Fairness of its own, of this many nominal concurrency shares (alone: %d): a FlowSchema and a PriorityLevelConfiguration for this identity's requests to the CRD's resource, created for the run and removed after it (also on Ctrl-C; a re-run removes what a killed run left). The writes then go at the fixed --concurrency unless --max-latency is given: the cluster's fairness, not a latency budget, spares the other clients. Needs create and delete on flowschemas and prioritylevelconfigurations; not for system:masters, which APF exempts.", fairness.DefaultShares))
	c.Lookup("own-priority-level").NoOptDefVal = fmt.Sprint(fairness.DefaultShares)
	return cmd
}

// ToOptions resolves the CRD argument, the dry run, the printer and the
// client.
func (fl *MigrateFlags) ToOptions(f cmdutil.Factory, cmd *cobra.Command, args []string, streams genericiooptions.IOStreams) (*MigrateOptions, error) {
	if len(args) != 1 {
		return nil, usageErrorf(cmd, "exactly one CRD is required, got %d arguments", len(args))
	}
	if err := checkVersionNames("--version-order", fl.VersionOrder...); err != nil {
		return nil, err
	}
	o := &MigrateOptions{CRD: args[0], Engine: fl.Engine, EngineName: fl.EngineName, QPS: fl.QPS, Burst: fl.Burst,
		Progress: fl.Progress, AllowPruning: fl.AllowPruning.all, AllowPruningPaths: fl.AllowPruning.paths, Timeout: fl.Timeout, VersionOrder: fl.VersionOrder, IOStreams: streams}
	var err error
	if o.DryRun, err = dryRunFlag(cmd); err != nil {
		return nil, err
	}
	o.Engine.DryRun = o.DryRun
	o.OwnPriorityLevel = fl.OwnPriorityLevel
	if cmd.Flags().Changed("own-priority-level") && fl.OwnPriorityLevel <= 0 {
		return nil, fmt.Errorf("--own-priority-level must be positive (nominal concurrency shares), got %d", fl.OwnPriorityLevel)
	}
	if fl.OwnPriorityLevel > 0 && !cmd.Flags().Changed("max-latency") {
		// The priority level, not a latency budget, spares the others.
		o.Engine.MaxLatency = 0
	}
	for _, name := range []string{"chunk-size", "concurrency", "retries", "checkpoint", "max-latency", "max-speed", "own-priority-level"} {
		if cmd.Flags().Changed(name) {
			o.changed = append(o.changed, name)
		}
	}
	if fl.MaxSpeed {
		if cmd.Flags().Changed("max-latency") && o.Engine.MaxLatency != 0 {
			o.maxSpeedAndLatency = o.Engine.MaxLatency
		}
		o.Engine.MaxLatency = 0
	}
	dryRun := o.DryRun
	printJSON, err := printerFunc(fl.PrintFlags, "migrate", nil)
	if err != nil {
		return nil, err
	}
	if printJSON != nil {
		o.printRefused = func(res *migrate.Result) error { return printJSON(&report.Migration{Result: *res}, o.Out) }
	}
	o.print = func(crd *apiextensionsv1.CustomResourceDefinition, res *migrate.Result, svmVersion string) error {
		switch {
		case printJSON != nil:
			return printJSON(&report.Migration{Result: *res}, o.Out)
		case res.Engine == migrate.EngineServer:
			return view.ServerMigration(o.Out, res, dryRun, svm.New(crd, svmVersion))
		}
		view.Migration(o.Out, res, dryRun)
		return nil
	}
	flow := cluster.NewFlowControl()
	if o.client, err = cluster.New(f, cluster.WithRateLimit(o.QPS, o.Burst), cluster.WithFlowControl(flow)); err != nil {
		return nil, err
	}
	o.client.FlowControl = flow
	return o, nil
}

// Validate checks the flags.
func (o *MigrateOptions) Validate() error {
	switch {
	case o.EngineName != migrate.EngineClient && o.EngineName != migrate.EngineServer:
		return fmt.Errorf("--engine must be %s or %s, got %q", migrate.EngineClient, migrate.EngineServer, o.EngineName)
	case o.EngineName == migrate.EngineServer && len(o.changed) > 0:
		return fmt.Errorf("--%s applies to --engine=client only (with --engine=server the controller decides)", o.changed[0])
	case o.Engine.ChunkSize <= 0:
		return fmt.Errorf("--chunk-size must be positive, got %d", o.Engine.ChunkSize)
	case o.Engine.Concurrency <= 0:
		return fmt.Errorf("--concurrency must be positive, got %d", o.Engine.Concurrency)
	case o.Engine.Concurrency > migrate.MaxConcurrency:
		return fmt.Errorf("--concurrency %d is more than %d writes in flight, more than an API server serves at once (600 by default)", o.Engine.Concurrency, migrate.MaxConcurrency)
	case o.Engine.Retries < 0:
		return fmt.Errorf("--retries must not be negative, got %d", o.Engine.Retries)
	case o.OwnPriorityLevel < 0:
		return fmt.Errorf("--own-priority-level must be positive (nominal concurrency shares), got %d", o.OwnPriorityLevel)
	case o.maxSpeedAndLatency != 0:
		return fmt.Errorf("--max-speed and --max-latency=%s contradict each other (--max-speed is --max-latency=0)", o.maxSpeedAndLatency)
	case o.Engine.MaxLatency < 0:
		return fmt.Errorf("--max-latency must not be negative, got %s", o.Engine.MaxLatency)
	case o.Engine.Unreachable < 0:
		return fmt.Errorf("--unreachable-timeout must not be negative, got %s", o.Engine.Unreachable)
	case o.QPS < 0:
		return fmt.Errorf("--qps must not be negative, got %g", o.QPS)
	case o.Burst < 0:
		return fmt.Errorf("--burst must not be negative, got %d", o.Burst)
	case o.Engine.FieldManager == "":
		return fmt.Errorf("--field-manager must not be empty")
	case o.Timeout < 0:
		return fmt.Errorf("--timeout must not be negative, got %s", o.Timeout)
	}
	return nil
}

// Run migrates and reports.
func (o *MigrateOptions) Run(ctx context.Context) error {
	ctx, cancel := watchtools.ContextWithOptionalTimeout(ctx, o.Timeout)
	defer cancel()
	crd, err := o.client.ResolveCRD(ctx, o.CRD)
	if err != nil {
		return err
	}
	opts := action.MigrateOptions{Engine: o.EngineName, Client: o.Engine, AllowPruning: o.AllowPruning, AllowPruningPaths: o.AllowPruningPaths, VersionOrder: o.VersionOrder,
		CrossCheck: crossCheckFile() != "", OwnPriorityLevel: o.OwnPriorityLevel}
	terminal := o.Progress && term.IsTerminal(o.ErrOut)
	switch {
	case terminal && o.EngineName == migrate.EngineServer && o.DryRun == lifecycle.DryRunNone:
		update, stop := view.StatusLine(o.ErrOut, crd.Name, svm.Pending)
		opts.ServerProgress = func(s svm.Status) { update(s.Phase, s.Message) }
		defer stop()
	case terminal && o.EngineName == migrate.EngineClient:
		var stop func()
		opts.Client.Progress, stop = view.ProgressBar(o.ErrOut, crd.Name)
		defer stop()
	}
	if terminal {
		opts.MeasureProgress = func(from string) (func(migrate.Progress), func()) {
			return view.LabelledProgressBar(o.ErrOut, "measuring what migrating "+crd.Name+" loses, read at "+from)
		}
	}
	m, err := action.Migrate(ctx, action.Live{Client: o.client}, crd, opts)
	err = recordDisagreement(crossCheckFile(), err)
	if refused := refusedReport(err); refused != nil && o.printRefused != nil {
		// -o json|yaml: a refused run still prints its report, which
		// names every object and path behind a refusal of the loss
		// measurement (the error's text names the first ten).
		res := &migrate.Result{Engine: o.EngineName, CRD: crd.Name, StorageVersion: lifecycle.StorageVersion(crd),
			DryRun: o.DryRun != lifecycle.DryRunNone, Refused: refused}
		if perr := o.printRefused(res); perr != nil {
			return perr
		}
	}
	if err != nil {
		return err
	}
	if err := o.print(crd, m.Result, m.SVMVersion); err != nil {
		return err
	}
	return action.Outcome(crd, m.Result, o.Engine.Checkpoint)
}

// refusedReport is the refusal in err as a migration report states it,
// with every object behind it when the loss measurement refused; nil when
// err is no refusal.
func refusedReport(err error) *migrate.Refusal {
	var lr *action.LossRefusal
	if errors.As(err, &lr) {
		return lr.Report()
	}
	var r *lifecycle.RefusalError
	if errors.As(err, &r) {
		return (&action.LossRefusal{RefusalError: r}).Report()
	}
	return nil
}
