package e2e

import (
	"context"
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/crdversion/kubectl-crdversion/internal/e2e/fixture"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// realCRD reads a CRD (and objects) from testdata and moves them to group,
// so that a test can own them whatever other tests install. keep, when set,
// lists the versions to keep in spec.versions.
func realCRD(t *testing.T, group string, keep []string, paths ...string) (*apiextensionsv1.CustomResourceDefinition, []*unstructured.Unstructured) {
	t.Helper()
	objs := readTestdata(t, paths...)
	var err error
	var crd *apiextensionsv1.CustomResourceDefinition
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if fixture.IsCRD(o) {
			if crd, err = fixture.CRD(o); err != nil {
				t.Fatal(err)
			}
			continue
		}
		_, version, _ := strings.Cut(o.GetAPIVersion(), "/")
		o.SetAPIVersion(group + "/" + version)
		out = append(out, o)
	}
	crd.Spec.Group = group
	crd.Name = crd.Spec.Names.Plural + "." + group
	crd.ResourceVersion, crd.Status = "", apiextensionsv1.CustomResourceDefinitionStatus{}
	if keep != nil {
		var versions []apiextensionsv1.CustomResourceDefinitionVersion
		for _, v := range crd.Spec.Versions {
			for _, k := range keep {
				if v.Name == k {
					versions = append(versions, v)
				}
			}
		}
		crd.Spec.Versions = versions
		crd.Spec.Versions[0].Storage, crd.Spec.Versions[0].Served = true, true
	}
	return crd, out
}

// applyObject creates or updates obj with server-side apply as manager,
// through version.
func applyObject(t *testing.T, c clients, crd *apiextensionsv1.CustomResourceDefinition, version, manager string, obj *unstructured.Unstructured) error {
	t.Helper()
	return applyObjectWith(t, c, crd, version, manager, obj, nil)
}

// applyObjectWith is applyObject with dryRun (nil, or {"All"}).
func applyObjectWith(t *testing.T, c clients, crd *apiextensionsv1.CustomResourceDefinition, version, manager string, obj *unstructured.Unstructured, dryRun []string) error {
	t.Helper()
	obj = obj.DeepCopy()
	obj.SetAPIVersion(crd.Spec.Group + "/" + version)
	ns := obj.GetNamespace()
	if ns == "" && crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
		ns = "default"
	}
	data, err := json.Marshal(obj.Object)
	if err != nil {
		t.Fatal(err)
	}
	_, err = resource(c, crd, version, ns).Patch(context.Background(), obj.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: manager, Force: ptr.To(true), DryRun: dryRun})
	return err
}

// healthy checks that status reports want with no warning or error.
func healthy(t *testing.T, name string, want lifecycle.State) report.Status {
	t.Helper()
	s := statusJSON(t, name)
	if s.State != want {
		t.Errorf("%s: state %s, want %s", name, s.State, want)
	}
	for _, f := range s.Findings {
		if f.Severity != lifecycle.SeverityInfo {
			t.Errorf("%s: %s finding %s: %s", name, f.Severity, f.Code, f.Message)
		}
	}
	return s
}

// TestRetireLifecycle takes three real CRDs from S0 to S6 with the plugin:
// Gateway API's HTTPRoute (conversion None, identical schemas, the v1
// Gateway API added), Istio's VirtualService (three versions, upgraded
// from Istio 1.21 to 1.22 on the way), and a CronTab behind a conversion
// webhook. Objects are written with server-side apply, so their
// managedFields name the old versions; every object's content at the new
// version is the same before and after.
func TestRetireLifecycle(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	retireArgs := []string{"--migrate", "--clean-managed-fields", "--skip-usage-check"}

	t.Run("Gateway API HTTPRoute", func(t *testing.T) {
		crd, objs := realCRD(t, "gateway.retire.test", []string{"v1beta1"},
			"crds/gateway-api/v0.6.2/httproutes.nodesc.yaml", "crds/gateway-api/v0.6.2/examples/standard_basic-http.yaml")
		crd = createCRD(t, c, crd)
		name := crd.Name
		var routes []*unstructured.Unstructured
		for _, o := range objs {
			if o.GetKind() == "HTTPRoute" {
				routes = append(routes, o)
			}
		}
		if len(routes) == 0 {
			t.Fatal("no HTTPRoute in the example")
		}
		for i := range 10 {
			r := routes[i%len(routes)].DeepCopy()
			r.SetName(r.GetName() + "-" + itoa(i))
			if err := applyObject(t, c, crd, "v1beta1", "gitops", r); err != nil {
				t.Fatal(err)
			}
		}
		healthy(t, name, lifecycle.StateS0)

		mustRun(t, "add-version", name, "v1", "--from", "v1beta1")
		before := contents(t, c, crd, "v1")
		mustRun(t, "promote-storage", name, "v1")
		mustRun(t, "migrate", name)
		mustRun(t, "deprecate", name, "v1beta1")
		healthyOrDeprecated(t, name, lifecycle.StateS4)
		r := mustRun(t, append([]string{"retire", name, "v1beta1"}, retireArgs...)...)
		if !strings.Contains(r.stdout, "v1beta1 retired from "+name) {
			t.Errorf("retire output:\n%s", r.stdout)
		}
		healthy(t, name, lifecycle.StateS6)
		if after := contents(t, c, crd, "v1"); !reflect.DeepEqual(before, after) {
			t.Errorf("contents at v1 changed:\nbefore %v\nafter  %v", before, after)
		}
		// The applier keeps working at the remaining version.
		if err := applyObject(t, c, crd, "v1", "gitops", routes[0]); err != nil {
			t.Errorf("server-side apply at v1 after the retirement: %v", err)
		}
	})

	t.Run("Istio VirtualService, three versions", func(t *testing.T) {
		crd, objs := realCRD(t, "istio.retire.test", []string{"v1alpha3"},
			"crds/istio/1.21.0/virtualservices.nodesc.yaml", "crds/istio/1.21.0/examples")
		crd = createCRD(t, c, crd)
		name := crd.Name
		for _, o := range objs {
			if err := applyObject(t, c, crd, "v1alpha3", "istioctl", o); err != nil {
				t.Fatal(err)
			}
		}
		healthy(t, name, lifecycle.StateS0)
		// Upgrade to Istio 1.22's CRD, as its installer does: v1 added,
		// storage v1alpha3 -> v1beta1.
		next, _ := realCRD(t, "istio.retire.test", nil, "crds/istio/1.22.0/virtualservices.nodesc.yaml")
		updateCRD(t, c, name, func(live *apiextensionsv1.CustomResourceDefinition) { live.Spec.Versions = next.Spec.Versions })
		before := contents(t, c, crd, "v1")

		mustRun(t, "promote-storage", name, "v1")
		mustRun(t, "migrate", name)
		for _, old := range []string{"v1alpha3", "v1beta1"} {
			mustRun(t, "deprecate", name, old)
			mustRun(t, append([]string{"retire", name, old}, retireArgs...)...)
		}
		s := healthy(t, name, lifecycle.StateS6)
		if len(s.Versions) != 1 || s.Versions[0].Name != "v1" || !reflect.DeepEqual(s.StoredVersions, []string{"v1"}) {
			t.Errorf("versions %+v, storedVersions %v; want v1 only", s.Versions, s.StoredVersions)
		}
		if after := contents(t, c, crd, "v1"); !reflect.DeepEqual(before, after) || len(after) != len(objs) {
			t.Errorf("contents at v1 changed (%d objects, %d applied):\nbefore %v\nafter  %v", len(after), len(objs), before, after)
		}
		for _, o := range objs {
			if err := applyObject(t, c, crd, "v1", "istioctl", o); err != nil {
				t.Errorf("server-side apply of %s at v1 after the retirement: %v", o.GetName(), err)
			}
		}
	})

	t.Run("CronTab with a conversion webhook", func(t *testing.T) {
		hook := newConversionWebhook(t)
		crd := advance(t, c, "retirehook.example.com", apiextensionsv1.NamespaceScoped, 6, lifecycle.StateS0)
		name := crd.Name
		mustRun(t, "add-version", name, "v2", "--conversion", "Webhook", "--webhook-url", hook.URL+"/convert", "--ca-bundle-file", hook.caFile(t))
		before := contents(t, c, crd, "v2")
		mustRun(t, "promote-storage", name, "v2")
		mustRun(t, "migrate", name)
		mustRun(t, "deprecate", name, "v1")
		calls := hook.calls.Load()
		r := mustRun(t, append([]string{"retire", name, "v1"}, retireArgs...)...)
		if !strings.Contains(r.stdout, "spec.conversion.strategy can become None") {
			t.Errorf("retire does not say that the webhook can go:\n%s", r.stdout)
		}
		healthy(t, name, lifecycle.StateS6)
		if after := contents(t, c, crd, "v2"); !reflect.DeepEqual(before, after) || len(after) != 6 {
			t.Errorf("contents at v2 changed:\nbefore %v\nafter  %v", before, after)
		}
		if hook.calls.Load() == calls {
			t.Error("the webhook was not called during retire (the migration rewrites objects stored at v1 through it)")
		}
	})
}

// healthyOrDeprecated is healthy for S4, where the deprecated version is
// reported as a warning by design.
func healthyOrDeprecated(t *testing.T, name string, want lifecycle.State) {
	t.Helper()
	s := statusJSON(t, name)
	if s.State != want {
		t.Errorf("%s: state %s, want %s", name, s.State, want)
	}
	for _, f := range s.Findings {
		if f.Severity == lifecycle.SeverityError {
			t.Errorf("%s: error finding %s: %s", name, f.Code, f.Message)
		}
	}
}

// TestUsageWindowBelowTheFloor (issue 33, the third attack): a window of
// one nanosecond, or of 3 s beside a client that lists every 10 s, saw no
// request and passed. A window shorter than --usage-min-window (15 s by
// default) proves nothing: unserve and retire refuse as unknown, naming
// the floor and the window that would do, and change nothing; lowering the
// floor is the user's explicit choice.
func TestUsageWindowBelowTheFloor(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := advance(t, c, "floor.example.com", apiextensionsv1.NamespaceScoped, 1, lifecycle.StateS4)
	name := crd.Name
	// The objects' creation through v1 came before the windows of 1ns and
	// 1ms: the test knows it, and says so (--usage-history=0,
	// TestUsageHistory).
	for _, window := range []string{"1ns", "1ms"} {
		refused(t, c, name, []string{"whether clients still use floor.example.com/v1 crontabs is unknown",
			"the window of " + window + " is shorter than the floor of 15s (--usage-min-window)",
			"look back at least 15s: --usage-window 15s or longer"},
			"unserve", name, "v1", "--usage-window="+window, "--usage-history=0")
	}
	// A window of 3s may still hold the creation (a write through v1 in
	// managedFields: a client, which refuses too); whatever the other
	// sources say, the metrics read 3s apart prove nothing.
	refused(t, c, name, []string{"/metrics of 1 API server instance(s) [Unknown]: NOT SEEN: the window of 3s is shorter than the floor of 15s (--usage-min-window)"},
		"unserve", name, "v1", "--usage-window=3s", "--usage-history=0")
	refused(t, c, name, []string{"stopped at step 1", "shorter than the floor of 15s"},
		"retire", name, "v1", "--usage-window=1ns", "--usage-history=0", "--clean-managed-fields")
	if v := lifecycle.FindVersion(getCRD(t, c, name), "v1"); v == nil || !v.Served {
		t.Fatal("refused, yet v1 is no longer served")
	}
	// The objects' creation through v1 came before the window: the test
	// knows it, and says so (TestUsageHistory).
	r := mustRun(t, "unserve", name, "v1", "--usage-window=1s", "--usage-min-window=1s", "--usage-history=0")
	mustContain(t, "unserve's output", r.stdout, "no client of floor.example.com/v1 crontabs seen in the last 1s")
}

// TestUsageHistory (issue 33, the first two attacks). A client that lists
// the version less often than once a window, checked between two of its
// LISTs, passed: the window saw nothing, and the counters' own record of
// its earlier LISTs was printed and ignored. An operator that applies the
// same object again and again changes nothing, so its managedFields entry
// keeps the time of its last change, two minutes back: outside the window,
// it passed, and the next step's advice (retire --clean-managed-fields)
// would relabel its entries. Now requests counted before the window make
// the verdict unknown, a write inside --usage-history is a client, the
// advice printed once the user says otherwise (--usage-history 0) is
// refused by retire's own check, and nothing is changed by any refusal.
func TestUsageHistory(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	// advance creates the objects through v1 and rewrites them through v2.
	crd := advance(t, c, "history.example.com", apiextensionsv1.NamespaceScoped, 1, lifecycle.StateS4)
	name := crd.Name
	short := []string{"--usage-window=2s", "--usage-min-window=2s"}
	before := regexp.MustCompile(`(\d+) request\(s\) to history\.example\.com/v1 since it started at \S+ came before the last [0-9.]+s \(([^)]*)\)`)

	// Before the lister: the objects' creation (a POST through v1) is what
	// came before the window, and its managedFields entry (manager
	// e2e.test, seconds old) is a writer inside the history span.
	creator := regexp.MustCompile(`managedFields of crontabs \[InUse\]: manager e2e\.test \(Update\) wrote 1 object\(s\) through history\.example\.com/v1, last \S+ \((inside the window|before the window, inside the 24h0m0s history: it may call again)\)`)
	r := refused(t, c, name, []string{"clients still use history.example.com/v1 crontabs (seen by: managedFields of crontabs)"},
		append([]string{"unserve", name, "v1"}, short...)...)
	m := before.FindStringSubmatch(r.stdout)
	if m == nil || m[2] != "POST 1" || !creator.MatchString(r.stdout) {
		t.Fatalf("before any LIST: the requests before the window %v, want POST 1 (the creation), and the creator's entry:\n%s", m, r.stdout)
	}
	// The lister, between two of its LISTs: its LIST came before the
	// window; the metrics source is Unknown whatever the others say.
	v1 := resource(c, crd, "v1", "team-a")
	if _, err := v1.List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	r = refused(t, c, name, []string{"/metrics of 1 API server instance(s) [Unknown]: NOT SEEN:"}, append([]string{"unserve", name, "v1"}, short...)...)
	if m := before.FindStringSubmatch(r.stdout); m == nil || m[2] != "LIST 1, POST 1" {
		t.Errorf("the LIST before the window is not named: %v\n%s", m, r.stdout)
	}

	// The no-op applier: its entry names v1 with the time of its last
	// change, two minutes back (written here through v2, so that v1's
	// counters do not move).
	last := time.Now().Add(-2 * time.Minute).UTC().Truncate(time.Second)
	v2 := resource(c, crd, "v2", "team-a")
	obj, err := v2.Get(context.Background(), "crontab-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	entries := append(obj.GetManagedFields(), metav1.ManagedFieldsEntry{Manager: "my-operator", Operation: metav1.ManagedFieldsOperationApply,
		APIVersion: "history.example.com/v1", Time: &metav1.Time{Time: last}, FieldsType: "FieldsV1",
		FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:image":{}}}`)})
	obj.SetManagedFields(entries)
	if _, err := v2.Update(context.Background(), obj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	applier := "manager my-operator (Apply) wrote 1 object(s) through history.example.com/v1, last " + last.Format(time.RFC3339) + " (before the window, inside the 24h0m0s history: it may call again)"
	refused(t, c, name, []string{"clients still use history.example.com/v1 crontabs (seen by: managedFields of crontabs)", applier,
		"no longer write(s) through history.example.com/v1 (a one-off apply, a controller since upgraded)"}, append([]string{"unserve", name, "v1"}, short...)...)
	refused(t, c, name, []string{"stopped at step 1", "clients still use history.example.com/v1 crontabs", applier},
		append([]string{"retire", name, "v1", "--clean-managed-fields"}, short...)...)

	// The user knows the earlier requests and says so: unserve passes on
	// the window alone, and its advice is retire --clean-managed-fields,
	// which checks with the default history and refuses.
	r = mustRun(t, append([]string{"unserve", name, "v1", "--usage-history=0"}, short...)...)
	mustContain(t, "unserve's output", r.stdout, "no client of history.example.com/v1 crontabs seen in the last 2s")
	next := regexp.MustCompile(`(?m)^Next: kubectl crdversion (retire \S+ v1 --migrate --clean-managed-fields.*)$`).FindStringSubmatch(r.stdout)
	if next == nil {
		t.Fatalf("no retire --migrate --clean-managed-fields advice:\n%s", r.stdout)
	}
	// v1 is no longer served: no request can be counted, but the entry
	// still records my-operator's write, and the clean-up would relabel it.
	refused(t, c, name, []string{"stopped at step 6", "manager my-operator (Apply) wrote through history.example.com/v1 inside the last 24h0m0s", "a client, not a leftover; its entries are not rewritten", applier},
		append(strings.Fields(next[1]), short...)...)
	got, err := v2.Get(context.Background(), "crontab-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(got.GetManagedFields(), func(e metav1.ManagedFieldsEntry) bool {
		return e.Manager == "my-operator" && e.APIVersion == "history.example.com/v1"
	}) {
		t.Errorf("the applier's entry was relabelled: %+v", got.GetManagedFields())
	}
}

// TestRetireClientUsage: a client of the old version during the window
// blocks unserve and retire, and the output names the verbs and counts; an
// open watch blocks them too; once the clients are gone, retire runs.
func TestRetireClientUsage(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := advance(t, c, "usage.example.com", apiextensionsv1.NamespaceScoped, 3, lifecycle.StateS4)
	name := crd.Name
	v1 := resource(c, crd, "v1", "team-a")

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var served atomic.Bool
	t.Cleanup(func() { stop(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			_, errList := v1.List(ctx, metav1.ListOptions{})
			_, errGet := v1.Get(ctx, "crontab-0", metav1.GetOptions{})
			if errList == nil && errGet == nil {
				served.Store(true)
			}
		}
	}()
	// Right after the CRD edit of advance the first requests may be
	// answered 429 and retried a second later: measure once the client
	// is served.
	waitFor(t, "the client's list and get to be served", func() (bool, error) { return served.Load(), nil })
	// /metrics sees the client. When advance ran fast, the objects'
	// creation through v1 (by this test) is still inside the 1s window of
	// managedFields too, which adds "and managedFields of crontabs".
	r := refused(t, c, name, []string{"clients still use usage.example.com/v1 crontabs (seen by: /metrics of 1 API server instance(s)"}, "unserve", name, "v1", "--usage-window=1s")
	evidence := regexp.MustCompile(`requests in the last [0-9.]+s: GET [1-9][0-9]*, LIST [1-9][0-9]*`)
	if !evidence.MatchString(r.stdout) {
		t.Errorf("unserve does not name the verbs and counts:\n%s", r.stdout)
	}
	r = refused(t, c, name, []string{"stopped at step 1", "nothing was changed", "clients still use usage.example.com/v1 crontabs"}, "retire", name, "v1", "--usage-window=1s", "--clean-managed-fields")
	if !evidence.MatchString(r.stdout) || !strings.Contains(r.stdout, "1. BLOCKED") || !strings.Contains(r.stdout, "/metrics of 1 API server instance(s)") {
		t.Errorf("retire does not show the evidence:\n%s", r.stdout)
	}
	stop()
	wg.Wait()

	// An informer's watch sends nothing for long stretches; it is seen as
	// an open request.
	stopWatching := keepWatching(t, v1)
	r = refused(t, c, name, []string{"stopped at step 1"}, "retire", name, "v1", "--usage-window=0", "--clean-managed-fields")
	if !strings.Contains(r.stdout, "open now: WATCH 1") {
		t.Errorf("retire does not report the open watch:\n%s", r.stdout)
	}
	stopWatching()
	// The clients' requests came before the windows below: the test knows
	// they stopped, and says so (--usage-history=0, TestUsageHistory).
	waitFor(t, "the watch to end on the server", func() (bool, error) {
		return plugin(t, "retire", name, "v1", "--usage-window=500ms", "--usage-min-window=500ms", "--usage-history=0", "--dry-run", "--migrate", "--clean-managed-fields").err == nil, nil
	})

	mustRun(t, "retire", name, "v1", "--usage-window=200ms", "--usage-min-window=200ms", "--usage-history=0", "--migrate", "--clean-managed-fields")
	healthy(t, name, lifecycle.StateS6)
}

// TestRetireManagedFields reproduces kubernetes/kubernetes#111937 — after an
// old version is removed, server-side apply on objects whose managedFields
// still name it fails — and shows retire refusing to remove the version
// until the entries are rewritten, and apply working after it did.
func TestRetireManagedFields(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	// s5 builds a CRD whose objects were applied at v1, then migrated to v2,
	// with v1 unserved.
	s5 := func(group string) (*apiextensionsv1.CustomResourceDefinition, *unstructured.Unstructured) {
		crd := advance(t, c, group, apiextensionsv1.NamespaceScoped, 0, lifecycle.StateS0)
		ensureNamespace(t, c, "team-a")
		obj := &unstructured.Unstructured{Object: map[string]any{
			"kind": "CronTab", "metadata": map[string]any{"name": "applied", "namespace": "team-a"},
			"spec": map[string]any{"cronSpec": "0 * * * *", "image": "example/cron:1"},
		}}
		if err := applyObject(t, c, crd, "v1", "gitops", obj); err != nil {
			t.Fatal(err)
		}
		mustRun(t, "add-version", crd.Name, "v2", "--from", "v1")
		mustRun(t, "promote-storage", crd.Name, "v2")
		mustRun(t, "migrate", crd.Name)
		mustRun(t, "unserve", crd.Name, "v1", "--skip-usage-check")
		return getCRD(t, c, crd.Name), obj
	}

	// Without the clean-up: the version removed by hand, apply fails.
	broken, obj := s5("mf-broken.example.com")
	updateCRD(t, c, broken.Name, func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Versions = crd.Spec.Versions[1:] })
	obj.Object["spec"].(map[string]any)["image"] = "example/cron:2"
	// The API server serves the CRD without v1 a moment after the edit
	// (its handler is rebuilt; on a loaded machine, seconds). A dry-run
	// apply, which leaves managedFields as they are, tells when: a real
	// apply served by the old handler would rewrite the entry at v2 and
	// hide the bug.
	const invalid = "request to convert CR to an invalid group/version: mf-broken.example.com/v1"
	waitFor(t, "the API server to serve "+broken.Name+" without v1", func() (bool, error) {
		err := applyObjectWith(t, c, broken, "v2", "gitops", obj, []string{metav1.DryRunAll})
		return err != nil && strings.Contains(err.Error(), invalid), nil
	})
	err := applyObject(t, c, broken, "v2", "gitops", obj)
	if err == nil || !strings.Contains(err.Error(), invalid) {
		t.Fatalf("server-side apply after removing v1 by hand: %v; want the invalid group/version failure", err)
	}

	// With retire: step 6 blocks without --clean-managed-fields.
	fixed, obj := s5("mf-fixed.example.com")
	name := fixed.Name
	refused(t, c, name, []string{"stopped at step 6", "team-a/applied", "kubernetes/kubernetes#111937", "--clean-managed-fields"}, "retire", name, "v1", "--migrate", "--skip-usage-check")
	mustRun(t, "retire", name, "v1", "--migrate", "--clean-managed-fields", "--skip-usage-check")
	healthy(t, name, lifecycle.StateS6)
	live, err := resource(c, fixed, "v2", "team-a").Get(context.Background(), "applied", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range live.GetManagedFields() {
		if m.APIVersion == "mf-fixed.example.com/v1" {
			t.Errorf("managedFields entry of %s still names v1", m.Manager)
		}
	}
	obj.Object["spec"].(map[string]any)["image"] = "example/cron:2"
	if err := applyObject(t, c, fixed, "v2", "gitops", obj); err != nil {
		t.Errorf("server-side apply after retire: %v", err)
	}
	// The applier still owns its fields: dropping one from its apply
	// configuration removes it from the object.
	delete(obj.Object["spec"].(map[string]any), "cronSpec")
	if err := applyObject(t, c, fixed, "v2", "gitops", obj); err != nil {
		t.Fatal(err)
	}
	live, _ = resource(c, fixed, "v2", "team-a").Get(context.Background(), "applied", metav1.GetOptions{})
	if _, found, _ := unstructured.NestedString(live.Object, "spec", "cronSpec"); found {
		t.Error("the applier lost ownership of spec.cronSpec in the clean-up: the field was not removed when it left the apply configuration")
	}
}

// TestRetireResume starts retire from every state the workflow can be
// interrupted in and checks that it finishes, that a second run changes
// nothing, and that each refusal leaves the CRD unchanged.
func TestRetireResume(t *testing.T) {
	slowTier(t, "a retire interrupted at every step")
	t.Parallel()
	c := newClients(t)
	args := []string{"--migrate", "--clean-managed-fields", "--skip-usage-check"}
	for _, state := range []lifecycle.State{lifecycle.StateS2, lifecycle.StateS3, lifecycle.StateS4, lifecycle.StateS5, lifecycle.StateS6} {
		t.Run(string(state), func(t *testing.T) {
			crd := advance(t, c, "resume-"+strings.ToLower(string(state))+".example.com", apiextensionsv1.NamespaceScoped, 4, state)
			name := crd.Name
			fp := fingerprint(t, c, name)
			if state != lifecycle.StateS6 {
				plan := plugin(t, append([]string{"retire", name, "v1", "--dry-run", "-o", "json"}, args...)...)
				var rep report.Retire
				if plan.err != nil || json.Unmarshal([]byte(plan.stdout), &rep) != nil || rep.Outcome != "Planned" || len(rep.Steps) != 8 || rep.Kind != "RetirePlan" {
					t.Fatalf("dry run: %v\n%s", plan.err, plan.stdout)
				}
				if fingerprint(t, c, name) != fp {
					t.Error("the dry run wrote the CRD")
				}
			}
			mustRun(t, append([]string{"retire", name, "v1"}, args...)...)
			healthy(t, name, lifecycle.StateS6)
			fp = fingerprint(t, c, name)
			again := mustRun(t, append([]string{"retire", name, "v1"}, args...)...)
			if !strings.Contains(again.stdout, "v1 retired from") || fingerprint(t, c, name) != fp {
				t.Errorf("a second run wrote the CRD or did not report completion:\n%s", again.stdout)
			}
		})
	}

	t.Run("refusals", func(t *testing.T) {
		crd := advance(t, c, "resume-refusals.example.com", apiextensionsv1.NamespaceScoped, 2, lifecycle.StateS1)
		name := crd.Name
		refused(t, c, name, []string{"stopped at step 3", "v1 is the storage version", "promote-storage " + name + " v2"}, append([]string{"retire", name, "v1"}, args...)...)
		refused(t, c, name, []string{"has no version v9"}, "retire", name, "v9")
		setStorage(t, c, name, "v2")
		refused(t, c, name, []string{"stopped at step 5", "--migrate"}, "retire", name, "v1", "--skip-usage-check", "--clean-managed-fields")
		r := refused(t, c, name, []string{"stopped at step 6"}, "retire", name, "v1", "--skip-usage-check", "--migrate")
		if !strings.Contains(r.stdout, "5. TO DO") {
			t.Errorf("plan:\n%s", r.stdout)
		}
		refused(t, c, name, []string{"--usage-window must not be negative"}, "retire", name, "v1", "--usage-window=-1s")
		refused(t, c, name, []string{"-o name is not supported"}, "retire", name, "v1", "-o", "name")
	})
}

// TestRetireRunLineCarriesUsageFlags (issue 33): the run: line of a
// blocked retire dropped the usage check's flags the run was given. Pasted,
// it looked with the default window and history instead: the objects'
// creation through v1 is a managedFields writer inside the default 24h
// history, and the pasted line refused what the run before it had been
// told to ignore. The line now carries --usage-window, --usage-min-window
// and --usage-history as typed; following the run: lines retires v1.
func TestRetireRunLineCarriesUsageFlags(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := advance(t, c, "runline.example.com", apiextensionsv1.NamespaceScoped, 1, lifecycle.StateS4)
	name := crd.Name
	given := strings.Join([]string{"--usage-window", "2s", "--usage-min-window", "2s", "--usage-history", "0"}, " ")

	// Without --clean-managed-fields the run stops at step 6 at the latest
	// (the creation's managedFields entry names v1); at step 1 when the
	// creation falls inside its 2s window. Each run: line is followed.
	args := append([]string{"retire", name, "v1", "--migrate"}, strings.Fields(given)...)
	var stops []string
	for range 3 {
		r := plugin(t, args...)
		if r.err == nil {
			mustContain(t, "the last retire's output", r.stdout, "retired")
			if v := lifecycle.FindVersion(getCRD(t, c, name), "v1"); v != nil {
				t.Errorf("v1 is still in spec.versions after retire passed: %+v", v)
			}
			if len(stops) == 0 {
				t.Errorf("retire without --clean-managed-fields did not stop at step 6, so no run: line was followed")
			}
			return
		}
		out := r.stdout + r.stderr + errorLine(r.err)
		stop := regexp.MustCompile(`stopped at step \d`).FindString(out)
		if stop == "" {
			t.Fatalf("%s: err %v and no stopped step:\n%s", strings.Join(args, " "), r.err, out)
		}
		stops = append(stops, stop)
		args = runLine(t, out)
		if got := strings.Join(args, " "); !strings.Contains(got, given) {
			t.Fatalf("after %s, the run: line %q does not carry %q", stop, got, given)
		}
	}
	t.Fatalf("the run: lines did not lead to the end: %v", stops)
}
