package retire

import "github.com/crdversion/kubectl-crdversion/internal/lifecycle"

// EventKind says what an Event reports.
type EventKind string

const (
	// EventMeasuring — the client usage of Version is being measured.
	EventMeasuring EventKind = "Measuring"
	// EventChecking — the migration's server-side dry run (Step) goes
	// through every object.
	EventChecking EventKind = "Checking"
	// EventPlan — the run stops before taking a step (a dry run, or a
	// blocked step); Steps is the plan.
	EventPlan EventKind = "Plan"
	// EventRetiring — the run starts taking steps.
	EventRetiring EventKind = "Retiring"
	// EventStep — a step is done, skipped or blocked (Step), reported once,
	// in order, while the run takes steps.
	EventStep EventKind = "Step"
	// EventTaking — the run takes Step, the Step.Number-th of Total.
	EventTaking EventKind = "Taking"
	// EventManagedFieldsCleaned — ManagedFields is the clean-up's outcome.
	EventManagedFieldsCleaned EventKind = "ManagedFieldsCleaned"
	// EventReferencesRewritten — Message says what the rewrite of the
	// references did.
	EventReferencesRewritten EventKind = "ReferencesRewritten"
	// EventMigrated — Migration is the migration's outcome.
	EventMigrated EventKind = "Migrated"
	// EventWarning — Err did not stop the run.
	EventWarning EventKind = "Warning"
	// EventRetired — Version is retired; Analysis is the CRD's state now.
	EventRetired EventKind = "Retired"
)

// Event is one progress report of a run.
type Event struct {
	Kind EventKind
	// CRD, Group and Version name what is retired.
	CRD, Group, Version string
	Step                Step
	Total               int
	Steps               []Step
	Migration           *Migration
	ManagedFields       *ManagedFieldsCleanup
	Err                 error
	Message             string
	Analysis            *lifecycle.Analysis
}
