package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdversion/kubectl-crdversion/internal/cli"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/migrate"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// TestMigrateMeasuresByReadsUnlessAdmissionActs is issue 30's design on
// the real API server: with conversion None, no admission on UPDATE of the
// resource and no transition rule, migrate measures what it loses by two
// paged lists (pages of 10 over 25 objects in three namespaces, so the two
// lists are joined across pages, in etcd's key order) and sends no dry-run PATCH at all — counted by the API
// server (apiserver_request_total{dry_run="All"}), not by the plugin. Once
// a ValidatingAdmissionPolicy matches UPDATE of the resource, the next
// migration measures by dry runs, one per object, and says why. Both runs
// rewrite every object. (Every migration of the tests also cross-checks
// its reads against dry runs: cli.CrossCheckEnv.)
func TestMigrateMeasuresByReadsUnlessAdmissionActs(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := createCRD(t, c, crontab("reads-measure.example.com", apiextensionsv1.NamespaceScoped))
	const n = 25
	// Namespaces and names whose order is etcd's only byte by byte:
	// "rm-a-b/…" before "rm-a/…", "crontab-10" before "crontab-2".
	createCronTabs(t, c, crd, "v1", n, "rm-a", "rm-a-b", "default")
	v2 := crontabVersion("v2", true, false)
	serveVersion(t, c, crd, "v2", v2.Schema.OpenAPIV3Schema)
	crd = setStorage(t, c, crd.Name, "v2")

	migrateCounting := func(storage string) (report.Migration, int64) {
		t.Helper()
		at := gvr(crd, storage)
		before := apiMetrics(t, c).dryRunPatches(at)
		// Without the tests' cross-check, whose dry runs would be
		// counted: as a user runs it.
		r := binary(t, []string{"KUBECONFIG=" + srv.Kubeconfig, cli.CrossCheckEnv + "="}, "migrate", crd.Name, "-o", "json", "--chunk-size", "10", "--cache-dir", t.TempDir())
		if r.code != 0 {
			t.Fatalf("migrate: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		dryRuns := apiMetrics(t, c).dryRunPatches(at) - before
		var m report.Migration
		if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
			t.Fatalf("migrate -o json: %v\n%s", err, r.stdout)
		}
		if m.Rewritten != n || m.Failed != 0 || len(m.Measured) != 1 || m.Measured[0].Objects != n {
			t.Fatalf("migrate rewrote %d, failed %d, measured %+v; want all %d rewritten after one pass over them", m.Rewritten, m.Failed, m.Measured, n)
		}
		return m, dryRuns
	}

	m, dryRuns := migrateCounting("v2")
	if p := m.Measured[0]; p.Design != migrate.DesignReads || p.DryRuns != 0 || p.DryRunBecause != "" || dryRuns != 0 {
		t.Errorf("nothing acts on the write: measured by %q (%d dry runs reported, because %q), and the API server counted %d dry-run PATCH; want reads and none",
			p.Design, p.DryRuns, p.DryRunBecause, dryRuns)
	}

	// A policy on UPDATE of the resource (it admits every write: what
	// matters is that it sees them).
	name := "reads-measure-sees-updates"
	policy := updatePolicy(name, crd.Spec.Group)
	createPolicy(t, c, policy)

	crd = setStorage(t, c, crd.Name, "v1")
	m, dryRuns = migrateCounting("v1")
	if p := m.Measured[0]; p.Design != migrate.DesignDryRun || p.DryRuns != n || !strings.Contains(p.DryRunBecause, "ValidatingAdmissionPolicy "+name) || dryRuns < n {
		t.Errorf("a policy sees UPDATE: measured by %q (%d dry runs reported, because %q), and the API server counted %d dry-run PATCH; want dryRun, %d, naming the policy",
			p.Design, p.DryRuns, p.DryRunBecause, dryRuns, n)
	}
}

// updatePolicy is a ValidatingAdmissionPolicy that sees UPDATE of the
// crontabs of group at every version and admits every write: what matters
// to the loss measurement is that it sees them.
func updatePolicy(name, group string) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{"crontabs"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "true"}},
		},
	}
}

// createPolicy creates policy, deleted when the test ends.
func createPolicy(t *testing.T, c clients, policy *admissionregistrationv1.ValidatingAdmissionPolicy) {
	t.Helper()
	policies := c.kube.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	if _, err := policies.Create(context.Background(), policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = policies.Delete(context.Background(), policy.Name, metav1.DeleteOptions{}) })
}

// TestPromoteStorageMeasuresByReadsUnlessAdmissionActs is issue 30's
// point 2: promote-storage's object preflight takes the same design as
// migrate's measurement. With nothing acting on migrate's update through
// the new version, it lists the objects at both versions and sends no
// dry-run PATCH — only each object as new (a dry-run POST), counted by the
// API server — and says so; once a policy sees UPDATE it dry-runs the
// update of every object and names the policy. Both verdicts pass, and
// the CRD is left as it was (--dry-run=server).
func TestPromoteStorageMeasuresByReadsUnlessAdmissionActs(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := createCRD(t, c, crontab("reads-promote.example.com", apiextensionsv1.NamespaceScoped))
	const n = 23
	createCronTabs(t, c, crd, "v1", n, "rp-a", "rp-a-b", "default")
	v2 := crontabVersion("v2", true, false)
	serveVersion(t, c, crd, "v2", v2.Schema.OpenAPIV3Schema)
	at := gvr(crd, "v2")

	promote := func() (string, int64, int64) {
		t.Helper()
		before := apiMetrics(t, c)
		// Without the tests' cross-check, whose dry runs would be
		// counted: as a user runs it.
		r := binary(t, []string{"KUBECONFIG=" + srv.Kubeconfig, cli.CrossCheckEnv + "="}, "promote-storage", crd.Name, "v2", "--dry-run=server", "--chunk-size", "10", "--cache-dir", t.TempDir())
		if r.code != 0 {
			t.Fatalf("promote-storage --dry-run=server: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		after := apiMetrics(t, c)
		if got := lifecycle.StorageVersion(getCRD(t, c, crd.Name)); got != "v1" {
			t.Fatalf("storage version %s after a server dry run, want v1", got)
		}
		return r.stdout + r.stderr, after.dryRuns(at, "PATCH") - before.dryRuns(at, "PATCH"), after.dryRuns(at, "POST") - before.dryRuns(at, "POST")
	}

	out, patches, creates := promote()
	if !strings.Contains(out, fmt.Sprintf("measured by reads: %d of %d object(s)", n, n)) || patches != 0 || creates < n {
		t.Errorf("nothing acts on the update: the API server counted %d dry-run PATCH and %d dry-run POST, want 0 and %d; output:\n%s", patches, creates, n, out)
	}

	name := "reads-promote-sees-updates"
	createPolicy(t, c, updatePolicy(name, crd.Spec.Group))
	out, patches, _ = promote()
	if !strings.Contains(out, "measured by dry runs") || !strings.Contains(out, "ValidatingAdmissionPolicy "+name) || patches < n {
		t.Errorf("a policy sees UPDATE: the API server counted %d dry-run PATCH, want %d, and the output naming the policy:\n%s", patches, n, out)
	}
}

// TestPromoteStorageRefusesAValueTheUpdateChanges (found by a trial of
// issue 30's reads): a MutatingAdmissionPolicy sets .spec.image on every
// update through v2. promote-storage compared the objects by the keys
// present only, passed, and left the CRD for a migrate that then refused
// on the changed values. Under conversion None it now compares whole
// objects, as migrate does: it refuses naming the objects and the path,
// nothing changed; --allow-pruning makes it a warning.
func TestPromoteStorageRefusesAValueTheUpdateChanges(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := createCRD(t, c, crontab("value-promote.example.com", apiextensionsv1.NamespaceScoped))
	createCronTabs(t, c, crd, "v1", 3)
	v2 := crontabVersion("v2", true, false)
	serveVersion(t, c, crd, "v2", v2.Schema.OpenAPIV3Schema)
	mutateOnUpdate(t, c, crd, "v2", "image", "crontab-0", `[JSONPatch{op: "replace", path: "/spec/image", value: "replaced"}]`,
		func(v any, _ bool) bool { return v == "replaced" })

	refuses(t, c, []string{crd.Name}, []string{"3 object(s) have values at v1 that the update through v2 changes", "default/crontab-0: .spec.image"},
		"promote-storage", crd.Name, "v2")
	if got := lifecycle.StorageVersion(getCRD(t, c, crd.Name)); got != "v1" {
		t.Fatalf("storage version %s after a refusal, want v1", got)
	}
	r := succeeds(t, "promote-storage", crd.Name, "v2", "--allow-pruning", "--dry-run=server")
	if !strings.Contains(r.stdout, "WILL BE CHANGED") {
		t.Errorf("promote-storage --allow-pruning does not warn of the changed values:\n%s", r.stdout)
	}
}
