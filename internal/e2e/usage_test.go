package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/e2e/apiserver"
	"github.com/crdversion/kubectl-crdversion/internal/e2e/fixture"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

// The usage tests share one two-instance control plane (with audit logs)
// and the Prometheus servers that scrape it, started on first use and
// stopped by TestMain.
var usageFx struct {
	once sync.Once
	err  error
	ha   *apiserver.HA
	// prom scrapes both instances every 2 s; promPartial only the
	// first; promEmpty nothing; promLimited both, but answers every query
	// that loads more than one sample with a PromQL error
	// (--query.max-samples=1).
	prom, promPartial, promEmpty, promLimited *apiserver.Prometheus
	// promStarted is when every Prometheus had scraped each of its
	// targets at least once.
	promStarted time.Time
	haStarted   time.Time
}

// A client of the version under test, with its own user and user agent.
const (
	aliceToken = "crdversion-usage-alice"
	aliceAgent = "nightly-backup/1.0"
	// bob is authenticated and allowed nothing.
	bobToken = "crdversion-usage-bob"
)

func stopUsageFixtures() {
	usageFx.prom.Stop()
	usageFx.promPartial.Stop()
	usageFx.promEmpty.Stop()
	usageFx.promLimited.Stop()
	usageFx.ha.Stop()
}

// haControlPlane starts (once) the two-instance control plane, and, with
// prom, the Prometheus servers scraping it.
func haControlPlane(t *testing.T) *apiserver.HA {
	t.Helper()
	usageFx.once.Do(func() {
		var log *os.File
		if *serverLogs {
			log = os.Stderr
		}
		opts := apiserver.HAOptions{Audit: true, Users: []apiserver.TokenUser{
			{Token: aliceToken, Name: "alice", Groups: []string{"system:masters"}},
			{Token: bobToken, Name: "bob"},
		}}
		if log != nil {
			opts.Log = log
		}
		h, err := apiserver.StartHA(opts)
		if err != nil {
			usageFx.err = fmt.Errorf("starting the two-instance control plane: %w", err)
			return
		}
		usageFx.ha = h
		usageFx.haStarted = time.Now()
		var targets []string
		for _, in := range h.Instances {
			targets = append(targets, in.Address)
		}
		// Listening at HostIP, where the instances reach it: the service
		// proxy test puts a Service in front of it.
		popts := apiserver.PrometheusOptions{Targets: targets, BearerToken: apiserver.AdminToken, CAFile: h.CAFile, ListenHost: h.HostIP}
		if log != nil {
			popts.Log = log
		}
		partial, empty, limited := popts, popts, popts
		partial.Targets = targets[:1]
		empty.Targets = nil
		limited.ExtraFlags = []string{"--query.max-samples=1"}
		limited.ScrapeInterval = 10 * time.Second
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i, o := range []apiserver.PrometheusOptions{popts, partial, empty, limited} {
			wg.Go(func() {
				p, err := apiserver.StartPrometheus(o)
				errs[i] = err
				*[]**apiserver.Prometheus{&usageFx.prom, &usageFx.promPartial, &usageFx.promEmpty, &usageFx.promLimited}[i] = p
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			usageFx.err = fmt.Errorf("starting Prometheus (the usage tests need it; see docs/usage.md): %w", err)
			return
		}
		// A window is covered from the time every Prometheus holds a
		// sample of each of its targets: the first scrape comes up to a
		// scrape interval after the start, later on a busy machine.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		scraped := make([]time.Time, 4)
		for i, p := range []*apiserver.Prometheus{usageFx.prom, usageFx.promPartial, usageFx.promEmpty, usageFx.promLimited} {
			wg.Go(func() { scraped[i], errs[i] = p.WaitScraped(ctx) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			usageFx.err = err
			return
		}
		for _, at := range scraped {
			if at.After(usageFx.promStarted) {
				usageFx.promStarted = at
			}
		}
	})
	if usageFx.err != nil {
		t.Fatal(usageFx.err)
	}
	haListed(t, usageFx.ha)
	return usageFx.ha
}

// haListed waits (at most a minute) until the kubernetes Service's
// EndpointSlices list every instance. The lease endpoint reconciler drops
// an instance that has not renewed its lease for 15 s, which a loaded
// machine can make happen; the tool then rightly says it cannot see that
// instance. Each test starts from a control plane whose instances are all
// listed, as on a healthy cluster.
func haListed(t *testing.T, h *apiserver.HA) {
	t.Helper()
	kube := haClients(h).kube
	waitUntil(t, time.Minute, "the kubernetes Service lists every API server instance", func() bool {
		eps, err := kube.DiscoveryV1().EndpointSlices("default").List(context.Background(), metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kubernetes"})
		if err != nil {
			return false
		}
		listed := map[string]bool{}
		for _, s := range eps.Items {
			for _, e := range s.Endpoints {
				for _, a := range e.Addresses {
					listed[a] = true
				}
			}
		}
		for _, in := range h.Instances {
			host, _, _ := net.SplitHostPort(in.Address)
			if !listed[host] {
				return false
			}
		}
		return true
	})
}

// usageCRD creates crontabs.<group> on the HA control plane with versions
// v1alpha1 and v1beta1 (served) and v1 (storage), and returns the
// GroupVersionResource of v1beta1.
func usageCRD(t *testing.T, h *apiserver.HA, group string) schema.GroupVersionResource {
	t.Helper()
	ext := apiextensionsclient.NewForConfigOrDie(h.Config)
	crd := crontab(group, apiextensionsv1.NamespaceScoped)
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{
		crontabVersion("v1alpha1", true, false), crontabVersion("v1beta1", true, false), crontabVersion("v1", true, true)}
	ctx := context.Background()
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = ext.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), crd.Name, metav1.DeleteOptions{})
	})
	if err := fixture.WaitEstablished(ctx, ext, crd.Name); err != nil {
		t.Fatal(err)
	}
	// Every running instance serves it (each has its own discovery of CRDs).
	for _, in := range h.Running() {
		dyn := dynamic.NewForConfigOrDie(instanceConfig(h, in, apiserver.AdminToken, "crdversion-setup/1.0"))
		waitUntil(t, 30*time.Second, "instance "+in.Address+" serves "+group, func() bool {
			_, err := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "crontabs"}).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1})
			return err == nil
		})
	}
	return schema.GroupVersionResource{Group: group, Version: "v1beta1", Resource: "crontabs"}
}

// instanceConfig reaches one instance directly with token and user agent.
func instanceConfig(h *apiserver.HA, in *apiserver.Instance, token, agent string) *rest.Config {
	cfg := rest.CopyConfig(h.Config)
	cfg.Host = "https://" + in.Address
	cfg.BearerToken = token
	cfg.UserAgent = agent
	return cfg
}

// usageClient is the layer under test on kubeconfig.
func usageClient(t testing.TB, kubeconfig string) *cluster.Client {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kubeconfig
	c, err := cluster.New(flags)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// listAs lists gvr n times through one instance as alice.
func listAs(t *testing.T, h *apiserver.HA, in *apiserver.Instance, gvr schema.GroupVersionResource, n int) {
	t.Helper()
	dyn := dynamic.NewForConfigOrDie(instanceConfig(h, in, aliceToken, aliceAgent))
	for range n {
		if _, err := dyn.Resource(gvr).Namespace("default").List(context.Background(), metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting until %s", limit, what)
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		}
	}
}

func measure(t *testing.T, src usage.Sources, gvr schema.GroupVersionResource, window time.Duration) usage.Assessment {
	t.Helper()
	as, err := usage.Measure(context.Background(), src, []schema.GroupVersionResource{gvr}, usage.Options{Window: window})
	if err != nil {
		t.Fatal(err)
	}
	a := as[gvr]
	t.Logf("%s: %s\n  %s\n  ways out: %s", a.Verdict, a.Message(), strings.Join(a.Evidence(), "\n  "), strings.Join(a.WaysOut(), " | "))
	return a
}

func source(a usage.Assessment, s usage.Source) *usage.SourceReport {
	for i := range a.Sources {
		if a.Sources[i].Source == s {
			return &a.Sources[i]
		}
	}
	return nil
}

func mustContain(t *testing.T, what string, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, text)
		}
	}
}

// TestUsageHAClientOfSecondInstance is the opening scenario of issue 18: a
// client lists v1beta1 through the second instance while the check runs
// through the first: the layer reads both instances and sees the client
// (the commands' side is TestUsageHACommandsClientOfSecondInstance).
func TestUsageHAClientOfSecondInstance(t *testing.T) {
	t.Parallel()
	h := haControlPlane(t)
	gvr := usageCRD(t, h, "ha-second.usage.example.com")
	c := usageClient(t, h.Kubeconfig)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	wg.Go(func() {
		dyn := dynamic.NewForConfigOrDie(instanceConfig(h, h.Instances[1], aliceToken, aliceAgent))
		for ctx.Err() == nil {
			_, _ = dyn.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{})
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	})

	a := measure(t, usage.Sources{Cluster: c}, gvr, 2*time.Second)
	if a.Verdict != usage.InUse {
		t.Fatalf("verdict %s, want InUse", a.Verdict)
	}
	m := source(a, usage.SourceMetrics)
	if m == nil || m.Requests["LIST"] == 0 || len(m.Unseen) > 0 {
		t.Fatalf("metrics source %+v: want LIST requests and nothing unseen", m)
	}
	ev := strings.Join(a.Evidence(), "\n")
	mustContain(t, "evidence", ev, "/metrics of 2 API server instance(s)", h.Instances[1].Address+": requests in the last", h.Instances[0].Address+": no request in the last")
	mustContain(t, "message", a.Message(), "clients still use ha-second.usage.example.com/v1beta1 crontabs")
}

// TestUsageHABothInstancesNoClient: no client of v1beta1 anywhere, both
// instances read: NotInUse, resting on both.
func TestUsageHABothInstancesNoClient(t *testing.T) {
	t.Parallel()
	h := haControlPlane(t)
	gvr := usageCRD(t, h, "ha-none.usage.example.com")
	listAs(t, h, h.Instances[1], gvr.GroupResource().WithVersion("v1"), 3) // another version's client
	a := measure(t, usage.Sources{Cluster: usageClient(t, h.Kubeconfig)}, gvr, 2*time.Second)
	if a.Verdict != usage.NotInUse {
		t.Fatalf("verdict %s, want NotInUse", a.Verdict)
	}
	m := source(a, usage.SourceMetrics)
	if len(m.Seen) < 2 {
		t.Errorf("want a line per instance: %v", m.Seen)
	}
	mustContain(t, "message", a.Message(), "no client of ha-none.usage.example.com/v1beta1 crontabs seen in the last 2s", "/metrics of 2 API server instance(s)")
}

// TestUsageHASecondInstanceUnreadable: with a TLS server name only the
// first instance's certificate holds, the second cannot be read: Unknown,
// naming it and the ways out, never NotInUse; and a plain-TCP endpoint
// that refuses TLS is an unread instance too.
func TestUsageHASecondInstanceUnreadable(t *testing.T) {
	t.Parallel()
	h := haControlPlane(t)
	gvr := usageCRD(t, h, "ha-unread.usage.example.com")
	kc, err := h.KubeconfigFor("kubeconfig-first-only", h.Instances[0].ServerName)
	if err != nil {
		t.Fatal(err)
	}
	c := usageClient(t, kc)
	a := measure(t, usage.Sources{Cluster: c}, gvr, time.Second)
	if a.Verdict != usage.Unknown {
		t.Fatalf("verdict %s, want Unknown", a.Verdict)
	}
	mustContain(t, "message", a.Message(), h.Instances[1].Address+": its /metrics cannot be read", "x509")
	ways := strings.Join(a.WaysOut(), "\n")
	mustContain(t, "ways out", ways, "--prometheus-url", "--prometheus-service", "--skip-usage-check")
	if strings.Contains(a.Message(), h.Instances[0].Address+": its /metrics") {
		t.Errorf("the first instance, which its certificate names, was not read: %s", a.Message())
	}

	// An endpoint that speaks plain HTTP: the TLS handshake fails.
	ln := plainHTTPServer(t)
	set := usage.InstanceSet{Instances: []usage.Instance{{Lease: "apiserver-plain", Address: ln}}, Leases: 1, Endpoints: 1}
	_, err = c.ReadMetrics(context.Background(), set.Instances[0])
	if err == nil {
		t.Fatal("reading /metrics from a plain-HTTP endpoint succeeded")
	}
	r := usage.AssessInstances(gvr, set, []usage.InstanceSample{{Instance: set.Instances[0], Err: err}}, time.Second, 0)
	if r.Verdict != usage.Unknown || !strings.Contains(strings.Join(r.Unseen, "\n"), "apiserver-plain at "+ln) {
		t.Errorf("plain-HTTP endpoint: %s %v", r.Verdict, r.Unseen)
	}
}

// plainHTTPServer is an endpoint that answers HTTP, not TLS; it returns
// its host:port.
func plainHTTPServer(t *testing.T) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("not TLS")) }))
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://")
}

// usageScale stretches the time scale of TestUsagePrometheusCatchesStoppedClient:
// its window is 10 scales and its client stops 2 scales before the check
// (default 6s: a minute's window; CRDVERSION_USAGE_SCALE=1m runs the
// scenario of issue 18 as written, a 10-minute window and a client that
// stopped two minutes ago).
func usageScale(t *testing.T) time.Duration {
	if s := os.Getenv("CRDVERSION_USAGE_SCALE"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("CRDVERSION_USAGE_SCALE: %v", err)
		}
		return d
	}
	return 6 * time.Second
}

// waitPrometheusCovers waits until the Prometheus servers have scraped for
// window plus a few intervals.
func waitPrometheusCovers(t *testing.T, window time.Duration) {
	t.Helper()
	waitUntil(t, window+time.Minute, fmt.Sprintf("Prometheus has scraped for %s", window+3*time.Second), func() bool {
		return time.Since(usageFx.promStarted) > window+3*time.Second
	})
}

func promSource(t *testing.T, p *apiserver.Prometheus, c *cluster.Client) usage.Sources {
	t.Helper()
	q, err := cluster.NewPrometheus(p.URL)
	if err != nil {
		t.Fatal(err)
	}
	return usage.Sources{Cluster: c, Prometheus: q, PrometheusName: q.Name}
}

// TestUsagePrometheusCatchesStoppedClient: a client that listed v1beta1
// through the second instance and stopped before the check is caught by
// Prometheus over a window that holds its requests, which two reads of
// /metrics taken now cannot see; a single request that created its series
// inside the window (a GET answered 404) counts too.
func TestUsagePrometheusCatchesStoppedClient(t *testing.T) {
	slowTier(t, "a window of ten usage scales, a minute by default")
	t.Parallel()
	h := haControlPlane(t)
	scale := usageScale(t)
	window, stopped := 10*scale, 2*scale
	gvr := usageCRD(t, h, "prom-stopped.usage.example.com")
	// The windows below are the history Prometheus holds, less a
	// second; the client's requests come well inside it, with room for
	// the commands to start on a loaded machine.
	const lead = 15 * time.Second
	waitUntil(t, lead+time.Minute, "Prometheus holds "+lead.String()+" of history", func() bool { return time.Since(usageFx.promStarted) > lead })
	listAs(t, h, h.Instances[1], gvr, 5)
	saw := serverSawAs(t, h, "alice", aliceAgent, "list", gvr, 5)
	alpha := gvr.GroupResource().WithVersion("v1alpha1")
	dyn := dynamic.NewForConfigOrDie(instanceConfig(h, h.Instances[0], aliceToken, aliceAgent))
	if _, err := dyn.Resource(alpha).Namespace("default").Get(context.Background(), "absent", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("GET of an absent object: %v", err)
	}
	stopAt := time.Now()
	waitPrometheusCovers(t, window)
	waitUntil(t, stopped+time.Minute, fmt.Sprintf("the client stopped %s ago", stopped), func() bool { return time.Since(stopAt) > stopped })
	// A fixed window could end up not holding the requests when the
	// waits above run long on a loaded machine (CI met it: the GET fell
	// out); the history Prometheus holds always does, and is at least
	// window long.
	history := func() time.Duration { return (time.Since(usageFx.promStarted) - time.Second).Truncate(time.Second) }

	c := usageClient(t, h.Kubeconfig)
	src := promSource(t, usageFx.prom, c)
	as, err := usage.Measure(context.Background(), src, []schema.GroupVersionResource{gvr, alpha}, usage.Options{Window: history()})
	if err != nil {
		t.Fatal(err)
	}
	a := as[gvr]
	t.Logf("%s\n  %s", a.Message(), strings.Join(a.Evidence(), "\n  "))
	p := source(a, usage.SourcePrometheus)
	if a.Verdict != usage.InUse || p.Requests["LIST"] != saw || len(p.Unseen) > 0 {
		t.Fatalf("v1beta1 through Prometheus: %s, requests %v, unseen %v; want InUse, LIST %d (the audit logs' count), nothing unseen", a.Verdict, p.Requests, p.Unseen, saw)
	}
	mustContain(t, "evidence", strings.Join(a.Evidence(), "\n"), "2 API server target(s) scraped every 2", h.Instances[0].Address, h.Instances[1].Address)
	if b := as[alpha]; b.Verdict != usage.InUse || source(b, usage.SourcePrometheus).Requests["GET"] != 1 {
		t.Errorf("v1alpha1 (one GET, a new series): %s %v, want InUse with GET 1", b.Verdict, source(b, usage.SourcePrometheus).Requests)
	}

	// The same through the commands: unserve and retire refuse, the CRD
	// unchanged, over the history Prometheus holds.
	name := gvr.Resource + "." + gvr.Group
	hc := haClients(h)
	refusesAt(t, hc, h.Kubeconfig, []string{name}, []string{"clients still use prom-stopped.usage.example.com/v1beta1 crontabs (seen by: Prometheus " + usageFx.prom.URL, fmt.Sprintf("LIST %d", saw)},
		"unserve", name, "v1beta1", "--prometheus-url", usageFx.prom.URL, "--usage-window", history().String())
	refusesAt(t, hc, h.Kubeconfig, []string{name}, []string{"stopped at step 1", "clients still use prom-stopped.usage.example.com/v1beta1 crontabs"},
		"retire", name, "v1beta1", "--prometheus-url", usageFx.prom.URL, "--usage-window", history().String(), "--migrate", "--clean-managed-fields")
	if !servedOn(t, hc, name, "v1beta1") {
		t.Fatal("v1beta1 is no longer served")
	}

	// Two reads of /metrics now do not see a client that stopped before.
	now := measure(t, usage.Sources{Cluster: c}, gvr, time.Second)
	if now.Verdict != usage.NotInUse {
		t.Errorf("two reads of /metrics a second apart, after the client stopped: %s, want NotInUse (nothing in that window)", now.Verdict)
	}
}

// TestUsagePrometheusInstanceMissing: a Prometheus that scrapes only the
// first instance cannot see the second one's clients: Unknown, naming it.
func TestUsagePrometheusInstanceMissing(t *testing.T) {
	t.Parallel()
	h := haControlPlane(t)
	gvr := usageCRD(t, h, "prom-missing.usage.example.com")
	window := 10 * time.Second
	waitPrometheusCovers(t, window)
	a := measure(t, promSource(t, usageFx.promPartial, usageClient(t, h.Kubeconfig)), gvr, window)
	if a.Verdict != usage.Unknown {
		t.Fatalf("verdict %s, want Unknown", a.Verdict)
	}
	mustContain(t, "message", a.Message(), "Prometheus does not scrape", h.Instances[1].Address)

	// unserve through that Prometheus: unknown, refused, nothing changed.
	name := gvr.Resource + "." + gvr.Group
	refusesAt(t, haClients(h), h.Kubeconfig, []string{name}, []string{"whether clients still use prom-missing.usage.example.com/v1beta1 crontabs is unknown", "Prometheus does not scrape", h.Instances[1].Address, "--skip-usage-check"},
		"unserve", name, "v1beta1", "--prometheus-url", usageFx.promPartial.URL, "--usage-window", window.String())
	if !servedOn(t, haClients(h), name, "v1beta1") {
		t.Fatal("v1beta1 is no longer served")
	}
}

// TestUsagePrometheusBadInput: each problem of the Prometheus source is an
// explicit Unknown with a one-line reason, or a one-line error for a
// malformed flag value.
func TestUsagePrometheusBadInput(t *testing.T) {
	slowTier(t, "Prometheus servers of every broken kind")
	t.Parallel()
	h := haControlPlane(t)
	gvr := usageCRD(t, h, "prom-bad.usage.example.com")
	waitPrometheusCovers(t, 10*time.Second)
	c := usageClient(t, h.Kubeconfig)
	closed := func() string {
		s := httptest.NewServer(http.NotFoundHandler())
		s.Close()
		return s.URL
	}()
	for _, tc := range []struct {
		name   string
		url    string
		window time.Duration
		want   string
	}{
		{"unreachable", closed, 10 * time.Second, "Prometheus cannot be queried"},
		{"not a Prometheus", "http://" + h.Instances[0].Address, 10 * time.Second, "Prometheus cannot be queried"},
		{"no API server metrics", usageFx.promEmpty.URL, 10 * time.Second, "Prometheus has no API server metrics"},
		{"PromQL error", usageFx.promLimited.URL, 10 * time.Second, "query processing would load too many samples"},
		{"window shorter than the scrape interval", usageFx.prom.URL, 3 * time.Second, "shorter than two scrape intervals"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := cluster.NewPrometheus(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			a := measure(t, usage.Sources{Cluster: c, Prometheus: q, PrometheusName: q.Name}, gvr, tc.window)
			if a.Verdict != usage.Unknown {
				t.Fatalf("verdict %s, want Unknown", a.Verdict)
			}
			mustContain(t, "message", a.Message(), tc.want)
			if strings.Contains(a.Message(), "\n") {
				t.Errorf("the message is more than one line:\n%s", a.Message())
			}
		})
	}
	for _, bad := range []string{"prometheus:9090", "ftp://x", ""} {
		if _, err := cluster.NewPrometheus(bad); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("NewPrometheus(%q): %v, want a one-line error", bad, err)
		}
	}
	for _, bad := range []string{"prometheus:9090", "monitoring/", "/prometheus", "a/b/c", "ns/a:b:c:d"} {
		if _, err := c.PrometheusThroughService(bad); err == nil {
			t.Errorf("PrometheusThroughService(%q) accepted", bad)
		}
	}
}

func auditLogs(h *apiserver.HA) []string {
	var out []string
	for _, in := range h.Instances {
		out = append(out, in.AuditLog)
	}
	return out
}

// waitAuditCovers waits until the instances' audit logs span window.
func waitAuditCovers(t *testing.T, window time.Duration) {
	t.Helper()
	waitUntil(t, window+time.Minute, "the audit logs span "+window.String(), func() bool {
		return time.Since(usageFx.haStarted) > window+2*time.Second
	})
}

// TestUsageAuditLogNamesClient: the audit logs of both instances name the
// client of v1beta1 (user, user agent, verb, count, last request) and are
// attributed to both instances by their identity lease renewals; this
// tool's own requests are left out.
func TestUsageAuditLogNamesClient(t *testing.T) {
	slowTier(t, "a 30 s window")
	t.Parallel()
	h := haControlPlane(t)
	gvr := usageCRD(t, h, "audit-names.usage.example.com")
	// The window ends when measure starts, after the audit logs were read
	// once more: 30s keeps alice's requests inside it on a slow machine.
	window := 30 * time.Second
	waitAuditCovers(t, window)
	listAs(t, h, h.Instances[1], gvr, 3)
	listAs(t, h, h.Instances[0], gvr, 1)
	saw := serverSawAs(t, h, "alice", aliceAgent, "list", gvr, 4)
	self := dynamic.NewForConfigOrDie(instanceConfig(h, h.Instances[0], apiserver.AdminToken, "kubectl-crdversion/v0.0.0 (linux/amd64) kubernetes/test"))
	if _, err := self.Resource(gvr).Namespace("default").List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	c := usageClient(t, h.Kubeconfig)
	a := measure(t, usage.Sources{Cluster: c, AuditLogs: auditLogs(h)}, gvr, window)
	au := source(a, usage.SourceAuditLog)
	if au == nil || au.Verdict != usage.InUse || len(au.Unseen) > 0 {
		t.Fatalf("audit source %+v: want InUse with nothing unseen", au)
	}
	var alice *usage.Client
	for i, cl := range au.Clients {
		if cl.User == "alice" {
			alice = &au.Clients[i]
		}
		if strings.HasPrefix(cl.UserAgent, "kubectl-crdversion/") {
			t.Errorf("this tool's own request is named as a client: %+v", cl)
		}
	}
	if alice == nil || alice.UserAgent != aliceAgent || alice.Verb != "LIST" || alice.Count != saw || !alice.InWindow || time.Since(alice.Last) > time.Minute {
		t.Fatalf("alice: %+v; want agent %s, LIST %d (the audit logs' count), inside the window", alice, aliceAgent, saw)
	}
	ev := strings.Join(a.Evidence(), "\n")
	mustContain(t, "evidence", ev, fmt.Sprintf(`user alice, agent "nightly-backup/1.0": LIST %d, last `, saw), "1 request(s) of kubectl-crdversion (this tool) left out", "written by apiserver-")
}

// TestUsageAuditLogBadInput: a truncated log is read with its malformed
// line counted (Unknown), a gzip copy reads alike, a file that is not an
// audit log is a one-line error, and a log of another cluster is Unknown.
func TestUsageAuditLogBadInput(t *testing.T) {
	slowTier(t, "audit logs of every malformed kind")
	t.Parallel()
	h := haControlPlane(t)
	gvr := usageCRD(t, h, "audit-bad.usage.example.com")
	window := 3 * time.Second
	waitAuditCovers(t, window)
	listAs(t, h, h.Instances[1], gvr, 2)
	// The audit line of a request is written after its answer: read the
	// log once it holds both (and as many as the server saw).
	saw := serverSawAs(t, h, "alice", aliceAgent, "list", gvr, 2)
	c := usageClient(t, h.Kubeconfig)
	dir := t.TempDir()
	logs := auditLogs(h)
	data, err := os.ReadFile(logs[1])
	if err != nil {
		t.Fatal(err)
	}

	t.Run("truncated", func(t *testing.T) {
		cut := filepath.Join(dir, "truncated.log")
		if err := os.WriteFile(cut, data[:len(data)-40], 0o600); err != nil {
			t.Fatal(err)
		}
		a := measure(t, usage.Sources{Cluster: c, AuditLogs: []string{logs[0], cut}}, gvr, window)
		au := source(a, usage.SourceAuditLog)
		if au.Verdict == usage.NotInUse || !strings.Contains(strings.Join(au.Unseen, "\n"), "1 malformed line(s)") {
			t.Errorf("truncated log: %s, unseen %v", au.Verdict, au.Unseen)
		}
	})
	t.Run("gzip", func(t *testing.T) {
		gz := filepath.Join(dir, "audit.log.gz")
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(data)
		_ = zw.Close()
		if err := os.WriteFile(gz, b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		a := measure(t, usage.Sources{Cluster: c, AuditLogs: []string{logs[0], gz}}, gvr, window)
		au := source(a, usage.SourceAuditLog)
		if len(au.Unseen) > 0 || len(au.Clients) != 1 || au.Clients[0].User != "alice" || au.Clients[0].Count != saw {
			t.Errorf("gzip log: %s, clients %+v, unseen %v; want alice's %d requests, nothing unseen", au.Verdict, au.Clients, au.Unseen, saw)
		}
	})
	t.Run("not an audit log", func(t *testing.T) {
		garbage := filepath.Join(dir, "garbage.log")
		if err := os.WriteFile(garbage, []byte("this is not\nan audit log\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := usage.Measure(context.Background(), usage.Sources{Cluster: c, AuditLogs: []string{garbage}}, []schema.GroupVersionResource{gvr}, usage.Options{Window: window})
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "is not an audit log") {
			t.Errorf("garbage file: %v, want a one-line error", err)
		}
	})
	t.Run("another cluster", func(t *testing.T) {
		if setupErr != nil {
			t.Fatal(setupErr)
		}
		other := usageClient(t, srv.Kubeconfig)
		a := measure(t, usage.Sources{Cluster: other, AuditLogs: logs}, gvr, window)
		au := source(a, usage.SourceAuditLog)
		if au.Verdict == usage.NotInUse || !strings.Contains(strings.Join(au.Unseen, "\n"), "none of which belongs to this cluster") {
			t.Errorf("another cluster's logs: %s, unseen %v", au.Verdict, au.Unseen)
		}
	})
}

// TestUsageManagedFieldsWriter: a field manager that applied an object
// through v1beta1 inside the window is a client in use, named with its
// operation and time; this tool's own field manager is left out; the scan
// also lists the objects retire's managedFields step rewrites; and a user
// who may not list the objects gets Unknown, not NotInUse.
func TestUsageManagedFieldsWriter(t *testing.T) {
	t.Parallel()
	h := haControlPlane(t)
	gvr := usageCRD(t, h, "mf-writer.usage.example.com")
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(instanceConfig(h, h.Instances[1], aliceToken, aliceAgent))
	apply := func(name, version, manager string) {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gvr.Group + "/" + version, "kind": "CronTab",
			"metadata": map[string]any{"name": name, "namespace": "default"},
			"spec":     map[string]any{"cronSpec": "* * * * */5", "image": manager},
		}}
		data, err := obj.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dyn.Resource(gvr.GroupResource().WithVersion(version)).Namespace("default").Patch(ctx, name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: manager}); err != nil {
			t.Fatal(err)
		}
	}
	apply("by-operator", "v1beta1", "my-operator")
	apply("by-us", "v1beta1", usage.Self)
	apply("by-other", "v1", "other-operator")

	c := usageClient(t, h.Kubeconfig)
	crdName := gvr.Resource + "." + gvr.Group
	mf := c.ManagedFieldsSource(2, map[string][]string{crdName: {"v1beta1"}})
	// managedFields alone (no /metrics wait): its own verdict decides.
	a := measure(t, usage.Sources{ManagedFields: mf}, gvr, 30*time.Second)
	m := source(a, usage.SourceManagedFields)
	if m.Verdict != usage.InUse || len(m.Clients) != 1 || m.Clients[0].Manager != "my-operator" || m.Clients[0].Operation != "Apply" || m.Clients[0].Count != 1 || !m.Clients[0].InWindow {
		t.Fatalf("managedFields source: %s, clients %+v; want my-operator (Apply) on 1 object inside the window", m.Verdict, m.Clients)
	}
	mustContain(t, "evidence", strings.Join(a.Evidence(), "\n"), "manager my-operator (Apply) wrote 1 object(s) through mf-writer.usage.example.com/v1beta1, last ", "entries of kubectl-crdversion (this tool) on 1 object(s) left out")
	scan := mf.Scanned(crdName)
	if scan == nil || len(scan.Stale["v1beta1"]) != 2 || scan.Writers.Objects != 3 {
		t.Errorf("the shared scan: %+v; want 3 objects, 2 naming v1beta1", scan)
	}

	// A user without list on the objects.
	noRights := rest.CopyConfig(h.Config)
	noRights.BearerToken = bobToken
	kc := filepath.Join(t.TempDir(), "kubeconfig-bob")
	if err := apiserver.WriteKubeconfig(kc, noRights); err != nil {
		t.Fatal(err)
	}
	bob := usageClient(t, kc)
	b := measure(t, usage.Sources{Cluster: bob, ManagedFields: bob.ManagedFieldsSource(500, nil)}, gvr, time.Second)
	if bm := source(b, usage.SourceManagedFields); b.Verdict != usage.Unknown || bm.Verdict != usage.Unknown || !strings.Contains(strings.Join(bm.Unseen, "\n"), "forbidden") {
		t.Errorf("a user who may not list: %s, managedFields %s %v", b.Verdict, bm.Verdict, bm.Unseen)
	}
}

// serverSawAs reads the instances' audit logs the plain way, apart from
// the tool's reader: the requests of user with agent on gvr with verb
// (lower case, as audit events spell it) that completed, one per audit
// ID. It is what the API servers recorded, so a test expects it rather
// than the number of calls it made (client-go retries a request whose
// connection broke or that was answered 429, and the server counts
// both). It waits until the logs hold at least sent such requests (an
// instance writes the ResponseComplete event after the response), and
// logs each one it counts.
func serverSawAs(t *testing.T, h *apiserver.HA, user, agent, verb string, gvr schema.GroupVersionResource, sent int) int64 {
	t.Helper()
	var seen []string
	waitUntil(t, 30*time.Second, fmt.Sprintf("the audit logs hold the %d %s request(s) of %s", sent, verb, user), func() bool {
		seen = nil
		ids := map[types.UID]bool{}
		for _, path := range auditLogs(h) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range bytes.Split(data, []byte("\n")) {
				var e auditv1.Event
				if json.Unmarshal(line, &e) != nil {
					continue // blank, or a line being written
				}
				r := e.ObjectRef
				if e.Stage != auditv1.StageResponseComplete || e.User.Username != user || e.UserAgent != agent || e.Verb != verb ||
					r == nil || r.APIGroup != gvr.Group || r.APIVersion != gvr.Version || r.Resource != gvr.Resource || ids[e.AuditID] {
					continue
				}
				ids[e.AuditID] = true
				code := int32(0)
				if e.ResponseStatus != nil {
					code = e.ResponseStatus.Code
				}
				seen = append(seen, fmt.Sprintf("%s: %s %s, audit ID %s, code %d, at %s", filepath.Base(filepath.Dir(path)), e.Verb, e.RequestURI, e.AuditID, code, e.StageTimestamp.UTC().Format(time.RFC3339Nano)))
			}
		}
		return len(ids) >= sent
	})
	t.Logf("the audit logs hold %d %s request(s) of %s (%s) on %s; it sent %d:\n  %s", len(seen), verb, user, agent, gvr, sent, strings.Join(seen, "\n  "))
	return int64(len(seen))
}
