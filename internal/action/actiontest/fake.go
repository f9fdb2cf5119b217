// Package actiontest is a fake cluster for the unit tests of package action:
// Fake implements action.Cluster with a log of every call and scripted
// answers, the way retire's executor tests drive the executor (helm's
// actionConfigFixture is the model). It stands in for the API server only in
// the control flow of the actions; what the API server answers is tested in
// internal/e2e.
//
//	f := actiontest.New(crd)
//	f.Lacking = []access.Need{...}
//	_, err := action.Migrate(ctx, f, crd, opts)
//	if w := f.Writes(); len(w) > 0 { ... }
package actiontest

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdversion/kubectl-crdversion/internal/access"
	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/migrate"
	"github.com/crdversion/kubectl-crdversion/internal/references"
	"github.com/crdversion/kubectl-crdversion/internal/retire"
	"github.com/crdversion/kubectl-crdversion/internal/svm"
	"github.com/crdversion/kubectl-crdversion/internal/webhook"
)

// The calls a Fake logs (Fake.Calls). Calls about a version end in
// "@<version>"; CheckObjects logs Objects + "@<from>-><to>"; dry runs end
// in DryRunSuffix (a server-side dry run) or CountOnlySuffix (a client dry
// run of an engine).
const (
	Resolve           = "resolve"
	Get               = "get"
	Access            = "access"
	Update            = "update"
	AddStored         = "stored+" // + the versions, comma separated
	WaitServed        = "wait served"
	WaitStorage       = "wait storage"
	Objects           = "objects"
	ClientEngine      = "engine"
	ServerEngine      = "server engine"
	ServerVersion     = "server engine version"
	Service           = "service"
	FirstObject       = "first object"
	Count             = "count"
	ListManagedFields = "list managedFields"
	CleanManaged      = "clean managedFields"
	WhoAmI            = "whoami"
	CreateFlowSchema  = "create flowschema"
	CreateLevel       = "create prioritylevelconfiguration"
	DeleteFlowSchema  = "delete flowschema"
	DeleteLevel       = "delete prioritylevelconfiguration"

	DryRunSuffix    = "(dry run)"
	CountOnlySuffix = "(count only)"
)

// Fake is an action.Cluster: a live CRD whose resourceVersion counts the
// writes, a log of every call, and answers scripted by its fields. The zero
// values answer as a healthy cluster does: every permission held, the
// storage version served, no object lost, every migration complete.
type Fake struct {
	// Live is the CRD the cluster has: GetCRD and ResolveCRD return a copy,
	// UpdateCRD replaces its spec (not in a dry run).
	Live *apiextensionsv1.CustomResourceDefinition
	// Calls logs every call, in order (see the constants).
	Calls []string

	// Lacking are the permissions the user lacks (Missing).
	Lacking []access.Need
	// StorageNotServed, when set, is WaitStorageVersion's answer: the API
	// server does not serve the new storage version yet.
	StorageNotServed error
	// Checks answer CheckObjects by the version read at (its From); a
	// version not in the map answers that no object was listed.
	Checks map[string]*cluster.ObjectsCheck
	// RoundTrips answer WebhookRoundTrip (nil: a webhook this client
	// cannot call).
	RoundTrips *cluster.RoundTrips
	// Engine, when set, answers both engines' runs (server says which
	// one); by default a run is complete and trims storedVersions to the
	// storage version (unless a dry run or NoTrim).
	Engine func(server bool, o migrate.Options) (*migrate.Result, error)
	// ServerVersion is the storagemigration.k8s.io version served ("v1"
	// when empty).
	ServerVersion string
	// Observed makes TooManyRequests report TooMany, as a client with a
	// cluster.FlowControl does.
	Observed bool
	TooMany  int64
	// Stale are the objects whose managedFields name the version retired.
	Stale []retire.ObjectRef
	// RefuseWrite, when set, answers every CRD update (dry run or not).
	RefuseWrite error
	// Admission are the cluster's admission rules (AdmissionRules; none
	// by default).
	Admission []references.AdmissionRule
	// FlowSchemas and PriorityLevels are the names of the APF objects
	// that exist (created and deleted through the fairness.Cluster
	// methods); a request lands in the FlowSchema created last.
	FlowSchemas, PriorityLevels map[string]bool
	// Groups are WhoAmI's groups (its user is "alice").
	Groups []string
}

// WhoAmI is alice in Groups.
func (f *Fake) WhoAmI(context.Context) (string, []string, error) {
	f.log(WhoAmI)
	return "alice", f.Groups, nil
}

// CreatePriorityLevel records pl (not in a dry run); one of its name that
// exists is refused AlreadyExists, as the API server refuses it (a dry run
// too).
func (f *Fake) CreatePriorityLevel(_ context.Context, pl *flowcontrolv1.PriorityLevelConfiguration, dryRun bool) (string, error) {
	if f.PriorityLevels[pl.Name] {
		return "", apierrors.NewAlreadyExists(flowcontrolv1.Resource("prioritylevelconfigurations"), pl.Name)
	}
	if dryRun {
		f.log(CreateLevel + DryRunSuffix)
		return "", nil
	}
	f.log(CreateLevel)
	if f.PriorityLevels == nil {
		f.PriorityLevels = map[string]bool{}
	}
	f.PriorityLevels[pl.Name] = true
	return "uid-" + pl.Name, nil
}

// CreateFlowSchema records fs (not in a dry run); its uid is "uid-" and
// its name. One of its name that exists is refused AlreadyExists.
func (f *Fake) CreateFlowSchema(_ context.Context, fs *flowcontrolv1.FlowSchema, dryRun bool) (string, error) {
	if f.FlowSchemas[fs.Name] {
		return "", apierrors.NewAlreadyExists(flowcontrolv1.Resource("flowschemas"), fs.Name)
	}
	if dryRun {
		f.log(CreateFlowSchema + DryRunSuffix)
		return "", nil
	}
	f.log(CreateFlowSchema)
	if f.FlowSchemas == nil {
		f.FlowSchemas = map[string]bool{}
	}
	f.FlowSchemas[fs.Name] = true
	return "uid-" + fs.Name, nil
}

// DeleteFlowSchema forgets the FlowSchema name (its uid is not looked at).
func (f *Fake) DeleteFlowSchema(_ context.Context, name, _ string) (bool, error) {
	f.log(DeleteFlowSchema)
	found := f.FlowSchemas[name]
	delete(f.FlowSchemas, name)
	return found, nil
}

// DeletePriorityLevel forgets the PriorityLevelConfiguration name (its uid
// is not looked at).
func (f *Fake) DeletePriorityLevel(_ context.Context, name, _ string) (bool, error) {
	f.log(DeleteLevel)
	found := f.PriorityLevels[name]
	delete(f.PriorityLevels, name)
	return found, nil
}

// FlowSchemaOf is the uid of a FlowSchema that exists ("uid-exempt" when
// none does).
func (f *Fake) FlowSchemaOf(context.Context, schema.GroupVersionResource) (string, error) {
	for name := range f.FlowSchemas {
		return "uid-" + name, nil
	}
	return "uid-exempt", nil
}

// New is a Fake whose live CRD is a copy of crd.
func New(crd *apiextensionsv1.CustomResourceDefinition) *Fake {
	return &Fake{Live: crd.DeepCopy()}
}

func (f *Fake) log(call string) { f.Calls = append(f.Calls, call) }

// Called is the number of calls logged as call.
func (f *Fake) Called(call string) int {
	n := 0
	for _, c := range f.Calls {
		if c == call {
			n++
		}
	}
	return n
}

// Writes are the calls that sent a write, dry runs included: CRD updates,
// storedVersions additions, the engines' runs (also client dry runs: they
// run the engine) and managedFields clean-ups. The loss measurement
// (Objects) is not among them. A refusal before anything is written leaves
// this empty.
func (f *Fake) Writes() []string {
	return slices.DeleteFunc(slices.Clone(f.Calls), func(c string) bool { return !isWrite(c) })
}

func isWrite(call string) bool {
	for _, w := range []string{Update, AddStored, ClientEngine, ServerEngine + "(", CleanManaged} {
		if strings.HasPrefix(call, w) {
			return true
		}
	}
	return call == ServerEngine
}

func (f *Fake) bump() {
	rv, _ := strconv.Atoi(f.Live.ResourceVersion)
	f.Live.ResourceVersion = strconv.Itoa(rv + 1)
}

func dryRunSuffix(d lifecycle.DryRun) string {
	switch d {
	case lifecycle.DryRunClient:
		return CountOnlySuffix
	case lifecycle.DryRunServer:
		return DryRunSuffix
	}
	return ""
}

// ResolveCRD returns the live CRD.
func (f *Fake) ResolveCRD(context.Context, string) (*apiextensionsv1.CustomResourceDefinition, error) {
	f.log(Resolve)
	return f.Live.DeepCopy(), nil
}

// GetCRD returns the live CRD.
func (f *Fake) GetCRD(context.Context, string) (*apiextensionsv1.CustomResourceDefinition, error) {
	f.log(Get)
	return f.Live.DeepCopy(), nil
}

// Missing returns Lacking.
func (f *Fake) Missing(context.Context, []access.Need) ([]access.Need, bool) {
	f.log(Access)
	return f.Lacking, true
}

// UpdateCRD refuses with RefuseWrite when set; otherwise it takes crd's spec
// and bumps the resourceVersion, unless a dry run.
func (f *Fake) UpdateCRD(_ context.Context, crd *apiextensionsv1.CustomResourceDefinition, o cluster.WriteOptions) (*apiextensionsv1.CustomResourceDefinition, error) {
	f.log(Update + dryRunSuffix(o.DryRun))
	if f.RefuseWrite != nil {
		return nil, f.RefuseWrite
	}
	if o.DryRun == lifecycle.DryRunServer {
		out := f.Live.DeepCopy()
		out.Spec = *crd.Spec.DeepCopy()
		return out, nil
	}
	f.Live.Spec = *crd.Spec.DeepCopy()
	f.bump()
	return f.Live.DeepCopy(), nil
}

// AddStoredVersions adds versions to the live CRD's storedVersions.
func (f *Fake) AddStoredVersions(_ context.Context, _ string, versions []string, _ string) (*apiextensionsv1.CustomResourceDefinition, error) {
	f.log(AddStored + strings.Join(versions, ","))
	for _, v := range versions {
		if !slices.Contains(f.Live.Status.StoredVersions, v) {
			f.Live.Status.StoredVersions = append(f.Live.Status.StoredVersions, v)
		}
	}
	f.bump()
	return f.Live.DeepCopy(), nil
}

// WaitServed returns at once.
func (f *Fake) WaitServed(context.Context, string, time.Duration) error {
	f.log(WaitServed)
	return nil
}

// WaitStorageVersion returns StorageNotServed.
func (f *Fake) WaitStorageVersion(context.Context, string, time.Duration) error {
	f.log(WaitStorage)
	return f.StorageNotServed
}

// CheckObjects returns Checks[o.From], or a check that listed nothing.
func (f *Fake) CheckObjects(_ context.Context, _ *apiextensionsv1.CustomResourceDefinition, o cluster.CheckObjectsOptions) (*cluster.ObjectsCheck, error) {
	f.log(Objects + "@" + o.From + "->" + o.To)
	if c, ok := f.Checks[o.From]; ok {
		return c, nil
	}
	return &cluster.ObjectsCheck{From: o.From, To: o.To}, nil
}

// WebhookRoundTrip returns RoundTrips, or a *webhook.NotReachableError
// when it is nil (not logged: reads).
func (f *Fake) WebhookRoundTrip(context.Context, *apiextensionsv1.CustomResourceDefinition, string, string, int64, time.Duration) (*cluster.RoundTrips, error) {
	if f.RoundTrips == nil {
		return nil, &webhook.NotReachableError{Address: "10.0.0.7:8443", Err: errors.New("i/o timeout")}
	}
	return f.RoundTrips, nil
}

// CRDAt answers that the CRD's history is not kept (not logged: a read).
func (f *Fake) CRDAt(context.Context, string, string) (*apiextensionsv1.CustomResourceDefinition, error) {
	return nil, nil
}

// AdmissionRules returns Admission (not logged: a read).
func (f *Fake) AdmissionRules(context.Context) ([]references.AdmissionRule, error) {
	return f.Admission, nil
}

// RunClientEngine runs Engine, or completes.
func (f *Fake) RunClientEngine(_ context.Context, _ string, o migrate.Options) (*migrate.Result, error) {
	f.log(ClientEngine + dryRunSuffix(o.DryRun))
	return f.run(false, o)
}

// ServerEngineVersion returns ServerVersion, "v1" when empty.
func (f *Fake) ServerEngineVersion() (string, error) {
	f.log(ServerVersion)
	if f.ServerVersion == "" {
		return "v1", nil
	}
	return f.ServerVersion, nil
}

// RunServerEngine runs Engine, or completes.
func (f *Fake) RunServerEngine(_ context.Context, _ *apiextensionsv1.CustomResourceDefinition, _ string, o svm.Options) (*migrate.Result, error) {
	f.log(ServerEngine + dryRunSuffix(o.DryRun))
	return f.run(true, migrate.Options{DryRun: o.DryRun, NoTrim: o.NoTrim, FieldManager: o.FieldManager})
}

// run is the engines' answer: Engine's, or a complete run that trims
// storedVersions to the storage version unless a dry run or NoTrim.
func (f *Fake) run(server bool, o migrate.Options) (*migrate.Result, error) {
	if f.Engine != nil {
		return f.Engine(server, o)
	}
	storage := lifecycle.StorageVersion(f.Live)
	engine := migrate.EngineClient
	if server {
		engine = migrate.EngineServer
	}
	res := &migrate.Result{Engine: engine, CRD: f.Live.Name, StorageVersion: storage, Failures: []migrate.Failure{},
		Complete: true, DryRun: o.DryRun != lifecycle.DryRunNone}
	res.Trim.Before = slices.Clone(f.Live.Status.StoredVersions)
	if !res.DryRun && !o.NoTrim {
		f.Live.Status.StoredVersions = []string{storage}
		f.bump()
		res.Trim.Trimmed, res.Trim.By = true, migrate.TrimmedByUs
	}
	res.Trim.After = slices.Clone(f.Live.Status.StoredVersions)
	return res, nil
}

// TooManyRequests returns TooMany and Observed.
func (f *Fake) TooManyRequests() (int64, bool) { return f.TooMany, f.Observed }

// WebhookService answers that the Service does not exist.
func (f *Fake) WebhookService(_ context.Context, _, name string) (*corev1.Service, []discoveryv1.EndpointSlice, error) {
	f.log(Service)
	return nil, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "services"}, name)
}

// FirstObject answers that no object is stored.
func (f *Fake) FirstObject(_ context.Context, _ *apiextensionsv1.CustomResourceDefinition, version string) (*unstructured.Unstructured, error) {
	f.log(FirstObject + "@" + version)
	return nil, nil
}

// CountObjects counts the objects listed by Checks[version], 0 without.
func (f *Fake) CountObjects(_ context.Context, _ *apiextensionsv1.CustomResourceDefinition, version string, _ int64) (int, error) {
	f.log(Count + "@" + version)
	if c, ok := f.Checks[version]; ok {
		return c.Listed, nil
	}
	return 0, nil
}

// StaleManagedFields returns Stale.
func (f *Fake) StaleManagedFields(_ context.Context, _ *apiextensionsv1.CustomResourceDefinition, version string, _ int64) ([]retire.ObjectRef, error) {
	f.log(ListManagedFields + "@" + version)
	return slices.Clone(f.Stale), nil
}

// CleanManagedFields rewrites every object of objs and empties Stale.
func (f *Fake) CleanManagedFields(_ context.Context, _ *apiextensionsv1.CustomResourceDefinition, _ string, objs []retire.ObjectRef, _ int, _ string) (*retire.ManagedFieldsCleanup, error) {
	f.log(CleanManaged)
	f.Stale = nil
	return &retire.ManagedFieldsCleanup{Rewritten: len(objs), Relabeled: len(objs)}, nil
}
