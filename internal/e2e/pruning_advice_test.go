package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// TestAdviceAfterAcceptedPruning (issue 17): after add-version
// --allow-pruning, the printed Next was promote-storage, and after
// promote-storage --allow-pruning, status's Next was migrate: both refuse
// in that state (conversion None drops .spec.image of the object stored
// at v1). Advice must neither refuse nor carry --allow-pruning (a pasted
// flag would lose data nobody chose to lose): every Next prints no
// command, names the field, and says that only the user's own
// --allow-pruning accepts losing it. The user then takes the losing steps
// by their own choice; until the migration, .spec.image stays in storage.
func TestAdviceAfterAcceptedPruning(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := createCRD(t, c, crontab("accepted-pruning.example.com", apiextensionsv1.NamespaceScoped))
	ensureNamespace(t, c, "pruned")
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "accepted-pruning.example.com/v1", "kind": "CronTab",
		"metadata": map[string]any{"name": "c1"}, "spec": map[string]any{"cronSpec": "* * * * *", "image": "kept-at-v1"},
	}}
	if _, err := resource(c, crd, "v1", "pruned").Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	schemaFile := filepath.Join(t.TempDir(), "v2.yaml")
	writeFile(t, schemaFile, `
type: object
properties:
  spec:
    type: object
    properties:
      cronSpec: {type: string}
      replicas: {type: integer}
`)
	added := mustRun(t, "add-version", crd.Name, "v2", "--schema-file", schemaFile, "--allow-pruning")
	noCommandButLoss(t, added.stdout, "promote-storage "+crd.Name+" v2")
	s := statusJSON(t, crd.Name)
	if s.State != lifecycle.StateS1 || s.Next == nil || s.Next.Command != "" || len(s.Next.Run) != 0 || !strings.Contains(s.Next.Loss, "ACCEPTS LOSING DATA") {
		t.Fatalf("after add-version --allow-pruning: %s, next %+v", s.State, s.Next)
	}
	imageAtV1(t, c, crd)

	mustRun(t, "promote-storage", crd.Name, "v2", "--allow-pruning") // the user's own choice
	s = statusJSON(t, crd.Name)
	if s.State != lifecycle.StateS2 || s.Next == nil || s.Next.Command != "" || len(s.Next.Run) != 0 ||
		!strings.Contains(s.Next.Loss, "ACCEPTS LOSING DATA") || !strings.Contains(s.Next.Loss, ".spec.image") {
		t.Fatalf("after promote-storage --allow-pruning: %s, next %+v", s.State, s.Next)
	}
	for _, f := range s.Findings {
		for _, cmd := range f.Run {
			if strings.Contains(cmd.String(), "allow-pruning") {
				t.Errorf("finding %s advises %s", f.Code, cmd.String())
			}
		}
	}
	out := runStatus(t, crd.Name)
	noCommandButLoss(t, out.stdout, "migrate "+crd.Name)
	if strings.Contains(out.stdout, "fix: kubectl crdversion migrate "+crd.Name+" --allow-pruning") {
		t.Errorf("status advises a migration that loses data:\n%s", out.stdout)
	}
	imageAtV1(t, c, crd)

	mustRun(t, "migrate", crd.Name, "--allow-pruning") // the user's own choice
	if after := statusJSON(t, crd.Name); after.State != lifecycle.StateS3 || len(after.StoredVersions) != 1 || after.StoredVersions[0] != "v2" {
		t.Errorf("after the migration: %s, storedVersions %v", after.State, after.StoredVersions)
	}
}

// noCommandButLoss checks that out's Next: line is no command but names
// step, and is followed by the WARNING that says what the step loses.
func noCommandButLoss(t *testing.T, out, step string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		rest, ok := strings.CutPrefix(l, "Next: ")
		if !ok {
			continue
		}
		if strings.HasPrefix(rest, "kubectl ") || strings.Contains(rest, "--allow-pruning") || !strings.Contains(rest, "kubectl crdversion "+step+")") {
			t.Errorf("Next: %s, want words naming kubectl crdversion %s, no command and no --allow-pruning\n%s", rest, step, out)
		}
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "  WARNING: conversion strategy None") || !strings.Contains(lines[i+1], "ACCEPTS LOSING DATA") {
			t.Errorf("Next: %s is not followed by the loss:\n%s", rest, out)
		}
		return
	}
	t.Fatalf("no Next: line:\n%s", out)
}

// imageAtV1 checks that the object still holds .spec.image at v1: nothing
// was lost by following the advice.
func imageAtV1(t *testing.T, c clients, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	got, err := resource(c, crd, "v1", "pruned").Get(context.Background(), "c1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img, _, _ := unstructured.NestedString(got.Object, "spec", "image"); img != "kept-at-v1" {
		t.Errorf(".spec.image at v1 = %q, want kept-at-v1: the advice lost data", img)
	}
}
