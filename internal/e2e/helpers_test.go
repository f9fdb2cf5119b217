package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/crdversion/kubectl-crdversion/internal/action"
	"github.com/crdversion/kubectl-crdversion/internal/cli"
	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/e2e/fixture"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// clients of the test server.
type clients struct {
	ext  apiextensionsclient.Interface
	dyn  dynamic.Interface
	kube kubernetes.Interface
}

func newClients(t testing.TB) clients {
	t.Helper()
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	return clients{
		ext:  apiextensionsclient.NewForConfigOrDie(srv.Config),
		dyn:  dynamic.NewForConfigOrDie(srv.Config),
		kube: kubernetes.NewForConfigOrDie(srv.Config),
	}
}

// result of one plugin invocation.
type result struct {
	stdout, stderr string
	err            error         // in-process: the error Execute returned
	code           int           // binary: the exit code
	maxRSSKiB      int64         // binary: the process's peak resident set (VmHWM)
	cpu            time.Duration // binary: user + system CPU time of the process
}

// slowTier marks t as one of the slow tier: skipped under -short (make
// test-short, the inner loop); make test and CI run it.
func slowTier(t *testing.T, why string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("the slow tier (%s), skipped under -short; make test runs it", why)
	}
}

// plugin runs the command tree in-process against the test server, whose
// kubeconfig is $KUBECONFIG (see setup), so that the commands the plugin
// prints carry no --kubeconfig.
func plugin(t testing.TB, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := cli.NewRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	args = referenceCheck(t, args)
	if !slices.Contains(args, "--cache-dir") {
		args = append(args, "--cache-dir", t.TempDir())
	}
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	r := result{stdout: out.String(), stderr: errOut.String(), err: err}
	checkErrorLines(t, r)
	var d *action.LossDisagreement
	if errors.As(err, &d) {
		t.Errorf("%s: the loss measurement's reads disagree with its dry runs (cli.CrossCheckEnv): %s", strings.Join(args, " "), d.Detail())
	}
	return r
}

// noDisagreementIn fails t when the cross-check file of a run of the
// plugin binary (cli.CrossCheckEnv) records a disagreement of the loss
// measurement's reads with its dry runs: the differential test of the two
// designs, failing the test whose run disagreed even where its own
// assertions passed.
func noDisagreementIn(t testing.TB, file string) {
	t.Helper()
	if b, err := os.ReadFile(file); err == nil && len(b) > 0 {
		t.Errorf("the loss measurement's reads disagree with its dry runs (cli.CrossCheckEnv):\n%s", b)
	}
}

// binary runs the built plugin binary with args (no kubeconfig added) and
// the given extra environment.
func binary(t testing.TB, env []string, args ...string) result {
	t.Helper()
	return execute(t, filepath.Join(pluginDir, "kubectl-crdversion"), env, args...)
}

func execute(t testing.TB, path string, env []string, args ...string) result {
	t.Helper()
	return executeWithin(t, time.Minute, path, env, args...)
}

// checksReferences are the tests (by name) whose unserve and retire runs
// look for owner references; see referenceCheck.
var checksReferences sync.Map

// checkReferences makes the unserve, retire and doctor runs of t (and of
// its subtests) look for owner references, as they do by default.
func checkReferences(t testing.TB) { checksReferences.Store(t.Name(), true) }

// referenceCheck is args with --skip-reference-check added to an unserve, a
// retire or a doctor (the first word, or the one after "crdversion"), unless the
// test called checkReferences or args already choose. The owner-reference
// inventory reads every resource of the API server, and tests on the
// shared server leave custom resources whose lists fail on purpose, which
// the inventory rightly calls unknown; the tests of the check itself run on
// a server of their own (the solo-references shard).
func referenceCheck(t testing.TB, args []string) []string {
	for name := t.Name(); ; {
		if _, ok := checksReferences.Load(name); ok {
			return args
		}
		i := strings.LastIndex(name, "/")
		if i < 0 {
			break
		}
		name = name[:i]
	}
	i := 0
	if len(args) > 0 && args[0] == "crdversion" {
		i = 1
	}
	if len(args) <= i || (args[i] != "unserve" && args[i] != "retire" && args[i] != "doctor") ||
		slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--skip-reference-check") }) {
		return args
	}
	return append(slices.Clone(args), "--skip-reference-check")
}

// executeWithin is execute with a time limit other than a minute.
func executeWithin(t testing.TB, limit time.Duration, path string, env []string, args ...string) result {
	t.Helper()
	if b := filepath.Base(path); b == "kubectl-crdversion" || b == "kubectl" {
		args = referenceCheck(t, args)
	}
	crossCheck := ""
	if b := filepath.Base(path); crossCheckFile != "" && (b == "kubectl-crdversion" || b == "kubectl") {
		// A file of its own for this run's cross-check, before env, so
		// that the caller may still turn it off.
		crossCheck = filepath.Join(t.TempDir(), "crosscheck")
		env = append([]string{cli.CrossCheckEnv + "=" + crossCheck}, env...)
		defer noDisagreementIn(t, crossCheck)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.Env = append(append(os.Environ(), "HOME="+t.TempDir()), env...)
	err := cmd.Start()
	var hwm int64
	if err == nil {
		// The peak resident set of the new program: VmHWM belongs to the
		// memory map exec created (the rusage maxrss of a child also counts
		// the forked copy of this large test process).
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		tick := time.NewTicker(20 * time.Millisecond)
	poll:
		for {
			if v := readHWM(status); v > hwm {
				hwm = v
			}
			select {
			case err = <-done:
				break poll
			case <-tick.C:
			}
		}
		tick.Stop()
	}
	r := result{stdout: out.String(), stderr: errOut.String(), maxRSSKiB: hwm}
	checkErrorLines(t, r)
	if ps := cmd.ProcessState; ps != nil {
		r.cpu = ps.UserTime() + ps.SystemTime()
	}
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		r.code = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("running %s: %v", path, err)
	}
	return r
}

// readHWM returns VmHWM in KiB from a /proc/<pid>/status file, or 0.
func readHWM(path string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kib int64
			fmt.Sscanf(strings.TrimSpace(rest), "%d", &kib)
			return kib
		}
	}
	return 0
}

// crontab returns a CronTab CRD (the example of the Kubernetes docs) named
// crontabs.<group>, with one served version v1 that is the storage version.
func crontab(group string, scope apiextensionsv1.ResourceScope) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "crontabs." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Scope: scope,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: "crontabs", Singular: "crontab", Kind: "CronTab", ListKind: "CronTabList", ShortNames: []string{"ct"},
			},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{crontabVersion("v1", true, true)},
		},
	}
}

func crontabVersion(name string, served, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
	return apiextensionsv1.CustomResourceDefinitionVersion{
		Name: name, Served: served, Storage: storage,
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"cronSpec": {Type: "string"},
					"image":    {Type: "string"},
					"replicas": {Type: "integer"},
				}},
			},
		}},
	}
}

// createCRD creates crd, waits until it is established and deletes it (with
// its objects) when the test ends.
func createCRD(t testing.TB, c clients, crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	ctx := context.Background()
	var created *apiextensionsv1.CustomResourceDefinition
	// A test run again (go test -count) finds its CRD of the run before
	// still being deleted (its objects first): wait for it to be gone.
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		created, err = c.ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			old, getErr := c.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if getErr == nil && old.DeletionTimestamp != nil {
				return false, nil
			}
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("creating CRD %s: %v", crd.Name, err)
	}
	t.Cleanup(func() {
		_ = c.ext.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), crd.Name, metav1.DeleteOptions{})
	})
	if err := fixture.WaitEstablished(ctx, c.ext, crd.Name); err != nil {
		t.Fatal(err)
	}
	return created
}

// deleteCRDAndWait deletes the CRD name (with its objects) and waits up to
// timeout until it is gone. The API server's CRD finalizer deletes the
// objects first; when its list of them fails — right after a change of the
// CRD the new storage answers "storage is (re)initializing" until its watch
// cache is filled, which takes long on a loaded machine — it retries with
// exponential backoff (its workqueue's default, up to 1000 s). While the
// CRD reports InstanceDeletionFailed, each few seconds an annotation is
// set on it: an update other than its Terminating condition queues the CRD
// again at once, as a resync would. It returns the last conditions seen.
func deleteCRDAndWait(ctx context.Context, c clients, name string, timeout time.Duration) ([]apiextensionsv1.CustomResourceDefinitionCondition, error) {
	crds := c.ext.ApiextensionsV1().CustomResourceDefinitions()
	if err := crds.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	var last []apiextensionsv1.CustomResourceDefinitionCondition
	nudged := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		got, err := crds.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, nil
		}
		last = got.Status.Conditions
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Terminating && cond.Reason == "InstanceDeletionFailed" && time.Since(nudged) > 3*time.Second {
				nudged = time.Now()
				patch := fmt.Sprintf(`{"metadata":{"annotations":{"crdversion.kubectl.io/e2e-delete-retry":"%d"}}}`, nudged.UnixNano())
				_, _ = crds.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			}
		}
		return false, nil
	})
	return last, err
}

// updateCRD applies edit to the live CRD (retrying on conflicts) and waits
// until its served versions are in discovery.
func updateCRD(t testing.TB, c clients, name string, edit func(*apiextensionsv1.CustomResourceDefinition)) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	ctx := context.Background()
	crds := c.ext.ApiextensionsV1().CustomResourceDefinitions()
	var out *apiextensionsv1.CustomResourceDefinition
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		edit(crd)
		out, err = crds.Update(ctx, crd, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("updating CRD %s: %v", name, err)
	}
	if err := fixture.WaitEstablished(ctx, c.ext, name); err != nil {
		t.Fatal(err)
	}
	return out
}

// setStorage makes version the storage version of the CRD.
func setStorage(t testing.TB, c clients, name, version string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	return updateCRD(t, c, name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		for i := range crd.Spec.Versions {
			crd.Spec.Versions[i].Storage = crd.Spec.Versions[i].Name == version
		}
	})
}

// setStoredVersions writes status.storedVersions through the status
// subresource, the only way the API server accepts it.
func setStoredVersions(t testing.TB, c clients, name string, stored ...string) {
	t.Helper()
	ctx := context.Background()
	crds := c.ext.ApiextensionsV1().CustomResourceDefinitions()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		crd.Status.StoredVersions = stored
		_, err = crds.UpdateStatus(ctx, crd, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("setting storedVersions of %s: %v", name, err)
	}
}

func gvr(crd *apiextensionsv1.CustomResourceDefinition, version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Spec.Names.Plural}
}

func resource(c clients, crd *apiextensionsv1.CustomResourceDefinition, version, namespace string) dynamic.ResourceInterface {
	r := c.dyn.Resource(gvr(crd, version))
	if crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
		return r.Namespace(namespace)
	}
	return r
}

// createCronTabs creates n CronTabs at version, spread over the given
// namespaces (created when missing; ignored for a cluster-scoped CRD).
func createCronTabs(t testing.TB, c clients, crd *apiextensionsv1.CustomResourceDefinition, version string, n int, namespaces ...string) {
	t.Helper()
	ctx := context.Background()
	if len(namespaces) == 0 {
		namespaces = []string{"default"}
	}
	for _, ns := range namespaces {
		ensureNamespace(t, c, ns)
	}
	for i := 0; i < n; i++ {
		ns := namespaces[i%len(namespaces)]
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": crd.Spec.Group + "/" + version,
			"kind":       crd.Spec.Names.Kind,
			"metadata":   map[string]any{"name": "crontab-" + itoa(i)},
			"spec":       map[string]any{"cronSpec": "* * * * */5", "image": "example/cron:" + itoa(i), "replicas": int64(1)},
		}}
		if _, err := resource(c, crd, version, ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating CronTab %d: %v", i, err)
		}
	}
}

func ensureNamespace(t testing.TB, c clients, name string) {
	t.Helper()
	if err := fixture.EnsureNamespace(context.Background(), c.dyn, name); err != nil {
		t.Fatal(err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// rewriteAll reads every object at version and writes it back unchanged,
// which re-encodes it at the current storage version. Every object must be
// stored at another version: rewriteAll repeats a write until it changed
// the object's resourceVersion.
func rewriteAll(t testing.TB, c clients, crd *apiextensionsv1.CustomResourceDefinition, version string) {
	t.Helper()
	ctx := context.Background()
	// Right after a change of the CRD the API server may briefly answer
	// 404 or 429 while it swaps the resource's storage.
	var list *unstructured.UnstructuredList
	waitFor(t, "a list at "+version, func() (bool, error) {
		var err error
		list, err = c.dyn.Resource(gvr(crd, version)).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	// Each object is stored at another version, so its write must change
	// its bytes and its resourceVersion. An unchanged resourceVersion means
	// the API server skipped the write as a no-op: the CRD's handler had
	// not yet been rebuilt for the new storage version and encoded at the
	// old one. Such a write is repeated.
	for i := range list.Items {
		item := &list.Items[i]
		waitFor(t, "a write of "+item.GetName()+" at the new storage version", func() (bool, error) {
			out, err := resource(c, crd, version, item.GetNamespace()).Update(ctx, item, metav1.UpdateOptions{})
			if err != nil {
				return false, fmt.Errorf("rewriting %s/%s: %w", item.GetNamespace(), item.GetName(), err)
			}
			return out.GetResourceVersion() != item.GetResourceVersion(), nil
		})
	}
}

// advance builds a CronTab CRD of the given group and scope with objects, and
// takes it through the real API server's operations to lifecycle state
// want: S0 v1 only; S1 v2 added; S2 v2 storage; S3 objects rewritten and
// storedVersions trimmed; S4 v1 deprecated; S5 v1 unserved; S6 v1 removed.
func advance(t testing.TB, c clients, group string, scope apiextensionsv1.ResourceScope, objects int, want lifecycle.State) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := createCRD(t, c, crontab(group, scope))
	createCronTabs(t, c, crd, "v1", objects, "team-a", "team-b")
	steps := []func(){
		func() { // S1
			crd = updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
				crd.Spec.Versions = append(crd.Spec.Versions, crontabVersion("v2", true, false))
			})
		},
		func() { crd = setStorage(t, c, crd.Name, "v2") }, // S2
		func() { // S3
			rewriteAll(t, c, crd, "v2")
			setStoredVersions(t, c, crd.Name, "v2")
		},
		func() { // S4
			crd = updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
				crd.Spec.Versions[0].Deprecated = true
				crd.Spec.Versions[0].DeprecationWarning = ptr.To("example.com/v1 CronTab is deprecated; use v2")
			})
		},
		func() { // S5
			crd = updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
				crd.Spec.Versions[0].Served = false
			})
		},
		func() { // S6
			crd = updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
				crd.Spec.Versions = crd.Spec.Versions[1:]
				if crd.Annotations == nil {
					crd.Annotations = map[string]string{}
				}
				crd.Annotations[lifecycle.RetiredVersionsAnnotation] = "v1"
			})
		},
	}
	n := int(want[1] - '0')
	for _, step := range steps[:n] {
		step()
	}
	got, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// golden compares got with testdata/golden/<name>, or rewrites the file when
// the test runs with -update.
func golden(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join(repoRoot, "testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run the test with -update to create it): %v", err)
	}
	if string(want) != got {
		t.Errorf("output differs from %s (run with -update to accept):\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}

// waitFor polls cond every 50 ms for up to 3 minutes.
func waitFor(t testing.TB, what string, cond func() (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		return cond()
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// waitListFails waits until a list of crd's objects at version fails with
// an error containing want: the API server's CRD handler has taken in an
// edit that discovery does not show (a version removed in etcd, a
// conversion webhook changed), a moment after the CRD reads back edited.
func waitListFails(t testing.TB, c clients, crd *apiextensionsv1.CustomResourceDefinition, version, want string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("a list at %s to fail with %q", version, want), func() (bool, error) {
		_, err := c.dyn.Resource(gvr(crd, version)).List(context.Background(), metav1.ListOptions{})
		return err != nil && strings.Contains(err.Error(), want), nil
	})
}

// keepWatching holds a watch open on res until the returned stop is called,
// reconnecting as an informer does: the API server ends the watches of a
// CRD's objects whenever it rebuilds the CRD's handler (after the CRD
// changes). It returns once a watch is open — client-go's Watch returns
// when the server has sent the response headers, so the server is serving
// it — and stop returns once the watcher has ended.
func keepWatching(t testing.TB, res dynamic.ResourceInterface) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var open atomic.Bool
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			w, err := res.Watch(ctx, metav1.ListOptions{})
			if err != nil {
				select { // a pause before the next attempt
				case <-ctx.Done():
				case <-time.After(50 * time.Millisecond):
				}
				continue
			}
			open.Store(true)
			for range w.ResultChan() {
			}
			open.Store(false)
			w.Stop()
		}
	}()
	stop = sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop) // also when the wait below fails the test
	waitFor(t, "the watch to be open", func() (bool, error) { return open.Load(), nil })
	return stop
}

// missingPrerequisite skips t for a prerequisite this machine lacks (the
// real kubectl, the CRD corpus of ../shared, a non-loopback address) — but
// fails it under CI (CI set), whose machine must have every prerequisite:
// a test that quietly skips there would hide a regression.
func missingPrerequisite(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf(format+" (CI is set: .ci/run must provide it)", args...)
	}
	t.Skipf(format, args...)
}

// clusterClient is the plugin's own cluster client on the test API server
// (KUBECONFIG), impersonating as when it is not "".
func clusterClient(t testing.TB, as string) *cluster.Client {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	kubeconfig := os.Getenv("KUBECONFIG")
	flags.KubeConfig = &kubeconfig
	if as != "" {
		flags.Impersonate = &as
	}
	cl, err := cluster.New(flags)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}
