package cli

import (
	"reflect"
	"testing"

	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
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
			{Name: checkWebhookCABundle, Outcome: edit.Pass}, {Name: checkWebhookService, Outcome: edit.Pass},
			{Name: checkWebhookEndpoints, Outcome: edit.Pass}, {Name: checkWebhookServingCert, Outcome: edit.Pass},
			{Name: checkWebhookConverts, Outcome: edit.Pass}}, nil},
		{"two failures, one error", edit.Checks{
			{Name: checkWebhookCABundle, Outcome: edit.Fail, Message: "the caBundle is empty"},
			{Name: checkWebhookService, Outcome: edit.Fail, Message: "no Service"},
			{Name: checkWebhookConverts, Outcome: edit.Skip}},
			[]f{{lifecycle.CodeWebhookUnreachable, lifecycle.SeverityError}}},
		{"headless, not reachable from here", edit.Checks{
			{Name: checkWebhookService, Outcome: edit.Warn}, {Name: checkWebhookEndpoints, Outcome: edit.Pass},
			{Name: checkWebhookServingCert, Outcome: edit.Warn}, {Name: checkWebhookConverts, Outcome: edit.Skip}},
			[]f{{lifecycle.CodeWebhookUnreachable, lifecycle.SeverityWarning}, {lifecycle.CodeWebhookNotChecked, lifecycle.SeverityInfo}}},
		{"no permission", edit.Checks{
			{Name: checkWebhookService, Outcome: edit.Skip}, {Name: checkWebhookConverts, Outcome: edit.Skip}},
			[]f{{lifecycle.CodeWebhookNotChecked, lifecycle.SeverityInfo}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []f
			for _, x := range webhookFindings(tc.checks) {
				got = append(got, f{x.Code, x.Severity})
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	fs := webhookFindings(edit.Checks{{Name: checkWebhookCABundle, Outcome: edit.Fail, Message: "A"}, {Name: checkWebhookService, Outcome: edit.Fail, Message: "B"}})
	if len(fs) != 1 || fs[0].Message[:4] != "A; B" {
		t.Errorf("failures joined: %+v", fs)
	}
}
