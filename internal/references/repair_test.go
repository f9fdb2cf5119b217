package references

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// TestPatch: the patch tests the dependent's uid and the reference's uid
// and apiVersion at its index before it replaces the apiVersion, and
// nothing else.
func TestPatch(t *testing.T) {
	d := Dependent{UID: "dep-uid", Index: 2, Owner: metav1.OwnerReference{APIVersion: "stable.example.com/v1", Kind: "CronTab", Name: "x", UID: "owner-uid"}}
	var ops []map[string]string
	if err := json.Unmarshal(Patch(d, "stable.example.com/v2"), &ops); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, op := range ops {
		got = append(got, op["op"]+" "+op["path"]+"="+op["value"])
	}
	want := "test /metadata/uid=dep-uid; test /metadata/ownerReferences/2/uid=owner-uid; test /metadata/ownerReferences/2/apiVersion=stable.example.com/v1; " +
		"replace /metadata/ownerReferences/2/apiVersion=stable.example.com/v2"
	if g := strings.Join(got, "; "); g != want {
		t.Errorf("patch\n%s\nwant\n%s", g, want)
	}

	d = Dependent{UID: "hpa-uid", Field: ScaleTarget, Owner: metav1.OwnerReference{APIVersion: "stable.example.com/v1", Kind: "CronTab", Name: "x"}}
	ops = nil
	if err := json.Unmarshal(Patch(d, "stable.example.com/v2"), &ops); err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, op := range ops {
		got = append(got, op["op"]+" "+op["path"]+"="+op["value"])
	}
	want = "test /metadata/uid=hpa-uid; test /spec/scaleTargetRef/kind=CronTab; test /spec/scaleTargetRef/name=x; test /spec/scaleTargetRef/apiVersion=stable.example.com/v1; " +
		"replace /spec/scaleTargetRef/apiVersion=stable.example.com/v2"
	if g := strings.Join(got, "; "); g != want {
		t.Errorf("scale target patch\n%s\nwant\n%s", g, want)
	}
}

type fakePatcher struct {
	errs  map[string]error
	calls []string
	// manifests are the Helm records' manifests by record name; a rewrite
	// is stored back.
	manifests map[string]string
}

func (f *fakePatcher) RewriteRelease(_ context.Context, rel Release, description string, rewrite func(string) (string, int), dryRun bool) (int, error) {
	f.calls = append(f.calls, fmt.Sprintf("release %s dry=%v %s", rel, dryRun, description))
	if err := f.errs[rel.Record]; err != nil {
		return 0, err
	}
	m, n := rewrite(f.manifests[rel.Record])
	if n == 0 {
		return 0, ErrChanged
	}
	if !dryRun {
		f.manifests[rel.Record] = m
	}
	return rel.Revision + 1, nil
}

func (f *fakePatcher) PatchJSON(_ context.Context, r schema.GroupVersionResource, ns, name string, _ []byte, dryRun bool) error {
	f.calls = append(f.calls, fmt.Sprintf("%s %s/%s dry=%v", r.Resource, ns, name, dryRun))
	return f.errs[name]
}

// TestRepairAll: each outcome of the patch is reported per reference; a
// client dry run sends nothing, a server dry run sends each patch as one.
func TestRepairAll(t *testing.T) {
	cms := Resource{Version: "v1", Resource: "configmaps"}
	deps := []Dependent{{Resource: cms, Namespace: "a", Name: "ok"}, {Resource: cms, Namespace: "a", Name: "changed"},
		{Resource: cms, Namespace: "a", Name: "gone"}, {Resource: cms, Namespace: "a", Name: "refused"}}
	p := &fakePatcher{errs: map[string]error{"changed": fmt.Errorf("%w: 422", ErrChanged), "gone": fmt.Errorf("%w: 404", ErrGone), "refused": errors.New("admission webhook denied")}}
	rs, err := RepairAll(context.Background(), p, deps, "stable.example.com/v2", lifecycle.DryRunNone)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, r.Name+"="+string(r.Outcome))
	}
	if g, want := strings.Join(got, " "), "ok=rewritten changed=changed gone=gone refused=failed"; g != want {
		t.Errorf("outcomes %q, want %q", g, want)
	}
	if rs[3].Message != "admission webhook denied" || rs[0].To != "stable.example.com/v2" {
		t.Errorf("message %q, to %q", rs[3].Message, rs[0].To)
	}

	p = &fakePatcher{}
	if rs, _ := RepairAll(context.Background(), p, deps[:1], "stable.example.com/v2", lifecycle.DryRunClient); len(p.calls) != 0 || rs[0].Outcome != Planned {
		t.Errorf("client dry run: calls %v, outcome %s", p.calls, rs[0].Outcome)
	}
	if _, err := RepairAll(context.Background(), p, deps[:1], "stable.example.com/v2", lifecycle.DryRunServer); err != nil || strings.Join(p.calls, ";") != "configmaps a/ok dry=true" {
		t.Errorf("server dry run: calls %v, %v", p.calls, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if rs, err := RepairAll(ctx, p, deps, "stable.example.com/v2", lifecycle.DryRunNone); !errors.Is(err, context.Canceled) || len(rs) != 0 {
		t.Errorf("interrupted: %v, %v", rs, err)
	}
}

// TestRepairAllHelm: the objects of one Helm release record are rewritten
// by one new revision (every object of the record gets its outcome), each
// record once; a client dry run sends nothing.
func TestRepairAllHelm(t *testing.T) {
	secrets := Resource{Version: "v1", Resource: "secrets"}
	web := Release{Namespace: "a", Name: "web", Revision: 3, Status: "deployed", Resource: secrets, Record: "sh.helm.release.v1.web.v3"}
	db := Release{Namespace: "b", Name: "db", Revision: 1, Status: "deployed", Resource: secrets, Record: "sh.helm.release.v1.db.v1"}
	crontab := func(name string, rel *Release, index int) Dependent {
		return Dependent{Resource: secrets, Namespace: rel.Namespace, Name: rel.Record, Field: HelmManifest, Index: index, Release: rel,
			Owner: metav1.OwnerReference{APIVersion: "stable.example.com/v1", Kind: "CronTab", Name: name}}
	}
	deps := []Dependent{crontab("x", &web, 0), crontab("y", &web, 2), crontab("z", &db, 0)}
	doc := func(v, name string) string {
		return "apiVersion: stable.example.com/" + v + "\nkind: CronTab\nmetadata:\n  name: " + name + "\n"
	}
	p := &fakePatcher{manifests: map[string]string{
		web.Record: "---\n" + doc("v1", "x") + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n---\n" + doc("v1", "y"),
		db.Record:  "---\n" + doc("v1", "z"),
	}}
	rs, err := RepairAll(context.Background(), p, deps, "stable.example.com/v2", lifecycle.DryRunNone)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, fmt.Sprintf("%s=%s@%d", r.Owner.Name, r.Outcome, r.Revision))
	}
	if g, want := strings.Join(got, " "), "x=rewritten@4 y=rewritten@4 z=rewritten@2"; g != want {
		t.Errorf("outcomes %q, want %q", g, want)
	}
	if len(p.calls) != 2 {
		t.Errorf("%d rewrites, want one per record: %v", len(p.calls), p.calls)
	}
	if want := "---\n" + doc("v2", "x") + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n---\n" + doc("v2", "y"); p.manifests[web.Record] != want {
		t.Errorf("manifest\n%s\nwant\n%s", p.manifests[web.Record], want)
	}
	// The record now names v2: a second repair finds nothing to rewrite.
	if rs, _ := RepairAll(context.Background(), p, deps[:1], "stable.example.com/v2", lifecycle.DryRunNone); rs[0].Outcome != Changed {
		t.Errorf("second repair: %s, want changed", rs[0].Outcome)
	}
	p.calls = nil
	if rs, _ := RepairAll(context.Background(), p, deps, "stable.example.com/v2", lifecycle.DryRunClient); len(p.calls) != 0 || rs[1].Outcome != Planned {
		t.Errorf("client dry run: calls %v, outcome %s", p.calls, rs[1].Outcome)
	}
}
