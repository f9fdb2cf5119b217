package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/crdversion/kubectl-crdversion/internal/e2e/apiserver"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/migrate"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// createManyCronTabs creates n CronTabs at version with 16 writers,
// spread over the namespaces (ignored for a cluster-scoped CRD).
func createManyCronTabs(t testing.TB, c clients, crd *apiextensionsv1.CustomResourceDefinition, version string, n int, namespaces []string) {
	t.Helper()
	for _, ns := range namespaces {
		ensureNamespace(t, c, ns)
	}
	var wg sync.WaitGroup
	var failed atomic.Value
	next := atomic.Int64{}
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				ns := namespaces[i%len(namespaces)]
				obj := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": crd.Spec.Group + "/" + version, "kind": crd.Spec.Names.Kind,
					"metadata": map[string]any{"name": fmt.Sprintf("crontab-%05d", i)},
					"spec":     map[string]any{"cronSpec": "* * * * */5", "image": "example/cron", "replicas": int64(1)},
				}}
				if _, err := resource(c, crd, version, ns).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("creating objects: %v", err)
	}
}

func namespaces(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%02d", prefix, i)
	}
	return out
}

// storedAt reads every object of crd from etcd and counts them by the
// apiVersion they are encoded at.
func storedAt(t testing.TB, crd *apiextensionsv1.CustomResourceDefinition) map[string]int {
	t.Helper()
	return storedAtOn(t, srv, crd)
}

// storedAtOn is storedAt on the etcd of server s.
func storedAtOn(t testing.TB, s *apiserver.Server, crd *apiextensionsv1.CustomResourceDefinition) map[string]int {
	t.Helper()
	prefix := s.EtcdPrefix + "/" + crd.Spec.Group + "/" + crd.Spec.Names.Plural + "/"
	resp, err := s.Etcd.Get(context.Background(), prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, kv := range resp.Kvs {
		var obj struct {
			APIVersion string `json:"apiVersion"`
		}
		if err := json.Unmarshal(kv.Value, &obj); err != nil {
			t.Fatalf("%s: %v", kv.Key, err)
		}
		out[obj.APIVersion]++
	}
	return out
}

func migrationJSON(t *testing.T, args ...string) (report.Migration, result) {
	t.Helper()
	r := plugin(t, append(append([]string{"migrate"}, args...), "-o", "json")...)
	var m report.Migration
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatalf("migrate -o json: %v (%v)\n%s\n%s", err, r.err, r.stdout, r.stderr)
	}
	return m, r
}

// TestMigrate: 3,000 objects across 30 namespaces, stored at v1, storage
// flipped to v2. One run rewrites each object once and trims
// storedVersions; a second run writes nothing.
func TestMigrate(t *testing.T) {
	slowTier(t, "a migration of every engine and output on thousands of objects")
	t.Parallel()
	c := newClients(t)
	crd := advance(t, c, "migrate.example.com", apiextensionsv1.NamespaceScoped, 0, lifecycle.StateS0)
	createManyCronTabs(t, c, crd, "v1", 3000, namespaces("mig", 30))
	crd = advance2(t, c, crd.Name)
	if got := storedAt(t, crd); got["migrate.example.com/v1"] != 3000 {
		t.Fatalf("before: stored %v", got)
	}

	m, r := migrationJSON(t, crd.Name)
	if r.err != nil {
		t.Fatalf("migrate: %v", r.err)
	}
	if m.Total != 3000 || m.Rewritten != 3000 || m.Failed != 0 || !m.Complete || !m.Trim.Trimmed {
		t.Errorf("first run: %+v", m.Result)
	}
	if got := storedAt(t, crd); got["migrate.example.com/v2"] != 3000 || len(got) != 1 {
		t.Errorf("after: stored %v, want all 3000 at v2", got)
	}
	if got := getCRD(t, c, crd.Name).Status.StoredVersions; strings.Join(got, ",") != "v2" {
		t.Errorf("storedVersions %v, want [v2]", got)
	}
	t.Logf("3000 objects: %.0f objects/s", m.ObjectsPerSecond)

	m2, r2 := migrationJSON(t, crd.Name)
	if r2.err != nil || m2.Current != 3000 || m2.Rewritten != 0 || m2.Trim.Trimmed {
		t.Errorf("second run: %+v (%v)", m2.Result, r2.err)
	}
	if s := statusJSON(t, crd.Name); s.State != lifecycle.StateS3 {
		t.Errorf("state %s after migrate, want S3", s.State)
	}
}

// advance2 adds v2 and makes it the storage version (S1 then S2).
func advance2(t testing.TB, c clients, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	updateCRD(t, c, name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions = append(crd.Spec.Versions, crontabVersion("v2", true, false))
	})
	return setStorage(t, c, name, "v2")
}

func TestMigrateClusterScopedAndTextOutput(t *testing.T) {
	slowTier(t, "migrations of cluster-scoped objects in every output")
	t.Parallel()
	c := newClients(t)
	crd := advance(t, c, "migrate-cluster.example.com", apiextensionsv1.ClusterScoped, 0, lifecycle.StateS0)
	createManyCronTabs(t, c, crd, "v1", 300, []string{"unused"})
	crd = advance2(t, c, crd.Name)
	// A server dry run keeps each resourceVersion, so it cannot tell the
	// 300 objects it would rewrite from current ones: it says accepted.
	dryServer := mustRun(t, "migrate", crd.Name, "--chunk-size", "7", "--dry-run=server")
	if !strings.Contains(dryServer.stdout, "Checked (server dry run, nothing written)") ||
		!strings.Contains(dryServer.stdout, "total 300, accepted by the dry run 300 (a dry run cannot tell rewritten from already current), conflicts 0, deleted 0, failed 0") {
		t.Errorf("server dry run:\n%s", dryServer.stdout)
	}
	r := mustRun(t, "migrate", crd.Name, "--chunk-size", "7")
	if !strings.Contains(r.stdout, "total 300, rewritten 300, already current 0, conflicts 0, deleted 0, failed 0") ||
		!strings.Contains(r.stdout, "status.storedVersions: [v1, v2] -> [v2]") {
		t.Errorf("output:\n%s", r.stdout)
	}
	if got := storedAt(t, crd); got["migrate-cluster.example.com/v2"] != 300 {
		t.Errorf("stored %v", got)
	}
	dry := mustRun(t, "migrate", crd.Name, "--dry-run=client")
	if !strings.Contains(dry.stdout, "Counted (dry run, nothing written)") || !strings.Contains(dry.stdout, "total 300 listed, nothing checked") {
		t.Errorf("client dry run:\n%s", dry.stdout)
	}
}

// TestFaultMigrateWithConcurrentWritersAndDeletes: updates by another client
// during the run are kept, deleted objects stay deleted.
func TestFaultMigrateWithConcurrentWritersAndDeletes(t *testing.T) {
	c := newClients(t)
	crd := advance(t, c, "migrate-busy.example.com", apiextensionsv1.NamespaceScoped, 0, lifecycle.StateS0)
	nss := namespaces("busy", 4)
	createManyCronTabs(t, c, crd, "v1", 1200, nss)
	crd = advance2(t, c, crd.Name)
	migrateUnderLoad(t, c, crd, "v1", "v2", nss, 1200, "--chunk-size", "50", "--concurrency", "8")
}

// migrateUnderLoad migrates crd's n objects (crontab-%05d over nss, stored
// at old, storage version storage) while a writer updates every 7th object
// at old and a deleter removes every 13th through storage. The run must
// fail nothing and trim; every update survives, no deleted object returns,
// and every object ends stored at storage.
func migrateUnderLoad(t *testing.T, c clients, crd *apiextensionsv1.CustomResourceDefinition, old, storage string, nss []string, n int, args ...string) report.Migration {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	written := sync.Map{}   // object -> last replicas the API server confirmed
	attempted := sync.Map{} // object -> last replicas sent (the write cancelled at the end may or may not have landed)
	deleted := sync.Map{}
	wg.Add(2)
	go func() { // writer: bumps replicas on objects 0, 7, 14, …
		defer wg.Done()
		for round := int64(2); ctx.Err() == nil && round < 50; round++ {
			for i := 0; i < n && ctx.Err() == nil; i += 7 {
				ns, name := nss[i%len(nss)], fmt.Sprintf("crontab-%05d", i)
				u, err := resource(c, crd, old, ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					continue
				}
				_ = unstructured.SetNestedField(u.Object, round, "spec", "replicas")
				attempted.Store(ns+"/"+name, round)
				if _, err := resource(c, crd, old, ns).Update(ctx, u, metav1.UpdateOptions{}); err == nil {
					written.Store(ns+"/"+name, round)
				}
			}
		}
	}()
	go func() { // deleter: removes objects 3, 16, 29, …
		defer wg.Done()
		for i := 3; i < n && ctx.Err() == nil; i += 13 {
			ns, name := nss[i%len(nss)], fmt.Sprintf("crontab-%05d", i)
			if err := resource(c, crd, storage, ns).Delete(ctx, name, metav1.DeleteOptions{}); err == nil {
				deleted.Store(ns+"/"+name, true)
			}
		}
	}()
	m, r := migrationJSON(t, append([]string{crd.Name}, args...)...)
	cancel()
	wg.Wait()
	if r.err != nil || m.Failed != 0 || !m.Trim.Trimmed {
		t.Fatalf("migrate: %v %+v", r.err, m.Result)
	}
	t.Logf("outcomes: %+v", m.Counts)

	written.Range(func(k, v any) bool {
		if _, gone := deleted.Load(k); gone { // updated, then deleted
			return true
		}
		ns, name, _ := strings.Cut(k.(string), "/")
		u, err := resource(c, crd, storage, ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s: %v", k, err)
			return true
		}
		last, _ := attempted.Load(k)
		if got, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); got < v.(int64) || got > last.(int64) {
			t.Errorf("%s: replicas %d, the writer's last confirmed update was %d and its last attempt %d (lost)", k, got, v, last)
		}
		return true
	})
	deleted.Range(func(k, _ any) bool {
		ns, name, _ := strings.Cut(k.(string), "/")
		if _, err := resource(c, crd, storage, ns).Get(context.Background(), name, metav1.GetOptions{}); err == nil {
			t.Errorf("%s was deleted during the run and exists again", k)
		}
		return true
	})
	if got := storedAt(t, crd); got[crd.Spec.Group+"/"+old] != 0 {
		t.Errorf("objects still stored at %s after a trimmed run: %v", old, got)
	}
	return m
}

// freeze labels the object frozen=true through v1 (see denyFrozen).
func freeze(t *testing.T, c clients, crd *apiextensionsv1.CustomResourceDefinition, namespace, name string) {
	t.Helper()
	u, err := resource(c, crd, "v1", namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u.SetLabels(map[string]string{"frozen": "true"})
	if _, err := resource(c, crd, "v1", namespace).Update(context.Background(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestFaultMigrateFailuresBlockTheTrim: an object that an admission policy
// denies, then an object whose conversion webhook call fails, are each
// reported by name; storedVersions is not trimmed; the exit code is 1. The
// loss measurement sees the denial first and refuses before any write
// (B13); the run's own handling of failed writes (which a rule added
// between the measurement and the run causes) is tested with
// --allow-pruning, which skips the measurement.
func TestFaultMigrateFailuresBlockTheTrim(t *testing.T) {
	c := newClients(t)
	hook := newConversionWebhook(t)
	crd := advance(t, c, "migrate-fail.example.com", apiextensionsv1.NamespaceScoped, 0, lifecycle.StateS0)
	createManyCronTabs(t, c, crd, "v1", 40, []string{"fail-a"})
	// Label crontab-00011 frozen while v1 is still the storage version, so
	// that it stays stored at v1 until migrate rewrites it.
	freeze(t, c, crd, "fail-a", "crontab-00011")
	mustRun(t, "add-version", crd.Name, "v2", "--conversion", "Webhook", "--webhook-url", hook.URL+"/convert", "--ca-bundle-file", hook.caFile(t))
	mustRun(t, "promote-storage", crd.Name, "v2")

	// A ValidatingAdmissionPolicy that denies every update of frozen objects.
	allow := denyFrozen(t, c, crd)

	before := storedAt(t, crd)
	refuses(t, c, []string{crd.Name}, []string{"the API server refuses to rewrite some objects at v2", "fail-a/crontab-00011: ", "frozen objects cannot change"}, "migrate", crd.Name)
	if after := storedAt(t, crd); !maps.Equal(after, before) {
		t.Errorf("the refused migrate wrote objects: stored %v, before %v", after, before)
	}
	m, r := migrationJSON(t, crd.Name, "--allow-pruning")
	if r.err == nil || !strings.Contains(r.err.Error(), "1 object(s) of "+crd.Name+" failed to migrate; status.storedVersions was not trimmed") {
		t.Errorf("error = %v", r.err)
	}
	if m.Failed != 1 || len(m.Failures) != 1 || m.Rewritten != 39 || m.Trim.Trimmed || !strings.Contains(m.Trim.Reason, "1 object(s) failed") {
		t.Fatalf("result: %+v", m.Result)
	}
	if m.Failures[0].Object != "fail-a/crontab-00011" || !strings.Contains(m.Failures[0].Message, "frozen objects cannot change") {
		t.Errorf("failures: %+v", m.Failures)
	}
	if got := getCRD(t, c, crd.Name).Status.StoredVersions; strings.Join(got, ",") != "v1,v2" {
		t.Errorf("storedVersions %v, want [v1 v2] untouched", got)
	}

	// Make the webhook fail for the one object still stored at v1
	// (crontab-00011, denied above). Depending on whether the API
	// server's watch cache holds it decoded, the list or the write fails;
	// either way the run names the object and trims nothing.
	allow()
	waitFor(t, "the admission policy to be gone", func() (bool, error) {
		u, err := resource(c, crd, "v2", "fail-a").Get(context.Background(), "crontab-00011", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		u.SetAnnotations(map[string]string{"touch": "x"})
		_, err = resource(c, crd, "v2", "fail-a").Update(context.Background(), u, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil, nil
	})
	hook.failFor.Store("crontab-00011")
	bin := binary(t, nil, "migrate", crd.Name, "--kubeconfig", srv.Kubeconfig, "--cache-dir", t.TempDir(), "--allow-pruning")
	if bin.code != 1 || !strings.Contains(bin.stdout, "FAILED fail-a/crontab-00011: ") ||
		!strings.Contains(bin.stdout, "the test cannot convert crontab-00011") || !strings.Contains(bin.stdout, "not trimmed") {
		t.Errorf("binary: exit %d\n%s\n%s", bin.code, bin.stdout, bin.stderr)
	}
	if got := getCRD(t, c, crd.Name).Status.StoredVersions; strings.Join(got, ",") != "v1,v2" {
		t.Errorf("storedVersions %v, want [v1 v2] untouched", got)
	}
}

// TestFaultMigrateNamesEveryUnreadableObject: with the conversion webhook
// failing for every object still stored at the old version, the list
// stops at the first page. The loss measurement cannot read them and
// refuses as unknown, writing nothing (B18). Past it (--allow-pruning, or a
// webhook that fails after the measurement), migrate names each of them —
// from the causes of the API server's StorageReadError, whose message names
// only the first — headlines Failed (not Interrupted), exits 1 and trims
// nothing.
func TestFaultMigrateNamesEveryUnreadableObject(t *testing.T) {
	c := newClients(t)
	hook := newConversionWebhook(t)
	crd := advance(t, c, "migrate-unreadable.example.com", apiextensionsv1.NamespaceScoped, 0, lifecycle.StateS0)
	createManyCronTabs(t, c, crd, "v1", 6, []string{"unread-a"})
	mustRun(t, "add-version", crd.Name, "v2", "--conversion", "Webhook", "--webhook-url", hook.URL+"/convert", "--ca-bundle-file", hook.caFile(t))
	hook.failing.Store(true)
	setStorage(t, c, crd.Name, "v2")

	refuses(t, c, []string{crd.Name}, []string{"what the migration loses is unknown", "cannot be listed at v1", "conversion disabled by the test"}, "migrate", crd.Name)
	m, r := migrationJSON(t, crd.Name, "--allow-pruning")
	var names []string
	for _, f := range m.Failures {
		names = append(names, f.Object)
		if !strings.Contains(f.Message, "cannot be read from storage") || !strings.Contains(f.Message, "conversion disabled by the test") {
			t.Errorf("failure of %s: %q", f.Object, f.Message)
		}
	}
	slices.Sort(names)
	want := []string{"unread-a/crontab-00000", "unread-a/crontab-00001", "unread-a/crontab-00002", "unread-a/crontab-00003", "unread-a/crontab-00004", "unread-a/crontab-00005"}
	if r.err == nil || m.Failed != 6 || m.Total != 6 || !slices.Equal(names, want) || m.Trim.Trimmed {
		t.Errorf("error %v; total %d, failed %d, failures %v, trimmed %v; want the 6 objects named, nothing trimmed", r.err, m.Total, m.Failed, names, m.Trim.Trimmed)
	}
	text := plugin(t, "migrate", crd.Name, "--allow-pruning")
	if text.err == nil || !strings.HasPrefix(text.stdout, "Failed "+crd.Name) || strings.Count(text.stdout, "FAILED unread-a/") != 6 {
		t.Errorf("text: %v\n%s", text.err, text.stdout)
	}
	if got := getCRD(t, c, crd.Name).Status.StoredVersions; strings.Join(got, ",") != "v1,v2" {
		t.Errorf("storedVersions %v, want [v1 v2] untouched", got)
	}
}

// TestFaultMigrateCRDChangedMidRun changes the CRD while a run is in progress:
// a storage flip, or a flip away and back (objects handled meanwhile may be
// stored at the other version). Nothing may be trimmed; a clean re-run
// trims and leaves every object at the storage version.
func TestFaultMigrateCRDChangedMidRun(t *testing.T) {
	cases := []struct {
		group  string
		change func(t *testing.T, c clients, name string)
		reason string
		stored string // storedVersions after the interrupted run
		final  string // the storage version of the re-run
	}{
		{"migrate-flip.example.com", func(t *testing.T, c clients, name string) { setStorage(t, c, name, "v3") },
			"the storage version changed from v2 to v3 during the run", "v1,v2,v3", "v3"},
		{"migrate-flipback.example.com", func(t *testing.T, c clients, name string) {
			setStorage(t, c, name, "v1")
			setStorage(t, c, name, "v2")
		}, "the CRD's spec changed during the run", "v1,v2", "v2"},
	}
	for _, tc := range cases {
		t.Run(tc.group, func(t *testing.T) {
			c := newClients(t)
			crd := advance(t, c, tc.group, apiextensionsv1.NamespaceScoped, 0, lifecycle.StateS0)
			createManyCronTabs(t, c, crd, "v1", 300, []string{"changes"})
			crd = advance2(t, c, crd.Name)
			updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
				crd.Spec.Versions = append(crd.Spec.Versions, crontabVersion("v3", true, false))
			})
			var once sync.Once
			opts := migrate.DefaultOptions()
			opts.ChunkSize, opts.Concurrency = 20, 2
			opts.Progress = func(p migrate.Progress) {
				if p.Done >= 50 {
					once.Do(func() { tc.change(t, c, crd.Name) })
				}
			}
			res, err := engine(t).Run(context.Background(), crd.Name, opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.Trim.Trimmed || !res.Trim.Failed || !strings.Contains(res.Trim.Reason, tc.reason) {
				t.Errorf("trim: %+v", res.Trim)
			}
			if got := getCRD(t, c, crd.Name).Status.StoredVersions; strings.Join(got, ",") != tc.stored {
				t.Errorf("storedVersions %v, want [%s]", got, tc.stored)
			}
			again, err := engine(t).Run(context.Background(), crd.Name, migrate.DefaultOptions())
			if err != nil || !again.Trim.Trimmed {
				t.Fatalf("re-run: %v %+v", err, again)
			}
			if got := storedAt(t, crd); got[tc.group+"/"+tc.final] != 300 {
				t.Errorf("stored %v, want all 300 at %s", got, tc.final)
			}
		})
	}
}

func engine(t testing.TB) *migrate.Engine {
	c := newClients(t)
	return &migrate.Engine{CRDs: c.ext.ApiextensionsV1().CustomResourceDefinitions(), Metadata: metadata.NewForConfigOrDie(srv.Config)}
}

// TestFaultMigrateResumesFromCheckpoint interrupts a run and resumes it.
func TestFaultMigrateResumesFromCheckpoint(t *testing.T) {
	c := newClients(t)
	crd := advance(t, c, "migrate-resume.example.com", apiextensionsv1.NamespaceScoped, 0, lifecycle.StateS0)
	createManyCronTabs(t, c, crd, "v1", 500, []string{"resume"})
	crd = advance2(t, c, crd.Name)
	cp := filepath.Join(t.TempDir(), "checkpoint.json")

	ctx, cancel := context.WithCancel(context.Background())
	opts := migrate.DefaultOptions()
	opts.ChunkSize, opts.Concurrency, opts.Checkpoint = 50, 4, cp
	opts.Progress = func(p migrate.Progress) {
		if p.Done >= 220 {
			cancel()
		}
	}
	first, err := engine(t).Run(ctx, crd.Name, opts)
	if err != nil {
		t.Fatal(err)
	}
	if first.Complete || first.Trim.Trimmed {
		t.Fatalf("interrupted run: complete %v, trim %+v", first.Complete, first.Trim)
	}
	if _, err := os.Stat(cp); err != nil {
		t.Fatalf("no checkpoint after an interrupted run: %v", err)
	}

	// The objects of the pages the checkpoint records as done must not be
	// written again: count the resumed run's PATCH requests.
	var saved struct {
		Counts migrate.Counts `json:"counts"`
	}
	data, err := os.ReadFile(cp)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &saved); err != nil {
		t.Fatal(err)
	}
	done := saved.Counts.Rewritten + saved.Counts.Current + saved.Counts.Conflicts + saved.Counts.Deleted + saved.Counts.Failed
	if done == 0 {
		t.Fatalf("the checkpoint records no page done: %s", data)
	}
	// Pages hold 50 objects; the checkpoint counts whole pages only, never
	// the objects of a page still in flight that a resumed run handles again.
	if done%opts.ChunkSize != 0 {
		t.Errorf("the checkpoint counts %d objects, not whole pages of %d: it counted objects of a page it does not record as done", done, opts.ChunkSize)
	}
	var patches atomic.Int64
	cfg := rest.CopyConfig(srv.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPatch {
				patches.Add(1)
			}
			return rt.RoundTrip(r)
		})
	}
	counted := &migrate.Engine{CRDs: c.ext.ApiextensionsV1().CustomResourceDefinitions(), Metadata: metadata.NewForConfigOrDie(cfg)}

	opts.Progress = nil
	second, err := counted.Run(context.Background(), crd.Name, opts)
	if err != nil {
		t.Fatal(err)
	}
	if n := patches.Load(); n > 500-done {
		t.Errorf("the resumed run sent %d PATCH requests; the checkpoint had %d of 500 objects done, so at most %d were due: it rewrote pages already done", n, done, 500-done)
	}
	if !second.Resumed || !second.Complete || !second.Trim.Trimmed || second.Failed != 0 {
		t.Errorf("resumed run: %+v", second)
	}
	// Counts carry over; objects of the interrupted page are handled again
	// and counted once.
	if second.Total != 500 || second.Rewritten+second.Current+second.Conflicts != 500 {
		t.Errorf("resumed counts: %+v", second.Counts)
	}
	if got := storedAt(t, crd); got["migrate-resume.example.com/v2"] != 500 {
		t.Errorf("stored %v", got)
	}
	if _, err := os.Stat(cp); !os.IsNotExist(err) {
		t.Error("the checkpoint was not removed after a complete run")
	}
}

// TestMigrateRefusesToPrune: conversion None, objects stored at v1alpha1
// carry a field v1's schema lacks; migrate refuses and names it, unless
// --allow-pruning.
func TestMigrateRefusesToPrune(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := crontab("migrate-prune.example.com", apiextensionsv1.NamespaceScoped)
	crd.Spec.Versions[0].Name = "v1alpha1"
	p := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	p.Properties["legacy"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = p
	crd = createCRD(t, c, crd)
	ensureNamespace(t, c, "prune")
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "migrate-prune.example.com/v1alpha1", "kind": "CronTab",
		"metadata": map[string]any{"name": "g1"}, "spec": map[string]any{"legacy": "old", "image": "x"},
	}}
	if _, err := resource(c, crd, "v1alpha1", "prune").Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		v1 := crontabVersion("v1", true, true)
		crd.Spec.Versions[0].Storage = false
		crd.Spec.Versions = append(crd.Spec.Versions, v1)
	})
	if s := statusJSON(t, crd.Name); s.State != lifecycle.StateS2 || !strings.Contains(fmt.Sprint(s.Findings), "lose .spec.legacy") {
		t.Errorf("status does not warn of the loss: %s %+v", s.State, s.Findings)
	}
	refused(t, c, crd.Name, []string{"1 object(s) have fields at v1alpha1 that v1 drops: prune/g1: .spec.legacy", "--allow-pruning"}, "migrate", crd.Name)

	if got := storedAt(t, crd); got["migrate-prune.example.com/v1alpha1"] != 1 {
		t.Errorf("the refusal wrote objects: %v", got)
	}
	mustRun(t, "migrate", crd.Name, "--allow-pruning")
	if got := storedAt(t, crd); got["migrate-prune.example.com/v1"] != 1 {
		t.Errorf("after --allow-pruning: %v", got)
	}
}

// TestFaultMigrateRecoversFromExpiredContinue resumes from a checkpoint whose
// continue token has expired (etcd compacted past it): the API server
// answers 410 Gone, the list restarts, and no object is skipped.
func TestFaultMigrateRecoversFromExpiredContinue(t *testing.T) {
	c := newClients(t)
	crd := advance(t, c, "migrate-gone.example.com", apiextensionsv1.NamespaceScoped, 0, lifecycle.StateS0)
	createManyCronTabs(t, c, crd, "v1", 120, []string{"gone"})
	crd = advance2(t, c, crd.Name)

	// A continue token from before a compaction, starting mid-list.
	ctx := context.Background()
	old, err := srv.Etcd.Get(ctx, "compaction-probe")
	if err != nil {
		t.Fatal(err)
	}
	staleRV := old.Header.Revision
	if _, err := srv.Etcd.Put(ctx, "compaction-probe", "x"); err != nil {
		t.Fatal(err)
	}
	now, err := srv.Etcd.Get(ctx, "compaction-probe")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Etcd.Compact(ctx, now.Header.Revision); err != nil {
		t.Fatal(err)
	}
	token, err := storage.EncodeContinue(srv.EtcdPrefix+"/migrate-gone.example.com/crontabs/gone/crontab-00060", srv.EtcdPrefix+"/migrate-gone.example.com/crontabs/", staleRV)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.dyn.Resource(gvr(crd, "v2")).List(ctx, metav1.ListOptions{Limit: 10, Continue: token}); !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Fatalf("the stale token is not expired: %v", err)
	}
	cp := filepath.Join(t.TempDir(), "checkpoint.json")
	data, _ := json.Marshal(map[string]any{"crd": crd.Name, "crdUID": crd.UID, "generation": getCRD(t, c, crd.Name).Generation, "storageVersion": "v2", "continue": token})
	writeFile(t, cp, string(data))

	opts := migrate.DefaultOptions()
	opts.ChunkSize, opts.Checkpoint = 25, cp
	res, err := engine(t).Run(ctx, crd.Name, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed || !res.Complete || res.Total != 120 || res.Rewritten != 120 || !res.Trim.Trimmed {
		t.Errorf("result: %+v", res)
	}
	if got := storedAt(t, crd); got["migrate-gone.example.com/v2"] != 120 {
		t.Errorf("stored %v", got)
	}
}
