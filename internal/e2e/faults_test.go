package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/crdversion/kubectl-crdversion/internal/e2e/apiserver"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/migrate"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// The fault-injection tests: each breaks something under a running
// migration on a real kube-apiserver and checks the promises of
// docs/reliability.md — no object lost or re-created, storedVersions
// trimmed only after a complete, clean pass.

// uidsOf lists the objects of crd at version (all namespaces) by
// namespace/name → UID.
func uidsOf(t testing.TB, c clients, crd *apiextensionsv1.CustomResourceDefinition, version string) map[string]types.UID {
	t.Helper()
	list, err := c.dyn.Resource(gvr(crd, version)).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]types.UID, len(list.Items))
	for _, u := range list.Items {
		out[u.GetNamespace()+"/"+u.GetName()] = u.GetUID()
	}
	return out
}

// sameObjects fails unless after holds exactly the objects of before,
// each with its UID: nothing lost, nothing re-created.
func sameObjects(t testing.TB, before, after map[string]types.UID) {
	t.Helper()
	if len(after) != len(before) {
		t.Errorf("%d objects after, %d before", len(after), len(before))
	}
	for key, uid := range before {
		switch got, ok := after[key]; {
		case !ok:
			t.Errorf("%s was lost", key)
		case got != uid:
			t.Errorf("%s was re-created (UID %s, was %s)", key, got, uid)
		}
	}
}

// TestFaultMigrateSurvivesAPIServerRestart stops the kube-apiserver in the
// middle of a migration and starts a new one on the same etcd (clients
// reach it at the same address, as behind a load balancer). The running
// migrate retries through the outage and completes: every object is
// stored at the new version, none lost or re-created, storedVersions
// trimmed once the pass was complete.
func TestFaultMigrateSurvivesAPIServerRestart(t *testing.T) {
	s := ownServer(t, apiserver.Options{Restartable: true})
	c := clientsFor(s.Config)
	const n = 1500
	crd := advance(t, c, "restart.example.com", apiextensionsv1.NamespaceScoped, 0, lifecycle.StateS0)
	createManyCronTabs(t, c, crd, "v1", n, namespaces("restart", 5))
	crd = advance2(t, c, crd.Name)
	before := uidsOf(t, c, crd, "v2")

	done := make(chan result, 1)
	go func() {
		// 100 writes/s: the run takes about 15 s, long enough to restart
		// the API server in the middle of it.
		done <- executeWithin(t, 5*time.Minute, filepath.Join(pluginDir, "kubectl-crdversion"), nil, "migrate", crd.Name, "--kubeconfig", s.Kubeconfig,
			"--cache-dir", t.TempDir(), "--chunk-size", "100", "--qps", "100", "--burst", "100", "-o", "json")
	}()
	waitFor(t, "a fifth of the objects rewritten", func() (bool, error) {
		return storedAtOn(t, s, crd)[crd.Spec.Group+"/v2"] >= n/5, nil
	})
	restarted := time.Now()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	t.Logf("the API server was down for %s", time.Since(restarted).Round(time.Millisecond))
	rewrittenAtRestart := storedAtOn(t, s, crd)[crd.Spec.Group+"/v2"]
	r := <-done
	if rewrittenAtRestart == n {
		t.Fatalf("the migration had finished before the API server was back: the restart did not happen mid-run")
	}
	var m report.Migration
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatalf("migrate -o json: %v (exit %d)\n%s\n%s", err, r.code, r.stdout, r.stderr)
	}
	if r.code != 0 || m.Total != n || m.Failed != 0 || m.Rewritten+m.Conflicts+m.Current != n || !m.Trim.Trimmed {
		t.Errorf("exit %d, report %+v\n%s", r.code, m.Result, r.stderr)
	}
	if got := storedAtOn(t, s, crd); got[crd.Spec.Group+"/v2"] != n || len(got) != 1 {
		t.Errorf("stored %v, want all %d at v2", got, n)
	}
	sameObjects(t, before, uidsOf(t, c, crd, "v2"))
	if got := getCRD(t, c, crd.Name).Status.StoredVersions; strings.Join(got, ",") != "v2" {
		t.Errorf("storedVersions %v, want [v2]", got)
	}
}

// TestFaultMigrateEtcdCompactionDuringPaging compacts etcd right after the
// first page of the migration's list, so the continue token of the next
// page names a compacted revision and the API server answers 410 Gone.
// The list restarts and no object is skipped.
func TestFaultMigrateEtcdCompactionDuringPaging(t *testing.T) {
	c := newClients(t)
	const n = 600
	crd := advance(t, c, "compaction.example.com", apiextensionsv1.NamespaceScoped, 0, lifecycle.StateS0)
	createManyCronTabs(t, c, crd, "v1", n, namespaces("compaction", 3))
	crd = advance2(t, c, crd.Name)
	before := uidsOf(t, c, crd, "v2")

	var lists, gone atomic.Int64
	cfg := rest.CopyConfig(srv.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			isList := req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/"+crd.Spec.Names.Plural) && req.URL.Query().Get("limit") != ""
			resp, err := rt.RoundTrip(req)
			if !isList || err != nil {
				return resp, err
			}
			if resp.StatusCode == http.StatusGone {
				gone.Add(1)
			}
			if lists.Add(1) == 1 {
				compactEtcd(t)
			}
			return resp, err
		})
	})
	e := engine(t)
	e.Metadata = metadata.NewForConfigOrDie(cfg)
	opts := migrate.DefaultOptions()
	opts.ChunkSize = 50
	res, err := e.Run(context.Background(), crd.Name, opts)
	if err != nil {
		t.Fatal(err)
	}
	if gone.Load() == 0 {
		t.Fatalf("no list was answered 410 Gone after the compaction (%d lists): the test did not test the recovery", lists.Load())
	}
	if !res.Complete || res.Total != n || res.Rewritten != n || res.Failed != 0 || !res.Trim.Trimmed {
		t.Errorf("result: %+v", res)
	}
	if got := storedAt(t, crd); got[crd.Spec.Group+"/v2"] != n || len(got) != 1 {
		t.Errorf("stored %v, want all %d at v2", got, n)
	}
	sameObjects(t, before, uidsOf(t, c, crd, "v2"))
	t.Logf("%d lists, %d answered 410 Gone", lists.Load(), gone.Load())
}

// compactEtcd compacts the package's etcd at its current revision.
func compactEtcd(t testing.TB) {
	ctx := context.Background()
	resp, err := srv.Etcd.Put(ctx, "compaction-probe", time.Now().String())
	if err != nil {
		t.Error(err)
		return
	}
	if _, err := srv.Etcd.Compact(ctx, resp.Header.Revision); err != nil {
		t.Error(err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// webhookMigrationPending makes a CronTab CRD of group with n objects
// stored at v1 and v2 added with Webhook conversion through a test webhook
// and promoted to storage version (state S2).
func webhookMigrationPending(t *testing.T, c clients, group string, n int) (*conversionWebhook, *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	hook := newConversionWebhook(t)
	crd := advance(t, c, group, apiextensionsv1.NamespaceScoped, 0, lifecycle.StateS0)
	createManyCronTabs(t, c, crd, "v1", n, []string{strings.Split(group, ".")[0]})
	mustRun(t, "add-version", crd.Name, "v2", "--conversion", "Webhook", "--webhook-url", hook.URL+"/convert", "--ca-bundle-file", hook.caFile(t))
	mustRun(t, "promote-storage", crd.Name, "v2")
	return hook, getCRD(t, c, crd.Name)
}

// TestFaultMigrateSlowConversionWebhook migrates through a conversion webhook
// that takes a quarter of a second to answer each ConversionReview: the run
// is slower, nothing fails, everything is trimmed. (On v1.37 each rewrite of
// an object created at the old version costs about nine conversion calls:
// three to the storage version, six back to the version its managedFields
// name, for field tracking.)
func TestFaultMigrateSlowConversionWebhook(t *testing.T) {
	c := newClients(t)
	const n = 200
	hook, crd := webhookMigrationPending(t, c, "slow-webhook.example.com", n)
	before := uidsOf(t, c, crd, "v2")

	hook.delay.Store(int64(250 * time.Millisecond))
	calls := hook.calls.Load()
	start := time.Now()
	m, r := migrationJSON(t, crd.Name, "--chunk-size", "50")
	t.Logf("%d objects through a webhook answering in 250 ms: %d calls, %s", n, hook.calls.Load()-calls, time.Since(start).Round(time.Millisecond))
	if r.err != nil || m.Total != n || m.Rewritten != n || m.Failed != 0 || !m.Trim.Trimmed {
		t.Errorf("error %v, result %+v", r.err, m.Result)
	}
	if hook.calls.Load()-calls < n {
		t.Errorf("the webhook answered %d calls, want at least one per object (%d)", hook.calls.Load()-calls, n)
	}
	if got := storedAt(t, crd); got[crd.Spec.Group+"/v2"] != n || len(got) != 1 {
		t.Errorf("stored %v, want all %d at v2", got, n)
	}
	sameObjects(t, before, uidsOf(t, c, crd, "v2"))
}

// TestFaultMigrateConversionWebhookDown takes the conversion webhook down (it
// drops every connection) part-way through a migration: the objects it
// could not convert are reported as failed, storedVersions is not trimmed,
// exit code 1; nothing is lost. With the webhook back, a re-run completes
// and trims.
func TestFaultMigrateConversionWebhookDown(t *testing.T) {
	c := newClients(t)
	const n = 300
	hook, crd := webhookMigrationPending(t, c, "down-webhook.example.com", n)
	before := uidsOf(t, c, crd, "v2")

	// Down after the first 100 calls the migration makes.
	hook.downAfter.Store(hook.calls.Load() + 100)
	// --allow-pruning skips the loss measurement, which calls the webhook
	// for every object first: the outage must hit the run's own writes.
	bin := executeWithin(t, 5*time.Minute, filepath.Join(pluginDir, "kubectl-crdversion"), nil, "migrate", crd.Name, "--kubeconfig", srv.Kubeconfig,
		"--cache-dir", t.TempDir(), "--chunk-size", "50", "--qps", "50", "--burst", "50", "--allow-pruning")
	if bin.code != 1 || !strings.Contains(bin.stdout, "not trimmed") {
		t.Errorf("with the webhook down: exit %d\n%s\n%s", bin.code, bin.stdout, bin.stderr)
	}
	if got := getCRD(t, c, crd.Name).Status.StoredVersions; strings.Join(got, ",") != "v1,v2" {
		t.Errorf("storedVersions %v after a run with the webhook down, want [v1 v2]", got)
	}
	if got := storedAt(t, crd); got[crd.Spec.Group+"/v1"] == 0 {
		t.Errorf("stored %v: every object was migrated, the webhook went down too late to test anything", got)
	}

	hook.down.Store(false)
	m, r := migrationJSON(t, crd.Name)
	if r.err != nil || m.Total != n || m.Failed != 0 || !m.Trim.Trimmed {
		t.Errorf("re-run with the webhook back: error %v, result %+v", r.err, m.Result)
	}
	if got := storedAt(t, crd); got[crd.Spec.Group+"/v2"] != n || len(got) != 1 {
		t.Errorf("stored %v, want all %d at v2", got, n)
	}
	sameObjects(t, before, uidsOf(t, c, crd, "v2"))
}
