package webhook

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// DefaultServicePort is the port of a Service reference that names none
// (apiextensions.k8s.io/v1 ServiceReference.port defaults to 443).
const DefaultServicePort int32 = 443

// ServicePort is the port of ref, DefaultServicePort when it names none.
func ServicePort(ref *apiextensionsv1.ServiceReference) int32 {
	if ref == nil || ref.Port == nil {
		return DefaultServicePort
	}
	return *ref.Port
}

// ServerName is the TLS server name the API server expects in the serving
// certificate of a Service-referenced webhook: <name>.<namespace>.svc
// (k8s.io/apiserver/pkg/util/webhook, client.go).
func ServerName(ref *apiextensionsv1.ServiceReference) string {
	return ref.Name + "." + ref.Namespace + ".svc"
}

// ParseCABundle parses a webhook clientConfig.caBundle: PEM, with at least
// one CERTIFICATE block, every such block a valid X.509 certificate. It
// returns the pool the API server would verify the serving certificate
// with and the certificates' subjects. Errors: an empty bundle (for a
// Service the API server would fall back to the system roots, which cannot
// sign a name under .svc), no PEM certificate at all, or a certificate
// that does not parse.
func ParseCABundle(data []byte) (*x509.CertPool, []string, error) {
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, nil, errors.New("the caBundle is empty: the API server would verify the webhook's certificate against the system roots, which cannot sign a <service>.<namespace>.svc name")
	}
	pool := x509.NewCertPool()
	var subjects []string
	rest := data
	for n := 1; ; n++ {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, nil, fmt.Errorf("the caBundle's PEM block %d is not a valid certificate: %v", n, err)
		}
		pool.AddCert(cert)
		subjects = append(subjects, cert.Subject.String())
	}
	if len(subjects) == 0 {
		return nil, nil, errors.New("the caBundle holds no PEM certificate")
	}
	return pool, subjects, nil
}

// Endpoints are where a Service sends the requests of one of its ports.
type Endpoints struct {
	// PortName is the Service port's name ("" when unnamed); EndpointSlice
	// ports carry the same name.
	PortName string
	// Ready are the ready endpoints' "address:port" (IPv6 bracketed), in
	// the EndpointSlices' order.
	Ready []string
	// NotReady counts endpoints serving the port whose ready condition is
	// false.
	NotReady int
}

// NoEndpointsError says why a Service has no endpoint for a webhook's
// port: the Service does not expose the port, or no EndpointSlice lists a
// ready endpoint for it.
type NoEndpointsError struct{ Reason string }

func (e *NoEndpointsError) Error() string { return e.Reason }

// SelectEndpoints returns the ready endpoints of svc's port port as the
// API server's endpoint routing picks them
// (k8s.io/apiserver/pkg/util/proxy ResolveEndpoint): the Service port whose
// port number is port, then, in the EndpointSlices labelled
// kubernetes.io/service-name=<svc>, the slice ports of the same name and
// the endpoints whose ready condition is true or unset (first address
// only). An ExternalName Service has no endpoints: it returns its external
// name and port. Errors are *NoEndpointsError.
func SelectEndpoints(svc *corev1.Service, port int32, slices []discoveryv1.EndpointSlice) (*Endpoints, error) {
	ref := svc.Namespace + "/" + svc.Name
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return &Endpoints{Ready: []string{net.JoinHostPort(svc.Spec.ExternalName, strconv.Itoa(int(port)))}}, nil
	}
	var sp *corev1.ServicePort
	var exposed []string
	for i := range svc.Spec.Ports {
		p := &svc.Spec.Ports[i]
		exposed = append(exposed, portText(p))
		if p.Port == port {
			sp = p
		}
	}
	if sp == nil {
		if len(exposed) == 0 {
			return nil, &NoEndpointsError{fmt.Sprintf("the Service %s exposes no port; the webhook calls port %d", ref, port)}
		}
		return nil, &NoEndpointsError{fmt.Sprintf("the Service %s does not expose port %d (it exposes %s)", ref, port, strings.Join(exposed, ", "))}
	}
	eps := &Endpoints{PortName: sp.Name}
	matched := false
	for _, s := range slices {
		for _, p := range s.Ports {
			if p.Port == nil || ptrString(p.Name) != sp.Name {
				continue
			}
			matched = true
			for _, e := range s.Endpoints {
				if len(e.Addresses) == 0 {
					continue
				}
				if e.Conditions.Ready != nil && !*e.Conditions.Ready {
					eps.NotReady++
					continue
				}
				eps.Ready = append(eps.Ready, net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(*p.Port))))
			}
		}
	}
	switch {
	case len(eps.Ready) > 0:
		return eps, nil
	case len(slices) == 0:
		return nil, &NoEndpointsError{fmt.Sprintf("the Service %s has no ready endpoint: no EndpointSlice (label kubernetes.io/service-name=%s) lists it; does its selector match a running pod?", ref, svc.Name)}
	case !matched:
		return nil, &NoEndpointsError{fmt.Sprintf("the Service %s has no ready endpoint for port %s: no EndpointSlice carries that port", ref, portText(sp))}
	case eps.NotReady > 0:
		return nil, &NoEndpointsError{fmt.Sprintf("the Service %s has no ready endpoint for port %s: %d endpoint(s), none ready", ref, portText(sp), eps.NotReady)}
	}
	return nil, &NoEndpointsError{fmt.Sprintf("the Service %s has no ready endpoint for port %s: its EndpointSlices list no endpoint", ref, portText(sp))}
}

// IsHeadless says whether svc has no cluster IP (clusterIP: None). The API
// server reaches a webhook through its Service's cluster IP unless it runs
// with --enable-aggregator-routing, and refuses a headless Service then.
func IsHeadless(svc *corev1.Service) bool {
	return svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ClusterIP == corev1.ClusterIPNone
}

func portText(p *corev1.ServicePort) string {
	if p.Name == "" {
		return strconv.Itoa(int(p.Port))
	}
	return fmt.Sprintf("%d (%s)", p.Port, p.Name)
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// maxReachTries is how many ready endpoints Reach tries.
const maxReachTries = 3

// Reach returns a ready endpoint ("host:port") of the Service svc that
// conv's clientConfig references whose serving certificate verifies for
// ServerName against the caBundle: the endpoint a client of its own can
// send ConversionReviews to (ConvertEndpoint). slices are the Service's
// EndpointSlices. Errors say why there is none: the caBundle holds no
// certificate, a *NoEndpointsError, a *VerificationError, or a
// *NotReachableError when the endpoints cannot be reached from this client
// (a pod network outside it). dialTimeout bounds each endpoint's
// handshake; up to three endpoints are tried.
func Reach(ctx context.Context, conv *apiextensionsv1.WebhookConversion, svc *corev1.Service, slices []discoveryv1.EndpointSlice, dialTimeout time.Duration) (string, error) {
	if conv == nil || conv.ClientConfig == nil || conv.ClientConfig.Service == nil {
		return "", errors.New("no webhook Service reference")
	}
	ref := conv.ClientConfig.Service
	roots, _, err := ParseCABundle(conv.ClientConfig.CABundle)
	if err != nil {
		return "", err
	}
	eps, err := SelectEndpoints(svc, ServicePort(ref), slices)
	if err != nil {
		return "", err
	}
	var last error
	for _, addr := range eps.Ready[:min(len(eps.Ready), maxReachTries)] {
		last = VerifyServingCert(ctx, addr, ServerName(ref), roots, dialTimeout)
		var nr *NotReachableError
		switch {
		case last == nil:
			return addr, nil
		case errors.As(last, &nr):
			// The endpoints share a network: one unreachable, all are.
			return "", last
		}
	}
	return "", last
}
