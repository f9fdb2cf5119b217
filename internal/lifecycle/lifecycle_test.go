package lifecycle

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// crdBuilder builds test CRDs fluently: newCRD().version("v1", served, storage)…
type crdBuilder struct {
	crd *apiextensionsv1.CustomResourceDefinition
}

func newCRD() *crdBuilder {
	return &crdBuilder{crd: &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
		},
	}}
}

func props(fields ...string) *apiextensionsv1.CustomResourceValidation {
	spec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
	for _, f := range fields {
		spec.Properties[f] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	}
	return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec},
	}}
}

func (b *crdBuilder) version(name string, served, storage bool, fields ...string) *crdBuilder {
	if len(fields) == 0 {
		fields = []string{"size"}
	}
	b.crd.Spec.Versions = append(b.crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
		Name: name, Served: served, Storage: storage, Schema: props(fields...),
	})
	return b
}

func (b *crdBuilder) deprecated(name string) *crdBuilder {
	FindVersion(b.crd, name).Deprecated = true
	return b
}

func (b *crdBuilder) stored(versions ...string) *crdBuilder {
	b.crd.Status.StoredVersions = versions
	return b
}

func (b *crdBuilder) annotate(k, v string) *crdBuilder {
	b.crd.Annotations = map[string]string{k: v}
	return b
}

func (b *crdBuilder) webhook(conv *apiextensionsv1.WebhookConversion) *crdBuilder {
	b.crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: conv}
	return b
}

func (b *crdBuilder) v() *apiextensionsv1.CustomResourceDefinition { return b.crd }

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
		{"S0 one version", newCRD().version("v1", true, true).stored("v1").v(),
			StateS0, "v1", "", "add-version widgets.example.com <new-version> --from v1", ""},
		{"S1 new version added", newCRD().version("v1", true, true).version("v2", true, false).stored("v1").v(),
			StateS1, "v1", "v2", "promote-storage widgets.example.com v2", ""},
		{"S1 picks the highest new version", newCRD().version("v1alpha1", true, true).version("v1beta1", true, false).version("v1", true, false).stored("v1alpha1").v(),
			StateS1, "v1alpha1", "v1", "promote-storage widgets.example.com v1", ""},
		{"S2 storage flipped", newCRD().version("v1", true, false).version("v2", true, true).stored("v1", "v2").v(),
			StateS2, "v1", "v2", "migrate widgets.example.com", CodeMigrationPending},
		{"S3 migrated", newCRD().version("v1", true, false).version("v2", true, true).stored("v2").v(),
			StateS3, "v1", "v2", "deprecate widgets.example.com v1", ""},
		{"S3 names the oldest of several", newCRD().version("v1alpha1", true, false).version("v1beta1", true, false).version("v1", true, true).stored("v1").v(),
			StateS3, "v1alpha1", "v1", "deprecate widgets.example.com v1alpha1", ""},
		{"S4 deprecated", newCRD().version("v1", true, false).deprecated("v1").version("v2", true, true).stored("v2").v(),
			StateS4, "v1", "v2", "unserve widgets.example.com v1", CodeDeprecatedServed},
		{"S5 unserved", newCRD().version("v1", false, false).version("v2", true, true).stored("v2").v(),
			StateS5, "v1", "v2", "retire widgets.example.com v1 --clean-managed-fields", ""},
		{"S6 retired", newCRD().version("v2", true, true).stored("v2").annotate(RetiredVersionsAnnotation, "v1alpha1, v1").v(),
			StateS6, "v1", "v2", "", ""},
		{"no storage version", newCRD().version("v1", true, false).version("v2", true, false).v(),
			StateUnknown, "", "", "", CodeStorageVersionCount},
		{"two storage versions", newCRD().version("v1", true, true).version("v2", true, true).v(),
			StateUnknown, "", "", "", CodeStorageVersionCount},
		{"stored version missing from spec", newCRD().version("v2", true, true).stored("v1", "v2").v(),
			StateS2, "v1", "v2", "add-version widgets.example.com v1 --from v2 --served=false", CodeStoredVersionNotInSpec},
		{"a newer version added unserved is served first", newCRD().version("v1", true, true).version("v2", false, false).stored("v1").v(),
			StateS1, "v1", "v2", "serve widgets.example.com v2", ""},
		{"a non-conforming name beside the storage version is not ordered", newCRD().version("v1", true, true).version("next", true, false).stored("v1").v(),
			StateUnknown, "", "", "", CodeVersionOrderUnknown},
		// B2: kubectl's priority is alphabetical for these names; the order
		// comes from storedVersions, or is not known.
		{"date-stamped names: storedVersions orders them (S2)", newCRD().version("v1api20230101", true, true).version("v1api20210501", true, false).stored("v1api20210501", "v1api20230101").v(),
			StateS2, "v1api20210501", "v1api20230101", "migrate widgets.example.com", CodeMigrationPending + "," + CodeVersionOrderNotKubernetes},
		{"date-stamped names, older storage, storedVersions orders them (S1)", newCRD().version("v1api20210501", true, true).version("v1api20230101", true, false).stored("v1api20230101", "v1api20210501").v(),
			StateS2, "v1api20230101", "v1api20210501", "migrate widgets.example.com", CodeMigrationPending + "," + CodeVersionOrderNotKubernetes},
		{"date-stamped names, nothing orders them", newCRD().version("v1api20210501", true, false).version("v1api20230101", true, true).stored("v1api20230101").v(),
			StateUnknown, "", "", "", CodeVersionOrderUnknown},
		{"the reverse, nothing orders them either", newCRD().version("v1api20210501", true, true).version("v1api20230101", true, false).stored("v1api20210501").v(),
			StateUnknown, "", "", "", CodeVersionOrderUnknown},
		{"alpha and stable: not alphabetical", newCRD().version("alpha", true, false).version("stable", true, true).stored("stable").v(),
			StateUnknown, "", "", "", CodeVersionOrderUnknown},
		{"a Kubernetes name beside a non-conforming one is not ordered", newCRD().version("v1beta20201101", true, false).version("v1api20210501", true, true).stored("v1api20210501").v(),
			StateUnknown, "", "", "", CodeVersionOrderUnknown},
		// B6: a deprecated storage version is never advised to be unserved.
		{"deprecated storage version", newCRD().version("v1", true, false).version("v2", true, true).deprecated("v2").stored("v2").v(),
			StateS3, "v1", "v2", "deprecate widgets.example.com v2 --undo", CodeDeprecatedServed},
		{"deprecated storage version with a newer one to promote", newCRD().version("v1", true, true).deprecated("v1").version("v2", true, false).stored("v1").v(),
			StateS1, "v1", "v2", "promote-storage widgets.example.com v2", CodeDeprecatedServed},
		{"a preview of the next major is not an old version", newCRD().version("v1", true, false).version("v2", true, true).version("v3alpha1", true, false).stored("v2").v(),
			StateS3, "v1", "v2", "deprecate widgets.example.com v1", ""},
		{"a deprecated higher version is not promoted", newCRD().version("v1beta1", true, true).version("v1", true, false).deprecated("v1").stored("v1beta1").v(),
			StateS4, "v1", "v1beta1", "unserve widgets.example.com v1", CodeDeprecatedServed + "," + CodeStorageNotHighestVersion},
		{"garbage in the retired annotation", newCRD().version("v2", true, true).stored("v2").annotate(RetiredVersionsAnnotation, "garbage!!,, ,v2").v(),
			StateS0, "v2", "", "add-version widgets.example.com <new-version> --from v2", ""},
		{"an error blocks the lifecycle", func() *apiextensionsv1.CustomResourceDefinition {
			crd := newCRD().version("v1", true, true).stored("v1").v()
			crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionFalse, Reason: "ListKindConflict"}}
			return crd
		}(), StateS0, "v1", "", "", CodeNamesNotAccepted},
		{"a CRD being deleted", func() *apiextensionsv1.CustomResourceDefinition {
			crd := newCRD().version("v1", true, true).stored("v1").v()
			now := metav1.Now()
			crd.DeletionTimestamp = &now
			return crd
		}(), StateS0, "v1", "", "", CodeTerminating},
		{"storedVersions lacks the storage version (a hand edit of /status)", newCRD().version("v1alpha1", false, false).version("v1beta1", true, true).stored("v1alpha1").v(),
			StateS2, "v1alpha1", "v1beta1", "migrate widgets.example.com", CodeStorageVersionNotStored + "," + CodeMigrationPending},
		{"an old version's schema describes less than the storage version's (case 18)", newCRD().version("v1", true, false, "size").version("v2", true, true, "size", "licenseRef").stored("v1", "v2").v(),
			StateS2, "v1", "v2", "", CodeMigrationPending + "," + CodeMigrationPrunes + "," + CodeNoneConversionPrunes},
		{"migrating would prune", newCRD().version("v1alpha1", true, false, "size", "legacy").version("v1", true, true, "size").stored("v1alpha1", "v1").v(),
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
	a := Analyze(newCRD().version("v1beta1", true, true).stored("v1beta1", "v9").v())
	if a.Next == nil || a.Next.Command != "kubectl crdversion add-version widgets.example.com v9 --from v1beta1 --served=false" {
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
	b := Analyze(newCRD().version("v1beta1", false, true).version("v1", true, false).stored("v1beta1", "v9").v())
	b.ObjectsReadable("v1")
	if !strings.HasPrefix(b.Findings[0].Fix, "kubectl crdversion serve widgets.example.com v1beta1") {
		t.Errorf("fix with the storage version unserved: %q", b.Findings[0].Fix)
	}
	// S2 with the storage version unserved: Next serves it before migrate,
	// which refuses while it is not served.
	s2 := Analyze(newCRD().version("v1", true, false).version("v2", false, true).stored("v1", "v2").v())
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
		{"S1: the flip comes first", newCRD().version("v1alpha1", true, true).version("v1beta1", true, false).stored("v1alpha1").v(), "v1beta1"},
		{"S1 with an older version to trim", newCRD().version("v1alpha1", true, true).version("v1beta1", true, false).stored("v0", "v1alpha1").v(), ""},
		{"S1, new version not served yet", newCRD().version("v1", true, true).version("v2", false, false).stored("v1").v(), "v2"},
		{"S2", newCRD().version("v1", true, false).version("v2", true, true).stored("v1", "v2").v(), ""},
		{"S3", newCRD().version("v1", true, false).version("v2", true, true).stored("v2").v(), ""},
		{"S0", newCRD().version("v1", true, true).stored("v1").v(), ""},
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
	crd := newCRD().
		version("v1alpha1", false, false, "size").
		version("v1", true, true, "size").
		version("v1beta1", true, false, "size", "colour").
		stored("v1", "v0").v()
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
			newCRD().version("v1", true, false, "size", "legacy").version("v2", true, true, "size", "colour").stored("v2").v(),
			CodeNoneConversionPrunes, "reading at v1 drops .spec.colour; writing at v1 drops .spec.legacy"},
		{"None conversion, different validation only",
			func() *apiextensionsv1.CustomResourceDefinition {
				crd := newCRD().version("v1", true, false).version("v2", true, true).stored("v2").v()
				p := crd.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"]
				s := p.Properties["size"]
				s.MaxLength = ptr.To[int64](3)
				p.Properties["size"] = s
				crd.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"] = p
				return crd
			}(),
			CodeNoneConversionSchemas, "no field is pruned"},
		{"unserved version with another schema is not a None-pruning risk",
			newCRD().version("v1", false, false, "legacy").version("v2", true, true).stored("v2").v(), "", ""},
		{"webhook without client config",
			newCRD().version("v1", true, false).version("v2", true, true).stored("v2").webhook(&apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"}}).v(),
			CodeWebhookConfigIncomplete, "clientConfig"},
		{"webhook without review versions",
			newCRD().version("v1", true, true).stored("v1").webhook(&apiextensionsv1.WebhookConversion{ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: []byte("x")}}).v(),
			CodeWebhookConfigIncomplete, "conversionReviewVersions"},
		{"webhook without caBundle",
			newCRD().version("v1", true, true).stored("v1").webhook(&apiextensionsv1.WebhookConversion{ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: &url}, ConversionReviewVersions: []string{"v1"}}).v(),
			CodeWebhookNoCABundle, "trust roots"},
		{"preserveUnknownFields",
			func() *apiextensionsv1.CustomResourceDefinition {
				crd := newCRD().version("v1", true, true).stored("v1").v()
				crd.Spec.PreserveUnknownFields = true
				return crd
			}(),
			CodePreserveUnknownFields, "preserveUnknownFields"},
		{"no version served",
			newCRD().version("v1", false, true).stored("v1").v(),
			CodeNoServedVersion, "no version is served"},
		{"invalid caBundle keeps the CRD from being established",
			func() *apiextensionsv1.CustomResourceDefinition {
				crd := newCRD().version("v1", true, true).stored("v1").v()
				crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{
					Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse, Reason: "InvalidCABundle", Message: "The conversion webhook CABundle is invalid",
				}}
				return crd
			}(),
			CodeNotEstablished, "InvalidCABundle"},
		{"still installing is not a finding",
			func() *apiextensionsv1.CustomResourceDefinition {
				crd := newCRD().version("v1", true, true).stored("v1").v()
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
	crd := newCRD().version("v1", true, false).deprecated("v1").version("v2", true, true).stored("v2").v()
	a := Analyze(crd)
	a.AddFinding(UnreadableObjects(a, "v2", "failed to read … request to convert CR from an invalid group/version: example.com/v0", false))
	if a.Findings[0].Code != CodeObjectsUnreadable || a.Findings[1].Code != CodeDeprecatedServed {
		t.Errorf("order: %s", codes(a.Findings))
	}
	if a.Next == nil || a.Next.Command != "kubectl crdversion add-version widgets.example.com v0 --from v2 --served=false" {
		t.Errorf("next = %+v", a.Next)
	}

	hook := Analyze(crd)
	hook.AddFinding(UnreadableObjects(hook, "v2", "conversion webhook for example.com/v2 failed: connection refused", false))
	if hook.Next == nil || hook.Next.Command != "" || !strings.Contains(hook.Next.Reason, "repair the conversion webhook") {
		t.Errorf("webhook: next = %+v", hook.Next)
	}
	// Case 17: the webhook's Service is named; same schemas everywhere
	// make strategy None a lossless way out.
	svc := newCRD().version("v1alpha1", true, true).version("v1alpha2", true, false).stored("v1alpha1").webhook(&apiextensionsv1.WebhookConversion{
		ClientConfig:             &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{Namespace: "mesh-system", Name: "mesh-bootstrap", Port: ptr.To[int32](9443)}},
		ConversionReviewVersions: []string{"v1"},
	}).v()
	same := Analyze(svc)
	f := UnreadableObjects(same, "v1alpha2", "conversion webhook for example.com/v1alpha1, Kind=Widget failed: service \"mesh-bootstrap\" not found", false)
	if !strings.Contains(f.Fix, "repair the conversion webhook (service mesh-system/mesh-bootstrap:9443)") || !strings.HasSuffix(f.Fix, NoneConversionOn("widgets.example.com").String()) {
		t.Errorf("webhook fix, same schemas: %q", f.Fix)
	}
	svc.Spec.Versions[1].Schema = props("size", "colour")
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
	s1 := Analyze(newCRD().version("v1", true, true, "size", "color").version("v2", true, false, "size").stored("v1").v())
	if s1.Next == nil || s1.Next.Command != "" || len(s1.Next.Run) != 0 ||
		!strings.Contains(s1.Next.Loss, "ACCEPTS LOSING DATA") || !strings.Contains(s1.Next.Loss, ".spec.color at v1") {
		t.Errorf("S1 with pruning: next %+v", s1.Next)
	}
	s2 := Analyze(newCRD().version("v1", true, false, "size", "color").version("v2", true, true, "size").stored("v1", "v2").v())
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
	s2o := AnalyzeWith(newCRD().version("v1", true, false, "size", "color").version("v2", true, true, "size").stored("v1", "v2").v(), Options{VersionOrder: []string{"v1", "v2"}})
	if s2o.Next == nil || s2o.Next.Loss == "" || s2o.Next.Command != "" {
		t.Errorf("S2 with pruning and --version-order: next %+v", s2o.Next)
	}
	for _, plain := range []*crdBuilder{
		newCRD().version("v1", true, true).version("v2", true, false).stored("v1"),
		newCRD().version("v1", true, false).version("v2", true, true).stored("v1", "v2"),
	} {
		a := Analyze(plain.v())
		if a.Next == nil || a.Next.Loss != "" || a.Next.Command == "" || strings.Contains(a.Next.Command, "allow-pruning") {
			t.Errorf("%s without pruning: next %+v", a.State, a.Next)
		}
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
		{"a copy of the storage version", newCRD().version("v1beta1", true, false, "a").version("v1beta2", true, true, "a", "b").version("v1", true, false, "a", "b").v(), "v1", 0, 1},
		{"the copy promoted", newCRD().version("v1beta1", true, false, "a").version("v1beta2", true, false, "a", "b").version("v1", true, true, "a", "b").v(), "v1", 0, 1},
		{"a schema of its own", newCRD().version("v1beta1", true, false, "a").version("v1beta2", true, true, "a", "b").version("v1", true, false, "a", "c").v(), "v1", 3, 0},
		{"the twin not served nor storage", newCRD().version("v1beta1", true, true, "a").version("v1beta2", false, false, "a", "b").version("v1", true, false, "a", "b").v(), "v1", 1, 0},
		{"no other version prunes", newCRD().version("v1beta2", true, true, "a", "b").version("v1", true, false, "a", "b").v(), "v1", 0, 0},
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
	crd := newCRD().version("v1", true, true).version("v2", true, false).version("v3", false, false).version("v4", true, false).version("v1beta1", true, false).deprecated("v1beta1").stored("v1").v()
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
	crd := newCRD().version("v1alpha1", false, false).version("v1beta1", true, false).version("v1", true, true).version("v2", false, false).stored("v1").v()
	a := Analyze(crd)
	var got []string
	for _, f := range a.Findings {
		if f.Code == CodeVersionRetirable {
			got = append(got, f.Version)
			if !strings.Contains(f.Fix, "kubectl crdversion retire widgets.example.com "+f.Version+" --dry-run") || len(f.Run) > 0 {
				t.Errorf("fix %q, run %v", f.Fix, f.Run)
			}
		}
	}
	if strings.Join(got, ",") != "v1alpha1" {
		t.Errorf("retirable %v (old %s), want v1alpha1", got, a.OldVersion)
	}
	// In S5 the version unserved is the state's OLD: its retire is Next.
	s5 := Analyze(newCRD().version("v1beta1", false, false).version("v1", true, true).stored("v1").v())
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
	crd := newCRD().version("v1", false, false).version("v2", true, true).stored("v2").v()
	for _, tc := range []struct {
		name    string
		scanned bool
		n       int
		want    string
	}{
		{"not listed", false, 0, "kubectl crdversion retire widgets.example.com v1 --clean-managed-fields"},
		{"listed, none", true, 0, "kubectl crdversion retire widgets.example.com v1"},
		{"listed, two", true, 2, "kubectl crdversion retire widgets.example.com v1 --clean-managed-fields"},
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
