package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// TestRestoreAdviceKeepsWhatOnlyTheRemovedVersionHeld (issue 34, B21):
// conversion None, v1 {image, legacy}, v2 {image}; v2 became the storage
// version and v1 was removed from spec.versions while status.storedVersions
// still lists it and the objects are still stored at it, .spec.legacy in
// etcd. status's fix restored v1 with the storage version's schema
// (add-version --from v2), which prunes .spec.legacy on every read at v1,
// and then advised migrate, which erased it or refused the advice it was
// given. The restore now keeps every field its objects hold
// (x-kubernetes-preserve-unknown-fields); the advice is followed as printed,
// every printed command runs, and .spec.legacy is still in etcd — read back
// at the restored v1 once it is served, as an operator who wants it back
// does.
func TestRestoreAdviceKeepsWhatOnlyTheRemovedVersionHeld(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	ctx := context.Background()
	crd := removedWiderVersion(t, c, "restore-schema.example.com", false)
	inEtcd := func(when string) {
		t.Helper()
		for _, name := range []string{"a", "b"} {
			key := srv.EtcdPrefix + "/" + crd.Spec.Group + "/crontabs/default/" + name
			resp, err := srv.Etcd.Get(ctx, key)
			if err != nil || len(resp.Kvs) != 1 {
				t.Fatalf("reading %s from etcd: %v", key, err)
			}
			if !strings.Contains(string(resp.Kvs[0].Value), `"legacy":"precious-`+name+`"`) {
				t.Errorf("%s: default/%s lost .spec.legacy in etcd: %s", when, name, resp.Kvs[0].Value)
			}
		}
	}
	inEtcd("the start")

	// Follow status's advice, as printed, until it names no command or
	// a printed command refuses. A refusal is right only where the
	// decision is the user's: migrate naming every object and the field
	// that only v1's schema declared, with nothing changed.
	var ran []string
	var refusal result
	for step := 0; step < 4 && refusal.code == 0; step++ {
		s := binaryStatus(t, crd.Name)
		if s.Next == nil || len(s.Next.Run) == 0 {
			break
		}
		line := lifecycle.RenderAll(s.Next.Run, nil)
		if slices.Contains(ran, line) {
			t.Fatalf("the advice does not progress: %s again", line)
		}
		ran = append(ran, line)
		for _, cmd := range s.Next.Run {
			if cmd.Tool != "" {
				t.Fatalf("Next is not a crdversion command: %s", line)
			}
			r := crdversion(t, shellWords(t, lifecycle.RenderAll([]lifecycle.Command{cmd}, nil))[2:]...)
			inEtcd("after " + line)
			if r.code != 0 {
				t.Logf("%s refused:\n%s%s", line, r.stdout, r.stderr)
				refusal = r
				break
			}
		}
	}
	if len(ran) == 0 || !strings.HasPrefix(ran[0], "kubectl crdversion add-version "+crd.Name+" v1 ") {
		t.Fatalf("status did not advise restoring v1 first: %q", ran)
	}
	restored := lifecycle.FindVersion(getCRD(t, c, crd.Name), "v1")
	if restored == nil || restored.Served {
		t.Fatalf("v1 not restored unserved: %+v", restored)
	}
	if sch := restored.Schema.OpenAPIV3Schema; sch.XPreserveUnknownFields == nil || !*sch.XPreserveUnknownFields {
		t.Errorf("v1 restored with a schema that prunes what its objects hold: %+v", sch)
	}
	if len(ran) != 2 || ran[1] != "kubectl crdversion migrate "+crd.Name || refusal.code == 0 {
		t.Fatalf("after the restore, status did not advise migrate, or migrate did not refuse: %q", ran)
	}
	for _, want := range []string{"default/a: .spec.legacy", "default/b: .spec.legacy", "add them to v2's schema"} {
		if !strings.Contains(refusal.stdout+refusal.stderr, want) {
			t.Errorf("migrate's refusal lacks %q:\n%s%s", want, refusal.stdout, refusal.stderr)
		}
	}
	if got := strings.Join(storedVersionsOf(t, c, crd.Name), ","); got != "v1,v2" {
		t.Errorf("storedVersions %s after the refusal, want v1,v2", got)
	}
	s := binaryStatus(t, crd.Name)
	if f, found := finding(s, lifecycle.CodeMigrationPrunes); !found || f.Version != "v1" || !strings.Contains(f.Message, "fields of any name") {
		t.Errorf("status does not say what migrating v1's objects may lose:\n%s", statusText(s))
	}
	inEtcd("the end")

	// The value reads back at v1 once it is served: nothing pruned it.
	succeeds(t, "serve", crd.Name, "v1")
	got, err := resource(c, crd, "v1", "default").Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if spec, _ := got.Object["spec"].(map[string]any); spec["legacy"] != "precious-a" {
		t.Errorf("default/a at the restored v1: %v", got.Object["spec"])
	}
}

// binaryStatus is status -o json of the plugin binary, decoded: the
// advice the test follows is the binary's, as a user's is.
func binaryStatus(t *testing.T, name string) report.Status {
	t.Helper()
	r := crdversion(t, "status", name, "-o", "json")
	checkStatusExit(t, "status "+name+" -o json", r)
	var s report.Status
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("decoding status -o json: %v\n%s", err, r.stdout)
	}
	return s
}

// statusText is s's findings and Next, for messages.
func statusText(s report.Status) string {
	var b strings.Builder
	for _, f := range s.Findings {
		fmt.Fprintf(&b, "%s %s: %s\n", f.Severity, f.Code, f.Message)
	}
	if s.Next != nil {
		b.WriteString("Next: " + s.Next.Reason + " / " + s.Next.Loss + "\n")
	}
	return b.String()
}

// TestRestoredVersionWithoutManagedFields (B21, found by a new user's
// trial): objects whose managedFields were stripped record nothing, so
// after the restore (unserved, keeping every field) migrate cannot tell
// what they hold at v1: it refuses, says to serve v1 for the measurement,
// and -o json names every object as unmeasured. Served, each object is
// read at v1 and the refusal names .spec.legacy; the value stays in etcd
// throughout.
func TestRestoredVersionWithoutManagedFields(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	ctx := context.Background()
	crd := removedWiderVersion(t, c, "restore-unrecorded.example.com", true)
	succeeds(t, "add-version", crd.Name, "v1", "--preserve-unknown-fields", "--served=false")

	r := refuses(t, c, []string{crd.Name}, []string{"2 object(s) have no managedFields", "serve it for the measurement (kubectl crdversion serve " + crd.Name + " v1)"},
		"migrate", crd.Name, "-o", "json")
	var rep report.Migration
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Refused == nil {
		t.Fatalf("no refused report (%v):\n%s", err, r.stdout)
	}
	var unmeasured []string
	for _, o := range rep.Refused.Objects {
		if strings.Contains(o.Unmeasured, "no managedFields") {
			unmeasured = append(unmeasured, o.Object)
		}
	}
	if !slices.Equal(unmeasured, []string{"default/a", "default/b"}) {
		t.Errorf("unmeasured objects %v in the refused report, want default/a and default/b: %+v", unmeasured, rep.Refused)
	}

	succeeds(t, "serve", crd.Name, "v1")
	refuses(t, c, []string{crd.Name}, []string{"default/a: .spec.legacy", "default/b: .spec.legacy"}, "migrate", crd.Name)
	for _, name := range []string{"a", "b"} {
		got, err := resource(c, crd, "v1", "default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v, _, _ := unstructured.NestedString(got.Object, "spec", "legacy"); v != "precious-"+name {
			t.Errorf("default/%s at v1: legacy %q", name, v)
		}
	}
}

// removedWiderVersion makes crontabs.GROUP with v1 {image, legacy} and v2
// {image} under conversion None: objects a and b created at v1 with
// .spec.legacy "precious-NAME" (their managedFields cleared when
// stripManagedFields, as an old client or one that strips them leaves an
// object), v2 made the storage version, then v1 removed from spec.versions
// in etcd while status.storedVersions still lists it.
func removedWiderVersion(t *testing.T, c clients, group string, stripManagedFields bool) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	ctx := context.Background()
	wide := crontab(group, apiextensionsv1.NamespaceScoped)
	wide.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["legacy"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	crd := createCRD(t, c, wide)
	ensureNamespace(t, c, "default")
	for _, name := range []string{"a", "b"} {
		u := cronTabObject(name, map[string]any{"image": "nginx:1", "legacy": "precious-" + name}, nil)
		u.SetAPIVersion(crd.Spec.Group + "/v1")
		u.SetKind("CronTab")
		if _, err := resource(c, crd, "v1", "default").Create(ctx, u, metav1.CreateOptions{FieldManager: "e2e"}); err != nil {
			t.Fatal(err)
		}
		if !stripManagedFields {
			continue
		}
		// An empty entry clears managedFields.
		if _, err := resource(c, crd, "v1", "default").Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"managedFields":[{}]}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions = append(crd.Spec.Versions, crontabVersion("v2", true, false))
	})
	return removeFirstVersionInEtcd(t, c, setStorage(t, c, crd.Name, "v2"))
}
