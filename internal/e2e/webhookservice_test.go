package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"

	"github.com/crdversion/kubectl-crdversion/internal/e2e/apiserver"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// routingServer starts an API server of the test's own with
// --enable-aggregator-routing=true: it then reaches a Service-referenced
// webhook through the Service's EndpointSlices (on a real cluster it dials
// the cluster IP, which kube-proxy routes; nothing routes it here). The
// package's shared server keeps the default: with the flag,
// TestCheckUpgradePairs saw CRD deletions stuck at "could not list
// instances: storage is (re)initializing" (twice; never without it).
func routingServer(t *testing.T) (clients, string) {
	t.Helper()
	s := ownServer(t, apiserver.Options{ExtraFlags: []string{"--enable-aggregator-routing=true"}})
	return clientsFor(s.Config), s.Kubeconfig
}

// hostIP is a non-loopback IPv4 address of this machine: EndpointSlice
// validation rejects loopback addresses, and the API server (with
// --enable-aggregator-routing, see routingServer) dials the endpoint it finds
// there.
func hostIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	missingPrerequisite(t, "this machine has no non-loopback IPv4 address for an EndpointSlice to point at")
	return ""
}

// serviceWebhook is a conversion webhook served on hostIP with a
// certificate for <name>.<namespace>.svc signed by its own CA, as a
// Service-backed webhook would be.
type serviceWebhook struct {
	*conversionWebhook
	namespace, name string
	ip              string
	port            int32
	ca              []byte // PEM of the CA that signed the serving certificate
}

func newServiceWebhook(t *testing.T, namespace, name string) *serviceWebhook {
	t.Helper()
	ip := hostIP(t)
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(name+"."+namespace+".svc", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	w := &serviceWebhook{conversionWebhook: &conversionWebhook{}, namespace: namespace, name: name, ip: ip,
		port: int32(ln.Addr().(*net.TCPAddr).Port), ca: secondPEMBlock(t, certPEM)}
	w.Server = httptest.NewUnstartedServer(w.handler())
	w.Listener.Close()
	w.Listener = ln
	w.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	// Handshakes refused on purpose (a wrong caBundle) are not news.
	w.Config.ErrorLog = log.New(io.Discard, "", 0)
	w.StartTLS()
	t.Cleanup(w.Close)
	return w
}

// secondPEMBlock is the CA of client-go's GenerateSelfSignedCertKey bundle
// (the serving certificate, then its CA).
func secondPEMBlock(t *testing.T, bundle []byte) []byte {
	t.Helper()
	_, rest := pem.Decode(bundle)
	ca, _ := pem.Decode(rest)
	if ca == nil {
		t.Fatal("the generated bundle has no CA")
	}
	return pem.EncodeToMemory(ca)
}

// createService creates the Service (port 443 named https, cluster IP
// allocated by the API server) and, unless ready is nil, an EndpointSlice
// with one endpoint on the webhook's address whose ready condition is
// *ready. No controller-manager runs, so nothing else writes either.
func (w *serviceWebhook) createService(t *testing.T, c clients, ready *bool) {
	t.Helper()
	ctx := context.Background()
	ensureNamespace(t, c, w.namespace)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: w.namespace, Name: w.name}, Spec: corev1.ServiceSpec{
		Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(w.port)}}}}
	if _, err := c.kube.CoreV1().Services(w.namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if ready != nil {
		w.setEndpoint(t, c, ready)
	}
}

// setEndpoint creates or replaces the Service's EndpointSlice.
func (w *serviceWebhook) setEndpoint(t *testing.T, c clients, ready *bool) {
	t.Helper()
	ctx := context.Background()
	slices := c.kube.DiscoveryV1().EndpointSlices(w.namespace)
	_ = slices.Delete(ctx, w.name, metav1.DeleteOptions{})
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: w.name, Labels: map[string]string{discoveryv1.LabelServiceName: w.name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{w.ip}, Conditions: discoveryv1.EndpointConditions{Ready: ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(w.port), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	if _, err := slices.Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (w *serviceWebhook) ref() string { return w.namespace + "/" + w.name + ":443/convert" }

func writePEM(t *testing.T, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ca.pem")
	writeFile(t, path, string(data))
	return path
}

// TestServiceWebhookPreflight: a conversion webhook behind a Service. The
// API server really calls it through the Service's EndpointSlice; the
// preflights of add-version and promote-storage (and doctor) refuse a
// missing Service, a Service without a ready endpoint or without the
// webhook's port, and a caBundle that does not verify the serving
// certificate, each naming the problem, with nothing written.
func TestServiceWebhookPreflight(t *testing.T) {
	t.Parallel()
	c, kc := routingServer(t)
	ctx := context.Background()
	hook := newServiceWebhook(t, "svc-webhook", "conversion")
	hook.createService(t, c, ptr.To(true))
	ca := writePEM(t, hook.ca)
	other := newServiceWebhook(t, "svc-webhook", "other") // its CA did not sign hook's certificate
	wrongCA := writePEM(t, other.ca)
	garbage := writePEM(t, []byte("not a certificate\n"))

	crd := advance(t, c, "svcwebhook.example.com", apiextensionsv1.NamespaceScoped, 2, lifecycle.StateS0)
	name := crd.Name
	addV2 := func(ref, caFile string, extra ...string) []string {
		return append([]string{"add-version", name, "v2", "--conversion", "Webhook", "--webhook-service", ref, "--ca-bundle-file", caFile}, extra...)
	}

	// add-version refusals, one per problem.
	refusesAt(t, c, kc, []string{name}, []string{"refusing to add-version", "the conversion webhook's Service svc-webhook/missing does not exist"},
		addV2("svc-webhook/missing:443/convert", ca)...)
	refusesAt(t, c, kc, []string{name}, []string{"refusing to add-version", "the Service svc-webhook/conversion does not expose port 8443 (it exposes 443 (https))"},
		addV2("svc-webhook/conversion:8443/convert", ca)...)
	refusesAt(t, c, kc, []string{name}, []string{"refusing to add-version", "the caBundle does not verify the serving certificate of conversion.svc-webhook.svc", "unknown authority"},
		addV2(hook.ref(), wrongCA)...)
	refusesAt(t, c, kc, []string{name}, []string{"refusing to add-version", "the caBundle holds no PEM certificate"},
		addV2(hook.ref(), garbage)...)
	hook.setEndpoint(t, c, ptr.To(false))
	refusesAt(t, c, kc, []string{name}, []string{"refusing to add-version", "the Service svc-webhook/conversion has no ready endpoint for port 443 (https): 1 endpoint(s), none ready"},
		addV2(hook.ref(), ca)...)
	if err := c.kube.DiscoveryV1().EndpointSlices(hook.namespace).Delete(ctx, hook.name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	refusesAt(t, c, kc, []string{name}, []string{"refusing to add-version", "no EndpointSlice (label kubernetes.io/service-name=conversion) lists it"},
		addV2(hook.ref(), ca)...)
	if hook.calls.Load() != 0 {
		t.Errorf("the webhook was called %d times by refused preflights", hook.calls.Load())
	}

	// Healthy: every check passes, the preflight converts a sample through
	// the endpoint, and -o json keeps the report on stderr.
	hook.setEndpoint(t, c, ptr.To(true))
	dry := succeedsAt(t, kc, addV2(hook.ref(), ca, "--dry-run=server", "-o", "json")...)
	for _, want := range []string{
		"PASS  the conversion webhook's caBundle holds 1 certificate(s)",
		"PASS  the conversion webhook's Service svc-webhook/conversion exists",
		"PASS  the Service svc-webhook/conversion has 1 ready endpoint(s) for port 443: " + net.JoinHostPort(hook.ip, strconv.Itoa(int(hook.port))),
		"PASS  the caBundle verifies the serving certificate of conversion.svc-webhook.svc",
		"PASS  the conversion webhook converted a sample CronTab to svcwebhook.example.com/v2 through the Service svc-webhook/conversion",
	} {
		if !strings.Contains(dry.stderr, want) {
			t.Errorf("add-version --dry-run=server -o json: stderr lacks %q:\n%s", want, dry.stderr)
		}
	}
	var printed apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal([]byte(dry.stdout), &printed); err != nil || printed.Name != name {
		t.Errorf("-o json printed %q (%v)", dry.stdout, err)
	}
	if hook.calls.Load() == 0 {
		t.Error("the preflight did not call the webhook through its endpoint")
	}

	succeedsAt(t, kc, addV2(hook.ref(), ca)...)
	// The API server converts through the Service: a list at v2 of objects
	// stored at v1 calls the webhook (the endpoint is found in the
	// EndpointSlice; right after the CRD changes, v2 may still be on its way).
	before := hook.calls.Load()
	waitFor(t, "a list at v2 converted through the Service", func() (bool, error) {
		list, err := resource(c, crd, "v2", "team-a").List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) > 0 && list.Items[0].GetAPIVersion() == "svcwebhook.example.com/v2", nil
	})
	if hook.calls.Load() == before {
		t.Fatal("the API server listed at v2 without calling the webhook")
	}

	// promote-storage: the CRD's webhook is broken one way at a time.
	setCA := func(pem []byte) {
		updateCRD(t, c, name, func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Conversion.Webhook.ClientConfig.CABundle = pem
		})
	}
	setCA(other.ca)
	refusesAt(t, c, kc, []string{name}, []string{"refusing to promote-storage", "the caBundle does not verify the serving certificate of conversion.svc-webhook.svc"},
		"promote-storage", name, "v2")
	d := doctorJSON(t, kc, name)
	if !hasFinding(d, lifecycle.CodeWebhookUnreachable, lifecycle.SeverityError, "the caBundle does not verify the serving certificate") {
		t.Errorf("doctor with a wrong caBundle: %+v", d.CRDs)
	}
	setCA(hook.ca)
	hook.setEndpoint(t, c, ptr.To(false))
	refusesAt(t, c, kc, []string{name}, []string{"refusing to promote-storage", "none ready"}, "promote-storage", name, "v2")
	if err := c.kube.CoreV1().Services(hook.namespace).Delete(ctx, hook.name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	refusesAt(t, c, kc, []string{name}, []string{"refusing to promote-storage", "the conversion webhook's Service svc-webhook/conversion does not exist"},
		"promote-storage", name, "v2")
	if d := doctorJSON(t, kc, name); !hasFinding(d, lifecycle.CodeWebhookUnreachable, lifecycle.SeverityError, "svc-webhook/conversion does not exist") {
		t.Errorf("doctor with no Service: %+v", d.CRDs)
	}

	hook.createService(t, c, ptr.To(true))
	// promote-storage reads every object at v2 through the API server,
	// whose Service informer needs a moment to see the new Service.
	waitFor(t, "the API server to convert through the re-created Service", func() (bool, error) {
		_, err := resource(c, crd, "v2", "team-a").List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	// The round trip back to v1 goes through the Service's endpoint from
	// this client (issue 34: it compared field names only, and a value
	// the webhook changes on the way was not seen): a webhook that zeroes
	// .spec.replicas of "changed" is refused, naming it.
	// The edit comes first: the API server's watch cache of v2 holds each
	// object as the webhook converted it when the object last changed.
	hook.edit.Store(&zeroAndRelabel)
	ensureNamespace(t, c, "default")
	changed := cronTabObject("changed", map[string]any{"cronSpec": "* * * * */5", "image": "nginx:1", "replicas": int64(5)}, nil)
	changed.SetAPIVersion(lifecycle.GroupVersion(crd, "v1"))
	changed.SetKind(crd.Spec.Names.Kind)
	if _, err := resource(c, crd, "v1", "default").Create(ctx, changed, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	calls := hook.calls.Load()
	refusesAt(t, c, kc, []string{name}, []string{"refusing to promote-storage", "1 object(s) have values at v1 that the update through v2 changes", "default/changed: .spec.replicas"},
		"promote-storage", name, "v2")
	if hook.calls.Load() == calls {
		t.Error("promote-storage refused without calling the webhook")
	}
	hook.edit.Store(nil)
	if err := resource(c, crd, "v1", "default").Delete(ctx, "changed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "changed gone from the list at v2", func() (bool, error) {
		list, err := resource(c, crd, "v2", "default").List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, nil
	})
	promoted := succeedsAt(t, kc, "promote-storage", name, "v2")
	for _, want := range []string{"PASS  the caBundle verifies the serving certificate", "sent back to v1 through the webhook by this client and compared whole"} {
		if !strings.Contains(promoted.stdout, want) {
			t.Errorf("promote-storage output lacks %q:\n%s", want, promoted.stdout)
		}
	}
	if got := getCRD(t, c, name); lifecycle.StorageVersion(got) != "v2" {
		t.Errorf("storage version %s after promote-storage, want v2", lifecycle.StorageVersion(got))
	}
	if d := doctorJSON(t, kc, name); hasFinding(d, lifecycle.CodeWebhookUnreachable, "", "") {
		t.Errorf("doctor on the healthy webhook: %+v", d.CRDs)
	}
}

// TestServiceWebhookNotReachable: an endpoint this client cannot connect to
// leaves the serving certificate unverified — a warning, not a refusal.
func TestServiceWebhookNotReachable(t *testing.T) {
	t.Parallel()
	c, kc := routingServer(t)
	hook := newServiceWebhook(t, "svc-webhook-unreached", "conversion")
	hook.Close() // nothing listens on the endpoint's port any more
	hook.createService(t, c, ptr.To(true))
	crd := advance(t, c, "svcunreached.example.com", apiextensionsv1.NamespaceScoped, 1, lifecycle.StateS0)
	r := succeedsAt(t, kc, "add-version", crd.Name, "v2", "--conversion", "Webhook", "--webhook-service", hook.ref(), "--ca-bundle-file", writePEM(t, hook.ca), "--dry-run=server")
	for _, want := range []string{
		"WARN  the serving certificate of conversion.svc-webhook-unreached.svc was not verified: the endpoint " + net.JoinHostPort(hook.ip, strconv.Itoa(int(hook.port))) + " is not reachable from this client",
		"SKIP  the conversion webhook was not called from this client: its endpoints are not reachable from here",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
}

func doctorJSON(t *testing.T, kubeconfig, name string) report.Doctor {
	t.Helper()
	r := crdversionAt(t, kubeconfig, "doctor", name, "-o", "json", "--skip-usage-check")
	var d report.Doctor
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("doctor %s: %v\n%s%s", name, err, r.stdout, r.stderr)
	}
	return d
}

// hasFinding says whether the report has a finding of code (and severity
// and message part, when not empty).
func hasFinding(d report.Doctor, code string, severity lifecycle.Severity, part string) bool {
	for _, x := range d.CRDs {
		for _, f := range x.Findings {
			if f.Code == code && (severity == "" || f.Severity == severity) && strings.Contains(f.Message, part) {
				return true
			}
		}
	}
	return false
}
