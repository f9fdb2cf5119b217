package webhook

import (
	"encoding/pem"
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
)

// testCerts returns a serving certificate for host followed by its CA, and
// the key (client-go's GenerateSelfSignedCertKey).
func testCerts(t *testing.T, host string) (certPEM, keyPEM []byte) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

// caOf is the CA (second PEM block) of testCerts' certificate bundle.
func caOf(t *testing.T, certPEM []byte) []byte {
	t.Helper()
	_, rest := pem.Decode(certPEM)
	ca, _ := pem.Decode(rest)
	if ca == nil {
		t.Fatal("no CA block")
	}
	return pem.EncodeToMemory(ca)
}

func TestParseCABundle(t *testing.T) {
	certs, _ := testCerts(t, "conv.ns.svc")
	ca := caOf(t, certs)
	bad := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not DER")})
	key := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: []byte("x")})
	for _, tc := range []struct {
		name    string
		data    []byte
		certs   int
		wantErr string
	}{
		{"one CA", ca, 1, ""},
		{"leaf and CA", certs, 2, ""},
		{"CA after another PEM block", append(append([]byte{}, key...), ca...), 1, ""},
		{"empty", nil, 0, "the caBundle is empty"},
		{"blank", []byte("  \n"), 0, "the caBundle is empty"},
		{"not PEM", []byte("hello"), 0, "holds no PEM certificate"},
		{"only a key", key, 0, "holds no PEM certificate"},
		{"garbage certificate", append(append([]byte{}, ca...), bad...), 0, "PEM block 2 is not a valid certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool, subjects, err := ParseCABundle(tc.data)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || pool == nil || len(subjects) != tc.certs {
				t.Fatalf("pool %v, subjects %v, err %v; want %d certificates", pool != nil, subjects, err, tc.certs)
			}
		})
	}
}

func svcRef(ns, name string, port *int32) *apiextensionsv1.ServiceReference {
	return &apiextensionsv1.ServiceReference{Namespace: ns, Name: name, Port: port}
}

func TestServicePortAndServerName(t *testing.T) {
	if p := ServicePort(nil); p != 443 {
		t.Errorf("ServicePort(nil) = %d", p)
	}
	if got := ServerName(svcRef("ns", "conv", nil)); got != "conv.ns.svc" {
		t.Errorf("ServerName = %q", got)
	}
	if p := ServicePort(svcRef("ns", "conv", ptr.To[int32](8443))); p != 8443 {
		t.Errorf("ServicePort = %d", p)
	}
}

func TestSelectEndpoints(t *testing.T) {
	svc := func(ports ...corev1.ServicePort) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "conv"}, Spec: corev1.ServiceSpec{Ports: ports}}
	}
	https := corev1.ServicePort{Name: "https", Port: 443}
	unnamed := corev1.ServicePort{Port: 443}
	ep := func(ready *bool, addrs ...string) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: addrs, Conditions: discoveryv1.EndpointConditions{Ready: ready}}
	}
	slice := func(portName string, port int32, eps ...discoveryv1.Endpoint) discoveryv1.EndpointSlice {
		var name *string
		if portName != "" {
			name = &portName
		}
		return discoveryv1.EndpointSlice{Ports: []discoveryv1.EndpointPort{{Name: name, Port: &port}}, Endpoints: eps}
	}
	yes, no := ptr.To(true), ptr.To(false)
	for _, tc := range []struct {
		name    string
		svc     *corev1.Service
		port    int32
		slices  []discoveryv1.EndpointSlice
		ready   []string
		wantErr string
	}{
		{name: "ready endpoint", svc: svc(https), port: 443,
			slices: []discoveryv1.EndpointSlice{slice("https", 8443, ep(yes, "10.0.0.5"))}, ready: []string{"10.0.0.5:8443"}},
		{name: "ready unset counts as ready; not ready skipped; first address only", svc: svc(https), port: 443,
			slices: []discoveryv1.EndpointSlice{slice("https", 8443, ep(nil, "10.0.0.5", "10.0.0.99"), ep(no, "10.0.0.6"))}, ready: []string{"10.0.0.5:8443"}},
		{name: "unnamed port matches unnamed slice port", svc: svc(unnamed), port: 443,
			slices: []discoveryv1.EndpointSlice{slice("", 9443, ep(yes, "fd00::5"))}, ready: []string{"[fd00::5]:9443"}},
		{name: "several slices", svc: svc(https), port: 443,
			slices: []discoveryv1.EndpointSlice{slice("https", 8443, ep(yes, "10.0.0.5")), slice("https", 8443, ep(yes, "10.0.0.7"))}, ready: []string{"10.0.0.5:8443", "10.0.0.7:8443"}},
		{name: "custom port", svc: svc(https, corev1.ServicePort{Name: "conv", Port: 8443}), port: 8443,
			slices: []discoveryv1.EndpointSlice{slice("https", 1, ep(yes, "10.0.0.1")), slice("conv", 2, ep(yes, "10.0.0.2"))}, ready: []string{"10.0.0.2:2"}},
		{name: "port not exposed", svc: svc(corev1.ServicePort{Name: "http", Port: 80}), port: 443,
			wantErr: "the Service ns/conv does not expose port 443 (it exposes 80 (http))"},
		{name: "no port at all", svc: svc(), port: 443, wantErr: "exposes no port"},
		{name: "no EndpointSlice", svc: svc(https), port: 443, wantErr: "no EndpointSlice (label kubernetes.io/service-name=conv) lists it"},
		{name: "slices for another port name", svc: svc(https), port: 443,
			slices: []discoveryv1.EndpointSlice{slice("metrics", 9000, ep(yes, "10.0.0.5"))}, wantErr: "no EndpointSlice carries that port"},
		{name: "none ready", svc: svc(https), port: 443,
			slices: []discoveryv1.EndpointSlice{slice("https", 8443, ep(no, "10.0.0.5"), ep(no, "10.0.0.6"))}, wantErr: "2 endpoint(s), none ready"},
		{name: "empty slice", svc: svc(https), port: 443,
			slices: []discoveryv1.EndpointSlice{slice("https", 8443)}, wantErr: "its EndpointSlices list no endpoint"},
		{name: "ExternalName", svc: &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "conv"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "hooks.example.com"}}, port: 443, ready: []string{"hooks.example.com:443"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SelectEndpoints(tc.svc, tc.port, tc.slices)
			if tc.wantErr != "" {
				var ne *NoEndpointsError
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &ne) {
					t.Fatalf("err %v, want *NoEndpointsError with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Ready, tc.ready) {
				t.Errorf("ready %v, want %v", got.Ready, tc.ready)
			}
		})
	}
}

func TestIsHeadless(t *testing.T) {
	for _, tc := range []struct {
		spec corev1.ServiceSpec
		want bool
	}{
		{corev1.ServiceSpec{ClusterIP: "None"}, true},
		{corev1.ServiceSpec{ClusterIP: "10.0.0.1"}, false},
		{corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ClusterIP: "None"}, false},
	} {
		if got := IsHeadless(&corev1.Service{Spec: tc.spec}); got != tc.want {
			t.Errorf("IsHeadless(%+v) = %v", tc.spec, got)
		}
	}
}
