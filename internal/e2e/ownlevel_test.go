package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdversion/kubectl-crdversion/internal/fairness"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// TestMigrateInItsOwnPriorityLevel is issue 30's point 3 on the real API
// server: migrate --own-priority-level, run as a user of the documented
// migrate role (system:masters is exempt from APF), creates a FlowSchema
// and a PriorityLevelConfiguration for the run and removes them — after
// Ctrl-C as well; a run killed with SIGKILL leaves them, and the next run
// of the same migration removes them first. The run's requests land in
// that priority level (the API server's own X-Kubernetes-PF headers, in
// the report), its writes go at the fixed concurrency, and nothing is
// lost. The conversion webhook holds the interrupted runs in their
// measurement: no answer comes until the run is gone.
func TestMigrateInItsOwnPriorityLevel(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	const group = "own-level.example.com"
	hook, crd := webhookMigrationPending(t, c, group, 20)
	before := uidsOf(t, c, crd, "v2")
	user := grant(t, c, docRoles(t, group)["crdversion-migrate"], "own-level")
	name := fairness.Name(user, crd.Name)
	ctx := context.Background()
	exists := func() (fs, pl bool) {
		_, err := c.kube.FlowcontrolV1().FlowSchemas().Get(ctx, name, metav1.GetOptions{})
		_, err2 := c.kube.FlowcontrolV1().PriorityLevelConfigurations().Get(ctx, name, metav1.GetOptions{})
		return err == nil, err2 == nil
	}
	args := []string{"migrate", crd.Name, "--as", user, "--own-priority-level=3", "--cache-dir", t.TempDir(), "-o", "json"}

	// start runs the plugin in the background until the run's priority
	// level exists, while the webhook holds every conversion.
	start := func() (*exec.Cmd, *bytes.Buffer) {
		t.Helper()
		hook.hold()
		cmd := exec.Command(filepath.Join(pluginDir, "kubectl-crdversion"), args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "KUBECONFIG="+srv.Kubeconfig)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		waitFor(t, "the run's own priority level", func() (bool, error) {
			fs, pl := exists()
			return fs && pl, nil
		})
		return cmd, &out
	}
	release := hook.unhold

	// Ctrl-C: the run stops, and removes both on its way out.
	cmd, out := start()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	release()
	if fs, pl := exists(); err == nil || fs || pl {
		t.Fatalf("after Ctrl-C: exit %v, FlowSchema left %v, PriorityLevelConfiguration left %v\n%s", err, fs, pl, out)
	}

	// SIGKILL: nothing runs on the way out, both stay behind.
	cmd, _ = start()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	release()
	if fs, pl := exists(); !fs || !pl {
		t.Fatalf("a killed run left FlowSchema %v, PriorityLevelConfiguration %v; the test needs both", fs, pl)
	}

	// A run without the flag lands in the leftover, and says so (a
	// server dry run: nothing written).
	r := binary(t, []string{"KUBECONFIG=" + srv.Kubeconfig}, "migrate", crd.Name, "--as", user, "--dry-run=server", "--cache-dir", t.TempDir())
	if r.code != 0 || !strings.Contains(r.stdout, "the run's requests landed in "+name+", the priority level of a run with --own-priority-level that did not remove it") {
		t.Errorf("a run without the flag in the leftover level: exit %d, want a warning naming %s\n%s%s", r.code, name, r.stdout, r.stderr)
	}

	// The re-run removes them first, runs in its own, and removes it.
	r = binary(t, []string{"KUBECONFIG=" + srv.Kubeconfig}, args...)
	var m report.Migration
	if jerr := json.Unmarshal([]byte(r.stdout), &m); r.code != 0 || jerr != nil {
		t.Fatalf("re-run: exit %d (%v)\n%s\n%s", r.code, jerr, r.stdout, r.stderr)
	}
	own := m.OwnPriorityLevel
	if own == nil || own.Name != name || own.User != user || own.Shares != 3 || !own.LeftoverRemoved || !own.Removed {
		t.Errorf("ownPriorityLevel %+v, want %s of %s, 3 shares, the leftover removed first and itself after", own, name, user)
	}
	if p := m.PriorityAndFairness; p == nil || p.PriorityLevel != name || p.FlowSchema != name {
		t.Errorf("the run's requests landed in %+v, want priority level and flow schema %s", p, name)
	}
	if cc := m.Concurrency; cc == nil || cc.Mode != "fixed" {
		t.Errorf("concurrency %+v, want fixed: the priority level, not a latency budget, spares the others", cc)
	}
	if m.Rewritten+m.Current != m.Total || m.Failed != 0 || !m.Trim.Trimmed {
		t.Errorf("the migration in its own level: %+v", m.Counts)
	}
	if fs, pl := exists(); fs || pl {
		t.Errorf("after the run: FlowSchema left %v, PriorityLevelConfiguration left %v", fs, pl)
	}
	if list, err := c.kube.FlowcontrolV1().FlowSchemas().List(ctx, metav1.ListOptions{LabelSelector: fairness.ManagedByLabel + "=" + fairness.ManagedBy}); err != nil || len(list.Items) != 0 {
		t.Errorf("FlowSchemas managed by the plugin left: %v %v", err, list)
	}
	sameObjects(t, before, uidsOf(t, c, crd, "v2"))

	// system:masters: refused before anything is created.
	r = binary(t, []string{"KUBECONFIG=" + srv.Kubeconfig}, "migrate", crd.Name, "--own-priority-level", "--cache-dir", t.TempDir())
	if r.code == 0 || !strings.Contains(r.stderr, "system:masters, which API Priority and Fairness exempts") {
		t.Errorf("as system:masters: exit %d, want a refusal naming the exemption\n%s%s", r.code, r.stdout, r.stderr)
	}
}
