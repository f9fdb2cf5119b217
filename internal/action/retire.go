package action

import (
	"context"
	"errors"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdversion/kubectl-crdversion/internal/access"
	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/loss"
	"github.com/crdversion/kubectl-crdversion/internal/migrate"
	"github.com/crdversion/kubectl-crdversion/internal/migrate/result"
	"github.com/crdversion/kubectl-crdversion/internal/preflight"
	"github.com/crdversion/kubectl-crdversion/internal/references"
	"github.com/crdversion/kubectl-crdversion/internal/retire"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

// Retire is retire.Cluster over a RetireCluster (Live: a cluster.Client):
// the CRD's reads and writes
// (pinned to the resourceVersion read; server-side dry runs on the same
// path), client usage from every source of Usage, the managedFields
// listing (shared with Usage's managedFields source) and clean-up,
// SelfSubjectAccessReviews, and the client migrate engine.
type Retire struct {
	Cluster RetireCluster
	// Usage measures client usage (preflight.Usage); ManagedFields is its
	// managedFields source, whose scan StaleManagedFields reuses.
	Usage         UsageMeasurer
	ManagedFields *cluster.ManagedFieldsSource
	// Engine are the migrate engine's options (page size, writes in
	// flight, retries, field manager); DryRun and Progress are set per
	// migration. ChunkSize also pages the managedFields listing,
	// Concurrency bounds the clean-up, and FieldManager names every write.
	Engine migrate.Options
	// AllowPruning lets the migration rewrite objects whose fields the
	// storage version drops; without it the migration is refused, as
	// migrate refuses it (MeasureMigrationLoss, measuredPredictionRefusal).
	AllowPruning bool
	// AllowPruningPaths accept losing or changing these JSON paths and
	// what is under them (retire --migrate --allow-pruning=PATHS); every
	// other loss still refuses.
	AllowPruningPaths []string
	// CrossCheck is MigrateOptions.CrossCheck for the migration's
	// measurement.
	CrossCheck bool
	// OwnPriorityLevel is MigrateOptions.OwnPriorityLevel for the
	// migration (its measurement included): above 0, the shares of a
	// priority level of its own, created for it and removed after it.
	OwnPriorityLevel int32
	// DryRun is the retire command's own (--dry-run): under
	// lifecycle.DryRunNone the migration's server-side dry run plans the
	// run that follows (a killed run's priority level, which that run
	// removes first, does not refuse it).
	DryRun lifecycle.DryRun
	// Progress, when set, starts a progress display for the migration of
	// the CRD named crd: the function the engine reports to, and the one
	// that ends the display. Server-side dry runs of the migration show
	// none.
	Progress func(crd string) (update func(migrate.Progress), stop func())
	// References finds references (preflight.References), Patcher
	// rewrites them (cluster.ReferencePatcher).
	References ReferenceFinder
	Patcher    references.Patcher
	// Admission lists the admission webhook and policy rules
	// (cluster.Client); nil: none are read, and none block.
	Admission AdmissionLister

	scanUsed bool
	// measured are the latest loss measurement's pass at each version
	// (the plan's dry run measures; the run itself measures again only
	// where the schemas predict a loss): reported with the run.
	measured []result.Measurement
}

// AdmissionRules lists the admission rules (r.Admission).
func (r *Retire) AdmissionRules(ctx context.Context) ([]references.AdmissionRule, error) {
	if r.Admission == nil {
		return nil, nil
	}
	return r.Admission.AdmissionRules(ctx)
}

var _ retire.Cluster = (*Retire)(nil)

// FindReferences finds the references to version of crd.
func (r *Retire) FindReferences(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string) (*references.Inventory, error) {
	return r.References.Find(ctx, preflight.ReferenceTarget(crd, version))
}

// RepairReferences rewrites each dependent's reference to
// name to (references.RepairAll).
func (r *Retire) RepairReferences(ctx context.Context, deps []references.Dependent, to string, dryRun lifecycle.DryRun) ([]references.Repair, error) {
	return references.RepairAll(ctx, r.Patcher, deps, to, dryRun)
}

// GetCRD reads the CRD named name.
func (r *Retire) GetCRD(ctx context.Context, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	return r.Cluster.GetCRD(ctx, name)
}

// UpdateCRD writes crd with Cluster.UpdateCRD (a server-side dry run when
// dryRun); a refusal by the API server is a *retire.WriteRefusedError.
func (r *Retire) UpdateCRD(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, dryRun lifecycle.DryRun) (*apiextensionsv1.CustomResourceDefinition, error) {
	out, err := r.Cluster.UpdateCRD(ctx, crd, cluster.WriteOptions{DryRun: dryRun, FieldManager: r.Engine.FieldManager})
	return out, refusal(err)
}

// refusal turns an API server's refusal of a write (validation, admission,
// authorization: an answer about the write itself) into a
// *retire.WriteRefusedError wrapping err. A conflict with another writer, and
// the answers of a server too busy or slow to decide, stay as they are.
func refusal(err error) error {
	var conflict *cluster.ConflictError
	var status apierrors.APIStatus
	if err == nil || errors.As(err, &conflict) || !errors.As(err, &status) {
		return err
	}
	switch apierrors.ReasonForError(err) {
	case metav1.StatusReasonConflict, metav1.StatusReasonServerTimeout, metav1.StatusReasonTimeout,
		metav1.StatusReasonTooManyRequests, metav1.StatusReasonServiceUnavailable:
		return err
	}
	s := status.Status()
	refused := &retire.WriteRefusedError{Message: err.Error(), Err: err}
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			refused.Fields = append(refused.Fields, c.Field)
		}
	}
	return refused
}

// WaitServed waits up to 30 s until the CRD's served versions are in
// discovery.
func (r *Retire) WaitServed(ctx context.Context, name string) error {
	return r.Cluster.WaitServed(ctx, name, 30*time.Second)
}

// ClientUsage assesses the use of version of crd from every source of
// Usage.
func (r *Retire) ClientUsage(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string) (*usage.Assessment, error) {
	gvr := cluster.GVR(crd, version)
	as, err := r.Usage.Measure(ctx, gvr)
	if err != nil {
		return nil, err
	}
	a := as[gvr]
	return &a, nil
}

// RecentWriters is the managedFields source of Usage on version of crd
// (the field managers that wrote through it, and when); nil without a
// Usage (--skip-usage-check).
func (r *Retire) RecentWriters(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string) (*usage.SourceReport, error) {
	if r.Usage == nil {
		return nil, nil
	}
	rep := r.Usage.Writers(ctx, cluster.GVR(crd, version))
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &rep, nil
}

// StaleManagedFields lists, Engine.ChunkSize per page, the objects whose
// managedFields name version: those of the client-usage check's scan when
// it made one (one list per run; the first look only), else a list of
// their own.
func (r *Retire) StaleManagedFields(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string) ([]retire.ObjectRef, error) {
	if r.ManagedFields != nil && !r.scanUsed {
		r.scanUsed = true // a later look (after the clean-up) lists again
		if scan := r.ManagedFields.Scanned(crd.Name); scan != nil {
			if stale, ok := scan.Stale[version]; ok {
				return stale, nil
			}
		}
	}
	return r.Cluster.StaleManagedFields(ctx, crd, version, r.Engine.ChunkSize)
}

// CountObjects counts the objects of crd through its storage version,
// Engine.ChunkSize per page.
func (r *Retire) CountObjects(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) (int, error) {
	return r.Cluster.CountObjects(ctx, crd, lifecycle.StorageVersion(crd), r.Engine.ChunkSize)
}

// CleanManagedFields rewrites the stale entries of objs, Engine.Concurrency
// writes in flight.
func (r *Retire) CleanManagedFields(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string, objs []retire.ObjectRef) (*retire.ManagedFieldsCleanup, error) {
	return r.Cluster.CleanManagedFields(ctx, crd, version, objs, r.Engine.Concurrency, r.Engine.FieldManager)
}

// Missing asks the API server which of needs the user lacks.
func (r *Retire) Missing(ctx context.Context, needs []access.Need) []access.Need {
	missing, _ := r.Cluster.Missing(ctx, needs)
	return missing
}

// RetireNotMeasuredWarning is printed with a migration of retire
// --migrate --allow-pruning: nothing measured what the rewrite loses.
const RetireNotMeasuredWarning = "--allow-pruning: what the rewrite loses was not measured: every field the storage version drops is gone for good, and nothing names it (--allow-pruning=PATHS measures and names what it accepts)"

// MigrateNeeds are migrate's permissions on crd, and unless AllowPruning
// create on its resource when the loss measurement that Migrate runs
// first also dry-runs each object as new at the storage version
// (loss.ChecksValidity, with old among the versions measured).
func (r *Retire) MigrateNeeds(crd *apiextensionsv1.CustomResourceDefinition, old string) []access.Need {
	needs := access.Migrate(crd, true)
	if !r.AllowPruning && loss.ChecksValidity(crd, []string{old}) {
		needs = append(needs, access.MigrateValidity(crd)...)
	}
	if r.OwnPriorityLevel > 0 {
		needs = append(needs, access.OwnPriorityLevel()...)
	}
	return needs
}

// Migrate runs the client migrate engine on crd with Engine (dryRun
// server: every write a server-side dry run); the engine's *migrate.Result is the
// Migration's Report.
func (r *Retire) Migrate(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, old string, dryRun lifecycle.DryRun) (*retire.Migration, error) {
	// Under the None break-glass every write stores objects unconverted,
	// as for migrate: refused, whatever --allow-pruning says.
	if err := breakGlassRefusal(crd); err != nil {
		return nil, err
	}
	// The priority level holds the measurement's requests too, as
	// migrate's; removed when Migrate returns, whatever the outcome.
	own, err := acquireOwnLevel(ctx, r.Cluster, crd, "retire", r.OwnPriorityLevel, dryRun, dryRun == lifecycle.DryRunServer && r.DryRun == lifecycle.DryRunNone)
	if err != nil {
		return nil, err
	}
	defer func() { _ = own.Release(ctx, r.Cluster) }()
	var measured *LossMeasurement
	if !r.AllowPruning {
		// What the migration would lose, as migrate refuses it: while the
		// old versions are still served (the plan's dry run comes before
		// the unserve), the objects read at them and dry-run written
		// through the storage version, compared field by field; and the
		// schemas' prediction unless no object holds or records what it
		// names — looked for again by the run itself, after the unserve
		// (the objects' managedFields read at the storage version).
		if !dryRun.Persists() || len(lifecycle.MigrationLosses(crd)) > 0 {
			// old too: a status.storedVersions without it is a claim
			// (B24), and an object still stored there is read at old
			// and compared with what the rewrite keeps of it.
			if measured, err = MeasureMigrationLoss(ctx, r.Cluster, crd, MigrateOptions{Client: r.Engine, MeasureAt: []string{old}, AllowPruningPaths: r.AllowPruningPaths, CrossCheck: r.CrossCheck}); err != nil {
				return nil, err
			}
		}
		if err := measuredPredictionRefusal(crd, measured, r.AllowPruningPaths); err != nil {
			return nil, err
		}
	}
	if err := waitStorageServed(ctx, r.Cluster, crd); err != nil {
		return nil, err
	}
	opts := r.Engine
	opts.DryRun = dryRun
	if r.Progress != nil && dryRun.Persists() {
		var stop func()
		opts.Progress, stop = r.Progress(crd.Name)
		defer stop()
	}
	res, err := r.Cluster.RunClientEngine(ctx, crd.Name, opts)
	if err != nil {
		return nil, err
	}
	// What the measurement accepted (--allow-pruning=PATHS) or could not
	// name is printed with the migration, as migrate prints it.
	switch {
	case r.AllowPruning:
		res.Warnings = append([]string{RetireNotMeasuredWarning}, res.Warnings...)
	case measured != nil:
		res.Warnings = append(slices.Clone(measured.Warnings), res.Warnings...)
	}
	if measured != nil {
		// The latest pass at each version: the run measures again where
		// the schemas predict a loss, after the unserve, when its pass
		// reads at the storage version alone.
		for _, p := range measured.Passes {
			if i := slices.IndexFunc(r.measured, func(q result.Measurement) bool { return q.From == p.From && q.Through == p.Through }); i >= 0 {
				r.measured[i] = p
			} else {
				r.measured = append(r.measured, p)
			}
		}
	}
	// The measurements the run rests on: its plan's dry run's (the old
	// version read while still served) and its own.
	res.Measured = slices.Clone(r.measured)
	res.Warnings = append(res.Warnings, releaseOwnLevel(ctx, r.Cluster, crd, own, r.OwnPriorityLevel, dryRun, res)...)
	m := &retire.Migration{StorageVersion: res.StorageVersion, Total: res.Total, Rewritten: res.Rewritten, Current: res.Current,
		Conflicts: res.Conflicts, Deleted: res.Deleted, Failed: res.Failed, Complete: res.Complete,
		StoredBefore: res.Trim.Before, StoredAfter: res.Trim.After, Trimmed: res.Trim.Trimmed, Reason: res.Trim.Reason, Report: res}
	if !dryRun.Persists() && res.Trim.Failed {
		m.TrimRefused = res.Trim.Reason
	}
	for _, f := range res.Failures {
		m.Failures = append(m.Failures, retire.ObjectFailure{Object: f.Object, Message: f.Message})
	}
	return m, nil
}
