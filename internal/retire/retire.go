// Package retire is the removal of an old version from a CRD: the ordered
// workflow of the Kubernetes task page "Versions in
// CustomResourceDefinitions" (upgrade existing objects, then remove the old
// version), with a preflight at every step.
//
// Plan is pure: it evaluates each step from the CRD and the facts measured
// on the cluster. Executor runs the workflow (helm's pkg/action shape):
// it measures what the plan needs, asks the API server with server-side
// dry runs whether it would accept each write of the plan, takes the first
// step that is to do, then plans again from the new live state. It talks
// to the cluster only through the Cluster interface, and reports progress
// through Events. Every step is idempotent.
package retire

import (
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/managedfields"
	"github.com/crdversion/kubectl-crdversion/internal/references"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

// StepID names a step of the workflow, in order.
type StepID string

const (
	// ClientsMoved means no client requests OLD (from the API server's metrics).
	ClientsMoved StepID = "ClientsMoved"
	// ReferencesMoved means no object's owner reference or scale target
	// names OLD (references.Consequence says what breaks once OLD is
	// unserved).
	ReferencesMoved StepID = "ReferencesMoved"
	// Unserved means OLD has served: false.
	Unserved StepID = "Unserved"
	// StorageMoved means another version is the storage version.
	StorageMoved StepID = "StorageMoved"
	// Migrated means every object was rewritten and storedVersions no longer lists OLD.
	Migrated StepID = "Migrated"
	// ManagedFieldsClean means no object's managedFields names OLD.
	ManagedFieldsClean StepID = "ManagedFieldsClean"
	// Removed means OLD is no longer in spec.versions.
	Removed StepID = "Removed"
	// Conversion says what the conversion webhook and strategy can drop now.
	Conversion StepID = "Conversion"
)

// Status of a step.
type Status string

const (
	// Done means the step's condition holds already.
	Done Status = "done"
	// ToDo means retire can take the step (or measure what it needs).
	ToDo Status = "to do"
	// Blocked means the step cannot be taken; Command says what unblocks it.
	Blocked Status = "blocked"
	// Skipped means the check was skipped by a flag, which the output records.
	Skipped Status = "skipped"
	// Info is a reminder, nothing to do for retire.
	Info Status = "info"
)

// Step is one step of the plan.
type Step struct {
	Number int    `json:"number"`
	ID     StepID `json:"id"`
	Title  string `json:"title"`
	Status Status `json:"status"`
	// Message says why the step has its status, or what taking it does.
	Message string `json:"message"`
	// Run are the commands that unblock a blocked step, in order; Command
	// is their rendering (see lifecycle.Command.Render).
	Command string              `json:"command,omitempty"`
	Run     []lifecycle.Command `json:"run,omitempty"`
	// Evidence are the observations behind the status: client usage, the
	// API server's answers to the server-side dry runs of the step's write.
	Evidence []string `json:"evidence,omitempty"`
	// Checked is what the run that reported the step found for it before
	// taking anything (its status and message then, and the evidence), and
	// what it checked again later, in order; Did is what that run did to
	// take it. Both are empty in a plan that no run has executed.
	Checked []string `json:"checked,omitempty"`
	Did     []string `json:"did,omitempty"`
	// Undo reverses this step, when the run took it and stopped before the
	// end (only unserving changes what clients see: undone by serving OLD
	// again); UndoCommand is its rendering.
	Undo        []lifecycle.Command `json:"undo,omitempty"`
	UndoCommand string              `json:"undoCommand,omitempty"`

	// write is the CRD that taking the step writes (Unserved and Removed
	// when to do): the live CRD with the edits of the steps before it and
	// of this one, carrying the resourceVersion it was read at.
	write *apiextensionsv1.CustomResourceDefinition
}

// ObjectRef names one custom object (managedfields.ObjectRef, named here
// because Cluster and the plan speak of it).
type ObjectRef = managedfields.ObjectRef

// ObjectFailure is an object a write failed for, with the API server's
// message.
type ObjectFailure = managedfields.ObjectFailure

// Facts are what the caller measured on the cluster. Nil pointers and
// absent map entries mean not measured yet: the step that needs them is
// then to do ("measure"), never blocked on their account.
type Facts struct {
	// Usage is the client-usage assessment of OLD.
	Usage *usage.Assessment
	// SkipUsage records --skip-usage-check.
	SkipUsage bool
	// StaleManagedFields lists the objects whose managedFields name OLD.
	StaleManagedFields *[]ObjectRef
	// Writers is the managedFields source's report on OLD, looked at
	// while OLD is not served (the usage check then has nothing to count):
	// a manager that wrote through OLD inside the window or the history
	// span is a client, not a leftover, and step 6 does not relabel its
	// entries.
	Writers *usage.SourceReport
	// Writes are the API server's answers to the server-side dry runs of
	// the plan's CRD writes (Unserved, Removed), by step, made on the CRD
	// the plan is made from.
	Writes map[StepID]WriteCheck
	// MigrationCheck is the server-side dry run of the migration.
	MigrationCheck *MigrationCheck
	// Objects is the number of objects of the CRD, counted when
	// status.storedVersions no longer lists OLD while spec.versions still
	// does (nil until counted): with none, nothing can be stored at OLD.
	Objects *int
	// MigratedInRun is true once this run's migration rewrote every object
	// at the storage version and storedVersions lacks OLD: the proof that
	// no object is stored at OLD, which storedVersions alone is not.
	MigratedInRun bool
	// Migrate (--migrate) lets retire run the migration;
	// CleanManagedFields (--clean-managed-fields) lets it rewrite
	// managedFields entries.
	Migrate, CleanManagedFields bool
	// VersionOrder is the order of the CRD's versions the user gave,
	// oldest first (--version-order): it tells whether OLD is older than
	// the storage version when their names do not (see lifecycle.Order).
	VersionOrder []string
	// Carried are the flags the run was given that the retire commands
	// the plan prints carry (see Options.Carried).
	Carried []lifecycle.Flag
	// References is the inventory of the owner references and scale
	// targets that name OLD
	// (every listable resource read); SkipReferences records
	// --skip-reference-check, RepairReferences --repair-references, which
	// lets retire rewrite them to the storage version.
	References                       *references.Inventory
	SkipReferences, RepairReferences bool
	// AdmissionRules are the rules of the cluster's admission webhooks
	// and policies, read with References; AdmissionErr says why they
	// could not be read.
	AdmissionRules []references.AdmissionRule
	AdmissionErr   error
	// ReferenceRefusals are the API server's answers that refused the
	// rewrite of a reference in the server-side dry run of
	// --repair-references ("RESOURCE NAMESPACE/NAME FIELD: message").
	ReferenceRefusals []string
}

// WriteCheck is the API server's answer to the server-side dry run of a
// CRD write.
type WriteCheck struct {
	// Refused is the API server's message when it refused the write; ""
	// when it accepted it.
	Refused string `json:"refused,omitempty"`
	// Deferred: the API server refused the write only because
	// status.storedVersions still lists a version that the write removes
	// from spec.versions, which the migration (step 5) trims. The API
	// server validates that before admission runs, so admission has not
	// answered yet; retire asks again once storedVersions is trimmed,
	// before the removal.
	Deferred bool `json:"deferred,omitempty"`
}

// MigrationCheck is the server-side dry run of the migration: every object
// sent the no-op update the migration sends, with dryRun=All.
type MigrationCheck struct {
	// Total objects listed; Failed of them were refused, Failures names
	// them (at most a few).
	Total, Failed int64
	Failures      []ObjectFailure
	// Error is why the dry run could not go through the objects.
	Error string
	// TrimRefused is why the API server refused the dry run of the trim of
	// status.storedVersions that ends the migration.
	TrimRefused string `json:"trimRefused,omitempty"`
}

// Next is the step retire stops at or takes: the first blocked step when
// any is blocked (retire then refuses before changing anything, since it
// could not finish), else the first step to do; nil when the workflow is
// complete.
func Next(steps []Step) *Step {
	for _, want := range []Status{Blocked, ToDo} {
		for i := range steps {
			if steps[i].Status == want {
				return &steps[i]
			}
		}
	}
	return nil
}

// Rendered returns steps with each Command (and UndoCommand) rendered
// again from Run (Undo) with the connection flags global (see
// lifecycle.Command.Render).
func Rendered(steps []Step, global []lifecycle.Flag) []Step {
	out := slices.Clone(steps)
	for i := range out {
		out[i].Command = lifecycle.RenderAll(out[i].Run, global)
		out[i].UndoCommand = lifecycle.RenderAll(out[i].Undo, global)
	}
	return out
}
