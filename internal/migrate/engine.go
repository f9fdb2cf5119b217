package migrate

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// Engine runs migrations against one API server: it reads and guards the
// CRD through CRDs and lists and writes the objects through Metadata (see
// metadata.ConfigFor: protobuf PartialObjectMetadata answers).
type Engine struct {
	CRDs     apiextensionsclient.CustomResourceDefinitionInterface
	Metadata metadata.Interface
	// FlowControl, when set, observes the responses to the requests of
	// CRDs and Metadata (cluster.WithFlowControl) and tells where APF put
	// them and how many were 429s.
	FlowControl FlowControl
}

// FlowControl is what the engine needs of cluster.FlowControl.
type FlowControl interface {
	TooManyRequests() int64
	Latest() (cluster.Landing, bool)
	Resolve(context.Context, cluster.Landing) cluster.Named
}

// ExemptWarning is the warning of a run whose requests APF exempts.
const ExemptWarning = "this run bypasses API Priority and Fairness (priority level exempt); other clients are not protected"

// Run migrates the objects of the CRD named name. It returns an error only
// when the run could not proceed (the CRD is missing, the storage version
// is not served, the list failed for good); per-object failures are in the
// Result.
func (e *Engine) Run(ctx context.Context, name string, opts Options) (*Result, error) {
	start := time.Now()
	crd, err := e.CRDs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	storage := lifecycle.StorageVersion(crd)
	if storage == "" {
		return nil, fmt.Errorf("%s has no single storage version", name)
	}
	if v := lifecycle.FindVersion(crd, storage); !v.Served {
		// Writing through another version would convert every object to it
		// and back, pruning what that version's schema lacks.
		return nil, fmt.Errorf("%w: %s is the storage version of %s but not served; serve it first (kubectl crdversion serve %s %s)", ErrStorageNotServed, storage, name, name, storage)
	}
	res := &Result{Engine: EngineClient, CRD: name, StorageVersion: storage, Failures: []Failure{}, DryRun: opts.DryRun != lifecycle.DryRunNone}
	var tooManyAtStart int64
	if e.FlowControl != nil {
		// The CRD's read was classified like every request of the run.
		tooManyAtStart = e.FlowControl.TooManyRequests()
		res.PriorityAndFairness = e.whereLanded(ctx, nil)
	}
	res.Trim.Before = append([]string{}, crd.Status.StoredVersions...)

	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: storage, Resource: crd.Spec.Names.Plural}
	r := &run{
		engine: e, opts: opts, res: res, gvr: gvr, apf: res.PriorityAndFairness,
		namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		seen:       map[types.UID]struct{}{},
		crdUID:     crd.UID,
		generation: crd.Generation,
		crd:        crd,
	}
	if err := CheckCheckpointPath(opts.Checkpoint); err != nil {
		return nil, err
	}
	cp, err := loadCheckpoint(opts.Checkpoint, crd, storage)
	if err != nil {
		return nil, err
	}
	if cp != nil {
		res.Resumed = true
		r.counts, r.saved = cp.Counts, cp.Counts
		r.continueToken = cp.Continue
		r.base = cp.Counts.Total
		r.done.Store(cp.Counts.Total)
	}
	r.limiter = fixedLimiter(max(1, opts.Concurrency))
	if opts.MaxLatency > 0 && opts.DryRun != lifecycle.DryRunClient {
		r.limiter = newAdaptiveLimiter(max(1, opts.Concurrency), opts.MaxLatency)
	}
	if err := r.pass(ctx); err != nil {
		return nil, err
	}
	r.settle(ctx)
	r.fill()
	if e.FlowControl != nil {
		res.TooManyRequests = e.FlowControl.TooManyRequests() - tooManyAtStart
		res.PriorityAndFairness = e.whereLanded(ctx, res.PriorityAndFairness)
	}
	if apf := res.PriorityAndFairness; apf != nil && apf.Exempt {
		res.Warnings = append(res.Warnings, ExemptWarning)
	}
	res.Elapsed = time.Since(start)
	res.ElapsedSeconds = res.Elapsed.Seconds()
	if s := res.Elapsed.Seconds(); s > 0 {
		res.ObjectsPerSecond = float64(res.Total) / s
	}
	res.Trim = e.Trim(ctx, name, storage, crd.Generation, res, opts)
	if res.Complete && opts.Checkpoint != "" && !res.DryRun {
		removeCheckpoint(opts.Checkpoint)
	}
	return res, nil
}

// whereLanded resolves where the latest classified response landed; it
// returns known when that is where known already landed.
func (e *Engine) whereLanded(ctx context.Context, known *PriorityAndFairness) *PriorityAndFairness {
	l, ok := e.FlowControl.Latest()
	if !ok {
		return known
	}
	if known != nil && known.FlowSchemaUID == l.FlowSchemaUID && known.PriorityLevelUID == l.PriorityLevelUID {
		return known
	}
	n := e.FlowControl.Resolve(ctx, l)
	return &PriorityAndFairness{
		FlowSchema: n.FlowSchema, FlowSchemaUID: l.FlowSchemaUID,
		PriorityLevel: n.PriorityLevel, PriorityLevelUID: l.PriorityLevelUID,
		Exempt: n.Exempt, Unresolved: n.Unresolved,
	}
}

type item struct {
	namespace, name string
	uid             types.UID
	resourceVersion string
	page            *page
}

// page tracks the objects of one list page still in flight, so that the
// checkpoint only ever records pages whose every object is done.
type page struct {
	pending   atomic.Int64
	next      string // the continue token after this page
	done      chan struct{}
	finished  atomic.Bool
	closeOnce sync.Once
	counts    Counts // of this page's objects handled so far; guarded by run.mu
}

func (p *page) close() { p.closeOnce.Do(func() { close(p.done) }) }

type run struct {
	engine        *Engine
	opts          Options
	res           *Result
	gvr           schema.GroupVersionResource
	namespaced    bool
	continueToken string
	crdUID        types.UID
	generation    int64                                     // the CRD's metadata.generation when the run started
	crd           *apiextensionsv1.CustomResourceDefinition // as read when the run started
	base          int64                                     // objects counted by the run a checkpoint resumes
	limiter       limiter
	apf           *PriorityAndFairness // where the run landed, as known at its start
	retries       atomic.Int64
	limitSum      atomic.Int64 // the sum over writes of the limit when each started
	latMu         sync.Mutex
	latencies     []time.Duration // of every write attempt

	mu     sync.Mutex
	counts Counts
	// saved is what the checkpoint records: the counts of the resumed run
	// plus those of the pages completed in order, never the objects of a
	// page still in flight, which a resumed run handles again.
	saved    Counts
	failures []Failure
	// inFlight are the objects whose write was sent when the run was
	// interrupted, for settle.
	inFlight []item
	seen     map[types.UID]struct{}
	total    atomic.Int64
	done     atomic.Int64
	// progressMu serializes the Progress calls, so that the last one sees
	// every object done before it (each call reads done under it).
	progressMu sync.Mutex
}
