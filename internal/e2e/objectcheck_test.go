package e2e

import (
	"context"
	"encoding/pem"
	"strconv"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// The object preflight of promote-storage and migrate asks the API server:
// every object is read at the old and the new version and compared, and
// sent migrate's own no-op update through the new version as a server-side
// dry run (bugs B1, B4 and B7 of 2026-12-01-preflight-holes.md).

// serveVersion adds version, served and not stored, with schema, and waits
// until the API server serves it.
func serveVersion(t *testing.T, c clients, crd *apiextensionsv1.CustomResourceDefinition, version string, schema *apiextensionsv1.JSONSchemaProps) {
	t.Helper()
	updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: version, Served: true, Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: schema}})
	})
	waitFor(t, version+" served", func() (bool, error) {
		_, err := c.dyn.Resource(gvr(crd, version)).List(context.Background(), metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
}

// createObject creates an object of crd at version in namespace default.
func createObject(t *testing.T, c clients, crd *apiextensionsv1.CustomResourceDefinition, version, name string, spec map[string]any) {
	t.Helper()
	ensureNamespace(t, c, "default")
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": crd.Spec.Group + "/" + version, "kind": crd.Spec.Names.Kind,
		"metadata": map[string]any{"name": name}, "spec": spec,
	}}
	if _, err := resource(c, crd, version, "default").Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func specAt(t *testing.T, c clients, crd *apiextensionsv1.CustomResourceDefinition, version, name string) map[string]any {
	t.Helper()
	u, err := resource(c, crd, version, "default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	return spec
}

// TestObjectCheckMeasuresLoss (B1): the old version preserves unknown
// fields and has a map; the new one declares fixed properties. An object
// with undeclared fields loses them at the new version, which the schemas
// alone did not show. promote-storage and migrate read every object at both
// versions and refuse, naming the object and the paths; with
// --allow-pruning they proceed.
func TestObjectCheckMeasuresLoss(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	yes := true
	crd := crontab("loss.example.com", apiextensionsv1.NamespaceScoped)
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema = &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"spec": {Type: "object", XPreserveUnknownFields: &yes, Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"replicas": {Type: "integer"},
			"labels":   {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
		}},
	}}
	crd = createCRD(t, c, crd)
	name := crd.Name
	createObject(t, c, crd, "v1", "w1", map[string]any{"replicas": int64(1), "image": "nginx", "extra": map[string]any{"deep": []any{int64(1), int64(2)}}, "labels": map[string]any{"team": "a", "env": "prod"}})
	createObject(t, c, crd, "v1", "w2", map[string]any{"replicas": int64(2), "labels": map[string]any{"team": "b"}})
	serveVersion(t, c, crd, "v2", &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"replicas": {Type: "integer"},
			"labels":   {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"team": {Type: "string"}}},
		}},
	}})

	const lost = "default/w1: .spec.extra, .spec.image, .spec.labels.env"
	r := refuses(t, c, []string{name}, []string{"1 object(s) have fields at v1 that v2 drops", lost, "--allow-pruning"}, "promote-storage", name, "v2")
	if strings.Contains(r.stdout+r.stderr, "default/w2") {
		t.Errorf("promote-storage names w2, which loses nothing:\n%s", r.stdout)
	}
	ok := succeeds(t, "promote-storage", name, "v2", "--allow-pruning")
	if !strings.Contains(ok.stdout, "WILL BE LOST") || !strings.Contains(ok.stdout, lost) || !strings.Contains(ok.stdout, "objects/s") {
		t.Errorf("promote-storage --allow-pruning does not name what is lost, or the rate:\n%s", ok.stdout)
	}
	if got := storedVersionsOf(t, c, name); strings.Join(got, ",") != "v1,v2" {
		t.Fatalf("storedVersions %v after the promotion", got)
	}

	refuses(t, c, []string{name}, []string{"refusing to migrate", "nothing was changed", "1 object(s) have fields at v1 that v2 drops: " + lost, "--allow-pruning"}, "migrate", name)
	if spec := specAt(t, c, crd, "v1", "w1"); spec["image"] != "nginx" {
		t.Fatalf("the refused migrate lost w1's fields: %v", spec)
	}
	succeeds(t, "migrate", name, "--allow-pruning")
	if spec := specAt(t, c, crd, "v1", "w1"); spec["image"] != nil || spec["extra"] != nil {
		t.Errorf("after migrate --allow-pruning, w1 at v1 still has the fields v2 drops: %v", spec)
	}
	if got := storedVersionsOf(t, c, name); strings.Join(got, ",") != "v2" {
		t.Errorf("storedVersions %v after migrate --allow-pruning", got)
	}
}

// TestPromoteStorageChecksMigratesUpdate (B4): promote-storage sends the
// no-op update that migrate sends, through the new version, as a server
// dry run: a CEL transition rule (oldSelf) of the new version and a
// ValidatingAdmissionPolicy that checks only UPDATE refuse it, naming the
// object; a create would have passed both.
func TestPromoteStorageChecksMigratesUpdate(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	t.Run("transition rule", func(t *testing.T) {
		spec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"sealed": {Type: "boolean"}, "data": {Type: "string"}}}
		crd := crontab("seals.example.com", apiextensionsv1.NamespaceScoped)
		crd.Spec.Versions[0].Schema.OpenAPIV3Schema = &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec}}
		crd = createCRD(t, c, crd)
		createObject(t, c, crd, "v1", "s1", map[string]any{"sealed": true, "data": "x"})
		createObject(t, c, crd, "v1", "s2", map[string]any{"sealed": false, "data": "y"})
		sealed := spec
		sealed.XValidations = apiextensionsv1.ValidationRules{{Rule: "!has(oldSelf.sealed) || !oldSelf.sealed", Message: "a sealed object cannot be updated"}}
		serveVersion(t, c, crd, "v2", &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": sealed}})

		r := refuses(t, c, []string{crd.Name}, []string{"1 of 2 checked object(s) are refused at v2", "default/s1: ", "a sealed object cannot be updated"}, "promote-storage", crd.Name, "v2")
		if strings.Contains(r.stdout, "default/s2:") {
			t.Errorf("s2 is not sealed and was refused:\n%s", r.stdout)
		}
	})
	t.Run("update-only admission", func(t *testing.T) {
		crd := crontab("vap-update.example.com", apiextensionsv1.NamespaceScoped)
		crd = createCRD(t, c, crd)
		createCronTabs(t, c, crd, "v1", 3)
		freeze(t, c, crd, "default", "crontab-1")
		v2 := crontabVersion("v2", true, false)
		serveVersion(t, c, crd, "v2", v2.Schema.OpenAPIV3Schema)
		denyFrozen(t, c, crd)
		r := refuses(t, c, []string{crd.Name}, []string{"1 of 3 checked object(s) are refused at v2", "default/crontab-1: ", "frozen objects cannot change"}, "promote-storage", crd.Name, "v2")
		if strings.Contains(r.stdout, "default/crontab-0:") {
			t.Errorf("an object that is not frozen was refused:\n%s", r.stdout)
		}
	})
}

// TestPromoteStoragePermissionPreflight (B7): a user who may list the
// objects (and create them, the verb the old preflight's dry-run create
// needed) but not patch them, which the dry run of migrate's update needs,
// is refused up front naming the missing permission, not told that every
// object is invalid.
func TestPromoteStoragePermissionPreflight(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := crontab("perm-promote.example.com", apiextensionsv1.NamespaceScoped)
	crd = createCRD(t, c, crd)
	createCronTabs(t, c, crd, "v1", 3)
	v2 := crontabVersion("v2", true, false)
	serveVersion(t, c, crd, "v2", v2.Schema.OpenAPIV3Schema)
	bindUser(t, c, "promote-no-patch",
		rbacv1.PolicyRule{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list", "update"}},
		rbacv1.PolicyRule{APIGroups: []string{crd.Spec.Group}, Resources: []string{"*"}, Verbs: []string{"list", "get", "create"}})
	// The role of the bug report: list only.
	bindUser(t, c, "promote-list-only",
		rbacv1.PolicyRule{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list", "update"}},
		rbacv1.PolicyRule{APIGroups: []string{crd.Spec.Group}, Resources: []string{"*"}, Verbs: []string{"list"}})
	// The c1 run of the bug report: update on CRDs missing as well; every
	// missing permission is named at once.
	bindUser(t, c, "promote-read-only",
		rbacv1.PolicyRule{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list"}},
		rbacv1.PolicyRule{APIGroups: []string{crd.Spec.Group}, Resources: []string{"*"}, Verbs: []string{"list"}})
	// The error line counts them; the lines above it name each, in order.
	for _, tc := range []struct {
		user    string
		count   int
		missing string
	}{
		{"promote-read-only", 4, "  - get crontabs.perm-promote.example.com (to read objects at the new version)\n  - patch crontabs.perm-promote.example.com (to dry-run migrate's no-op update of each object through the new version)\n  - create crontabs.perm-promote.example.com (to dry-run each object as a new object at the new version)\n  - update customresourcedefinitions.apiextensions.k8s.io (to write the CRD)\n"},
		{"promote-list-only", 3, "  - get crontabs.perm-promote.example.com (to read objects at the new version)\n  - patch crontabs.perm-promote.example.com"},
		{"promote-no-patch", 1, "  - patch crontabs.perm-promote.example.com"},
	} {
		user, missing := tc.user, tc.missing
		r := refuses(t, c, []string{crd.Name}, []string{
			"refusing to promote-storage " + crd.Name + ", nothing was changed: missing " + strconv.Itoa(tc.count) + " permission(s)",
			"Missing permission(s) to promote-storage " + crd.Name + ":\n" + missing},
			"promote-storage", crd.Name, "v2", "--as", user)
		if out := r.stdout + r.stderr; strings.Contains(out, "invalid") || strings.Contains(out, "refused at v2") {
			t.Errorf("%s: a missing permission is reported as invalid objects:\n%s", user, out)
		}
	}
	if s := getCRD(t, c, crd.Name); s.Spec.Versions[0].Storage != true {
		t.Errorf("the refused promotion changed the storage version")
	}
}

// TestPromoteStorageWebhookRoundTrip: with a conversion webhook whose
// conversion back to the old version drops a field, the objects read at the
// new version keep it (nothing is lost on the way there), but they do not
// come back whole — neither through the API server's dry run nor through
// the webhook called by the client: promote-storage refuses, naming the
// objects and the field, unless --allow-pruning.
func TestPromoteStorageWebhookRoundTrip(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	hook := newConversionWebhook(t)
	crd := createCRD(t, c, crontab("roundtrip.example.com", apiextensionsv1.NamespaceScoped))
	createCronTabs(t, c, crd, "v1", 2)
	url := hook.URL + "/convert"
	updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions = append(crd.Spec.Versions, crontabVersion("v2", true, false))
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})},
			ConversionReviewVersions: []string{"v1"}}}
	})
	waitFor(t, "v2 served through the webhook", func() (bool, error) {
		_, err := resource(c, crd, "v2", "default").Get(context.Background(), "crontab-0", metav1.GetOptions{})
		return err == nil, nil
	})
	hook.drop.Store("v1:cronSpec")
	r := refuses(t, c, []string{crd.Name}, []string{"2 object(s) do not come back whole from v2 through v1", "default/crontab-0: .spec.cronSpec", "default/crontab-1: .spec.cronSpec", "--allow-pruning"},
		"promote-storage", crd.Name, "v2")
	// The way to v2 loses nothing, the way back does: the round trip
	// through the webhook (v1 -> v2 by the API server, v2 -> v1 by the
	// client) is what a client reading at v1 gets once the objects are
	// stored at v2, and it lacks cronSpec too.
	if !strings.Contains(r.stdout, "2 object(s) have fields at v1 that v2 drops") || !strings.Contains(r.stdout, "compared whole with its read at v1") {
		t.Errorf("the round trip's verdict is not the one given:\n%s", r.stdout)
	}
	ok := succeeds(t, "promote-storage", crd.Name, "v2", "--allow-pruning")
	if !strings.Contains(ok.stdout, "WILL BE LOST for clients reading them at v1") {
		t.Errorf("promote-storage --allow-pruning does not warn:\n%s", ok.stdout)
	}
}

// TestPromoteStorageNamespaceBeingDeleted: an object in a namespace that is
// being deleted can still be updated — migrate rewrites it — but nothing can
// be created there, so the dry-run create of promote-storage's object check
// is forbidden. That was reported as a missing permission ("grant the
// permission and re-run") and refused the promotion that status advised.
// The object is now reported as not checked as a new object (a warning),
// and the promotion goes ahead.
func TestPromoteStorageNamespaceBeingDeleted(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	ctx := context.Background()
	crd := createCRD(t, c, crontab("doomed-ns.example.com", apiextensionsv1.NamespaceScoped))
	// No namespace controller runs beside the test API server: a deleted
	// namespace stays Terminating. A name of its own each run.
	ns := "doomed-" + strconv.FormatInt(time.Now().UnixNano()%1_000_000, 36)
	ensureNamespace(t, c, ns)
	createCronTabs(t, c, crd, "v1", 2, ns)
	createCronTabs(t, c, crd, "v1", 1)
	if err := c.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "namespace "+ns+" to be terminating", func() (bool, error) {
		_, err := resource(c, crd, "v1", ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": crd.Spec.Group + "/v1", "kind": "CronTab", "metadata": map[string]any{"generateName": "probe-"}}},
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "being terminated"), nil
	})
	v2 := crontabVersion("v2", true, false)
	serveVersion(t, c, crd, "v2", v2.Schema.OpenAPIV3Schema)

	r := succeeds(t, "promote-storage", crd.Name, "v2")
	for _, want := range []string{"WARN  2 object(s) were not checked as new objects at v2: their namespace is being deleted", "PASS  3 of 3 object(s) checked"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("promote-storage output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "permission denied") {
		t.Errorf("a namespace being deleted is reported as a missing permission:\n%s", r.stdout)
	}
	if s := getCRD(t, c, crd.Name); lifecycle.StorageVersion(s) != "v2" {
		t.Errorf("storage version %s after promote-storage", lifecycle.StorageVersion(s))
	}
}
