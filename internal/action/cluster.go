package action

import (
	"context"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/fairness"
	"github.com/crdversion/kubectl-crdversion/internal/loss"
	"github.com/crdversion/kubectl-crdversion/internal/migrate"
	"github.com/crdversion/kubectl-crdversion/internal/retire"
	"github.com/crdversion/kubectl-crdversion/internal/svm"
)

// Cluster is everything the actions ask of the cluster: the union of the
// narrow interfaces each action takes (helm's pkg/action Configuration in
// one interface). Live implements it over a *cluster.Client; the fake of
// package actiontest implements it for unit tests.
type Cluster interface {
	Reader
	Writer
	StatusCluster
	AddVersionCluster
	PromoteCluster
	MigrateCluster
	RetireCluster
}

// LossChecker reads objects at two versions and compares them (see
// cluster.Client.CheckObjects), and lists the admission rules that decide
// whether a read is enough (loss.Checker).
type LossChecker = loss.Checker

// Engines run a migration: the client migrate engine (migrate.Engine) and
// the server engine (svm.Runner), over the same API server.
type Engines interface {
	// RunClientEngine runs the client migrate engine on the CRD named
	// name (migrate.Engine.Run).
	RunClientEngine(ctx context.Context, name string, o migrate.Options) (*migrate.Result, error)
	// ServerEngineVersion is the storagemigration.k8s.io version the
	// server engine uses (svm.Runner.Version).
	ServerEngineVersion() (string, error)
	// RunServerEngine migrates crd through a StorageVersionMigration at
	// that version (svm.Runner.Run).
	RunServerEngine(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string, o svm.Options) (*migrate.Result, error)
	// TooManyRequests is the number of 429 answers so far; observed is
	// false when the client does not observe them (no cluster.FlowControl).
	TooManyRequests() (n int64, observed bool)
}

// MigrateCluster is what migrate asks of the cluster: the permission
// check, the wait until its storage version is served, the loss
// measurement, and the engines.
type MigrateCluster interface {
	PermissionChecker
	LossChecker
	Engines
	// The run's own priority level (MigrateOptions.OwnPriorityLevel).
	fairness.Cluster
	// WaitStorageVersion waits until the API server serves the CRD's
	// storage version as read (cluster.Client.WaitStorageVersion).
	WaitStorageVersion(ctx context.Context, name string, timeout time.Duration) error
}

// RetireCluster is what the retire adapter (Retire) asks of the cluster:
// migrate's, and the CRD's reads and writes, and the managedFields listing
// and clean-up.
type RetireCluster interface {
	MigrateCluster
	// GetCRD reads the CRD by its full name.
	GetCRD(ctx context.Context, name string) (*apiextensionsv1.CustomResourceDefinition, error)
	// UpdateCRD writes crd pinned to its resourceVersion.
	UpdateCRD(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, opts cluster.WriteOptions) (*apiextensionsv1.CustomResourceDefinition, error)
	// WaitServed waits until the CRD's served versions are in discovery.
	WaitServed(ctx context.Context, name string, timeout time.Duration) error
	// CountObjects counts the objects of crd through version, pageSize
	// per page.
	CountObjects(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string, pageSize int64) (int, error)
	// StaleManagedFields lists, pageSize per page, the objects whose
	// managedFields name version.
	StaleManagedFields(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string, pageSize int64) ([]retire.ObjectRef, error)
	// CleanManagedFields rewrites the stale entries of objs, concurrency
	// writes in flight.
	CleanManagedFields(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string, objs []retire.ObjectRef, concurrency int, fieldManager string) (*retire.ManagedFieldsCleanup, error)
}

// Live is Cluster over one API server: the reads and writes of its
// cluster.Client, and the two migrate engines that run over that client.
type Live struct {
	*cluster.Client
}

var _ Cluster = Live{}

// RunClientEngine runs the client migrate engine over the client, told
// where API Priority and Fairness puts its requests when the client
// observes it.
func (l Live) RunClientEngine(ctx context.Context, name string, o migrate.Options) (*migrate.Result, error) {
	e := &migrate.Engine{CRDs: l.CRDs, Metadata: l.Metadata}
	if l.FlowControl != nil {
		e.FlowControl = l.FlowControl
	}
	return e.Run(ctx, name, o)
}

// ServerEngineVersion is svm.Runner.Version over the client.
func (l Live) ServerEngineVersion() (string, error) {
	return (&svm.Runner{Client: l.Client}).Version()
}

// RunServerEngine is svm.Runner.Run over the client.
func (l Live) RunServerEngine(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string, o svm.Options) (*migrate.Result, error) {
	return (&svm.Runner{Client: l.Client}).Run(ctx, crd, version, o)
}

// TooManyRequests is the client's FlowControl count of 429 answers.
func (l Live) TooManyRequests() (int64, bool) {
	if l.FlowControl == nil {
		return 0, false
	}
	return l.FlowControl.TooManyRequests(), true
}
