package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crdversion/kubectl-crdversion/internal/schemadiff"
)

// TestValidationFindingsMatchTheAPIServer holds what diff and check-upgrade
// say about a tightened schema against what the API server does: an object
// valid under the old schema and not under the new one is stored, the new
// schema applied, and then written twice — once changing another field,
// once changing its own value. What the finding claims decides what each
// write must meet: "ratchets unchanged values" — the first accepted, the
// second refused; "checks list types on update only when the stored object
// passes them" — both accepted; neither (newly required) — the first
// refused. A trial found "stored values outside it fail validation on their
// next write", at error severity, on a maximum that the stored objects keep
// through any write that leaves the value alone.
func TestValidationFindingsMatchTheAPIServer(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	integer := apiextensionsv1.JSONSchemaProps{Type: "integer"}
	stringList := apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str}}
	with := func(p apiextensionsv1.JSONSchemaProps, edit func(*apiextensionsv1.JSONSchemaProps)) apiextensionsv1.JSONSchemaProps {
		edit(&p)
		return p
	}
	f64 := func(v float64) *float64 { return &v }
	i64 := func(v int64) *int64 { return &v }
	cases := []struct {
		name          string
		old, new      apiextensionsv1.JSONSchemaProps
		value, change any
		required      bool
	}{
		{"maximum", integer, with(integer, func(p *apiextensionsv1.JSONSchemaProps) { p.Maximum = f64(10) }), int64(20), int64(21), false},
		{"minimum", integer, with(integer, func(p *apiextensionsv1.JSONSchemaProps) { p.Minimum = f64(10) }), int64(1), int64(2), false},
		{"multipleof", integer, with(integer, func(p *apiextensionsv1.JSONSchemaProps) { p.MultipleOf = f64(2) }), int64(3), int64(5), false},
		{"enum", str, with(str, func(p *apiextensionsv1.JSONSchemaProps) {
			p.Enum = []apiextensionsv1.JSON{{Raw: []byte(`"a"`)}, {Raw: []byte(`"b"`)}}
		}), "c", "d", false},
		{"pattern", str, with(str, func(p *apiextensionsv1.JSONSchemaProps) { p.Pattern = "^a" }), "b", "bb", false},
		{"maxlength", str, with(str, func(p *apiextensionsv1.JSONSchemaProps) { p.MaxLength = i64(1) }), "xx", "yy", false},
		{"maxitems", stringList, with(stringList, func(p *apiextensionsv1.JSONSchemaProps) { p.MaxItems = i64(1) }), []any{"a", "b"}, []any{"a", "c"}, false},
		{"listset", stringList, with(stringList, func(p *apiextensionsv1.JSONSchemaProps) { p.XListType = ptrTo("set") }), []any{"a", "a"}, []any{"b", "b"}, false},
		{"required", str, str, nil, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			schemaOf := func(f apiextensionsv1.JSONSchemaProps, required bool) *apiextensionsv1.JSONSchemaProps {
				spec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"f": f, "other": str}}
				if required {
					spec.Required = []string{"f"}
				}
				return &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec}}
			}
			oldSchema, newSchema := schemaOf(tc.old, false), schemaOf(tc.new, tc.required)
			var claim string
			for _, f := range schemadiff.Schemas(oldSchema, newSchema) {
				if f.Path == ".spec.f" && (strings.Contains(f.Message, "validation") || strings.Contains(f.Message, "rejected")) {
					claim = f.Message
				}
			}
			if claim == "" {
				t.Fatalf("diff says nothing about .spec.f: %+v", schemadiff.Schemas(oldSchema, newSchema))
			}
			ratchets := strings.Contains(claim, "ratchets unchanged values")
			unchecked := strings.Contains(claim, "checks list types on update only when the stored object passes them")
			if !ratchets && !unchecked && !tc.required {
				t.Fatalf("the finding claims neither ratcheting nor an unchecked update: %q", claim)
			}

			crd := crontab(tc.name+".ratchet.example.com", apiextensionsv1.NamespaceScoped)
			crd.Spec.Versions[0].Schema.OpenAPIV3Schema = oldSchema
			crd = createCRD(t, c, crd)
			res := resource(c, crd, "v1", "default")
			spec := map[string]any{"other": "x"}
			if tc.value != nil {
				spec["f"] = tc.value
			}
			obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": crd.Spec.Group + "/v1", "kind": "CronTab",
				"metadata": map[string]any{"name": "o1", "namespace": "default"}, "spec": spec}}
			if _, err := res.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
				crd.Spec.Versions[0].Schema.OpenAPIV3Schema = newSchema
			})
			// The new schema is enforced once the object itself is refused
			// as new.
			waitFor(t, "the new schema enforced", func() (bool, error) {
				probe := obj.DeepCopy()
				probe.SetName("probe")
				_, err := res.Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				return err != nil, nil
			})
			patch := func(field string, v any) error {
				body, _ := json.Marshal(map[string]any{"spec": map[string]any{field: v}})
				_, err := res.Patch(ctx, "o1", types.MergePatchType, body, metav1.PatchOptions{})
				return err
			}
			err := patch("other", "y")
			if accepted := err == nil; accepted != (ratchets || unchecked) {
				t.Errorf("a write that leaves .spec.f unchanged: API server error %v; diff says %q", err, claim)
			}
			if !tc.required {
				if err := patch("f", tc.change); (err == nil) != unchecked {
					t.Errorf("a write that changes .spec.f to %v: API server error %v; diff says %q", tc.change, err, claim)
				}
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestValidationRuleFindingsMatchTheAPIServer holds the classes of an
// x-kubernetes-validations change (issue 32: crdify only calls them
// unhandled) against the API server. A value valid under the old rules is
// stored, the new schema applied (known in force once a marker bound it
// adds on another field refuses a create), and then:
//   - a rule added or its expression changed: the finding's claim decides
//     a write that leaves the value alone ("ratchets unchanged values":
//     accepted; "not lenient with unchanged values", a transition rule:
//     refused), and a write that changes it to another breaking value is
//     refused;
//   - only the message changed: such writes are judged as before, and a
//     create that breaks the rule is refused with the new message;
//   - a rule removed: a create that broke it is accepted.
func TestValidationRuleFindingsMatchTheAPIServer(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	rule := func(expr, msg string) apiextensionsv1.ValidationRule {
		return apiextensionsv1.ValidationRule{Rule: expr, Message: msg}
	}
	under5 := rule("self.size() < 5", "old words")
	cases := []struct {
		name     string
		old, new apiextensionsv1.ValidationRules
		code     string
	}{
		{"added", nil, apiextensionsv1.ValidationRules{rule("self.size() < 3", "")}, schemadiff.CodeValidationRulesAdded},
		{"transition-added", nil, apiextensionsv1.ValidationRules{rule("self.size() > oldSelf.size()", "")}, schemadiff.CodeValidationRulesAdded},
		{"changed", apiextensionsv1.ValidationRules{under5}, apiextensionsv1.ValidationRules{rule("self.size() < 3", "old words")}, schemadiff.CodeValidationRuleChanged},
		{"to-transition", apiextensionsv1.ValidationRules{under5}, apiextensionsv1.ValidationRules{rule("self.size() > oldSelf.size()", "old words")}, schemadiff.CodeValidationRuleChanged},
		{"message", apiextensionsv1.ValidationRules{under5}, apiextensionsv1.ValidationRules{rule("self.size() < 5", "new words")}, schemadiff.CodeValidationMessageChanged},
		{"removed", apiextensionsv1.ValidationRules{under5}, nil, schemadiff.CodeValidationRulesRemoved},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			schemaOf := func(rules apiextensionsv1.ValidationRules, marker bool) *apiextensionsv1.JSONSchemaProps {
				other := apiextensionsv1.JSONSchemaProps{Type: "string"}
				if marker {
					other.MaxLength = ptrTo(int64(3))
				}
				f := apiextensionsv1.JSONSchemaProps{Type: "string", MaxLength: ptrTo(int64(20)), XValidations: rules}
				spec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"f": f, "other": other}}
				return &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec}}
			}
			oldSchema, newSchema := schemaOf(tc.old, false), schemaOf(tc.new, true)
			var claim string
			for _, f := range schemadiff.Schemas(oldSchema, newSchema) {
				if f.Path == ".spec.f" {
					if f.Code != tc.code {
						t.Fatalf("diff says %s (%q) about .spec.f, want %s", f.Code, f.Message, tc.code)
					}
					claim = f.Message
				}
			}
			if claim == "" {
				t.Fatalf("diff says nothing about .spec.f: %+v", schemadiff.Schemas(oldSchema, newSchema))
			}

			crd := crontab("rule-"+tc.name+".ratchet.example.com", apiextensionsv1.NamespaceScoped)
			crd.Spec.Versions[0].Schema.OpenAPIV3Schema = oldSchema
			crd = createCRD(t, c, crd)
			res := resource(c, crd, "v1", "default")
			object := func(name, f, other string) *unstructured.Unstructured {
				return &unstructured.Unstructured{Object: map[string]any{"apiVersion": crd.Spec.Group + "/v1", "kind": "CronTab",
					"metadata": map[string]any{"name": name, "namespace": "default"}, "spec": map[string]any{"f": f, "other": other}}}
			}
			if _, err := res.Create(ctx, object("o1", "abcd", "x"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
				crd.Spec.Versions[0].Schema.OpenAPIV3Schema = newSchema
			})
			dryCreate := func(f, other string) error {
				_, err := res.Create(ctx, object("probe", f, other), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				return err
			}
			waitFor(t, "the new schema in force (its marker refuses a create)", func() (bool, error) {
				return dryCreate("a", "xxxx") != nil, nil
			})
			patch := func(field string, v any) error {
				body, _ := json.Marshal(map[string]any{"spec": map[string]any{field: v}})
				_, err := res.Patch(ctx, "o1", types.MergePatchType, body, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
				return err
			}
			switch tc.code {
			case schemadiff.CodeValidationRulesAdded, schemadiff.CodeValidationRuleChanged:
				ratchets := strings.Contains(claim, "ratchets unchanged values")
				strict := strings.Contains(claim, "not lenient with unchanged values")
				if ratchets == strict {
					t.Fatalf("the finding claims ratcheting %v and strictness %v: %q", ratchets, strict, claim)
				}
				if err := patch("other", "y"); (err == nil) != ratchets {
					t.Errorf("a write that leaves .spec.f unchanged: API server error %v; diff says %q", err, claim)
				}
				if err := patch("f", "wxyz"); err == nil {
					t.Errorf("a write that changes .spec.f to another breaking value was accepted; diff says %q", claim)
				}
			case schemadiff.CodeValidationMessageChanged:
				if err := patch("other", "y"); err != nil {
					t.Errorf("a write that leaves .spec.f unchanged: %v; diff says %q", err, claim)
				}
				if err := dryCreate("abcdefg", "x"); err == nil || !strings.Contains(err.Error(), "new words") {
					t.Errorf("a create that breaks the rule: %v, want the new message; diff says %q", err, claim)
				}
			case schemadiff.CodeValidationRulesRemoved:
				if err := dryCreate("abcdefg", "x"); err != nil {
					t.Errorf("a create that broke the removed rule: %v; diff says %q", err, claim)
				}
			}
		})
	}
}
