package doctor

import (
	"context"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/preflight"
)

// sampleName names the object of the ConversionReview that doctor sends.
const sampleName = "crdversion-doctor-sample"

// webhook checks a Webhook conversion's target: a URL is sent a
// ConversionReview for a minimal object, from the storage version to the
// probe version (lifecycle.ConversionProbeVersion, the list version when no
// other is served); a Service is checked as the preflights of add-version
// and promote-storage check it (preflight.Webhooks). It returns no finding
// when the target answers or there is none.
func (d *Doctor) webhook(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) []lifecycle.Finding {
	wh := lifecycle.ConversionWebhook(crd)
	if d.Webhooks == nil || wh == nil {
		return nil // Analyze reports an incomplete configuration
	}
	listed := lifecycle.ListVersion(crd)
	desired := lifecycle.ConversionProbeVersion(crd, listed)
	if desired == "" {
		desired = listed // one served version: the review still tells whether the webhook answers
	}
	probe := &preflight.Probe{Sample: preflight.SampleObject(crd, lifecycle.StorageVersion(crd), sampleName), Desired: lifecycle.GroupVersion(crd, desired)}
	cs := d.Webhooks.Check(ctx, wh, probe, "")
	if wh.ClientConfig.Service == nil {
		if failed := cs.Failed(); len(failed) > 0 {
			return []lifecycle.Finding{WebhookUnreachable(fmt.Sprintf("the conversion webhook %s does not convert: %s", *wh.ClientConfig.URL, failed[0].Message))}
		}
		return nil
	}
	return WebhookFindings(cs)
}

// WebhookUnreachable is the finding for a conversion webhook that does not
// convert, with message saying why.
func WebhookUnreachable(message string) lifecycle.Finding {
	return lifecycle.Finding{Code: lifecycle.CodeWebhookUnreachable, Severity: lifecycle.SeverityError,
		Message: message + ": reads, lists, writes and deletes of objects at a version other than the stored one fail",
		Fix:     "start or repair the conversion webhook, or, when every version shares one schema, set spec.conversion.strategy: None"}
}

// WebhookFindings turns the checks of a Service-referenced webhook into
// findings: the failed checks into one error (the API server cannot call
// the webhook), a headless Service into a warning, checks that could not
// run (no permission, endpoints not reachable from this client) into
// information.
func WebhookFindings(cs edit.Checks) []lifecycle.Finding {
	var out []lifecycle.Finding
	if failed := cs.Failed(); len(failed) > 0 {
		var msgs []string
		for _, c := range failed {
			msgs = append(msgs, c.Message)
		}
		out = append(out, WebhookUnreachable(strings.Join(msgs, "; ")))
	}
	for _, c := range cs {
		switch {
		case c.Outcome == edit.Warn && c.Name == preflight.CheckWebhookService:
			out = append(out, lifecycle.Finding{Code: lifecycle.CodeWebhookUnreachable, Severity: lifecycle.SeverityWarning, Message: c.Message,
				Fix: "give the Service a cluster IP, or run the API server with --enable-aggregator-routing"})
		case c.Outcome == edit.Skip && c.Name != preflight.CheckWebhookConverts, c.Outcome == edit.Warn:
			out = append(out, lifecycle.Finding{Code: lifecycle.CodeWebhookNotChecked, Severity: lifecycle.SeverityInfo, Message: c.Message})
		}
	}
	return out
}
