package action

import (
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/migrate"
)

// TestOutcome is the verdict on a finished run, one row per way a run can
// fall short, each checked as the CLI prints it (wantErr: the error line
// at most lifecycle.MaxErrorLine long), and nil for a run that did what it
// should.
func TestOutcome(t *testing.T) {
	dir := t.TempDir()
	written := filepath.Join(dir, "written.json")
	if err := os.WriteFile(written, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	absent := filepath.Join(dir, "absent.json")
	webhook := settled()
	webhook.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"},
			ClientConfig: &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{Namespace: "ops", Name: "convert"}}}}
	trimmed := migrate.Trim{Trimmed: true, Before: []string{"v1", "v2"}, After: []string{"v2"}}
	untrimmed := migrate.Trim{Before: []string{"v1", "v2"}, After: []string{"v1", "v2"}}
	client := func(mod func(*migrate.Result)) *migrate.Result {
		r := &migrate.Result{Engine: migrate.EngineClient, CRD: "widgets.example.com", StorageVersion: "v2",
			Counts: migrate.Counts{Total: 3, Rewritten: 3}, Complete: true, Trim: trimmed}
		if mod != nil {
			mod(r)
		}
		return r
	}
	server := func(phase string, mod func(*migrate.Result)) *migrate.Result {
		r := client(mod)
		r.Engine = migrate.EngineServer
		r.StorageVersionMigration = &migrate.ServerMigration{Name: "widgets-x1", Phase: phase, Message: "the controller gave up"}
		return r
	}
	for _, tc := range []struct {
		name       string
		crd        *apiextensionsv1.CustomResourceDefinition
		res        *migrate.Result
		checkpoint string
		want       []string // nil: no error
	}{
		{name: "done and trimmed", res: client(nil)},
		{name: "server engine done", res: server("Succeeded", nil)},
		{name: "server dry run, not complete: nothing was due", res: server("Pending", func(r *migrate.Result) { r.Complete, r.DryRun, r.Trim = false, true, untrimmed })},
		{name: "StorageVersionMigration failed, storedVersions untouched", res: server("Failed", func(r *migrate.Result) { r.Trim = untrimmed }),
			want: []string{"the StorageVersionMigration widgets-x1 of widgets.example.com failed: the controller gave up", "status.storedVersions was not trimmed"}},
		{name: "StorageVersionMigration failed, the controller's trim restored", res: server("Failed", func(r *migrate.Result) {
			r.Trim = migrate.Trim{Before: []string{"v1", "v2"}, After: []string{"v1", "v2"}, Restored: true}
		}), want: []string{"failed", "the controller trimmed status.storedVersions anyway; it was restored to [v1, v2]"}},
		{name: "StorageVersionMigration failed, storedVersions changed and not restored", res: server("Failed", func(r *migrate.Result) {
			r.Trim = migrate.Trim{Before: []string{"v1", "v2"}, After: []string{"v2"}, Reason: "the restore was refused"}
		}), want: []string{"status.storedVersions is [v2], not [v1, v2]: the restore was refused"}},
		{name: "objects failed", res: client(func(r *migrate.Result) {
			r.Failed, r.Rewritten, r.Trim = 1, 2, untrimmed
			r.Failures = []migrate.Failure{{Object: "default/w1", Message: "admission webhook denied the request"}}
		}), want: []string{"1 object(s) of widgets.example.com failed to migrate; status.storedVersions was not trimmed"}},
		{name: "objects failed in the conversion webhook: its repair is the way out", crd: webhook, res: client(func(r *migrate.Result) {
			r.Failed, r.Rewritten, r.Trim = 2, 1, untrimmed
			r.Failures = []migrate.Failure{{Object: "default/w1", Message: "conversion webhook for example.com/v1 failed: connection refused"}}
		}), want: []string{"2 object(s)", "the conversion webhook failed for them", "ops/convert"}},
		{name: "server engine did not finish", res: server("Running", func(r *migrate.Result) {
			r.Complete, r.Trim = false, untrimmed
			r.Trim.Reason = "the wait for the StorageVersionMigration ended"
		}), want: []string{"the migration of widgets.example.com did not finish: the wait for the StorageVersionMigration ended"}},
		{name: "interrupted, no checkpoint asked for", res: client(func(r *migrate.Result) { r.Complete, r.Trim = false, untrimmed }),
			want: []string{"the migration of widgets.example.com was interrupted; re-run it"}},
		{name: "interrupted, the checkpoint written", checkpoint: written, res: client(func(r *migrate.Result) { r.Complete, r.Trim = false, untrimmed }),
			want: []string{"re-run it with --checkpoint " + written + " to resume"}},
		{name: "interrupted before a page completed", checkpoint: absent, res: client(func(r *migrate.Result) { r.Complete, r.Trim = false, untrimmed }),
			want: []string{"no page had completed, so " + absent + " was not written: the re-run starts from the first object"}},
		{name: "dry run: the rewrite accepted, the trim refused", res: client(func(r *migrate.Result) {
			r.DryRun, r.Trim = true, untrimmed
			r.Trim.Failed, r.Trim.Reason = true, "storedVersions must contain v2"
		}), want: []string{"the API server accepts the rewrite of every object of widgets.example.com at v2, but not the trim of status.storedVersions that follows it", "storedVersions must contain v2"}},
		{name: "every object rewritten, the trim failed", res: client(func(r *migrate.Result) {
			r.Trim = untrimmed
			r.Trim.Failed, r.Trim.Reason = true, "the storage version changed during the run"
		}), want: []string{"every object of widgets.example.com is at v2, but status.storedVersions was not trimmed: the storage version changed during the run"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crd := tc.crd
			if crd == nil {
				crd = settled()
			}
			wantErr(t, Outcome(crd, tc.res, tc.checkpoint), tc.want...)
		})
	}
}
