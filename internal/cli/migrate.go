package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	watchtools "k8s.io/client-go/tools/watch"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"
	"k8s.io/kubectl/pkg/util/term"

	"github.com/crdversion/kubectl-crdversion/internal/access"
	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/migrate"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/svm"
)

var migrateLong = templates.LongDesc(`
	Rewrite every stored object of a CustomResourceDefinition at its storage
	version, then trim status.storedVersions to that version.

	Changing the storage version rewrites nothing: each object stays encoded
	at the version it was last written at, and the old version cannot leave
	spec.versions while status.storedVersions lists it. migrate lists the
	objects (metadata only, --chunk-size per page) and sends each a no-op
	merge patch pinned to its uid and resourceVersion, through the storage
	version: the API server re-encodes the object when it was stored at
	another version and skips the write when it was not. The patch can never
	create an object or overwrite another writer's change.

	Outcomes per object: rewritten, already current, conflict (written by
	someone else meanwhile, so current), deleted (never re-created), failed
	(with the API server's message). storedVersions is trimmed only after a
	complete pass with no failure, when the storage version is still the one
	the run started with; the write goes to the status subresource, pinned
	to the resourceVersion just read, and the answer is checked. Otherwise
	nothing is trimmed and the output says why. The exit code is 1 when any
	object failed or a trim that was due did not happen.

	migrate refuses to run while a newer served version waits to become the
	storage version and storedVersions lists only the current one: such a run
	rewrites every object at the old version and retires nothing. Run
	promote-storage first (or pass --no-trim to rewrite anyway).

	--checkpoint FILE records progress after each page; a re-run with the same
	file resumes there. Without it, a re-run starts over, and objects already
	current cost one no-op request each and are not written.

	--engine=server delegates the rewrite to the cluster: migrate creates a
	StorageVersionMigration (storagemigration.k8s.io) for the CRD's resource
	and follows its conditions (Running, Succeeded, Failed) with a watch,
	while the kube-controller-manager's storage version migrator rewrites
	the objects. The same preflights run first. After it succeeded, the
	controller trims storedVersions itself (Kubernetes 1.37) when the CRD's
	spec did not change meanwhile; when it did not trim, migrate trims with
	the same guard as the client engine. The output says who trimmed. A
	failed migration trims nothing and exits 1 with the controller's message.
	The controller reports no per-object outcomes; the total is the number of
	objects counted before the migration.`)

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

// MigrateOptions are the inputs of migrate.
type MigrateOptions struct {
	PrintFlags *genericclioptions.PrintFlags
	Engine     migrate.Options
	QPS        float32
	Burst      int
	Progress   bool
	DryRun     cmdutil.DryRunStrategy
	// AllowPruning accepts a migration that drops fields (conversion None).
	AllowPruning bool
	// EngineName is migrate.EngineClient or migrate.EngineServer.
	EngineName string
	// Timeout bounds the whole run (0: none).
	Timeout time.Duration

	CRD     string
	client  *cluster.Client
	printer printers.ResourcePrinter
	genericiooptions.IOStreams
}

// NewCmdMigrate returns the migrate command.
func NewCmdMigrate(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &MigrateOptions{
		PrintFlags: genericclioptions.NewPrintFlags("").WithTypeSetter(report.Scheme),
		Engine:     migrate.DefaultOptions(),
		// Above what a large API server takes from 64 writes in flight, so
		// that --concurrency and the API server's priority and fairness
		// bound the load, not a client-side limiter (at 500/s it capped
		// migrate below what a 2-core API server sustains).
		QPS:        2000,
		Burst:      4000,
		Progress:   true,
		EngineName: migrate.EngineClient,
		IOStreams:  streams,
	}
	cmd := &cobra.Command{
		Use:                   "migrate CRD_NAME [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Rewrite every stored object at the storage version, then trim storedVersions",
		Long:                  migrateLong,
		Example:               migrateExample,
		ValidArgsFunction:     crdNameCompletion(f),
		RunE:                  runOptions(f, o),
	}
	o.PrintFlags.AddFlags(cmd)
	cmdutil.AddDryRunFlag(cmd)
	cmdutil.AddFieldManagerFlagVar(cmd, &o.Engine.FieldManager, FieldManager)
	fl := cmd.Flags()
	fl.Int64Var(&o.Engine.ChunkSize, "chunk-size", o.Engine.ChunkSize, "Objects per list page.")
	fl.IntVar(&o.Engine.Concurrency, "concurrency", o.Engine.Concurrency, "Writes in flight at once.")
	fl.Float32Var(&o.QPS, "qps", o.QPS, "Client-side limit of requests per second (0: none; the API server's priority and fairness still applies).")
	fl.IntVar(&o.Burst, "burst", o.Burst, "Client-side burst of requests above --qps.")
	fl.IntVar(&o.Engine.Retries, "retries", o.Engine.Retries, "Retries of a write that failed with a server error or a timeout (with exponential backoff). 429 answers are retried after their Retry-After.")
	fl.DurationVar(&o.Engine.Unreachable, "unreachable-timeout", o.Engine.Unreachable, "How long a write keeps being retried while the API server cannot be reached at all (refused or lost connections, as during a control-plane restart); not counted in --retries.")
	fl.BoolVar(&o.Engine.NoTrim, "no-trim", false, "Rewrite the objects but leave status.storedVersions as it is.")
	fl.StringVar(&o.Engine.Checkpoint, "checkpoint", "", "File recording progress after each page; a run with the same file resumes after the last completed page.")
	fl.BoolVar(&o.AllowPruning, "allow-pruning", false, "Migrate even when, with conversion strategy None, objects stored at an old version lose fields the storage version's schema lacks.")
	fl.BoolVar(&o.Progress, "progress", o.Progress, "Show a progress bar with rate and ETA, or with --engine=server the migration's status (on a terminal only).")
	fl.StringVar(&o.EngineName, "engine", o.EngineName, "Who rewrites the objects: client (this process) or server (a StorageVersionMigration carried out by the kube-controller-manager).")
	fl.DurationVar(&o.Timeout, "timeout", 0, "The longest the run may take (0: no limit). When it runs out nothing is trimmed; with --engine=server the StorageVersionMigration goes on in the cluster.")
	return cmd
}

// Complete resolves the CRD argument and builds the client and printer.
func (o *MigrateOptions) Complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usageErrorf(cmd, "exactly one CRD is required, got %d arguments", len(args))
	}
	o.CRD = args[0]
	var err error
	if o.DryRun, err = cmdutil.GetDryRunStrategy(cmd); err != nil {
		return err
	}
	o.Engine.DryRun = o.DryRun == cmdutil.DryRunServer
	o.Engine.CountOnly = o.DryRun == cmdutil.DryRunClient
	if o.EngineName == migrate.EngineServer {
		for _, name := range []string{"chunk-size", "concurrency", "retries", "checkpoint"} {
			if cmd.Flags().Changed(name) {
				return cmdutil.UsageErrorf(cmd, "--%s applies to --engine=client only (with --engine=server the controller decides)", name)
			}
		}
	}
	if *o.PrintFlags.OutputFormat == "name" {
		return fmt.Errorf("-o name is not supported by migrate (it reports on a run; use -o json or -o yaml)")
	}
	if *o.PrintFlags.OutputFormat != "" {
		if o.printer, err = o.PrintFlags.ToPrinter(); err != nil {
			return err
		}
	}
	o.client, err = cluster.New(f, cluster.WithRateLimit(o.QPS, o.Burst))
	return err
}

// Validate checks the flags.
func (o *MigrateOptions) Validate() error {
	switch {
	case o.Engine.ChunkSize <= 0:
		return fmt.Errorf("--chunk-size must be positive, got %d", o.Engine.ChunkSize)
	case o.Engine.Concurrency <= 0:
		return fmt.Errorf("--concurrency must be positive, got %d", o.Engine.Concurrency)
	case o.Engine.Retries < 0:
		return fmt.Errorf("--retries must not be negative, got %d", o.Engine.Retries)
	case o.Engine.Unreachable < 0:
		return fmt.Errorf("--unreachable-timeout must not be negative, got %s", o.Engine.Unreachable)
	case o.QPS < 0:
		return fmt.Errorf("--qps must not be negative, got %g", o.QPS)
	case o.Burst < 0:
		return fmt.Errorf("--burst must not be negative, got %d", o.Burst)
	case o.Engine.FieldManager == "":
		return fmt.Errorf("--field-manager must not be empty")
	case o.EngineName != migrate.EngineClient && o.EngineName != migrate.EngineServer:
		return fmt.Errorf("--engine must be %s or %s, got %q", migrate.EngineClient, migrate.EngineServer, o.EngineName)
	case o.Timeout < 0:
		return fmt.Errorf("--timeout must not be negative, got %s", o.Timeout)
	}
	return nil
}

// Run migrates and reports.
func (o *MigrateOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := watchtools.ContextWithOptionalTimeout(ctx, o.Timeout)
	defer cancel()
	crd, err := o.client.ResolveCRD(ctx, o.CRD)
	if err != nil {
		return err
	}
	if err := o.preflight(crd); err != nil {
		return err
	}
	server := o.EngineName == migrate.EngineServer
	var svmVersion string
	if server {
		runner := &svm.Runner{Client: o.client}
		if svmVersion, err = runner.Version(); err != nil {
			return err
		}
	}
	if !o.Engine.CountOnly {
		needs := access.Migrate(crd, !o.Engine.NoTrim && !o.Engine.DryRun)
		if server {
			needs = access.MigrateServer(crd, !o.Engine.NoTrim && !o.Engine.DryRun)
		}
		if missing, _ := o.client.Missing(ctx, needs); len(missing) > 0 {
			return &access.MissingError{Operation: "migrate", CRD: crd.Name, Missing: missing}
		}
	}
	var res *migrate.Result
	if server {
		res, err = o.runServer(ctx, crd, svmVersion)
	} else {
		res, err = runEngine(ctx, o.client, crd.Name, o.Engine, o.Progress, o.ErrOut)
	}
	if err != nil {
		return err
	}
	switch {
	case o.printer != nil:
		if err := o.printer.PrintObj(&report.Migration{Result: *res}, o.Out); err != nil {
			return err
		}
	case server:
		if err := printServerMigration(o.Out, res, o.DryRun, crd, svmVersion); err != nil {
			return err
		}
	default:
		printMigration(o.Out, res, o.DryRun)
	}
	if sm := res.StorageVersionMigration; sm != nil && sm.Phase == string(svm.Failed) {
		stored := "status.storedVersions was not trimmed"
		switch {
		case res.Trim.Restored:
			stored = "the controller trimmed status.storedVersions anyway; it was restored to [" + strings.Join(res.Trim.After, ", ") + "]"
		case !slices.Equal(res.Trim.After, res.Trim.Before):
			stored = "status.storedVersions is [" + strings.Join(res.Trim.After, ", ") + "], not [" + strings.Join(res.Trim.Before, ", ") + "]: " + res.Trim.Reason
		}
		return fmt.Errorf("the StorageVersionMigration %s of %s failed (%s); %s", sm.Name, crd.Name, sm.Message, stored)
	}
	switch {
	case res.Failed > 0:
		hint := ""
		for _, f := range res.Failures {
			if strings.Contains(f.Message, "conversion webhook") {
				hint = "; the conversion webhook failed for them: " + lifecycle.WebhookRepair(lifecycle.Analyze(crd))
				break
			}
		}
		return fmt.Errorf("%d object(s) of %s failed to migrate; status.storedVersions was not trimmed%s", res.Failed, crd.Name, hint)
	case !res.Complete && server && !res.DryRun:
		return fmt.Errorf("the migration of %s did not finish: %s", crd.Name, res.Trim.Reason)
	case !res.Complete && !server:
		return fmt.Errorf("the migration of %s was interrupted; re-run it%s", crd.Name, resumeHint(o.Engine.Checkpoint))
	case res.Trim.Failed:
		return fmt.Errorf("every object of %s is at %s, but status.storedVersions was not trimmed: %s", crd.Name, res.StorageVersion, res.Trim.Reason)
	}
	return nil
}

// preflight refuses, before anything is written, a migration that would
// retire nothing or drop fields; with --engine=server also one whose
// controller would write through a version that prunes fields.
func (o *MigrateOptions) preflight(crd *apiextensionsv1.CustomResourceDefinition) error {
	storage := lifecycle.StorageVersion(crd)
	if next := lifecycle.PromotionPending(crd); next != "" && !o.Engine.NoTrim && !o.Engine.CountOnly {
		return fmt.Errorf("refusing to migrate %s, nothing was changed: the storage version is %s and %s, a newer version, is not the storage version yet: migrating now rewrites every object at %s and can retire nothing; run kubectl crdversion promote-storage %s %s first (or pass --no-trim to rewrite the objects at %s anyway)",
			crd.Name, storage, next, storage, crd.Name, next, storage)
	}
	if o.AllowPruning || o.Engine.CountOnly {
		return nil
	}
	if losses := lifecycle.MigrationLosses(crd); len(losses) > 0 {
		var parts []string
		for _, l := range losses {
			parts = append(parts, l.Describe(storage))
		}
		return fmt.Errorf("refusing to migrate %s, nothing was changed: conversion strategy None and the schemas differ: %s; make the schemas describe the same fields or use Webhook conversion, or pass --allow-pruning to accept the loss",
			crd.Name, strings.Join(parts, "; "))
	}
	if o.EngineName != migrate.EngineServer {
		return nil
	}
	if preferred, fields := svm.PreferredVersionLoss(crd); preferred != "" {
		return fmt.Errorf("refusing to migrate %s with --engine=server, nothing was changed: the controller writes each object through the preferred version %s, not the storage version %s, and with conversion strategy None %s's schema lacks %s, which would be pruned; use --engine=client (it writes through the storage version), or pass --allow-pruning to accept the loss",
			crd.Name, preferred, storage, preferred, strings.Join(fields, ", "))
	}
	return nil
}

// runServer runs the server engine, with a status line on errOut when
// progress is set and errOut is a terminal.
func (o *MigrateOptions) runServer(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string) (*migrate.Result, error) {
	opts := svm.Options{
		FieldManager: o.Engine.FieldManager,
		DryRunClient: o.DryRun == cmdutil.DryRunClient,
		DryRunServer: o.DryRun == cmdutil.DryRunServer,
		NoTrim:       o.Engine.NoTrim,
		Settle:       svm.DefaultSettle,
	}
	if o.Progress && term.IsTerminal(o.ErrOut) && !opts.DryRunClient && !opts.DryRunServer {
		var stop func()
		opts.Progress, stop = statusLine(o.ErrOut, crd.Name)
		defer stop()
	}
	return (&svm.Runner{Client: o.client}).Run(ctx, crd, version, opts)
}

// runEngine runs the migrate engine on the CRD named name, with a progress
// bar on errOut when progress is set and errOut is a terminal.
func runEngine(ctx context.Context, c *cluster.Client, name string, opts migrate.Options, progress bool, errOut io.Writer) (*migrate.Result, error) {
	engine := &migrate.Engine{CRDs: c.CRDs, Metadata: c.Metadata}
	stop := func() {}
	if progress && term.IsTerminal(errOut) {
		opts.Progress, stop = progressBar(errOut, name)
	}
	defer stop()
	return engine.Run(ctx, name, opts)
}

func resumeHint(checkpoint string) string {
	if checkpoint == "" {
		return ""
	}
	return " with --checkpoint " + checkpoint + " to resume"
}

// progressBar draws a bar with count, rate and ETA, redrawn at most ten
// times a second. The returned stop function clears it.
func progressBar(w io.Writer, name string) (func(done, total int64), func()) {
	var mu sync.Mutex
	bar := progressbar.NewOptions64(-1,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("migrating "+name),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("objects"),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
	var max int64 = -1
	update := func(done, total int64) {
		mu.Lock()
		defer mu.Unlock()
		if total > 0 && total != max {
			max = total
			bar.ChangeMax64(total)
		}
		_ = bar.Set64(done)
	}
	return update, func() { _ = bar.Finish() }
}

func printMigration(w io.Writer, r *migrate.Result, dryRun cmdutil.DryRunStrategy) {
	verb := "Migrated"
	switch dryRun {
	case cmdutil.DryRunClient:
		verb = "Counted (dry run, nothing written)"
	case cmdutil.DryRunServer:
		verb = "Checked (server dry run, nothing written)"
	}
	if r.Resumed {
		verb += ", resuming from the checkpoint,"
	}
	fmt.Fprintf(w, "%s %s at %s in %.1fs (%.0f objects/s)\n", verb, r.CRD, r.StorageVersion, r.ElapsedSeconds, r.ObjectsPerSecond)
	fmt.Fprintf(w, "  total %d, rewritten %d, already current %d, conflicts %d, deleted %d, failed %d\n",
		r.Total, r.Rewritten, r.Current, r.Conflicts, r.Deleted, r.Failed)
	for i, f := range r.Failures {
		if i == 20 {
			fmt.Fprintf(w, "  … and %d more failures (-o json lists all)\n", len(r.Failures)-20)
			break
		}
		fmt.Fprintf(w, "  FAILED %s: %s\n", f.Object, f.Message)
	}
	before, after := "["+strings.Join(r.Trim.Before, ", ")+"]", "["+strings.Join(r.Trim.After, ", ")+"]"
	if r.Trim.Trimmed {
		fmt.Fprintf(w, "status.storedVersions: %s -> %s\n", before, after)
		return
	}
	fmt.Fprintf(w, "status.storedVersions: %s, not trimmed: %s\n", after, r.Trim.Reason)
}

// statusLine draws a spinner with the elapsed time and the migration's
// phase and message, for a StorageVersionMigration, which reports no object
// count. The returned stop function clears it.
func statusLine(w io.Writer, name string) (func(svm.Status), func()) {
	bar := progressbar.NewOptions64(-1,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("migrating "+name+": "+string(svm.Pending)),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionClearOnFinish(),
	)
	update := func(s svm.Status) {
		text := "migrating " + name + ": " + string(s.Phase)
		if s.Message != "" {
			text += " (" + s.Message + ")"
		}
		bar.Describe(text)
	}
	return update, func() { _ = bar.Finish() }
}

// printServerMigration is the text summary of an --engine=server run.
func printServerMigration(w io.Writer, r *migrate.Result, dryRun cmdutil.DryRunStrategy, crd *apiextensionsv1.CustomResourceDefinition, version string) error {
	sm := r.StorageVersionMigration
	switch dryRun {
	case cmdutil.DryRunClient:
		fmt.Fprintf(w, "Would create (dry run, nothing created) this StorageVersionMigration for the %d object(s) of %s, to store them at %s:\n", r.Total, r.CRD, r.StorageVersion)
		return (&printers.YAMLPrinter{}).PrintObj(svm.New(crd, version), w)
	case cmdutil.DryRunServer:
		fmt.Fprintf(w, "Checked (server dry run, nothing created): the API server accepts StorageVersionMigration %s (%s) for the %d object(s) of %s\n", sm.Name, sm.APIVersion, r.Total, r.CRD)
		return nil
	}
	verb := "Migrated"
	if sm.Phase != string(svm.Succeeded) {
		verb = "Did not migrate"
	}
	fmt.Fprintf(w, "%s %s at %s through StorageVersionMigration %s (%s) in %.1fs (%.0f objects/s)\n", verb, r.CRD, r.StorageVersion, sm.Name, sm.APIVersion, r.ElapsedSeconds, r.ObjectsPerSecond)
	fmt.Fprintf(w, "  objects %d (counted before the migration; the controller reports no per-object outcomes), phase %s", r.Total, sm.Phase)
	if sm.Message != "" {
		fmt.Fprintf(w, ": %s", sm.Message)
	}
	fmt.Fprintln(w)
	before, after := "["+strings.Join(r.Trim.Before, ", ")+"]", "["+strings.Join(r.Trim.After, ", ")+"]"
	if r.Trim.Trimmed {
		fmt.Fprintf(w, "status.storedVersions: %s -> %s (trimmed by %s)\n", before, after, r.Trim.By)
		return nil
	}
	if r.Trim.Restored {
		fmt.Fprintf(w, "status.storedVersions: %s, restored after the controller's trim: %s\n", after, r.Trim.Reason)
		return nil
	}
	fmt.Fprintf(w, "status.storedVersions: %s, not trimmed: %s\n", after, r.Trim.Reason)
	return nil
}
