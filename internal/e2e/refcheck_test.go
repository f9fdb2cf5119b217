package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/references"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// TestUnserveRefusesOwnerReferences (issue 28): while objects' owner
// references name v1, unserve refuses, changing nothing, and names the
// kinds, namespaces and objects and the repair; repair-references
// --dry-run=server writes nothing; repair-references rewrites exactly those
// references to the storage version, leaving the others as they were; then
// unserve passes, saying that it looked. status --references counts them
// before the repair, and none after.
func TestUnserveRefusesOwnerReferences(t *testing.T) {
	checkReferences(t)
	c := newClients(t)
	crd := advance(t, c, "unserverefs.example.com", apiextensionsv1.NamespaceScoped, 1, lifecycle.StateS4)
	owner, err := resource(c, crd, "v2", "team-a").Get(context.Background(), "crontab-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ownedBy(t, c, "team-a", "owned-v1", "unserverefs.example.com/v1", "CronTab", owner, false)
	ownedBy(t, c, "team-b", "owned-v1", "unserverefs.example.com/v1", "CronTab", owner, true)
	ownedBy(t, c, "team-a", "owned-v2", "unserverefs.example.com/v2", "CronTab", owner, false)
	_, v2Before := ownerAPIVersion(t, c, "team-a", "owned-v2")

	refused(t, c, crd.Name, []string{"2 owner references on objects of 2 resources name unserverefs.example.com/v1 CronTab",
		"configmaps: 1 in team-a (team-a/owned-v1)", "jobs.batch: 1 in team-b (team-b/owned-v1)",
		"rewrite them to unserverefs.example.com/v2 first (kubectl crdversion repair-references " + crd.Name + " v1)"},
		"unserve", crd.Name, "v1", "--skip-usage-check")

	// status --references counts them per version (the storage version's
	// are not counted).
	if refs := statusJSON(t, crd.Name, "--references").References; refs == nil || len(refs.Versions) != 1 || len(refs.Unseen) != 0 ||
		refs.Versions[0] != (report.VersionReferences{Version: "v1", References: 2, Objects: 2, Resources: 2}) {
		t.Errorf("status --references: %+v", refs)
	}
	if out := mustRun(t, "status", crd.Name, "--references").stdout; !strings.Contains(out, "2 object(s) of 2 kind(s) still name unserverefs.example.com/v1 (2 reference(s); repair: kubectl crdversion repair-references "+crd.Name+" v1)") {
		t.Errorf("status --references:\n%s", out)
	}

	r := mustRun(t, "repair-references", crd.Name, "v1", "--dry-run=server")
	if !strings.Contains(r.stdout, "configmaps team-a/owned-v1 ownerReferences[0] (CronTab crontab-0): rewritten to unserverefs.example.com/v2 (server dry run)") {
		t.Errorf("server dry run:\n%s", r.stdout)
	}
	if v, _ := ownerAPIVersion(t, c, "team-a", "owned-v1"); v != "unserverefs.example.com/v1" {
		t.Fatalf("a server dry run rewrote the reference: %s", v)
	}

	r = mustRun(t, "repair-references", crd.Name, "v1", "-o", "json")
	var rep report.ReferenceRepair
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if rep.Kind != "ReferenceRepair" || len(rep.Repairs) != 2 || len(rep.Unseen) != 0 || rep.To != "unserverefs.example.com/v2" {
		t.Errorf("report %+v", rep)
	}
	for _, x := range rep.Repairs {
		if x.Outcome != references.Rewritten {
			t.Errorf("%s %s/%s: %s %s", x.Resource.Resource, x.Namespace, x.Name, x.Outcome, x.Message)
		}
	}
	cm, err := c.kube.CoreV1().ConfigMaps("team-a").Get(context.Background(), "owned-v1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := cm.OwnerReferences[0]; ref.APIVersion != "unserverefs.example.com/v2" || ref.UID != owner.GetUID() || ref.Kind != "CronTab" || ref.Name != "crontab-0" {
		t.Errorf("repaired reference %+v", ref)
	}
	job, err := c.kube.BatchV1().Jobs("team-b").Get(context.Background(), "owned-v1", metav1.GetOptions{})
	if err != nil || job.OwnerReferences[0].APIVersion != "unserverefs.example.com/v2" {
		t.Errorf("the job's reference: %v %+v", err, job)
	}
	if _, rv := ownerAPIVersion(t, c, "team-a", "owned-v2"); rv != v2Before {
		t.Errorf("the reference that named v2 was written")
	}

	if refs := statusJSON(t, crd.Name, "--references").References; refs == nil || len(refs.Versions) != 0 {
		t.Errorf("status --references after the repair: %+v", refs)
	}
	r = mustRun(t, "unserve", crd.Name, "v1", "--skip-usage-check")
	if !strings.Contains(r.stdout, "no owner reference, scale target or Helm release record names unserverefs.example.com/v1 CronTab") {
		t.Errorf("unserve after the repair:\n%s", r.stdout)
	}
}

// TestRetireRepairsOwnerReferences (issue 28): retire stops at step 2
// while owner references name v1, changing nothing, and its run: line
// carries --repair-references; pasted, it rewrites them before it unserves
// v1 and retires v1 to the end.
func TestRetireRepairsOwnerReferences(t *testing.T) {
	checkReferences(t)
	c := newClients(t)
	crd := advance(t, c, "retirerefs.example.com", apiextensionsv1.NamespaceScoped, 1, lifecycle.StateS4)
	owner, err := resource(c, crd, "v2", "team-a").Get(context.Background(), "crontab-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ownedBy(t, c, "team-a", "retire-owned-v1", "retirerefs.example.com/v1", "CronTab", owner, false)

	r := refused(t, c, crd.Name, []string{"stopped at step 2", "1 owner reference names retirerefs.example.com/v1 CronTab", "configmaps: 1 in team-a (team-a/retire-owned-v1)"},
		"retire", crd.Name, "v1", "--skip-usage-check", "--migrate", "--clean-managed-fields")
	if strings.Contains(r.stderr, "Warning:") {
		t.Errorf("the inventory printed the API server's warnings about the resources it lists:\n%s", r.stderr)
	}
	args := runLine(t, r.stdout+r.stderr)
	if !strings.Contains(strings.Join(args, " "), "--repair-references") {
		t.Fatalf("the run: line does not repair: %v", args)
	}
	r = mustRun(t, args...)
	if !strings.Contains(r.stdout, "rewrote 1 reference(s) to retirerefs.example.com/v2") {
		t.Errorf("retire --repair-references:\n%s", r.stdout)
	}
	if v, _ := ownerAPIVersion(t, c, "team-a", "retire-owned-v1"); v != "retirerefs.example.com/v2" {
		t.Errorf("the reference names %s after retire", v)
	}
	got, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), crd.Name, metav1.GetOptions{})
	if err != nil || lifecycle.FindVersion(got, "v1") != nil {
		t.Errorf("v1 not retired: %v", err)
	}
}
