package e2e

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"
)

// BenchmarkManagedFieldsScan measures cluster.ScanManagedFields — one
// paged, metadata-only list of a CRD's objects, grouping their
// managedFields by apiVersion, manager and operation — over
// CRDVERSION_MF_BENCH_OBJECTS objects (default 2000; 100000 for the
// measurement of docs/usage.md), one in a hundred written through the old
// version. It reports objects/s and the growth of the process's peak heap
// during the scan (sampled every 5 ms). The test API server runs in this
// process, so that figure includes its own work serving the pages; so the
// scan also runs once in a process of its own (scanProcess), whose peak
// heap and peak RSS are the scanner's alone: it holds a page, one group
// per (apiVersion, manager, operation) and the stale objects' names.
func BenchmarkManagedFieldsScan(b *testing.B) {
	n := 2000
	if s := os.Getenv("CRDVERSION_MF_BENCH_OBJECTS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			b.Fatalf("CRDVERSION_MF_BENCH_OBJECTS: %v", err)
		}
		n = v
	}
	c := newClients(b)
	ctx := context.Background()
	group := "mf-bench.usage.example.com"
	crd := crontab(group, apiextensionsv1.NamespaceScoped)
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{crontabVersion("v1beta1", true, false), crontabVersion("v1", true, true)}
	crd = createCRD(b, c, crd)
	ns := "mf-bench"
	if _, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(64)
	for i := range n {
		g.Go(func() error {
			version, manager := "v1", "new-writer"
			if i%100 == 0 {
				version, manager = "v1beta1", "old-writer"
			}
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": group + "/" + version, "kind": "CronTab",
				"metadata": map[string]any{"name": fmt.Sprintf("ct-%06d", i), "namespace": ns},
				"spec":     map[string]any{"cronSpec": "* * * * */5", "image": "busybox"},
			}}
			_, err := c.dyn.Resource(schema.GroupVersionResource{Group: group, Version: version, Resource: "crontabs"}).Namespace(ns).Create(gctx, obj, metav1.CreateOptions{FieldManager: manager})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	b.Logf("created %d objects in %s", n, time.Since(start).Round(time.Second))
	cl := usageClient(b, srv.Kubeconfig)

	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	stopSampling := samplePeakHeap()
	b.ResetTimer()
	for b.Loop() {
		scan, err := cl.ScanManagedFields(ctx, crd, []string{"v1beta1"}, 500)
		if err != nil {
			b.Fatal(err)
		}
		if scan.Writers.Objects != n || len(scan.Stale["v1beta1"]) != (n+99)/100 {
			b.Fatalf("scanned %d objects, %d stale; want %d and %d", scan.Writers.Objects, len(scan.Stale["v1beta1"]), n, (n+99)/100)
		}
	}
	b.StopTimer()
	peak := stopSampling()
	perOp := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(n)/perOp.Seconds(), "objects/s")
	b.ReportMetric(float64(peak-min(peak, base.HeapInuse))/(1<<20), "process-heap-growth-MiB")

	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	r := executeWithin(b, 30*time.Minute, self, []string{"CRDVERSION_MF_BENCH_SCAN=" + crd.Name, "KUBECONFIG=" + srv.Kubeconfig})
	var objects, stale int
	var heap, rss float64
	if _, err := fmt.Sscanf(r.stdout, "%d %d %f %f", &objects, &stale, &heap, &rss); r.code != 0 || err != nil || objects != n || stale != (n+99)/100 {
		b.Fatalf("the scan in its own process: exit %d %v, %d objects, %d stale\n%s\n%s", r.code, err, objects, stale, r.stdout, r.stderr)
	}
	b.ReportMetric(heap, "scanner-peak-heap-MiB")
	b.ReportMetric(rss, "scanner-peak-RSS-MiB")
}

// scanProcess is the test binary's scan mode (CRDVERSION_MF_BENCH_SCAN set
// to the CRD's name, KUBECONFIG to the API server): one ScanManagedFields
// of the CRD's objects for v1beta1, pages of 500. It prints the objects
// scanned, the stale ones, its peak heap in use (sampled every 5 ms) and
// its peak RSS (VmHWM), both in MiB.
func scanProcess(name string) error {
	cl, err := envClient()
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		return err
	}
	ctx := context.Background()
	crd, err := apiextensionsclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	stopSampling := samplePeakHeap()
	scan, err := cl.ScanManagedFields(ctx, crd, []string{"v1beta1"}, 500)
	peak := stopSampling()
	if err != nil {
		return err
	}
	fmt.Printf("%d %d %.1f %.1f\n", scan.Writers.Objects, len(scan.Stale["v1beta1"]), float64(peak)/(1<<20), float64(readHWM("/proc/self/status"))/1024)
	return nil
}

// samplePeakHeap samples this process's heap in use every 5 ms until the
// returned function is called, which returns the peak in bytes.
func samplePeakHeap() func() uint64 {
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	return func() uint64 {
		close(stop)
		wg.Wait()
		return peak.Load()
	}
}
