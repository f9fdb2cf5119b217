package webhook

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// tlsServer serves a converting webhook on loopback with a certificate for
// host; it returns the server and the CA that signed the certificate.
func tlsServer(t *testing.T, host string) (*httptest.Server, []byte) {
	t.Helper()
	certPEM, keyPEM := testCerts(t, host)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/convert" {
			http.NotFound(w, r)
			return
		}
		var review apiextensionsv1.ConversionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
		for _, o := range review.Request.Objects {
			var obj map[string]any
			_ = json.Unmarshal(o.Raw, &obj)
			obj["apiVersion"] = review.Request.DesiredAPIVersion
			raw, _ := json.Marshal(obj)
			resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: raw})
		}
		review.Request, review.Response = nil, resp
		_ = json.NewEncoder(w).Encode(review)
	}))
	s.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s, caOf(t, certPEM)
}

func TestVerifyServingCert(t *testing.T) {
	good, ca := tlsServer(t, "conv.ns.svc")
	_, otherCA := tlsServer(t, "conv.ns.svc")
	pool, _, err := ParseCABundle(ca)
	if err != nil {
		t.Fatal(err)
	}
	otherPool, _, _ := ParseCABundle(otherCA)
	addr := good.Listener.Addr().String()

	plain := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(plain.Close)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()

	var ve *VerificationError
	var nr *NotReachableError
	ctx := t.Context()
	if err := VerifyServingCert(ctx, addr, "conv.ns.svc", pool, 5*time.Second); err != nil {
		t.Errorf("the signing CA: %v", err)
	}
	if err := VerifyServingCert(ctx, addr, "conv.ns.svc", otherPool, 5*time.Second); !errors.As(err, &ve) || !strings.Contains(err.Error(), "unknown authority") {
		t.Errorf("another CA: %v, want a *VerificationError (unknown authority)", err)
	}
	if err := VerifyServingCert(ctx, addr, "other.ns.svc", pool, 5*time.Second); !errors.As(err, &ve) || !strings.Contains(err.Error(), "other.ns.svc") {
		t.Errorf("another server name: %v, want a *VerificationError", err)
	}
	if err := VerifyServingCert(ctx, closedAddr, "conv.ns.svc", pool, 5*time.Second); !errors.As(err, &nr) {
		t.Errorf("nothing listening: %v, want a *NotReachableError", err)
	}
	err = VerifyServingCert(ctx, plain.Listener.Addr().String(), "conv.ns.svc", pool, 5*time.Second)
	if err == nil || errors.As(err, &ve) || errors.As(err, &nr) {
		t.Errorf("plain HTTP endpoint: %v, want a handshake error", err)
	}
}

func TestVerifyEndpoint(t *testing.T) {
	s, ca := tlsServer(t, "conv.ns.svc")
	conv := &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"}, ClientConfig: &apiextensionsv1.WebhookClientConfig{
		CABundle: ca, Service: &apiextensionsv1.ServiceReference{Namespace: "ns", Name: "conv", Path: ptr.To("/convert")}}}
	sample := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "g.example.com/v1", "kind": "K", "metadata": map[string]any{"name": "x"}}}
	addr := s.Listener.Addr().String()
	if err := VerifyEndpoint(t.Context(), conv, addr, sample, "g.example.com/v2", 5*time.Second); err != nil {
		t.Errorf("converting endpoint: %v", err)
	}
	conv.ClientConfig.Service.Path = ptr.To("/elsewhere")
	if err := VerifyEndpoint(t.Context(), conv, addr, sample, "g.example.com/v2", 5*time.Second); err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("wrong path: %v, want HTTP 404", err)
	}
	conv.ClientConfig.Service.Name = "other"
	if err := VerifyEndpoint(t.Context(), conv, addr, sample, "g.example.com/v2", 5*time.Second); err == nil || !strings.Contains(err.Error(), "other.ns.svc") {
		t.Errorf("certificate for another Service: %v, want a name mismatch", err)
	}
	if err := Verify(t.Context(), conv, sample, "g.example.com/v2", time.Second); !errors.Is(err, ErrServiceReference) {
		t.Errorf("Verify of a Service reference: %v", err)
	}
}
