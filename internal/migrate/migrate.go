// Package migrate rewrites every stored object of a CustomResourceDefinition
// at its current storage version and then, under a guard, trims
// status.storedVersions to that version: step 4 of the Kubernetes task page
// "Versions in CustomResourceDefinitions" ("upgrade existing objects to a new
// stored version", option 2). See docs/migrate.md.
//
// Each object gets a no-op JSON merge patch that names its metadata.uid and
// metadata.resourceVersion, sent through the storage version:
//
//	{"metadata":{"uid":"<uid>","resourceVersion":"<rv>"}}
//
// The API server decodes the stored object, applies the (empty) change and
// stores it again, encoded at the current storage version; when those bytes
// equal what is stored, the storage layer skips the write and the
// resourceVersion stays — the object was already current. The uid and
// resourceVersion make the patch a precondition: it can never create an
// object (a patch of a missing object is 404), never touch an object
// re-created under the same name, and never overwrite a concurrent write
// (409 Conflict, after which the object is stored at the current version
// anyway). Only metadata is listed, so a 100k-object run reads names and
// versions, not whole objects.
package migrate

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/retry"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/migrate/result"
)

// The values of a run live in package result, where report and view can
// name them without importing the engine; these are their names here.
type (
	Outcome             = result.Outcome
	Progress            = result.Progress
	Failure             = result.Failure
	Counts              = result.Counts
	Trim                = result.Trim
	ServerMigration     = result.ServerMigration
	Result              = result.Result
	Measurement         = result.Measurement
	PriorityAndFairness = result.PriorityAndFairness
	Concurrency         = result.Concurrency
)

// The outcomes of one object (see result.Outcome).
const (
	Rewritten = result.Rewritten
	Current   = result.Current
	Conflict  = result.Conflict
	Deleted   = result.Deleted
	Failed    = result.Failed
	Accepted  = result.Accepted
	Listed    = result.Listed
)

// Who trimmed storedVersions (Trim.By), and the engines of a run
// (Result.Engine).
const (
	TrimmedByUs     = result.TrimmedByUs
	TrimmedByServer = result.TrimmedByServer
	EngineClient    = result.EngineClient
	EngineServer    = result.EngineServer
)

// Options tune a run. The zero value is not valid; start from DefaultOptions.
type Options struct {
	// ChunkSize is the page size of the list (limit).
	ChunkSize int64
	// Concurrency is the number of writes in flight: exactly that many
	// when MaxLatency is 0, at most that many otherwise.
	Concurrency int
	// MaxLatency is the latency budget of the run's writes: when it is
	// positive, an adaptive limiter (see limit.go) keeps the number of
	// writes in flight between 1 and Concurrency such that the p90 latency
	// of recent writes, measured by this process from request to answer,
	// stays within it — the API server's latency for everyone else rises
	// with the load this run puts on it. 0 writes at the fixed
	// Concurrency, as fast as the API server takes it (--max-speed).
	MaxLatency time.Duration
	// Retries is how often a write that failed with a server error (5xx) or a
	// timeout is retried, with exponential backoff from RetryDelay. 429 Too
	// Many Requests is retried by client-go itself, honouring Retry-After.
	Retries    int
	RetryDelay time.Duration
	// Unreachable is how long a write keeps being retried while the API
	// server cannot be reached at all (connection refused or reset, a
	// connection lost mid-request), as during a control-plane restart or a
	// load balancer failover. These retries do not count against Retries.
	Unreachable time.Duration
	// DryRun sends the writes with dryRun=All: every object is checked
	// (conversion, validation, admission) and nothing is persisted or trimmed.
	DryRun bool
	// CountOnly lists the objects without writing (--dry-run=client).
	CountOnly bool
	// NoTrim skips the storedVersions trim.
	NoTrim bool
	// FieldManager names the writer.
	FieldManager string
	// Checkpoint is a file recording progress after each completed page;
	// a run with the same file resumes after the last completed page.
	Checkpoint string
	// Progress, when set, is called after every object with where the run
	// stands, one call at a time (the last one sees every object done). It
	// must be cheap: the writers wait for it.
	Progress func(Progress)
}

// DefaultOptions are the defaults of kubectl crdversion migrate.
func DefaultOptions() Options {
	return Options{ChunkSize: cluster.ChunkSize, Concurrency: 64, MaxLatency: DefaultMaxLatency, Retries: 5, RetryDelay: 200 * time.Millisecond, Unreachable: 2 * time.Minute, FieldManager: "kubectl-crdversion"}
}

// DefaultMaxLatency is the default latency budget of a run's writes
// (Options.MaxLatency); see docs/performance.md for how it was chosen.
const DefaultMaxLatency = 50 * time.Millisecond

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

// ErrStorageNotServed refuses a run whose writes would have to go through a
// version other than the storage version.
var ErrStorageNotServed = errors.New("the storage version is not served")

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
	res := &Result{Engine: EngineClient, CRD: name, StorageVersion: storage, Failures: []Failure{}, DryRun: opts.DryRun || opts.CountOnly}
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
	if opts.MaxLatency > 0 && !opts.CountOnly {
		r.limiter = newAdaptiveLimiter(max(1, opts.Concurrency), opts.MaxLatency)
	}
	if err := r.pass(ctx); err != nil {
		return nil, err
	}
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
	seen     map[types.UID]struct{}
	total    atomic.Int64
	done     atomic.Int64
	// progressMu serializes the Progress calls, so that the last one sees
	// every object done before it (each call reads done under it).
	progressMu sync.Mutex
}

// pass lists every object (metadata only, page by page) and writes each
// one with bounded concurrency. Listing runs ahead of the writes by at most
// one page.
func (r *run) pass(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	items := make(chan item, r.opts.ChunkSize)
	var wg sync.WaitGroup
	for i := 0; i < max(1, r.opts.Concurrency); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range items {
				o, msg := r.migrate(ctx, it)
				r.record(it, o, msg)
				if it.page.pending.Add(-1) == 0 && it.page.finished.Load() {
					it.page.close()
				}
			}
		}()
	}

	pages := make(chan *page, 2)
	var cpErr error
	cpDone := make(chan struct{})
	go func() { // checkpoint pages in order as they complete
		defer close(cpDone)
		for p := range pages {
			select {
			case <-p.done:
			case <-ctx.Done():
				continue // interrupted: pages not fully handled are not recorded
			}
			if ctx.Err() == nil && r.opts.Checkpoint != "" && !r.res.DryRun {
				if err := r.saveCheckpoint(p); err != nil && cpErr == nil {
					cpErr = err
				}
			}
		}
	}()

	listErr := r.list(ctx, items, pages)
	close(items)
	wg.Wait()
	close(pages)
	<-cpDone
	if listErr != nil {
		if ctx.Err() != nil && errors.Is(listErr, context.Canceled) {
			return nil // interrupted: not complete, the checkpoint stays
		}
		if unreadable, truncated := unreadableObjects(listErr, r.gvr); len(unreadable) > 0 {
			// The API server cannot read some stored objects (typically a
			// conversion webhook failing for them), so the list stops there:
			// report them by name; the run is not complete.
			r.mu.Lock()
			for _, name := range unreadable {
				r.counts.Total++
				r.counts.Failed++
				r.failures = append(r.failures, Failure{Object: name, Message: "cannot be read from storage: " + apiMessageOf(listErr)})
			}
			if truncated {
				r.res.Warnings = append(r.res.Warnings, fmt.Sprintf("the API server stopped naming the objects it cannot read after %d; more may be unreadable, and the list stopped there", len(unreadable)))
			}
			r.mu.Unlock()
			return nil
		}
		return listErr
	}
	if cpErr != nil {
		return fmt.Errorf("writing the checkpoint: %w", cpErr)
	}
	r.res.Complete = ctx.Err() == nil
	return nil
}

// list pages through the objects, starting at the checkpoint's continue
// token. When a continue token expires (410 Gone), listing restarts from the
// beginning and skips the objects already handed out, so none is skipped.
func (r *run) list(ctx context.Context, items chan<- item, pages chan<- *page) error {
	res := r.engine.Metadata.Resource(r.gvr)
	token := r.continueToken
	for {
		var list *metav1.PartialObjectMetadataList
		// Right after an edit of the CRD (a repair that restores a
		// version) the API server may still serve its earlier state and
		// fail to read objects stored at the restored version: wait,
		// bounded, until it serves the CRD that was read.
		err := retry.OnError(cluster.NotYetServed, func(err error) bool {
			return ctx.Err() == nil && cluster.StaleVersion(r.crd, err)
		}, func() error {
			return retry.OnError(listBackoff, listRetriable, func() error {
				var err error
				list, err = res.List(ctx, metav1.ListOptions{Limit: r.opts.ChunkSize, Continue: token})
				return err
			})
		})
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			if token == r.continueToken && r.res.Resumed && !r.res.Restarted {
				r.restart()
			}
			token = ""
			continue
		}
		if err != nil {
			return err
		}
		p := &page{next: list.Continue, done: make(chan struct{})}
		var batch []item
		r.mu.Lock()
		for i := range list.Items {
			m := &list.Items[i]
			if _, dup := r.seen[m.UID]; dup {
				continue
			}
			r.seen[m.UID] = struct{}{}
			batch = append(batch, item{namespace: m.Namespace, name: m.Name, uid: m.UID, resourceVersion: m.ResourceVersion, page: p})
		}
		// The total is known from the first page on: what was listed plus
		// what the API server says remains.
		switch {
		case list.RemainingItemCount != nil:
			r.total.Store(r.base + int64(len(r.seen)) + *list.RemainingItemCount)
		case list.Continue == "":
			r.total.Store(r.base + int64(len(r.seen)))
		}
		r.mu.Unlock()
		p.pending.Store(int64(len(batch)))
		select {
		case pages <- p:
		case <-ctx.Done():
			return ctx.Err()
		}
		for _, it := range batch {
			select {
			case items <- it:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		p.finished.Store(true)
		if p.pending.Load() == 0 {
			p.close()
		}
		if list.Continue == "" {
			return nil
		}
		token = list.Continue
	}
}

// restart drops what the checkpoint counted: its continue token expired,
// so the list starts again from the first object and every object the
// interrupted run handled is listed, and counted, once more.
func (r *run) restart() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.Restarted = true
	r.counts, r.saved = Counts{}, Counts{}
	r.done.Add(-r.base)
	r.base = 0
	r.res.Warnings = append(r.res.Warnings, "the checkpoint's continue token has expired (etcd was compacted since): the list restarted from the first object, so objects the interrupted run handled were handled again (found current) and are counted once, by this run")
}

// storageKey matches the etcd keys that a list's StorageError names.
var storageKey = regexp.MustCompile(`Key: (\S+?),`)

// unreadableObjects returns "namespace/name" of the objects a list error
// says could not be read from storage. The API server (k8s.io/apiserver
// storage/etcd3, a list that met objects it cannot transform or decode —
// typically a conversion webhook failing for them) answers 500 with reason
// StorageReadError and one cause per object whose field is the object's
// etcd key, up to a limit; its message names only the first ("failed to
// read one or more … from the storage: StorageError: corrupt object, …
// Key: <prefix>/<group>/<plural>/<ns>/<name>, … (and N more)"), which is
// what is read when the causes are missing. truncated is true when the
// API server said it stopped collecting them (a cause of type
// FieldValueTooMany).
func unreadableObjects(err error, gvr schema.GroupVersionResource) (names []string, truncated bool) {
	if !apierrors.IsInternalError(err) && !strings.Contains(err.Error(), "StorageError") {
		return nil, false
	}
	marker := "/" + gvr.Group + "/" + gvr.Resource + "/"
	seen := map[string]bool{}
	add := func(key string) {
		if _, rest, ok := strings.Cut(key, marker); ok && !seen[rest] {
			seen[rest] = true
			names = append(names, rest)
		}
	}
	if status, ok := err.(apierrors.APIStatus); ok && status.Status().Details != nil {
		for _, c := range status.Status().Details.Causes {
			switch c.Type {
			case metav1.CauseTypeTooMany:
				truncated = true
			default:
				add(c.Field)
			}
		}
	}
	for _, m := range storageKey.FindAllStringSubmatch(err.Error(), -1) {
		add(m[1])
	}
	return names, truncated
}

func apiMessageOf(err error) string {
	if s, ok := err.(apierrors.APIStatus); ok && s.Status().Message != "" {
		return s.Status().Message
	}
	return err.Error()
}

// listBackoff is longer than a write's: right after a storage version
// change the API server re-initializes the resource's watch cache and
// answers lists with 429 "storage is (re)initializing" until it has read
// every object (tens of seconds at 100k objects).
var listBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.2, Steps: 8, Cap: 30 * time.Second}

// outageBackoff paces the retries of a write while the API server cannot
// be reached (at most every 5 s); Options.Unreachable bounds their time.
func (r *run) outageBackoff() wait.Backoff {
	return wait.Backoff{Duration: r.opts.RetryDelay, Factor: 2, Jitter: 0.2, Steps: math.MaxInt32, Cap: 5 * time.Second}
}

func (r *run) backoff() wait.Backoff {
	return wait.Backoff{Duration: r.opts.RetryDelay, Factor: 2, Jitter: 0.2, Steps: r.opts.Retries + 1}
}

// retry calls write until it succeeds or fails for good. Server errors and
// timeouts are retried Options.Retries times with backoff from
// Options.RetryDelay; an API server that cannot be reached is waited for up
// to Options.Unreachable from the first such error (a success or an answer
// from the API server ends the outage).
func (r *run) retry(ctx context.Context, write func() error) error {
	server, outage := r.backoff(), r.outageBackoff()
	var down time.Time // when the current outage was first seen
	for {
		err := write()
		var delay time.Duration
		switch {
		case err == nil:
			return nil
		case unreachable(err):
			if down.IsZero() {
				down = time.Now()
			}
			if time.Since(down) >= r.opts.Unreachable {
				return err
			}
			delay = outage.Step()
		case retriable(err):
			down, outage = time.Time{}, r.outageBackoff()
			if server.Steps <= 1 {
				return err
			}
			delay = server.Step()
		default:
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		r.retries.Add(1)
	}
}

// unreachable errors say the request never got an answer from the API
// server: the connection was refused, reset or lost (apimachinery's
// util/net classification).
//
// A response cut short ("unexpected error when reading response body.
// Please retry. Original error: unexpected EOF" from client-go) is one too:
// the write may or may not have landed, and its retry, pinned to the same
// resourceVersion, tells which (rewritten or conflict).
func unreachable(err error) bool {
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) ||
		utilnet.IsProbableEOF(err) || utilnet.IsHTTP2ConnectionLost(err) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// listRetriable errors of a list are retriable ones, except the API server
// naming objects it cannot read from storage (a conversion webhook failing
// for them, a version missing from spec.versions): waiting does not repair
// that, even when it comes as 429 "storage is (re)initializing" from a
// watch cache that cannot load those objects.
//
// A list answered 404 Not Found is retried too: the engine lists a version
// the CRD serves, and right after the CRD changed an API server instance
// serves it only once its own CRD informer has the change (see
// cluster.WhenServed).
func listRetriable(err error) bool {
	if apierrors.IsNotFound(err) {
		return true
	}
	return retriable(err) && !strings.Contains(err.Error(), "failed to read one or more")
}

// retriable errors are worth another try: server errors and timeouts.
// (429 is retried inside client-go, honouring Retry-After.)
func retriable(err error) bool {
	if apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsInternalError(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsTooManyRequests(err) || apierrors.IsUnexpectedServerError(err) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	return errors.Is(err, syscallECONNREFUSED) || errors.Is(err, syscallECONNRESET)
}

// migrate writes one object and tells what happened.
func (r *run) migrate(ctx context.Context, it item) (Outcome, string) {
	if r.opts.CountOnly {
		return Listed, ""
	}
	// The metadata client asks for the answer as PartialObjectMetadata
	// (protobuf): the API server still decodes, re-encodes and stores the
	// whole object, but it serializes and the client decodes only the
	// metadata, which is all the outcome needs.
	var ri metadata.ResourceInterface = r.engine.Metadata.Resource(r.gvr)
	if r.namespaced {
		ri = r.engine.Metadata.Resource(r.gvr).Namespace(it.namespace)
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"uid": it.uid, "resourceVersion": it.resourceVersion}})
	opts := metav1.PatchOptions{FieldManager: r.opts.FieldManager}
	if r.opts.DryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	var newRV string
	err := r.retry(ctx, func() error {
		done, err := r.limiter.acquire(ctx)
		if err != nil {
			return err
		}
		r.limitSum.Add(int64(r.limiter.limit()))
		start := time.Now()
		out, err := ri.Patch(ctx, it.name, types.MergePatchType, patch, opts)
		took := time.Since(start)
		done()
		r.latMu.Lock()
		r.latencies = append(r.latencies, took)
		r.latMu.Unlock()
		if err == nil {
			newRV = out.GetResourceVersion()
		}
		return err
	})
	switch {
	case err == nil && r.opts.DryRun:
		return Accepted, ""
	case err == nil && newRV != it.resourceVersion:
		return Rewritten, ""
	case err == nil:
		return Current, ""
	case apierrors.IsConflict(err):
		return Conflict, ""
	case apierrors.IsNotFound(err):
		return Deleted, ""
	case ctx.Err() != nil:
		return "", "" // interrupted: neither done nor failed
	default:
		return Failed, apiMessageOf(err)
	}
}

func (r *run) record(it item, o Outcome, msg string) {
	if o == "" {
		return
	}
	r.mu.Lock()
	r.counts.Add(o)
	if it.page != nil {
		it.page.counts.Add(o)
	}
	if o == Failed {
		name := it.name
		if it.namespace != "" {
			name = it.namespace + "/" + name
		}
		r.failures = append(r.failures, Failure{Object: name, Message: msg})
	}
	r.mu.Unlock()
	r.done.Add(1)
	if r.opts.Progress != nil {
		r.progressMu.Lock()
		defer r.progressMu.Unlock()
		p := Progress{Done: r.done.Load(), Total: r.total.Load(), Limit: r.limiter.limit()}
		if r.apf != nil {
			p.PriorityLevel, p.FlowSchema, p.Exempt = cmp.Or(r.apf.PriorityLevel, r.apf.PriorityLevelUID), cmp.Or(r.apf.FlowSchema, r.apf.FlowSchemaUID), r.apf.Exempt
		}
		if fc := r.engine.FlowControl; fc != nil {
			p.TooManyRequests = fc.TooManyRequests()
		}
		r.opts.Progress(p)
	}
}

// fill copies the counts into the result, failures sorted by object.
func (r *run) fill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.Counts = r.counts
	r.res.Retries = r.retries.Load()
	if !r.opts.CountOnly {
		c := &Concurrency{Mode: "fixed", Max: max(1, r.opts.Concurrency), FinalLimit: r.limiter.limit()}
		if r.opts.MaxLatency > 0 {
			c.Mode, c.MaxLatencySeconds = "adaptive", r.opts.MaxLatency.Seconds()
		}
		r.latMu.Lock()
		lat := r.latencies
		r.latMu.Unlock()
		if len(lat) > 0 {
			c.MeanLimit = float64(r.limitSum.Load()) / float64(len(lat))
			slices.Sort(lat)
			c.WriteLatencyP50Seconds = lat[(len(lat)-1)*50/100].Seconds()
			c.WriteLatencyP99Seconds = lat[(len(lat)-1)*99/100].Seconds()
		}
		r.res.Concurrency = c
	}
	sort.Slice(r.failures, func(i, j int) bool { return r.failures[i].Object < r.failures[j].Object })
	r.res.Failures = append(r.res.Failures, r.failures...)
}

// Trim writes status.storedVersions = [storage] when, and only when, res
// says the pass was complete and clean and, re-read now, the CRD's storage
// version is storage, its metadata.generation is generation (no spec change
// since the run started) and storedVersions gained no version: it writes
// the status subresource (writes of status through the main resource are
// ignored) pinned to the resourceVersion just read, re-checks after a 409,
// and reads the answer back. opts.NoTrim and a client dry run skip it; a
// server dry run (opts.DryRun) sends the same write as a server-side dry
// run once its pass was complete and clean, so that validation and
// admission of the status write answer before anything relies on it (a
// refusal sets Failed). Nothing is written when storedVersions already is
// [storage]. The Trim says what happened and, when nothing was trimmed,
// why.
func (e *Engine) Trim(ctx context.Context, name, storage string, generation int64, res *Result, opts Options) Trim {
	t := Trim{Before: res.Trim.Before, After: res.Trim.Before}
	switch {
	case opts.NoTrim:
		t.Reason = "--no-trim was given"
		return t
	case res.DryRun && !opts.DryRun:
		t.Reason = "dry run"
		return t
	case !res.Complete && res.Failed > 0:
		t.Reason = fmt.Sprintf("the list stopped at %d object(s) the API server cannot read", res.Failed)
		return t
	case !res.Complete:
		t.Reason = "the run was interrupted before every object was listed"
		return t
	case res.Failed > 0:
		t.Reason = fmt.Sprintf("%d object(s) failed and may still be stored at an old version", res.Failed)
		return t
	}
	for attempt := 0; attempt < 5; attempt++ {
		crd, err := e.CRDs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Reason, t.Failed = "re-reading the CRD failed: "+err.Error(), true
			return t
		}
		t.After = crd.Status.StoredVersions
		now := lifecycle.StorageVersion(crd)
		if now != storage {
			t.Reason, t.Failed = fmt.Sprintf("the storage version changed from %s to %s during the run; objects written since may be stored at either: run migrate again", storage, now), true
			return t
		}
		if crd.Generation != generation {
			// Any spec change may have been a storage flip and back, during
			// which objects were written (or found current) at another
			// version; only a run without spec changes proves the pass.
			t.Reason, t.Failed = fmt.Sprintf("the CRD's spec changed during the run (generation %d -> %d), possibly the storage version and back: run migrate again", generation, crd.Generation), true
			return t
		}
		for _, v := range crd.Status.StoredVersions {
			if v != storage && !slices.Contains(res.Trim.Before, v) {
				t.Reason, t.Failed = fmt.Sprintf("%s was added to storedVersions during the run (the storage version changed and changed back): run migrate again", v), true
				return t
			}
		}
		if len(crd.Status.StoredVersions) == 1 && crd.Status.StoredVersions[0] == storage {
			t.Reason = "storedVersions is already [" + storage + "]"
			return t
		}
		crd.Status.StoredVersions = []string{storage}
		update := metav1.UpdateOptions{FieldManager: opts.FieldManager}
		if opts.DryRun {
			update.DryRun = []string{metav1.DryRunAll}
		}
		updated, err := e.CRDs.UpdateStatus(ctx, crd, update)
		if apierrors.IsConflict(err) {
			continue // someone changed the CRD: re-check the storage version
		}
		if err != nil {
			t.Reason, t.Failed = "writing status.storedVersions failed: "+err.Error(), true
			return t
		}
		if opts.DryRun {
			t.Reason = fmt.Sprintf("dry run: the API server accepts storedVersions [%s] (server-side dry run of the status write)", storage)
			return t
		}
		if len(updated.Status.StoredVersions) != 1 || updated.Status.StoredVersions[0] != storage {
			t.After = updated.Status.StoredVersions
			t.Reason, t.Failed = fmt.Sprintf("the API server kept storedVersions %v", updated.Status.StoredVersions), true
			return t
		}
		t.Trimmed, t.After, t.By = true, updated.Status.StoredVersions, TrimmedByUs
		return t
	}
	t.Reason, t.Failed = "the CRD kept changing while storedVersions was written; run migrate again", true
	return t
}
