package e2e

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// migrate measures what its writes lose whatever the schemas say: the
// objects are read and sent migrate's own no-op update through the storage
// version as a server-side dry run, and compared. A prediction from the
// schemas ("the same schema under None loses nothing") missed what the
// write path itself does: mutating admission on UPDATE, and a conversion
// webhook's conversion of objects stored at a version that is not served.

// stripOnUpdate installs a MutatingAdmissionPolicy that removes
// .spec.<field> from every object of crd written through version, and
// waits until it is enforced on a dry-run update of probe (an object of
// namespace default that has the field). It is removed when the test ends.
func stripOnUpdate(t *testing.T, c clients, crd *apiextensionsv1.CustomResourceDefinition, version, field, probe string) {
	t.Helper()
	mutateOnUpdate(t, c, crd, version, field, probe, `[JSONPatch{op: "remove", path: "/spec/`+field+`"}]`,
		func(_ any, kept bool) bool { return !kept })
}

// mutateOnUpdate is stripOnUpdate with the policy's JSON patch expression
// given, and enforced once done says so of .spec.<field> in the answer
// to a dry-run update of probe (its value, and whether it is there).
func mutateOnUpdate(t *testing.T, c clients, crd *apiextensionsv1.CustomResourceDefinition, version, field, probe, patch string, done func(v any, kept bool) bool) {
	t.Helper()
	mutateOnUpdateMatching(t, c, crd, admissionregistrationv1.Equivalent, version, field, probe, patch, done)
}

// mutateOnUpdateMatching is mutateOnUpdate with the policy's matchPolicy:
// Exact matches only requests through version, Equivalent those through
// any version of the resource too (converted to version).
func mutateOnUpdateMatching(t *testing.T, c clients, crd *apiextensionsv1.CustomResourceDefinition, match admissionregistrationv1.MatchPolicyType, version, field, probe, patch string, done func(v any, kept bool) bool) {
	t.Helper()
	ctx := context.Background()
	name := "mutate-" + field + "-" + strings.ReplaceAll(crd.Spec.Group, ".", "-")
	policy := &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			FailurePolicy:      ptr.To(admissionregistrationv1.Fail),
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			MatchConstraints: &admissionregistrationv1.MatchResources{MatchPolicy: &match, ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{crd.Spec.Group}, APIVersions: []string{version}, Resources: []string{crd.Spec.Names.Plural}},
				},
			}}},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "has-field", Expression: "has(object.spec) && has(object.spec." + field + ")"}},
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType: admissionregistrationv1.PatchTypeJSONPatch,
				JSONPatch: &admissionregistrationv1.JSONPatch{Expression: patch},
			}},
		},
	}
	policies := c.kube.AdmissionregistrationV1().MutatingAdmissionPolicies()
	if _, err := policies.Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bindings := c.kube.AdmissionregistrationV1().MutatingAdmissionPolicyBindings()
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name},
	}
	if _, err := bindings.Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = bindings.Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = policies.Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	res := resource(c, crd, version, "default")
	waitFor(t, "the mutating admission policy to be enforced", func() (bool, error) {
		u, err := res.Get(ctx, probe, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got, err := res.Update(ctx, u, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, nil
		}
		spec, _ := got.Object["spec"].(map[string]any)
		v, kept := spec[field]
		return done(v, kept), nil
	})
}

// TestMigrateMeasuresMutatingAdmission: v1 and v2 have the same schema
// under conversion None, so the schemas predict no loss; a
// MutatingAdmissionPolicy removes .spec.image from every object written
// through v2. migrate's no-op update through the storage version v2 would
// store every object without it. migrate measures the write and refuses,
// naming the objects and the field, nothing changed — with an old version
// in storedVersions (the measurement reads at v1) and without one (a
// re-run in S3 reads at v2 itself).
func TestMigrateMeasuresMutatingAdmission(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := createCRD(t, c, crontab("strip-update.example.com", apiextensionsv1.NamespaceScoped))
	createCronTabs(t, c, crd, "v1", 3)
	v2 := crontabVersion("v2", true, false)
	serveVersion(t, c, crd, "v2", v2.Schema.OpenAPIV3Schema)
	stripOnUpdate(t, c, crd, "v2", "image", "crontab-0")
	crd = setStorage(t, c, crd.Name, "v2")
	if got := strings.Join(storedVersionsOf(t, c, crd.Name), ","); got != "v1,v2" {
		t.Fatalf("storedVersions %s, want v1,v2", got)
	}
	before := contents(t, c, crd, "v1")

	refuses(t, c, []string{crd.Name}, []string{"refusing to migrate", "nothing was changed", "3 object(s) have fields at v1 that v2 drops",
		"default/crontab-0: .spec.image", "--allow-pruning"}, "migrate", crd.Name)
	wantContents(t, c, crd, "v1", before)
	if got := strings.Join(storedVersionsOf(t, c, crd.Name), ","); got != "v1,v2" {
		t.Errorf("the refused migrate changed storedVersions to %s", got)
	}
	// A server dry run measures and refuses alike; a client dry run sends
	// no dry-run write, so it cannot measure, and says so rather than
	// counting the objects as if nothing stood in the way.
	refuses(t, c, []string{crd.Name}, []string{"3 object(s) have fields at v1 that v2 drops", "default/crontab-0: .spec.image"}, "migrate", crd.Name, "--dry-run=server")
	if r := mustRun(t, "migrate", crd.Name, "--dry-run=client"); !strings.Contains(r.stdout, "Warning: what the rewrite would lose was not measured") || !strings.Contains(r.stdout, "--dry-run=server measures it") {
		t.Errorf("a client dry run does not say the loss was not measured:\n%s", r.stdout)
	}

	// S3: storedVersions lists the storage version only; a re-run of
	// migrate still writes every object through v2.
	setStoredVersions(t, c, crd.Name, "v2")
	refuses(t, c, []string{crd.Name}, []string{"refusing to migrate", "3 object(s) have fields at v2 that v2 drops", "default/crontab-1: .spec.image"}, "migrate", crd.Name)
	wantContents(t, c, crd, "v1", before)
}

// TestMigrateWebhookUnservedStoredVersionIsUnknown: with a conversion
// webhook, objects stored at v1 while v1 is not served cannot be read at v1,
// so what the webhook's conversion to the storage version v2 keeps of them
// cannot be compared with anything. migrate refuses as unknown, naming the
// way to see (serve v1); once v1 is served it measures and migrates, and
// the objects keep every field. (What it finds when the webhook drops a
// field is TestPromoteStorageWebhookRoundTrip's and TestCase16's subject:
// the API server's watch cache keeps what a conversion gave, so a test
// cannot make the webhook lossy for a while and then whole again.)
func TestMigrateWebhookUnservedStoredVersionIsUnknown(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	hook := newConversionWebhook(t)
	crd := createCRD(t, c, crontab("unserved-webhook.example.com", apiextensionsv1.NamespaceScoped))
	createCronTabs(t, c, crd, "v1", 2)
	url := hook.URL + "/convert"
	updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions = append(crd.Spec.Versions, crontabVersion("v2", true, false))
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})},
			ConversionReviewVersions: []string{"v1"}}}
	})
	crd = updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions[0].Served, crd.Spec.Versions[0].Storage = false, false
		crd.Spec.Versions[1].Storage = true
	})
	waitFor(t, "v2 served through the webhook", func() (bool, error) {
		_, err := resource(c, crd, "v2", "default").Get(context.Background(), "crontab-0", metav1.GetOptions{})
		return err == nil, nil
	})
	before := contents(t, c, crd, "v2")

	refuses(t, c, []string{crd.Name}, []string{"refusing to migrate", "nothing was changed", "unknown for objects stored at v1",
		"kubectl crdversion serve " + crd.Name + " v1", "--allow-pruning"}, "migrate", crd.Name)

	succeeds(t, "serve", crd.Name, "v1")
	wantContents(t, c, crd, "v2", before)
	succeeds(t, "migrate", crd.Name)
	if got := strings.Join(storedVersionsOf(t, c, crd.Name), ","); got != "v2" {
		t.Errorf("storedVersions %s after migrate, want v2", got)
	}
	assertHealthy(t, c, crd.Name, before)
}

// wantContents checks that the objects of crd read at version have the
// contents they had before (see contents).
func wantContents(t *testing.T, c clients, crd *apiextensionsv1.CustomResourceDefinition, version string, before map[string]map[string]any) {
	t.Helper()
	got, _ := json.Marshal(contents(t, c, crd, version))
	want, _ := json.Marshal(before)
	if string(got) != string(want) {
		t.Errorf("%s at %s: the objects changed\n got %s\nwant %s", crd.Name, version, got, want)
	}
}

// TestMigrateStorageNotServedRefusedFirst: with the storage version not
// served, migrate cannot write (its writes go through it) and its
// measurement cannot read there either: it refuses at once, saying to serve
// it, rather than after the measurement's reads are answered 404 for the
// ~30 s a version just edited may take to be served.
func TestMigrateStorageNotServedRefusedFirst(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := advance(t, c, "storage-unserved-migrate.example.com", apiextensionsv1.NamespaceScoped, 2, lifecycle.StateS2)
	crd = updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions[1].Served = false
	})
	r := refuses(t, c, []string{crd.Name}, []string{"refusing to migrate", "nothing was changed", "v2 is the storage version but not served", "run: kubectl crdversion serve " + crd.Name + " v2"}, "migrate", crd.Name)
	if strings.Contains(r.stdout+r.stderr, "NotFound") {
		t.Errorf("the refusal is the measurement's 404:\n%s%s", r.stdout, r.stderr)
	}
}

// TestMigrateLooksForPredictedLossInObjects: under conversion None, v2's
// schema adds .spec.suspend to v1's (the shape of Flux's v1beta1 to
// v1beta2). Objects stored at v1 are read without it, so the schemas alone
// cannot tell whether v1's schema lost it after they were written (case 18,
// where the data is still in etcd and the rewrite drops it for good).
// migrate looks at every object: what it holds, and what its
// managedFields record. An object without managedFields keeps the
// prediction standing, named; once every object records its writes and
// none records the field, migrate runs without --allow-pruning and keeps
// every field. (Objects whose managedFields record the field: case 18.)
func TestMigrateLooksForPredictedLossInObjects(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	ctx := context.Background()
	crd := createCRD(t, c, crontab("added-field.example.com", apiextensionsv1.NamespaceScoped))
	createCronTabs(t, c, crd, "v1", 3)
	v2 := crontabVersion("v2", true, false)
	spec := v2.Schema.OpenAPIV3Schema.Properties["spec"]
	spec.Properties["suspend"] = apiextensionsv1.JSONSchemaProps{Type: "boolean"}
	v2.Schema.OpenAPIV3Schema.Properties["spec"] = spec
	serveVersion(t, c, crd, "v2", v2.Schema.OpenAPIV3Schema)
	crd = setStorage(t, c, crd.Name, "v2")

	res := resource(c, crd, "v1", "default")
	u, err := res.Get(ctx, "crontab-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{}})
	if u, err = res.Update(ctx, u, metav1.UpdateOptions{}); err != nil || len(u.GetManagedFields()) != 0 {
		t.Fatalf("clearing the managedFields of crontab-1: %v, left %v", err, u.GetManagedFields())
	}
	setStoredVersions(t, c, crd.Name, "v1", "v2")
	refuses(t, c, []string{crd.Name}, []string{"v1's schema does not describe .spec.suspend", "1 object(s) have no managedFields", "default/crontab-1", "--allow-pruning"}, "migrate", crd.Name)

	// An update does not record fields again on an object without
	// managedFields; a server-side apply does (the API server gives what
	// no one applied to "before-first-apply").
	apply := []byte(`{"apiVersion":"` + crd.Spec.Group + `/v1","kind":"CronTab","metadata":{"name":"crontab-1","labels":{"touched":"yes"}}}`)
	if u, err = res.Patch(ctx, "crontab-1", types.ApplyPatchType, apply, metav1.PatchOptions{FieldManager: "e2e"}); err != nil || len(u.GetManagedFields()) == 0 {
		t.Fatalf("server-side apply to crontab-1: %v, managedFields %v", err, u.GetManagedFields())
	}
	before := contents(t, c, crd, "v1")
	r := mustRun(t, "migrate", crd.Name)
	if !strings.Contains(r.stdout, "status.storedVersions: [v1, v2] -> [v2]") || !strings.Contains(r.stdout, "measured first") {
		t.Errorf("migrate output:\n%s", r.stdout)
	}
	wantContents(t, c, crd, "v1", before)
}

// TestMigrateFieldPrunedAsWrittenIsNotHidden: v1 declares .spec.image, the
// storage version v2 does not (conversion None). An object written through
// v1 after v2 became the storage version records .spec.image in its
// managedFields, but the API server pruned it as it stored the object at
// v2: it is not in etcd. The read at v1, which would show it if it were
// there, is what migrate measures; it must not take the record for data
// that no read shows (which would refuse this migration for good).
func TestMigrateFieldPrunedAsWrittenIsNotHidden(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	ctx := context.Background()
	crd := createCRD(t, c, crontab("pruned-as-written.example.com", apiextensionsv1.NamespaceScoped))
	v2 := crontabVersion("v2", true, false)
	spec := v2.Schema.OpenAPIV3Schema.Properties["spec"]
	delete(spec.Properties, "image")
	v2.Schema.OpenAPIV3Schema.Properties["spec"] = spec
	serveVersion(t, c, crd, "v2", v2.Schema.OpenAPIV3Schema)
	crd = setStorage(t, c, crd.Name, "v2")
	setStoredVersions(t, c, crd.Name, "v1", "v2")
	createCronTabs(t, c, crd, "v1", 2)
	u, err := resource(c, crd, "v1", "default").Get(ctx, "crontab-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, kept, _ := unstructured.NestedString(u.Object, "spec", "image"); kept {
		t.Fatalf("the API server kept .spec.image of an object stored at v2: %v", u.Object["spec"])
	}
	if missing, recorded := cluster.RecordedMissing(u, u.Object, []string{".spec.image"}); !recorded || len(missing) == 0 {
		t.Fatalf("crontab-0's managedFields do not record .spec.image (%v, %v): the test needs them to", missing, recorded)
	}
	r := mustRun(t, "migrate", crd.Name)
	if !strings.Contains(r.stdout, "status.storedVersions: [v1, v2] -> [v2]") || !strings.Contains(r.stdout, "measured first: 2 object(s) read at v1") {
		t.Errorf("migrate output:\n%s", r.stdout)
	}
}
