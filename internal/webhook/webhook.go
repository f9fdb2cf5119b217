// Package webhook checks a CRD's conversion webhook from the client, the way
// the API server calls it: it sends a ConversionReview (apiextensions.k8s.io/v1,
// or v1beta1 when that is the only version the webhook accepts) for a sample
// object and checks the answer
// (https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definition-versioning/#webhook-request-and-response).
package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// ErrServiceReference is returned by Verify for webhooks behind a Service
// reference, which have no URL: resolve an endpoint (SelectEndpoints) and
// call VerifyEndpoint instead.
var ErrServiceReference = fmt.Errorf("the webhook is behind a Service reference: it is called through one of the Service's endpoints")

// Verify sends a ConversionReview converting sample to desiredAPIVersion
// (group/version) to the webhook of conv and checks that it answers Success
// with one object at desiredAPIVersion. It returns nil when the webhook
// converts correctly, ErrServiceReference for Service references, and otherwise
// an error that says what went wrong. timeout bounds the whole call.
func Verify(ctx context.Context, conv *apiextensionsv1.WebhookConversion, sample *unstructured.Unstructured, desiredAPIVersion string, timeout time.Duration) error {
	if conv == nil || conv.ClientConfig == nil {
		return fmt.Errorf("no webhook client config")
	}
	cc := conv.ClientConfig
	if cc.URL == nil {
		return ErrServiceReference
	}
	return verify(ctx, conv, *cc.URL, "", sample, desiredAPIVersion, timeout)
}

// VerifyEndpoint is Verify for a webhook behind a Service reference, sent
// to one of the Service's endpoints (address is "host:port", from
// SelectEndpoints) at the reference's path, with the TLS server name the API
// server uses (ServerName) and the caBundle as roots.
func VerifyEndpoint(ctx context.Context, conv *apiextensionsv1.WebhookConversion, address string, sample *unstructured.Unstructured, desiredAPIVersion string, timeout time.Duration) error {
	if conv == nil || conv.ClientConfig == nil || conv.ClientConfig.Service == nil {
		return fmt.Errorf("no webhook Service reference")
	}
	ref := conv.ClientConfig.Service
	return verify(ctx, conv, "https://"+address+ptrString(ref.Path), ServerName(ref), sample, desiredAPIVersion, timeout)
}

func verify(ctx context.Context, conv *apiextensionsv1.WebhookConversion, url, serverName string, sample *unstructured.Unstructured, desiredAPIVersion string, timeout time.Duration) error {
	_, err := review(ctx, conv, url, serverName, []*unstructured.Unstructured{sample}, desiredAPIVersion, timeout)
	return err
}

// Convert sends objects to the conversion webhook of conv at its URL in
// one ConversionReview converting them to desiredAPIVersion (group/version)
// and returns the webhook's answer, in order: what the API server would
// take from the webhook before it prunes and defaults the objects with the
// schema of desiredAPIVersion. ErrServiceReference for a webhook behind a
// Service reference; an error that says what went wrong when the webhook
// cannot be called or refuses, or answers with another count of objects,
// another uid or another apiVersion. timeout bounds the call.
func Convert(ctx context.Context, conv *apiextensionsv1.WebhookConversion, objects []*unstructured.Unstructured, desiredAPIVersion string, timeout time.Duration) ([]*unstructured.Unstructured, error) {
	if conv == nil || conv.ClientConfig == nil {
		return nil, fmt.Errorf("no webhook client config")
	}
	if conv.ClientConfig.URL == nil {
		return nil, ErrServiceReference
	}
	return review(ctx, conv, *conv.ClientConfig.URL, "", objects, desiredAPIVersion, timeout)
}

// ConvertEndpoint is Convert for a webhook behind a Service reference,
// sent to one of the Service's endpoints (address is "host:port", from
// Reach) at the reference's path, with the TLS server name the API server
// uses (ServerName) and the caBundle as roots.
func ConvertEndpoint(ctx context.Context, conv *apiextensionsv1.WebhookConversion, address string, objects []*unstructured.Unstructured, desiredAPIVersion string, timeout time.Duration) ([]*unstructured.Unstructured, error) {
	if conv == nil || conv.ClientConfig == nil || conv.ClientConfig.Service == nil {
		return nil, fmt.Errorf("no webhook Service reference")
	}
	ref := conv.ClientConfig.Service
	return review(ctx, conv, "https://"+address+ptrString(ref.Path), ServerName(ref), objects, desiredAPIVersion, timeout)
}

func review(ctx context.Context, conv *apiextensionsv1.WebhookConversion, url, serverName string, objects []*unstructured.Unstructured, desiredAPIVersion string, timeout time.Duration) ([]*unstructured.Unstructured, error) {
	cc := conv.ClientConfig
	reviewVersion := ""
	for _, v := range conv.ConversionReviewVersions {
		if v == "v1" || (v == "v1beta1" && reviewVersion == "") {
			reviewVersion = v
		}
	}
	if reviewVersion == "" {
		return nil, fmt.Errorf("conversionReviewVersions %v names no version this client speaks (v1, v1beta1)", conv.ConversionReviewVersions)
	}

	raws := make([]runtime.RawExtension, len(objects))
	for i, o := range objects {
		raw, err := json.Marshal(o.Object)
		if err != nil {
			return nil, err
		}
		raws[i] = runtime.RawExtension{Raw: raw}
	}
	uid := uuid.NewUUID()
	review := apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/" + reviewVersion, Kind: "ConversionReview"},
		Request: &apiextensionsv1.ConversionRequest{
			UID:               uid,
			DesiredAPIVersion: desiredAPIVersion,
			Objects:           raws,
		},
	}
	body, err := json.Marshal(review)
	if err != nil {
		return nil, err
	}

	client, err := httpClient(cc.CABundle, serverName, timeout)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("calling the conversion webhook: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the conversion webhook's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the conversion webhook answered HTTP %d: %s", resp.StatusCode, truncate(data))
	}
	return checkResponse(data, uid, desiredAPIVersion, len(objects))
}

func checkResponse(data []byte, uid types.UID, desired string, n int) ([]*unstructured.Unstructured, error) {
	var got apiextensionsv1.ConversionReview
	if err := json.Unmarshal(data, &got); err != nil {
		return nil, fmt.Errorf("the conversion webhook's answer is not a ConversionReview: %v", err)
	}
	r := got.Response
	switch {
	case r == nil:
		return nil, fmt.Errorf("the conversion webhook's ConversionReview has no response")
	case r.UID != uid:
		return nil, fmt.Errorf("the conversion webhook answered uid %q, want %q", r.UID, uid)
	case r.Result.Status != metav1.StatusSuccess:
		return nil, fmt.Errorf("the conversion webhook refused the conversion to %s: %s", desired, r.Result.Message)
	case len(r.ConvertedObjects) != n:
		return nil, fmt.Errorf("the conversion webhook returned %d objects for %d", len(r.ConvertedObjects), n)
	}
	out := make([]*unstructured.Unstructured, n)
	for i, raw := range r.ConvertedObjects {
		var obj map[string]any
		if err := json.Unmarshal(raw.Raw, &obj); err != nil {
			return nil, fmt.Errorf("the converted object is not JSON: %v", err)
		}
		if av, _ := obj["apiVersion"].(string); av != desired {
			return nil, fmt.Errorf("the conversion webhook returned apiVersion %q, want %q", av, desired)
		}
		out[i] = &unstructured.Unstructured{Object: obj}
	}
	return out, nil
}

func httpClient(caBundle []byte, serverName string, timeout time.Duration) (*http.Client, error) {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if len(caBundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caBundle) {
			return nil, fmt.Errorf("the caBundle holds no PEM certificate")
		}
		tlsConfig.RootCAs = pool
	}
	return &http.Client{Timeout: timeout, Transport: &http.Transport{TLSClientConfig: tlsConfig}}, nil
}

func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}
