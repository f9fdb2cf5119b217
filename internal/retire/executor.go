package retire

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crdversion/kubectl-crdversion/internal/access"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/references"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

// Options are the inputs of one run.
type Options struct {
	// DryRun: none takes the steps; client plans from the CRD and the
	// measurements only; server plans and also sends each write of the
	// plan as a server-side dry run (the CRD writes, and the migration's
	// writes with --migrate), so that the plan carries the API server's
	// answers.
	DryRun lifecycle.DryRun
	// SkipUsageCheck records --skip-usage-check; Migrate (--migrate) lets
	// the run migrate the objects; CleanManagedFields
	// (--clean-managed-fields) lets it rewrite managedFields entries.
	SkipUsageCheck, Migrate, CleanManagedFields bool
	// SkipReferenceCheck records --skip-reference-check; RepairReferences
	// (--repair-references) lets the run rewrite the references that
	// name the version to the storage version.
	SkipReferenceCheck, RepairReferences bool
	// VersionOrder is the order of the CRD's versions the user gave,
	// oldest first (--version-order; see lifecycle.Order).
	VersionOrder []string
	// Carried are the flags the run was given that every retire command
	// it prints carries, in order: the usage check's (--usage-window,
	// --usage-history, --prometheus-url, --audit-log, …), so that a pasted
	// re-run looks at the same sources over the same spans, and
	// --own-priority-level, so that it migrates the same way.
	Carried []lifecycle.Flag
	// Global are the connection flags every printed command carries (see
	// lifecycle.Command.Render).
	Global []lifecycle.Flag
}

// Outcome of a run.
type Outcome string

const (
	// OutcomeComplete — the version is retired (or already was).
	OutcomeComplete Outcome = "Complete"
	// OutcomePlanned — a dry run whose plan has no blocked step.
	OutcomePlanned Outcome = "Planned"
	// OutcomeBlocked — a step is blocked; nothing after it ran.
	OutcomeBlocked Outcome = "Blocked"
	// OutcomeInterrupted — a step failed while it was taken.
	OutcomeInterrupted Outcome = "Interrupted"
)

// Result is what a run did. Outcome is empty when the run failed before it
// could plan (an unknown version, a measurement that failed).
type Result struct {
	Outcome Outcome
	// Steps as evaluated last, rendered with Options.Global, with what the
	// run checked and did for each.
	Steps []Step
	// Taken are the steps this run took, in order.
	Taken []StepID
	// Usage is the client-usage assessment, when measured.
	Usage *usage.Assessment
	// Migration, when this run migrated; ManagedFields, when it cleaned
	// managedFields.
	Migration     *Migration
	ManagedFields *ManagedFieldsCleanup
}

// Executor retires versions of CRDs on one cluster.
type Executor struct {
	Cluster Cluster
	// Events, when set, receives the run's progress as it goes.
	Events func(Event)
}

// Run retires old from crd (as read):
//
//  1. it plans from the CRD alone, and stops when a step is blocked;
//  2. it measures client usage (while old is served) and the objects whose
//     managedFields name old, and plans again;
//  3. before any write, it asks the API server for every permission the
//     steps to do need;
//  4. it sends each CRD write of the plan (unserve, removal) as a
//     server-side dry run, and, when the plan migrates, the migration's
//     writes; a write the API server refuses blocks its step;
//  5. it stops when a step is blocked (nothing was changed) or for a dry
//     run; otherwise it takes the first step to do, re-reads the CRD,
//     plans again (with fresh dry runs), and so on to the end. A step that
//     does not take effect after two attempts stops the run.
//
// A blocked step is a *BlockedError, a step that failed a *StepError, a
// missing permission an *access.MissingError; the Result is never nil.
func (e *Executor) Run(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, old string, opts Options) (*Result, error) {
	r := &run{e: e, opts: opts, old: old, crd: crd, res: &Result{},
		facts: Facts{SkipUsage: opts.SkipUsageCheck, Migrate: opts.Migrate, CleanManagedFields: opts.CleanManagedFields, VersionOrder: opts.VersionOrder,
			Carried: opts.Carried, SkipReferences: opts.SkipReferenceCheck, RepairReferences: opts.RepairReferences},
		found:    map[StepID]string{},
		observed: map[StepID][]string{},
		did:      map[StepID][]string{},
		attempts: map[StepID]int{},
	}
	return r.res, r.run(ctx)
}

// run is the state of one run.
type run struct {
	e    *Executor
	opts Options
	old  string
	crd  *apiextensionsv1.CustomResourceDefinition
	// facts measured so far; writesAt is the resourceVersion that
	// facts.Writes were asked at.
	facts         Facts
	writesAt      string
	usageMeasured bool
	// referencesAsked: the rewrites of facts.References were sent as a
	// server-side dry run.
	referencesAsked bool
	res             *Result
	// found is each step's status and message when the run decided to go
	// on or stop; observed what it measured or asked for it; did what it
	// did to take it.
	found         map[StepID]string
	observed, did map[StepID][]string
	// taken are the steps taken, as planned when taken; reported the
	// steps reported by EventStep; attempts counts takes per step.
	taken    []Step
	reported []StepID
	attempts map[StepID]int
}

func (r *run) emit(ev Event) {
	if r.e.Events == nil {
		return
	}
	ev.CRD, ev.Group, ev.Version = r.crd.Name, r.crd.Spec.Group, r.old
	r.e.Events(ev)
}

func (r *run) plan() []Step { return Plan(r.crd, r.old, r.facts) }

func blocked(steps []Step) bool {
	n := Next(steps)
	return n != nil && n.Status == Blocked
}

func (r *run) run(ctx context.Context) error {
	crd, old := r.crd, r.old
	if lifecycle.FindVersion(crd, old) == nil && !slices.Contains(crd.Status.StoredVersions, old) && !slices.Contains(lifecycle.RetiredVersions(crd), old) {
		return fmt.Errorf("%s has no version %s (spec.versions: %s)", crd.Name, old, strings.Join(lifecycle.VersionNames(crd), ", "))
	}
	if err := lifecycle.CheckVersionOrder(crd, r.opts.VersionOrder); err != nil {
		return err
	}
	// From the CRD alone first: a step the CRD shows blocked refuses the
	// run before the metrics window is waited for.
	if steps := r.plan(); blocked(steps) {
		return r.stop(steps)
	}
	if err := r.measure(ctx); err != nil {
		return err
	}
	steps := r.plan()
	if blocked(steps) {
		return r.stop(steps)
	}
	if r.opts.DryRun == lifecycle.DryRunNone {
		if missing := r.e.Cluster.Missing(ctx, needs(r.crd, steps, r.facts.References, func() []access.Need { return r.e.Cluster.MigrateNeeds(r.crd, old) })); len(missing) > 0 {
			r.res.Outcome = OutcomeBlocked
			return &access.MissingError{Operation: "retire " + old + " of", CRD: crd.Name, Missing: missing}
		}
	}
	if r.opts.DryRun != lifecycle.DryRunClient {
		if err := r.dryRun(ctx, steps); err != nil {
			return err
		}
		steps = r.plan()
	}
	if r.opts.DryRun != lifecycle.DryRunNone || blocked(steps) {
		return r.stop(steps)
	}
	r.noteFound(steps)
	return r.execute(ctx)
}

// needs are the permissions the steps to do need.
func needs(crd *apiextensionsv1.CustomResourceDefinition, steps []Step, refs *references.Inventory, migrate func() []access.Need) []access.Need {
	var out []access.Need
	for _, s := range steps {
		if s.Status != ToDo {
			continue
		}
		switch s.ID {
		case Unserved, Removed:
			out = append(out, access.EditCRD()...)
		case Migrated:
			out = append(out, migrate()...)
		case ManagedFieldsClean:
			out = append(out, access.CleanManagedFields(crd)...)
		case ReferencesMoved:
			if refs == nil {
				continue
			}
			for _, rc := range refs.ByResource(0) {
				out = append(out, access.Need{Verb: "patch", Group: rc.Resource.Group, Resource: rc.Resource.Resource, Why: "rewrite the references that name " + refs.Target.APIVersion})
			}
		}
	}
	return out
}

// stop ends a run that takes no step: a dry run, or a blocked plan.
func (r *run) stop(steps []Step) error {
	r.noteFound(steps)
	steps = r.finish(steps)
	r.emit(Event{Kind: EventPlan, Steps: steps, Total: len(steps)})
	switch next := Next(steps); {
	case next != nil && next.Status == Blocked:
		r.res.Outcome = OutcomeBlocked
		return &BlockedError{CRD: r.crd.Name, Version: r.old, Step: *next}
	case next == nil:
		r.res.Outcome = OutcomeComplete
	default:
		r.res.Outcome = OutcomePlanned
	}
	return nil
}

// measure gathers the facts the plan needs: client usage while the version
// is served (once per run, and before the run writes anything, so that
// nothing it does is counted), then the objects whose managedFields name it
// (listed through the storage version; not while the version is the
// storage version itself).
func (r *run) measure(ctx context.Context) error {
	v := lifecycle.FindVersion(r.crd, r.old)
	if v != nil && v.Served && !r.opts.SkipUsageCheck && !r.usageMeasured {
		r.usageMeasured = true
		r.emit(Event{Kind: EventMeasuring})
		a, err := r.e.Cluster.ClientUsage(ctx, r.crd, r.old)
		if err != nil {
			return fmt.Errorf("measuring client usage of %s: %w", lifecycle.GroupVersion(r.crd, r.old), err)
		}
		r.facts.Usage, r.res.Usage = a, a
		r.observe(ClientsMoved, append([]string{"client usage: " + a.Message()}, a.Evidence()...)...)
	}
	if v != nil && !v.Served && !v.Storage && r.opts.CleanManagedFields && !r.opts.SkipUsageCheck && !r.usageMeasured && r.facts.Writers == nil {
		w, err := r.e.Cluster.RecentWriters(ctx, r.crd, r.old)
		if err != nil {
			return fmt.Errorf("reading the managedFields writers of %s: %w", lifecycle.GroupVersion(r.crd, r.old), err)
		}
		r.facts.Writers = w
	}
	if v != nil && !r.opts.SkipReferenceCheck && r.facts.References == nil {
		inv, err := r.e.Cluster.FindReferences(ctx, r.crd, r.old)
		if err != nil {
			return fmt.Errorf("finding the references to %s: %w", lifecycle.GroupVersion(r.crd, r.old), err)
		}
		r.facts.References, r.facts.ReferenceRefusals, r.referencesAsked = inv, nil, false
		r.facts.AdmissionRules, r.facts.AdmissionErr = r.e.Cluster.AdmissionRules(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		r.observe(ReferencesMoved, fmt.Sprintf("read %d objects of %d resources (%d not read): %s %s %s",
			inv.Objects, inv.Resources, len(inv.Unseen), references.Count(inv.Dependents), references.Verb(inv.Dependents), lifecycle.GroupVersion(r.crd, r.old)))
	}
	if v != nil && !slices.Contains(r.crd.Status.StoredVersions, r.old) && !r.facts.MigratedInRun && r.facts.Objects == nil {
		n, err := r.e.Cluster.CountObjects(ctx, r.crd)
		if err != nil {
			return fmt.Errorf("counting the objects of %s: %w", r.crd.Name, err)
		}
		r.facts.Objects = &n
		r.observe(Migrated, fmt.Sprintf("status.storedVersions does not list %s; counted %d object(s) of %s", r.old, n, r.crd.Name))
	}
	if v != nil && !v.Storage && r.facts.StaleManagedFields == nil {
		stale, err := r.e.Cluster.StaleManagedFields(ctx, r.crd, r.old)
		if apierrors.IsForbidden(err) {
			return &lifecycle.RefusalError{Operation: "retire " + r.old + " of", CRD: r.crd.Name,
				Reason: "listing its objects to check their managedFields is forbidden", WayOut: "grant list on " + r.crd.Spec.Names.Plural + "." + r.crd.Spec.Group,
				DetailsTitle: "The API server", Details: []string{err.Error()}, Err: err}
		}
		if err != nil {
			return fmt.Errorf("listing %s to check their managedFields: %w", r.crd.Spec.Names.Plural, err)
		}
		r.facts.StaleManagedFields = &stale
		gv := lifecycle.GroupVersion(r.crd, r.old)
		if len(stale) == 0 {
			r.observe(ManagedFieldsClean, fmt.Sprintf("listed the objects: no managedFields entry names %s", gv))
		} else {
			r.observe(ManagedFieldsClean, fmt.Sprintf("listed the objects: %d have managedFields entries naming %s (%s)", len(stale), gv, sample(stale)))
		}
	}
	return nil
}

// dryRun asks the API server, with server-side dry runs, whether it accepts
// each CRD write of the plan (again whenever the CRD changed since it last
// asked), and, once per run, the migration's writes when the plan
// migrates.
func (r *run) dryRun(ctx context.Context, steps []Step) error {
	if r.writesAt != r.crd.ResourceVersion {
		r.facts.Writes, r.writesAt = map[StepID]WriteCheck{}, r.crd.ResourceVersion
	}
	migrates := slices.ContainsFunc(steps, func(s Step) bool { return s.ID == Migrated && s.Status == ToDo })
	for _, s := range steps {
		if _, asked := r.facts.Writes[s.ID]; s.write == nil || s.Status != ToDo || asked {
			continue
		}
		var answer WriteCheck
		_, err := r.e.Cluster.UpdateCRD(ctx, s.write, lifecycle.DryRunServer)
		var refused *WriteRefusedError
		switch {
		case errors.As(err, &refused):
			answer = WriteCheck{Refused: refused.Message, Deferred: s.ID == Removed && migrates && refused.storedVersionsOnly()}
		case err != nil:
			return fmt.Errorf("asking the API server whether it accepts step %d (%s) with a server-side dry run: %w", s.Number, s.Title, err)
		}
		r.facts.Writes[s.ID] = answer
		r.observe(s.ID, fmt.Sprintf("at resourceVersion %s: %s", r.crd.ResourceVersion, answer.evidence(r.old)))
	}
	if err := r.dryRunReferences(ctx, steps); err != nil {
		return err
	}
	if !migrates || r.facts.MigrationCheck != nil {
		return nil
	}
	i := slices.IndexFunc(steps, func(s Step) bool { return s.ID == Migrated })
	r.emit(Event{Kind: EventChecking, Step: steps[i], Total: len(steps)})
	m, err := r.e.Cluster.Migrate(ctx, r.crd, r.old, lifecycle.DryRunServer)
	mc := &MigrationCheck{}
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		mc.Error = lifecycle.Message(err)
	case m == nil:
		mc.Error = "no answer"
	default:
		mc.Total, mc.Failed, mc.Failures = m.Total, m.Failed, m.Failures[:min(3, len(m.Failures))]
		switch {
		case !m.Complete && m.Failed == 0:
			mc.Error = "the list of the objects did not complete"
		case m.TrimRefused != "":
			mc.TrimRefused = m.TrimRefused
		}
	}
	r.facts.MigrationCheck = mc
	switch {
	case mc.TrimRefused != "":
		r.observe(Migrated, fmt.Sprintf("server-side dry run of the migration: %d object(s), %d refused; the trim of status.storedVersions refused: %s", mc.Total, mc.Failed, mc.TrimRefused))
	case mc.Error != "":
		r.observe(Migrated, "server-side dry run of the migration: "+mc.Error)
	default:
		r.observe(Migrated, fmt.Sprintf("server-side dry run of the migration: %d object(s), %d refused", mc.Total, mc.Failed))
	}
	return nil
}

// dryRunReferences sends the rewrites of the references as
// server-side dry runs, once per inventory, when the plan takes them.
func (r *run) dryRunReferences(ctx context.Context, steps []Step) error {
	i := slices.IndexFunc(steps, func(s Step) bool { return s.ID == ReferencesMoved && s.Status == ToDo })
	if i < 0 || r.facts.References == nil || r.referencesAsked {
		return nil
	}
	to := lifecycle.GroupVersion(r.crd, lifecycle.StorageVersion(r.crd))
	rs, err := r.e.Cluster.RepairReferences(ctx, r.facts.References.Dependents, to, lifecycle.DryRunServer)
	if err != nil {
		return fmt.Errorf("asking the API server whether it accepts the rewrite of the references with server-side dry runs: %w", err)
	}
	r.referencesAsked = true
	for _, x := range rs {
		if x.Outcome == references.Changed || x.Outcome == references.Failed {
			r.facts.ReferenceRefusals = append(r.facts.ReferenceRefusals, repairName(x)+": "+x.Message)
		}
	}
	r.observe(ReferencesMoved, fmt.Sprintf("server-side dry run of the rewrite to %s: %d reference(s), %d refused", to, len(rs), len(r.facts.ReferenceRefusals)))
	return nil
}

// repairName is "RESOURCE NAMESPACE/NAME" of a repair.
func repairName(x references.Repair) string {
	return x.Resource.GroupResource().String() + " " + x.Object() + " " + x.Where()
}

// execute takes the steps in order, planning again after each.
func (r *run) execute(ctx context.Context) error {
	r.emit(Event{Kind: EventRetiring})
	for {
		steps := r.plan()
		if r.opts.DryRun == lifecycle.DryRunNone {
			if err := r.dryRun(ctx, steps); err != nil {
				r.res.Outcome = OutcomeInterrupted
				return r.failed(steps, Next(steps), err)
			}
			steps = r.plan()
		}
		steps = r.finish(steps)
		next := Next(steps)
		// Report, in order, the steps done before the first one to take.
		for _, s := range steps {
			if s.Status == ToDo || s.Status == Blocked {
				break
			}
			if !slices.Contains(r.reported, s.ID) {
				r.reportStep(s)
			}
		}
		switch {
		case next == nil:
			r.res.Outcome = OutcomeComplete
			a := lifecycle.Analyze(r.crd)
			r.emit(Event{Kind: EventRetired, Analysis: &a})
			return nil
		case next.Status == Blocked:
			r.res.Outcome = OutcomeBlocked
			r.reportStep(*next)
			r.res.Steps = r.finishUndo(steps)
			return &BlockedError{CRD: r.crd.Name, Version: r.old, Step: *next, Taken: r.takenRendered()}
		}
		if r.attempts[next.ID]++; r.attempts[next.ID] > 2 {
			r.res.Outcome = OutcomeInterrupted
			return r.failed(steps, next, fmt.Errorf("step %d (%s) did not take effect after two attempts; re-run %s", next.Number, next.Title, r.rerun()))
		}
		if err := r.take(ctx, *next, len(steps)); err != nil {
			r.res.Outcome = OutcomeInterrupted
			return r.failed(steps, next, err)
		}
	}
}

func (r *run) reportStep(s Step) {
	r.reported = append(r.reported, s.ID)
	r.emit(Event{Kind: EventStep, Step: s, Total: len(order)})
}

// take performs one step that is to do, then re-reads the CRD and
// measures again what changed.
func (r *run) take(ctx context.Context, s Step, total int) error {
	r.emit(Event{Kind: EventTaking, Step: s, Total: total})
	c := r.e.Cluster
	switch s.ID {
	case ClientsMoved:
		return r.measure(ctx)
	case ManagedFieldsClean:
		if r.facts.StaleManagedFields == nil {
			return r.measure(ctx)
		}
		cleanup, err := c.CleanManagedFields(ctx, r.crd, r.old, *r.facts.StaleManagedFields)
		if cleanup != nil {
			r.res.ManagedFields = cleanup
			r.did[s.ID] = append(r.did[s.ID], fmt.Sprintf("rewrote the managedFields of %d object(s) (entries relabeled: %d, merged: %d); %d already clean, %d deleted, %d failed",
				cleanup.Rewritten, cleanup.Relabeled, cleanup.Merged, cleanup.Current, cleanup.Deleted, len(cleanup.Failed)))
		}
		if err != nil {
			return err
		}
		r.emit(Event{Kind: EventManagedFieldsCleaned, ManagedFields: cleanup})
		r.taken = append(r.taken, s)
		r.res.Taken = append(r.res.Taken, s.ID)
		r.facts.StaleManagedFields = nil // look again
		return r.measure(ctx)
	case ReferencesMoved:
		if r.facts.References == nil {
			return r.measure(ctx)
		}
		to := lifecycle.GroupVersion(r.crd, lifecycle.StorageVersion(r.crd))
		rs, err := c.RepairReferences(ctx, r.facts.References.Dependents, to, lifecycle.DryRunNone)
		counts := map[references.Outcome]int{}
		var notRewritten []string
		for _, x := range rs {
			counts[x.Outcome]++
			if x.Outcome == references.Changed || x.Outcome == references.Failed {
				notRewritten = append(notRewritten, repairName(x)+": "+x.Message)
			}
		}
		did := fmt.Sprintf("rewrote %d reference(s) to %s; %d changed by another writer, %d deleted, %d failed",
			counts[references.Rewritten], to, counts[references.Changed], counts[references.Gone], counts[references.Failed])
		r.did[s.ID] = append(r.did[s.ID], did)
		r.emit(Event{Kind: EventReferencesRewritten, Message: did})
		if err != nil {
			return err
		}
		if len(notRewritten) > 0 {
			return fmt.Errorf("%d reference(s) were not rewritten (%s); re-run %s to read them anew", len(notRewritten), notRewritten[0], r.rerun())
		}
		r.facts.References = nil // look again
	case Unserved, Removed:
		if s.write == nil {
			return fmt.Errorf("internal error: step %d (%s) has no write", s.Number, s.Title)
		}
		written, err := c.UpdateCRD(ctx, s.write, lifecycle.DryRunNone)
		if err != nil {
			return err
		}
		what := "set served: false on " + r.old
		if s.ID == Removed {
			what = "removed " + r.old + " from spec.versions"
		}
		r.did[s.ID] = append(r.did[s.ID], fmt.Sprintf("%s (resourceVersion %s → %s)", what, r.crd.ResourceVersion, written.ResourceVersion))
		r.crd = written
		if s.ID == Unserved {
			if err := c.WaitServed(ctx, r.crd.Name); err != nil {
				r.emit(Event{Kind: EventWarning, Err: err})
			}
		}
	case Migrated:
		m, err := c.Migrate(ctx, r.crd, r.old, lifecycle.DryRunNone)
		if err != nil {
			return err
		}
		r.res.Migration = m
		r.emit(Event{Kind: EventMigrated, Migration: m})
		trim := fmt.Sprintf("status.storedVersions [%s] → [%s]", strings.Join(m.StoredBefore, ", "), strings.Join(m.StoredAfter, ", "))
		if !m.Trimmed {
			trim = fmt.Sprintf("status.storedVersions [%s] not trimmed: %s", strings.Join(m.StoredAfter, ", "), m.Reason)
		}
		r.did[s.ID] = append(r.did[s.ID], fmt.Sprintf("migrated %d object(s) at %s (rewritten %d, already current %d, conflicts %d, deleted %d, failed %d); %s",
			m.Total, m.StorageVersion, m.Rewritten, m.Current, m.Conflicts, m.Deleted, m.Failed, trim))
		if m.Failed > 0 || !m.Complete || (!m.Trimmed && slices.Contains(m.StoredAfter, r.old)) {
			return fmt.Errorf("the migration of %s did not finish (%d failed; status.storedVersions not trimmed: %s); fix the failures and re-run %s",
				r.crd.Name, m.Failed, m.Reason, r.rerun())
		}
		r.facts.MigratedInRun = true
	default:
		return fmt.Errorf("internal error: retire cannot take step %s", s.ID)
	}
	r.taken = append(r.taken, s)
	r.res.Taken = append(r.res.Taken, s.ID)
	crd, err := c.GetCRD(ctx, r.crd.Name)
	if err != nil {
		return err
	}
	r.crd = crd
	return r.measure(ctx)
}

// rerun is the command that resumes this run.
func (r *run) rerun() string {
	return command(r.crd.Name, r.old, choices{migrate: r.opts.Migrate, clean: r.opts.CleanManagedFields, skip: r.opts.SkipUsageCheck,
		repairRefs: r.opts.RepairReferences, skipRefs: r.opts.SkipReferenceCheck, order: r.opts.VersionOrder, carried: r.opts.Carried}, "").Render(r.opts.Global)
}

// failed records a step that failed while taken (or while the API server
// was asked about it).
func (r *run) failed(steps []Step, s *Step, err error) error {
	r.res.Steps = r.finishUndo(steps)
	se := &StepError{CRD: r.crd.Name, Version: r.old, Taken: r.takenRendered(), Err: err}
	if s != nil {
		se.Step = *s
	}
	return se
}

func (r *run) observe(id StepID, lines ...string) {
	r.observed[id] = append(r.observed[id], lines...)
}

// noteFound records each step's status and message, once: what the run
// found before it took anything.
func (r *run) noteFound(steps []Step) {
	for _, s := range steps {
		if _, ok := r.found[s.ID]; !ok {
			r.found[s.ID] = string(s.Status) + ": " + s.Message
		}
	}
}

// finish renders steps with the run's connection flags and attaches what
// the run checked and did for each; the result is the run's Steps.
func (r *run) finish(steps []Step) []Step {
	out := slices.Clone(steps)
	for i := range out {
		s := &out[i]
		s.Checked = nil
		if f, ok := r.found[s.ID]; ok {
			s.Checked = append(s.Checked, f)
		}
		s.Checked = append(s.Checked, r.observed[s.ID]...)
		s.Did = slices.Clone(r.did[s.ID])
	}
	out = Rendered(out, r.opts.Global)
	r.res.Steps = out
	return out
}

// finishUndo is finish with the undo of each step taken, for a run that
// stops before the end.
func (r *run) finishUndo(steps []Step) []Step {
	out := r.finish(steps)
	for i := range out {
		if slices.ContainsFunc(r.taken, func(t Step) bool { return t.ID == out[i].ID }) {
			out[i].Undo = undo(r.crd.Name, r.old, out[i].ID)
		}
	}
	out = Rendered(out, r.opts.Global)
	r.res.Steps = out
	return out
}

// takenRendered are the steps taken, each with its undo rendered.
func (r *run) takenRendered() []Step {
	out := slices.Clone(r.taken)
	for i := range out {
		out[i].Undo = undo(r.crd.Name, r.old, out[i].ID)
	}
	return Rendered(out, r.opts.Global)
}
