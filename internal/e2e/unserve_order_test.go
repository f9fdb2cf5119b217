package e2e

import (
	"strings"
	"testing"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// runLine is the command of out's "run: kubectl crdversion …" line, as
// arguments of the plugin; the test fails when there is none.
func runLine(t *testing.T, out string) []string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if _, cmd, ok := strings.Cut(line, "run: kubectl crdversion "); ok {
			return strings.Fields(cmd)
		}
	}
	t.Fatalf("no run: line in\n%s", out)
	return nil
}

// TestUnserveUnderAWebhookWaitsForMigrate (B26): under a conversion webhook
// migrate reads the objects at the version they are stored at. unserve of
// v1 while storedVersions still lists it passed with a warning, and status
// then advised to serve v1 again. It refuses now, before the change, and
// its run: line — migrate — goes through; unserve then passes.
func TestUnserveUnderAWebhookWaitsForMigrate(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	hook := newConversionWebhook(t)
	crd := webhookStoragePending(t, c, hook, "unserve-order.example.com", nil,
		cronTabObject("a", map[string]any{"image": "nginx:1"}, nil))

	r := refuses(t, c, []string{crd.Name}, []string{"v1 is still in status.storedVersions and conversion is Webhook", "run: kubectl crdversion migrate " + crd.Name},
		"unserve", crd.Name, "v1", "--skip-usage-check")
	if v := lifecycle.FindVersion(getCRD(t, c, crd.Name), "v1"); v == nil || !v.Served {
		t.Fatal("the refused unserve changed v1")
	}
	succeeds(t, runLine(t, r.stdout+r.stderr)...)
	succeeds(t, "unserve", crd.Name, "v1", "--skip-usage-check")
	got := getCRD(t, c, crd.Name)
	if v := lifecycle.FindVersion(got, "v1"); v == nil || v.Served || strings.Join(got.Status.StoredVersions, ",") != "v2" {
		t.Errorf("after migrate and unserve: v1 %+v, storedVersions %v", v, got.Status.StoredVersions)
	}
}
