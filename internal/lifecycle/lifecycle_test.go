package lifecycle

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
)

func codes(fs []Finding) string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Code)
	}
	return strings.Join(out, ",")
}

func TestAnalyzeStates(t *testing.T) {
	cases := []struct {
		name     string
		crd      *apiextensionsv1.CustomResourceDefinition
		state    State
		old, new string
		next     string
		findings string
	}{
		{"S0 one version", crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).Stored("v1").CRD(),
			StateS0, "v1", "", "add-version widgets.example.com <new-version> --from v1", ""},
		{"S1 new version added", crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).Version("v2", crdtest.Served).Stored("v1").CRD(),
			StateS1, "v1", "v2", "promote-storage widgets.example.com v2", ""},
		{"S1 picks the highest new version", crdtest.New("widgets.example.com").Version("v1alpha1", crdtest.Served, crdtest.Storage).Version("v1beta1", crdtest.Served).Version("v1", crdtest.Served).Stored("v1alpha1").CRD(),
			StateS1, "v1alpha1", "v1", "promote-storage widgets.example.com v1", ""},
		{"S2 storage flipped", crdtest.New("widgets.example.com").Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2").CRD(),
			StateS2, "v1", "v2", "migrate widgets.example.com", CodeMigrationPending},
		{"S3 migrated", crdtest.New("widgets.example.com").Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").CRD(),
			StateS3, "v1", "v2", "deprecate widgets.example.com v1", ""},
		{"S3 names the oldest of several", crdtest.New("widgets.example.com").Version("v1alpha1", crdtest.Served).Version("v1beta1", crdtest.Served).Version("v1", crdtest.Served, crdtest.Storage).Stored("v1").CRD(),
			StateS3, "v1alpha1", "v1", "deprecate widgets.example.com v1alpha1", ""},
		{"S4 deprecated", crdtest.New("widgets.example.com").Version("v1", crdtest.Served).Deprecate("v1").Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").CRD(),
			StateS4, "v1", "v2", "unserve widgets.example.com v1", CodeDeprecatedServed},
		{"S5 unserved", crdtest.New("widgets.example.com").Version("v1").Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").CRD(),
			StateS5, "v1", "v2", "retire widgets.example.com v1 --migrate --clean-managed-fields", ""},
		{"S6 retired", crdtest.New("widgets.example.com").Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").Annotate(RetiredVersionsAnnotation, "v1alpha1, v1").CRD(),
			StateS6, "v1", "v2", "", ""},
		{"no storage version", crdtest.New("widgets.example.com").Version("v1", crdtest.Served).Version("v2", crdtest.Served).CRD(),
			StateUnknown, "", "", "", CodeStorageVersionCount},
		{"two storage versions", crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).Version("v2", crdtest.Served, crdtest.Storage).CRD(),
			StateUnknown, "", "", "", CodeStorageVersionCount},
		{"stored version missing from spec", crdtest.New("widgets.example.com").Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2").CRD(),
			StateS2, "v1", "v2", "add-version widgets.example.com v1 --preserve-unknown-fields --served=false", CodeStoredVersionNotInSpec},
		{"a newer version added unserved is served first", crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).Version("v2").Stored("v1").CRD(),
			StateS1, "v1", "v2", "serve widgets.example.com v2", ""},
		{"a non-conforming name beside the storage version is not ordered", crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).Version("next", crdtest.Served).Stored("v1").CRD(),
			StateUnknown, "", "", "", CodeVersionOrderUnknown},
		// B2: kubectl's priority is alphabetical for these names; the order
		// comes from storedVersions, or is not known.
		{"date-stamped names: storedVersions orders them (S2)", crdtest.New("widgets.example.com").Version("v1api20230101", crdtest.Served, crdtest.Storage).Version("v1api20210501", crdtest.Served).Stored("v1api20210501", "v1api20230101").CRD(),
			StateS2, "v1api20210501", "v1api20230101", "migrate widgets.example.com", CodeMigrationPending + "," + CodeVersionOrderNotKubernetes},
		{"date-stamped names, older storage, storedVersions orders them (S1)", crdtest.New("widgets.example.com").Version("v1api20210501", crdtest.Served, crdtest.Storage).Version("v1api20230101", crdtest.Served).Stored("v1api20230101", "v1api20210501").CRD(),
			StateS2, "v1api20230101", "v1api20210501", "migrate widgets.example.com", CodeMigrationPending + "," + CodeVersionOrderNotKubernetes},
		{"date-stamped names, nothing orders them", crdtest.New("widgets.example.com").Version("v1api20210501", crdtest.Served).Version("v1api20230101", crdtest.Served, crdtest.Storage).Stored("v1api20230101").CRD(),
			StateUnknown, "", "", "", CodeVersionOrderUnknown},
		{"the reverse, nothing orders them either", crdtest.New("widgets.example.com").Version("v1api20210501", crdtest.Served, crdtest.Storage).Version("v1api20230101", crdtest.Served).Stored("v1api20210501").CRD(),
			StateUnknown, "", "", "", CodeVersionOrderUnknown},
		{"alpha and stable: not alphabetical", crdtest.New("widgets.example.com").Version("alpha", crdtest.Served).Version("stable", crdtest.Served, crdtest.Storage).Stored("stable").CRD(),
			StateUnknown, "", "", "", CodeVersionOrderUnknown},
		{"a Kubernetes name beside a non-conforming one is not ordered", crdtest.New("widgets.example.com").Version("v1beta20201101", crdtest.Served).Version("v1api20210501", crdtest.Served, crdtest.Storage).Stored("v1api20210501").CRD(),
			StateUnknown, "", "", "", CodeVersionOrderUnknown},
		// B6: a deprecated storage version is never advised to be unserved.
		{"deprecated storage version", crdtest.New("widgets.example.com").Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Deprecate("v2").Stored("v2").CRD(),
			StateS3, "v1", "v2", "deprecate widgets.example.com v2 --undo", CodeDeprecatedServed},
		{"deprecated storage version with a newer one to promote", crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).Deprecate("v1").Version("v2", crdtest.Served).Stored("v1").CRD(),
			StateS1, "v1", "v2", "promote-storage widgets.example.com v2", CodeDeprecatedServed},
		{"a preview of the next major is not an old version", crdtest.New("widgets.example.com").Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Version("v3alpha1", crdtest.Served).Stored("v2").CRD(),
			StateS3, "v1", "v2", "deprecate widgets.example.com v1", ""},
		{"a deprecated higher version is not promoted", crdtest.New("widgets.example.com").Version("v1beta1", crdtest.Served, crdtest.Storage).Version("v1", crdtest.Served).Deprecate("v1").Stored("v1beta1").CRD(),
			StateS4, "v1", "v1beta1", "unserve widgets.example.com v1", CodeDeprecatedServed + "," + CodeStorageNotHighestVersion},
		{"garbage in the retired annotation", crdtest.New("widgets.example.com").Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").Annotate(RetiredVersionsAnnotation, "garbage!!,, ,v2").CRD(),
			StateS0, "v2", "", "add-version widgets.example.com <new-version> --from v2", ""},
		{"an error blocks the lifecycle", func() *apiextensionsv1.CustomResourceDefinition {
			crd := crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).Stored("v1").CRD()
			crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionFalse, Reason: "ListKindConflict"}}
			return crd
		}(), StateS0, "v1", "", "", CodeNamesNotAccepted},
		{"a CRD being deleted", func() *apiextensionsv1.CustomResourceDefinition {
			crd := crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).Stored("v1").CRD()
			now := metav1.Now()
			crd.DeletionTimestamp = &now
			return crd
		}(), StateS0, "v1", "", "", CodeTerminating},
		{"storedVersions lacks the storage version (a hand edit of /status)", crdtest.New("widgets.example.com").Version("v1alpha1").Version("v1beta1", crdtest.Served, crdtest.Storage).Stored("v1alpha1").CRD(),
			StateS2, "v1alpha1", "v1beta1", "migrate widgets.example.com", CodeStorageVersionNotStored + "," + CodeMigrationPending},
		{"an old version's schema describes less than the storage version's (case 18)", crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Fields("size")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("size", "licenseRef")).Stored("v1", "v2").CRD(),
			StateS2, "v1", "v2", "", CodeMigrationPending + "," + CodeMigrationPrunes + "," + CodeNoneConversionPrunes},
		{"migrating would prune", crdtest.New("widgets.example.com").Version("v1alpha1", crdtest.Served, crdtest.Fields("size", "legacy")).Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("size")).Stored("v1alpha1", "v1").CRD(),
			StateS2, "v1alpha1", "v1", "", CodeMigrationPending + "," + CodeMigrationPrunes + "," + CodeNoneConversionPrunes},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.crd.DeepCopy()
			a := Analyze(tc.crd)
			if a.State != tc.state || a.OldVersion != tc.old || a.NewVersion != tc.new {
				t.Errorf("state %s [%s -> %s], want %s [%s -> %s]", a.State, a.OldVersion, a.NewVersion, tc.state, tc.old, tc.new)
			}
			next := ""
			if a.Next != nil {
				next = strings.TrimPrefix(a.Next.Command, "kubectl crdversion ")
			}
			if next != tc.next {
				t.Errorf("next = %q, want %q", next, tc.next)
			}
			if got := codes(a.Findings); got != tc.findings {
				t.Errorf("findings = %s, want %s", got, tc.findings)
			}
			if a.StateDescription == "" {
				t.Error("no state description")
			}
			if !equalCRD(before, tc.crd) {
				t.Error("Analyze modified its input")
			}
		})
	}
}

// TestObjectsReadable: a storedVersions entry missing from spec.versions is
// repaired by restoring the version, unless every object could be read —
// then nothing is stored at it, and migrate trims it.
func TestObjectsReadable(t *testing.T) {
	a := Analyze(crdtest.New("widgets.example.com").Version("v1beta1", crdtest.Served, crdtest.Storage).Stored("v1beta1", "v9").CRD())
	if a.Next == nil || a.Next.Command != "kubectl crdversion add-version widgets.example.com v9 --preserve-unknown-fields --served=false" {
		t.Fatalf("before: next %+v", a.Next)
	}
	a.ObjectsReadable("v1beta1")
	f := a.Findings[0]
	if f.Code != CodeStoredVersionNotInSpec || f.Fix != "kubectl crdversion migrate widgets.example.com" || !strings.Contains(f.Message, "none is stored at v9") {
		t.Errorf("finding after ObjectsReadable: %+v", f)
	}
	if a.Next == nil || a.Next.Command != "kubectl crdversion migrate widgets.example.com" || strings.Contains(a.Next.Reason, "unreadable") {
		t.Errorf("next after ObjectsReadable: %+v", a.Next)
	}
	// An unserved storage version is served first (migrate writes through it).
	b := Analyze(crdtest.New("widgets.example.com").Version("v1beta1", crdtest.Storage).Version("v1", crdtest.Served).Stored("v1beta1", "v9").CRD())
	b.ObjectsReadable("v1")
	if !strings.HasPrefix(b.Findings[0].Fix, "kubectl crdversion serve widgets.example.com v1beta1") {
		t.Errorf("fix with the storage version unserved: %q", b.Findings[0].Fix)
	}
	// S2 with the storage version unserved: Next serves it before migrate,
	// which refuses while it is not served.
	s2 := Analyze(crdtest.New("widgets.example.com").Version("v1", crdtest.Served).Version("v2", crdtest.Storage).Stored("v1", "v2").CRD())
	if want := "kubectl crdversion serve widgets.example.com v2 && kubectl crdversion migrate widgets.example.com"; s2.Next == nil || s2.Next.Command != want {
		t.Errorf("next in S2 with the storage version unserved: %+v, want %q", s2.Next, want)
	}
}

func TestPromotionPending(t *testing.T) {
	cases := []struct {
		name string
		crd  *apiextensionsv1.CustomResourceDefinition
		want string
	}{
		{"S1: the flip comes first", crdtest.New("widgets.example.com").Version("v1alpha1", crdtest.Served, crdtest.Storage).Version("v1beta1", crdtest.Served).Stored("v1alpha1").CRD(), "v1beta1"},
		{"S1 with an older version to trim", crdtest.New("widgets.example.com").Version("v1alpha1", crdtest.Served, crdtest.Storage).Version("v1beta1", crdtest.Served).Stored("v0", "v1alpha1").CRD(), ""},
		{"S1, new version not served yet", crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).Version("v2").Stored("v1").CRD(), "v2"},
		{"S2", crdtest.New("widgets.example.com").Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2").CRD(), ""},
		{"S3", crdtest.New("widgets.example.com").Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").CRD(), ""},
		{"S0", crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).Stored("v1").CRD(), ""},
	}
	for _, tc := range cases {
		if got := PromotionPending(tc.crd, Options{}); got != tc.want {
			t.Errorf("%s: PromotionPending = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func equalCRD(a, b *apiextensionsv1.CustomResourceDefinition) bool {
	return a.String() == b.String()
}

func TestVersionRows(t *testing.T) {
	crd := crdtest.New("widgets.example.com").
		Version("v1alpha1", crdtest.Fields("size")).
		Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("size")).
		Version("v1beta1", crdtest.Served, crdtest.Fields("size", "colour")).
		Stored("v1", "v0").CRD()
	a := Analyze(crd)
	var got []string
	for _, r := range a.Versions {
		got = append(got, strings.Join([]string{r.Name, itoa(r.Priority), string(r.Schema), yes(r.Default), yes(r.InStoredVersions), yes(r.InSpec)}, " "))
	}
	want := []string{
		"v1 1 storage y y y",
		"v1beta1 2 different n n y",
		"v1alpha1 3 identical n n y",
		"v0 0 unknown n y n",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if a.DefaultVersion != "v1" {
		t.Errorf("default version %s, want v1", a.DefaultVersion)
	}
}

func itoa(i int) string { return string(rune('0' + i)) }

func yes(b bool) string {
	if b {
		return "y"
	}
	return "n"
}

func TestFindings(t *testing.T) {
	url := "https://conv.example.com/convert"
	cases := []struct {
		name    string
		crd     *apiextensionsv1.CustomResourceDefinition
		want    string
		message string // substring of the first finding's message
	}{
		{"None conversion prunes fields both ways",
			crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Fields("size", "legacy")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("size", "colour")).Stored("v2").CRD(),
			CodeNoneConversionPrunes, "reading at v1 drops .spec.colour; writing at v1 drops .spec.legacy"},
		{"None conversion, different validation only",
			func() *apiextensionsv1.CustomResourceDefinition {
				crd := crdtest.New("widgets.example.com").Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").CRD()
				p := crd.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"]
				s := p.Properties["size"]
				s.MaxLength = ptr.To[int64](3)
				p.Properties["size"] = s
				crd.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"] = p
				return crd
			}(),
			CodeNoneConversionSchemas, "no field is pruned"},
		{"unserved version with another schema is not a None-pruning risk",
			crdtest.New("widgets.example.com").Version("v1", crdtest.Fields("legacy")).Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").CRD(), "", ""},
		{"webhook without client config",
			crdtest.New("widgets.example.com").Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").Webhook(&apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"}}).CRD(),
			CodeWebhookConfigIncomplete, "clientConfig"},
		{"webhook without review versions",
			crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).Stored("v1").Webhook(&apiextensionsv1.WebhookConversion{ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: []byte("x")}}).CRD(),
			CodeWebhookConfigIncomplete, "conversionReviewVersions"},
		{"webhook without caBundle",
			crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).Stored("v1").Webhook(&apiextensionsv1.WebhookConversion{ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: &url}, ConversionReviewVersions: []string{"v1"}}).CRD(),
			CodeWebhookNoCABundle, "trust roots"},
		{"preserveUnknownFields",
			func() *apiextensionsv1.CustomResourceDefinition {
				crd := crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).Stored("v1").CRD()
				crd.Spec.PreserveUnknownFields = true
				return crd
			}(),
			CodePreserveUnknownFields, "preserveUnknownFields"},
		{"no version served",
			crdtest.New("widgets.example.com").Version("v1", crdtest.Storage).Stored("v1").CRD(),
			CodeNoServedVersion, "no version is served"},
		{"invalid caBundle keeps the CRD from being established",
			func() *apiextensionsv1.CustomResourceDefinition {
				crd := crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).Stored("v1").CRD()
				crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{
					Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse, Reason: "InvalidCABundle", Message: "The conversion webhook CABundle is invalid",
				}}
				return crd
			}(),
			CodeNotEstablished, "InvalidCABundle"},
		{"still installing is not a finding",
			func() *apiextensionsv1.CustomResourceDefinition {
				crd := crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).Stored("v1").CRD()
				crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse, Reason: "Installing"}}
				return crd
			}(), "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := Analyze(tc.crd)
			if got := codes(a.Findings); got != tc.want {
				t.Fatalf("findings = %q, want %q (%+v)", got, tc.want, a.Findings)
			}
			if tc.message != "" && !strings.Contains(a.Findings[0].Message, tc.message) {
				t.Errorf("message %q does not contain %q", a.Findings[0].Message, tc.message)
			}
		})
	}
}

func TestPriority(t *testing.T) {
	got := ByPriority([]string{"v1alpha1", "foo", "v2", "v1beta2", "v1", "bar", "v10", "v1beta10"})
	want := "v10 v2 v1 v1beta10 v1beta2 v1alpha1 bar foo"
	if strings.Join(got, " ") != want {
		t.Errorf("ByPriority = %v, want %s", got, want)
	}
	for name, want := range map[string]bool{"v1": true, "v2beta3": true, "v1alpha1": true, "v1gamma1": false, "1": false, "": false, "version1": false} {
		if IsKubeVersion(name) != want {
			t.Errorf("IsKubeVersion(%q) = %v, want %v", name, !want, want)
		}
	}
}

func TestFindingsMostSevereFirstAndUnreadableObjects(t *testing.T) {
	crd := crdtest.New("widgets.example.com").Version("v1", crdtest.Served).Deprecate("v1").Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").CRD()
	a := Analyze(crd)
	a.AddFinding(UnreadableObjects(a, "v2", "failed to read … request to convert CR from an invalid group/version: example.com/v0", false))
	if a.Findings[0].Code != CodeObjectsUnreadable || a.Findings[1].Code != CodeDeprecatedServed {
		t.Errorf("order: %s", codes(a.Findings))
	}
	if a.Next == nil || a.Next.Command != "kubectl crdversion add-version widgets.example.com v0 --preserve-unknown-fields --served=false" {
		t.Errorf("next = %+v", a.Next)
	}

	hook := Analyze(crd)
	hook.AddFinding(UnreadableObjects(hook, "v2", "conversion webhook for example.com/v2 failed: connection refused", false))
	if hook.Next == nil || hook.Next.Command != "" || !strings.Contains(hook.Next.Reason, "repair the conversion webhook") {
		t.Errorf("webhook: next = %+v", hook.Next)
	}
	// Case 17: the webhook's Service is named; same schemas everywhere
	// make strategy None a lossless way out.
	svc := crdtest.New("widgets.example.com").Version("v1alpha1", crdtest.Served, crdtest.Storage).Version("v1alpha2", crdtest.Served).Stored("v1alpha1").Webhook(&apiextensionsv1.WebhookConversion{
		ClientConfig:             &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{Namespace: "mesh-system", Name: "mesh-bootstrap", Port: ptr.To[int32](9443)}},
		ConversionReviewVersions: []string{"v1"},
	}).CRD()
	same := Analyze(svc)
	f := UnreadableObjects(same, "v1alpha2", "conversion webhook for example.com/v1alpha1, Kind=Widget failed: service \"mesh-bootstrap\" not found", false)
	if !strings.Contains(f.Fix, "repair the conversion webhook (service mesh-system/mesh-bootstrap:9443)") || !strings.HasSuffix(f.Fix, NoneConversionOn("widgets.example.com", "service mesh-system/mesh-bootstrap:9443").String()) {
		t.Errorf("webhook fix, same schemas: %q", f.Fix)
	}
	svc.Spec.Versions[1].Schema = crdtest.SpecSchema("size", "colour")
	if f := UnreadableObjects(Analyze(svc), "v1alpha2", "conversion webhook for x failed", false); strings.Contains(f.Fix, "None") {
		t.Errorf("webhook fix, schemas differ: %q", f.Fix)
	}

	denied := Analyze(crd)
	denied.AddFinding(UnreadableObjects(denied, "v2", "forbidden", true))
	if f := denied.Findings[len(denied.Findings)-1]; f.Code != CodeObjectsNotCounted || f.Severity != SeverityInfo || denied.Next.Command != "kubectl crdversion unserve widgets.example.com v1" {
		t.Errorf("forbidden: %+v, next %+v", f, denied.Next)
	}
}

func TestReadyToTrim(t *testing.T) {
	a := Analysis{CRD: CRDRef{Name: "crontabs.stable.example.com"}, StorageVersion: "v2", StoredVersions: []string{"v1", "v2"}}
	f := ReadyToTrim(a, 0)
	if f == nil || f.Code != CodeStoredVersionsReadyToTrim || f.Version != "v1" || f.Fix != "kubectl crdversion migrate crontabs.stable.example.com" {
		t.Errorf("stale entry, no objects: %+v", f)
	}
	if f := ReadyToTrim(a, 3); f != nil {
		t.Errorf("with objects (MigrationPending's case): %+v", f)
	}
	a.StoredVersions = []string{"v2"}
	if f := ReadyToTrim(a, 0); f != nil {
		t.Errorf("trimmed: %+v", f)
	}
}

// TestNextAcceptsPruningOnlyOutLoud (issue 17): after add-version or
// promote-storage with --allow-pruning, Next was promote-storage or
// migrate, which refuse in that state (conversion None prunes fields).
// Advice never carries --allow-pruning, which would lose data for whoever
// pastes it: with a predicted loss, Next prints no command, names the
// fields in Loss and says only the user's own --allow-pruning accepts
// losing them; without a loss it stays the plain command.
func TestNextAcceptsPruningOnlyOutLoud(t *testing.T) {
	s1 := Analyze(crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("size", "color")).Version("v2", crdtest.Served, crdtest.Fields("size")).Stored("v1").CRD())
	if s1.Next == nil || s1.Next.Command != "" || len(s1.Next.Run) != 0 ||
		!strings.Contains(s1.Next.Loss, "ACCEPTS LOSING DATA") || !strings.Contains(s1.Next.Loss, ".spec.color at v1") {
		t.Errorf("S1 with pruning: next %+v", s1.Next)
	}
	s2 := Analyze(crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Fields("size", "color")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("size")).Stored("v1", "v2").CRD())
	if s2.Next == nil || s2.Next.Command != "" || len(s2.Next.Run) != 0 ||
		!strings.Contains(s2.Next.Loss, "ACCEPTS LOSING DATA") || !strings.Contains(s2.Next.Loss, "lose .spec.color") {
		t.Errorf("S2 with pruning: next %+v", s2.Next)
	}
	for _, f := range s2.Findings {
		for _, c := range f.Run {
			if strings.Contains(c.String(), "allow-pruning") {
				t.Errorf("S2 with pruning: finding %s runs %s", f.Code, c.String())
			}
		}
		if f.Code == CodeMigrationPending && (f.Fix != "" || !strings.Contains(f.Message, "refuses once an object holds the fields")) {
			t.Errorf("S2 with pruning: %+v", f)
		}
	}
	// The given order keeps the loss.
	s2o := AnalyzeWith(crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Fields("size", "color")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("size")).Stored("v1", "v2").CRD(), Options{VersionOrder: []string{"v1", "v2"}})
	if s2o.Next == nil || s2o.Next.Loss == "" || s2o.Next.Command != "" {
		t.Errorf("S2 with pruning and --version-order: next %+v", s2o.Next)
	}
	for _, plain := range []*crdtest.Builder{
		crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).Version("v2", crdtest.Served).Stored("v1"),
		crdtest.New("widgets.example.com").Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2"),
	} {
		a := Analyze(plain.CRD())
		if a.Next == nil || a.Next.Loss != "" || a.Next.Command == "" || strings.Contains(a.Next.Command, "allow-pruning") {
			t.Errorf("%s without pruning: next %+v", a.State, a.Next)
		}
	}
}

// TestRestoredVersionLeavesTheLossToTheMeasurement (B21): a restored
// version keeps fields of any name (x-kubernetes-preserve-unknown-fields at
// its root), so the schemas cannot say what its objects lose at the storage
// version: the finding says so, and Next is migrate, which measures each
// object and refuses before a loss, where a loss the schemas name holds
// the command back.
func TestRestoredVersionLeavesTheLossToTheMeasurement(t *testing.T) {
	crd := crdtest.New("widgets.example.com").Version("v1").Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("size")).Stored("v1", "v2").CRD()
	keep := true
	crd.Spec.Versions[0].Schema = &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &keep}}
	losses := MigrationLosses(crd)
	if len(losses) != 1 || !losses[0].AnyField || losses[0].Version != "v1" {
		t.Fatalf("losses %+v, want one AnyField loss of v1", losses)
	}
	a := Analyze(crd)
	if a.Next == nil || a.Next.Command != "kubectl crdversion migrate widgets.example.com" || a.Next.Loss != "" {
		t.Errorf("next %+v, want migrate", a.Next)
	}
	var found bool
	for _, f := range a.Findings {
		if f.Code == CodeMigrationPrunes {
			found = strings.Contains(f.Message, "may hold fields of any name") && strings.Contains(f.Message, "migrate measures every object") && f.Fix == "kubectl crdversion migrate widgets.example.com"
		}
	}
	if !found {
		t.Errorf("no MigrationPrunesFields finding that leaves the loss to the measurement: %+v", a.Findings)
	}
}

// TestNoneConversionLosses: a version that copies the schema of another
// brings no pruning of its own: what it prunes against a third version, its
// twin prunes already (Flux source-controller v1beta1 → v1beta2 → v1, the
// release plan of check-upgrade). A version with a schema of its own brings
// its pruning; a twin that is neither served nor storage is no twin.
func TestNoneConversionLosses(t *testing.T) {
	for _, tc := range []struct {
		name             string
		crd              *apiextensionsv1.CustomResourceDefinition
		subject          string
		brought, already int
	}{
		{"a copy of the storage version", crdtest.New("widgets.example.com").Version("v1beta1", crdtest.Served, crdtest.Fields("a")).Version("v1beta2", crdtest.Served, crdtest.Storage, crdtest.Fields("a", "b")).Version("v1", crdtest.Served, crdtest.Fields("a", "b")).CRD(), "v1", 0, 1},
		{"the copy promoted", crdtest.New("widgets.example.com").Version("v1beta1", crdtest.Served, crdtest.Fields("a")).Version("v1beta2", crdtest.Served, crdtest.Fields("a", "b")).Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("a", "b")).CRD(), "v1", 0, 1},
		{"a schema of its own", crdtest.New("widgets.example.com").Version("v1beta1", crdtest.Served, crdtest.Fields("a")).Version("v1beta2", crdtest.Served, crdtest.Storage, crdtest.Fields("a", "b")).Version("v1", crdtest.Served, crdtest.Fields("a", "c")).CRD(), "v1", 3, 0},
		{"the twin not served nor storage", crdtest.New("widgets.example.com").Version("v1beta1", crdtest.Served, crdtest.Storage, crdtest.Fields("a")).Version("v1beta2", crdtest.Fields("a", "b")).Version("v1", crdtest.Served, crdtest.Fields("a", "b")).CRD(), "v1", 1, 0},
		{"no other version prunes", crdtest.New("widgets.example.com").Version("v1beta2", crdtest.Served, crdtest.Storage, crdtest.Fields("a", "b")).Version("v1", crdtest.Served, crdtest.Fields("a", "b")).CRD(), "v1", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			brought, already := NoneConversionLosses(tc.crd, tc.subject)
			if len(brought) != tc.brought || len(already) != tc.already {
				t.Errorf("brought %q, already %q; want %d and %d", brought, already, tc.brought, tc.already)
			}
			if got := NoneConversionLoss(tc.crd, tc.subject); len(got) != len(brought) {
				t.Errorf("NoneConversionLoss %q, want the brought ones %q", got, brought)
			}
		})
	}
}

// TestPartFindings (B3 of the preflight-holes report): a served version
// that lacks the status or scale subresource of the storage version is a
// warning of status and doctor, not only of diff; an unserved or a
// deprecated one (on its way out), or one that only lacks printer
// columns, is not.
func TestPartFindings(t *testing.T) {
	status := &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
		Scale: &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"}}
	crd := crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).Version("v2", crdtest.Served).Version("v3").Version("v4", crdtest.Served).Version("v1beta1", crdtest.Served).Deprecate("v1beta1").Stored("v1").CRD()
	crd.Spec.Versions[0].Subresources = status
	crd.Spec.Versions[3].Subresources = status.DeepCopy()
	crd.Spec.Versions[0].AdditionalPrinterColumns = []apiextensionsv1.CustomResourceColumnDefinition{{Name: "R", Type: "integer", JSONPath: ".spec.replicas"}}
	var got []string
	for _, f := range Analyze(crd).Findings {
		if strings.HasSuffix(f.Code, "SubresourceRemoved") || f.Code == CodePrinterColumnsChanged {
			got = append(got, f.Version+":"+f.Code+":"+string(f.Severity))
		}
	}
	want := "v2:StatusSubresourceRemoved:warning v2:ScaleSubresourceRemoved:warning"
	if strings.Join(got, " ") != want {
		t.Errorf("findings %q, want %q", got, want)
	}
}

// TestRetirableVersions (friction 8 of the preflight-holes report): an old
// version neither served nor stored, while another old version is the
// state's subject, got no finding; now it is said to be free to leave,
// with a dry run to see what that takes. Not the state's own OLD (its step
// is Next), nor a version newer than the storage version.
func TestRetirableVersions(t *testing.T) {
	crd := crdtest.New("widgets.example.com").Version("v1alpha1").Version("v1beta1", crdtest.Served).Version("v1", crdtest.Served, crdtest.Storage).Version("v2").Stored("v1").CRD()
	a := Analyze(crd)
	var got []string
	for _, f := range a.Findings {
		if f.Code == CodeVersionRetirable {
			got = append(got, f.Version)
			if !strings.Contains(f.Fix, "kubectl crdversion retire widgets.example.com "+f.Version+" --migrate --dry-run") || len(f.Run) > 0 {
				t.Errorf("fix %q, run %v", f.Fix, f.Run)
			}
		}
	}
	if strings.Join(got, ",") != "v1alpha1" {
		t.Errorf("retirable %v (old %s), want v1alpha1", got, a.OldVersion)
	}
	// In S5 the version unserved is the state's OLD: its retire is Next.
	s5 := Analyze(crdtest.New("widgets.example.com").Version("v1beta1").Version("v1", crdtest.Served, crdtest.Storage).Stored("v1").CRD())
	for _, f := range s5.Findings {
		if f.Code == CodeVersionRetirable {
			t.Errorf("S5 (old %s): finding %+v beside Next %+v", s5.OldVersion, f, s5.Next)
		}
	}
}

// TestS5NextByManagedFields: retire refuses while a managedFields entry
// names OLD. Unlisted (an edit's own Next), the command rewrites them
// first; listed, it does so when there are any and not otherwise.
func TestS5NextByManagedFields(t *testing.T) {
	crd := crdtest.New("widgets.example.com").Version("v1").Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").CRD()
	for _, tc := range []struct {
		name    string
		scanned bool
		n       int
		want    string
	}{
		{"not listed", false, 0, "kubectl crdversion retire widgets.example.com v1 --migrate --clean-managed-fields"},
		{"listed, none", true, 0, "kubectl crdversion retire widgets.example.com v1 --migrate"},
		{"listed, two", true, 2, "kubectl crdversion retire widgets.example.com v1 --migrate --clean-managed-fields"},
	} {
		a := Analyze(crd)
		if tc.scanned {
			a.ManagedFieldsNaming("v1", tc.n)
		}
		if a.Next == nil || a.Next.Command != tc.want {
			t.Errorf("%s: next %+v, want %q", tc.name, a.Next, tc.want)
		}
	}
}

// TestBreakGlass (issue 34, B20): the break-glass patch that status prints
// for a dead webhook marks the CRD. Under None with the mark, status reports
// an error and Next advises no command (S2's Next was migrate, which would
// store every object unconverted); once the webhook is configured again the
// mark is an info finding with the command that removes it.
func TestBreakGlass(t *testing.T) {
	s2 := crdtest.New("widgets.example.com").Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2")
	if a := Analyze(s2.CRD()); a.Next == nil || a.Next.Run[0].Verb != "migrate" {
		t.Fatalf("S2 without the mark: next %+v, want migrate", a.Next)
	}
	marked := s2.Annotate(BreakGlassAnnotation, "service mesh-system/mesh-bootstrap:9443").CRD()
	a := Analyze(marked)
	f, ok := findingOf(a, CodeConversionBreakGlass)
	if !ok || f.Severity != SeverityError || !strings.Contains(f.Message, "service mesh-system/mesh-bootstrap:9443") || !strings.Contains(f.Fix, "kubectl annotate crd widgets.example.com "+BreakGlassAnnotation+"-") {
		t.Errorf("finding %+v", f)
	}
	if a.Next == nil || len(a.Next.Run) > 0 || strings.Contains(a.Next.Reason, "crdversion migrate") {
		t.Errorf("next under the break-glass: %+v", a.Next)
	}
	if webhook, on := BreakGlass(marked); !on || webhook != "service mesh-system/mesh-bootstrap:9443" {
		t.Errorf("BreakGlass = %q, %v", webhook, on)
	}
	back := crdtest.New("widgets.example.com").Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2").
		WebhookURL("https://hook.example.com/convert", nil).Annotate(BreakGlassAnnotation, "x").CRD()
	if _, on := BreakGlass(back); on {
		t.Error("BreakGlass is on with the webhook configured")
	}
	if f, ok := findingOf(Analyze(back), CodeConversionBreakGlass); !ok || f.Severity != SeverityInfo {
		t.Errorf("the mark left with the webhook back: %+v", f)
	}
	// The printed patch is one shell word per flag value, and sets the mark.
	cmd := NoneConversionOn("widgets.example.com", `service a/b:1 "x"`).String()
	if !strings.Contains(cmd, BreakGlassAnnotation) || !strings.Contains(cmd, `"strategy":"None"`) {
		t.Errorf("patch %s", cmd)
	}
}

func findingOf(a Analysis, code string) (Finding, bool) {
	for _, f := range a.Findings {
		if f.Code == code {
			return f, true
		}
	}
	return Finding{}, false
}
