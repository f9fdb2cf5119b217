package e2e

// Acceptance tests replaying the failure reports of ../shared/cases: each
// builds the case's before-state from testdata/cases/<NN-name> on the real
// API server, shows the failure users met (the API server's own message),
// then runs the kubectl crdversion commands that answer it — a refusal that
// names the cause and changes nothing, or a repair that ends healthy.
// docs/troubleshooting.md quotes the messages and commands these tests run.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jstemmer/go-junit-report/v2/junit"
	"github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/crdversion/kubectl-crdversion/internal/e2e/fixture"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/upgrade"
)

// The API server's (v1.37) message when a CRD update drops a version that
// status.storedVersions still lists.
func missingStoredVersion(v string) string { return missingStoredVersionAt(0, v) }

func missingStoredVersionAt(i int, v string) string {
	return `status.storedVersions[` + itoa(i) + `]: Invalid value: "` + v + `": missing from spec.versions; ` + v +
		` was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in ` +
		v + ` and removes ` + v + ` from status.storedVersions`
}

// checkUpgradeRefuses runs check-upgrade (issue 5) on a release manifest:
// it must exit non-zero, name every (CRD, storedVersions entry) the release
// would drop, print the migrate command for each such CRD and none for the
// others, and write nothing.
func checkUpgradeRefuses(t *testing.T, c clients, fx *caseFixture, file string, dropped map[string]string, healthy ...string) {
	t.Helper()
	names := slices.Clone(healthy)
	for n := range dropped {
		names = append(names, n)
	}
	want := []string{"storedVersions"}
	for crd, v := range dropped {
		want = append(want, crd, v, "kubectl crdversion migrate "+crd)
	}
	r := refuses(t, c, names, want, "check-upgrade", "-f", fx.path(file))
	for _, h := range healthy {
		if strings.Contains(r.stdout+r.stderr, "kubectl crdversion migrate "+h) {
			t.Errorf("check-upgrade asks to migrate %s, whose storedVersions the release keeps:\n%s", h, r.stdout+r.stderr)
		}
	}
}

// TestCase01SkippedReleaseDropsStoredVersion: cert-manager CRDs stored
// objects at v1alpha2; the release clusterctl applied lists only v1. The API
// server refuses it; status names the stale storedVersions entry; migrate
// rewrites the objects and trims it; the release then applies.
func TestCase01SkippedReleaseDropsStoredVersion(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	const name = "certrequests.certs.example.com"
	fx, crd, before := buildCase(t, c, "01-clusterctl-certmanager-skipped-release", name)

	fp := fingerprint(t, c, name)
	wantAPIError(t, "applying the release", applyReleaseFile(t, c, fx.path("release.yaml"))[name], missingStoredVersion("v1alpha2"))
	if fingerprint(t, c, name) != fp {
		t.Fatal("the refused release changed the CRD")
	}

	s := statusJSON(t, name)
	f, found := finding(s, lifecycle.CodeMigrationPending)
	if !found || f.Version != "v1alpha2" || f.Fix != "kubectl crdversion migrate "+name {
		t.Errorf("status does not name the stale storedVersions entry and its fix: %+v", s.Findings)
	}
	if s.Next == nil || s.Next.Command != "kubectl crdversion migrate "+name {
		t.Errorf("next step %+v, want migrate", s.Next)
	}

	t.Run("check-upgrade", func(t *testing.T) {
		checkUpgradeRefuses(t, c, fx, "release.yaml", map[string]string{name: "v1alpha2"})
	})

	r := succeeds(t, "migrate", name)
	if !strings.Contains(r.stdout, "rewritten 1") || !strings.Contains(r.stdout, "status.storedVersions: [v1alpha2, v1] -> [v1]") {
		t.Errorf("migrate:\n%s", r.stdout)
	}
	wantStoredAt(t, crd, "certs.example.com/v1alpha2", 0)
	releaseApplies(t, c, fx.path("release.yaml"), name)
	assertHealthy(t, c, name, before)
}

// TestCase02OldClusterHistory: the same Lock CRD upgrade fails on a cluster
// born before v1beta1 became storage and works on a younger one; the tool
// reads storedVersions from the live CRD, and after migrate this cluster is
// the young one.
func TestCase02OldClusterHistory(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	const name = "locks.pkg.example.com"
	fx, crd, before := buildCase(t, c, "02-crossplane-locks-old-cluster-history", name)
	wantStoredAt(t, crd, "pkg.example.com/v1alpha1", 1)

	wantAPIError(t, "applying the release", applyReleaseFile(t, c, fx.path("release.yaml"))[name], missingStoredVersion("v1alpha1"))

	s := statusJSON(t, name)
	var row *lifecycle.VersionStatus
	for i := range s.Versions {
		if s.Versions[i].Name == "v1alpha1" {
			row = &s.Versions[i]
		}
	}
	if row == nil || !row.InStoredVersions || !row.Deprecated || row.Storage {
		t.Errorf("status row of v1alpha1: %+v", row)
	}
	if s.Objects == nil || s.Objects.Count != 1 || s.State != lifecycle.StateS2 {
		t.Errorf("status: state %s, objects %+v; want S2 with 1 object", s.State, s.Objects)
	}
	t.Run("check-upgrade/old-cluster", func(t *testing.T) {
		checkUpgradeRefuses(t, c, fx, "release.yaml", map[string]string{name: "v1alpha1"})
	})

	succeeds(t, "migrate", name)
	// Now this cluster is the "control" one: storedVersions [v1beta1].
	t.Run("check-upgrade/young-cluster", func(t *testing.T) {
		// The case's setup wrote its object through v1alpha1 minutes ago,
		// which the usage check of the removed v1alpha1 rightly counts as a
		// client (TestCheckUpgradeJudgesRemovedVersionsByUsage's subject);
		// storedVersions is this test's.
		r := crdversion(t, "check-upgrade", "-f", fx.path("release.yaml"), "--skip-usage-check")
		if r.code != 0 || strings.Contains(r.stdout+r.stderr, "kubectl crdversion migrate") {
			t.Errorf("check-upgrade on a migrated cluster: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
	releaseApplies(t, c, fx.path("release.yaml"), name)
	assertHealthy(t, c, name, before)
}

// TestCase04StoredVersionsEditIgnored: writes of status.storedVersions
// through the CRD's main resource are accepted and ignored; only /status
// changes it — and on v1.37 /status accepts any list, unlike what the case
// reports: a version missing from spec.versions (which then blocks every
// update of the CRD) or a list without the storage version. status names
// each mistake; migrate repairs both: a complete, clean pass proves where
// the objects are and writes [storage] through /status, verifying it.
func TestCase04StoredVersionsEditIgnored(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	const name = "dashboards.kb.example.com"
	_, _, before := buildCase(t, c, "04-storedversions-edit-silently-ignored", name)
	ctx := context.Background()
	crds := c.ext.ApiextensionsV1().CustomResourceDefinitions()
	statusPatch := func(list string) {
		t.Helper()
		if _, err := crds.Patch(ctx, name, types.MergePatchType, []byte(`{"status":{"storedVersions":`+list+`}}`), metav1.PatchOptions{}, "status"); err != nil {
			t.Fatalf("status patch %s: %v", list, err)
		}
	}

	// The trap: a JSON patch of the main resource "succeeds".
	patch := []byte(`[{"op":"replace","path":"/status/storedVersions","value":["v1beta1"]}]`)
	if _, err := crds.Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching status through the main resource: %v", err)
	}
	if got := storedVersionsOf(t, c, name); !slices.Equal(got, []string{"v1alpha1", "v1beta1"}) {
		t.Fatalf("the main resource changed storedVersions to %v", got)
	}

	// A typo through /status is accepted, and then every spec update fails.
	statusPatch(`["v1beta1","v9"]`)
	r := refuses(t, c, []string{name}, []string{missingStoredVersionAt(1, "v9")}, "deprecate", name, "v1alpha1")
	t.Logf("deprecate after the typo: %s", r.stderr)
	s := statusJSON(t, name)
	if f, found := finding(s, lifecycle.CodeStoredVersionNotInSpec); !found || f.Version != "v9" || f.Fix != "kubectl crdversion migrate "+name {
		t.Errorf("status does not point at migrate for v9: %+v", s.Findings)
	}
	r = succeeds(t, "migrate", name)
	if !strings.Contains(r.stdout, "rewritten 0, already current 1") || !strings.Contains(r.stdout, "status.storedVersions: [v1beta1, v9] -> [v1beta1]") {
		t.Errorf("migrate:\n%s", r.stdout)
	}

	// A list without the storage version is accepted as well.
	statusPatch(`["v1alpha1"]`)
	s = statusJSON(t, name)
	if f, found := finding(s, lifecycle.CodeStorageVersionNotStored); !found || f.Version != "v1beta1" || f.Fix != "kubectl crdversion migrate "+name {
		t.Errorf("status does not flag storedVersions [v1alpha1] without the storage version v1beta1: %+v", s.Findings)
	}
	r = succeeds(t, "migrate", name)
	if !strings.Contains(r.stdout, "status.storedVersions: [v1alpha1] -> [v1beta1]") {
		t.Errorf("migrate:\n%s", r.stdout)
	}
	assertHealthy(t, c, name, before)
}

// TestCase06MigratedButNotTrimmed: every object is already stored at v1,
// but storedVersions still lists v1alpha2. migrate still rewrites (a no-op
// write per object is the only proof) and trims; the chart then applies.
func TestCase06MigratedButNotTrimmed(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	const name = "clusterpolicies.policies.example.com"
	fx, crd, before := buildCase(t, c, "06-migrated-but-storedversions-not-pruned", name)
	wantStoredAt(t, crd, "policies.example.com/v1", 3)

	wantAPIError(t, "applying the chart", applyReleaseFile(t, c, fx.path("release.yaml"))[name], missingStoredVersion("v1alpha2"))

	r := succeeds(t, "migrate", name)
	if !strings.Contains(r.stdout, "total 3, rewritten 0, already current 3") || !strings.Contains(r.stdout, "[v1alpha2, v1] -> [v1]") {
		t.Errorf("migrate:\n%s", r.stdout)
	}
	releaseApplies(t, c, fx.path("release.yaml"), name)
	assertHealthy(t, c, name, before)
}

// TestCase07ManyCRDsOneRelease: one release drops old versions of two CRDs
// (A, B) and keeps a third (C). Both are refused with the v1.33+ message;
// status flags A and B and not C; migrating A and B lets the release apply.
func TestCase07ManyCRDsOneRelease(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	fx := loadCase(t, "07-new-message-format-multi-crd")
	crds := fx.build(t, c)
	a, b, healthy := "releases.helm.example.com", "alerts.notify.example.com", "sources.src.example.com"
	before := map[string]map[string]map[string]any{}
	for n, crd := range crds {
		before[n] = fx.contentsOf(crd)
	}

	errs := applyReleaseFile(t, c, fx.path("release.yaml"))
	wantAPIError(t, "applying the release to "+a, errs[a], missingStoredVersion("v2beta1"))
	wantAPIError(t, "applying the release to "+b, errs[b], missingStoredVersion("v1beta1"))
	if errs[healthy] != nil {
		t.Errorf("the release was refused for %s: %v", healthy, errs[healthy])
	}
	for n, stale := range map[string]string{a: "v2beta1", b: "v1beta1"} {
		if f, found := finding(statusJSON(t, n), lifecycle.CodeMigrationPending); !found || f.Version != stale {
			t.Errorf("status %s: no MigrationPending finding for %s", n, stale)
		}
	}
	if s := statusJSON(t, healthy); len(s.Findings) != 0 {
		t.Errorf("status %s reports %+v", healthy, s.Findings)
	}
	t.Run("check-upgrade", func(t *testing.T) {
		checkUpgradeRefuses(t, c, fx, "release.yaml", map[string]string{a: "v2beta1", b: "v1beta1"}, healthy)
	})

	succeeds(t, "migrate", a)
	succeeds(t, "migrate", b)
	for n, err := range applyReleaseFile(t, c, fx.path("release.yaml")) {
		if err != nil {
			t.Errorf("the release after migrate, %s: %v", n, err)
		}
	}
	for n := range crds {
		assertHealthy(t, c, n, before[n])
	}
}

// TestCase09MigrationBeforeTheFlip: a migration run while the old version is
// still the storage version rewrites objects at the old version and cannot
// retire it. migrate refuses it, naming promote-storage; after the flip,
// status points at migrate, which makes the release apply.
func TestCase09MigrationBeforeTheFlip(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	const name = "triggers.eventing.example.com"
	fx, crd, before := buildCase(t, c, "09-knative-migration-job-misordered", name)

	// Step A, the "Completed but useless" Job.
	refusesInEveryDryRun(t, c, []string{name}, []string{"storage version is v1alpha1", "v1beta1", "kubectl crdversion promote-storage " + name + " v1beta1"}, "migrate", name)
	wantStoredAt(t, crd, "eventing.example.com/v1alpha1", 2)

	// Step B: the release that flips the storage version.
	if err := applyReleaseFile(t, c, fx.path("release-flip.yaml"))[name]; err != nil {
		t.Fatal(err)
	}
	s := statusJSON(t, name)
	if s.State != lifecycle.StateS2 || s.Next == nil || s.Next.Command != "kubectl crdversion migrate "+name {
		t.Errorf("after the flip: state %s, next %+v; want S2 and migrate", s.State, s.Next)
	}
	// Step C, as users met it.
	wantAPIError(t, "applying the release without v1alpha1", applyReleaseFile(t, c, fx.path("release.yaml"))[name], missingStoredVersion("v1alpha1"))

	r := succeeds(t, "migrate", name)
	if !strings.Contains(r.stdout, "rewritten 2") || !strings.Contains(r.stdout, "[v1alpha1, v1beta1] -> [v1beta1]") {
		t.Errorf("migrate:\n%s", r.stdout)
	}
	releaseApplies(t, c, fx.path("release.yaml"), name)
	assertHealthy(t, c, name, before)
}

// TestCase15StorageVersionCount: manifests with two storage versions, or
// none, are refused by the API server; promote-storage -f repairs such a
// manifest (exactly one storage version, the old one flipped in the same
// write), and the repaired manifest applies.
func TestCase15StorageVersionCount(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	const name = "paramsets.net.example.com"
	fx, _, before := buildCase(t, c, "15-two-or-zero-storage-versions", name)

	for _, file := range []string{"release.yaml", "release-zero.yaml"} {
		wantAPIError(t, "applying "+file, applyReleaseFile(t, c, fx.path(file))[name], "must have exactly one version marked as storage version")
	}
	for _, file := range []string{"release-zero.yaml", "release.yaml"} {
		repaired := filepath.Join(t.TempDir(), file)
		data, err := os.ReadFile(fx.path(file))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, repaired, string(data))
		r := succeeds(t, "promote-storage", name, "v1", "-f", repaired, "--in-place")
		if !strings.Contains(r.stderr, "WARN  ") || !strings.Contains(r.stderr, "must have exactly one version marked as storage version") {
			t.Errorf("promote-storage -f %s does not say what was wrong:\n%s", file, r.stderr)
		}
		objs, err := fixture.Read(repaired)
		if err != nil {
			t.Fatal(err)
		}
		fixed, err := fixture.CRD(objs[0])
		if err != nil {
			t.Fatal(err)
		}
		if s := lifecycle.StorageVersions(fixed); !slices.Equal(s, []string{"v1"}) {
			t.Errorf("%s repaired by promote-storage -f has storage versions %v, want [v1]\n%s", file, s, r.stderr)
		}
		if file == "release.yaml" {
			if err := applyReleaseFile(t, c, repaired)[name]; err != nil {
				t.Fatalf("the repaired manifest: %v", err)
			}
		}
	}
	if got := storedVersionsOf(t, c, name); !slices.Equal(got, []string{"v1alpha1", "v1"}) {
		t.Errorf("storedVersions %v, want [v1alpha1 v1]", got)
	}
	succeeds(t, "migrate", name)
	assertHealthy(t, c, name, before)
}

// preserveUnknownFieldsOff sends the repair the tool prints for
// preserveUnknownFields: true (lifecycle.PreserveUnknownFieldsOff): the
// merge patch of `kubectl patch crd NAME --type=merge -p …`.
func preserveUnknownFieldsOff(t *testing.T, c clients, name string) {
	t.Helper()
	_, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Patch(context.Background(), name, types.MergePatchType,
		[]byte(`{"spec":{"preserveUnknownFields":false}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("setting preserveUnknownFields to false: %v", err)
	}
	waitFor(t, "the schema to be found structural", func() (bool, error) {
		for _, cond := range getCRD(t, c, name).Status.Conditions {
			if cond.Type == apiextensionsv1.NonStructuralSchema && cond.Status == apiextensionsv1.ConditionTrue {
				return false, nil
			}
		}
		return true, nil
	})
}

// TestCase11PreserveUnknownFieldsBlocksDefaults: a CRD born under v1beta1
// keeps preserveUnknownFields: true; the v1 manifest with a default is
// rejected. status names the flag and the command that clears it;
// add-version refuses a defaulted schema for the same reason, before the
// API server does; after the flag is cleared the release applies and the
// objects keep their fields.
func TestCase11PreserveUnknownFieldsBlocksDefaults(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	const name = "rollouts.deploy.example.com"
	fx, _, before := buildCase(t, c, "11-preserveunknownfields-blocks-defaults", name)

	wantAPIError(t, "applying the v1 manifest", applyReleaseFile(t, c, fx.path("release.yaml"))[name],
		`spec.preserveUnknownFields: Invalid value: true: must be false in order to use defaults in the schema`)

	s := statusJSON(t, name)
	if f, found := finding(s, lifecycle.CodePreserveUnknownFields); !found || !strings.HasPrefix(f.Fix, lifecycle.PreserveUnknownFieldsOff(name).String()) {
		t.Errorf("status: %+v", s.Findings)
	}
	refuses(t, c, []string{name}, []string{"spec.preserveUnknownFields is true", "must be false in order to use defaults in the schema", ".spec.replicas", lifecycle.PreserveUnknownFieldsOff(name).String()},
		"add-version", name, "v1beta1", "--schema-file", fx.path("v1beta1.schema.yaml"))

	preserveUnknownFieldsOff(t, c, name)
	releaseApplies(t, c, fx.path("release.yaml"), name)
	assertHealthy(t, c, name, before)
	succeeds(t, "add-version", name, "v1beta1", "--schema-file", fx.path("v1beta1.schema.yaml"))
}

// TestCase12PreserveUnknownFieldsBlocksWebhook: adding Webhook conversion to
// a CRD that still has preserveUnknownFields: true is rejected by the API
// server; add-version --conversion Webhook refuses first, naming the flag;
// with the flag cleared the webhook is added and migrate finishes the move.
func TestCase12PreserveUnknownFieldsBlocksWebhook(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	const name = "revisions.serving.example.com"
	_, _, before := buildCase(t, c, "12-preserveunknownfields-blocks-webhook", name)
	hook := newConversionWebhook(t)
	ca := hook.caFile(t)

	ctx := context.Background()
	crds := c.ext.ApiextensionsV1().CustomResourceDefinitions()
	naive := []byte(`{"spec":{"conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],"clientConfig":{"url":"` + hook.URL + `/convert"}}}}}`)
	_, err := crds.Patch(ctx, name, types.MergePatchType, naive, metav1.PatchOptions{})
	wantAPIError(t, "setting Webhook conversion", err, `spec.conversion.strategy: Invalid value: "Webhook": must be None if spec.preserveUnknownFields is true`)

	args := []string{"add-version", name, "v2", "--conversion", "Webhook", "--webhook-url", hook.URL + "/convert", "--ca-bundle-file", ca}
	refuses(t, c, []string{name}, []string{"spec.preserveUnknownFields is true", "must be None if spec.preserveUnknownFields is true", lifecycle.PreserveUnknownFieldsOff(name).String()}, args...)

	preserveUnknownFieldsOff(t, c, name)
	r := succeeds(t, args...)
	if !strings.Contains(r.stdout, "the conversion webhook converted a sample Revision") {
		t.Errorf("add-version:\n%s", r.stdout)
	}
	succeeds(t, "migrate", name)
	assertHealthy(t, c, name, before)
	if hook.calls.Load() == 0 {
		t.Error("the conversion webhook was never called")
	}
}

// TestCase16ConversionWebhookDown: objects still stored at v1alpha1, storage
// v1beta1, and the conversion webhook's Service is gone. Every list at
// v1beta1 fails; status names the webhook; migrate's loss measurement
// cannot read the objects and refuses as unknown, naming the webhook,
// before writing anything; once the webhook answers again migrate moves every object to
// v1beta1, after which reads at v1beta1 no longer need the webhook at all.
func TestCase16ConversionWebhookDown(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	const name = "kafkasources.sources.example.com"
	_, crd, before := buildCase(t, c, "16-conversion-webhook-down", name)

	var err error
	waitFor(t, "the webhook to be used", func() (bool, error) { // once the API server's CRD informer has it
		_, err = c.dyn.Resource(gvr(crd, "v1beta1")).List(context.Background(), metav1.ListOptions{})
		return err != nil, nil
	})
	wantAPIError(t, "listing at v1beta1", err, `conversion webhook for sources.example.com/v1alpha1, Kind=KafkaSource failed`, `service "kafka-source-webhook" not found`)

	s := statusJSON(t, name)
	f, found := finding(s, lifecycle.CodeObjectsUnreadable)
	if !found || !strings.Contains(f.Message, "kafka-source-webhook") || !strings.Contains(f.Fix, "sources-system/kafka-source-webhook") {
		t.Errorf("status does not name the dead webhook: %+v", s.Findings)
	}
	r := refuses(t, c, []string{name}, []string{"kafka-source-webhook", "what the migration loses is unknown", "nothing was changed"}, "migrate", name)
	t.Logf("migrate with the webhook down:\n%s%s", r.stdout, r.stderr)
	if got := storedVersionsOf(t, c, name); !slices.Equal(got, []string{"v1alpha1", "v1beta1"}) {
		t.Errorf("storedVersions %v after a failed migrate", got)
	}

	// The webhook is back (here: a test webhook at a URL).
	hook := newConversionWebhook(t)
	ca, err := os.ReadFile(hook.caFile(t))
	if err != nil {
		t.Fatal(err)
	}
	updateCRD(t, c, name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		url := hook.URL + "/resource-conversion"
		crd.Spec.Conversion.Webhook.ClientConfig = &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: ca}
	})
	waitFor(t, "the API server to call the webhook at its URL", func() (bool, error) { // once its CRD handler has the edit
		_, err := c.dyn.Resource(gvr(crd, "v1beta1")).List(context.Background(), metav1.ListOptions{})
		return err == nil, nil
	})
	succeeds(t, "migrate", name)
	assertHealthy(t, c, name, before)

	// Stored at v1beta1, the objects are read at v1beta1 without the webhook.
	hook.failing.Store(true)
	if _, err := c.dyn.Resource(gvr(crd, "v1beta1")).List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Errorf("listing at the storage version with the webhook failing: %v", err)
	}
}

// TestCase17ConversionWebhookGone: the operator and its conversion webhook
// Service are gone, the CRD still says Webhook. The object sits at the
// storage version, but kubectl and the namespace controller use the
// preferred version v1alpha2, which needs conversion: deleting and listing
// fail. status lists through v1alpha2 as well, names the dead Service and,
// since every version has the same schema, prints the switch to None; after
// it the object is intact and can be deleted.
func TestCase17ConversionWebhookGone(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	const name = "meshconfigs.config.example.com"
	_, crd, before := buildCase(t, c, "17-conversion-webhook-gone-deletion", name)
	ctx := context.Background()

	// The API server serves the new conversion strategy once its CRD
	// informer has the update.
	var err error
	waitFor(t, "the webhook to be used", func() (bool, error) {
		_, err = c.dyn.Resource(gvr(crd, "v1alpha2")).List(ctx, metav1.ListOptions{})
		return err != nil, nil
	})
	wantAPIError(t, "listing at the preferred version v1alpha2", err, `conversion webhook for config.example.com/v1alpha1, Kind=MeshConfig failed`, `service "mesh-bootstrap" not found`)

	s := statusJSON(t, name)
	f, found := finding(s, lifecycle.CodeObjectsUnreadable)
	patch := lifecycle.NoneConversionOn(name, "service mesh-system/mesh-bootstrap:9443/convert/meshconfig")
	if !found || f.Version != "v1alpha2" || !strings.Contains(f.Fix, "service mesh-system/mesh-bootstrap:9443/convert/meshconfig") || !strings.HasSuffix(f.Fix, patch.String()) {
		t.Fatalf("status does not name the dead webhook and the way out: %+v", s.Findings)
	}

	// The break-glass status printed: the real kubectl runs it.
	if out, err := exec.Command("kubectl", append(patch.Argv(nil)[1:], "--kubeconfig", srv.Kubeconfig)...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", patch, err, out)
	}
	waitFor(t, "a list at v1alpha2", func() (bool, error) {
		_, err := c.dyn.Resource(gvr(crd, "v1alpha2")).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	// None stands in for the webhook (B20): any write stores objects
	// unconverted, so status says so and advises no migration, and
	// migrate refuses.
	s = statusJSON(t, name)
	if f, found := finding(s, lifecycle.CodeConversionBreakGlass); !found || f.Severity != lifecycle.SeverityError || (s.Next != nil && len(s.Next.Run) > 0) {
		t.Errorf("status under the break-glass: findings %+v, next %+v", s.Findings, s.Next)
	}
	refuses(t, c, []string{name}, []string{"conversion strategy None stands in for the conversion webhook", "a break-glass"}, "migrate", name)
	// The mesh is gone for good and its versions need no conversion: the
	// user keeps None and removes the mark, as the fix says.
	if _, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx, name, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+lifecycle.BreakGlassAnnotation+`":null}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("removing the mark: %v", err)
	}
	assertHealthy(t, c, name, before)
	if err := resource(c, crd, "v1alpha2", "mesh-system").Delete(ctx, "mesh-config", metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting at v1alpha2 after the switch: %v", err)
	}
}

// TestCase18SchemaChangePrunes: conversion None between schemas that differ
// drops fields. add-version refuses the renamed field (variant B), naming
// it; the release that shrinks v1 (variant A) is accepted by the API server
// and the data disappears from reads, while migrate refuses to make the
// loss permanent. Restoring the schemas with both fields brings the data
// back, and the migration then keeps it.
func TestCase18SchemaChangePrunes(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	const name = "standalones.ent.example.com"
	fx, crd, _ := buildCase(t, c, "18-schema-change-prunes", name)
	ctx := context.Background()
	licenseOf := func(version string) (url, ref string) {
		t.Helper()
		var u *unstructured.Unstructured
		// Right after a CRD change the new version's endpoint may lag.
		waitFor(t, "s1 at "+version, func() (bool, error) {
			var err error
			u, err = resource(c, crd, version, "default").Get(ctx, "s1", metav1.GetOptions{})
			return err == nil, nil
		})
		url, _, _ = unstructured.NestedString(u.Object, "spec", "licenseUrl")
		ref, _, _ = unstructured.NestedString(u.Object, "spec", "licenseRef")
		return url, ref
	}

	// Variant B through the tool: refused, the lost field named.
	refuses(t, c, []string{name}, []string{"conversion strategy None and the schemas differ", ".spec.licenseUrl at v1", ".spec.licenseRef at v2"},
		"add-version", name, "v2", "--schema-file", fx.path("v2-renamed.schema.yaml"))

	t.Run("check-upgrade", func(t *testing.T) {
		// v1's schema loses .spec altogether (licenseUrl with it), and None
		// conversion between v2 and v1 drops it too.
		refuses(t, c, []string{name}, []string{"ERROR v1 .spec: field removed", "objects written at v2 lose .spec"}, "check-upgrade", "-f", fx.path("release-a.yaml"))
	})

	// Variant A applied as users did: accepted, and the fields vanish.
	releaseApplies(t, c, fx.path("release-a.yaml"), name)
	if url, ref := licenseOf("v2"); url != "" || ref != "" {
		t.Errorf("read at v2: licenseUrl %q licenseRef %q; the API server was expected to prune both", url, ref)
	}
	wantStoredAt(t, crd, "ent.example.com/v1", 1)
	s := statusJSON(t, name)
	if f, found := finding(s, lifecycle.CodeMigrationPrunes); !found || !strings.Contains(f.Message, "v1's schema does not describe .spec") {
		t.Errorf("status does not warn that v1's schema no longer describes its objects: %+v", s.Findings)
	}
	// The data is still in etcd; migrate refuses to make the loss permanent.
	refusesInEveryDryRun(t, c, []string{name}, []string{"v1's schema does not describe .spec", "--allow-pruning"}, "migrate", name)
	// The measurement found the data no read shows: s1's managedFields
	// record the field its read lacks.
	refuses(t, c, []string{name}, []string{"1 object(s) hold fields that their managedFields record and that neither the read nor v2's answer shows: default/s1: .spec.image, .spec.licenseUrl, .spec.replicas",
		"declare the fields again in the schema of v1"}, "migrate", name)

	// The repair the reports settled on: complete schemas, both fields side by side.
	updateCRD(t, c, name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		full := fx.crds[0].Spec.Versions[0].Schema.DeepCopy()
		spec := full.OpenAPIV3Schema.Properties["spec"]
		spec.Properties["licenseRef"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
		full.OpenAPIV3Schema.Properties["spec"] = spec
		crd.Spec.Versions[0].Schema = full.DeepCopy()
		crd.Spec.Versions[1].Schema = full
	})
	// The data comes back once the API server serves the restored schemas.
	waitFor(t, "licenseUrl at v2 after restoring the schemas", func() (bool, error) {
		url, _ := licenseOf("v2")
		return url == "https://license.example.com/l1", nil
	})
	succeeds(t, "migrate", name)
	wantStoredAt(t, crd, "ent.example.com/v2", 1)
	if url, _ := licenseOf("v2"); url != "https://license.example.com/l1" {
		t.Errorf("licenseUrl after the migration: %q", url)
	}
}

// TestCase19MigrationOfMissingCRD: migrating a CRD that is not installed
// fails at once with a one-line error (no retry, nothing written); the
// installed one migrates.
func TestCase19MigrationOfMissingCRD(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	const name = "brokers.eventing.example.com"
	_, _, before := buildCase(t, c, "19-migration-crd-not-installed", name)

	r := refuses(t, c, []string{name}, []string{`no CustomResourceDefinition matches "inmemorychannels.messaging.example.com"`}, "migrate", "inmemorychannels.messaging.example.com")
	if lines := strings.Count(strings.TrimSpace(r.stderr), "\n"); lines != 0 {
		t.Errorf("the error is not one line:\n%s", r.stderr)
	}
	succeeds(t, "migrate", name)
	assertHealthy(t, c, name, before)
}

// TestCase20MigrationAtScale: 1,000 Apps stored at v1alpha1 across 20
// namespaces while a controller updates and a garbage collector deletes
// them: migrate (paged, concurrent, each write pinned to uid and
// resourceVersion) fails nothing, loses no update, re-creates nothing, and
// trims. The measured rate is logged.
func TestCase20MigrationAtScale(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	const name = "apps.platform.example.com"
	_, crd, _ := buildCase(t, c, "20-migration-at-scale", name)
	// Generated objects are written while v1alpha1 is the storage version.
	setStorage(t, c, name, "v1alpha1")
	nss := namespaces("space", 20)
	createManyCronTabs(t, c, crd, "v1alpha1", 1000, nss)
	crd = setStorage(t, c, name, "v1")
	wantStoredAt(t, crd, "platform.example.com/v1alpha1", 1001)

	m := migrateUnderLoad(t, c, crd, "v1alpha1", "v1", nss, 1000, "--chunk-size", "100")
	t.Logf("migrated %d objects in %.1fs (%.0f objects/s)", m.Total, m.ElapsedSeconds, m.ObjectsPerSecond)
	if m.Rewritten == 0 || m.Total < 900 {
		t.Errorf("counts: %+v", m.Counts)
	}
}

// TestCase21ObjectsInvalidAtNewVersion: v1alpha2 requires spec.container,
// which existing Addons lack (one of them stuck in deletion). add-version
// first refuses the schema because None conversion would prune the new
// field at v1alpha1; with the schemas agreeing on the field, it adds
// v1alpha2, and promote-storage refuses, naming every object invalid there
// and why. Defaulting the new field (the fix the reports settled on) lets
// the promotion and the migration through, the object in deletion included.
func TestCase21ObjectsInvalidAtNewVersion(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	const name = "addons.tools.example.com"
	fx, crd, _ := buildCase(t, c, "21-objects-fail-new-validation", name)
	ctx := context.Background()
	if err := resource(c, crd, "v1alpha1", "tools").Delete(ctx, "legacy", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // let legacy go, or the CRD's deletion waits for it
		_, _ = resource(c, crd, "v1alpha1", "tools").Patch(context.Background(), "legacy", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	names := []string{name}
	schemaFile := fx.path("v1alpha2.schema.yaml")
	editSpec := func(version string, edit func(spec *apiextensionsv1.JSONSchemaProps)) {
		updateCRD(t, c, name, func(crd *apiextensionsv1.CustomResourceDefinition) {
			v := lifecycle.FindVersion(crd, version)
			spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
			edit(&spec)
			v.Schema.OpenAPIV3Schema.Properties["spec"] = spec
		})
	}

	refuses(t, c, names, []string{".spec.container at v1alpha2 (read or written through v1alpha1)"}, "add-version", name, "v1alpha2", "--schema-file", schemaFile)
	editSpec("v1alpha1", func(spec *apiextensionsv1.JSONSchemaProps) {
		spec.Properties["container"] = apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"name": {Type: "string"}}}
	})
	succeeds(t, "add-version", name, "v1alpha2", "--schema-file", schemaFile)

	r := refuses(t, c, names, []string{"2 of 2 checked object(s) are invalid at v1alpha2", "tools/analyzer", "tools/legacy", "spec.container: Required value"}, "promote-storage", name, "v1alpha2")
	t.Logf("promote-storage:\n%s%s", r.stdout, r.stderr)

	editSpec("v1alpha2", func(spec *apiextensionsv1.JSONSchemaProps) {
		container := spec.Properties["container"]
		container.Default = &apiextensionsv1.JSON{Raw: []byte(`{"name":"main"}`)}
		spec.Properties["container"] = container
	})
	// Once its CRD handler has the edit, the API server defaults
	// spec.container on a write through v1alpha2 (a read from etcd takes the
	// storage version's defaults), and the dry run promote-storage sends is
	// valid.
	waitFor(t, "a write through v1alpha2 to be defaulted", func() (bool, error) {
		u, err := resource(c, crd, "v1alpha2", "tools").Get(context.Background(), "analyzer", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		_, err = resource(c, crd, "v1alpha2", "tools").Update(context.Background(), u, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil, nil
	})
	succeeds(t, "promote-storage", name, "v1alpha2")
	succeeds(t, "migrate", name)
	wantStoredAt(t, crd, "tools.example.com/v1alpha2", 2)
	assertHealthy(t, c, name, map[string]map[string]any{
		"tools/analyzer": {"kind": "Addon", "spec": map[string]any{"image": "analyzer:1", "container": map[string]any{"name": "main"}}},
		"tools/legacy":   {"kind": "Addon", "spec": map[string]any{"image": "legacy:0", "container": map[string]any{"name": "main"}}},
	})
}

// recordWarnings is a rest.WarningHandler that keeps the warnings.
type recordWarnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *recordWarnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

// warningsFor lists crd's objects at version and returns the warnings the
// API server sent.
func warningsFor(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, version string) []string {
	t.Helper()
	cfg := rest.CopyConfig(srv.Config)
	w := &recordWarnings{}
	cfg.WarningHandler = w
	if _, err := dynamic.NewForConfigOrDie(cfg).Resource(gvr(crd, version)).List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	return w.seen
}

// waitWarnings lists crd's objects at version until the API server's
// warnings are want, and fails the test after waitFor's bound. A CRD edit
// that discovery does not show (deprecated, deprecationWarning) reaches the
// handler a moment after the write returns — seconds on a loaded machine —
// so a test asks the server until it answers with the edit.
func waitWarnings(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, version string, want []string) {
	t.Helper()
	var got []string
	waitFor(t, fmt.Sprintf("the API server to warn %q at %s", want, version), func() (bool, error) {
		got = warningsFor(t, crd, version)
		return slices.Equal(got, want), nil
	})
}

// TestCase23DeprecationWarningNoise: deprecating the only served version
// with a text that names no API. deprecate warns about both; the order the
// tool proposes instead — add and serve the replacement, then deprecate
// with the API server's default text — gives clients a warning that names
// the API and where to go.
func TestCase23DeprecationWarningNoise(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	const name = "controllerconfigs.pkg.example.com"
	_, crd, before := buildCase(t, c, "23-deprecation-warning-noise", name)
	vague := "This API is deprecated and is scheduled to be removed in a future release."

	r := succeeds(t, "deprecate", name, "v1alpha1", "--warning", vague, "--dry-run=server")
	for _, w := range []string{"WARN  v1alpha1 is the only served version", "WARN  the warning does not name the API it is about (pkg.example.com/v1alpha1 ControllerConfig)"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("deprecate preflight lacks %q:\n%s", w, r.stdout)
		}
	}
	succeeds(t, "deprecate", name, "v1alpha1", "--warning", vague)
	waitWarnings(t, crd, "v1alpha1", []string{vague})

	succeeds(t, "deprecate", name, "v1alpha1", "--undo")
	succeeds(t, "add-version", name, "v1beta1")
	r = succeeds(t, "deprecate", name, "v1alpha1")
	if strings.Contains(r.stdout, "WARN  v1alpha1 is the only served version") || strings.Contains(r.stdout, "does not name the API") {
		t.Errorf("deprecate with a replacement and the default text still warns:\n%s", r.stdout)
	}
	waitWarnings(t, crd, "v1alpha1", []string{"pkg.example.com/v1alpha1 ControllerConfig is deprecated; use pkg.example.com/v1beta1 ControllerConfig"})
	if got := warningsFor(t, crd, "v1beta1"); len(got) != 0 {
		t.Errorf("warnings at v1beta1: %q", got)
	}
	succeeds(t, "promote-storage", name, "v1beta1")
	succeeds(t, "migrate", name)
	// Client usage is not this case's subject (the usage tests' is).
	succeeds(t, "unserve", name, "v1alpha1", "--skip-usage-check")
	assertHealthy(t, c, name, before)
}

// TestCase24UnservedVersionBreaksClients: unserving v1alpha2 leaves the
// data intact but breaks every client still using it ("no matches for
// kind"); serving it again is the immediate repair. In order — migrate,
// move the consumers, unserve — the CRD ends healthy; retire (issue 4) then
// removes v1alpha2.
func TestCase24UnservedVersionBreaksClients(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	const name = "certificates.certs.example.com"
	fx, crd, before := buildCase(t, c, "24-served-false-breaks-clients", name)
	consumer := fx.read(t, "consumer.yaml")

	// Client usage is not this case's subject (the usage tests' is).
	r := succeeds(t, "unserve", name, "v1alpha2", "--skip-usage-check")
	if !strings.Contains(r.stdout, "WARN  v1alpha2 is still in status.storedVersions") {
		t.Errorf("unserve:\n%s", r.stdout)
	}
	_, err := fixture.Apply(context.Background(), srv.Config, consumer)
	wantAPIError(t, "a consumer's manifest at v1alpha2", err, `no matches for kind "Certificate" in version "certs.example.com/v1alpha2"`)
	if got := contents(t, c, crd, "v1"); len(got) != 1 {
		t.Errorf("objects at v1 after unserve: %v", got)
	}

	// Reversible: serve it again and the consumer works.
	r = succeeds(t, "serve", name, "v1alpha2")
	if !strings.Contains(r.stdout, "Served: certs.example.com/v1alpha2 is in discovery") {
		t.Errorf("serve:\n%s", r.stdout)
	}
	if _, err := fixture.Apply(context.Background(), srv.Config, consumer); err != nil {
		t.Fatalf("the consumer after serve: %v", err)
	}
	addContents(before, crd, consumer)

	succeeds(t, "migrate", name)
	// The consumer stopped writing through v1alpha2 (it moved to v1).
	succeeds(t, "unserve", name, "v1alpha2", "--skip-usage-check")
	assertHealthy(t, c, name, before)

	t.Run("retire", func(t *testing.T) {
		// The consumer applied its objects at v1alpha2: their managedFields
		// name it, so retire rewrites them first.
		succeeds(t, "retire", name, "v1alpha2", "--migrate", "--skip-usage-check", "--clean-managed-fields")
		if lifecycle.FindVersion(getCRD(t, c, name), "v1alpha2") != nil {
			t.Error("retire left v1alpha2 in spec.versions")
		}
		assertHealthy(t, c, name, before)
	})
}

// TestCase26ReleaseUsesMissingVersion: the chart's templates use v1beta1,
// which the CRD in the cluster lacks. add-version adds it and says when
// clients can use it; the templates then apply, and the usual promotion and
// migration follow.
func TestCase26ReleaseUsesMissingVersion(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	const name = "stores.config.example.com"
	fx, crd, before := buildCase(t, c, "26-release-uses-missing-version", name)
	templates := fx.read(t, "templates.yaml")

	_, err := fixture.Apply(context.Background(), srv.Config, templates)
	wantAPIError(t, "the chart's templates at v1beta1", err, `no matches for kind "Store" in version "config.example.com/v1beta1"`)

	r := succeeds(t, "add-version", name, "v1beta1")
	if !strings.Contains(r.stdout, "Served: config.example.com/v1beta1 is in discovery; clients can use it now") {
		t.Errorf("add-version:\n%s", r.stdout)
	}
	if _, err := fixture.Apply(context.Background(), srv.Config, templates); err != nil {
		t.Fatalf("the templates after add-version: %v", err)
	}
	addContents(before, crd, templates)
	succeeds(t, "promote-storage", name, "v1beta1")
	succeeds(t, "migrate", name)
	// The new release's CRD now applies as it is.
	releaseApplies(t, c, fx.path("release.yaml"), name)
	wantStoredAt(t, crd, "config.example.com/v1beta1", 2)
	assertHealthy(t, c, name, before)
}

// TestCase27PlaceholderCABundle: the release's conversion webhook carries
// the placeholder caBundle "Cg==" that a CA injector replaces on the live
// CRD. check-upgrade warns before the first install (created, not served),
// and once the injected bundle is live, names the placeholder and its
// owner (cainjector) as an error finding that predicts the API server's
// refusal — counts, JSON and exit code agree — and changes nothing; the
// re-apply users ran is refused with the same message.
func TestCase27PlaceholderCABundle(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	const name = "inferences.serving.example.com"
	release := filepath.Join(repoRoot, "testdata", "cases", "27-conversion-cabundle-placeholder", "release.yaml")
	kubectl := func(args ...string) (string, error) {
		out, err := exec.Command("kubectl", append(args, "--kubeconfig", srv.Kubeconfig)...).CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() {
		_ = c.ext.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), name, metav1.DeleteOptions{})
	})

	// Before the first install: created, but not served until injected.
	r := succeeds(t, "check-upgrade", "-f", release)
	mustContain(t, "check-upgrade before the install", r.stdout, "WARNING - spec.conversion.webhook.clientConfig.caBundle", "holds no PEM certificate",
		"creates the CRD but does not serve it", "Apply: accepted (API server v1.37", "0 errors, 1 warning")

	if out, err := kubectl("apply", "--server-side", "--field-manager=installer", "-f", release); err != nil {
		t.Fatalf("the first install: %v\n%s", err, out)
	}
	// The injector writes a valid bundle (a certificate of a test server).
	ca := httptest.NewTLSServer(http.NotFoundHandler())
	ca.Close()
	patch := fmt.Sprintf(`{"spec":{"conversion":{"webhook":{"clientConfig":{"caBundle":%q}}}}}`, base64.StdEncoding.EncodeToString(pemCert(ca.Certificate().Raw)))
	if out, err := kubectl("patch", "crd", name, "--type=merge", "--field-manager=cainjector", "-p", patch); err != nil {
		t.Fatalf("the injector's patch: %v\n%s", err, out)
	}
	if err := fixture.WaitEstablished(context.Background(), c.ext, name); err != nil {
		t.Fatal(err)
	}

	// What users met: the re-sync of the release is refused.
	const refusal = "unable to load root certificates"
	out, err := kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=installer", "--dry-run=server", "-f", release)
	if err == nil || !strings.Contains(out, refusal) {
		t.Fatalf("re-applying the release: %v, want the API server's %q:\n%s", err, refusal, out)
	}

	r = refuses(t, c, []string{name}, []string{"ERROR - spec.conversion.webhook.clientConfig.caBundle", "over the valid bundle of the installed CRD",
		"written by field manager cainjector", "remove caBundle from the manifest", "Apply: REJECTED by the API server (API server v1.37", "Server dry run: rejected: ", refusal, "1 error,"},
		"check-upgrade", "-f", release)
	if strings.Contains(r.stdout, "0 errors") {
		t.Errorf("a rejected apply counted as no error:\n%s", r.stdout)
	}
	got := upgradeJSON(t, refuses(t, c, []string{name}, nil, "check-upgrade", "-f", release, "-o", "json"))
	p := got.CRDs[0]
	if errs := errorCodes(p); p.Apply != "Rejected" || !strings.HasPrefix(p.APIServer, "v1.37") || got.Summary.Errors != len(errs) || !got.Summary.Incompatible ||
		!slices.Equal(errs, []string{"CABundleInvalid"}) {
		t.Errorf("-o json: apply %s at %q, error findings %v, summary %+v; want Rejected at v1.37, [CABundleInvalid] counted", p.Apply, p.APIServer, errs, got.Summary)
	}
}

// TestCase28ScopeChangeRefused: the release makes a cluster-scoped CRD
// namespaced, which the API server refuses. check-upgrade says it is not a
// version change, counts the object that re-creating the CRD deletes,
// prints the export first and no delete; the printed export, run as it
// is, saves the object, and nothing is changed.
func TestCase28ScopeChangeRefused(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	const name = "apptemplates.spark.example.com"
	fx, _, before := buildCase(t, c, "28-scope-change-refused", name)

	err := applyReleaseFile(t, c, fx.path("release.yaml"))[name]
	wantAPIError(t, "the release's CRD", err, `spec.scope: Invalid value: "Namespaced": field is immutable`)

	const export = "kubectl get apptemplates.spark.example.com -o yaml > apptemplates.spark.example.com.yaml"
	r := refuses(t, c, []string{name}, []string{"ERROR - spec.scope", "not a version change", "1 AppTemplate object(s) exist (listed at v1alpha1)",
		export, "DELETES EVERY OBJECT OF IT (1)", "each object needs the namespace it goes to", "1 error,"}, "check-upgrade", "-f", fx.path("release.yaml"))
	t.Logf("check-upgrade:\n%s", r.stdout)
	if strings.Contains(r.stdout+r.stderr, "kubectl delete") {
		t.Errorf("check-upgrade prints a delete:\n%s", r.stdout)
	}
	// Advice is code: the export as printed (the kubeconfig from the
	// environment, as the user's shell has it) writes the object.
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", export)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "KUBECONFIG="+srv.Kubeconfig)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", export, err, out)
	}
	saved, err := fixture.Read(filepath.Join(dir, "apptemplates.spark.example.com.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range saved {
		names = append(names, u.GetName())
	}
	if !slices.Equal(names, []string{"default-template"}) {
		t.Errorf("the export saved %v, want [default-template]", names)
	}
	assertHealthy(t, c, name, before)
}

// TestCase29CELCostBudget: the release adds CEL rules on fields without
// size bounds; the update rules cannot predict the API server's cost
// estimate, the server dry run refuses, and check-upgrade counts that as
// an error finding at the rule's field, naming the API server version
// the verdict holds for — text, JSON and exit code agree, nothing
// changes. The fixed release (bounded fields) checks clean and applies.
func TestCase29CELCostBudget(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	const name = "policies.gateway.example.com"
	fx, _, before := buildCase(t, c, "29-cel-cost-budget", name)

	err := applyReleaseFile(t, c, fx.path("release.yaml"))[name]
	wantAPIError(t, "the release's CRD", err, "estimated rule cost exceeds budget")

	refuses(t, c, []string{name}, []string{"ERROR - spec.validation.openAPIV3Schema.properties[spec].properties[", "x-kubernetes-validations[0].rule",
		"the API server refused a server-side dry run of the apply", "estimated rule cost exceeds budget", "Apply: REJECTED by the API server (API server v1.37", "1 error,"},
		"check-upgrade", "-f", fx.path("release.yaml"))
	got := upgradeJSON(t, refuses(t, c, []string{name}, nil, "check-upgrade", "-f", fx.path("release.yaml"), "-o", "json"))
	ciOutputsAgree(t, got, "check-upgrade", "-f", fx.path("release.yaml"))
	p := got.CRDs[0]
	if codes := errorCodes(p); p.Apply != "Rejected" || p.Static != "Accepted" || !strings.HasPrefix(p.APIServer, "v1.37") ||
		!slices.Equal(codes, []string{"ApplyRejected"}) || got.Summary.Errors != 1 {
		t.Errorf("-o json: %+v, error findings %v", got, codes)
	}

	succeeds(t, "check-upgrade", "-f", fx.path("release-fixed.yaml"))
	releaseApplies(t, c, fx.path("release-fixed.yaml"), name)
	assertHealthy(t, c, name, before)
}

// upgradeJSON decodes check-upgrade -o json.
func upgradeJSON(t *testing.T, r result) report.UpgradeCheck {
	t.Helper()
	var got report.UpgradeCheck
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got.CRDs) == 0 {
		t.Fatalf("-o json: %v\n%s", err, r.stdout)
	}
	return got
}

// ciOutputsAgree runs check-upgrade args (without -o) as a GitHub Actions
// step would, with -o sarif and with -o junit, and checks that each
// agrees with the JSON report want and its exit code: SARIF valid 2.1.0
// with results by level as the summary counts, every result at a file
// and line; as many failed JUnit cases as errors; one annotation per
// finding on stderr, ::error for each error.
func ciOutputsAgree(t *testing.T, want report.UpgradeCheck, args ...string) {
	t.Helper()
	code := 0
	if want.Summary.Incompatible {
		code = 1
	}
	run := func(format string) result {
		r := binary(t, []string{"KUBECONFIG=" + srv.Kubeconfig, "GITHUB_ACTIONS=true"}, append(slices.Clone(args), "-o", format, "--cache-dir", t.TempDir())...)
		if r.code != code {
			t.Fatalf("-o %s: exit %d, want %d\n%s", format, r.code, code, r.stderr)
		}
		return r
	}
	r := run("sarif")
	log, err := sarif.FromString(r.stdout)
	if err != nil {
		t.Fatalf("-o sarif: %v\n%s", err, r.stdout)
	}
	if err := log.Validate(); err != nil {
		t.Fatalf("-o sarif is not valid SARIF 2.1.0: %v", err)
	}
	levels := map[string]int{}
	for _, res := range log.Runs[0].Results {
		levels[res.Level]++
		if loc := res.Locations[0].PhysicalLocation; *loc.ArtifactLocation.URI == "" || *loc.Region.StartLine < 1 {
			t.Errorf("-o sarif: a result without file and line: %+v", loc)
		}
	}
	if s := want.Summary; levels["error"] != s.Errors || levels["warning"] != s.Warnings || levels["note"] != s.Infos {
		t.Errorf("-o sarif: results by level %v, the JSON summary %+v", levels, s)
	}
	var annotations, errs int
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(l, "::") {
			annotations++
		}
		if strings.HasPrefix(l, "::error file=") {
			errs++
		}
	}
	if s := want.Summary; annotations != s.Errors+s.Warnings+s.Infos || errs != s.Errors {
		t.Errorf("annotations: %d (%d errors), the JSON summary %+v\n%s", annotations, errs, s, r.stderr)
	}
	var suites junit.Testsuites
	if err := xml.Unmarshal([]byte(run("junit").stdout), &suites); err != nil {
		t.Fatalf("-o junit: %v", err)
	}
	if suites.Failures != want.Summary.Errors || len(suites.Suites) != len(want.CRDs) {
		t.Errorf("-o junit: %d failures in %d suites, the JSON: %d errors in %d CRDs", suites.Failures, len(suites.Suites), want.Summary.Errors, len(want.CRDs))
	}
}

// errorCodes are the codes of p's error findings, sorted.
func errorCodes(p upgrade.Plan) []string {
	var out []string
	for _, f := range p.Findings {
		if f.Severity == lifecycle.SeverityError {
			out = append(out, f.Code)
		}
	}
	slices.Sort(out)
	return out
}
