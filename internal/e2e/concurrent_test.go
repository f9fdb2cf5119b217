package e2e

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/crdversion/kubectl-crdversion/internal/cli"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// raceLabel marks the CRDs the race webhook is called for.
const raceLabel = "e2e.crdversion.io/race"

// raceRuns counts the runs of TestFaultConcurrentCRDEdit in this process.
var raceRuns atomic.Int64

// concurrentAnnotation is what the concurrent edit writes.
const concurrentAnnotation = "e2e.crdversion.io/concurrent-edit"

// raceWebhook is a validating admission webhook (TLS, a test server) that
// injects a concurrent edit of a CRD deterministically: when it sees the
// n-th UPDATE of the armed CRD sent by the plugin — its field manager is in
// the request's UpdateOptions — it edits the CRD through the API first (a
// second, nested request, which it lets through), then allows the
// plugin's request. The API server has already checked the plugin's
// resourceVersion against the object it read; its write to etcd then finds
// the object changed, re-reads it and fails the precondition: 409 Conflict.
type raceWebhook struct {
	*httptest.Server
	c clients

	mu      sync.Mutex
	crd     string // the armed CRD; "" when disarmed
	at      int    // inject at the plugin's at-th write of it
	edit    string // the JSON merge patch of the concurrent edit
	writes  int    // the plugin's writes of the armed CRD seen
	nested  int    // requests seen while the concurrent edit was in flight
	editing bool
	// edited is the CRD as the concurrent edit left it; editErr its error.
	edited  *apiextensionsv1.CustomResourceDefinition
	editErr error
	seen    map[string]bool // CRDs any request was seen for
}

func newRaceWebhook(t *testing.T, c clients) *raceWebhook {
	h := &raceWebhook{c: c, seen: map[string]bool{}}
	h.Server = httptest.NewTLSServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.Certificate().Raw})
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "crdversion-e2e-race"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "race.e2e.crdversion.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(h.URL + "/validate"), CABundle: ca},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{"apiextensions.k8s.io"}, APIVersions: []string{"v1"},
					Resources: []string{"customresourcedefinitions", "customresourcedefinitions/status"},
				},
			}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{raceLabel: "true"}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](30),
		}},
	}
	hooks := c.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := hooks.Create(context.Background(), cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hooks.Delete(context.Background(), cfg.Name, metav1.DeleteOptions{}) })
	return h
}

// label makes the webhook apply to the CRD, and waits until the API server
// calls it for the CRD (it loads webhook configurations asynchronously).
func (h *raceWebhook) label(t *testing.T, name string) {
	t.Helper()
	updateCRD(t, h.c, name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		if crd.Labels == nil {
			crd.Labels = map[string]string{}
		}
		crd.Labels[raceLabel] = "true"
	})
	probe := 0
	waitFor(t, "the race webhook to be called for "+name, func() (bool, error) {
		h.mu.Lock()
		seen := h.seen[name]
		h.mu.Unlock()
		if seen {
			return true, nil
		}
		probe++
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"e2e.crdversion.io/probe":"%d"}}}`, probe)
		_, err := h.c.ext.ApiextensionsV1().CustomResourceDefinitions().Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return false, err
	})
}

// arm makes the webhook inject edit (a JSON merge patch) at the plugin's
// at-th write of crd.
func (h *raceWebhook) arm(crd string, at int, edit string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.crd, h.at, h.edit, h.writes, h.nested, h.edited, h.editErr = crd, at, edit, 0, 0, nil, nil
}

// disarm stops injecting and returns what happened since arm.
func (h *raceWebhook) disarm() (writes, nested int, edited *apiextensionsv1.CustomResourceDefinition, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.crd = ""
	return h.writes, h.nested, h.edited, h.editErr
}

func (h *raceWebhook) serve(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "bad AdmissionReview", http.StatusBadRequest)
		return
	}
	req := review.Request
	var opts metav1.UpdateOptions
	_ = json.Unmarshal(req.Options.Raw, &opts)

	h.mu.Lock()
	h.seen[req.Name] = true
	inject := false
	switch {
	case h.crd == "" || req.Name != h.crd:
	case h.editing:
		h.nested++ // the concurrent edit itself: let it through
	case opts.FieldManager == cli.FieldManager && !ptr.Deref(req.DryRun, false):
		h.writes++
		inject = h.writes == h.at
		h.editing = inject
	}
	patch := h.edit
	h.mu.Unlock()

	if inject {
		// Bounded: a deadlock fails the test instead of hanging it.
		ctx, cancel := context.WithTimeout(r.Context(), 20*time.Second)
		edited, err := h.c.ext.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx, req.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		cancel()
		h.mu.Lock()
		h.edited, h.editErr, h.editing = edited, err, false
		h.mu.Unlock()
	}
	review.Response = &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	review.Request = nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

// crdState is what a command or the concurrent edit can change on a CRD:
// labels, annotations, spec and status.storedVersions.
func crdState(crd *apiextensionsv1.CustomResourceDefinition) string {
	out, _ := json.Marshal(map[string]any{
		"generation": crd.Generation, "labels": crd.Labels, "annotations": crd.Annotations,
		"spec": crd.Spec, "storedVersions": crd.Status.StoredVersions,
	})
	return string(out)
}

// TestFaultConcurrentCRDEdit edits the CRD concurrently with each write of
// every mutating command — between the API server's admission of the
// plugin's write and its commit — and checks that the write fails on its
// resourceVersion precondition: the command exits 1 saying what to do, the
// concurrent edit is kept, nothing of the command's write landed; a re-run
// then succeeds.
func TestFaultConcurrentCRDEdit(t *testing.T) {
	c := newClients(t)
	raceRuns.Add(1)
	hook := newRaceWebhook(t, c)
	// The concurrent edits: metadata only (an annotation), or the spec too
	// (a category); a lost update would drop either.
	metadataEdit := func(row string) string {
		return fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, concurrentAnnotation, row)
	}
	specEdit := func(row string) string {
		return fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}},"spec":{"names":{"categories":["race"]}}}`, concurrentAnnotation, row)
	}
	conflict := "changed since it was read at resourceVersion"
	// retire from S2 writes the CRD three times: unserve v1, trim
	// storedVersions, remove v1.
	retire := []string{"retire", "v1", "--migrate", "--clean-managed-fields", "--skip-usage-check"}
	cases := []struct {
		name  string
		state lifecycle.State
		args  []string // after the CRD name
		at    int      // the plugin's write of the CRD the edit races with
		edit  func(row string) string
		want  string // in stderr, on the error line or above it
		// retried: the command re-reads and re-checks after the conflict
		// (migrate's trim), so the run succeeds on top of the edit.
		retried bool
		// done checks the CRD after the re-run (or the retried run).
		done crdCheck
	}{
		{name: "add-version", state: lifecycle.StateS0, args: []string{"add-version", "v2"}, at: 1, edit: metadataEdit, want: conflict, done: hasVersion("v2", true)},
		{name: "promote-storage", state: lifecycle.StateS1, args: []string{"promote-storage", "v2"}, at: 1, edit: specEdit, want: conflict, done: storageIs("v2")},
		{name: "deprecate", state: lifecycle.StateS3, args: []string{"deprecate", "v1"}, at: 1, edit: metadataEdit, want: conflict, done: deprecated("v1")},
		{name: "serve", state: lifecycle.StateS5, args: []string{"serve", "v1"}, at: 1, edit: specEdit, want: conflict, done: served("v1", true)},
		{name: "unserve", state: lifecycle.StateS4, args: []string{"unserve", "v1", "--skip-usage-check"}, at: 1, edit: metadataEdit, want: conflict, done: served("v1", false)},
		{name: "migrate's trim, spec edited", state: lifecycle.StateS2, args: []string{"migrate"}, at: 1, edit: specEdit,
			want: "the CRD's spec changed during the run", done: storedOnly("v2")},
		{name: "migrate's trim, metadata edited", state: lifecycle.StateS2, args: []string{"migrate"}, at: 1, edit: metadataEdit, retried: true, done: storedOnly("v2")},
		{name: "retire's unserve", state: lifecycle.StateS2, args: retire, at: 1, edit: metadataEdit, want: conflict, done: hasVersion("v1", false)},
		{name: "retire's trim", state: lifecycle.StateS2, args: retire, at: 2, edit: specEdit, want: "the CRD's spec changed during the run", done: hasVersion("v1", false)},
		{name: "retire's removal", state: lifecycle.StateS2, args: retire, at: 3, edit: specEdit, want: conflict, done: hasVersion("v1", false)},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A group of its own per run: with -count, the CRDs of the run
			// before may still be terminating.
			crd := advance(t, c, fmt.Sprintf("race%d-%d.example.com", i, raceRuns.Load()), apiextensionsv1.NamespaceScoped, 3, tc.state)
			name := crd.Name
			hook.label(t, name)
			args := append([]string{tc.args[0], name}, tc.args[1:]...)

			hook.arm(name, tc.at, tc.edit(tc.name))
			r := crdversion(t, args...)
			writes, nested, edited, editErr := hook.disarm()
			switch {
			case editErr != nil:
				t.Fatalf("the concurrent edit failed: %v", editErr)
			case edited == nil:
				t.Fatalf("no concurrent edit: the plugin wrote the CRD %d time(s), want at least %d\n%s%s", writes, tc.at, r.stdout, r.stderr)
			case nested == 0:
				t.Error("the webhook did not see its own concurrent edit")
			}
			after := getCRD(t, c, name)
			if got := after.Annotations[concurrentAnnotation]; got != tc.name {
				t.Errorf("the concurrent edit was lost: annotation %q = %q", concurrentAnnotation, got)
			}
			if strings.Contains(tc.edit(""), "categories") && !slices.Contains(after.Spec.Names.Categories, "race") {
				t.Errorf("the concurrent spec edit was lost: categories %v", after.Spec.Names.Categories)
			}
			if tc.retried {
				// The trim's write conflicted (the webhook saw it twice) and
				// was made again after re-checking the guard.
				if r.code != 0 || writes != 2 || !tc.done(after) {
					t.Fatalf("exit %d, %d status writes seen, storedVersions %v: want the trim retried once and done\n%s%s", r.code, writes, after.Status.StoredVersions, r.stdout, r.stderr)
				}
				return
			}
			// The error line is last, the reason on it or above it.
			lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
			if r.code != 1 || !strings.HasPrefix(lines[len(lines)-1], "error: ") || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q: want exit 1, an error line last and %q", r.code, r.stderr, tc.want)
			}
			if tc.want == conflict && !strings.Contains(r.stderr, "re-run") {
				t.Errorf("the conflict message does not say to re-run: %q", r.stderr)
			}
			// Nothing of the write that raced landed: the CRD is as the
			// concurrent edit left it.
			if got, want := crdState(after), crdState(edited); got != want {
				t.Errorf("the CRD changed after the concurrent edit:\n got %s\nwant %s", got, want)
			}
			// A re-run without injection finishes the job.
			rerun := crdversion(t, args...)
			final := getCRD(t, c, name)
			if rerun.code != 0 || !tc.done(final) {
				t.Errorf("the re-run: exit %d\n%s%s", rerun.code, rerun.stdout, rerun.stderr)
			}
			if got := final.Annotations[concurrentAnnotation]; got != tc.name {
				t.Errorf("the re-run dropped the concurrent edit: annotation = %q", got)
			}
		})
	}
}

// crdCheck tells whether a CRD is as a command leaves it.
type crdCheck func(*apiextensionsv1.CustomResourceDefinition) bool

func hasVersion(v string, has bool) crdCheck {
	return func(crd *apiextensionsv1.CustomResourceDefinition) bool {
		return (lifecycle.FindVersion(crd, v) != nil) == has
	}
}

func storageIs(v string) crdCheck {
	return func(crd *apiextensionsv1.CustomResourceDefinition) bool { return lifecycle.StorageVersion(crd) == v }
}

func served(v string, served bool) crdCheck {
	return func(crd *apiextensionsv1.CustomResourceDefinition) bool {
		ver := lifecycle.FindVersion(crd, v)
		return ver != nil && ver.Served == served
	}
}

func deprecated(v string) crdCheck {
	return func(crd *apiextensionsv1.CustomResourceDefinition) bool {
		ver := lifecycle.FindVersion(crd, v)
		return ver != nil && ver.Deprecated
	}
}

func storedOnly(v string) crdCheck {
	return func(crd *apiextensionsv1.CustomResourceDefinition) bool {
		return slices.Equal(crd.Status.StoredVersions, []string{v})
	}
}
