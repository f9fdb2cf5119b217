package upgrade

import (
	"context"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/manifest"
)

// owned is an installed CRD of Helm release backup-system/backup.
func owned(name, kind string, keep string) *apiextensionsv1.CustomResourceDefinition {
	c := crdtest.New(name).Kind(kind).Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("source")).Stored("v1").CRD()
	c.Annotations = map[string]string{ReleaseNameAnnotation: "backup", ReleaseNamespaceAnnotation: "backup-system"}
	c.Labels = map[string]string{ManagedByLabel: "Helm"}
	if keep != "" {
		c.Annotations[ResourcePolicyAnnotation] = keep
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(c)
	return c
}

// summary is each plan as "name apply code,code…" (infos included).
func summary(plans []Plan) []string {
	var out []string
	for _, p := range plans {
		var codes []string
		for _, f := range p.Findings {
			codes = append(codes, f.Code)
		}
		out = append(out, p.Name+" "+p.Apply+" "+strings.Join(codes, ","))
	}
	return out
}

// TestCheckerHelm: Helm's rules over the CRDs of a chart and the installed
// CRDs of its release — an owned CRD the release no longer renders is
// deleted (moved to crds/ or dropped), unless the live CRD keeps the
// policy in the exact form helm upgrade reads; crds/ is install-only; a
// templated CRD without the keep policy is a warning. Without a release
// name nothing is counted as deleted.
func TestCheckerHelm(t *testing.T) {
	moved := owned("snapshots.backup.example.com", "Snapshot", "")
	dropped := owned("schedules.backup.example.com", "Schedule", "")
	kept := owned("policies.backup.example.com", "Policy", "keep")
	keptWrongCase := owned("targets.backup.example.com", "Target", "Keep")
	other := owned("others.backup.example.com", "Other", "")
	other.Annotations[ReleaseNameAnnotation] = "another"
	templated := owned("repositories.backup.example.com", "Repository", "")
	changed := crdtest.New("locks.backup.example.com").Kind("Lock").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("holder")).Stored("v1").CRD()
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(changed)
	installed := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, c := range []*apiextensionsv1.CustomResourceDefinition{moved, dropped, kept, keptWrongCase, other, templated, changed} {
		installed[c.Name] = c
	}
	next := func(c *apiextensionsv1.CustomResourceDefinition, origin string) manifest.CRDDoc {
		n := c.DeepCopy()
		n.Annotations, n.Status = nil, apiextensionsv1.CustomResourceDefinitionStatus{}
		return manifest.CRDDoc{CRD: n, Source: origin + "/" + c.Name, HelmOrigin: origin}
	}
	changedNext := next(changed, manifest.HelmCRDsDir)
	changedNext.CRD.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["until"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	// Installed from crds/ before: no Helm ownership; now a template.
	adopted := crdtest.New("vaults.backup.example.com").Kind("Vault").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("source")).Stored("v1").CRD()
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(adopted)
	installed[adopted.Name] = adopted
	fresh := manifest.CRDDoc{CRD: crdtest.New("fresh.backup.example.com").Kind("Fresh").Version("v1", crdtest.Served, crdtest.Storage).CRD(), Source: "crds/fresh", HelmOrigin: manifest.HelmCRDsDir}
	docs := []manifest.CRDDoc{next(moved, manifest.HelmCRDsDir), next(templated, manifest.HelmTemplates), changedNext, fresh, next(adopted, manifest.HelmTemplates)}

	f := &fakeCluster{installed: installed, objects: []string{"default/s1", "default/s2+"}}
	c := &Checker{Cluster: f, Apply: ApplyCommand([]string{"r.yaml"}, false), Conn: []lifecycle.Flag{{Name: "context", Value: "east"}},
		Helm: &HelmRelease{Name: "backup", Namespace: "backup-system"}}
	plans, err := c.Check(context.Background(), docs)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"snapshots.backup.example.com Deleted HelmDeletesCRD",
		"repositories.backup.example.com Accepted HelmNoKeepPolicy",
		"locks.backup.example.com Accepted HelmCRDNotUpgraded,FieldAdded",
		"fresh.backup.example.com Accepted HelmCRDInstallOnly",
		"vaults.backup.example.com Rejected HelmCannotAdopt,HelmNoKeepPolicy",
		"policies.backup.example.com Accepted HelmKeepsCRD",
		"schedules.backup.example.com Deleted HelmDeletesCRD",
		"targets.backup.example.com Deleted HelmDeletesCRD",
	}
	if got := summary(plans); !slices.Equal(got, want) {
		t.Errorf("plans\n got  %q\n want %q", got, want)
	}
	for _, p := range plans {
		switch p.Name {
		case "locks.backup.example.com":
			if want := []string{"kubectl --context east apply --server-side -f r.yaml"}; !slices.Equal(p.Fix, want) {
				t.Errorf("%s: fix %q, want the apply of the crds/ file: helm upgrade leaves it", p.Name, p.Fix)
			}
		case "vaults.backup.example.com":
			want := []string{"kubectl --context east label crd vaults.backup.example.com app.kubernetes.io/managed-by=Helm",
				"kubectl --context east annotate crd vaults.backup.example.com meta.helm.sh/release-name=backup meta.helm.sh/release-namespace=backup-system",
				"kubectl --context east apply --server-side -f r.yaml"}
			if !slices.Equal(p.Fix, want) {
				t.Errorf("%s: fix %q, want %q", p.Name, p.Fix, want)
			}
		}
		if p.Apply != Deleted {
			continue
		}
		d := p.Deletion
		if d == nil || !d.Counted || d.Objects != 2 || d.Finalizers != 1 || d.Release != "backup-system/backup" || d.MovedToCRDsDir != (p.Name == moved.Name) {
			t.Errorf("%s: deletion %+v", p.Name, d)
		}
		if want := []string{"kubectl --context east annotate crd " + p.Name + " helm.sh/resource-policy=keep"}; !slices.Equal(p.Fix, want) {
			t.Errorf("%s: fix %q, want %q", p.Name, p.Fix, want)
		}
		msg := p.Findings[0].Message
		for _, s := range []string{"DELETES THE CRD AND EVERY OBJECT OF IT", "2 " + d.Kind + " object(s)", "1 with finalizers"} {
			if !strings.Contains(msg, s) {
				t.Errorf("%s: message %q lacks %q", p.Name, msg, s)
			}
		}
		if strings.Contains(strings.Join(p.Fix, " "), "delete") {
			t.Errorf("%s: fix deletes: %q", p.Name, p.Fix)
		}
	}

	// Without the release's name, nothing is counted as deleted.
	c.Helm = &HelmRelease{Namespace: "backup-system"}
	plans, err = c.Check(context.Background(), docs)
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(plans); len(got) != 5 || strings.Contains(strings.Join(got, " "), Deleted) || strings.Contains(strings.Join(got, " "), CodeHelmCannotAdopt) {
		t.Errorf("no release: %q", got)
	}
}
