// Package preflight holds the checks that need the cluster before a
// lifecycle step writes: a CRD's conversion webhook called from the client as
// the API server calls it, and the mapping of those checks to doctor's
// findings. The rules that need only the CRD are in package edit; each
// check here reads the cluster through a narrow interface.
package preflight

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/webhook"
)

// Names of the checks of a Service-referenced conversion webhook.
const (
	CheckWebhookCABundle    = "WebhookCABundle"
	CheckWebhookService     = "WebhookService"
	CheckWebhookEndpoints   = "WebhookEndpoints"
	CheckWebhookServingCert = "WebhookServingCert"
	CheckWebhookConverts    = "WebhookConverts"
)

// reachTimeout bounds the TLS dial to one endpoint: long enough for a
// handshake across a cluster network, short enough that a pod IP the
// client cannot route to costs little.
const reachTimeout = 3 * time.Second

// maxCertChecks is how many ready endpoints have their serving certificate
// checked (the API server picks one at random per call).
const maxCertChecks = 3

// Probe is the ConversionReview a webhook check sends: Sample converted
// to Desired (group/version).
type Probe struct {
	Sample  *unstructured.Unstructured
	Desired string
}

// ServiceReader reads a Service and its EndpointSlices (see
// cluster.Client.WebhookService).
type ServiceReader interface {
	WebhookService(ctx context.Context, namespace, name string) (*corev1.Service, []discoveryv1.EndpointSlice, error)
}

// Webhooks checks conversion webhooks from the client, the way the API
// server calls them, remembering for one command run which endpoints it
// could not reach (doctor --all meets the same Service for several CRDs).
// It is not safe for concurrent use.
type Webhooks struct {
	services ServiceReader
	timeout  time.Duration // of the ConversionReview probe
	// unreachable maps an endpoint address to why it could not be reached.
	unreachable map[string]error
}

// NewWebhooks returns a checker that reads Services through services
// (nil when the cluster cannot be read: Service webhooks are then
// skipped) and waits at most timeout for a ConversionReview's answer.
func NewWebhooks(services ServiceReader, timeout time.Duration) *Webhooks {
	return &Webhooks{services: services, timeout: timeout, unreachable: map[string]error{}}
}

// Check is the preflight of a Webhook conversion conv with the
// ConversionReview probe (nil: no review is sent): for a URL, the webhook
// converts probe.Sample; for a Service, see Service. skipped, when not
// empty, says why Services cannot be read (manifest mode without a
// cluster): a Service webhook is then reported as not checked.
func (c *Webhooks) Check(ctx context.Context, conv *apiextensionsv1.WebhookConversion, probe *Probe, skipped string) edit.Checks {
	if conv == nil || conv.ClientConfig == nil {
		return nil // edit's configuration check reports an incomplete webhook
	}
	if conv.ClientConfig.Service != nil {
		if c.services == nil || skipped != "" {
			return edit.Checks{{Name: CheckWebhookService, Outcome: edit.Skip,
				Message: "the conversion webhook's Service was not checked: " + skipped}}
		}
		return c.Service(ctx, conv, probe)
	}
	if probe == nil {
		return nil
	}
	check := edit.Check{Name: CheckWebhookConverts}
	if err := webhook.Verify(ctx, conv, probe.Sample, probe.Desired, c.timeout); err != nil {
		check.Outcome, check.Message = edit.Fail, err.Error()
	} else {
		check.Outcome, check.Message = edit.Pass, fmt.Sprintf("the conversion webhook converted a sample %s to %s", probe.Sample.GetKind(), probe.Desired)
	}
	return edit.Checks{check}
}

// Service is the preflight of conv, whose clientConfig names a Service:
// the caBundle holds certificates; the Service exists and exposes the
// reference's port (default 443) with at least one ready endpoint; the
// serving certificate of up to maxCertChecks ready endpoints verifies for
// <name>.<namespace>.svc against the caBundle (a warning when no endpoint
// is reachable from this client); and, with probe, the webhook converts
// probe.Sample through the first verified endpoint. A check that could not
// run for lack of permission is Skip. Fail checks mean the API server's
// calls to the webhook fail.
func (c *Webhooks) Service(ctx context.Context, conv *apiextensionsv1.WebhookConversion, probe *Probe) edit.Checks {
	ref := conv.ClientConfig.Service
	name := ref.Namespace + "/" + ref.Name
	port := webhook.ServicePort(ref)
	var cs edit.Checks
	add := func(check string, o edit.Outcome, format string, args ...any) {
		cs = append(cs, edit.Check{Name: check, Outcome: o, Message: fmt.Sprintf(format, args...)})
	}
	notCalled := func(why string) edit.Checks {
		if probe != nil {
			add(CheckWebhookConverts, edit.Skip, "the conversion webhook was not called from this client: %s", why)
		}
		return cs
	}

	roots, subjects, caErr := webhook.ParseCABundle(conv.ClientConfig.CABundle)
	if caErr != nil {
		add(CheckWebhookCABundle, edit.Fail, "%v", caErr)
	} else {
		add(CheckWebhookCABundle, edit.Pass, "the conversion webhook's caBundle holds %d certificate(s): %s", len(subjects), strings.Join(subjects, "; "))
	}

	svc, slices, err := c.services.WebhookService(ctx, ref.Namespace, ref.Name)
	switch {
	case svc == nil && apierrors.IsNotFound(err):
		add(CheckWebhookService, edit.Fail, "the conversion webhook's Service %s does not exist", name)
		return notCalled("no Service")
	case svc == nil:
		add(CheckWebhookService, edit.Skip, "the conversion webhook's Service %s was not checked: %v", name, err)
		return notCalled("the Service was not read")
	case webhook.IsHeadless(svc):
		add(CheckWebhookService, edit.Warn, "the conversion webhook's Service %s is headless (clusterIP: None): an API server without --enable-aggregator-routing cannot call it", name)
	default:
		add(CheckWebhookService, edit.Pass, "the conversion webhook's Service %s exists", name)
	}
	if err != nil {
		add(CheckWebhookEndpoints, edit.Skip, "the endpoints of the conversion webhook's Service %s were not checked: %v", name, err)
		return notCalled("the Service's EndpointSlices were not read")
	}
	eps, err := webhook.SelectEndpoints(svc, port, slices)
	if err != nil {
		add(CheckWebhookEndpoints, edit.Fail, "%v", err)
		return notCalled("no ready endpoint")
	}
	add(CheckWebhookEndpoints, edit.Pass, "the Service %s has %d ready endpoint(s) for port %d: %s", name, len(eps.Ready), port, lifecycle.Some(eps.Ready, 5))
	if caErr != nil {
		return notCalled("the caBundle is not usable")
	}

	verified, why := c.servingCerts(ctx, ref, eps.Ready, roots, &cs)
	if verified == "" {
		return notCalled(why)
	}
	if probe != nil {
		if err := webhook.VerifyEndpoint(ctx, conv, verified, probe.Sample, probe.Desired, c.timeout); err != nil {
			add(CheckWebhookConverts, edit.Fail, "through the Service %s endpoint %s: %v", name, verified, err)
		} else {
			add(CheckWebhookConverts, edit.Pass, "the conversion webhook converted a sample %s to %s through the Service %s endpoint %s", probe.Sample.GetKind(), probe.Desired, name, verified)
		}
	}
	return cs
}

// servingCerts adds the WebhookServingCert check for up to maxCertChecks
// of ready and returns an endpoint whose certificate verified, or "" and
// why none did.
func (c *Webhooks) servingCerts(ctx context.Context, ref *apiextensionsv1.ServiceReference, ready []string, roots *x509.CertPool, cs *edit.Checks) (string, string) {
	serverName := webhook.ServerName(ref)
	var verified, unreached []string
	var notVerified []string
loop:
	for _, addr := range ready[:min(len(ready), maxCertChecks)] {
		err, seen := c.unreachable[addr]
		if !seen {
			err = webhook.VerifyServingCert(ctx, addr, serverName, roots, min(reachTimeout, c.timeout))
		}
		var nr *webhook.NotReachableError
		var ve *webhook.VerificationError
		switch {
		case err == nil:
			verified = append(verified, addr)
		case errors.As(err, &ve):
			*cs = append(*cs, edit.Check{Name: CheckWebhookServingCert, Outcome: edit.Fail, Message: ve.Error()})
			return "", "the serving certificate does not verify"
		case errors.As(err, &nr):
			c.unreachable[addr] = err
			unreached = append(unreached, addr)
			notVerified = append(notVerified, err.Error())
			// The endpoints share a network: when one cannot be reached,
			// the others will not be either; do not wait for each.
			break loop
		default:
			notVerified = append(notVerified, err.Error())
		}
	}
	if len(verified) > 0 {
		*cs = append(*cs, edit.Check{Name: CheckWebhookServingCert, Outcome: edit.Pass,
			Message: fmt.Sprintf("the caBundle verifies the serving certificate of %s at %s", serverName, strings.Join(verified, ", "))})
		return verified[0], ""
	}
	*cs = append(*cs, edit.Check{Name: CheckWebhookServingCert, Outcome: edit.Warn,
		Message: fmt.Sprintf("the serving certificate of %s was not verified: %s", serverName, strings.Join(notVerified, "; "))})
	if len(unreached) > 0 {
		return "", "its endpoints are not reachable from here"
	}
	return "", "no endpoint completed a TLS handshake"
}

// SampleObject is a minimal object of crd at version, named name, for a
// ConversionReview probe.
func SampleObject(crd *apiextensionsv1.CustomResourceDefinition, version, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": lifecycle.GroupVersion(crd, version),
		"kind":       crd.Spec.Names.Kind,
		"metadata":   map[string]any{"name": name},
	}}
}
