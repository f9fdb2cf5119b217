package cli

import (
	"io"
	"strings"
	"testing"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/migrate"
	"github.com/crdversion/kubectl-crdversion/internal/view"
)

// TestMigrationHeadline: "Migrated" only for a run that listed every object
// with none failed; otherwise Failed when an object failed (a list that
// stopped at unreadable objects included), else Interrupted; a resume whose
// checkpoint expired says it restarted (B8, issue 17 Build 8).
func TestMigrationHeadline(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func(r *migrate.Result)
		dryRun lifecycle.DryRun
		want   string
	}{
		{"done", func(r *migrate.Result) { r.Failed, r.Failures = 0, nil }, lifecycle.DryRunNone, "Migrated crontabs"},
		{"failed", func(*migrate.Result) {}, lifecycle.DryRunNone, "Failed crontabs"},
		{"interrupted", func(r *migrate.Result) { r.Complete, r.Failed, r.Failures = false, 0, nil }, lifecycle.DryRunNone, "Interrupted crontabs"},
		{"list stopped at unreadable objects", func(r *migrate.Result) { r.Complete = false }, lifecycle.DryRunNone, "Failed crontabs"},
		{"interrupted dry run", func(r *migrate.Result) { r.Complete = false }, lifecycle.DryRunServer, "Interrupted: Checked (server dry run, nothing written) crontabs"},
		{"resumed", func(r *migrate.Result) { r.Failed, r.Failures, r.Resumed = 0, nil, true }, lifecycle.DryRunNone, "Migrated, resuming from the checkpoint, crontabs"},
		{"restarted", func(r *migrate.Result) { r.Failed, r.Failures, r.Resumed, r.Restarted = 0, nil, true, true }, lifecycle.DryRunNone,
			"Migrated, restarted from the first object (the checkpoint's continue token had expired), crontabs"},
	} {
		r := migrationFixture(migrate.EngineClient)
		tc.edit(r)
		got := written(t, func(w io.Writer) error { view.Migration(w, r, tc.dryRun); return nil })
		if !strings.HasPrefix(got, tc.want+".stable.example.com at v2") {
			t.Errorf("%s: headline %q, want it to start %q", tc.name, strings.SplitN(got, "\n", 2)[0], tc.want)
		}
	}
}
