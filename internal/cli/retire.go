package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/crdversion/kubectl-crdversion/internal/access"
	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/migrate"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/retire"
)

var retireLong = templates.LongDesc(`
	Retire an old version of a CustomResourceDefinition: take, in order, the
	steps of the Kubernetes task page "Versions in CustomResourceDefinitions"
	for removing it, each after its preflight:

	1. clients moved off the version: the API server's metrics show no request
	   to it during --usage-window and no watch open on it (the tool sends no
	   request to it itself);
	2. the version is unserved;
	3. another version is the storage version;
	4. every object was rewritten at the storage version and
	   status.storedVersions no longer lists the version (--migrate runs the
	   migration and its guarded trim);
	5. no object's managedFields names the version (--clean-managed-fields
	   rewrites such entries; otherwise server-side apply on those objects
	   fails once the version is gone);
	6. the version is removed from spec.versions;
	7. what the conversion webhook and strategy can drop now.

	retire first measures what it needs and plans every step; when a step is
	blocked it prints the plan and the command that unblocks it and changes
	nothing. Otherwise it takes the steps in order. Every step is idempotent:
	after an interruption, a re-run resumes at the first step not done.
	--dry-run prints the plan only.

	Metrics are per API server instance: with several instances, requests
	served by the others are not seen, and the output says so.`)

var retireExample = templates.Examples(`
	# See the plan: each step done, to do or blocked, and why
	kubectl crdversion retire crontabs.stable.example.com v1beta1 --dry-run

	# Retire v1beta1, migrating objects and cleaning managedFields as needed
	kubectl crdversion retire crontabs.stable.example.com v1beta1 --migrate --clean-managed-fields

	# Watch client traffic for a minute before deciding
	kubectl crdversion retire crontabs.stable.example.com v1beta1 --usage-window 1m --dry-run

	# The plan for machines
	kubectl crdversion retire crontabs.stable.example.com v1beta1 --dry-run -o json`)

// RetireOptions are the inputs of retire.
type RetireOptions struct {
	PrintFlags *genericclioptions.PrintFlags
	DryRun     cmdutil.DryRunStrategy
	UsageFlags
	Migrate            bool
	CleanManagedFields bool
	Engine             migrate.Options
	Progress           bool

	// Fleet runs retire in several clusters, each independently.
	Fleet    *FleetFlags
	contexts []string

	CRD, Version string
	client       *cluster.Client
	printer      printers.ResourcePrinter
	genericiooptions.IOStreams
}

// UsageFlags are the client-usage check's flags, shared by retire and unserve.
type UsageFlags struct {
	UsageWindow    time.Duration
	SkipUsageCheck bool
}

func (u *UsageFlags) addFlags(cmd *cobra.Command, window time.Duration) {
	cmd.Flags().DurationVar(&u.UsageWindow, "usage-window", window, "How long to watch the API server's request counters for client requests to the version (0: one sample; only open watches then count as use).")
	cmd.Flags().BoolVar(&u.SkipUsageCheck, "skip-usage-check", false, "Do not check the API server's metrics for clients of the version (the output records that the check was skipped).")
}

func (u *UsageFlags) validate() error {
	if u.UsageWindow < 0 {
		return fmt.Errorf("--usage-window must not be negative, got %s", u.UsageWindow)
	}
	return nil
}

// NewCmdRetire returns the retire command.
func NewCmdRetire(f cmdutil.Factory, streams genericiooptions.IOStreams, conn *genericclioptions.ConfigFlags) *cobra.Command {
	o := &RetireOptions{
		Fleet:      newFleetFlags(conn, 30*time.Minute),
		PrintFlags: genericclioptions.NewPrintFlags("").WithTypeSetter(report.Scheme),
		Engine:     migrate.DefaultOptions(),
		Progress:   true,
		IOStreams:  streams,
	}
	cmd := &cobra.Command{
		Use:                   "retire CRD_NAME VERSION [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Remove an old version in order: clients, unserve, migrate, managedFields, removal",
		Long:                  retireLong,
		Example:               retireExample,
		ValidArgsFunction:     versionCompletion(f),
		RunE:                  runOptions(f, o),
	}
	o.PrintFlags.AddFlags(cmd)
	cmdutil.AddDryRunFlag(cmd)
	cmdutil.AddFieldManagerFlagVar(cmd, &o.Engine.FieldManager, FieldManager)
	o.UsageFlags.addFlags(cmd, 15*time.Second)
	o.Fleet.addFlags(cmd)
	fl := cmd.Flags()
	fl.BoolVar(&o.Migrate, "migrate", false, "When objects may still be stored at the version, rewrite them all at the storage version and trim status.storedVersions (as kubectl crdversion migrate does).")
	fl.BoolVar(&o.CleanManagedFields, "clean-managed-fields", false, "Rewrite managedFields entries that name the version so that they name the storage version.")
	fl.Int64Var(&o.Engine.ChunkSize, "chunk-size", o.Engine.ChunkSize, "Objects per list page.")
	fl.IntVar(&o.Engine.Concurrency, "concurrency", o.Engine.Concurrency, "Writes in flight at once (migration and managedFields clean-up).")
	fl.BoolVar(&o.Progress, "progress", o.Progress, "Show a progress bar while migrating (on a terminal only).")
	return cmd
}

// Complete takes "CRD VERSION" and builds the client and printer.
func (o *RetireOptions) Complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	if len(args) != 2 {
		return usageErrorf(cmd, "a CRD and a version are required, got %d arguments", len(args))
	}
	o.CRD, o.Version = args[0], args[1]
	if err := checkVersionNames("", o.Version); err != nil {
		return err
	}
	var err error
	if o.DryRun, err = cmdutil.GetDryRunStrategy(cmd); err != nil {
		return err
	}
	switch *o.PrintFlags.OutputFormat {
	case "":
	case "name":
		return fmt.Errorf("-o name is not supported by retire (it reports a plan; use -o json or -o yaml)")
	default:
		if o.printer, err = o.PrintFlags.ToPrinter(); err != nil {
			return err
		}
	}
	if o.Fleet.enabled() {
		o.contexts, err = o.Fleet.resolve()
		return err
	}
	o.client, err = cluster.New(f)
	return err
}

// Validate checks the flags.
func (o *RetireOptions) Validate() error {
	switch {
	case o.Engine.ChunkSize <= 0:
		return fmt.Errorf("--chunk-size must be positive, got %d", o.Engine.ChunkSize)
	case o.Engine.Concurrency <= 0:
		return fmt.Errorf("--concurrency must be positive, got %d", o.Engine.Concurrency)
	case o.Engine.FieldManager == "":
		return fmt.Errorf("--field-manager must not be empty")
	}
	return o.UsageFlags.validate()
}

// BlockedError is returned when a step of retire is blocked.
type BlockedError struct {
	CRD, Version string
	Step         retire.Step
	// Changed is true when this run took steps before the blocked one.
	Changed bool
}

func (e *BlockedError) Error() string {
	changed := "nothing was changed"
	if e.Changed {
		changed = "the steps before it were taken"
	}
	msg := fmt.Sprintf("retire %s of %s stopped at step %d (%s), %s: %s", e.Version, e.CRD, e.Step.Number, e.Step.Title, changed, e.Step.Message)
	if e.Step.Command != "" {
		msg += "; run: " + e.Step.Command
	}
	return msg
}

// retireRun is the state of one run.
type retireRun struct {
	o     *RetireOptions
	crd   *apiextensionsv1.CustomResourceDefinition
	facts retire.Facts
	rep   report.Retire
	// log is where progress lines go (stderr when stdout carries -o output).
	log io.Writer
	// printed are the steps already reported.
	printed []retire.StepID
}

// Run plans and, unless a dry run, takes the steps.
func (o *RetireOptions) Run(ctx context.Context) error {
	if o.Fleet.enabled() {
		return o.runFleet(ctx)
	}
	crd, err := o.client.ResolveCRD(ctx, o.CRD)
	if err != nil {
		return err
	}
	r := o.newRun(crd)
	runErr := r.run(ctx)
	if o.printer != nil {
		if err := o.printer.PrintObj(&r.rep, o.Out); err != nil {
			return err
		}
	}
	return runErr
}

func (o *RetireOptions) newRun(crd *apiextensionsv1.CustomResourceDefinition) *retireRun {
	r := &retireRun{o: o, crd: crd, log: o.Out,
		facts: retire.Facts{SkipUsage: o.SkipUsageCheck, Migrate: o.Migrate, CleanManagedFields: o.CleanManagedFields},
		rep:   report.Retire{CRD: crd.Name, Version: o.Version, DryRun: o.DryRun != cmdutil.DryRunNone}}
	if o.printer != nil {
		r.log = o.ErrOut
	}
	return r
}

func (r *retireRun) run(ctx context.Context) error {
	o := r.o
	if lifecycle.FindVersion(r.crd, o.Version) == nil && !slices.Contains(r.crd.Status.StoredVersions, o.Version) && !slices.Contains(retiredList(r.crd), o.Version) {
		return fmt.Errorf("%s has no version %s (spec.versions: %s)", r.crd.Name, o.Version, versionNames(r.crd))
	}
	// Measure what every step needs, then plan: a blocked step anywhere
	// refuses the run before anything changes.
	if err := r.measure(ctx); err != nil {
		return err
	}
	steps := retire.Plan(r.crd, o.Version, r.facts)
	r.rep.Steps = steps
	next := retire.Next(steps)
	if o.DryRun != cmdutil.DryRunNone || (next != nil && next.Status == retire.Blocked) {
		r.printPlan(steps)
		switch {
		case next != nil && next.Status == retire.Blocked:
			r.rep.Outcome = "Blocked"
			return &BlockedError{CRD: r.crd.Name, Version: o.Version, Step: *next}
		case next == nil:
			r.rep.Outcome = "Complete"
		default:
			r.rep.Outcome = "Planned"
		}
		return nil
	}
	// Every permission the steps to do need, before the first is taken.
	var needs []access.Need
	for _, s := range steps {
		if s.Status != retire.ToDo {
			continue
		}
		switch s.ID {
		case retire.Unserved, retire.Removed:
			needs = append(needs, access.EditCRD()...)
		case retire.Migrated:
			needs = append(needs, access.Migrate(r.crd, true)...)
		case retire.ManagedFieldsClean:
			needs = append(needs, access.CleanManagedFields(r.crd)...)
		}
	}
	if missing, _ := o.client.Missing(ctx, needs); len(missing) > 0 {
		r.rep.Outcome = "Blocked"
		return &access.MissingError{Operation: "retire " + o.Version + " of", CRD: r.crd.Name, Missing: missing}
	}
	fmt.Fprintf(r.log, "Retiring %s from %s\n", o.Version, r.crd.Name)
	taken := map[retire.StepID]int{}
	for {
		steps = retire.Plan(r.crd, o.Version, r.facts)
		r.rep.Steps = steps
		next = retire.Next(steps)
		// Report, in order, the steps done before the first one to take.
		for _, s := range steps {
			if s.Status == retire.ToDo || s.Status == retire.Blocked {
				break
			}
			if !r.reported(s) {
				r.printStep(s)
			}
		}
		if next == nil {
			r.rep.Outcome = "Complete"
			a := lifecycle.Analyze(r.crd)
			fmt.Fprintf(r.log, "%s retired from %s. State: %s, %s\n", o.Version, r.crd.Name, a.State, a.StateDescription)
			return nil
		}
		if next.Status == retire.Blocked {
			r.rep.Outcome = "Blocked"
			r.printStep(*next)
			return &BlockedError{CRD: r.crd.Name, Version: o.Version, Step: *next, Changed: len(r.rep.Taken) > 0}
		}
		if taken[next.ID]++; taken[next.ID] > 2 {
			r.rep.Outcome = "Interrupted"
			return fmt.Errorf("step %d (%s) did not take effect after two attempts; re-run kubectl crdversion retire %s %s", next.Number, next.Title, r.crd.Name, o.Version)
		}
		if err := r.take(ctx, *next); err != nil {
			r.rep.Outcome = "Interrupted"
			return err
		}
	}
}

// measure gathers the facts the plan needs: client usage while the version
// is served (first, so that nothing this tool does is counted), then the
// objects whose managedFields name it (listed through the storage version;
// skipped while the version is the storage version itself).
func (r *retireRun) measure(ctx context.Context) error {
	o := r.o
	v := lifecycle.FindVersion(r.crd, o.Version)
	if v != nil && v.Served && !o.SkipUsageCheck && r.facts.Usage == nil && r.facts.UsageError == "" {
		fmt.Fprintf(r.log, "Measuring client requests to %s/%s over %s from the API server's metrics…\n", r.crd.Spec.Group, o.Version, o.UsageWindow)
		rep, err := o.client.ClientUsage(ctx, cluster.GVR(r.crd, o.Version), o.UsageWindow)
		var me *cluster.MetricsError
		switch {
		case errors.As(err, &me):
			r.facts.UsageError = me.Error()
		case err != nil:
			return err
		default:
			r.facts.Usage = &rep
			r.rep.Usage = &rep
		}
	}
	if v != nil && !v.Storage && r.facts.StaleManagedFields == nil {
		stale, err := o.client.StaleManagedFields(ctx, r.crd, o.Version, o.Engine.ChunkSize)
		if err != nil {
			return fmt.Errorf("listing %s to check their managedFields: %w", r.crd.Spec.Names.Plural, err)
		}
		names := make([]string, len(stale))
		for i, s := range stale {
			names[i] = s.String()
		}
		r.facts.StaleManagedFields = &names
	}
	return nil
}

// take performs one step that is to do, then re-reads the CRD.
func (r *retireRun) take(ctx context.Context, s retire.Step) error {
	o := r.o
	fmt.Fprintf(r.log, "[%d/7] %s: %s…\n", s.Number, s.Title, s.Message)
	switch s.ID {
	case retire.ClientsMoved, retire.ManagedFieldsClean:
		if s.ID == retire.ManagedFieldsClean && r.facts.StaleManagedFields != nil {
			cleanup, err := o.client.CleanManagedFields(ctx, r.crd, o.Version, refs(*r.facts.StaleManagedFields), o.Engine.Concurrency, o.Engine.FieldManager)
			r.rep.ManagedFields = cleanup
			if err != nil {
				return err
			}
			fmt.Fprintf(r.log, "      managedFields rewritten on %d object(s) (entries relabeled: %d, merged: %d); %d already clean, %d deleted\n",
				cleanup.Rewritten, cleanup.Relabeled, cleanup.Merged, cleanup.Current, cleanup.Deleted)
			r.rep.Taken = append(r.rep.Taken, string(s.ID))
			r.facts.StaleManagedFields = nil // look again
		}
		return r.measure(ctx)
	case retire.Unserved:
		res := edit.SetServed(r.crd, o.Version, false)
		if err := res.Refused("retire"); err != nil {
			return err
		}
		if err := r.write(ctx, res.Edited); err != nil {
			return err
		}
		if err := o.client.WaitServed(ctx, r.crd.Name, 30*time.Second); err != nil {
			fmt.Fprintf(o.ErrOut, "Warning: %v\n", err)
		}
	case retire.Migrated:
		opts := o.Engine
		res, err := runEngine(ctx, o.client, r.crd.Name, opts, o.Progress, o.ErrOut)
		if err != nil {
			return err
		}
		r.rep.Migration = res
		printMigration(r.log, res, cmdutil.DryRunNone)
		if res.Failed > 0 || !res.Trim.Trimmed {
			return fmt.Errorf("the migration of %s did not finish (%d failed; status.storedVersions not trimmed: %s); fix the failures and re-run kubectl crdversion retire %s %s --migrate",
				r.crd.Name, res.Failed, res.Trim.Reason, r.crd.Name, o.Version)
		}
	case retire.Removed:
		res := edit.RemoveVersion(r.crd, o.Version)
		if err := res.Refused("retire"); err != nil {
			return err
		}
		if err := r.write(ctx, res.Edited); err != nil {
			return err
		}
	default:
		return fmt.Errorf("internal error: retire cannot take step %s", s.ID)
	}
	r.rep.Taken = append(r.rep.Taken, string(s.ID))
	crd, err := o.client.CRDs.Get(ctx, r.crd.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	r.crd = crd
	return r.measure(ctx)
}

// write updates the CRD pinned to the resourceVersion the plan was made on.
func (r *retireRun) write(ctx context.Context, edited *apiextensionsv1.CustomResourceDefinition) error {
	written, err := r.o.client.UpdateCRD(ctx, edited, cluster.WriteOptions{FieldManager: r.o.Engine.FieldManager})
	if err != nil {
		return err
	}
	r.crd = written
	return nil
}

func (r *retireRun) reported(s retire.Step) bool { return slices.Contains(r.printed, s.ID) }

func (r *retireRun) printStep(s retire.Step) {
	r.printed = append(r.printed, s.ID)
	fmt.Fprintf(r.log, "[%d/7] %s: %s — %s\n", s.Number, s.Title, strings.ToUpper(string(s.Status)), s.Message)
	for _, e := range s.Evidence {
		fmt.Fprintf(r.log, "      · %s\n", e)
	}
	if s.Status == retire.Blocked && s.Command != "" {
		fmt.Fprintf(r.log, "      run: %s\n", s.Command)
	}
}

// printPlan writes every step with its status.
func (r *retireRun) printPlan(steps []retire.Step) {
	fmt.Fprintf(r.log, "Plan to retire %s from %s:\n", r.o.Version, r.crd.Name)
	blocked := false
	for _, s := range steps {
		fmt.Fprintf(r.log, "  %d. %-8s %s: %s\n", s.Number, strings.ToUpper(string(s.Status)), s.Title, s.Message)
		for _, e := range s.Evidence {
			fmt.Fprintf(r.log, "              · %s\n", e)
		}
		if s.Status == retire.Blocked && s.Command != "" {
			fmt.Fprintf(r.log, "              run: %s\n", s.Command)
		}
		blocked = blocked || s.Status == retire.Blocked
	}
	if blocked {
		fmt.Fprintln(r.log, "Nothing is changed while a step is blocked; after unblocking, re-run to take the steps in order.")
	}
}

func refs(names []string) []cluster.ObjectRef {
	out := make([]cluster.ObjectRef, len(names))
	for i, n := range names {
		if ns, name, ok := strings.Cut(n, "/"); ok {
			out[i] = cluster.ObjectRef{Namespace: ns, Name: name}
		} else {
			out[i] = cluster.ObjectRef{Name: n}
		}
	}
	return out
}

func retiredList(crd *apiextensionsv1.CustomResourceDefinition) []string {
	return strings.Split(crd.Annotations[lifecycle.RetiredVersionsAnnotation], ",")
}

func versionNames(crd *apiextensionsv1.CustomResourceDefinition) string {
	var names []string
	for _, v := range crd.Spec.Versions {
		names = append(names, v.Name)
	}
	return strings.Join(names, ", ")
}
