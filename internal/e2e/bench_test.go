package e2e

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

// BenchmarkMigrate measures, on the in-process kube-apiserver, with N
// objects ($CRDVERSION_BENCH_OBJECTS, default 10000) that each need a
// rewrite, three clients, each a process of its own:
//
//	(a) kubectl crdversion migrate with its defaults (the built binary,
//	    whose peak RSS, CPU time and requests are measured too);
//	(b) a sequential GET+PUT loop — what cmctl, clusterctl and a
//	    hand-written kubectl loop do;
//	(c) the ceiling: concurrent no-op merge patches of the same form as
//	    (a)'s, with no bookkeeping and the list before them not timed, at
//	    the best concurrency of a sweep ($CRDVERSION_BENCH_CEILING_CONCURRENCY,
//	    a comma-separated list, default 16,32,64,128).
//
// Every phase flips the storage version first, so every object needs a
// rewrite in each, and fails unless it rewrote every object. One run is not
// a verdict on a 2-core machine where the API server, etcd and the client
// share the cores and the host's speed drifts, so the phases run in
// $CRDVERSION_BENCH_ROUNDS rounds (default 4), in the order c a b, then
// b a c, with an untimed rewrite every four rounds so that (a) writes v1 and
// v2 once in each order. Before each phase, untimed, etcd is compacted and
// defragmented (the API server's own periodic compaction is off for
// benchmarks, see setup) and the API server's process collects its garbage.
// It prints each round, geometric means by order and by the version (a)
// writes, medians, and the verdict: the geometric means of each round's
// ratios (paired, so a slower host in one round moves both sides of its
// ratios). Run it with make bench.
func BenchmarkMigrate(b *testing.B) {
	n := envInt(b, "CRDVERSION_BENCH_OBJECTS", 10000)
	rounds := envInt(b, "CRDVERSION_BENCH_ROUNDS", 4)
	sweep := []int{16, 32, 64, 128}
	if s := os.Getenv("CRDVERSION_BENCH_CEILING_CONCURRENCY"); s != "" {
		sweep = nil
		for _, f := range strings.Split(s, ",") {
			c, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || c < 1 {
				b.Fatalf("CRDVERSION_BENCH_CEILING_CONCURRENCY=%q: want positive integers separated by commas", s)
			}
			sweep = append(sweep, c)
		}
	}
	for i := 0; i < b.N; i++ {
		benchMigrate(b, n, rounds, sweep)
	}
}

func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return v
}

// benchState is the CRD under measurement and the version its objects are
// stored at.
type benchState struct {
	b       *testing.B
	c       clients
	crd     *apiextensionsv1.CustomResourceDefinition
	group   string
	storage string
	n       int
	flags   []string // added to (a)'s command line ($CRDVERSION_BENCH_MIGRATE_FLAGS)
}

// flip makes the other version the storage version, so that every object
// needs a rewrite, and readies the next phase: the watch cache has
// re-initialized (lists at resourceVersion 0 are served from it), etcd is
// compacted to its current revision and defragmented, and the test process
// has collected its garbage. None of it is timed.
func (s *benchState) flip() {
	to := "v2"
	if s.storage == "v2" {
		to = "v1"
	}
	setStorage(s.b, s.c, s.crd.Name, to)
	s.storage = to
	s.settle()
}

func (s *benchState) settle() {
	waitFor(s.b, "the watch cache after the storage flip", func() (bool, error) {
		_, err := s.c.dyn.Resource(gvr(s.crd, s.storage)).List(context.Background(), metav1.ListOptions{Limit: 1, ResourceVersion: "0"})
		return err == nil, nil
	})
	ctx := context.Background()
	resp, err := srv.Etcd.Get(ctx, "compaction-revision")
	if err != nil {
		s.b.Fatal(err)
	}
	if _, err := srv.Etcd.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		s.b.Fatal(err)
	}
	for _, ep := range srv.Etcd.Endpoints() {
		if _, err := srv.Etcd.Defragment(ctx, ep); err != nil {
			s.b.Fatal(err)
		}
	}
	runtime.GC()
}

// ceiling is phase (c) at the given concurrency: objects/s. It runs as a
// process of its own, like (a) and (b), so that no phase shares the API
// server's process (and its garbage collector).
func (s *benchState) ceiling(concurrency int) float64 {
	s.flip()
	return s.child("ceiling", "CRDVERSION_BENCH_CEILING="+s.group+"/"+s.storage+"/crontabs/"+strconv.Itoa(concurrency))
}

// child runs this test binary in one of its bench modes (see TestMain) and
// returns the objects/s it printed; it fails unless the mode handled every
// object.
func (s *benchState) child(what, env string) float64 {
	self, err := os.Executable()
	if err != nil {
		s.b.Fatal(err)
	}
	r := executeWithin(s.b, time.Hour, self, []string{env, "KUBECONFIG=" + srv.Kubeconfig})
	var rate float64
	var count int
	if _, err := fmt.Sscanf(r.stdout, "%f %d", &rate, &count); r.code != 0 || err != nil || count != s.n {
		s.b.Fatalf("%s: exit %d %v, %d of %d objects\n%s\n%s", what, r.code, err, count, s.n, r.stdout, r.stderr)
	}
	return rate
}

// ceilingProcess is the test binary's ceiling mode (CRDVERSION_BENCH_CEILING
// set to group/version/resource/concurrency): it lists the objects (not
// timed, so the ceiling errs high), then sends each a pinned no-op merge
// patch, asking for metadata-only answers like migrate, from that many
// goroutines with an unthrottled client, and prints objects/s and the
// number of objects. It fails when a write failed or did not rewrite its
// object.
func ceilingProcess(spec string) error {
	cfg, gvr, fields, err := childConfig("CRDVERSION_BENCH_CEILING", spec, "group/version/resource/concurrency")
	if err != nil {
		return err
	}
	concurrency, err := strconv.Atoi(fields[0])
	if err != nil || concurrency < 1 {
		return fmt.Errorf("CRDVERSION_BENCH_CEILING=%q: the concurrency must be a positive integer", spec)
	}
	res := metadata.NewForConfigOrDie(cfg).Resource(gvr)
	ctx := context.Background()
	list, err := res.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	items := list.Items
	start := time.Now()
	var next, failed, unchanged atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(items) {
					return
				}
				patch := fmt.Sprintf(`{"metadata":{"uid":%q,"resourceVersion":%q}}`, items[i].UID, items[i].ResourceVersion)
				out, err := res.Namespace(items[i].Namespace).Patch(ctx, items[i].Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
				switch {
				case err != nil:
					failed.Add(1)
				case out.ResourceVersion == items[i].ResourceVersion:
					unchanged.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	rate := float64(len(items)) / time.Since(start).Seconds()
	if failed.Load() > 0 || unchanged.Load() > 0 {
		// An object already at the storage version is not rewritten, so a
		// phase that found some would measure less than a rewrite each.
		return fmt.Errorf("%d writes failed, %d objects were not rewritten", failed.Load(), unchanged.Load())
	}
	fmt.Printf("%.1f %d\n", rate, len(items))
	return nil
}

// loop is phase (b): objects/s of the sequential loop, run as a process of
// its own like cmctl or clusterctl (and like (a)), unthrottled.
func (s *benchState) loop() float64 {
	s.flip()
	return s.child("sequential loop", "CRDVERSION_BENCH_LOOP="+s.group+"/"+s.storage+"/crontabs")
}

// metrics reads the API server's /metrics.
func (s *benchState) metrics() *usage.Metrics {
	raw, err := s.c.kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		s.b.Fatal(err)
	}
	m, err := usage.ParseMetrics(bytes.NewReader(raw), time.Now())
	if err != nil {
		s.b.Fatal(err)
	}
	return m
}

// migrate is phase (a): the plugin as a user runs it, with its defaults.
// It returns objects/s and the process's result.
func (s *benchState) migrate() (float64, result) {
	s.flip()
	before := s.metrics()
	start := time.Now()
	args := append([]string{"migrate", s.crd.Name, "--kubeconfig", srv.Kubeconfig, "--cache-dir", filepath.Join(s.b.TempDir(), "cache")}, s.flags...)
	r := executeWithin(s.b, time.Hour, filepath.Join(pluginDir, "kubectl-crdversion"), nil, args...)
	rate := float64(s.n) / time.Since(start).Seconds()
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("rewritten %d,", s.n)) {
		s.b.Fatalf("migrate: exit %d, want every one of %d objects rewritten\n%s\n%s", r.code, s.n, r.stdout, r.stderr)
	}
	// What (a) asked of the API server, from its request counters: more
	// than one PATCH per object or one LIST per page means retries.
	rep := usage.CompareMetrics(gvr(s.crd, s.storage), before, s.metrics())
	var verbs []string
	for _, verb := range slices.Sorted(maps.Keys(rep.Window)) {
		verbs = append(verbs, fmt.Sprintf("%s %d", verb, rep.Window[verb]))
	}
	requests := strings.Join(verbs, ", ")
	if pages := (s.n + 499) / 500; rep.Window["PATCH"] != int64(s.n) || rep.Window["LIST"] != int64(pages) {
		s.b.Fatalf("(a) sent %s at %s; want PATCH %d (one per object) and LIST %d (one per page of 500)", requests, s.storage, s.n, pages)
	}
	r.stdout += "requests of (a) at " + s.storage + ": " + requests + "\n"
	return rate, r
}

func benchMigrate(b *testing.B, n, rounds int, sweep []int) {
	c := newClients(b)
	group := fmt.Sprintf("bench%d.example.com", time.Now().UnixNano())
	crd := advance(b, c, group, apiextensionsv1.NamespaceScoped, 0, lifecycle.StateS0)
	nss := namespaces("bench", 10)
	start := time.Now()
	createManyCronTabs(b, c, crd, "v1", n, nss)
	fmt.Printf("created %d objects in %.1fs\n", n, time.Since(start).Seconds())
	// Serve v2 as well, with v1 staying the storage version: every phase
	// then starts with a flip that leaves every object at the other version.
	advance2(b, c, crd.Name)
	crd = setStorage(b, c, crd.Name, "v1")
	s := &benchState{b: b, c: c, crd: crd, group: group, storage: "v1", n: n, flags: strings.Fields(os.Getenv("CRDVERSION_BENCH_MIGRATE_FLAGS"))}
	defaults := "defaults"
	if len(s.flags) > 0 {
		// For tuning the defaults only: the verdict is on the defaults.
		defaults = strings.Join(s.flags, " ")
	}
	s.settle()
	fmt.Printf("objects: %d (10 namespaces), kube-apiserver v1.37.2 in-process, %d CPUs\n", n, runtime.NumCPU())

	// CRDVERSION_BENCH_ONLY_MIGRATE=1 runs (a) once (for peak RSS at 100k
	// objects without a sequential loop of many minutes).
	if only, _ := strconv.ParseBool(os.Getenv("CRDVERSION_BENCH_ONLY_MIGRATE")); only {
		a, r := s.migrate()
		fmt.Print(r.stdout)
		rss := float64(r.maxRSSKiB) / 1024
		fmt.Printf("(a) kubectl crdversion migrate, %s: %7.0f objects/s, peak RSS %.1f MiB, CPU %.1fs\n", defaults, a, rss, r.cpu.Seconds())
		fmt.Println("(b) and (c) not run (CRDVERSION_BENCH_ONLY_MIGRATE)")
		b.ReportMetric(a, "migrate-objects/s")
		b.ReportMetric(rss, "migrate-peak-RSS-MiB")
		return
	}

	// The ceiling's concurrency: the best of a sweep (one pass each).
	best, bestRate := sweep[0], 0.0
	if len(sweep) > 1 {
		for _, conc := range sweep {
			rate := s.ceiling(conc)
			fmt.Printf("ceiling sweep: %3d concurrent no-op patches: %5.0f objects/s\n", conc, rate)
			if rate > bestRate {
				best, bestRate = conc, rate
			}
		}
	}

	if rounds%4 != 0 {
		fmt.Printf("warning: %d rounds are not a multiple of 4, so the orders and the versions (a) writes are not balanced\n", rounds)
	}
	type cell struct{ ab, ac []float64 }
	groups := map[string]*cell{}
	var as, bs, cs, ab, ac, rss, cpu []float64
	for round := 0; round < rounds; round++ {
		// Two orders: c a b and b a c. Each phase flips the storage version,
		// so with three phases a round (a) would always write the same
		// version in the same order; an untimed rewrite before rounds 3, 7,
		// … swaps that, so that every four rounds (a) writes v1 and v2 once
		// in each order.
		if round%4 == 2 {
			s.ceiling(best)
			fmt.Println("(an untimed rewrite, so that (a) writes the other version in each order)")
		}
		var a, bl, ce float64
		var r result
		var wrote string
		order := "cab"
		if round%2 == 1 {
			order = "bac"
		}
		for _, phase := range order {
			switch phase {
			case 'a':
				a, r = s.migrate()
				wrote = s.storage
			case 'b':
				bl = s.loop()
			case 'c':
				ce = s.ceiling(best)
			}
		}
		as, bs, cs = append(as, a), append(bs, bl), append(cs, ce)
		ab, ac = append(ab, a/bl), append(ac, a/ce)
		for _, key := range []string{"order " + order, "(a) writing " + wrote} {
			if groups[key] == nil {
				groups[key] = &cell{}
			}
			groups[key].ab, groups[key].ac = append(groups[key].ab, a/bl), append(groups[key].ac, a/ce)
		}
		rss = append(rss, float64(r.maxRSSKiB)/1024)
		cpu = append(cpu, r.cpu.Seconds())
		fmt.Printf("round %d (%s, (a) writes %s): (a) %4.0f  (b) %4.0f  (c) %4.0f objects/s   a/b %.2f  a/c %.2f   (a) peak RSS %.1f MiB, CPU %.1fs\n",
			round+1, order, wrote, a, bl, ce, a/bl, a/ce, rss[round], cpu[round])
		fmt.Print(r.stdout)
	}
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		g := groups[key]
		fmt.Printf("%-16s %d rounds: a/b %.2f  a/c %.2f (geometric means)\n", key+":", len(g.ab), geomean(g.ab), geomean(g.ac))
	}
	a, bl, ce := median(as), median(bs), median(cs)
	fmt.Printf("medians of %d rounds:\n", rounds)
	fmt.Printf("(a) kubectl crdversion migrate, %s:       %7.0f objects/s, peak RSS %.1f MiB, CPU %.2f ms/object\n", defaults, a, median(rss), 1000*median(cpu)/float64(n))
	fmt.Printf("(b) sequential GET+PUT loop:                    %7.0f objects/s\n", bl)
	fmt.Printf("(c) ceiling, %3d concurrent no-op patches:      %7.0f objects/s\n", best, ce)
	fmt.Printf("a/b = %.2f   a/c = %.2f   (ratios of the medians)\n", a/bl, a/ce)
	fmt.Printf("a/b = %.2f   a/c = %.2f   (medians of each round's ratios)\n", median(ab), median(ac))
	fmt.Printf("a/b = %.2f   a/c = %.2f   (geometric means of each round's ratios: the verdict)\n", geomean(ab), geomean(ac))
	b.ReportMetric(a, "migrate-objects/s")
	b.ReportMetric(median(rss), "migrate-peak-RSS-MiB")
	b.ReportMetric(bl, "sequential-objects/s")
	b.ReportMetric(ce, "ceiling-objects/s")
	b.ReportMetric(geomean(ab), "a/b")
	b.ReportMetric(geomean(ac), "a/c")
}

// geomean is the geometric mean of xs (all positive): the mean for ratios,
// which weighs a ratio and its inverse alike.
func geomean(xs []float64) float64 {
	var sum float64
	for _, x := range xs {
		sum += math.Log(x)
	}
	return math.Exp(sum / float64(len(xs)))
}

// median of xs (the mean of the middle two for an even count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// sequentialLoop is the test binary's loop mode (CRDVERSION_BENCH_LOOP set
// to group/version/resource): it lists the objects, then reads and writes
// back each in turn with an unthrottled client, and prints objects/s.
func sequentialLoop(spec string) error {
	cfg, gvr, _, err := childConfig("CRDVERSION_BENCH_LOOP", spec, "group/version/resource")
	if err != nil {
		return err
	}
	res := dynamic.NewForConfigOrDie(cfg).Resource(gvr)
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
		out, err := res.Namespace(item.GetNamespace()).Update(ctx, obj, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		if out.GetResourceVersion() == obj.GetResourceVersion() {
			return fmt.Errorf("%s/%s was not rewritten: it was already stored at the storage version", obj.GetNamespace(), obj.GetName())
		}
	}
	fmt.Printf("%.1f %d\n", float64(len(list.Items))/time.Since(start).Seconds(), len(list.Items))
	return nil
}

// childConfig parses the spec of a bench mode (env=spec, in the form
// format: group/version/resource then further fields) into the resource
// and the further fields, and builds an unthrottled client config from
// $KUBECONFIG.
func childConfig(env, spec, format string) (*rest.Config, schema.GroupVersionResource, []string, error) {
	parts := strings.Split(spec, "/")
	if len(parts) != strings.Count(format, "/")+1 {
		return nil, schema.GroupVersionResource{}, nil, fmt.Errorf("%s=%q: want %s", env, spec, format)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		return nil, schema.GroupVersionResource{}, nil, err
	}
	cfg.QPS, cfg.Burst = -1, 0
	return cfg, schema.GroupVersionResource{Group: parts[0], Version: parts[1], Resource: parts[2]}, parts[3:], nil
}
