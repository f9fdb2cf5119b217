package doctor

import (
	"reflect"
	"testing"

	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/preflight"
)

// TestWebhookFindings: doctor reports the checks of a Service-referenced
// webhook as findings: every failure in one error, a headless Service as a
// warning, what could not be checked as information.
func TestWebhookFindings(t *testing.T) {
	type f struct {
		code     string
		severity lifecycle.Severity
	}
	for _, tc := range []struct {
		name   string
		checks edit.Checks
		want   []f
	}{
		{"all pass", edit.Checks{
			{Name: preflight.CheckWebhookCABundle, Outcome: edit.Pass}, {Name: preflight.CheckWebhookService, Outcome: edit.Pass},
			{Name: preflight.CheckWebhookEndpoints, Outcome: edit.Pass}, {Name: preflight.CheckWebhookServingCert, Outcome: edit.Pass},
			{Name: preflight.CheckWebhookConverts, Outcome: edit.Pass}}, nil},
		{"two failures, one error", edit.Checks{
			{Name: preflight.CheckWebhookCABundle, Outcome: edit.Fail, Message: "the caBundle is empty"},
			{Name: preflight.CheckWebhookService, Outcome: edit.Fail, Message: "no Service"},
			{Name: preflight.CheckWebhookConverts, Outcome: edit.Skip}},
			[]f{{lifecycle.CodeWebhookUnreachable, lifecycle.SeverityError}}},
		{"headless, not reachable from here", edit.Checks{
			{Name: preflight.CheckWebhookService, Outcome: edit.Warn}, {Name: preflight.CheckWebhookEndpoints, Outcome: edit.Pass},
			{Name: preflight.CheckWebhookServingCert, Outcome: edit.Warn}, {Name: preflight.CheckWebhookConverts, Outcome: edit.Skip}},
			[]f{{lifecycle.CodeWebhookUnreachable, lifecycle.SeverityWarning}, {lifecycle.CodeWebhookNotChecked, lifecycle.SeverityInfo}}},
		{"no permission", edit.Checks{
			{Name: preflight.CheckWebhookService, Outcome: edit.Skip}, {Name: preflight.CheckWebhookConverts, Outcome: edit.Skip}},
			[]f{{lifecycle.CodeWebhookNotChecked, lifecycle.SeverityInfo}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []f
			for _, x := range WebhookFindings(tc.checks) {
				got = append(got, f{x.Code, x.Severity})
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	fs := WebhookFindings(edit.Checks{{Name: preflight.CheckWebhookCABundle, Outcome: edit.Fail, Message: "A"}, {Name: preflight.CheckWebhookService, Outcome: edit.Fail, Message: "B"}})
	if len(fs) != 1 || fs[0].Message[:4] != "A; B" {
		t.Errorf("failures joined: %+v", fs)
	}
}
