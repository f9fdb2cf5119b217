package upgrade

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/schemadiff"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

const apply = "kubectl apply --server-side -f release.yaml"

func TestCheck(t *testing.T) {
	cases := []struct {
		name        string
		live, next  *apiextensionsv1.CustomResourceDefinition
		verdict     string
		fix         []string
		dataLoss    bool
		removed     []string
		defaultFrom string
	}{
		{"nothing removed", crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v2").CRD(), crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).CRD(), Accepted, nil, false, nil, "v2"},
		{"trimmed storedVersions: accepted", crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v2").CRD(), crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).CRD(), Accepted, nil, false, nil, "v2"},
		{"stored version removed, same storage",
			crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v1", "v2").CRD(), crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).CRD(), Rejected,
			[]string{"kubectl crdversion migrate crontabs.stable.example.com", apply}, false, []string{"v1"}, "v2"},
		{"storage version removed: the release's storage is served and promoted first",
			crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Version("v2", crdtest.Fields("image")).Stored("v1").CRD(), crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).CRD(), Rejected,
			[]string{"kubectl crdversion serve crontabs.stable.example.com v2", "kubectl crdversion promote-storage crontabs.stable.example.com v2", "kubectl crdversion migrate crontabs.stable.example.com", apply},
			false, []string{"v1"}, "v1"},
		{"the release adds its storage version",
			crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v1").CRD(), crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).CRD(), Rejected,
			[]string{"kubectl crdversion add-version crontabs.stable.example.com v2 --from v1", "kubectl crdversion promote-storage crontabs.stable.example.com v2", "kubectl crdversion migrate crontabs.stable.example.com", apply},
			false, []string{"v1"}, "v1"},
		{"a stored version already missing from spec",
			crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v1", "v2").CRD(), crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).CRD(), Rejected,
			[]string{"kubectl crdversion add-version crontabs.stable.example.com v1 --preserve-unknown-fields --served=false", "kubectl crdversion migrate crontabs.stable.example.com", apply},
			false, nil, "v2"},
		{"conversion None prunes what objects stored at the removed version have",
			crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Fields("image", "x")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v1", "v2").CRD(), crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).CRD(), Rejected,
			nil, true, []string{"v1"}, "v2"},
		{"the release renames the storage version and drops a field of the stored one: the steps stop before the apply",
			crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("image", "x")).Stored("v1").CRD(), crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).CRD(), Rejected,
			[]string{"kubectl crdversion add-version crontabs.stable.example.com v2 --from v1", "kubectl crdversion promote-storage crontabs.stable.example.com v2", "kubectl crdversion migrate crontabs.stable.example.com"},
			true, []string{"v1"}, "v1"},
		{"a stored version removed and a field removed from the storage version: the steps stop before the apply",
			crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Fields("image", "x")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image", "x")).Stored("v1", "v2").CRD(), crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).CRD(), Rejected,
			[]string{"kubectl crdversion migrate crontabs.stable.example.com"}, true, []string{"v1"}, "v2"},
		{"a field removed from the storage version's schema: accepted, data lost",
			crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image", "x")).Stored("v2").CRD(), crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).CRD(), Accepted, nil, true, nil, "v2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Check(tc.live, tc.next, "release.yaml", ApplyCommand([]string{"release.yaml"}, false))
			if p.Apply != tc.verdict || p.Static != tc.verdict {
				t.Errorf("verdict %s (static %s), want %s; reasons %q", p.Apply, p.Static, tc.verdict, p.Reasons)
			}
			if (p.Apply == Rejected) != (len(p.Reasons) > 0) {
				t.Errorf("reasons %q for verdict %s", p.Reasons, p.Apply)
			}
			if !slices.Equal(p.Fix, tc.fix) {
				t.Errorf("fix:\n got %q\nwant %q", p.Fix, tc.fix)
			}
			// Advice never accepts a loss for the user: where migrate would
			// lose data, the steps stop before it and Then says so.
			for _, f := range p.Fix {
				if strings.Contains(f, "allow-pruning") {
					t.Errorf("fix step %q accepts losing data", f)
				}
			}
			migrationLoss := slices.ContainsFunc(p.Findings, func(f schemadiff.Finding) bool { return f.Code == CodeMigrationPrunes })
			if migrationLoss && !slices.ContainsFunc(p.Findings, func(f schemadiff.Finding) bool {
				return f.Code == CodeMigrationPrunes && strings.Contains(f.Message, "objects stored at v1 lose .spec.x when rewritten at the storage version v2")
			}) {
				t.Errorf("the %s finding does not name .spec.x: %+v", CodeMigrationPrunes, p.Findings)
			}
			if migrationLoss != (p.StopsBefore == StopMigrate) {
				t.Errorf("migration loss %v, stops before %q", migrationLoss, p.StopsBefore)
			}
			if (p.StopsBefore != "") != (p.Then != "") || (p.StopsBefore != "" && !p.DataLoss) {
				t.Errorf("stops before %q, then %q, data loss %v", p.StopsBefore, p.Then, p.DataLoss)
			}
			if p.DataLoss && len(p.Fix) > 0 && p.Fix[len(p.Fix)-1] == apply {
				t.Errorf("data loss, yet the steps end with the apply: %q", p.Fix)
			}
			switch p.StopsBefore {
			case StopMigrate:
				if !strings.Contains(p.Then, "only migrate --allow-pruning=PATHS with the paths its refusal names, given by you, ACCEPTS LOSING THEM") || !strings.Contains(p.Then, apply) || !strings.Contains(p.Then, "objects stored at v1 lose the fields that the MigrationPrunesFields finding names when rewritten at v2") {
					t.Errorf("then %q: want the fields lost, that only the user's own migrate --allow-pruning accepts it, and the apply after", p.Then)
				}
			case StopApply:
				if !strings.Contains(p.Then, "apply the release ("+apply+") once its schemas keep") || !strings.Contains(p.Then, "only you can accept") {
					t.Errorf("then %q", p.Then)
				}
			}
			if p.DataLoss != tc.dataLoss {
				t.Errorf("data loss %v, want %v: %+v", p.DataLoss, tc.dataLoss, p.Findings)
			}
			if !slices.Equal(p.RemovedServedVersions, tc.removed) {
				t.Errorf("removed served versions %q, want %q", p.RemovedServedVersions, tc.removed)
			}
			if p.LiveDefaultVersion != tc.defaultFrom || p.NewDefaultVersion != "v2" {
				t.Errorf("default version %s -> %s", p.LiveDefaultVersion, p.NewDefaultVersion)
			}
		})
	}
}

func TestCheckNotInstalledAndDryRun(t *testing.T) {
	p := Check(nil, crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).CRD(), "release.yaml", ApplyCommand([]string{"release.yaml"}, false))
	if p.Installed || p.Apply != Accepted || p.Fix != nil {
		t.Errorf("new CRD: %+v", p)
	}
	bad := Check(nil, crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).CRD(), "release.yaml", ApplyCommand([]string{"release.yaml"}, false))
	if bad.Apply != Rejected {
		t.Errorf("two storage versions: %+v", bad)
	}
	// The API server's dry run decides; the static verdict is kept.
	p.SetServerDryRun(DryRunRejected, "spec.versions[0].schema: Invalid value", "spec.versions[0].schema")
	if p.Apply != Rejected || p.Static != Accepted {
		t.Errorf("after a rejecting dry run: %+v", p)
	}
	p.SetServerDryRun(DryRunSkipped, "forbidden", "")
	if p.Apply != Rejected {
		t.Errorf("a skipped dry run changed the verdict: %+v", p)
	}
	// Every rejected verdict is an error finding, so that the counts and
	// the exit code agree with it (case 27 printed "0 errors").
	for name, plan := range map[string]Plan{"two storage versions on create": bad, "rejected by the dry run": p} {
		if !hasError(plan, func(schemadiff.Finding) bool { return true }) {
			t.Errorf("%s: rejected without an error finding: %+v", name, plan.Findings)
		}
	}
	if !hasError(p, func(f schemadiff.Finding) bool {
		return f.Code == CodeApplyRejected && f.Path == "spec.versions[0].schema"
	}) {
		t.Errorf("the dry run's refusal is not an ApplyRejected finding at its field: %+v", p.Findings)
	}
	// A rejection the rules predicted is not counted twice.
	bad.SetServerDryRun(DryRunRejected, "spec.versions: Invalid value", "spec.versions")
	if hasError(bad, func(f schemadiff.Finding) bool { return f.Code == CodeApplyRejected }) {
		t.Errorf("a predicted rejection counted twice: %+v", bad.Findings)
	}
}

func hasError(p Plan, match func(schemadiff.Finding) bool) bool {
	for _, f := range p.Findings {
		if f.Severity == lifecycle.SeverityError && match(f) {
			return true
		}
	}
	return false
}

// TestCABundlePlaceholder: a release whose conversion webhook caBundle
// holds no certificate is a warning on install (created, not served) and
// over an invalid or not yet Established live bundle, an error over the
// valid bundle of an Established CRD (rejected since 1.31), and names the
// field managers of the live bundle; an empty or valid bundle is no
// finding.
func TestCABundlePlaceholder(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	srv.Close()
	valid := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	placeholder := []byte("\n")
	crd := func(bundle []byte, established bool, managers ...string) *apiextensionsv1.CustomResourceDefinition {
		c := crdtest.New("inferences.serving.example.com").Kind("Inference").Version("v1beta1", crdtest.Served, crdtest.Storage, crdtest.Fields("a")).Stored("v1beta1").CRD()
		c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
			ConversionReviewVersions: []string{"v1"}, ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:9443/convert"), CABundle: bundle}}}
		if established {
			c.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
		}
		for _, m := range managers {
			c.ManagedFields = append(c.ManagedFields, metav1.ManagedFieldsEntry{Manager: m, Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
				FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:conversion":{"f:webhook":{"f:clientConfig":{"f:caBundle":{}}}}}}`)})
		}
		return c
	}
	release := ApplyCommand([]string{"release.yaml"}, false)
	for _, tc := range []struct {
		name       string
		live, next *apiextensionsv1.CustomResourceDefinition
		severity   lifecycle.Severity // "" for no finding
		says       []string
	}{
		{"placeholder on install", nil, crd(placeholder, false), lifecycle.SeverityWarning, []string{"creates the CRD but does not serve it", "have a CA injector"}},
		{"placeholder over an injected bundle", crd(valid, true, "cainjector"), crd(placeholder, false), lifecycle.SeverityError, []string{"rejects the update", "field manager cainjector"}},
		{"placeholder over a bundle not yet established", crd(valid, false, "cainjector"), crd(placeholder, false), lifecycle.SeverityWarning, []string{"does not serve the CRD", "field manager cainjector"}},
		{"placeholder over a placeholder", crd(placeholder, false, "installer"), crd(placeholder, false), lifecycle.SeverityWarning, []string{"does not serve the CRD", "have a CA injector"}},
		{"not a PEM block at all", crd(valid, true), crd([]byte("not a certificate"), false), lifecycle.SeverityError, []string{"17 bytes", "have a CA injector"}},
		{"empty: left to the injector", crd(valid, true, "cainjector"), crd(nil, false), "", nil},
		{"a valid literal", crd(valid, true), crd(valid, false), "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Check(tc.live, tc.next, "release.yaml", release)
			var got []schemadiff.Finding
			for _, f := range p.Findings {
				if f.Code == CodeCABundleInvalid {
					got = append(got, f)
				}
			}
			if tc.severity == "" {
				if len(got) > 0 {
					t.Fatalf("findings %+v, want none", got)
				}
				return
			}
			if len(got) != 1 || got[0].Severity != tc.severity {
				t.Fatalf("findings %+v, want one %s", got, tc.severity)
			}
			for _, w := range tc.says {
				if !strings.Contains(got[0].Message, w) {
					t.Errorf("message lacks %q: %s", w, got[0].Message)
				}
			}
			if p.DataLoss {
				t.Errorf("a caBundle finding counted as data loss")
			}
			if want := map[bool]string{true: Rejected, false: Accepted}[tc.severity == lifecycle.SeverityError]; p.Static != want {
				t.Errorf("static verdict %s, want %s", p.Static, want)
			}
		})
	}
}

// TestRenderThen: Then names the apply with the connection flags the fix
// steps repeat, as Fix does, so that the apply it names reaches the same
// cluster.
func TestRenderThen(t *testing.T) {
	release := ApplyCommand([]string{"release.yaml"}, false)
	global := []lifecycle.Flag{{Name: "context", Value: "east"}}
	for _, next := range []struct {
		live, next *apiextensionsv1.CustomResourceDefinition
		stops      string
	}{
		{crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Fields("image", "x")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v1", "v2").CRD(), crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).CRD(), StopMigrate},
		{crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("image", "x")).Stored("v1").CRD(), crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).CRD(), StopApply},
	} {
		p := Check(next.live, next.next, "release.yaml", release)
		p.Render(global)
		if p.StopsBefore != next.stops || !strings.Contains(p.Then, "("+release.Render(global)+")") {
			t.Errorf("stops before %q, then %q; want %q and the apply %q", p.StopsBefore, p.Then, next.stops, release.Render(global))
		}
		for i, c := range p.Run {
			if p.Fix[i] != c.Render(global) {
				t.Errorf("fix %q, want %q", p.Fix[i], c.Render(global))
			}
		}
	}
}

// TestApplyRejectedCannotBeAcknowledged: the API server's own refusal is
// among the findings no --allow lets through (schemadiff names the code
// as a literal: it cannot import this package).
func TestApplyRejectedCannotBeAcknowledged(t *testing.T) {
	if !schemadiff.RejectsUpdate(CodeApplyRejected) {
		t.Errorf("schemadiff.RejectsUpdate(%q) is false", CodeApplyRejected)
	}
}
