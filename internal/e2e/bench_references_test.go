package e2e

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
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

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdversion/kubectl-crdversion/internal/e2e/apiserver"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// BenchmarkReferenceInventory measures the references inventory (issue
// 28) as a user runs it — kubectl crdversion status CRD --references, the
// built binary, as crdversion-user bound to the status and references
// roles of docs/rbac.md (API Priority and Fairness: global-default) — on
// the in-process kube-apiserver with objects spread over K custom resource
// kinds ($CRDVERSION_BENCH_KINDS, default 50) in 10 namespaces, at each
// size of $CRDVERSION_BENCH_INVENTORY (comma-separated totals, default
// 10000,100000; objects are added between sizes). One object in 100 has
// an owner reference to the old version of the CRD whose references are
// counted, so the inventory has something to find, and the count is
// checked. At each size it runs $CRDVERSION_BENCH_ROUNDS times (default
// 3) and prints each run and the median: wall time, objects read per
// second, LIST requests the API server counted
// (apiserver_request_total{verb="LIST"}), and the process's peak RSS and
// CPU time. Run it with make bench-references.
func BenchmarkReferenceInventory(b *testing.B) {
	var sizes []int
	for _, s := range strings.Split(cmp.Or(os.Getenv("CRDVERSION_BENCH_INVENTORY"), "10000,100000"), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			b.Fatalf("CRDVERSION_BENCH_INVENTORY: %q is not a positive number", s)
		}
		sizes = append(sizes, n)
	}
	kinds := envInt(b, "CRDVERSION_BENCH_KINDS", 50)
	rounds := envInt(b, "CRDVERSION_BENCH_ROUNDS", 3)
	c := newClients(b)
	const group = "benchinv.example.com"
	preserve := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTo(true)}}
	owners := createCRD(b, c, &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "owners." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "owners", Singular: "owner", Kind: "Owner", ListKind: "OwnerList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Schema: preserve},
				{Name: "v2", Served: true, Storage: true, Schema: preserve},
			},
		},
	})
	var gvrs []schema.GroupVersionResource
	for k := range kinds {
		plural := fmt.Sprintf("kind%02ds", k)
		createCRD(b, c, &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: group, Scope: apiextensionsv1.NamespaceScoped,
				Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: fmt.Sprintf("kind%02d", k), Kind: fmt.Sprintf("Kind%02d", k), ListKind: fmt.Sprintf("Kind%02dList", k)},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true, Schema: preserve}},
			},
		})
		gvrs = append(gvrs, schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural})
	}
	nss := namespaces("inventory", 10)
	for _, ns := range nss {
		ensureNamespace(b, c, ns)
	}
	user := apiserver.User
	var rules = slices.Clone(docRoles(b, group)["crdversion-status"].Rules)
	rules = append(rules, docRoles(b, group)["crdversion-references"].Rules...)
	bindIdentity(b, c, "crdversion-bench-inventory", rules, user)
	kubeconfig := identityKubeconfig(b, user)

	created := 0
	fmt.Printf("references inventory: %d kinds, 10 namespaces, kube-apiserver v1.37.2 in-process, %d CPUs, as %s\n", kinds, runtime.NumCPU(), user.User)
	var peaks []float64
	for _, size := range sizes {
		start := time.Now()
		createSpread(b, c, gvrs, nss, created, size, group+"/v1")
		fmt.Printf("created objects %d..%d in %.1fs\n", created, size, time.Since(start).Seconds())
		created = size
		want := size / 100
		var secs, rss, cpu, lists, read []float64
		for round := range rounds {
			before := listRequests(b, c)
			t0 := time.Now()
			r := executeWithin(b, time.Hour, filepath.Join(pluginDir, "kubectl-crdversion"), nil,
				"status", owners.Name, "--references", "-o", "json", "--kubeconfig", kubeconfig, "--cache-dir", filepath.Join(b.TempDir(), "cache"))
			elapsed := time.Since(t0)
			n := listRequests(b, c) - before
			var st report.Status
			if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.References == nil {
				b.Fatalf("status --references: exit %d (%v)\n%s\n%s", r.code, err, r.stdout, r.stderr)
			}
			refs := st.References
			if len(refs.Unseen) > 0 || refs.Objects < int64(size) || len(refs.Versions) != 1 || refs.Versions[0].Version != "v1" || refs.Versions[0].References != want {
				b.Fatalf("status --references at %d objects: read %d objects, unseen %v, versions %+v; want every object read and %d references to v1",
					size, refs.Objects, refs.Unseen, refs.Versions, want)
			}
			secs = append(secs, elapsed.Seconds())
			rss = append(rss, float64(r.maxRSSKiB)/1024)
			cpu = append(cpu, r.cpu.Seconds())
			lists = append(lists, float64(n))
			read = append(read, float64(refs.Objects))
			fmt.Printf("  %6d objects, round %d: %6.2f s  %8.0f objects/s  LIST %5d  peak RSS %5.0f MiB  CPU %5.2f s  (%d objects of %d resources read)\n",
				size, round+1, elapsed.Seconds(), float64(refs.Objects)/elapsed.Seconds(), n, float64(r.maxRSSKiB)/1024, r.cpu.Seconds(), refs.Objects, refs.Resources)
		}
		fmt.Printf("  %6d objects, median:  %6.2f s  %8.0f objects/s  LIST %5.0f  peak RSS %5.0f MiB  CPU %5.2f s\n",
			size, median(secs), median(read)/median(secs), median(lists), median(rss), median(cpu))
		peaks = append(peaks, median(rss))
	}
	if len(peaks) > 1 {
		fmt.Printf("peak RSS at %d objects / at %d: %.2f\n", sizes[len(sizes)-1], sizes[0], peaks[len(peaks)-1]/peaks[0])
	}
}

// createSpread creates objects from..to-1 round-robin over gvrs and
// namespaces, 16 at a time; one in 100 has an owner reference to
// ownerAPIVersion's Owner.
func createSpread(b *testing.B, c clients, gvrs []schema.GroupVersionResource, nss []string, from, to int, ownerAPIVersion string) {
	b.Helper()
	var wg sync.WaitGroup
	var failed atomic.Value
	next := atomic.Int64{}
	next.Store(int64(from))
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= to || failed.Load() != nil {
					return
				}
				gvr := gvrs[i%len(gvrs)]
				meta := map[string]any{"name": fmt.Sprintf("obj-%06d", i)}
				if i%100 == 0 {
					meta["ownerReferences"] = []any{map[string]any{"apiVersion": ownerAPIVersion, "kind": "Owner", "name": "o", "uid": "0b1d0b1d-0000-0000-0000-000000000000"}}
				}
				obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gvr.GroupVersion().String(), "kind": "Kind" + strings.TrimSuffix(strings.TrimPrefix(gvr.Resource, "kind"), "s"),
					"metadata": meta, "spec": map[string]any{"size": int64(i)}}}
				if _, err := c.dyn.Resource(gvr).Namespace(nss[i%len(nss)]).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatalf("creating objects: %v", err)
	}
}

// listRequests is the API server's count of LIST requests
// (apiserver_request_total{verb="LIST"}, every resource).
func listRequests(b *testing.B, c clients) int {
	b.Helper()
	raw, err := c.kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		b.Fatal(err)
	}
	n := 0.0
	for _, m := range families["apiserver_request_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "verb" && l.GetValue() == "LIST" {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return int(n)
}
