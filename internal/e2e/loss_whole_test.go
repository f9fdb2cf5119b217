package e2e

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	migrateresult "github.com/crdversion/kubectl-crdversion/internal/migrate/result"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// The loss measurement of migrate compares whole objects: the object read
// at the version it is stored at with the API server's answer to migrate's
// own no-op update as a server-side dry run — under a conversion webhook
// sent through that version, so that the answer is the round trip through
// the storage version. Values, metadata, defaults and nulls all count
// (issue 34: B11, B13, B16, B17, B19). Each test fails on the key-presence
// comparison it replaced.

// webhookStoragePending creates crontabs.<group> with objects created at
// v1 (the storage version), adds v2 with schema v2 (nil: CronTab's) under
// Webhook conversion through hook, and makes v2 the storage version:
// storedVersions [v1, v2], every object still stored at v1.
func webhookStoragePending(t *testing.T, c clients, hook *conversionWebhook, group string, v2 *apiextensionsv1.JSONSchemaProps, objects ...*unstructured.Unstructured) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := webhookVersionAdded(t, c, hook, group, v2, objects...)
	crd = setStorage(t, c, crd.Name, "v2")
	waitFor(t, "v2 served through the webhook", func() (bool, error) {
		_, err := resource(c, crd, "v2", "default").List(context.Background(), metav1.ListOptions{})
		return err == nil, nil
	})
	if got := strings.Join(storedVersionsOf(t, c, crd.Name), ","); got != "v1,v2" {
		t.Fatalf("storedVersions %s, want v1,v2", got)
	}
	return crd
}

// webhookVersionAdded is webhookStoragePending before the flip: v1 is
// still the storage version, v2 served through the webhook.
func webhookVersionAdded(t *testing.T, c clients, hook *conversionWebhook, group string, v2 *apiextensionsv1.JSONSchemaProps, objects ...*unstructured.Unstructured) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	ctx := context.Background()
	crd := createCRD(t, c, crontab(group, apiextensionsv1.NamespaceScoped))
	ensureNamespace(t, c, "default")
	for _, u := range objects {
		u.SetAPIVersion(group + "/v1")
		u.SetKind("CronTab")
		if _, err := resource(c, crd, "v1", "default").Create(ctx, u, metav1.CreateOptions{FieldManager: "e2e"}); err != nil {
			t.Fatal(err)
		}
	}
	url := hook.URL + "/convert"
	version := crontabVersion("v2", true, false)
	if v2 != nil {
		version.Schema.OpenAPIV3Schema = v2
	}
	crd = updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions = append(crd.Spec.Versions, version)
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})},
			ConversionReviewVersions: []string{"v1"}}}
	})
	waitFor(t, "v2 served through the webhook", func() (bool, error) {
		_, err := resource(c, crd, "v2", "default").List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	return crd
}

func cronTabObject(name string, spec map[string]any, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetName(name)
	u.SetNamespace("default")
	u.SetLabels(labels)
	return u
}

// wholeObjects reads every object of crd at version, whole but for the
// metadata that every write changes.
func wholeObjects(t *testing.T, c clients, crd *apiextensionsv1.CustomResourceDefinition, version string) string {
	t.Helper()
	list, err := resource(c, crd, version, "default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, u := range list.Items {
		u.SetManagedFields(nil)
		u.SetResourceVersion("")
		b, _ := json.Marshal(u.Object)
		out = append(out, string(b))
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// renameImage is the conversion of a webhook that renames .spec.image at
// v1 to .spec.containerImage at v2 and back: lossless.
var renameImage = func(version string, obj map[string]any) {
	spec, _ := obj["spec"].(map[string]any)
	from, to := "image", "containerImage"
	if version == "v1" {
		from, to = to, from
	}
	if v, ok := spec[from]; ok {
		spec[to] = v
		delete(spec, from)
	}
}

// containerImageSchema is CronTab's v2 schema with .spec.image renamed
// .spec.containerImage.
func containerImageSchema() *apiextensionsv1.JSONSchemaProps {
	v2 := crontabVersion("v2", true, false).Schema.OpenAPIV3Schema
	spec := v2.Properties["spec"]
	spec.Properties["containerImage"] = spec.Properties["image"]
	delete(spec.Properties, "image")
	v2.Properties["spec"] = spec
	return v2
}

// renamedObjects are the CronTabs renameImage renames.
func renamedObjects() []*unstructured.Unstructured {
	return []*unstructured.Unstructured{cronTabObject("a", map[string]any{"image": "nginx:1", "replicas": int64(2)}, nil),
		cronTabObject("b", map[string]any{"image": "redis:7"}, map[string]string{"app": "b"})}
}

// zeroedObjects are the CronTabs of zeroAndRelabel: "changed",
// "relabelled" and one it keeps.
func zeroedObjects() []*unstructured.Unstructured {
	return []*unstructured.Unstructured{cronTabObject("changed", map[string]any{"image": "nginx:1", "replicas": int64(5)}, nil),
		cronTabObject("relabelled", map[string]any{"image": "nginx:1"}, map[string]string{"legacy": "yes", "app": "x"}),
		cronTabObject("kept", map[string]any{"image": "nginx:1"}, nil)}
}

// zeroAndRelabel is the conversion to v2 of a webhook that sets
// .spec.replicas of the object "changed" to 0 and drops the label
// "legacy" of "relabelled": keys kept, data lost.
var zeroAndRelabel = func(version string, obj map[string]any) {
	if version != "v2" {
		return
	}
	meta, _ := obj["metadata"].(map[string]any)
	switch meta["name"] {
	case "changed":
		obj["spec"].(map[string]any)["replicas"] = int64(0)
	case "relabelled":
		labels, _ := meta["labels"].(map[string]any)
		delete(labels, "legacy")
	}
}

// TestPromoteStorageJudgesTheWebhookRoundTrip (issue 34): before the flip,
// promote-storage compared the keys of each object at v1 and at v2, so a
// renaming webhook was refused as lossy (.spec.image "dropped") and a
// webhook that zeroes a value or drops a label passed. Each object read at
// v2 now goes back to v1 through the webhook, from the client, and is
// compared whole with its read at v1: the rename promotes, the lossy
// webhook is refused naming both objects, and nothing is written.
func TestPromoteStorageJudgesTheWebhookRoundTrip(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	rename := newConversionWebhook(t)
	rename.edit.Store(&renameImage)
	crd := webhookVersionAdded(t, c, rename, "promote-rename.example.com", containerImageSchema(), renamedObjects()...)
	r := succeeds(t, "promote-storage", crd.Name, "v2")
	if !strings.Contains(r.stdout, "sent back to v1 through the webhook by this client and compared whole") {
		t.Errorf("promote-storage does not say it judged the round trip:\n%s", r.stdout)
	}
	if got := strings.Join(storedVersionsOf(t, c, crd.Name), ","); got != "v1,v2" {
		t.Errorf("storedVersions %s after the promotion, want v1,v2", got)
	}

	lossy := newConversionWebhook(t)
	lossy.edit.Store(&zeroAndRelabel)
	crd = webhookVersionAdded(t, c, lossy, "promote-lossy.example.com", nil, zeroedObjects()...)
	refused(t, c, crd.Name, []string{"1 object(s) have values at v1 that the update through v2 changes", "default/changed: .spec.replicas",
		"1 object(s) have fields at v1 that v2 drops", "default/relabelled: .metadata.labels.legacy"}, "promote-storage", crd.Name, "v2")
	if got := strings.Join(storedVersionsOf(t, c, crd.Name), ","); got != "v1" {
		t.Errorf("storedVersions %s after the refusal, want v1", got)
	}
}

// TestWebhookAndAPolicyOfTheStorageVersion (trial): under Webhook
// conversion a MutatingAdmissionPolicy that matches only UPDATEs through v2
// (matchPolicy Exact) zeroes .spec.replicas. promote-storage compared the
// conversions alone and passed; migrate's dry runs went through v1 (the
// round trip), which the policy does not match, said "0 losing a field",
// and its writes through v2 zeroed every object. Both now also send the
// update through v2 and compare whole: each refuses, naming the object and
// path, and the value is still read at v1.
func TestWebhookAndAPolicyOfTheStorageVersion(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	hook := newConversionWebhook(t)
	crd := webhookVersionAdded(t, c, hook, "exact-policy.example.com", nil,
		cronTabObject("a", map[string]any{"image": "nginx:1", "replicas": int64(5)}, nil))
	mutateOnUpdateMatching(t, c, crd, admissionregistrationv1.Exact, "v2", "replicas", "a", `[JSONPatch{op: "replace", path: "/spec/replicas", value: 0}]`,
		func(v any, _ bool) bool { return v == int64(0) })
	const named = "default/a: .spec.replicas"
	refused(t, c, crd.Name, []string{"1 object(s) have values at v1 that the update through v2 changes", named}, "promote-storage", crd.Name, "v2")

	crd = setStorage(t, c, crd.Name, "v2")
	refuses(t, c, []string{crd.Name}, []string{"refusing to migrate", "changes: " + named}, "migrate", crd.Name)
	if spec := specAt(t, c, crd, "v1", "a"); spec["replicas"] != int64(5) {
		t.Errorf("a at v1 after the refusals: %v, want replicas 5", spec)
	}
}

// TestMigrateWebhookRenameIsLossless (B19): the canonical conversion
// webhook renames .spec.image at v1 to .spec.containerImage at v2 and back.
// A comparison of keys across versions called every object lossy and left
// --allow-pruning, which switches the whole measurement off, as the only
// way on. The round trip gives every object back: migrate runs, and every
// object reads at v1 as before.
func TestMigrateWebhookRenameIsLossless(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	hook := newConversionWebhook(t)
	hook.edit.Store(&renameImage)
	crd := webhookStoragePending(t, c, hook, "rename-webhook.example.com", containerImageSchema(), renamedObjects()...)
	before := wholeObjects(t, c, crd, "v1")

	r := succeeds(t, "migrate", crd.Name)
	if !strings.Contains(r.stdout, "status.storedVersions: [v1, v2] -> [v2]") ||
		!strings.Contains(r.stdout, "dry-run written through v1 (a round trip through v2)") || !strings.Contains(r.stdout, "0 losing a field, 0 changing a value") {
		t.Errorf("migrate output:\n%s", r.stdout)
	}
	if after := wholeObjects(t, c, crd, "v1"); after != before {
		t.Errorf("objects at v1 changed:\n got %s\nwant %s", after, before)
	}
}

// TestMigrateWebhookChangesValuesAndLabels (B16, B17): identical schemas;
// the webhook's conversion to v2 sets .spec.replicas of "changed" to 0 and
// drops the label "legacy" of "relabelled". Keys compared across versions
// saw nothing (replicas is still there; metadata was skipped). The round
// trip shows both: migrate refuses, naming the objects and paths, and
// nothing is written.
func TestMigrateWebhookChangesValuesAndLabels(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	hook := newConversionWebhook(t)
	hook.edit.Store(&zeroAndRelabel)
	crd := webhookStoragePending(t, c, hook, "lossy-values.example.com", nil, zeroedObjects()...)
	before := wholeObjects(t, c, crd, "v1")

	refuses(t, c, []string{crd.Name}, []string{"refusing to migrate", "nothing was changed", "rewriting the objects at v2 loses data",
		"1 object(s) have values at v1 that the rewrite at v2 changes: default/changed: .spec.replicas",
		"1 object(s) have fields at v1 that v2 drops: default/relabelled: .metadata.labels.legacy"}, "migrate", crd.Name)
	if after := wholeObjects(t, c, crd, "v1"); after != before {
		t.Errorf("objects at v1 changed:\n got %s\nwant %s", after, before)
	}
	if got := strings.Join(storedVersionsOf(t, c, crd.Name), ","); got != "v1,v2" {
		t.Errorf("storedVersions %s, want v1,v2", got)
	}
}

// TestMigrateReportsWhatTheRewriteSets (B11): conversion None; v2 gives
// .spec.mode and .spec.paused defaults and makes .spec.opt not nullable.
// Nothing is lost, so migrate runs, but the run's report names every path
// the rewrite sets and every explicit null it drops, with counts, and
// that it changes metadata.generation (controllers reconcile the objects
// again); -o json carries the same.
func TestMigrateReportsWhatTheRewriteSets(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	ctx := context.Background()
	schema := func(defaults bool) *apiextensionsv1.JSONSchemaProps {
		spec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"mode":   {Type: "string", Nullable: true},
			"opt":    {Type: "string", Nullable: true},
			"paused": {Type: "boolean"},
		}}
		if defaults {
			mode, opt, paused := spec.Properties["mode"], spec.Properties["opt"], spec.Properties["paused"]
			mode.Default = &apiextensionsv1.JSON{Raw: []byte(`"fast"`)}
			opt.Nullable = false
			paused.Default = &apiextensionsv1.JSON{Raw: []byte(`false`)}
			spec.Properties["mode"], spec.Properties["opt"], spec.Properties["paused"] = mode, opt, paused
		}
		return &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec}}
	}
	def := crontab("rewrite-sets.example.com", apiextensionsv1.NamespaceScoped)
	def.Spec.Versions[0].Schema.OpenAPIV3Schema = schema(false)
	crd := createCRD(t, c, def)
	ensureNamespace(t, c, "default")
	for _, o := range []*unstructured.Unstructured{cronTabObject("o1", map[string]any{}, nil), cronTabObject("o2", map[string]any{"opt": nil}, nil)} {
		o.SetAPIVersion(crd.Spec.Group + "/v1")
		o.SetKind("CronTab")
		if _, err := resource(c, crd, "v1", "default").Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	serveVersion(t, c, crd, "v2", schema(true))
	crd = setStorage(t, c, crd.Name, "v2")

	m, r := migrationJSON(t, crd.Name, "--dry-run=server")
	if r.err != nil || len(m.Measured) != 1 {
		t.Fatalf("migrate --dry-run=server -o json: %v, %+v\n%s", r.err, m.Measured, r.stderr)
	}
	p := m.Measured[0]
	set, _ := json.Marshal(p.Set)
	nulls, _ := json.Marshal(p.NullsDropped)
	if string(set) != `[{"path":".spec.mode","objects":2},{"path":".spec.paused","objects":2}]` || string(nulls) != `[{"path":".spec.opt","objects":1}]` ||
		p.GenerationChanged != 2 || p.Lost != 0 || p.Changed != 0 {
		t.Errorf("measurement: set %s, nulls dropped %s, %+v", set, nulls, p)
	}
	text := succeeds(t, "migrate", crd.Name)
	for _, want := range []string{"the rewrite sets .spec.mode (2), .spec.paused (2) (defaults of the schema or admission)",
		"drops the explicit null of .spec.opt (1)", "changes metadata.generation of 2 object(s)", "status.storedVersions: [v1, v2] -> [v2]"} {
		if !strings.Contains(text.stdout, want) {
			t.Errorf("migrate output does not say %q:\n%s", want, text.stdout)
		}
	}
}

// TestMigrateStopsWhenItsDryRunsAreRefused (B13): v2 adds a transition
// rule that refuses every update of an object whose .spec.image is "bad".
// The measurement's dry runs are refused for those two; the run used to
// write the other objects anyway and fail on them, leaving a mix. Now it
// refuses before writing anything, naming both.
func TestMigrateStopsWhenItsDryRunsAreRefused(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	ctx := context.Background()
	crd := createCRD(t, c, crontab("refused-dryrun.example.com", apiextensionsv1.NamespaceScoped))
	ensureNamespace(t, c, "default")
	for i, image := range []string{"ok", "bad", "ok", "bad", "ok"} {
		o := cronTabObject("o"+itoa(i), map[string]any{"image": image}, nil)
		o.SetAPIVersion(crd.Spec.Group + "/v1")
		o.SetKind("CronTab")
		if _, err := resource(c, crd, "v1", "default").Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	v2 := crontabVersion("v2", true, false).Schema.OpenAPIV3Schema
	spec := v2.Properties["spec"]
	spec.XValidations = apiextensionsv1.ValidationRules{{Rule: "!has(oldSelf.image) || oldSelf.image != 'bad'", Message: "bad images cannot be updated"}}
	v2.Properties["spec"] = spec
	serveVersion(t, c, crd, "v2", v2)
	crd = setStorage(t, c, crd.Name, "v2")
	versions := func() string {
		list, err := resource(c, crd, "v1", "default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var rvs []string
		for _, u := range list.Items {
			rvs = append(rvs, u.GetName()+"@"+u.GetResourceVersion())
		}
		return strings.Join(rvs, ",")
	}
	before := versions()
	refuses(t, c, []string{crd.Name}, []string{"refusing to migrate", "the API server refuses to rewrite some objects at v2",
		"2 object(s) read at v1 that the API server refuses to write through v2", `default/o1, default/o3: CronTab.refused-dryrun.example.com "<name>" is invalid`, "bad images cannot be updated"}, "migrate", crd.Name)
	if after := versions(); after != before {
		t.Errorf("the refused migrate wrote objects: %s, before %s", after, before)
	}
}

// TestPromoteStorageJudgesObjectsByTheirOwnName (B12): v2 limits
// metadata.name to 20 characters. promote-storage's check of each object as
// new was a dry-run create under a generated name (26 characters), so every
// object failed it. It now sends the object under its own name: o1 passes
// (the API server answers AlreadyExists once the schema and admission
// accepted it), and an object whose own name is too long is the one named.
func TestPromoteStorageJudgesObjectsByTheirOwnName(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := createCRD(t, c, crontab("own-name.example.com", apiextensionsv1.NamespaceScoped))
	createObject(t, c, crd, "v1", "o1", map[string]any{"image": "nginx:1"})
	v2 := crontabVersion("v2", true, false).Schema.OpenAPIV3Schema
	v2.Properties["metadata"] = apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"name": {Type: "string", MaxLength: ptrInt64(20)}}}
	serveVersion(t, c, crd, "v2", v2)

	r := succeeds(t, "promote-storage", crd.Name, "v2", "--dry-run=server")
	if !strings.Contains(r.stdout, "PASS  1 of 1 object(s) checked: the no-op update that migrate sends through v2 is accepted") || !strings.Contains(r.stdout, "and each is valid at v2 as a new object") {
		t.Errorf("promote-storage --dry-run=server:\n%s", r.stdout)
	}
	const long = "abcdefghijklmnopqrstuvwx"
	createObject(t, c, crd, "v1", long, map[string]any{"image": "nginx:1"})
	r = refuses(t, c, []string{crd.Name}, []string{"default/" + long + ": ", "Too long"}, "promote-storage", crd.Name, "v2")
	if strings.Contains(r.stdout+r.stderr, "default/o1:") {
		t.Errorf("o1 is named as invalid:\n%s%s", r.stdout, r.stderr)
	}
}

func ptrInt64(v int64) *int64 { return &v }

// TestRetireProvesNothingIsStoredAtTheVersion (B24): objects stored at v1,
// storage switched to v2 and status.storedVersions trimmed to [v2] by hand
// (the status patch that upgrade guides pass around). retire used to take
// storedVersions at its word, remove v1 and leave every object unreadable.
// Now storedVersions without v1 is a claim: retire refuses at step 5 while
// objects exist, naming --migrate; with it, the migration pass rewrites the
// objects still stored at v1 before the removal, and every object reads at
// v2 afterwards.
func TestRetireProvesNothingIsStoredAtTheVersion(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := createCRD(t, c, crontab("claimed-trim.example.com", apiextensionsv1.NamespaceScoped))
	createCronTabs(t, c, crd, "v1", 3)
	serveVersion(t, c, crd, "v2", crontabVersion("v2", true, false).Schema.OpenAPIV3Schema)
	crd = setStorage(t, c, crd.Name, "v2")
	setStoredVersions(t, c, crd.Name, "v2")
	crd = updateCRD(t, c, crd.Name, unserveVersion("v1"))
	if got := storedAt(t, crd); got[crd.Spec.Group+"/v1"] != 3 {
		t.Fatalf("stored %v, want the 3 objects at v1", got)
	}
	before := contents(t, c, crd, "v2")

	refuses(t, c, []string{crd.Name}, []string{"stopped at step 5", "does not list v1, but that is a claim", "none of the 3 object(s) is still stored at v1",
		"retire " + crd.Name + " v1 --migrate"}, "retire", crd.Name, "v1", "--skip-usage-check", "--clean-managed-fields")
	if lifecycle.FindVersion(getCRD(t, c, crd.Name), "v1") == nil {
		t.Fatal("the refused retire removed v1")
	}

	succeeds(t, "retire", crd.Name, "v1", "--migrate", "--skip-usage-check", "--clean-managed-fields")
	if got := storedAt(t, crd); got[crd.Spec.Group+"/v2"] != 3 || len(got) != 1 {
		t.Errorf("stored %v after retire --migrate, want the 3 objects at v2", got)
	}
	if lifecycle.FindVersion(getCRD(t, c, crd.Name), "v1") != nil {
		t.Error("retire --migrate left v1 in spec.versions")
	}
	wantContents(t, c, crd, "v2", before)
}

// TestMigrateWebhookStorageVersionRulesAnswer: under a conversion webhook
// the measurement's round trip goes through v1, which the API server
// validates with v1's schema; v2's transition rule refuses "bad" images.
// The same dry run through v2 answers for it: migrate refuses before any
// write instead of rewriting the others and failing on these.
func TestMigrateWebhookStorageVersionRulesAnswer(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	hook := newConversionWebhook(t)
	v2 := crontabVersion("v2", true, false).Schema.OpenAPIV3Schema
	spec := v2.Properties["spec"]
	spec.XValidations = apiextensionsv1.ValidationRules{{Rule: "!has(oldSelf.image) || oldSelf.image != 'bad'", Message: "bad images cannot be updated"}}
	v2.Properties["spec"] = spec
	crd := webhookStoragePending(t, c, hook, "webhook-rules.example.com", v2,
		cronTabObject("good", map[string]any{"image": "ok"}, nil), cronTabObject("sealed", map[string]any{"image": "bad"}, nil))
	before := wholeObjects(t, c, crd, "v1")
	refuses(t, c, []string{crd.Name}, []string{"the API server refuses to rewrite some objects at v2", "default/sealed: ", "bad images cannot be updated"}, "migrate", crd.Name)
	if after := wholeObjects(t, c, crd, "v1"); after != before {
		t.Errorf("the refused migrate wrote objects:\n got %s\nwant %s", after, before)
	}
}

// TestMigrateRefusesWhileAnObjectCannotBeConvertedDown (B18): after the
// storage flip the conversion webhook was upgraded: it drops .spec.image
// of default/a on v1 -> v2 and refuses every conversion of nodown1, an
// object created at v2. The list at v1, which the measurement reads, fails
// on nodown1; the premise that the run's own reads fail too was false (the
// run lists at v2), so the run wrote both objects and trimmed, and a's
// image was gone. Unknown refuses: nothing is written, storedVersions stays,
// and a's image still reads at v1; the refusal names a's loss and
// nodown1's unknown apart (-o json).
func TestMigrateRefusesWhileAnObjectCannotBeConvertedDown(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	ctx := context.Background()
	hook := newConversionWebhook(t)
	crd := webhookStoragePending(t, c, hook, "nodown.example.com", nil,
		cronTabObject("a", map[string]any{"image": "nginx:1"}, nil),
		cronTabObject("b", map[string]any{"image": "redis:7"}, nil))
	u := cronTabObject("nodown1", map[string]any{"image": "busybox:1"}, nil)
	u.SetAPIVersion(crd.Spec.Group + "/v2")
	u.SetKind("CronTab")
	if _, err := resource(c, crd, "v2", "default").Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lossy := func(version string, obj map[string]any) {
		if meta, _ := obj["metadata"].(map[string]any); version == "v2" && meta["name"] == "a" {
			delete(obj["spec"].(map[string]any), "image")
		}
	}
	hook.edit.Store(&lossy)
	hook.failWith.Store("nodown1")
	waitFor(t, "nodown1 to be unreadable", func() (bool, error) {
		_, err := resource(c, crd, "v1", "default").Get(ctx, "nodown1", metav1.GetOptions{})
		return err != nil && strings.Contains(err.Error(), "the test cannot convert nodown1"), nil
	})

	// The list at v1 is answered (from the watch cache, converted while
	// the webhook still converted nodown1), so each object is measured on
	// its own: nodown1 is unknown, and a's loss is named beside it.
	// Should the watch cache of v1 be rebuilt meanwhile (it converts every
	// object again, and nodown1 then fails the whole list), the webhook
	// converts nodown1 again until the cache has loaded, and fails it
	// after: the state is built again, not assumed.
	failing := true
	waitFor(t, "nodown1 unreadable while a paged list at v1 is answered from the watch cache", func() (bool, error) {
		_, lerr := resource(c, crd, "v1", "default").List(ctx, metav1.ListOptions{Limit: 500})
		_, gerr := resource(c, crd, "v1", "default").Get(ctx, "nodown1", metav1.GetOptions{})
		switch {
		case failing && lerr == nil && gerr != nil && strings.Contains(gerr.Error(), "the test cannot convert nodown1"):
			return true, nil
		case failing && lerr != nil:
			hook.failWith.Store("")
			failing = false
		case !failing && lerr == nil:
			hook.failWith.Store("nodown1")
			failing = true
		}
		return false, nil
	})
	r := refuses(t, c, []string{crd.Name}, []string{"what the migration loses is unknown", "default/nodown1", "the test cannot convert nodown1"}, "migrate", crd.Name, "-o", "json")
	var rep report.Migration
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Refused == nil {
		t.Fatalf("no refused report (%v):\n%s", err, r.stdout)
	}
	byName := map[string]migrateresult.RefusedObject{}
	for _, o := range rep.Refused.Objects {
		byName[o.Object] = o
	}
	if a := byName["default/a"]; !slices.Equal(a.Dropped, []string{".spec.image"}) {
		t.Errorf("default/a in the refusal: %+v, want .spec.image dropped", a)
	}
	if n := byName["default/nodown1"]; !strings.Contains(n.Unmeasured, "the test cannot convert nodown1") {
		t.Errorf("default/nodown1 in the refusal: %+v, want unmeasured", n)
	}
	if _, ok := byName["default/b"]; ok {
		t.Errorf("default/b, which loses nothing, is in the refusal: %+v", byName["default/b"])
	}
	if got := strings.Join(storedVersionsOf(t, c, crd.Name), ","); got != "v1,v2" {
		t.Errorf("storedVersions %s after the refusal, want v1,v2", got)
	}
	got, err := resource(c, crd, "v1", "default").Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if image, _, _ := unstructured.NestedString(got.Object, "spec", "image"); image != "nginx:1" {
		t.Errorf("default/a at v1 after the refusal: image %q, want nginx:1", image)
	}
}

// TestMeasurementSeesANullTheWriteDrops (found by a trial of issue 30's
// reads): v1 makes .spec.opt nullable with a default, v2 the same default
// without nullable. An object stored at v1 with opt: null reads as null
// at v2 too (a read defaults with the schema it is stored at), while a
// write through v2 drops the null and sets the default — so reads said
// the rewrite changes nothing. Now a path nullable at a stored version and
// not at the storage version takes the dry runs: promote-storage says so,
// and migrate reports that the rewrite sets .spec.opt on that object.
func TestMeasurementSeesANullTheWriteDrops(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	ctx := context.Background()
	schema := func(nullable bool) *apiextensionsv1.JSONSchemaProps {
		return &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"opt": {Type: "string", Nullable: nullable, Default: &apiextensionsv1.JSON{Raw: []byte(`"a"`)}}}}}}
	}
	def := crontab("null-dropped.example.com", apiextensionsv1.NamespaceScoped)
	def.Spec.Versions[0].Schema.OpenAPIV3Schema = schema(true)
	crd := createCRD(t, c, def)
	ensureNamespace(t, c, "default")
	for _, o := range []*unstructured.Unstructured{cronTabObject("o1", map[string]any{"opt": "b"}, nil), cronTabObject("o2", map[string]any{"opt": nil}, nil)} {
		o.SetAPIVersion(crd.Spec.Group + "/v1")
		o.SetKind("CronTab")
		if _, err := resource(c, crd, "v1", "default").Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	serveVersion(t, c, crd, "v2", schema(false))

	r := succeeds(t, "promote-storage", crd.Name, "v2", "--dry-run=server")
	if !strings.Contains(r.stdout, "measured by dry runs") || !strings.Contains(r.stdout, "v1's schema makes .spec.opt nullable and v2's does not") {
		t.Errorf("promote-storage --dry-run=server does not dry-run the nullable path:\n%s", r.stdout)
	}
	crd = setStorage(t, c, crd.Name, "v2")
	m, mr := migrationJSON(t, crd.Name, "--dry-run=server")
	if mr.err != nil || len(m.Measured) != 1 {
		t.Fatalf("migrate --dry-run=server -o json: %v, %+v\n%s", mr.err, m.Measured, mr.stderr)
	}
	p := m.Measured[0]
	set, _ := json.Marshal(p.Set)
	if p.Design != migrateresult.DesignDryRun || !strings.Contains(p.DryRunBecause, "nullable") || string(set) != `[{"path":".spec.opt","objects":1}]` || p.Lost != 0 {
		t.Errorf("measured by %q because %q, set %s, %+v; want dry runs naming the nullable path, and .spec.opt set on one object", p.Design, p.DryRunBecause, set, p)
	}
}
