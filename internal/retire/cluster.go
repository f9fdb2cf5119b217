package retire

import (
	"context"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/access"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/managedfields"
	"github.com/crdversion/kubectl-crdversion/internal/references"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

// Cluster is what the executor needs of one cluster. The one
// implementation over a real API server is action.Retire; tests use
// fakes. Every method works on the CRD as the executor last read it.
type Cluster interface {
	// GetCRD reads the CRD named name.
	GetCRD(ctx context.Context, name string) (*apiextensionsv1.CustomResourceDefinition, error)
	// UpdateCRD writes crd, pinned to crd.ResourceVersion: a concurrent
	// change fails (nothing written) with an error that says to re-run.
	// With lifecycle.DryRunServer it is a server-side dry run (dryRun=All) on the same
	// path: validated and admitted, persisted nowhere. A write the API
	// server refuses (validation, admission, authorization) fails with a
	// *WriteRefusedError. It returns the CRD the API server answered with.
	UpdateCRD(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, dryRun lifecycle.DryRun) (*apiextensionsv1.CustomResourceDefinition, error)
	// WaitServed waits, bounded, until the API server serves the CRD's
	// served versions as last written (discovery).
	WaitServed(ctx context.Context, name string) error
	// ClientUsage assesses how clients use version of crd from every
	// source (every API server instance's /metrics or Prometheus,
	// managedFields, audit logs), without requesting version itself.
	// What a source could not see is in the assessment (an Unknown
	// verdict), never an error; an error is one line (an audit log that is
	// not one, the end of ctx).
	ClientUsage(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string) (*usage.Assessment, error)
	// RecentWriters is the managedFields source of the usage check on
	// version of crd: the field managers whose entries name it, and
	// whether each wrote inside the usage window or history span
	// (usage.AssessManagedFields). Nil when the usage check is skipped.
	RecentWriters(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string) (*usage.SourceReport, error)
	// CountObjects counts the objects of crd (listed through its storage
	// version, metadata only).
	CountObjects(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) (int, error)
	// StaleManagedFields lists the objects of crd whose managedFields have
	// an entry naming version, without requesting version itself.
	StaleManagedFields(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string) ([]ObjectRef, error)
	// CleanManagedFields rewrites the managedFields entries of objs that
	// name version so that they name the storage version. Per-object
	// failures are in the result.
	CleanManagedFields(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string, objs []ObjectRef) (*ManagedFieldsCleanup, error)
	// FindReferences finds every owner reference and scale target that names
	// version of crd, reading every listable resource's metadata; what it
	// could not read is in the inventory (Unseen), not an error.
	FindReferences(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string) (*references.Inventory, error)
	// AdmissionRules lists the rules of the cluster's admission webhooks
	// and policies (cluster.Client.AdmissionRules).
	AdmissionRules(ctx context.Context) ([]references.AdmissionRule, error)
	// RepairReferences rewrites each dependent's reference to name
	// apiVersion to (references.RepairAll; with lifecycle.DryRunServer each
	// patch is a server-side dry run); the outcome of each is in the
	// result.
	RepairReferences(ctx context.Context, deps []references.Dependent, to string, dryRun lifecycle.DryRun) ([]references.Repair, error)
	// Missing returns which of needs the user lacks; none when the API
	// server cannot tell (its own answers then decide).
	Missing(ctx context.Context, needs []access.Need) []access.Need
	// Migrate rewrites every object of crd at the storage version and
	// trims status.storedVersions (kubectl crdversion migrate). With
	// lifecycle.DryRunServer every write is a server-side dry run and nothing is persisted
	// or trimmed. Per-object failures are in the result; an error means
	// the migration could not go through the objects. old is the version
	// being retired: objects may be stored at it whatever
	// status.storedVersions claims, so what the rewrite loses is measured
	// there too.
	Migrate(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, old string, dryRun lifecycle.DryRun) (*Migration, error)
	// MigrateNeeds are the permissions Migrate of crd, retiring old,
	// needs: migrate's own, and those of the loss measurement it runs
	// first (create on the resource for its dry-run creates, when it
	// checks the objects as new at the storage version).
	MigrateNeeds(crd *apiextensionsv1.CustomResourceDefinition, old string) []access.Need
}

// WriteRefusedError is a write the API server refused: its validation,
// admission or authorization answered about the write itself. It is the
// API server's answer, which the executor reads (a dry run's write check,
// a removal deferred until the trim), not a refusal of this tool: those
// are all *lifecycle.RefusalError, decided before any write, with a short
// error line and their details above it. Message is the API server's
// message, Fields the field paths of its causes
// (metav1.StatusDetails.Causes), Err the error as the cluster returned it.
type WriteRefusedError struct {
	Message string
	Fields  []string
	Err     error
}

func (e *WriteRefusedError) Error() string { return e.Message }

func (e *WriteRefusedError) Unwrap() error { return e.Err }

// storedVersionsOnly reports whether every cause is in
// status.storedVersions: the refusal of a removal while storedVersions
// still lists the version (apiextensions validation, which runs before
// admission).
func (e *WriteRefusedError) storedVersionsOnly() bool {
	for _, f := range e.Fields {
		if !strings.HasPrefix(f, "status.storedVersions") {
			return false
		}
	}
	return len(e.Fields) > 0
}

// Migration is the outcome of Cluster.Migrate.
type Migration struct {
	// StorageVersion the objects were rewritten at.
	StorageVersion string
	// Counts of the outcomes per object.
	Total, Rewritten, Current, Conflicts, Deleted, Failed int64
	// Failures name the objects that failed, with the API server's message.
	Failures []ObjectFailure
	// Complete: every object was listed.
	Complete bool
	// StoredBefore and StoredAfter are status.storedVersions before the
	// run and at its end; Trimmed is true when the run trimmed it, Reason
	// says why it did not.
	StoredBefore, StoredAfter []string
	Trimmed                   bool
	Reason                    string
	// TrimRefused, in a server-side dry run, is why the API server refused
	// the dry run of the trim (validation or admission of the status write).
	TrimRefused string
	// Report is the migration engine's own report (a *migrate.Result from
	// action.Retire), which retire does not read: it is passed through to
	// Result.Migration and the EventMigrated event for the caller to print
	// and record.
	Report any
}

// ManagedFieldsCleanup is the outcome of Cluster.CleanManagedFields.
type ManagedFieldsCleanup = managedfields.Cleanup
