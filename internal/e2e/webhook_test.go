package e2e

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// conversionWebhook is a test conversion webhook over TLS: it converts by
// rewriting apiVersion (the CronTab schemas are the same at every version),
// or refuses every conversion while failing is set. While down is set it
// drops every connection without an answer, as a crashed webhook pod
// would, and it goes down by itself on its downAfter'th call when that is
// set; delay (nanoseconds) slows every answer down.
type conversionWebhook struct {
	*httptest.Server
	failing   atomic.Bool
	down      atomic.Bool
	downAfter atomic.Int64
	delay     atomic.Int64
	failFor   atomic.Value // an object name whose conversion fails
	// failWith is an object name whose conversion fails wherever it is in
	// a review: a list's review, which carries every object, fails too
	// (failFor looks at the first object only).
	failWith atomic.Value
	drop     atomic.Value // "VERSION:FIELD": spec.FIELD is dropped from objects converted to VERSION
	// edit, when set, is called with every object the webhook converts
	// (apiVersion already set to the desired one) and the desired
	// version: a renaming or a lossy conversion.
	edit  atomic.Pointer[func(version string, obj map[string]any)]
	calls atomic.Int64
	// held, while set, holds every answer until it is closed (hold,
	// unhold) or the call's request ends.
	held atomic.Pointer[chan struct{}]
}

// hold makes every answer wait until unhold.
func (w *conversionWebhook) hold() {
	ch := make(chan struct{})
	w.held.Store(&ch)
}

// unhold lets every held answer go, and the next ones through.
func (w *conversionWebhook) unhold() {
	if ch := w.held.Swap(nil); ch != nil {
		close(*ch)
	}
}

func newConversionWebhook(t *testing.T) *conversionWebhook {
	w := &conversionWebhook{}
	w.Server = httptest.NewTLSServer(w.handler())
	c := newClients(t)
	t.Cleanup(func() {
		// Deleting a CRD deletes its objects first, which reads them
		// through their conversion webhook: the CRDs that use this one go
		// before it does, or they would stay "being deleted" for good
		// (and a test run again with -count could not create them).
		w.down.Store(false)
		w.failing.Store(false)
		w.failFor.Store("")
		w.failWith.Store("")
		w.drop.Store("")
		w.delay.Store(0)
		w.unhold()
		deleteCRDsUsing(t, c, w.URL)
		w.Close()
	})
	return w
}

// deleteCRDsUsing deletes the CRDs whose conversion webhook URL starts
// with url and waits (up to 2 minutes) until they are gone.
func deleteCRDsUsing(t *testing.T, c clients, url string) {
	ctx := context.Background()
	crds := c.ext.ApiextensionsV1().CustomResourceDefinitions()
	list, err := crds.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Errorf("listing CRDs to delete: %v", err)
		return
	}
	for _, crd := range list.Items {
		conv := crd.Spec.Conversion
		if conv == nil || conv.Webhook == nil || conv.Webhook.ClientConfig == nil || conv.Webhook.ClientConfig.URL == nil ||
			!strings.HasPrefix(*conv.Webhook.ClientConfig.URL, url) {
			continue
		}
		if conditions, err := deleteCRDAndWait(ctx, c, crd.Name, 2*time.Minute); err != nil {
			t.Errorf("%s was not deleted: %v (%+v)", crd.Name, err, conditions)
		}
	}
}

// handler converts ConversionReviews (see conversionWebhook).
func (w *conversionWebhook) handler() http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if n := w.calls.Add(1); w.downAfter.Load() > 0 && n >= w.downAfter.Load() {
			w.down.Store(true)
			w.downAfter.Store(0)
		}
		if w.down.Load() {
			if conn, _, err := rw.(http.Hijacker).Hijack(); err == nil {
				_ = conn.Close()
			}
			return
		}
		if ch := w.held.Load(); ch != nil {
			select {
			case <-*ch:
			case <-r.Context().Done():
				return
			}
		}
		if d := time.Duration(w.delay.Load()); d > 0 {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
		}
		var review apiextensionsv1.ConversionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(rw, "bad ConversionReview", http.StatusBadRequest)
			return
		}
		resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
		failFor, _ := w.failFor.Load().(string)
		if w.failing.Load() {
			resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: "conversion disabled by the test"}
		} else if failFor != "" && strings.Contains(string(review.Request.Objects[0].Raw), `"name":"`+failFor+`"`) {
			resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: "the test cannot convert " + failFor}
		} else if name, _ := w.failWith.Load().(string); name != "" && reviewHas(review.Request, name) {
			resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: "the test cannot convert " + name}
		} else {
			for _, raw := range review.Request.Objects {
				var obj map[string]any
				_ = json.Unmarshal(raw.Raw, &obj)
				obj["apiVersion"] = review.Request.DesiredAPIVersion
				if drop, _ := w.drop.Load().(string); drop != "" {
					version, field, _ := strings.Cut(drop, ":")
					if spec, ok := obj["spec"].(map[string]any); ok && strings.HasSuffix(review.Request.DesiredAPIVersion, "/"+version) {
						delete(spec, field)
					}
				}
				if edit := w.edit.Load(); edit != nil {
					_, version, _ := strings.Cut(review.Request.DesiredAPIVersion, "/")
					(*edit)(version, obj)
				}
				out, _ := json.Marshal(obj)
				resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: out})
			}
		}
		review.Response, review.Request = resp, nil
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(review)
	})
}

// caFile writes the server's certificate as a PEM CA bundle.
func (w *conversionWebhook) caFile(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "ca.pem")
	writeFile(t, path, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: w.Certificate().Raw})))
	return path
}

func TestWebhookConversion(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	hook := newConversionWebhook(t)
	crd := advance(t, c, "webhook.example.com", apiextensionsv1.NamespaceScoped, 2, lifecycle.StateS0)
	name := crd.Name
	ca := hook.caFile(t)

	ok := mustRun(t, "add-version", name, "v2", "--conversion", "Webhook", "--webhook-url", hook.URL+"/convert", "--ca-bundle-file", ca)
	if !strings.Contains(ok.stdout, "the conversion webhook converted a sample CronTab to webhook.example.com/v2") {
		t.Errorf("add-version with a working webhook:\n%s", ok.stdout)
	}
	got := getCRD(t, c, name)
	if got.Spec.Conversion == nil || got.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter {
		t.Fatalf("conversion after add-version: %+v", got.Spec.Conversion)
	}
	// The API server uses the webhook too: objects read at v2 are converted.
	// (Right after the CRD changes, v2's endpoint may still be on its way.)
	waitFor(t, "a list at v2 through the webhook", func() (bool, error) {
		_, err := resource(c, crd, "v2", "team-a").List(t.Context(), metav1.ListOptions{})
		return err == nil, nil
	})
	if s := statusJSON(t, name); s.Conversion.Webhook == nil || !s.Conversion.Webhook.CABundle || s.State != lifecycle.StateS1 {
		t.Errorf("status: conversion %+v, state %s", s.Conversion, s.State)
	}

	hook.failing.Store(true)
	calls := hook.calls.Load()
	refused(t, c, name, []string{"the conversion webhook refused the conversion to webhook.example.com/v3", "conversion disabled by the test"}, "add-version", name, "v3")
	if hook.calls.Load() == calls {
		t.Error("the preflight did not call the webhook")
	}
	// promote-storage reads every object at v2 and dry-runs migrate's
	// update through it, through the API server, which calls the failing
	// webhook.
	r := refused(t, c, name, []string{"2 of 2 object(s) cannot be read at v2", "team-a/crontab-0: ", "Kind=CronTab failed: conversion disabled by the test"}, "promote-storage", name, "v2")
	if strings.Contains(r.stdout, "refused at v2") {
		t.Errorf("an object that cannot be read at v2 is also reported as refused:\n%s", r.stdout)
	}

	hook.failing.Store(false)
	mustRun(t, "promote-storage", name, "v2")
	if got := getCRD(t, c, name); lifecycle.StorageVersion(got) != "v2" {
		t.Errorf("storage version %s after promote-storage, want v2", lifecycle.StorageVersion(got))
	}

	// A Service reference whose Service does not exist is refused before
	// any write (webhookservice_test.go checks Services in depth).
	refused(t, c, name, []string{"the conversion webhook's Service default/conversion does not exist"},
		"add-version", name, "v3", "--conversion", "Webhook", "--webhook-service", "default/conversion:443/convert", "--ca-bundle-file", ca, "--dry-run=server")
}

// reviewHas reports whether an object of req is named name.
func reviewHas(req *apiextensionsv1.ConversionRequest, name string) bool {
	for _, raw := range req.Objects {
		if strings.Contains(string(raw.Raw), `"name":"`+name+`"`) {
			return true
		}
	}
	return false
}
