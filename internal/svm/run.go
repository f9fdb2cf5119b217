package svm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	svmv1 "k8s.io/api/storagemigration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/pager"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/migrate"
)

// Options tune a server-engine run.
type Options struct {
	// FieldManager names the writer of the StorageVersionMigration and of
	// a storedVersions trim.
	FieldManager string
	// DryRun client builds the StorageVersionMigration and counts the
	// objects, creating nothing; server creates it with dryRun=All (the
	// API server validates and admits it, and persists nothing), then
	// stops.
	DryRun lifecycle.DryRun
	// NoTrim: never write storedVersions (the controller may still trim;
	// the result says so).
	NoTrim bool
	// Settle bounds the wait, after Succeeded or Failed, for the controller
	// to finish with the migration (condition Running turning False).
	// Controllers that never do (before Kubernetes 1.37) cost this much.
	Settle time.Duration
	// Progress, when set, is called with each status observed.
	Progress func(Status)
}

// DefaultSettle is the default Options.Settle.
const DefaultSettle = 30 * time.Second

// Runner runs the server engine against one API server.
type Runner struct {
	Client *cluster.Client
}

// Version returns the version of the StorageVersionMigration API to use,
// from discovery; a *NotServedError when the cluster serves none this
// package drives.
func (r *Runner) Version() (string, error) {
	served, err := r.Client.ServedVersions(Group)
	if err != nil {
		return "", fmt.Errorf("discovering the %s API: %w", Group, err)
	}
	return ChooseVersion(served)
}

// Run migrates crd (as read by the caller's preflights) through a
// StorageVersionMigration at Group/version: count the objects, create the
// migration (generateName GenerateName(crd)), follow its conditions with a
// watch until it succeeds or fails and the controller is done with it,
// then read the CRD: when the controller trimmed storedVersions to
// [storage], the result says so (Trim.By TrimmedByServer); otherwise the
// client engine's guarded trim runs (migrate.Engine.Trim), with the CRD's
// generation at the start as the guard. A Failed migration trims nothing.
//
// The error is for a run that could not start (the objects cannot be
// listed, the create was refused); a migration that failed, or a follow
// that ctx ended (timeout, interrupt; the migration keeps running in the
// cluster), is in the Result: Complete false, the phase and message in
// Result.StorageVersionMigration.
func (r *Runner) Run(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string, opts Options) (*migrate.Result, error) {
	start := time.Now()
	storage := lifecycle.StorageVersion(crd)
	if storage == "" {
		return nil, fmt.Errorf("%s has no single storage version", crd.Name)
	}
	obj := New(crd, version)
	res := &migrate.Result{
		Engine: migrate.EngineServer, CRD: crd.Name, StorageVersion: storage,
		Failures: []migrate.Failure{}, DryRun: opts.DryRun != lifecycle.DryRunNone,
		StorageVersionMigration: &migrate.ServerMigration{
			APIVersion: obj.APIVersion, GenerateName: obj.GenerateName,
			Resource: obj.Spec.Resource.Resource + "." + obj.Spec.Resource.Group, Phase: string(Pending),
		},
	}
	res.Trim.Before = append([]string{}, crd.Status.StoredVersions...)
	res.Trim.After = res.Trim.Before
	n, err := r.Client.CountObjects(ctx, crd, lifecycle.ListVersion(crd), cluster.ChunkSize)
	if err != nil {
		return nil, &lifecycle.RefusalError{Operation: "migrate", CRD: crd.Name, Reason: "its objects cannot be listed, so the controller could not migrate them either",
			WayOut: "fix what the API server says above", DetailsTitle: "The API server, listing them", Details: []string{err.Error()}, Err: err}
	}
	res.Total = int64(n)
	finish := func() (*migrate.Result, error) {
		res.Elapsed = time.Since(start)
		res.ElapsedSeconds = res.Elapsed.Seconds()
		if s := res.ElapsedSeconds; s > 0 && !res.DryRun {
			res.ObjectsPerSecond = float64(res.Total) / s
		}
		return res, nil
	}
	if opts.DryRun == lifecycle.DryRunClient {
		res.Trim.Reason = "dry run"
		return finish()
	}

	gvr := k8sschema.GroupVersionResource{Group: Group, Version: version, Resource: Resource}
	ri := r.Client.Dynamic.Resource(gvr)
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	createOpts := metav1.CreateOptions{DryRun: opts.DryRun.Request(), FieldManager: opts.FieldManager}
	created, err := ri.Create(ctx, &unstructured.Unstructured{Object: u}, createOpts)
	if err != nil {
		return nil, err
	}
	res.StorageVersionMigration.Name = created.GetName()
	if opts.DryRun == lifecycle.DryRunServer {
		res.Trim.Reason = "dry run"
		return finish()
	}

	st, err := follow(ctx, ri, created.GetName(), opts, func(s Status) bool { return s.Phase.Terminal() })
	sm := res.StorageVersionMigration
	sm.Phase, sm.Reason, sm.Message = string(st.Phase), st.Reason, st.Message
	if err != nil {
		why := err.Error()
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			why = "the time given (--timeout) ran out"
		case errors.Is(err, context.Canceled):
			why = "interrupted"
		}
		res.Trim.Reason = fmt.Sprintf("stopped following the StorageVersionMigration %s (%s) before it finished: %s", sm.Name, st.Phase, why)
		if !errors.Is(err, errDeleted) {
			res.Trim.Reason += "; it goes on in the cluster (kubectl get storageversionmigrations " + sm.Name + " -w), and a re-run of migrate after it succeeded trims storedVersions"
		}
		if st.Phase == Pending {
			// No condition at all: nothing has taken it up.
			res.Trim.Reason += "; but no controller took it up (it has no condition): kube-controller-manager's storage version migrator may be off in this cluster (its controller storage-version-migrator-controller, feature gate StorageVersionMigrator); --engine=client migrates without it, and kubectl delete storageversionmigrations " + sm.Name + " removes this one"
		}
		return finish()
	}
	if !st.Settled {
		// Wait for the controller to finish with the CRD (it may trim
		// storedVersions) before reading it; give up after opts.Settle.
		settleCtx, cancel := context.WithTimeout(ctx, opts.Settle)
		settled, err := follow(settleCtx, ri, created.GetName(), opts, func(s Status) bool { return s.Settled })
		cancel()
		if err == nil {
			st = settled
		}
	}
	if st.Phase == Failed {
		res.Trim.Reason = "the StorageVersionMigration " + sm.Name + " failed: " + st.Message
		after, restored, err := r.restore(ctx, crd, storage, opts.FieldManager)
		res.Trim.After, res.Trim.Restored = after, restored
		switch {
		case err != nil:
			res.Trim.Reason += "; the controller trimmed storedVersions anyway, and putting back " + fmt.Sprint(res.Trim.Before) + " failed: " + err.Error()
		case restored:
			res.Trim.Reason += "; the controller trimmed storedVersions anyway (Kubernetes 1.37 trims after a failed migration too), so " + migrate.TrimmedByUs + " put back the versions objects may still be stored at"
		}
		return finish()
	}
	res.Complete = true
	now, err := r.Client.CRDs.Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		res.Trim.Reason, res.Trim.Failed = "re-reading the CRD failed: "+err.Error(), true
		return finish()
	}
	res.Trim.After = now.Status.StoredVersions
	if slices.Equal(res.Trim.After, []string{storage}) && !slices.Equal(res.Trim.Before, []string{storage}) {
		res.Trim.Trimmed, res.Trim.By = true, migrate.TrimmedByServer
		return finish()
	}
	engine := &migrate.Engine{CRDs: r.Client.CRDs}
	res.Trim = engine.Trim(ctx, crd.Name, storage, crd.Generation, res, migrate.Options{NoTrim: opts.NoTrim, FieldManager: opts.FieldManager})
	return finish()
}

// restore undoes a storedVersions trim that the controller made after a
// failed migration: kube-controller-manager v1.37.2's migration runner
// sets storedVersions to [storage] when the migration ends and the CRD's
// generation is unchanged, whether the migration succeeded or failed, so
// objects it did not rewrite stay stored at versions no longer listed. When
// storedVersions is [storage] but was not at the start (crd), and the CRD's
// storage version and generation are unchanged, it writes the starting
// storedVersions back (those still in spec.versions, plus storage) to the
// status subresource, pinned to the resourceVersion just read (re-read and
// re-checked after a 409). It returns storedVersions as left, and whether
// it wrote them.
func (r *Runner) restore(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, storage, fieldManager string) ([]string, bool, error) {
	before := crd.Status.StoredVersions
	for attempt := 0; attempt < 5; attempt++ {
		now, err := r.Client.CRDs.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return before, false, err
		}
		stored := now.Status.StoredVersions
		if !slices.Equal(stored, []string{storage}) || slices.Equal(before, stored) {
			return stored, false, nil
		}
		if lifecycle.StorageVersion(now) != storage || now.Generation != crd.Generation {
			return stored, false, fmt.Errorf("the CRD's spec changed meanwhile; run kubectl crdversion migrate %s to migrate what is left", crd.Name)
		}
		var want []string
		for _, v := range before {
			if lifecycle.FindVersion(now, v) != nil {
				want = append(want, v)
			}
		}
		if !slices.Contains(want, storage) {
			want = append(want, storage)
		}
		now.Status.StoredVersions = want
		updated, err := r.Client.CRDs.UpdateStatus(ctx, now, metav1.UpdateOptions{FieldManager: fieldManager})
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return stored, false, err
		}
		return updated.Status.StoredVersions, true, nil
	}
	return before, false, fmt.Errorf("the CRD kept changing")
}

// errDeleted ends a follow whose StorageVersionMigration was deleted.
var errDeleted = errors.New("it was deleted")

// follow watches the StorageVersionMigration name (a list, then a watch
// from the list's resourceVersion, re-established by the informer when it
// breaks) until done(status) holds, reporting each status to
// opts.Progress. It returns the last status seen and ctx's error (or
// errDeleted) when it stopped before done.
func follow(ctx context.Context, ri interface {
	List(context.Context, metav1.ListOptions) (*unstructured.UnstructuredList, error)
	Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
}, name string, opts Options, done func(Status) bool) (Status, error) {
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return ri.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return ri.Watch(ctx, o)
		},
	}
	last := Status{Phase: Pending}
	_, err := watchtools.UntilWithSync(ctx, lw, &unstructured.Unstructured{}, nil, func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Deleted {
			return false, errDeleted
		}
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			return false, nil
		}
		var m svmv1.StorageVersionMigration
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &m); err != nil {
			return false, err
		}
		last = Interpret(m.Status.Conditions)
		if opts.Progress != nil {
			opts.Progress(last)
		}
		return done(last), nil
	})
	if err != nil && ctx.Err() != nil && (wait.Interrupted(err) || errors.Is(err, watchtools.ErrWatchClosed)) {
		err = ctx.Err()
	}
	return last, err
}

// Migrations lists the cluster's StorageVersionMigrations (paged) at the
// version Version chooses. served is false, with no error, when the
// cluster serves none of Versions: there is nothing to list. The error is
// the API server's (a 403 when list is not granted).
func (r *Runner) Migrations(ctx context.Context) (ms []Migration, served bool, err error) {
	version, err := r.Version()
	var notServed *NotServedError
	switch {
	case errors.As(err, &notServed):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	ri := r.Client.Dynamic.Resource(k8sschema.GroupVersionResource{Group: Group, Version: version, Resource: Resource})
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) { return ri.List(ctx, opts) })
	p.PageSize = cluster.ChunkSize
	err = p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return nil
		}
		var o svmv1.StorageVersionMigration
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &o); err != nil {
			return fmt.Errorf("reading StorageVersionMigration %s: %w", u.GetName(), err)
		}
		ms = append(ms, FromObject(&o))
		return nil
	})
	return ms, true, err
}
