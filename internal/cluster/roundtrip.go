package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/pager"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/schema"
	"github.com/crdversion/kubectl-crdversion/internal/webhook"
)

// roundTripBatch is the number of objects sent to the conversion webhook
// in one ConversionReview, as the API server batches a list's objects.
const roundTripBatch = 100

// RoundTrips is what WebhookRoundTrip found: Objects compared, and those
// whose round trip drops paths (Lost) or changes values (Changed).
type RoundTrips struct {
	Objects int
	Lost    []ObjectLoss
	Changed []ObjectLoss
}

// WebhookRoundTrip measures, before to is the storage version of crd, the
// round trip that migrating there makes of each object for a client that
// reads it at from: the object is listed at from (as stored) and at to
// (the API server converts it from -> to through the conversion webhook
// and prunes and defaults it with to's schema: what a migration will
// store), and the object at to is sent back to from by this client, in a
// ConversionReview to the webhook's URL (the conversion the API server
// makes for every read at from once to is the storage version). Each object
// read at from is compared with its round trip as a whole
// (CompareObjects, labels and annotations included): a path it lacks is
// lost, a value it changes changed — unless from's schema defaults that
// path to the value read (a read at from defaults it again). A renaming
// webhook whose round trip gives the object back loses nothing.
//
// A webhook behind a Service is called at one of the Service's ready
// endpoints whose serving certificate verifies (webhook.Reach), as the API
// server calls it with --enable-aggregator-routing.
//
// Errors: the webhook's own when it cannot be called (its Service cannot be
// read, has no ready endpoint, none is reachable from this client, or the
// caBundle does not verify it), refuses, or answers with other objects; a
// list's error as returned; an error when crd is not converted by a
// webhook. timeout bounds each call to the webhook.
func (c *Client) WebhookRoundTrip(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, from, to string, pageSize int64, timeout time.Duration) (*RoundTrips, error) {
	conv := crd.Spec.Conversion
	if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
		return nil, fmt.Errorf("%s is not converted by a webhook", crd.Name)
	}
	convert, err := c.webhookCaller(ctx, conv.Webhook, timeout)
	if err != nil {
		return nil, err
	}
	defaults := map[string]string{}
	if v := lifecycle.FindVersion(crd, from); v != nil {
		defaults = schema.Defaults(schema.Of(v))
	}
	fromRes, toRes := c.Dynamic.Resource(GVR(crd, from)), c.Dynamic.Resource(GVR(crd, to))
	reads := streamList(ctx, toRes, pageSize)
	out := &RoundTrips{}
	var batch, atFrom []*unstructured.Unstructured
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		back, err := convert(batch, crd.Spec.Group+"/"+from)
		if err != nil {
			return err
		}
		for i, u := range atFrom {
			ch := CompareObjects(u.Object, back[i].Object)
			lost := keepUndefaulted(ch.Dropped, u.Object, defaults)
			name := objectName(u)
			if len(lost) > 0 {
				out.Lost = append(out.Lost, ObjectLoss{Object: name, Paths: lost})
			}
			if len(ch.Changed) > 0 {
				out.Changed = append(out.Changed, ObjectLoss{Object: name, Paths: ch.Changed})
			}
		}
		batch, atFrom = batch[:0], atFrom[:0]
		return nil
	}
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return fromRes.List(ctx, opts)
	})
	p.PageSize = pageSize
	err = p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		u := obj.(*unstructured.Unstructured)
		read := reads.find(u)
		if read == nil {
			// Written between the two lists: read it at both versions
			// on its own, at one resourceVersion.
			var err error
			if u, read, err = readPair(ctx, fromRes, toRes, u); err != nil || u == nil {
				return err
			}
		}
		out.Objects++
		batch, atFrom = append(batch, read), append(atFrom, u)
		if len(batch) == roundTripBatch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// webhookCaller returns a function that sends objects to conv's webhook
// in one ConversionReview: at its URL, or at a ready endpoint of its
// Service that this client reaches and whose certificate verifies.
func (c *Client) webhookCaller(ctx context.Context, conv *apiextensionsv1.WebhookConversion, timeout time.Duration) (func([]*unstructured.Unstructured, string) ([]*unstructured.Unstructured, error), error) {
	if conv.ClientConfig.URL != nil {
		return func(objects []*unstructured.Unstructured, desired string) ([]*unstructured.Unstructured, error) {
			return webhook.Convert(ctx, conv, objects, desired, timeout)
		}, nil
	}
	ref := conv.ClientConfig.Service
	if ref == nil {
		return nil, fmt.Errorf("the conversion webhook has neither a URL nor a Service")
	}
	svc, slices, err := c.WebhookService(ctx, ref.Namespace, ref.Name)
	if err != nil {
		return nil, fmt.Errorf("reading the conversion webhook's Service %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	addr, err := webhook.Reach(ctx, conv, svc, slices, min(timeout, webhookDialTimeout))
	if err != nil {
		return nil, err
	}
	return func(objects []*unstructured.Unstructured, desired string) ([]*unstructured.Unstructured, error) {
		back, err := webhook.ConvertEndpoint(ctx, conv, addr, objects, desired, timeout)
		if err != nil {
			return nil, fmt.Errorf("through the Service %s/%s endpoint %s: %w", ref.Namespace, ref.Name, addr, err)
		}
		return back, nil
	}, nil
}

// webhookDialTimeout bounds the TLS handshake with one of a webhook
// Service's endpoints: long enough for a busy endpoint, short enough that
// an endpoint outside this client's network does not hold the run.
const webhookDialTimeout = 3 * time.Second

// readPair reads u again at from and at to until both reads are of one
// resourceVersion (three tries); nil, nil when it is gone, an error when
// it kept changing or could not be read.
func readPair(ctx context.Context, from, to dynamic.NamespaceableResourceInterface, u *unstructured.Unstructured) (atFrom, atTo *unstructured.Unstructured, _ error) {
	for range 3 {
		f, err := from.Namespace(u.GetNamespace()).Get(ctx, u.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
		t, err := to.Namespace(u.GetNamespace()).Get(ctx, u.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
		if f.GetResourceVersion() == t.GetResourceVersion() {
			return f, t, nil
		}
	}
	return nil, nil, fmt.Errorf("%s was written again while it was read at two versions, three times", objectName(u))
}

// indexes matches the list indexes of a concrete path.
var indexes = regexp.MustCompile(`\[[0-9]+\]`)

// keepUndefaulted is dropped without the paths whose value in obj is the
// default the schema (defaults, by schema.Defaults' paths) gives them: a
// read defaults them again, so the round trip keeps them.
func keepUndefaulted(dropped []string, obj map[string]any, defaults map[string]string) []string {
	var out []string
	for _, p := range dropped {
		d, ok := defaults[indexes.ReplaceAllString(p, "[*]")]
		if ok {
			if v, found := valueAt(obj, p); found {
				if b, err := json.Marshal(v); err == nil && jsonEqual(b, []byte(d)) {
					continue
				}
			}
		}
		out = append(out, p)
	}
	return out
}

// valueAt is the value of obj at a path of CompareObjects' notation
// (".spec.size", ".spec.ports[2]"); quoted keys are not followed.
func valueAt(obj map[string]any, path string) (any, bool) {
	var cur any = obj
	for rest := path; rest != ""; {
		switch {
		case strings.HasPrefix(rest, "."):
			end := strings.IndexAny(rest[1:], ".[")
			key := rest[1:]
			if end >= 0 {
				key, rest = rest[1:end+1], rest[end+1:]
			} else {
				rest = ""
			}
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[key]; !ok {
				return nil, false
			}
		case strings.HasPrefix(rest, "["):
			end := strings.Index(rest, "]")
			i, err := strconv.Atoi(rest[1:max(end, 1)])
			if end < 0 || err != nil {
				return nil, false
			}
			l, ok := cur.([]any)
			if !ok || i >= len(l) {
				return nil, false
			}
			cur, rest = l[i], rest[end+1:]
		default:
			return nil, false
		}
	}
	return cur, true
}

// jsonEqual reports whether a and b are the same JSON value.
func jsonEqual(a, b []byte) bool {
	var av, bv any
	if json.Unmarshal(a, &av) != nil || json.Unmarshal(b, &bv) != nil {
		return false
	}
	return sameValue(av, bv)
}
