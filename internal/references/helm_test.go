package references

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
)

// manifest is the shape of a manifest Helm stores: "---" and a "# Source:"
// comment before each document.
const manifest = `---
# Source: app/templates/cm.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  apiVersion: stable.example.com/v1
---
# Source: app/templates/crontab.yaml
apiVersion: "stable.example.com/v1"
kind: CronTab
metadata:
  name: nightly
spec:
  ref:
    apiVersion: stable.example.com/v1
---
# Source: app/templates/other.yaml
apiVersion: stable.example.com/v1
kind: Widget
metadata:
  name: w
--- # a comment after the separator
# Source: app/templates/crontab2.yaml
kind: CronTab
apiVersion: stable.example.com/v1
metadata:
  name: weekly
---
# Source: app/templates/new.yaml
apiVersion: stable.example.com/v2
kind: CronTab
metadata:
  name: monthly
`

// TestDocumentsAgreeWithHelm: the documents read here are the ones Helm's
// own splitter (releaseutil.SplitManifests) gives, in its order.
func TestDocumentsAgreeWithHelm(t *testing.T) {
	split := releaseutil.SplitManifests(manifest)
	keys := slices.Collect(maps.Keys(split))
	slices.SortFunc(keys, func(a, b string) int {
		var x, y releaseutil.BySplitManifestsOrder = []string{a, b}, nil
		_ = y
		if x.Less(0, 1) {
			return -1
		}
		return 1
	})
	docs := documents(manifest)
	if len(docs) != len(keys) {
		t.Fatalf("%d documents, Helm splits %d", len(docs), len(keys))
	}
	for i, d := range docs {
		if got, want := strings.TrimSpace(manifest[d.start:d.end]), strings.TrimSpace(split[keys[i]]); got != want {
			t.Errorf("document %d:\n%s\nHelm's:\n%s", i, got, want)
		}
	}
}

// TestManifestObjects: the objects of the kind at the version, whatever the
// order of apiVersion and kind or the quoting; not another kind, version,
// or a field elsewhere in a document that names the version.
func TestManifestObjects(t *testing.T) {
	match := func(r metav1.OwnerReference) bool {
		return r.APIVersion == "stable.example.com/v1" && r.Kind == "CronTab"
	}
	var got []string
	for _, o := range ManifestObjects(manifest, match) {
		got = append(got, o.Ref.Name+"@"+string(rune('0'+o.Index)))
	}
	if g, want := strings.Join(got, " "), "nightly@1 weekly@3"; g != want {
		t.Errorf("objects %q, want %q", g, want)
	}
}

// TestRewriteManifest: only the apiVersion line of the matching documents
// changes; every other byte is kept.
func TestRewriteManifest(t *testing.T) {
	out, n := RewriteManifest(manifest, "stable.example.com/v1", "CronTab", "stable.example.com/v2")
	if n != 2 {
		t.Errorf("%d documents rewritten, want 2", n)
	}
	want := strings.Replace(strings.Replace(manifest, `apiVersion: "stable.example.com/v1"`, "apiVersion: stable.example.com/v2", 1),
		"kind: CronTab\napiVersion: stable.example.com/v1", "kind: CronTab\napiVersion: stable.example.com/v2", 1)
	if out != want {
		t.Errorf("rewritten:\n%s\nwant:\n%s", out, want)
	}
	if again, n := RewriteManifest(out, "stable.example.com/v1", "CronTab", "stable.example.com/v2"); n != 0 || again != out {
		t.Errorf("a second rewrite changed %d documents", n)
	}
}

// TestFindHelm: the objects of the current records that name the target
// are dependents with their release; a store that cannot be read is
// Unseen.
func TestFindHelm(t *testing.T) {
	secrets, cms := HelmRecordResources[0], HelmRecordResources[1]
	src := &fakeSource{
		releases:    map[Resource][]Release{secrets: {{Namespace: "a", Name: "app", Revision: 2, Status: "deployed", Resource: secrets, Record: "sh.helm.release.v1.app.v2", Manifest: manifest}}},
		releaseErrs: map[Resource]error{cms: errForbidden},
	}
	inv, err := Find(context.Background(), src, Target{APIVersion: "stable.example.com/v1", Kind: "CronTab"}, Options{Forbidden: func(err error) bool { return err == errForbidden }})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range inv.Dependents {
		got = append(got, d.Object()+" "+d.Where()+" "+d.Owner.Name)
	}
	if g, want := strings.Join(got, "; "), "a/sh.helm.release.v1.app.v2 manifest of Helm release a/app revision 2 nightly; a/sh.helm.release.v1.app.v2 manifest of Helm release a/app revision 2 weekly"; g != want {
		t.Errorf("dependents\n%s\nwant\n%s", g, want)
	}
	if inv.Complete() || len(inv.Unseen) != 1 || inv.Unseen[0].Resource != cms || !inv.Unseen[0].Forbidden {
		t.Errorf("unseen %+v", inv.Unseen)
	}
	if g, want := inv.ByResource(3)[0].String(), "Helm release records in secrets: 2 in a (a/app revision 2)"; g != want {
		t.Errorf("by resource %q, want %q", g, want)
	}
	if g, want := Count(inv.Dependents), "2 objects in Helm release records"; g != want {
		t.Errorf("count %q, want %q", g, want)
	}
}
