package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	rcommon "helm.sh/helm/v4/pkg/release/common"
	rspb "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/pager"

	"github.com/crdversion/kubectl-crdversion/internal/references"
)

// helmOwner is the label selector of Helm's release records (every
// storage driver in the cluster labels its objects owner=helm).
const helmOwner = "owner=helm"

// CurrentReleases reads the Helm release records kept in resource (v1
// secrets or v1 configmaps, references.HelmRecordResources) in every
// namespace: the records' labels (name, version, status) paged through
// the metadata client, then, for each release, the current record — the
// one helm upgrade builds — decoded by Helm's storage driver.
func (s *ReferenceSource) CurrentReleases(ctx context.Context, resource references.Resource) ([]references.Release, error) {
	type record struct {
		revision int
		status   string
		name     string
	}
	byRelease := map[[2]string][]record{}
	res := s.quiet.Resource(resource.GVR())
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) { return res.List(ctx, opts) })
	p.PageSize = s.PageSize
	err := p.EachListItem(ctx, metav1.ListOptions{LabelSelector: helmOwner}, func(obj runtime.Object) error {
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return nil
		}
		rev, err := strconv.Atoi(m.Labels["version"])
		if err != nil || m.Labels["name"] == "" {
			return nil // not a release record
		}
		key := [2]string{m.Namespace, m.Labels["name"]}
		byRelease[key] = append(byRelease[key], record{revision: rev, status: m.Labels["status"], name: m.Name})
		return nil
	})
	if err != nil {
		return nil, err
	}
	typed, err := s.typed()
	if err != nil {
		return nil, err
	}
	var out []references.Release
	for key, recs := range byRelease {
		cur := currentRecord(recs, func(r record) (int, string) { return r.revision, r.status })
		d := helmDriver(typed, resource, key[0], &writeOptions{ctx: ctx, read: map[string]string{}})
		rel, err := getRelease(d, recs[cur].name)
		if errors.Is(err, driver.ErrReleaseNotFound) {
			continue // deleted since the list
		}
		if err != nil {
			return nil, fmt.Errorf("reading Helm release record %s/%s: %w", key[0], recs[cur].name, err)
		}
		out = append(out, references.Release{Namespace: key[0], Name: key[1], Revision: rel.Version, Status: rel.Info.Status.String(),
			Resource: resource, Record: recs[cur].name, Manifest: rel.Manifest})
	}
	return out, ctx.Err()
}

// currentRecord is the index of the record helm upgrade reads as the
// release's current one (helm.sh/helm/v4 action.Upgrade): the latest
// revision when it is deployed, else the latest deployed one, else the
// latest.
func currentRecord[R any](recs []R, at func(R) (revision int, status string)) int {
	latest, deployed := -1, -1
	latestRev, deployedRev := 0, 0
	for i, r := range recs {
		rev, status := at(r)
		if latest < 0 || rev > latestRev {
			latest, latestRev = i, rev
		}
		if status == rcommon.StatusDeployed.String() && (deployed < 0 || rev > deployedRev) {
			deployed, deployedRev = i, rev
		}
	}
	if _, status := at(recs[latest]); status == rcommon.StatusDeployed.String() || deployed < 0 {
		return latest
	}
	return deployed
}

// typed is a typed clientset of s's client, warnings dropped.
func (s *ReferenceSource) typed() (kubernetes.Interface, error) {
	s.typedOnce.Do(func() {
		cfg := rest.CopyConfig(s.Client.config)
		cfg.WarningHandler = rest.NoWarnings{}
		s.typedClient, s.typedErr = kubernetes.NewForConfig(cfg)
	})
	return s.typedClient, s.typedErr
}

// getRelease reads the record key through d as a Helm v1 release.
func getRelease(d driver.Driver, key string) (*rspb.Release, error) {
	r, err := d.Get(key)
	if err != nil {
		return nil, err
	}
	rel, ok := r.(*rspb.Release)
	if !ok {
		return nil, fmt.Errorf("record %s is not a Helm v1 release (%T)", key, r)
	}
	return rel, nil
}

// writeOptions are what a helm driver's requests carry: the context (the
// drivers send context.Background), and for writes a dry run, the field
// manager, and the resourceVersion each record was read at (an update
// then fails with a conflict when another writer changed the record
// since).
type writeOptions struct {
	ctx          context.Context
	dryRun       bool
	fieldManager string
	mu           sync.Mutex
	read         map[string]string
}

func (w *writeOptions) saw(name, rv string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.read[name] = rv
}

func (w *writeOptions) readAt(name string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.read[name]
}

func (w *writeOptions) create(o metav1.CreateOptions) metav1.CreateOptions {
	o.FieldManager = w.fieldManager
	if w.dryRun {
		o.DryRun = []string{metav1.DryRunAll}
	}
	return o
}

func (w *writeOptions) update(o metav1.UpdateOptions) metav1.UpdateOptions {
	o.FieldManager = w.fieldManager
	if w.dryRun {
		o.DryRun = []string{metav1.DryRunAll}
	}
	return o
}

// helmDriver is Helm's storage driver for resource in namespace, its
// requests carrying w's context and options.
func helmDriver(c kubernetes.Interface, resource references.Resource, namespace string, w *writeOptions) driver.Driver {
	if resource.Resource == "configmaps" {
		return driver.NewConfigMaps(configMapWrites{c.CoreV1().ConfigMaps(namespace), w})
	}
	return driver.NewSecrets(secretWrites{c.CoreV1().Secrets(namespace), w})
}

// secretWrites gives the Secrets driver's writes the options of w.
type secretWrites struct {
	typedcorev1.SecretInterface
	w *writeOptions
}

// List is the driver's list, with the context of w.
func (s secretWrites) List(_ context.Context, o metav1.ListOptions) (*corev1.SecretList, error) {
	return s.SecretInterface.List(s.w.ctx, o)
}

func (s secretWrites) Get(_ context.Context, name string, o metav1.GetOptions) (*corev1.Secret, error) {
	obj, err := s.SecretInterface.Get(s.w.ctx, name, o)
	if err == nil {
		s.w.saw(name, obj.ResourceVersion)
	}
	return obj, err
}

func (s secretWrites) Create(_ context.Context, obj *corev1.Secret, o metav1.CreateOptions) (*corev1.Secret, error) {
	return s.SecretInterface.Create(s.w.ctx, obj, s.w.create(o))
}

func (s secretWrites) Update(_ context.Context, obj *corev1.Secret, o metav1.UpdateOptions) (*corev1.Secret, error) {
	obj.ResourceVersion = s.w.readAt(obj.Name)
	return s.SecretInterface.Update(s.w.ctx, obj, s.w.update(o))
}

// configMapWrites gives the ConfigMaps driver's writes the options of w.
type configMapWrites struct {
	typedcorev1.ConfigMapInterface
	w *writeOptions
}

// List is the driver's list, with the context of w.
func (s configMapWrites) List(_ context.Context, o metav1.ListOptions) (*corev1.ConfigMapList, error) {
	return s.ConfigMapInterface.List(s.w.ctx, o)
}

func (s configMapWrites) Get(_ context.Context, name string, o metav1.GetOptions) (*corev1.ConfigMap, error) {
	obj, err := s.ConfigMapInterface.Get(s.w.ctx, name, o)
	if err == nil {
		s.w.saw(name, obj.ResourceVersion)
	}
	return obj, err
}

func (s configMapWrites) Create(_ context.Context, obj *corev1.ConfigMap, o metav1.CreateOptions) (*corev1.ConfigMap, error) {
	return s.ConfigMapInterface.Create(s.w.ctx, obj, s.w.create(o))
}

func (s configMapWrites) Update(_ context.Context, obj *corev1.ConfigMap, o metav1.UpdateOptions) (*corev1.ConfigMap, error) {
	obj.ResourceVersion = s.w.readAt(obj.Name)
	return s.ConfigMapInterface.Update(s.w.ctx, obj, s.w.update(o))
}

// RewriteRelease stores a new revision of rel's release whose manifest is
// rewrite applied to rel's record, then marks rel's record superseded
// (references.Patcher). Both writes go through Helm's storage driver of
// rel.Resource: the new record is created (another writer's record of
// the same revision makes it references.ErrChanged), the old one updated
// at the resourceVersion it was read at (a conflict is ErrChanged). The
// new revision is created first: were the second write to fail, the
// release's latest deployed record is the rewritten one, which is what
// helm upgrade reads.
func (p ReferencePatcher) RewriteRelease(ctx context.Context, rel references.Release, description string, rewrite func(string) (string, int), dryRun bool) (int, error) {
	typed, err := kubernetes.NewForConfig(p.Client.config)
	if err != nil {
		return 0, err
	}
	w := &writeOptions{ctx: ctx, dryRun: dryRun, fieldManager: p.FieldManager, read: map[string]string{}}
	store := storage.Init(helmDriver(typed, rel.Resource, rel.Namespace, w))
	history, err := store.History(rel.Name)
	switch {
	case errors.Is(err, driver.ErrReleaseNotFound):
		return 0, fmt.Errorf("%w: Helm release %s/%s has no record", references.ErrGone, rel.Namespace, rel.Name)
	case err != nil:
		return 0, err
	}
	var recs []*rspb.Release
	for _, h := range history {
		if r, ok := h.(*rspb.Release); ok {
			recs = append(recs, r)
		}
	}
	if len(recs) == 0 {
		return 0, fmt.Errorf("%w: Helm release %s/%s has no v1 record", references.ErrGone, rel.Namespace, rel.Name)
	}
	cur := recs[currentRecord(recs, func(r *rspb.Release) (int, string) { return r.Version, r.Info.Status.String() })]
	if cur.Version != rel.Revision {
		return 0, fmt.Errorf("%w: the current record of Helm release %s/%s is revision %d, not %d", references.ErrChanged, rel.Namespace, rel.Name, cur.Version, rel.Revision)
	}
	// Read the current record through the driver so that its
	// resourceVersion is known to the update.
	cur, err = getRelease(store.Driver, rel.Record)
	if err != nil {
		return 0, err
	}
	manifest, n := rewrite(cur.Manifest)
	if n == 0 {
		return 0, fmt.Errorf("%w: revision %d of Helm release %s/%s no longer names the version", references.ErrChanged, rel.Revision, rel.Namespace, rel.Name)
	}
	latest := 0
	for _, r := range recs {
		latest = max(latest, r.Version)
	}
	next := *cur
	info := *cur.Info
	next.Info = &info
	next.Version = latest + 1
	next.Manifest = manifest
	next.Info.Status = rcommon.StatusDeployed
	next.Info.Description = description
	next.Info.LastDeployed = time.Now()
	if err := store.Create(&next); err != nil {
		if errors.Is(err, driver.ErrReleaseExists) {
			return 0, fmt.Errorf("%w: revision %d of Helm release %s/%s was written meanwhile", references.ErrChanged, next.Version, rel.Namespace, rel.Name)
		}
		return 0, fmt.Errorf("storing revision %d of Helm release %s/%s: %w", next.Version, rel.Namespace, rel.Name, err)
	}
	if cur.Info.Status == rcommon.StatusDeployed {
		old := *cur
		oldInfo := *cur.Info
		old.Info = &oldInfo
		old.Info.Status = rcommon.StatusSuperseded
		if err := store.Update(&old); err != nil {
			if apierrors.IsConflict(err) {
				return next.Version, fmt.Errorf("%w: revision %d of Helm release %s/%s changed while revision %d was stored; both are deployed (helm reads the latest)",
					references.ErrChanged, rel.Revision, rel.Namespace, rel.Name, next.Version)
			}
			return next.Version, fmt.Errorf("marking revision %d of Helm release %s/%s superseded (revision %d is stored and deployed): %w", rel.Revision, rel.Namespace, rel.Name, next.Version, err)
		}
	}
	if dryRun {
		return 0, nil
	}
	return next.Version, nil
}
