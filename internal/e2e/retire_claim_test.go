package e2e

import (
	"strings"
	"testing"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// TestRetireMeasuresAtAVersionStoredVersionsLeftOut (B24, issue 34):
// status.storedVersions was trimmed by hand to [v2] while every object is
// still stored at v1, and the conversion webhook drops the label "legacy"
// on conversions to v2. retire --migrate measured what its migration loses
// at the versions storedVersions lists — v2, where every read already comes
// through the webhook and lacks the label — found nothing, and rewrote the
// objects without it, for good. It now also reads at v1, the version it
// removes (served, so it can be read), sees the round trip drop the label,
// and refuses before any write: the objects stay at v1 with their label.
func TestRetireMeasuresAtAVersionStoredVersionsLeftOut(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	hook := newConversionWebhook(t)
	lossy := func(version string, obj map[string]any) {
		if version != "v2" {
			return
		}
		meta, _ := obj["metadata"].(map[string]any)
		labels, _ := meta["labels"].(map[string]any)
		delete(labels, "legacy")
	}
	hook.edit.Store(&lossy)
	crd := webhookStoragePending(t, c, hook, "claimed-lossy.example.com", nil,
		cronTabObject("a", map[string]any{"image": "nginx:1"}, map[string]string{"legacy": "yes"}),
		cronTabObject("b", map[string]any{"image": "redis:7"}, map[string]string{"legacy": "no", "app": "b"}))
	setStoredVersions(t, c, crd.Name, "v2")
	before := wholeObjects(t, c, crd, "v1")

	refuses(t, c, []string{crd.Name}, []string{"loses data", "2 object(s) have fields at v1 that v2 drops", ".metadata.labels.legacy"},
		"retire", crd.Name, "v1", "--migrate", "--skip-usage-check", "--clean-managed-fields")
	if v := lifecycle.FindVersion(getCRD(t, c, crd.Name), "v1"); v == nil || !v.Served {
		t.Fatal("the refused retire changed v1")
	}
	if after := wholeObjects(t, c, crd, "v1"); after != before {
		t.Errorf("objects at v1 changed:\n got %s\nwant %s", after, before)
	}
	if got := storedAt(t, crd); got[crd.Spec.Group+"/v1"] != 2 {
		t.Errorf("stored %v, want both objects still at v1 in etcd", got)
	}
	if !strings.Contains(before, "legacy") {
		t.Fatalf("the objects read at v1 lack the label before the run: %s", before)
	}
}
