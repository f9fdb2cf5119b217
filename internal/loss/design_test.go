package loss

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/migrate/result"
	"github.com/crdversion/kubectl-crdversion/internal/references"
)

// TestMeasureReadsOnlyWhereNothingActsOnTheWrite: each pass reads (two
// lists) unless something a read does not show can act on the update —
// Webhook conversion, a write through another version than the storage
// version, a transition rule of the storage version's schema, a webhook or
// policy on UPDATE of the resource, or rules that could not be listed —
// and the pass says which design ran and why.
func TestMeasureReadsOnlyWhereNothingActsOnTheWrite(t *testing.T) {
	plain := func() *apiextensionsv1.CustomResourceDefinition {
		return crdtest.New("widgets.example.com").Version("v1", crdtest.Served).
			Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2").CRD()
	}
	webhook := plain()
	webhook.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
	transition := plain()
	transition.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"] = apiextensionsv1.JSONSchemaProps{Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "string",
			XValidations: apiextensionsv1.ValidationRules{{Rule: "self == oldSelf", Message: "immutable"}}}}}
	defaulted := func(versions ...int) *apiextensionsv1.CustomResourceDefinition {
		crd := plain()
		for _, i := range versions {
			crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"] = apiextensionsv1.JSONSchemaProps{Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`"M"`)}}}}
		}
		return crd
	}
	nullable := func(v1, v2 bool) *apiextensionsv1.CustomResourceDefinition {
		crd := plain()
		for i, n := range []bool{v1, v2} {
			crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"] = apiextensionsv1.JSONSchemaProps{Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{"opt": {Type: "string", Nullable: n, Default: &apiextensionsv1.JSON{Raw: []byte(`"a"`)}}}}
		}
		return crd
	}
	rule := func(groups, resources, ops []string) references.AdmissionRule {
		return references.AdmissionRule{Kind: "MutatingWebhookConfiguration", Name: "m", Webhook: "w.example.com", MatchPolicy: "Equivalent",
			APIGroups: groups, APIVersions: []string{"*"}, Resources: resources, Operations: ops}
	}
	tests := []struct {
		name     string
		crd      *apiextensionsv1.CustomResourceDefinition
		o        Options
		rules    []references.AdmissionRule
		rulesErr error
		because  string // "" for reads
	}{
		{"nothing acts: reads", plain(), Options{}, nil, nil, ""},
		{"rules of other resources and operations: reads", plain(), Options{}, []references.AdmissionRule{
			rule([]string{"example.com"}, []string{"gadgets"}, []string{"UPDATE"}),
			rule([]string{"example.com"}, []string{"widgets"}, []string{"CREATE", "DELETE"}),
			rule([]string{"other.io"}, []string{"*"}, []string{"*"}),
			rule([]string{"example.com"}, []string{"widgets/status"}, []string{"UPDATE"}),
		}, nil, ""},
		{"a webhook on UPDATE of the resource", plain(), Options{}, []references.AdmissionRule{
			rule([]string{"example.com"}, []string{"widgets"}, []string{"UPDATE"})}, nil, "admission acts on UPDATE of widgets.example.com: MutatingWebhookConfiguration m/w.example.com"},
		{"a wildcard rule on every operation", plain(), Options{}, []references.AdmissionRule{
			rule([]string{"*"}, []string{"*"}, []string{"*"})}, nil, "admission acts on UPDATE"},
		{"rules that could not be listed", plain(), Options{}, nil, errors.New("forbidden"), "could not be listed (forbidden)"},
		{"a transition rule at the storage version", transition, Options{}, nil, nil, "transition rules (self == oldSelf)"},
		{"Webhook conversion", webhook, Options{}, nil, nil, "Webhook conversion"},
		{"a default of the storage version the stored version lacks", defaulted(1), Options{}, nil, nil, "v2's schema defaults .spec.size and v1's does not alike"},
		{"the same default at both versions: reads", defaulted(0, 1), Options{}, nil, nil, ""},
		{"nullable at the stored version, not at the storage version", nullable(true, false), Options{}, nil, nil, "v1's schema makes .spec.opt nullable and v2's does not"},
		{"nullable at both: reads", nullable(true, true), Options{}, nil, nil, ""},
		{"nullable at the storage version only: reads", nullable(false, true), Options{}, nil, nil, ""},
		{"writes through another version", plain(), Options{WritesThrough: "v1"}, nil, nil, "the run writes through v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeChecker{rules: tt.rules, rulesErr: tt.rulesErr,
				answers: map[string]*cluster.ObjectsCheck{"v1": {Listed: 2}}}
			m, err := Measure(context.Background(), f, tt.crd, tt.o)
			if err != nil {
				t.Fatal(err)
			}
			reads := tt.because == ""
			if len(f.reads) == 0 || f.reads[0] != reads {
				t.Fatalf("checks sent with Reads %v, want %v", f.reads, reads)
			}
			p := m.Passes[0]
			want := result.DesignDryRun
			if reads {
				want = result.DesignReads
			}
			if p.Design != want || !strings.Contains(p.DryRunBecause, tt.because) || reads != (p.DryRunBecause == "") {
				t.Errorf("pass design %q because %q, want %q because %q", p.Design, p.DryRunBecause, want, tt.because)
			}
		})
	}
}

// TestCrossCheckFailsOnADisagreement: with Options.CrossCheck a pass by
// reads is measured again by dry runs, and any verdict that differs —
// here a field the dry run drops and the read keeps, as a mutating
// webhook the chooser missed would — fails as a *Disagreement naming the
// object; agreeing passes measure as without it.
func TestCrossCheckFailsOnADisagreement(t *testing.T) {
	crd := crdtest.New("widgets.example.com").Version("v1", crdtest.Served).
		Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2").CRD()
	reads := &cluster.ObjectsCheck{Listed: 2}
	f := &fakeChecker{answers: map[string]*cluster.ObjectsCheck{"v1": reads},
		dryRun: map[string]*cluster.ObjectsCheck{"v1": {Listed: 2, Lost: []cluster.ObjectLoss{{Object: "default/a", Paths: []string{".spec.color"}}}}}}
	_, err := Measure(context.Background(), f, crd, Options{CrossCheck: true})
	var d *Disagreement
	if !errors.As(err, &d) || !strings.Contains(d.Detail(), "default/a: reads [], dry run [dropped .spec.color]") {
		t.Fatalf("error %v, want a disagreement naming default/a", err)
	}
	if !slices.Equal(f.reads, []bool{true, false}) {
		t.Errorf("checks sent with Reads %v, want a read then a dry run", f.reads)
	}

	f = &fakeChecker{answers: map[string]*cluster.ObjectsCheck{"v1": reads}, dryRun: map[string]*cluster.ObjectsCheck{"v1": {Listed: 2}}}
	m, err := Measure(context.Background(), f, crd, Options{CrossCheck: true})
	if err != nil || len(m.Passes) != 1 || m.Passes[0].Design != result.DesignReads {
		t.Fatalf("agreeing designs: %v, %+v; want one pass by reads", err, m)
	}
}

// TestChecksValidity: each object is also sent as new at the storage
// version (a dry-run create, which needs create on the resource) when a
// version objects may be stored at has another schema or a webhook
// converts, and only then.
func TestChecksValidity(t *testing.T) {
	same := crdtest.New("widgets.example.com").Version("v1", crdtest.Served).
		Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2").CRD()
	differ := same.DeepCopy()
	differ.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"] = apiextensionsv1.JSONSchemaProps{Type: "object"}
	webhook := same.DeepCopy()
	webhook.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
	onlyStorage := differ.DeepCopy()
	onlyStorage.Status.StoredVersions = []string{"v2"}
	for _, tc := range []struct {
		name  string
		crd   *apiextensionsv1.CustomResourceDefinition
		extra []string
		want  bool
	}{
		{"the same schemas", same, nil, false},
		{"another schema at a stored version", differ, nil, true},
		{"a webhook converts", webhook, nil, true},
		{"only the storage version is stored", onlyStorage, nil, false},
		{"a version measured as if stored", onlyStorage, []string{"v1"}, true},
	} {
		if got := ChecksValidity(tc.crd, tc.extra); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
