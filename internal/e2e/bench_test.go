package e2e

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
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

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	clientv3 "go.etcd.io/etcd/client/v3"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/crdversion/kubectl-crdversion/internal/e2e/apiserver"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

// BenchmarkMigrate measures, on the in-process kube-apiserver, with N
// objects ($CRDVERSION_BENCH_OBJECTS, default 10000) that each need a
// rewrite, three clients, each a process of its own:
//
//	(a) kubectl crdversion migrate with its defaults (the built binary,
//	    whose peak RSS, CPU time and requests are measured too), its loss
//	    measurement included, whose time and requests its line reports
//	    apart;
//	(a0) the same with --allow-pruning, which skips the measurement: a/a0
//	    in one round is what the measurement costs;
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
	// kubeconfig is the identity every client of a phase runs as.
	kubeconfig string
	// compacted is the etcd revision settle last compacted to: a phase
	// that wrote nothing (promote-storage's dry runs) leaves nothing new
	// to compact, and etcd refuses a compaction to the same revision.
	compacted int64
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
	if rev := resp.Header.Revision; rev > s.compacted {
		if _, err := srv.Etcd.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
			s.b.Fatal(err)
		}
		s.compacted = rev
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
	r := executeWithin(s.b, time.Hour, self, []string{env, "KUBECONFIG=" + s.kubeconfig})
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
func (s *benchState) metrics() benchMetrics { return apiMetrics(s.b, s.c) }

// apiMetrics reads the test API server's /metrics.
func apiMetrics(t testing.TB, c clients) benchMetrics {
	t.Helper()
	raw, err := c.kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m, err := usage.ParseMetrics(bytes.NewReader(raw), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return benchMetrics{Metrics: m, families: families}
}

// benchMetrics is one read of the API server's /metrics.
type benchMetrics struct {
	*usage.Metrics
	families map[string]*dto.MetricFamily
}

// dryRunPatches counts the PATCH requests to gvr sent as server-side dry
// runs (apiserver_request_total{dry_run="All"}): the loss measurement that
// migrate runs before its writes.
func (m benchMetrics) dryRunPatches(gvr schema.GroupVersionResource) int64 {
	return m.dryRuns(gvr, "PATCH")
}

// dryRuns counts the requests of verb (apiserver_request_total's label:
// PATCH, POST…) to gvr sent as server-side dry runs.
func (m benchMetrics) dryRuns(gvr schema.GroupVersionResource, verb string) int64 {
	var n int64
	for _, metric := range m.families["apiserver_request_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range metric.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["group"] == gvr.Group && labels["version"] == gvr.Version && labels["resource"] == gvr.Resource &&
			labels["verb"] == verb && labels["dry_run"] != "" {
			n += int64(metric.GetCounter().GetValue())
		}
	}
	return n
}

// migrate is a migrate phase: the plugin as a user runs it, as the
// identity of s.kubeconfig, with flags added to s.flags (and -o json). It
// returns objects/s, the process's result and its report.
func (s *benchState) migrate(flags ...string) (float64, result, report.Migration) {
	s.flip()
	before := s.metrics()
	start := time.Now()
	args := append([]string{"migrate", s.crd.Name, "--kubeconfig", s.kubeconfig, "--cache-dir", filepath.Join(s.b.TempDir(), "cache"), "-o", "json"}, s.flags...)
	r := executeWithin(s.b, time.Hour, filepath.Join(pluginDir, "kubectl-crdversion"), nil, append(args, flags...)...)
	rate := float64(s.n) / time.Since(start).Seconds()
	var m report.Migration
	if err := json.Unmarshal([]byte(r.stdout), &m); r.code != 0 || err != nil || m.Rewritten != int64(s.n) || m.Failed != 0 {
		s.b.Fatalf("migrate %s: exit %d (%v), want every one of %d objects rewritten and none failed\n%s\n%s", strings.Join(flags, " "), r.code, err, s.n, r.stdout, r.stderr)
	}
	// What it asked of the API server, from its request counters: one
	// PATCH per object and one LIST per page, plus the 429 answers and the
	// retries it reports (anything else would be an uncounted retry).
	after := s.metrics()
	at := gvr(s.crd, s.storage)
	rep := usage.CompareMetrics(at, before.Metrics, after.Metrics)
	// The loss measurement reads the objects at both versions (two paged
	// lists) and sends a dry-run PATCH only to the objects it reports
	// (DryRuns: all of them where something acts on the write; here,
	// nothing does) — client-go sends one again after each 429 answer.
	// Counted apart from the run's.
	measured := after.dryRunPatches(at) - before.dryRunPatches(at)
	var dryRuns int64
	var design []string
	for _, p := range m.Measured {
		dryRuns += int64(p.DryRuns)
		design = append(design, p.Design)
	}
	if measured < dryRuns || measured > dryRuns+m.TooManyRequests+m.Retries {
		s.b.Fatalf("migrate %s sent %d dry-run PATCH requests at %s; its loss measurement reports %d", strings.Join(flags, " "), measured, s.storage, dryRuns)
	}
	rep.Window["PATCH"] -= measured
	var verbs []string
	for _, verb := range slices.Sorted(maps.Keys(rep.Window)) {
		verbs = append(verbs, fmt.Sprintf("%s %d", verb, rep.Window[verb]))
	}
	requests := strings.Join(verbs, ", ")
	// The foreground probe reads through v1, so LISTs are counted at v2
	// only.
	// The measurement's lists: one at each version (one page of 500 at a
	// time), at v2 whichever version is the storage version, and one
	// object (limit 1) at each first, to see that both are served.
	pages := int64((s.n + 499) / 500)
	measureLists := int64(0)
	if len(m.Measured) > 0 {
		measureLists = pages + 1
	}
	extra := m.TooManyRequests + m.Retries
	patches, lists := rep.Window["PATCH"], rep.Window["LIST"]
	if patches < int64(s.n) || patches > int64(s.n)+extra || (s.storage == "v2" && (lists < pages || lists > pages+measureLists+extra)) {
		s.b.Fatalf("migrate %s sent %s at %s; want PATCH %d (one per object) and, at v2, LIST %d (one per page of 500, and as many again for the loss measurement), plus at most the %d answers 429 and %d retries it reports",
			strings.Join(flags, " "), requests, s.storage, s.n, pages, m.TooManyRequests, m.Retries)
	}
	split := "no loss measurement"
	if len(m.Measured) > 0 {
		wall := float64(s.n) / rate
		split = fmt.Sprintf("loss measurement by %s: %.1fs of the run's %.1fs (%.0f%%), %d dry-run PATCH", strings.Join(design, "+"),
			measureSeconds(m), wall, 100*measureSeconds(m)/wall, measured)
	}
	r.stdout = fmt.Sprintf("requests at %s: %s; %s\n", s.storage, requests, split)
	return rate, r, m
}

// measureSeconds is the time m's loss measurement took (its passes).
func measureSeconds(m report.Migration) float64 {
	var sec float64
	for _, p := range m.Measured {
		sec += p.ElapsedSeconds
	}
	return sec
}

// phase is one client of a round.
type phase struct {
	key   byte   // c, b, a, m, p or a variant's digit
	label string // what it is, for the output
	flags []string
	// shares, for the priority-level design: migrate
	// --own-priority-level=shares, which system:masters cannot use (APF
	// exempts it before any flow schema a run can create).
	shares int32
}

// phaseResult is one phase of one round.
type phaseResult struct {
	rate  float64
	probe window
	m     *report.Migration // migrate phases
	r     result
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

	// The identities: the user and the ServiceAccount get the migrate role
	// of docs/rbac.md plus get and update on the objects for the sequential
	// loop; the probe reads the objects.
	migrateRole := docRoles(b, group)["crdversion-migrate"]
	loopRule := rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{"*"}, Verbs: []string{"get", "update"}}
	for _, id := range []apiserver.Identity{apiserver.User, apiserver.ServiceAccount} {
		bindIdentity(b, c, "crdversion-bench-"+id.Key, append(slices.Clone(migrateRole.Rules), loopRule), id)
	}
	bindIdentity(b, c, "crdversion-bench-probe", []rbacv1.PolicyRule{{APIGroups: []string{group}, Resources: []string{"*"}, Verbs: []string{"get", "list"}}}, apiserver.Probe)
	rate := probeRate(b)
	pr := startProbe(b, identityKubeconfig(b, apiserver.Probe), group, rate, n, len(nss))
	idle := time.Duration(envInt(b, "CRDVERSION_BENCH_IDLE_SECONDS", 10)) * time.Second

	s := &benchState{b: b, c: c, crd: crd, group: group, storage: "v1", n: n, flags: strings.Fields(os.Getenv("CRDVERSION_BENCH_MIGRATE_FLAGS"))}
	defaults := "defaults"
	if len(s.flags) > 0 {
		// For tuning the defaults only: the verdict is on the defaults.
		defaults = strings.Join(s.flags, " ")
	}
	s.settle()
	fmt.Printf("objects: %d (10 namespaces), kube-apiserver v1.37.2 in-process, %d CPUs; foreground probe: %d requests/s (GET one object, LIST 10) as %s (priority level global-default)\n",
		n, runtime.NumCPU(), rate, apiserver.Probe.User)

	// CRDVERSION_BENCH_ONLY_MIGRATE=1 runs (a) once as admin (for peak RSS
	// at 100k objects without a sequential loop of many minutes).
	if only, _ := strconv.ParseBool(os.Getenv("CRDVERSION_BENCH_ONLY_MIGRATE")); only {
		s.kubeconfig = identityKubeconfig(b, apiserver.Admin)
		a, r, m := s.migrate()
		fmt.Print(r.stdout)
		rss := float64(r.maxRSSKiB) / 1024
		fmt.Printf("(a) kubectl crdversion migrate, %s: %7.0f objects/s (its own report: %.0f), peak RSS %.1f MiB, CPU %.1fs\n", defaults, a, m.ObjectsPerSecond, rss, r.cpu.Seconds())
		fmt.Println("(b) and (c) not run (CRDVERSION_BENCH_ONLY_MIGRATE)")
		b.ReportMetric(a, "migrate-objects/s")
		b.ReportMetric(rss, "migrate-peak-RSS-MiB")
		return
	}

	phases := []phase{
		{key: 'c', label: "(c) ceiling"},
		{key: 'a', label: "(a) migrate, " + defaults},
		{key: '0', label: "(a0) migrate --allow-pruning (no loss measurement)", flags: []string{"--allow-pruning"}},
		{key: 'm', label: "(m) migrate --max-speed", flags: []string{"--max-speed"}},
	}
	if shares := envInt0(b, "CRDVERSION_BENCH_PL_SHARES", 1); shares > 0 {
		flag := fmt.Sprintf("--own-priority-level=%d", shares)
		phases = append(phases, phase{key: 'p', label: "(p) migrate " + flag, flags: []string{flag}, shares: int32(shares)})
	}
	// CRDVERSION_BENCH_VARIANTS adds migrate phases for the trade-off
	// table: "flags;flags;…", each a migrate command line's flags, or
	// "shares=N" for the priority-level design at N shares.
	if v := os.Getenv("CRDVERSION_BENCH_VARIANTS"); v != "" {
		for i, f := range strings.Split(v, ";") {
			ph := phase{key: byte('1' + i), label: fmt.Sprintf("(%d) migrate %s", i+1, strings.TrimSpace(f)), flags: strings.Fields(f)}
			if rest, ok := strings.CutPrefix(strings.TrimSpace(f), "shares="); ok {
				sh, err := strconv.Atoi(rest)
				if err != nil || sh < 1 {
					b.Fatalf("CRDVERSION_BENCH_VARIANTS: %q: want shares=N, N positive", f)
				}
				ph.flags, ph.shares = []string{fmt.Sprintf("--own-priority-level=%d", sh)}, int32(sh)
				ph.label = fmt.Sprintf("(%d) migrate --own-priority-level=%d", i+1, sh)
			}
			phases = append(phases, ph)
		}
	}
	phases = append(phases, phase{key: 'b', label: "(b) sequential GET+PUT loop"})

	type identityResult struct {
		key     string
		best    int
		idle    []window
		results map[byte][]phaseResult
		wrote   []string
	}
	var all []*identityResult
	for _, key := range benchIdentities(b) {
		id, _ := apiserver.IdentityByKey(key)
		s.kubeconfig = identityKubeconfig(b, id)
		ir := &identityResult{key: key, results: map[byte][]phaseResult{}}
		all = append(all, ir)
		where := whereLands(b, c, id)
		fmt.Printf("\n=== as %s (%s): flow schema %s, priority level %s\n", key, id.User, where.flowSchema, where.priorityLevel)

		// The ceiling's concurrency: the best of a sweep (one pass each),
		// as this identity.
		best, bestRate := sweep[0], 0.0
		if len(sweep) > 1 {
			for _, conc := range sweep {
				from := time.Now()
				rate := s.ceiling(conc)
				fmt.Printf("ceiling sweep: %3d concurrent no-op patches: %5.0f objects/s   probe %s\n", conc, rate, pr.window(b, from, time.Now()))
				if rate > bestRate {
					best, bestRate = conc, rate
				}
			}
		}
		ir.best = best
		for round := 0; round < rounds; round++ {
			// Two orders, the phases forward and backward; (a) writes v2 in
			// rounds 1 and 4 and v1 in rounds 2 and 3 of every four (after
			// an untimed rewrite when the flips would not have it so), so
			// that order and version are balanced.
			order := slices.Clone(phases)
			if round%2 == 1 {
				slices.Reverse(order)
			}
			wantV2 := round%4 == 0 || round%4 == 3
			before := slices.IndexFunc(order, func(p phase) bool { return p.key == 'a' })
			if writesV2 := (s.storage == "v2") == (before%2 == 1); writesV2 != wantV2 {
				s.ceiling(best)
				fmt.Println("(an untimed rewrite, so that (a) writes the other version in this order)")
			}
			w := pr.idleWindow(b, idle)
			ir.idle = append(ir.idle, w)
			fmt.Printf("round %d: idle probe %s\n", round+1, w)
			for _, ph := range order {
				if ph.shares > 0 && id.Key == apiserver.Admin.Key {
					continue // see phase.shares: system:masters stays exempt
				}
				from := time.Now()
				var res phaseResult
				switch ph.key {
				case 'c':
					res.rate = s.ceiling(best)
				case 'b':
					res.rate = s.loop()
				default:
					var m report.Migration
					res.rate, res.r, m = s.migrate(ph.flags...)
					res.m = &m
					if ph.key == 'a' {
						ir.wrote = append(ir.wrote, s.storage)
					}
				}
				res.probe = pr.window(b, from, time.Now())
				ir.results[ph.key] = append(ir.results[ph.key], res)
				line := fmt.Sprintf("  %-58s %5.0f objects/s   probe %s", ph.label, res.rate, res.probe)
				if m := res.m; m != nil {
					cc := m.Concurrency
					line += fmt.Sprintf("\n      in flight %.1f (final %d), write p50 %.0f ms p99 %.0f ms, 429s %d, retries %d, priority level %s, peak RSS %.1f MiB, CPU %.1fs; %s",
						cc.MeanLimit, cc.FinalLimit, 1000*cc.WriteLatencyP50Seconds, 1000*cc.WriteLatencyP99Seconds, m.TooManyRequests, m.Retries,
						priorityLevelOf(m), float64(res.r.maxRSSKiB)/1024, res.r.cpu.Seconds(), strings.TrimSpace(res.r.stdout))
				}
				fmt.Println(line)
			}
		}
	}

	// The verdicts, per identity: the geometric means of each round's
	// ratios (a phase against the ceiling and the loop of its own round,
	// the probe's p99 during a phase against its idle p99 of that round).
	fmt.Printf("\n=== summary: %d objects, %d rounds; ratios are geometric means of each round's ratios\n", n, rounds)
	fmt.Printf("%-15s %-58s %9s %8s %8s %8s %9s %9s %8s\n", "identity", "phase", "objects/s", "×ceiling", "×loop", "429s", "probe p50", "probe p99", "p99×idle")
	pass := true
	verdict := func(ok bool, format string, args ...any) {
		mark := "PASS"
		if !ok {
			mark, pass = "FAIL", false
		}
		fmt.Printf("  %s  "+format+"\n", append([]any{mark}, args...)...)
	}
	var verdicts []func()
	for _, ir := range all {
		ce, lo := ir.results['c'], ir.results['b']
		idleP99 := func(i int) float64 { return ms(ir.idle[i].p99) }
		var idle []float64
		for i := range ir.idle {
			idle = append(idle, idleP99(i))
		}
		fmt.Printf("%-15s %-58s %9s %8s %8s %8s %9s %9.1f\n", ir.key, "(idle)", "", "", "", "", "", median(idle))
		stats := map[byte][3]float64{}
		for _, ph := range phases {
			rs := ir.results[ph.key]
			if len(rs) == 0 {
				fmt.Printf("%-15s %-58s (not possible as %s)\n", "", ph.label, ir.key)
				continue
			}
			var rates, xc, xl, p50, p99, xidle []float64
			var tooMany int64
			for i, r := range rs {
				rates, xc, xl = append(rates, r.rate), append(xc, r.rate/ce[i].rate), append(xl, r.rate/lo[i].rate)
				p50, p99 = append(p50, ms(r.probe.p50)), append(p99, ms(r.probe.p99))
				xidle = append(xidle, ms(r.probe.p99)/idleP99(i))
				if r.m != nil {
					tooMany += r.m.TooManyRequests
				}
			}
			stats[ph.key] = [3]float64{geomean(xc), geomean(xl), geomean(xidle)}
			fmt.Printf("%-15s %-58s %9.0f %8.2f %8.2f %8d %9.1f %9.1f %8.2f\n", "", ph.label, median(rates), geomean(xc), geomean(xl), tooMany, median(p50), median(p99), geomean(xidle))
		}
		// Issue 30's targets, round by round: (a) against (a0), the
		// measurement's share of (a)'s time, the probe's p50 during (a)
		// against its idle p50, and its p99 during (a) against its p99
		// during the sequential loop.
		var withoutMeasure, share, p50Idle, p99Loop []float64
		for i, r := range ir.results['a'] {
			if a0 := ir.results['0']; i < len(a0) {
				withoutMeasure = append(withoutMeasure, r.rate/a0[i].rate)
			}
			if r.m != nil {
				share = append(share, measureSeconds(*r.m)*r.rate/float64(n))
			}
			p50Idle = append(p50Idle, ms(r.probe.p50)/ms(ir.idle[i].p50))
			p99Loop = append(p99Loop, ms(r.probe.p99)/ms(lo[i].probe.p99))
		}
		key, st := ir.key, stats
		verdicts = append(verdicts, func() {
			fmt.Printf("as %s:\n", key)
			verdict(st['a'][0] >= 0.85, "default migrate, its loss measurement included, %.2f× this identity's ceiling (target ≥ 0.85)", st['a'][0])
			verdict(mean(share) <= 0.10, "the loss measurement takes %.0f%% of default migrate's time (target ≤ 10%%); default migrate %.2f× migrate without it (a/a0)", 100*mean(share), geomean(withoutMeasure))
			verdict(geomean(p50Idle) <= 3, "foreground p50 during default migrate %.2f× its idle p50 (target ≤ 3)", geomean(p50Idle))
			verdict(geomean(p99Loop) <= 1, "foreground p99 during default migrate %.2f× during the sequential loop of the same round (target ≤ 1: no worse than the gentlest tool)", geomean(p99Loop))
			fmt.Printf("  (reported, not targeted) default migrate %.2f× this identity's sequential loop; foreground p99 %.2f× idle\n", st['a'][1], st['a'][2])
			if key == "admin" {
				verdict(st['m'][0] >= 0.9, "migrate --max-speed %.2f× the ceiling (target ≥ 0.9)", st['m'][0])
			}
		})
	}
	fmt.Println("verdicts (no object failed in any phase: a migrate phase that failed one stops the benchmark):")
	for _, v := range verdicts {
		v()
	}
	if !pass {
		fmt.Println("some targets were missed (see FAIL above)")
	}
	if len(all) > 0 {
		ir := all[0]
		b.ReportMetric(median(rates(ir.results['a'])), ir.key+"-migrate-objects/s")
		b.ReportMetric(median(rates(ir.results['m'])), ir.key+"-max-speed-objects/s")
		var rss []float64
		for _, r := range ir.results['a'] {
			rss = append(rss, float64(r.r.maxRSSKiB)/1024)
		}
		b.ReportMetric(median(rss), "migrate-peak-RSS-MiB")
	}
}

func rates(rs []phaseResult) []float64 {
	var out []float64
	for _, r := range rs {
		out = append(out, r.rate)
	}
	return out
}

func priorityLevelOf(m *report.Migration) string {
	p := m.PriorityAndFairness
	if p == nil {
		return "(no APF headers)"
	}
	return cmp.Or(p.PriorityLevel, p.PriorityLevelUID)
}

// envInt0 is envInt that accepts 0.
func envInt0(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		b.Fatalf("%s=%q: want a non-negative integer", name, s)
	}
	return v
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

// mean is the arithmetic mean of xs (0 for none): for shares of a time.
func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
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
