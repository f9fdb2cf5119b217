package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// listAll lists every object, retrying while the API server's watch cache
// re-initializes after a storage flip ("storage is (re)initializing").
func listAll(b testing.TB, res dynamic.NamespaceableResourceInterface) []unstructured.Unstructured {
	b.Helper()
	var items []unstructured.Unstructured
	waitFor(b, "a complete list", func() (bool, error) {
		list, err := res.List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		items = list.Items
		return true, nil
	})
	return items
}

// BenchmarkMigrate measures, on the in-process kube-apiserver, with N
// objects ($CRDVERSION_BENCH_OBJECTS, default 10000) that each need a
// rewrite:
//
//	(a) kubectl crdversion migrate with its defaults (the built binary,
//	    whose peak RSS is measured too);
//	(b) a sequential GET+PUT loop — what cmctl, clusterctl and a
//	    hand-written kubectl loop do;
//	(c) the ceiling: concurrent no-op merge patches with no bookkeeping.
//
// Each phase flips the storage version first, so every object needs a
// rewrite in each. It prints objects/s, a/b and a/c. Run it with make bench.
func BenchmarkMigrate(b *testing.B) {
	n := 10000
	if s := os.Getenv("CRDVERSION_BENCH_OBJECTS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	ceiling := 64
	if s := os.Getenv("CRDVERSION_BENCH_CEILING_CONCURRENCY"); s != "" {
		ceiling, _ = strconv.Atoi(s)
	}
	for i := 0; i < b.N; i++ {
		benchMigrate(b, n, ceiling)
	}
}

func benchMigrate(b *testing.B, n, ceiling int) {
	c := newClients(b)
	group := fmt.Sprintf("bench%d.example.com", time.Now().UnixNano())
	crd := advance(b, c, group, apiextensionsv1.NamespaceScoped, 0, lifecycle.StateS0)
	nss := namespaces("bench", 10)
	start := time.Now()
	createManyCronTabs(b, c, crd, "v1", n, nss)
	fmt.Printf("created %d objects in %.1fs\n", n, time.Since(start).Seconds())
	crd = advance2(b, c, crd.Name)
	waitList := func(version string) {
		waitFor(b, "the watch cache after the storage flip", func() (bool, error) {
			_, err := c.dyn.Resource(gvr(crd, version)).List(context.Background(), metav1.ListOptions{Limit: 1, ResourceVersion: "0"})
			return err == nil, nil
		})
	}
	waitList("v2")
	flip := func(to string) {
		setStorage(b, c, crd.Name, to)
		// The API server re-initializes its watch cache after the change;
		// lists fail until it is done (a list at resourceVersion 0 is
		// served from the cache). Not part of any measurement.
		waitList(to)
	}

	// (c) runs first, (a) last: each phase finds every object stored at the
	// other version. CRDVERSION_BENCH_ONLY_MIGRATE=1 runs (a) alone (for
	// peak RSS at 100k objects without a 10-minute sequential loop).
	var seq, top float64
	onlyA := os.Getenv("CRDVERSION_BENCH_ONLY_MIGRATE") != ""
	if !onlyA {
		// (c) the ceiling: concurrent pinned no-op patches, nothing else (the
		// list before them is not timed, so the ceiling errs high).
		unthrottled := rest.CopyConfig(srv.Config)
		unthrottled.QPS, unthrottled.Burst = -1, 0
		dyn := dynamic.NewForConfigOrDie(unthrottled)
		ctx := context.Background()
		res2 := dyn.Resource(gvr(crd, "v2"))
		items := listAll(b, res2) // not timed: the ceiling is the writes alone
		start = time.Now()
		var next atomic.Int64
		var wg sync.WaitGroup
		var failed atomic.Int64
		for w := 0; w < ceiling; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1) - 1)
					if i >= len(items) {
						return
					}
					patch := fmt.Sprintf(`{"metadata":{"uid":%q,"resourceVersion":%q}}`, items[i].GetUID(), items[i].GetResourceVersion())
					if _, err := res2.Namespace(items[i].GetNamespace()).Patch(ctx, items[i].GetName(), types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
						failed.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		top = float64(n) / time.Since(start).Seconds()
		if failed.Load() > 0 {
			b.Fatalf("ceiling: %d writes failed", failed.Load())
		}
		// (b) sequential GET + PUT of every object, at v1 after flipping
		// back, in a process of its own like cmctl or clusterctl (and like
		// (a)), unthrottled.
		flip("v1")
		self, err := os.Executable()
		if err != nil {
			b.Fatal(err)
		}
		loop := executeWithin(b, time.Hour, self, []string{"CRDVERSION_BENCH_LOOP=" + group + "/v1/crontabs", "KUBECONFIG=" + srv.Kubeconfig})
		if _, err := fmt.Sscanf(loop.stdout, "%f", &seq); loop.code != 0 || err != nil {
			b.Fatalf("sequential loop: exit %d %v\n%s\n%s", loop.code, err, loop.stdout, loop.stderr)
		}

	}

	// (a) the plugin, as a user runs it, back at v2.
	flip("v2")
	start = time.Now()
	r := executeWithin(b, time.Hour, filepath.Join(pluginDir, "kubectl-crdversion"), nil, "migrate", crd.Name, "--kubeconfig", srv.Kubeconfig, "--cache-dir", filepath.Join(b.TempDir(), "cache"))
	a := float64(n) / time.Since(start).Seconds()
	if r.code != 0 {
		b.Fatalf("migrate: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	fmt.Print(r.stdout)

	rss := float64(r.maxRSSKiB) / 1024
	fmt.Printf("objects: %d (10 namespaces), kube-apiserver v1.37.2 in-process, %d CPUs\n", n, runtime.NumCPU())
	fmt.Printf("(a) kubectl crdversion migrate, defaults:       %7.0f objects/s, peak RSS %.1f MiB\n", a, rss)
	b.ReportMetric(a, "migrate-objects/s")
	b.ReportMetric(rss, "migrate-peak-RSS-MiB")
	if onlyA {
		fmt.Println("(b) and (c) not run (CRDVERSION_BENCH_ONLY_MIGRATE)")
		return
	}
	fmt.Printf("(b) sequential GET+PUT loop:                    %7.0f objects/s\n", seq)
	fmt.Printf("(c) ceiling, %3d concurrent no-op patches:      %7.0f objects/s\n", ceiling, top)
	fmt.Printf("a/b = %.2f   a/c = %.2f\n", a/seq, a/top)
	b.ReportMetric(seq, "sequential-objects/s")
	b.ReportMetric(top, "ceiling-objects/s")
	b.ReportMetric(a/seq, "a/b")
	b.ReportMetric(a/top, "a/c")
}

// sequentialLoop is the test binary's loop mode (CRDVERSION_BENCH_LOOP set
// to group/version/resource): it lists the objects, then reads and writes
// back each in turn with an unthrottled client, and prints objects/s.
func sequentialLoop(spec string) error {
	parts := strings.Split(spec, "/")
	if len(parts) != 3 {
		return fmt.Errorf("CRDVERSION_BENCH_LOOP=%q: want group/version/resource", spec)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = -1, 0
	res := dynamic.NewForConfigOrDie(cfg).Resource(schema.GroupVersionResource{Group: parts[0], Version: parts[1], Resource: parts[2]})
	ctx := context.Background()
	list, err := res.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	start := time.Now()
	for _, item := range list.Items {
		obj, err := res.Namespace(item.GetNamespace()).Get(ctx, item.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if _, err := res.Namespace(item.GetNamespace()).Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	fmt.Printf("%.1f\n", float64(len(list.Items))/time.Since(start).Seconds())
	return nil
}
