package e2e

import (
	"context"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// atomicCRD is B10's CRD: v1 (the storage version) and v2 served, both
// with spec.items, a list of objects without x-kubernetes-list-type (an
// atomic list), and spec.cfg, an atomic map; with wide, their elements
// declare extra too.
func atomicCRD(group string, wide bool) *apiextensionsv1.CustomResourceDefinition {
	crd := crontab(group, apiextensionsv1.NamespaceScoped)
	crd.Spec.Versions = append(crd.Spec.Versions, crontabVersion("v2", true, false))
	for i := range crd.Spec.Versions {
		setAtomicFields(&crd.Spec.Versions[i], wide)
	}
	return crd
}

func setAtomicFields(v *apiextensionsv1.CustomResourceDefinitionVersion, wide bool) {
	item := map[string]apiextensionsv1.JSONSchemaProps{"name": {Type: "string"}}
	cfg := map[string]apiextensionsv1.JSONSchemaProps{"a": {Type: "string"}}
	if wide {
		item["extra"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
		cfg["extra"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	}
	atomic := "atomic"
	spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
	spec.Properties["items"] = apiextensionsv1.JSONSchemaProps{Type: "array",
		Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: item}}}
	spec.Properties["cfg"] = apiextensionsv1.JSONSchemaProps{Type: "object", XMapType: &atomic, Properties: cfg}
	v.Schema.OpenAPIV3Schema.Properties["spec"] = spec
}

// narrowedAtomicCRD is B10's before-state: o1 written with
// spec.items[0].extra and spec.cfg.extra while v1 declared them, then
// v1's schema narrowed (a release that drops them), so every read prunes
// them while etcd keeps them; o2 written after the narrowing (its list
// and map hold nothing hidden); the storage version switched to v2 by
// hand. Returns the CRD and a function that puts v1's wide schema back
// and waits until o1's values read back.
func narrowedAtomicCRD(t *testing.T, c clients, group string) (*apiextensionsv1.CustomResourceDefinition, func()) {
	t.Helper()
	ctx := context.Background()
	crd := createCRD(t, c, atomicCRD(group, true))
	create := func(name string, spec map[string]any) {
		u := cronTabObject(name, spec, nil)
		u.SetAPIVersion(crd.Spec.Group + "/v1")
		u.SetKind("CronTab")
		if _, err := resource(c, crd, "v1", "default").Create(ctx, u, metav1.CreateOptions{FieldManager: "e2e"}); err != nil {
			t.Fatal(err)
		}
	}
	create("o1", map[string]any{"image": "nginx:1",
		"items": []any{map[string]any{"name": "a", "extra": "E1"}}, "cfg": map[string]any{"a": "x", "extra": "E2"}})
	setV1 := func(wide bool) {
		updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
			for i := range crd.Spec.Versions {
				if crd.Spec.Versions[i].Name == "v1" {
					setAtomicFields(&crd.Spec.Versions[i], wide)
				}
			}
		})
	}
	o1 := func() (*unstructured.Unstructured, error) {
		return resource(c, crd, "v1", "default").Get(ctx, "o1", metav1.GetOptions{})
	}
	setV1(false)
	waitFor(t, "reads at v1 that prune o1's extra fields", func() (bool, error) {
		got, err := o1()
		if err != nil {
			return false, nil
		}
		_, has, _ := unstructured.NestedString(got.Object, "spec", "cfg", "extra")
		return !has, nil
	})
	create("o2", map[string]any{"image": "nginx:1", "items": []any{map[string]any{"name": "b"}}, "cfg": map[string]any{"a": "y"}})
	crd = setStorage(t, c, crd.Name, "v2")
	restore := func() {
		t.Helper()
		setV1(true)
		waitFor(t, "o1's extra fields read back at v1", func() (bool, error) {
			got, err := o1()
			if err != nil {
				return false, nil
			}
			items, _, _ := unstructured.NestedSlice(got.Object, "spec", "items")
			cfg, _, _ := unstructured.NestedString(got.Object, "spec", "cfg", "extra")
			return len(items) == 1 && items[0].(map[string]any)["extra"] == "E1" && cfg == "E2", nil
		})
	}
	return crd, restore
}

// TestMigrateKeepsFieldsInsideAtomicListsAndMaps (B10): managedFields
// record an atomic list or map as a whole (f:items: {}), so a field inside
// it that a narrowed schema prunes on every read was taken for "not
// there": migrate rewrote o1, reported 0 losing a field, and erased E1
// and E2 for good. The CRD as it was at o1's last write (its history,
// from the API server) shows v1 then declared the fields: migrate refuses,
// naming o1 and the paths, nothing changed; with v1's schema put back, the
// values read back.
func TestMigrateKeepsFieldsInsideAtomicListsAndMaps(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd, restore := narrowedAtomicCRD(t, c, "atomic-hidden.example.com")
	// o2 was written seconds after the narrowing: an API server may still
	// have stored it with the wider schema (it applies a CRD change once
	// its informer sees it), so it may hold the fields too (loss.ApplyLag).
	refuses(t, c, []string{crd.Name}, []string{"loses data that no read shows", "default/o1: .spec.cfg.extra, .spec.items[*].extra",
		"default/o2: .spec.cfg.extra, .spec.items[*].extra", "lists or maps that their managedFields record only as a whole",
		".spec.cfg.extra,.spec.items[*].extra"},
		"migrate", crd.Name)
	restore()
}

// TestMigrateUnknownWhenTheCRDHistoryIsCompacted (B10): once etcd has
// compacted the revision of o1's last write, nothing shows whether v1's
// schema was wider then: o1 (and o2, written before the storage switch
// too) are unknown, and migrate refuses, naming them, the paths and the
// flag that accepts them; nothing changed. The flag it names lets the run
// through, and says what it accepted.
func TestMigrateUnknownWhenTheCRDHistoryIsCompacted(t *testing.T) {
	c := newClients(t)
	crd, _ := narrowedAtomicCRD(t, c, "atomic-compacted.example.com")
	compactEtcd(t)
	flag := "--allow-pruning=.spec.cfg,.spec.items"
	refuses(t, c, []string{crd.Name}, []string{"unknown for objects that could not be measured", "default/o1", "default/o2",
		"etcd no longer keeps the CRD as it was then (compacted)", flag},
		"migrate", crd.Name)
	r := succeeds(t, "migrate", crd.Name, flag)
	mustContain(t, "migrate "+flag, r.stdout+r.stderr, "accepted (--allow-pruning=.spec.cfg,.spec.items)")
}

// TestMigrateWhenManagedFieldsDoNotAccountForTheData (B10): a client
// rewrote o1's managedFields to name .spec.image alone, and cleared o2's;
// then a release
// dropped .spec.legacy from v1's schema. etcd keeps legacy, every read
// hides it, and no managedFields entry names it, so the recorded paths
// (B15) cannot see it. managedFields that leave data the object holds
// unrecorded (.spec.cronSpec) count as recording .spec as a whole: the
// CRD's history shows v1 declared legacy at their last writes, and
// migrate refuses, naming both; nothing changed, and the value reads back.
func TestMigrateWhenManagedFieldsDoNotAccountForTheData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClients(t)
	wide := crontab("rewritten-fields.example.com", apiextensionsv1.NamespaceScoped)
	wide.Spec.Versions = append(wide.Spec.Versions, crontabVersion("v2", true, false))
	for i := range wide.Spec.Versions {
		wide.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"].Properties["legacy"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	}
	crd := createCRD(t, c, wide)
	u := cronTabObject("o1", map[string]any{"image": "nginx:1", "cronSpec": "* * * * *", "legacy": "precious"}, nil)
	u.SetAPIVersion(crd.Spec.Group + "/v1")
	u.SetKind("CronTab")
	res := resource(c, crd, "v1", "default")
	if _, err := res.Create(ctx, u, metav1.CreateOptions{FieldManager: "e2e"}); err != nil {
		t.Fatal(err)
	}
	patch := `{"metadata":{"managedFields":[{"manager":"rewriter","operation":"Update","apiVersion":"` + crd.Spec.Group + `/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:image":{}}}}]}}`
	if _, err := res.Patch(ctx, "o1", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// o2's managedFields cleared altogether ([{}] resets them).
	u.SetName("o2")
	if _, err := res.Create(ctx, u, metav1.CreateOptions{FieldManager: "e2e"}); err != nil {
		t.Fatal(err)
	}
	if _, err := res.Patch(ctx, "o2", types.MergePatchType, []byte(`{"metadata":{"managedFields":[{}]}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	setLegacy := func(declared bool) { declareSpecField(t, c, crd.Name, "legacy", declared) }
	legacy := func() string {
		got, err := res.Get(ctx, "o1", metav1.GetOptions{})
		if err != nil {
			return "unreadable"
		}
		v, _, _ := unstructured.NestedString(got.Object, "spec", "legacy")
		return v
	}
	setLegacy(false)
	waitFor(t, "reads at v1 that prune .spec.legacy", func() (bool, error) { return legacy() == "", nil })
	got, err := res.Get(ctx, "o1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mf := got.GetManagedFields(); len(mf) != 1 || mf[0].Manager != "rewriter" {
		t.Fatalf("managedFields %+v, want the rewriter's entry alone", mf)
	}
	crd = setStorage(t, c, crd.Name, "v2")
	refuses(t, c, []string{crd.Name}, []string{"loses data that no read shows", "default/o1: .spec.legacy", "default/o2: .spec.legacy"}, "migrate", crd.Name)
	setLegacy(true)
	waitFor(t, ".spec.legacy read back", func() (bool, error) { return legacy() == "precious", nil })
}

// declareSpecField declares (or, with declared false, drops) spec.FIELD, a
// string, in the schema of the CRD's first version (v1), as a release
// that adds or removes a field would.
func declareSpecField(t *testing.T, c clients, name, field string, declared bool) {
	t.Helper()
	updateCRD(t, c, name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
		if declared {
			spec.Properties[field] = apiextensionsv1.JSONSchemaProps{Type: "string"}
		} else {
			delete(spec.Properties, field)
		}
		crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	})
}
