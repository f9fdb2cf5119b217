package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsv1client "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	clientgofeatures "k8s.io/client-go/features"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/controller-manager/pkg/informerfactory"
	"k8s.io/kubernetes/pkg/controller/garbagecollector"
	svmcontroller "k8s.io/kubernetes/pkg/controller/storageversionmigrator"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// startSVMController runs the kube-controller-manager's storage version
// migrator against the test API server, in this process, until the test
// ends: the three controllers that
// cmd/kube-controller-manager/app/storageversionmigrator.go (v1.37.2) wires
// (SVMController, ResourceVersionController and the CustomResourceController
// that marks the running migration and trims storedVersions), sharing one
// StorageVersionMigration informer and one RESTMapper.
//
// The SVMController reads the objects from the garbage collector's
// dependency graph (one metadata informer per resource), so the helper
// runs the GC with its GraphBuilder and discovery sync too, but with no
// workers: nothing is ever deleted. The sync period is 1 s instead of
// kube-controller-manager's 30 s, so that a CRD created by the test is
// monitored at once. Like kube-controller-manager, it requires the client-go
// feature gates InformerResourceVersion and InOrderInformers (both on by
// default in v0.37).
func startSVMController(t *testing.T) {
	t.Helper()
	gates := clientgofeatures.FeatureGates()
	if !gates.Enabled(clientgofeatures.InformerResourceVersion) || !gates.Enabled(clientgofeatures.InOrderInformers) {
		t.Fatal("the storage version migrator needs the client-go feature gates InformerResourceVersion and InOrderInformers")
	}
	// No GC workers: the GraphBuilder runs, and nothing is ever collected.
	runControllers(t, 0, func(ctx context.Context, p controllerParts) []func(context.Context) {
		svms := p.typed.Storagemigration().V1().StorageVersionMigrations()
		const name = "storage-version-migrator-controller"
		return []func(context.Context){
			svmcontroller.NewSVMController(ctx, p.kube, p.dyn, svms, name, p.mapper, p.gc.GetDependencyGraphBuilder()).Run,
			svmcontroller.NewResourceVersionController(ctx, p.kube, p.disc, p.md, svms, p.mapper).Run,
			svmcontroller.NewCustomResourceController(ctx, p.kube, svms, p.crds).Run,
		}
	})
}

// controllerParts are the clients, informers and garbage collector that
// runControllers shares with the controllers it starts.
type controllerParts struct {
	kube   kubernetes.Interface
	md     metadata.Interface
	dyn    *dynamic.DynamicClient
	disc   discovery.DiscoveryInterface
	crds   apiextensionsv1client.CustomResourceDefinitionInterface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	typed  informers.SharedInformerFactory
	gc     *garbagecollector.GarbageCollector
}

// runControllers runs kube-controller-manager's garbage collector against
// the test API server, in this process, until the test ends, with workers
// attempting deletions (0: its dependency graph only), its discovery sync
// every second instead of 30 s (so that a CRD the test creates is watched
// at once), and the controllers that more returns, built before the
// informers start.
func runControllers(t *testing.T, workers int, more func(context.Context, controllerParts) []func(context.Context)) {
	t.Helper()
	cfg := rest.CopyConfig(srv.Config)
	disc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	p := controllerParts{kube: kubernetes.NewForConfigOrDie(cfg), md: metadata.NewForConfigOrDie(cfg), dyn: dynamic.NewForConfigOrDie(cfg), disc: disc,
		crds: apiextensionsclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions(), mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}
	// The GC's sync resets the mapper; it must use a discovery client of
	// its own (garbagecollector.GarbageCollector.Sync).
	gcDisc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	p.typed = informers.NewSharedInformerFactory(p.kube, 0)
	meta := metadatainformer.NewSharedInformerFactory(p.md, 0)
	started := make(chan struct{})
	var err error
	p.gc, err = garbagecollector.NewGarbageCollector(ctx, p.kube, p.md, p.mapper, garbagecollector.DefaultIgnoredResources(),
		informerfactory.NewInformerFactory(p.typed, meta), started)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	runners := append(more(ctx, p),
		func(ctx context.Context) { p.gc.Run(ctx, workers, 30*time.Second) },
		func(ctx context.Context) { p.gc.Sync(ctx, gcDisc, time.Second) })
	p.typed.Start(ctx.Done())
	meta.Start(ctx.Done())
	close(started)
	var wg sync.WaitGroup
	for _, run := range runners {
		wg.Go(func() { run(ctx) })
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		p.typed.Shutdown()
		meta.Shutdown()
	})
}

// nudgeGCInformer writes one object of crd (an annotation, through the
// storage version) every half second until the returned stop is called.
// The SVMController starts a migration only once the garbage collector's
// informer for the resource has seen the migration's resourceVersion, and
// the informer of a resource nobody writes gets there only at the watch
// cache's next bookmark, up to a minute later; each write is an event that
// takes it there at once. For tests whose subject is not that wait: the
// object stays at the storage version, so a migration leaves it as it is.
func nudgeGCInformer(t *testing.T, c clients, crd *apiextensionsv1.CustomResourceDefinition) (stop func()) {
	t.Helper()
	res := c.dyn.Resource(gvr(crd, lifecycle.StorageVersion(crd)))
	list, err := res.List(context.Background(), metav1.ListOptions{Limit: 1})
	if err != nil || len(list.Items) == 0 {
		t.Fatalf("no object of %s to write (%v)", crd.Name, err)
	}
	obj := list.Items[0]
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		// The writes start once a StorageVersionMigration of the resource
		// exists: before it, migrate's measurement reads and dry-runs
		// every object, and a write in between is a conflict that, when it
		// keeps coming back, it rightly reports as not judged.
		for ctx.Err() == nil {
			list, err := c.kube.StoragemigrationV1().StorageVersionMigrations().List(ctx, metav1.ListOptions{})
			if err == nil && slices.ContainsFunc(list.Items, func(m storagemigrationv1.StorageVersionMigration) bool {
				return m.Spec.Resource.Group == crd.Spec.Group && m.Spec.Resource.Resource == crd.Spec.Names.Plural
			}) {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
		for i := 0; ctx.Err() == nil; i++ {
			patch := fmt.Sprintf(`{"metadata":{"annotations":{"e2e.crdversion.test/nudge":"%d"}}}`, i)
			_, _ = res.Namespace(obj.GetNamespace()).Patch(ctx, obj.GetName(), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}
