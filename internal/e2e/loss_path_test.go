package e2e

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// The measurement follows the path of the run's writes and checks validity
// at the storage version, whoever switched it (issue 34: B14, B23).

// TestMigrateReportsObjectsInvalidAtTheStorageVersion (B14): the storage
// version was switched by hand from v1 (replicas: integer) to v2
// (replicas: string), as Helm or GitOps do. The rewrite keeps the values
// (ratcheting accepts an unchanged invalid field on update), but the objects
// are invalid at v2 and typed clients of v2 fail to decode them: migrate
// checks each as a new object at v2 and names them; promote-storage would
// have refused.
func TestMigrateReportsObjectsInvalidAtTheStorageVersion(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := createCRD(t, c, crontab("invalid-at-storage.example.com", apiextensionsv1.NamespaceScoped))
	createCronTabs(t, c, crd, "v1", 2)
	v2 := crontabVersion("v2", true, false)
	v2.Schema.OpenAPIV3Schema.Properties["spec"].Properties["replicas"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions = append(crd.Spec.Versions, v2)
	})
	crd = setStorage(t, c, crd.Name, "v2")

	j := succeeds(t, "migrate", crd.Name, "-o", "json", "--dry-run=server")
	if !strings.Contains(j.stdout, `"invalidAtStorage": 2`) {
		t.Errorf("migrate -o json does not count the invalid objects:\n%s", j.stdout)
	}
	r := succeeds(t, "migrate", crd.Name)
	out := r.stdout + r.stderr
	for _, want := range []string{"Warning: 2 object(s) read at v1 are invalid at v2 as new objects", "default/crontab-0", "default/crontab-1", "typed clients of v2 may fail to decode them",
		"status.storedVersions: [v1, v2] -> [v2]"} {
		if !strings.Contains(out, want) {
			t.Errorf("migrate output lacks %q:\n%s", want, out)
		}
	}
}

// TestServerEngineMeasuresTheControllersPath (B23): Webhook conversion,
// v1 stored, v2 the storage version, v3 served and discovery's preferred
// version. kube-controller-manager's storage version migrator patches
// through v3, and the webhook drops .spec.image on conversions to v3: the
// measurement through v1 (a round trip through v2) saw nothing, and the
// controller's rewrite lost the image. The conversion to v3 cannot be
// compared with the read at v1, so migrate --engine=server refuses as
// unknown before creating anything; the client engine, which writes through
// v2, keeps every image.
func TestServerEngineMeasuresTheControllersPath(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	hook := newConversionWebhook(t)
	hook.drop.Store("v3:image")
	crd := webhookStoragePending(t, c, hook, "controller-path.example.com", nil,
		cronTabObject("a", map[string]any{"image": "nginx:1"}, nil),
		cronTabObject("b", map[string]any{"image": "redis:7"}, nil))
	crd = updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions = append(crd.Spec.Versions, crontabVersion("v3", true, false))
	})
	if p := lifecycle.DefaultVersion(crd); p != "v3" {
		t.Fatalf("preferred version %s, want v3", p)
	}
	before := wholeObjects(t, c, crd, "v1")

	refuses(t, c, []string{crd.Name}, []string{"what the migration loses is unknown", "the run writes them through v3"},
		"migrate", crd.Name, "--engine=server")
	if got := strings.Join(storedVersionsOf(t, c, crd.Name), ","); got != "v1,v2" {
		t.Errorf("storedVersions %s after the refusal, want v1,v2", got)
	}
	succeeds(t, "migrate", crd.Name)
	if after := wholeObjects(t, c, crd, "v1"); after != before {
		t.Errorf("objects at v1 changed by the client engine:\n got %s\nwant %s", after, before)
	}
}

// TestMigrateAcceptsNamedPaths (B19): --allow-pruning alone switches the
// whole measurement off, so accepting one known loss accepted every other
// too. With paths it accepts those only: v2 drops .spec.image and
// .spec.cronSpec; accepting .spec.image still refuses, naming cronSpec on
// every object; accepting both runs, and the report says what was lost.
// promote-storage takes the same paths first (issue 34): accepting
// .spec.image refuses on .spec.cronSpec, both in the schemas' prediction
// and in the objects, and its way out, followed as printed, promotes.
func TestMigrateAcceptsNamedPaths(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := createCRD(t, c, crontab("accept-paths.example.com", apiextensionsv1.NamespaceScoped))
	createCronTabs(t, c, crd, "v1", 12)
	v2 := crontabVersion("v2", true, false)
	delete(v2.Schema.OpenAPIV3Schema.Properties["spec"].Properties, "image")
	delete(v2.Schema.OpenAPIV3Schema.Properties["spec"].Properties, "cronSpec")
	crd = updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions = append(crd.Spec.Versions, v2)
	})

	r := refuses(t, c, []string{crd.Name}, []string{"1 field(s) would be pruned (1 more accepted by --allow-pruning=.spec.image)",
		"12 object(s) have fields at v1 that v2 drops", "default/crontab-0: .spec.cronSpec", "12 object(s) have fields or values at v1 that --allow-pruning=.spec.image accepts"},
		"promote-storage", crd.Name, "v2", "--allow-pruning=.spec.image")
	ways := regexp.MustCompile(`(?:accept exactly these losses with|or pass) (--allow-pruning=[^\s)]+)`).FindAllStringSubmatch(r.stdout+r.stderr, -1)
	if len(ways) != 2 || ways[0][1] != "--allow-pruning=.spec.cronSpec,.spec.image" || ways[1][1] != ways[0][1] {
		t.Fatalf("promote-storage's ways out %q, want --allow-pruning=.spec.cronSpec,.spec.image twice:\n%s", ways, r.stdout+r.stderr)
	}
	// A misspelt path accepts nothing, and is named as such.
	r = succeeds(t, "promote-storage", crd.Name, "v2", ways[0][1]+",.spec.imgae", "--dry-run=server")
	if !strings.Contains(r.stdout, "WARN  --allow-pruning path(s) .spec.imgae match nothing the objects lose or change at v2") {
		t.Errorf("promote-storage with a misspelt path does not name it:\n%s", r.stdout)
	}
	r = succeeds(t, "promote-storage", crd.Name, "v2", ways[0][1])
	if strings.Contains(r.stdout, "match nothing") {
		t.Errorf("promote-storage %s says a path matches nothing:\n%s", ways[0][1], r.stdout)
	}
	if !strings.Contains(r.stdout, "12 object(s) have fields or values at v1 that --allow-pruning=.spec.cronSpec,.spec.image accepts: they WILL BE LOST") ||
		!strings.Contains(r.stdout, "- default/crontab-0: .spec.cronSpec, .spec.image") {
		t.Errorf("promote-storage %s does not name what it accepted:\n%s", ways[0][1], r.stdout)
	}
	if got := strings.Join(storedVersionsOf(t, c, crd.Name), ","); got != "v1,v2" {
		t.Fatalf("storedVersions %s after the promotion, want v1,v2", got)
	}

	r = refuses(t, c, []string{crd.Name}, []string{"rewriting the objects at v2 loses data", "12 object(s) have fields at v1 that v2 drops"},
		"migrate", crd.Name, "--allow-pruning=.spec.image", "-o", "json")
	// (-o json below: no object is named with .spec.image, accepted.)
	if out := r.stdout + r.stderr; !strings.Contains(out, "default/crontab-0: .spec.cronSpec") {
		t.Errorf("the refusal does not name .spec.cronSpec:\n%s", out)
	}
	// The text names ten objects and "2 more"; -o json names every one
	// (issue 34: a refusal never hides behind "and N more").
	var rep report.Migration
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Refused == nil {
		t.Fatalf("migrate -o json printed no refused report (%v):\n%s", err, r.stdout)
	}
	var named []string
	for _, o := range rep.Refused.Objects {
		if o.Version != "v1" || !slices.Equal(o.Dropped, []string{".spec.cronSpec"}) {
			t.Errorf("refused object %+v, want .spec.cronSpec dropped at v1", o)
		}
		named = append(named, o.Object)
	}
	if len(named) != 12 || rep.Kind != "MigrationReport" || rep.Refused.Reason == "" {
		t.Errorf("the refused report names %d object(s) %v (kind %q, reason %q), want all 12", len(named), named, rep.Kind, rep.Refused.Reason)
	}
	if got := storedAt(t, crd); got[crd.Spec.Group+"/v1"] != 12 {
		t.Errorf("stored %v after the refusal, want every object at v1", got)
	}

	// The way out names the flag that accepts exactly what was named and
	// what was accepted before: followed as printed.
	flag := regexp.MustCompile(`accept exactly these losses with (--allow-pruning=\S+)`).FindStringSubmatch(r.stderr + r.stdout)
	if flag == nil || flag[1] != "--allow-pruning=.spec.cronSpec,.spec.image" {
		t.Fatalf("the refusal's way out %q, want --allow-pruning=.spec.cronSpec,.spec.image:\n%s", flag, r.stderr)
	}
	r = succeeds(t, "migrate", crd.Name, flag[1]+",.status.nothing", "--dry-run=server")
	if !strings.Contains(r.stdout+r.stderr, "--allow-pruning path(s) .status.nothing match nothing the rewrite loses or changes") {
		t.Errorf("migrate with a path that matches nothing does not name it:\n%s", r.stdout+r.stderr)
	}
	r = succeeds(t, "migrate", crd.Name, flag[1])
	for _, want := range []string{"Warning: accepted (--allow-pruning=.spec.cronSpec,.spec.image): the rewrite loses or changes, for good, default/crontab-0: .spec.cronSpec, .spec.image",
		"status.storedVersions: [v1, v2] -> [v2]", "0 losing a field, 0 changing a value not accepted; 2 path(s) lost or changed as --allow-pruning accepts them"} {
		if !strings.Contains(r.stdout+r.stderr, want) {
			t.Errorf("migrate output lacks %q:\n%s", want, r.stdout+r.stderr)
		}
	}
	for name, obj := range contents(t, c, crd, "v2") {
		spec, _ := obj["spec"].(map[string]any)
		if spec["replicas"] != int64(1) {
			t.Errorf("%s: replicas %v after the migration, want 1 (not accepted, kept)", name, spec["replicas"])
		}
	}
}

// TestMigrateKeepsFieldsOnlyManagedFieldsRecord (B15): a one-version CRD
// whose release dropped .spec.legacy from v1's schema; etcd still holds the
// value, every read prunes it. migrate (nothing to promote, state S0)
// compared only what the schemas declare, rewrote the objects and erased
// the value: "0 losing a field". Every path managedFields record is now
// compared, whatever the schemas declare: migrate refuses, naming the
// object and path, and with the schema restored the value reads back.
func TestMigrateKeepsFieldsOnlyManagedFieldsRecord(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	wide := crontab("recorded-only.example.com", apiextensionsv1.NamespaceScoped)
	wide.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["legacy"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	crd := createCRD(t, c, wide)
	createCronTabs(t, c, crd, "v1", 2)
	u := cronTabObject("kept", map[string]any{"image": "nginx:1", "legacy": "precious"}, nil)
	u.SetAPIVersion(crd.Spec.Group + "/v1")
	u.SetKind("CronTab")
	if _, err := resource(c, crd, "v1", "default").Create(context.Background(), u, metav1.CreateOptions{FieldManager: "e2e"}); err != nil {
		t.Fatal(err)
	}
	setLegacy := func(declared bool) { declareSpecField(t, c, crd.Name, "legacy", declared) }
	setLegacy(false)
	waitFor(t, "reads that prune .spec.legacy", func() (bool, error) {
		got, err := resource(c, crd, "v1", "default").Get(context.Background(), "kept", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		_, has, _ := unstructured.NestedString(got.Object, "spec", "legacy")
		return !has, nil
	})

	refuses(t, c, []string{crd.Name}, []string{"loses data that no read shows", "default/kept: .spec.legacy", "no schema of the CRD declares them now"},
		"migrate", crd.Name)

	setLegacy(true)
	waitFor(t, ".spec.legacy read back", func() (bool, error) {
		got, err := resource(c, crd, "v1", "default").Get(context.Background(), "kept", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		v, _, _ := unstructured.NestedString(got.Object, "spec", "legacy")
		return v == "precious", nil
	})
}
