package action

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdversion/kubectl-crdversion/internal/access"
	"github.com/crdversion/kubectl-crdversion/internal/fairness"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/loss"
	"github.com/crdversion/kubectl-crdversion/internal/migrate"
	crdschema "github.com/crdversion/kubectl-crdversion/internal/schema"
	"github.com/crdversion/kubectl-crdversion/internal/svm"
)

// MigrateOptions are the inputs of migrate.
type MigrateOptions struct {
	// Engine is migrate.EngineClient or migrate.EngineServer.
	Engine string
	// Client tunes the client engine; its DryRun (server dry run),
	// DryRun (client: count only; server: dry-run writes), NoTrim and FieldManager apply to both.
	Client migrate.Options
	// AllowPruning accepts a migration that drops fields (conversion None).
	AllowPruning bool
	// AllowPruningPaths accept losing or changing these JSON paths and
	// what is under them (".spec.hostPort"): the measurement still runs
	// and refuses every other loss (loss.Options.Accepted), and the
	// schemas' prediction stands for the other fields.
	AllowPruningPaths []string
	// ServerProgress, when set, gets each status of a StorageVersionMigration.
	ServerProgress func(svm.Status)
	// VersionOrder is the order of the CRD's versions the user gave,
	// oldest first (see lifecycle.Order).
	VersionOrder []string
	// MeasureAt are versions the loss measurement also reads the objects
	// at, served ones only, as if status.storedVersions listed them
	// (loss.Options.Stored).
	MeasureAt []string
	// MeasureProgress, when set, starts a progress display for the loss
	// measurement of the objects read at version from: the function the
	// measurement reports to, and the one that ends the display.
	MeasureProgress func(from string) (update func(migrate.Progress), stop func())
	// CrossCheck measures every pass that reads also by dry runs and
	// fails on a disagreement (loss.Options.CrossCheck).
	CrossCheck bool
	// OwnPriorityLevel, when above 0, runs the client engine (the loss
	// measurement included) in a priority level of API Priority and
	// Fairness of its own, of this many nominal concurrency shares,
	// created for the run and removed after it (fairness.Acquire).
	OwnPriorityLevel int32
}

// Migration is the outcome of Migrate.
type Migration struct {
	Result *migrate.Result
	// SVMVersion is the storagemigration.k8s.io version used (server engine).
	SVMVersion string
}

// migrationRefusal refuses, before anything is written, a migration that
// would retire nothing (a newer version waits to become the storage
// version: the "completed but useless" migration run before the storage
// flip) or drop fields (conversion None between schemas that differ); with
// the server engine also one whose controller would write through a
// version that prunes fields. It returns nil when the migration may run.
// A client dry run (DryRun client) is refused alike: it must not say a run
// would go through that the real run refuses. The schemas' prediction of
// loss stands unless the measurement m (nil when none ran) cleared it.
func migrationRefusal(crd *apiextensionsv1.CustomResourceDefinition, o MigrateOptions, m *LossMeasurement) error {
	if err := orderRefusal(crd, o); err != nil {
		return err
	}
	if o.AllowPruning {
		return nil
	}
	if err := measuredPredictionRefusal(crd, m, o.AllowPruningPaths); err != nil {
		return err
	}
	return serverEngineRefusal(crd, o)
}

// measuredPredictionRefusal is predictedLossRefusal unless the measurement
// m (nil when none ran) cleared the prediction.
func measuredPredictionRefusal(crd *apiextensionsv1.CustomResourceDefinition, m *LossMeasurement, accepted []string) error {
	if m == nil {
		return predictedLossRefusal(crd, "", accepted)
	}
	if m.PredictionCleared {
		return nil
	}
	err := predictedLossRefusal(crd, m.UnrecordedText, accepted)
	var e *lifecycle.RefusalError
	if errors.As(err, &e) && len(m.Unrecorded) > 0 {
		return loss.NewRefusal(e, m.Unrecorded)
	}
	return err
}

// orderRefusal is migrationRefusal's "a newer version waits" refusal.
func orderRefusal(crd *apiextensionsv1.CustomResourceDefinition, o MigrateOptions) error {
	storage := lifecycle.StorageVersion(crd)
	if err := lifecycle.CheckVersionOrder(crd, o.VersionOrder); err != nil {
		return err
	}
	if next := lifecycle.PromotionPending(crd, lifecycle.Options{VersionOrder: o.VersionOrder}); next != "" && !o.Client.NoTrim {
		run := lifecycle.Crdversion("promote-storage", crd.Name, next)
		return &lifecycle.RefusalError{Operation: "migrate", CRD: crd.Name, Run: &run,
			Reason: fmt.Sprintf("%s, a newer version, is not the storage version yet", next),
			Details: []string{
				fmt.Sprintf("the storage version is %s: migrating now rewrites every object at %s and can retire nothing", storage, storage),
				fmt.Sprintf("promote %s to the storage version first, or pass --no-trim to rewrite the objects at %s anyway", next, storage),
			}}
	}
	return nil
}

// predictedLossRefusal is migrationRefusal's refusal of the losses the
// schemas predict (lifecycle.MigrationLosses): what stands when the loss
// could not be measured; why not, when known, is appended.
func predictedLossRefusal(crd *apiextensionsv1.CustomResourceDefinition, why string, accepted []string) error {
	storage := lifecycle.StorageVersion(crd)
	if losses := acceptPredicted(lifecycle.MigrationLosses(crd), accepted); len(losses) > 0 {
		var parts []string
		for _, l := range losses {
			parts = append(parts, l.Describe(storage))
		}
		if why != "" {
			parts = append(parts, why)
		}
		for _, l := range losses {
			// A restored version keeps every field, but unserved its
			// objects cannot be read there: served, each object is
			// read at it and compared with what the rewrite keeps.
			if v := lifecycle.FindVersion(crd, l.Version); l.AnyField && v != nil && !v.Served {
				parts = append(parts, fmt.Sprintf("%s keeps every field but is not served, so the objects cannot be read there: serve it for the measurement (%s), then migrate reads each object at %s and names what the rewrite would lose",
					l.Version, lifecycle.Crdversion("serve", crd.Name, l.Version), l.Version))
			}
		}
		return &lifecycle.RefusalError{Operation: "migrate", CRD: crd.Name, Reason: "conversion strategy None and the schemas differ",
			WayOut:       "make the schemas describe the same fields or use Webhook conversion, or pass --allow-pruning to accept the loss",
			DetailsTitle: "What rewriting the objects at " + storage + " loses", Details: parts}
	}
	return nil
}

// acceptPredicted is losses without the fields under the paths the user
// accepted (--allow-pruning=PATHS); the losses left with no field are left
// out.
func acceptPredicted(losses []lifecycle.Loss, accepted []string) []lifecycle.Loss {
	if len(accepted) == 0 {
		return losses
	}
	isAccepted := func(p string) bool { return crdschema.Under(accepted, p) }
	var out []lifecycle.Loss
	for _, l := range losses {
		l.Fields = slices.DeleteFunc(slices.Clone(l.Fields), isAccepted)
		l.Undescribed = slices.DeleteFunc(slices.Clone(l.Undescribed), isAccepted)
		if len(l.Fields)+len(l.Undescribed) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// serverEngineRefusal is migrationRefusal's refusal of a server engine
// whose controller writes through a version that prunes fields.
func serverEngineRefusal(crd *apiextensionsv1.CustomResourceDefinition, o MigrateOptions) error {
	if o.Engine != migrate.EngineServer {
		return nil
	}
	storage := lifecycle.StorageVersion(crd)
	if preferred, fields := svm.PreferredVersionLoss(crd); preferred != "" {
		return &lifecycle.RefusalError{Operation: "migrate", CRD: crd.Name,
			Reason: fmt.Sprintf("with --engine=server the controller writes through %s, which prunes fields", preferred),
			WayOut: "use --engine=client (it writes through the storage version), or pass --allow-pruning to accept the loss",
			Details: []string{fmt.Sprintf("the controller writes each object through the preferred version %s, not the storage version %s, and with conversion strategy None %s's schema lacks %s, which would be pruned",
				preferred, storage, preferred, strings.Join(fields, ", "))}}
	}
	return nil
}

// breakGlassRefusal refuses a migration while conversion strategy None
// stands in for a conversion webhook (lifecycle.BreakGlass): every object
// would be stored unconverted, for good. --allow-pruning does not lift it.
func breakGlassRefusal(crd *apiextensionsv1.CustomResourceDefinition) error {
	webhook, on := lifecycle.BreakGlass(crd)
	if !on {
		return nil
	}
	return &lifecycle.RefusalError{Operation: "migrate", CRD: crd.Name,
		Reason: "conversion strategy None stands in for the conversion webhook, a break-glass",
		WayOut: "restore the webhook in spec.conversion once it answers, remove the " + lifecycle.BreakGlassAnnotation + " annotation, then migrate",
		Details: []string{"the webhook: " + webhook + " (" + lifecycle.BreakGlassAnnotation + ", set by the break-glass patch that status prints)",
			"under None nothing is converted: the migration would store every object as read at " + lifecycle.StorageVersion(crd) + ", not as the webhook converts it, for good"}}
}

// Migrate rewrites every object of crd at its storage version and trims
// status.storedVersions under the guard of package migrate, through the
// client engine (migrate.Engine) or a StorageVersionMigration (svm.Runner),
// once the API server serves crd's storage version (cluster.WaitStorageVersion,
// for up to ServedWait: right after a change of the storage version, the
// handler that encodes the objects may still be the old one), after the
// permission check of what it will write and its preflight: the
// loss measured on the objects (MeasureMigrationLoss), then
// migrationRefusal. Per-object failures are in the result; see Outcome for
// whether the run did what it should.
func Migrate(ctx context.Context, c MigrateCluster, crd *apiextensionsv1.CustomResourceDefinition, o MigrateOptions) (*Migration, error) {
	if err := breakGlassRefusal(crd); err != nil {
		return nil, err
	}
	if err := orderRefusal(crd, o); err != nil {
		return nil, err
	}
	if o.Client.DryRun != lifecycle.DryRunClient {
		if err := waitStorageServed(ctx, c, crd); err != nil {
			return nil, err
		}
	}
	measure := !o.AllowPruning && o.Client.DryRun != lifecycle.DryRunClient
	server := o.Engine == migrate.EngineServer
	out := &Migration{}
	if server {
		var err error
		if out.SVMVersion, err = c.ServerEngineVersion(); err != nil {
			return nil, err
		}
	}
	if o.Client.DryRun != lifecycle.DryRunClient {
		// A server dry run sends the trim as a dry run too.
		trim := !o.Client.NoTrim
		needs := access.Migrate(crd, trim)
		if server {
			needs = access.MigrateServer(crd, trim, measure)
		}
		if measure && loss.ChecksValidity(crd, o.MeasureAt) {
			needs = append(needs, access.MigrateValidity(crd)...)
		}
		if o.OwnPriorityLevel > 0 && !server {
			needs = append(needs, access.OwnPriorityLevel()...)
		}
		if missing, _ := c.Missing(ctx, needs); len(missing) > 0 {
			return nil, &access.MissingError{Operation: "migrate", CRD: crd.Name, Missing: missing}
		}
	}
	// The priority level holds the measurement's requests too. It is
	// removed when Migrate returns, whatever the outcome (an interrupted
	// run included: Release does not use the cancelled ctx).
	var own *fairness.Level
	if !server {
		var err error
		if own, err = acquireOwnLevel(ctx, c, crd, "migrate", o.OwnPriorityLevel, o.Client.DryRun, false); err != nil {
			return nil, err
		}
		defer func() { _ = own.Release(ctx, c) }()
	}
	// The run's 429 answers count from here: the measurement's requests
	// are the run's too.
	tooManyAtStart, observed := c.TooManyRequests()
	// nil when not measured: the schemas' prediction then stands as it is.
	var measured *LossMeasurement
	if measure {
		var err error
		if measured, err = MeasureMigrationLoss(ctx, c, crd, o); err != nil {
			return nil, err
		}
	}
	// The schemas' prediction stands besides the measurement: it also
	// sees data in etcd that every version's schema already prunes on
	// read, which no read can show.
	if err := migrationRefusal(crd, o, measured); err != nil {
		return nil, err
	}
	var err error
	if server {
		out.Result, err = c.RunServerEngine(ctx, crd, out.SVMVersion, svm.Options{
			FieldManager: o.Client.FieldManager,
			DryRun:       o.Client.DryRun,
			NoTrim:       o.Client.NoTrim,
			Settle:       svm.DefaultSettle,
			Progress:     o.ServerProgress,
		})
	} else {
		out.Result, err = c.RunClientEngine(ctx, crd.Name, o.Client)
	}
	if err != nil {
		return nil, err
	}
	var warnings []string
	switch {
	case measured != nil:
		warnings = measured.Warnings
		out.Result.Measured = measured.Passes
	case o.Client.DryRun == lifecycle.DryRunClient && !o.AllowPruning:
		warnings = []string{NotMeasuredWarning}
	}
	if !server {
		warnings = append(warnings, releaseOwnLevel(ctx, c, crd, own, o.OwnPriorityLevel, o.Client.DryRun, out.Result)...)
	}
	out.Result.Warnings = append(warnings, out.Result.Warnings...)
	if tooMany, _ := c.TooManyRequests(); observed && !server {
		out.Result.TooManyRequests = tooMany - tooManyAtStart
	}
	return out, nil
}

// acquireOwnLevel creates the run's own priority level of shares nominal
// concurrency shares for the client engine's requests to crd's storage
// version (fairness.Acquire; server-side dry runs under
// lifecycle.DryRunServer; planned: a dry run that plans a run without one,
// which removes a killed run's leftover first — fairness.Options.Planned),
// or returns nil when shares is 0 or nothing is sent (a client dry run).
// A level that would not hold the run's requests is a
// *lifecycle.RefusalError of operation. The caller releases the level
// (Release does not use ctx's cancellation: an interrupted run removes it
// too) and reports it with releaseOwnLevel.
func acquireOwnLevel(ctx context.Context, c fairness.Cluster, crd *apiextensionsv1.CustomResourceDefinition, operation string, shares int32, dryRun lifecycle.DryRun, planned bool) (*fairness.Level, error) {
	if shares <= 0 || dryRun == lifecycle.DryRunClient {
		return nil, nil
	}
	own, err := fairness.Acquire(ctx, c, fairness.Options{CRD: crd.Name, Shares: shares,
		Resource: schema.GroupVersionResource{Group: crd.Spec.Group, Version: lifecycle.StorageVersion(crd), Resource: crd.Spec.Names.Plural},
		DryRun:   dryRun == lifecycle.DryRunServer, Planned: planned})
	var nl *fairness.NotLandingError
	if errors.As(err, &nl) {
		return nil, &lifecycle.RefusalError{Operation: operation, CRD: crd.Name, Err: err,
			Reason: nl.Error(), Details: []string{"a priority level of its own (--own-priority-level) cannot hold this run", nl.Why()},
			WayOut: "run as another identity, or without --own-priority-level"}
	}
	return own, err
}

// releaseOwnLevel removes own (acquireOwnLevel's level, nil for none) once
// the client engine's run res is over, records it in res (the names of
// the level the run's requests landed in, which is gone by now), and
// returns the warnings: the level not removed, nothing created under a
// client dry run given shares, or the run's requests landing in the level
// of an earlier run that was killed before it removed it (and how to
// remove that one).
func releaseOwnLevel(ctx context.Context, c fairness.Cluster, crd *apiextensionsv1.CustomResourceDefinition, own *fairness.Level, shares int32, dryRun lifecycle.DryRun, res *migrate.Result) []string {
	var warnings []string
	if shares > 0 && dryRun == lifecycle.DryRunClient {
		warnings = append(warnings, OwnLevelNotCreatedWarning)
	}
	if own != nil {
		if err := own.Release(ctx, c); err != nil {
			warnings = append(warnings, err.Error())
		}
		res.OwnPriorityLevel = &own.OwnPriorityLevel
		if p := res.PriorityAndFairness; p != nil && own.FlowSchemaUID != "" &&
			p.FlowSchemaUID == own.FlowSchemaUID && p.PriorityLevelUID == own.PriorityLevelUID {
			// The run landed in its own level, removed by now: the names
			// are the level's, not unknown.
			p.FlowSchema, p.PriorityLevel, p.Unresolved = own.Name, own.Name, ""
		}
	} else if p := res.PriorityAndFairness; p != nil && fairness.IsName(p.FlowSchema) {
		warnings = append(warnings, fmt.Sprintf("the run's requests landed in %s, the priority level of a run with --own-priority-level that did not remove it (killed?): it holds every request of this identity to %s; re-run with --own-priority-level to remove it first, or: kubectl delete flowschema %s; kubectl delete prioritylevelconfiguration %s",
			p.FlowSchema, crd.Spec.Names.Plural, p.FlowSchema, p.FlowSchema))
	}
	return warnings
}

// OwnLevelNotCreatedWarning is the warning of a client dry run given
// --own-priority-level: nothing is sent, so neither object is created.
const OwnLevelNotCreatedWarning = "--own-priority-level: no FlowSchema or PriorityLevelConfiguration was created (a client dry run sends nothing); --dry-run=server creates both as server-side dry runs, which checks the permissions"

// NotMeasuredWarning is the warning of a client dry run: the loss the
// rewrite would cause is measured with server-side dry runs, which a client
// dry run does not send.
const NotMeasuredWarning = "what the rewrite would lose was not measured (a client dry run sends no write, not even a dry run); --dry-run=server measures it on every object"

// waitStorageServed waits, for up to ServedWait, until the API server
// serves crd's storage version as read (cluster.WaitStorageVersion),
// and otherwise refuses the migration: a write that the old handler takes
// is stored at the previous storage version, or, unchanged, not written at
// all and counted as current — after which storedVersions would be trimmed
// of a version that objects are still stored at.
func waitStorageServed(ctx context.Context, c MigrateCluster, crd *apiextensionsv1.CustomResourceDefinition) error {
	if err := c.WaitStorageVersion(ctx, crd.Name, ServedWait); err != nil {
		return &lifecycle.RefusalError{Operation: "migrate", CRD: crd.Name, Err: err, WayOut: "re-run in a minute",
			Reason:  "the API server has not yet taken in the change of its storage version to " + lifecycle.StorageVersion(crd),
			Details: []string{"objects written now could stay at the previous storage version", err.Error()}}
	}
	return nil
}

// MeasureMigrationLoss asks the API server what migrating crd would lose
// (loss.Measure, over c, with o's client options and progress).
func MeasureMigrationLoss(ctx context.Context, c LossChecker, crd *apiextensionsv1.CustomResourceDefinition, o MigrateOptions) (*LossMeasurement, error) {
	lo := loss.Options{PageSize: o.Client.ChunkSize, Concurrency: o.Client.Concurrency,
		FieldManager: o.Client.FieldManager, Progress: o.MeasureProgress, Stored: o.MeasureAt, Accepted: o.AllowPruningPaths, CrossCheck: o.CrossCheck}
	if o.Engine == migrate.EngineServer {
		// The controller patches through the preferred version (B23).
		lo.WritesThrough = lifecycle.DefaultVersion(crd)
	}
	return loss.Measure(ctx, c, crd, lo)
}

// LossMeasurement is what MeasureMigrationLoss measured.
type LossMeasurement = loss.Measurement

// LossDisagreement is a cross-checked measurement whose reads and dry runs
// disagree (MigrateOptions.CrossCheck).
type LossDisagreement = loss.Disagreement

// LossRefusal is the measurement's refusal of a migration, with every
// object behind it (errors.As finds it in Migrate's error).
type LossRefusal = loss.Refusal

// Outcome is the error a finished migration of crd stands for, nil when it
// did what it should: a failed StorageVersionMigration, objects that failed
// (storedVersions then untrimmed), an interrupted run (checkpoint, when
// set, resumes it), a trim that was due and did not happen.
func Outcome(crd *apiextensionsv1.CustomResourceDefinition, res *migrate.Result, checkpoint string) error {
	server := res.Engine == migrate.EngineServer
	if sm := res.StorageVersionMigration; sm != nil && sm.Phase == string(svm.Failed) {
		stored := "status.storedVersions was not trimmed"
		switch {
		case res.Trim.Restored:
			stored = "the controller trimmed status.storedVersions anyway; it was restored to [" + strings.Join(res.Trim.After, ", ") + "]"
		case !slices.Equal(res.Trim.After, res.Trim.Before):
			stored = "status.storedVersions is [" + strings.Join(res.Trim.After, ", ") + "], not [" + strings.Join(res.Trim.Before, ", ") + "]: " + res.Trim.Reason
		}
		return &lifecycle.FailureError{Summary: fmt.Sprintf("the StorageVersionMigration %s of %s failed", sm.Name, crd.Name), Why: sm.Message, Details: []string{stored}}
	}
	switch {
	case res.Failed > 0:
		e := &lifecycle.FailureError{Summary: fmt.Sprintf("%d object(s) of %s failed to migrate; status.storedVersions was not trimmed", res.Failed, crd.Name)}
		for _, f := range res.Failures {
			if strings.Contains(f.Message, "conversion webhook") {
				e.Why = "the conversion webhook failed for them"
				e.WayOut = lifecycle.WebhookRepair(lifecycle.Analyze(crd))
				break
			}
		}
		return e
	case !res.Complete && server && !res.DryRun:
		return &lifecycle.FailureError{Summary: "the migration of " + crd.Name + " did not finish", Why: res.Trim.Reason}
	case !res.Complete && !server:
		hint := ""
		switch _, err := os.Stat(checkpoint); {
		case checkpoint == "":
		case err == nil:
			hint = " with --checkpoint " + checkpoint + " to resume"
		default:
			// Interrupted before a page completed: nothing to resume.
			hint = " (no page had completed, so " + checkpoint + " was not written: the re-run starts from the first object)"
		}
		return &lifecycle.FailureError{Summary: "the migration of " + crd.Name + " was interrupted", WayOut: "re-run it" + hint}
	case res.Trim.Failed && res.DryRun:
		return &lifecycle.FailureError{Summary: fmt.Sprintf("the API server accepts the rewrite of every object of %s at %s, but not the trim of status.storedVersions that follows it", crd.Name, res.StorageVersion),
			Why: res.Trim.Reason}
	case res.Trim.Failed:
		return &lifecycle.FailureError{Summary: fmt.Sprintf("every object of %s is at %s, but status.storedVersions was not trimmed", crd.Name, res.StorageVersion), Why: res.Trim.Reason}
	}
	return nil
}
