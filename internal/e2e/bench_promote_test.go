package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/pager"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/e2e/apiserver"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/loss"
	migresult "github.com/crdversion/kubectl-crdversion/internal/migrate/result"
)

// BenchmarkPromoteStoragePreflight measures promote-storage's object
// preflight — loss.MeasurePromotion, what `kubectl crdversion
// promote-storage` runs before it flips the storage version — against a bare
// loop of the same requests with no bookkeeping: the paged list at the
// storage version, under the reads design the paged list at the new version
// beside it, and every object's server-side dry-run create at the new
// version (with, under the dry-run design, its dry-run no-op patch through
// it first), from as many goroutines as the preflight
// (cluster.DefaultCheckConcurrency) with pages of cluster.ChunkSize. N
// CronTabs ($CRDVERSION_BENCH_OBJECTS, default 10000) are stored at v1 with
// v2 served; nothing is written, so no phase changes what the next one
// finds. Each phase is a process of its own, as each identity of
// $CRDVERSION_BENCH_IDENTITIES (the promote-storage role of docs/rbac.md
// for the user and the ServiceAccount), in $CRDVERSION_BENCH_ROUNDS rounds
// (default 4) whose order alternates; etcd is compacted and defragmented
// before each phase, as in BenchmarkMigrate. The verdict is the geometric
// mean of each round's ratio of the loop's time to the preflight's (issue
// 30's target: ≥ 0.8). Run it with make bench-promote.
func BenchmarkPromoteStoragePreflight(b *testing.B) {
	n := envInt(b, "CRDVERSION_BENCH_OBJECTS", 10000)
	rounds := envInt(b, "CRDVERSION_BENCH_ROUNDS", 4)
	for i := 0; i < b.N; i++ {
		benchPromote(b, n, rounds)
	}
}

func benchPromote(b *testing.B, n, rounds int) {
	c := newClients(b)
	group := fmt.Sprintf("benchpromote%d.example.com", time.Now().UnixNano())
	crd := advance(b, c, group, apiextensionsv1.NamespaceScoped, 0, lifecycle.StateS0)
	start := time.Now()
	createManyCronTabs(b, c, crd, "v1", n, namespaces("bench", 10))
	fmt.Printf("created %d objects in %.1fs\n", n, time.Since(start).Seconds())
	advance2(b, c, crd.Name)
	crd = setStorage(b, c, crd.Name, "v1")
	role := docRoles(b, group)["crdversion-promote-storage"]
	for _, id := range []apiserver.Identity{apiserver.User, apiserver.ServiceAccount} {
		bindIdentity(b, c, "crdversion-bench-promote-"+id.Key, role.Rules, id)
	}
	s := &benchState{b: b, c: c, crd: crd, group: group, storage: "v1", n: n}
	fmt.Printf("promote-storage %s v2's object preflight: %d objects (10 namespaces) stored at v1, kube-apiserver v1.37.2 in-process, pages of %d, %d objects at once\n",
		crd.Name, n, cluster.ChunkSize, cluster.DefaultCheckConcurrency)

	type idResult struct {
		key    string
		ratios []float64
		pre    []float64
		design string
	}
	var all []idResult
	for _, key := range benchIdentities(b) {
		id, _ := apiserver.IdentityByKey(key)
		s.kubeconfig = identityKubeconfig(b, id)
		fmt.Printf("\n=== as %s (%s)\n", key, id.User)
		ir := idResult{key: key}
		for round := 0; round < rounds; round++ {
			order := []string{"preflight", "loop"}
			if round%2 == 1 {
				slices.Reverse(order)
			}
			seconds := map[string]float64{}
			for _, mode := range order {
				s.settle()
				spec := crd.Name + "/v2/" + mode
				if mode == "loop" {
					spec += "/" + ir.design
				}
				var design string
				seconds[mode], design = s.promoteChild(spec)
				if mode == "preflight" {
					if ir.design != "" && design != ir.design {
						b.Fatalf("the preflight measured by %s in one round and by %s in another", ir.design, design)
					}
					ir.design = design
				}
			}
			ratio := seconds["loop"] / seconds["preflight"]
			ir.ratios, ir.pre = append(ir.ratios, ratio), append(ir.pre, seconds["preflight"])
			fmt.Printf("round %d (%s first): preflight %6.2fs (%5.0f objects/s, by %s)   bare loop of its requests %6.2fs   loop/preflight %.2f\n",
				round+1, order[0], seconds["preflight"], float64(n)/seconds["preflight"], ir.design, seconds["loop"], ratio)
		}
		all = append(all, ir)
	}
	fmt.Printf("\n=== summary: %d objects, %d rounds; the ratio is the geometric mean of each round's\n", n, rounds)
	pass := true
	for _, ir := range all {
		r := geomean(ir.ratios)
		mark := "PASS"
		if r < 0.8 {
			mark, pass = "FAIL", false
		}
		fmt.Printf("  %s  as %-15s the object preflight (by %s, median %.2fs) %.2f× the speed of a bare loop of its requests (target ≥ 0.8)\n", mark, ir.key, ir.design, median(ir.pre), r)
	}
	if !pass {
		fmt.Println("some targets were missed (see FAIL above)")
	}
	if len(all) > 0 {
		b.ReportMetric(geomean(all[0].ratios), all[0].key+"-preflight/loop")
	}
}

// promoteChild runs this test binary's promote mode (promoteProcess) as
// s.kubeconfig's identity and returns its seconds and, for the preflight,
// the design it measured by.
func (s *benchState) promoteChild(spec string) (float64, string) {
	self, err := os.Executable()
	if err != nil {
		s.b.Fatal(err)
	}
	r := executeWithin(s.b, time.Hour, self, []string{"CRDVERSION_BENCH_PROMOTE=" + spec, "KUBECONFIG=" + s.kubeconfig})
	var seconds float64
	var count int
	var design string
	if _, err := fmt.Sscanf(r.stdout, "%f %d %s", &seconds, &count, &design); r.code != 0 || err != nil || count != s.n {
		s.b.Fatalf("%s: exit %d %v, %d of %d objects\n%s\n%s", spec, r.code, err, count, s.n, r.stdout, r.stderr)
	}
	return seconds, design
}

// promoteProcess is the test binary's promote mode
// (CRDVERSION_BENCH_PROMOTE=crd/to/preflight or crd/to/loop/design, as
// $KUBECONFIG): the preflight runs loss.MeasurePromotion with
// promote-storage's defaults and fails unless it judged every object and
// found nothing; the loop sends the requests of the design named (reads or
// dryRun) and fails unless each dry-run create was answered AlreadyExists
// (accepted as new, then found to be the object's own name). It prints the
// seconds, the objects and the design.
func promoteProcess(spec string) error {
	parts := strings.Split(spec, "/")
	if len(parts) < 3 || (parts[2] == "loop") != (len(parts) == 4) || len(parts) > 4 {
		return fmt.Errorf("CRDVERSION_BENCH_PROMOTE=%q: want crd/to/preflight or crd/to/loop/design", spec)
	}
	name, to, mode := parts[0], parts[1], parts[2]
	cl, err := envClient()
	if err != nil {
		return err
	}
	ctx := context.Background()
	crd, err := cl.CRDs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	start := time.Now()
	if mode == "preflight" {
		p, err := loss.MeasurePromotion(ctx, cl, crd, to, loss.PromotionOptions{Options: loss.Options{PageSize: cluster.ChunkSize, FieldManager: "kubectl-crdversion"}})
		if err != nil {
			return err
		}
		seconds, f := time.Since(start).Seconds(), p.Found
		if f.ListError != "" || len(f.Lost)+len(f.Changed)+len(f.Problems)+len(f.InvalidAsNew)+len(f.Unreadable)+len(f.Forbidden) > 0 {
			return fmt.Errorf("the preflight found something: %+v", f)
		}
		fmt.Printf("%.3f %d %s\n", seconds, f.Listed, p.Design)
		return nil
	}
	design := parts[3]
	if design != migresult.DesignReads && design != migresult.DesignDryRun {
		return fmt.Errorf("CRDVERSION_BENCH_PROMOTE=%q: the design is %s or %s", spec, migresult.DesignReads, migresult.DesignDryRun)
	}
	n, err := bareLoop(ctx, cl.Dynamic, crd, to, design)
	if err != nil {
		return err
	}
	fmt.Printf("%.3f %d %s\n", time.Since(start).Seconds(), n, design)
	return nil
}

// envClient is the plugin's own cluster client on $KUBECONFIG, for the
// test binary's child modes.
func envClient() (*cluster.Client, error) {
	kubeconfig := os.Getenv("KUBECONFIG")
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kubeconfig
	return cluster.New(flags)
}

// bareLoop sends the preflight's requests: by reads, the paged list at the
// storage version beside the paged list at to, whose every object is sent
// as a dry-run create at to; by dry runs, the list at the storage version,
// and for each object a dry-run no-op patch through to and then the
// dry-run create. It returns the objects created.
func bareLoop(ctx context.Context, dyn dynamic.Interface, crd *apiextensionsv1.CustomResourceDefinition, to, design string) (int, error) {
	from := dyn.Resource(cluster.GVR(crd, lifecycle.StorageVersion(crd)))
	at := dyn.Resource(cluster.GVR(crd, to))
	g, gctx := errgroup.WithContext(ctx)
	list := func(res dynamic.NamespaceableResourceInterface, each func(*unstructured.Unstructured) error) error {
		p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) { return res.List(ctx, opts) })
		p.PageSize = cluster.ChunkSize
		return p.EachListItem(gctx, metav1.ListOptions{}, func(obj runtime.Object) error { return each(obj.(*unstructured.Unstructured)) })
	}
	var created atomic.Int64
	writes, wctx := errgroup.WithContext(ctx)
	writes.SetLimit(cluster.DefaultCheckConcurrency)
	write := func(u *unstructured.Unstructured) error {
		writes.Go(func() error {
			res := at.Namespace(u.GetNamespace())
			if design == migresult.DesignDryRun {
				patch := fmt.Sprintf(`{"metadata":{"uid":%q,"resourceVersion":%q}}`, u.GetUID(), u.GetResourceVersion())
				got, err := res.Patch(wctx, u.GetName(), types.MergePatchType, []byte(patch), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: "kubectl-crdversion"})
				if err != nil {
					return err
				}
				u = got
			}
			if _, err := res.Create(wctx, cluster.AsNewObject(u), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: "kubectl-crdversion"}); !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("the dry-run create of %s/%s: want AlreadyExists, got %v", u.GetNamespace(), u.GetName(), err)
			}
			created.Add(1)
			return nil
		})
		return nil
	}
	if design == migresult.DesignReads {
		g.Go(func() error { return list(from, func(*unstructured.Unstructured) error { return nil }) })
		g.Go(func() error { return list(at, write) })
	} else {
		g.Go(func() error { return list(from, write) })
	}
	err := g.Wait()
	if werr := writes.Wait(); err == nil {
		err = werr
	}
	return int(created.Load()), err
}
