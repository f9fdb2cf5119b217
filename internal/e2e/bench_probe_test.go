package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
)

// The foreground probe of BenchmarkMigrate stands for the cluster's other
// clients (controllers reconciling the same custom resources): a process of
// its own, as its own identity (apiserver.Probe, a plain user in
// global-default), that sends at a fixed rate, on a schedule that does not
// wait for answers, a GET of a random object and a LIST of 10 objects of a
// random namespace, alternately, and prints one line per request:
// "<start unix ns> <latency ns> <ok 0|1>". It stops when its standard input
// closes. The benchmark cuts the lines into windows (idle, each phase) and
// reports p50/p99 per window.

// probeProcess is the test binary's probe mode (CRDVERSION_BENCH_PROBE set
// to group/version/resource/rate/objects/namespaces).
func probeProcess(spec string) error {
	cfg, gvr, fields, err := childConfig("CRDVERSION_BENCH_PROBE", spec, "group/version/resource/rate/objects/namespaces")
	if err != nil {
		return err
	}
	rate, err1 := strconv.Atoi(fields[0])
	n, err2 := strconv.Atoi(fields[1])
	nss, err3 := strconv.Atoi(fields[2])
	if err1 != nil || err2 != nil || err3 != nil || rate < 1 || n < 1 || nss < 1 {
		return fmt.Errorf("CRDVERSION_BENCH_PROBE=%q: rate, objects and namespaces must be positive integers", spec)
	}
	res := dynamic.NewForConfigOrDie(cfg).Resource(gvr)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { // stop when the benchmark closes stdin
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	flush := time.NewTicker(200 * time.Millisecond)
	defer flush.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			wg.Wait()
			mu.Lock()
			defer mu.Unlock()
			return out.Flush()
		case <-flush.C:
			mu.Lock()
			err := out.Flush()
			mu.Unlock()
			if err != nil {
				return err
			}
			i--
			continue
		case <-tick.C:
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			start := time.Now()
			var err error
			if i%2 == 0 {
				obj := rand.IntN(n)
				_, err = res.Namespace(fmt.Sprintf("bench-%02d", obj%nss)).Get(context.Background(), fmt.Sprintf("crontab-%05d", obj), metav1.GetOptions{})
			} else {
				_, err = res.Namespace(fmt.Sprintf("bench-%02d", rand.IntN(nss))).List(context.Background(), metav1.ListOptions{Limit: 10})
			}
			took := time.Since(start)
			ok := 1
			if err != nil {
				ok = 0
			}
			mu.Lock()
			fmt.Fprintf(out, "%d %d %d\n", start.UnixNano(), took.Nanoseconds(), ok)
			mu.Unlock()
		}(i)
	}
}

// probeSample is one request of the probe.
type probeSample struct {
	start   time.Time
	latency time.Duration
	ok      bool
}

// probe is a running probe process.
type probe struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}

	mu      sync.Mutex
	samples []probeSample
	err     error
}

// startProbe starts the probe as the identity of kubeconfig, against the
// objects of createManyCronTabs (n objects over nss namespaces bench-NN)
// at version v1, rate requests per second.
func startProbe(t testing.TB, kubeconfig, group string, rate, n, nss int) *probe {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig,
		fmt.Sprintf("CRDVERSION_BENCH_PROBE=%s/v1/crontabs/%d/%d/%d", group, rate, n, nss))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &probe{cmd: cmd, done: make(chan struct{})}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var ns, lat int64
			var ok int
			if _, err := fmt.Sscanf(sc.Text(), "%d %d %d", &ns, &lat, &ok); err != nil {
				p.mu.Lock()
				p.err = fmt.Errorf("probe: %q: %v", sc.Text(), err)
				p.mu.Unlock()
				continue
			}
			p.mu.Lock()
			p.samples = append(p.samples, probeSample{time.Unix(0, ns), time.Duration(lat), ok == 1})
			p.mu.Unlock()
		}
	}()
	t.Cleanup(p.stop)
	return p
}

// stop ends the probe (closing its stdin) and waits for its last lines.
func (p *probe) stop() {
	if p.stdin == nil {
		return
	}
	_ = p.stdin.Close()
	p.stdin = nil
	<-p.done
	_ = p.cmd.Wait()
}

// sync waits until the probe has reported every request it started before
// t (at most its flush period plus the slowest request, bounded to a
// minute).
func (p *probe) sync(t testing.TB, before time.Time) {
	t.Helper()
	waitFor(t, "the probe's samples", func() (bool, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.err != nil {
			return false, p.err
		}
		// Requests start in order; one that started after before means
		// every earlier one has started, and a second's margin covers the
		// answers still out when the window closed.
		for i := len(p.samples) - 1; i >= 0 && i >= len(p.samples)-100; i-- {
			if p.samples[i].start.After(before.Add(time.Second)) {
				return true, nil
			}
		}
		return false, nil
	})
}

// window is the probe's latencies for requests started in [from, to).
type window struct {
	n, failed int
	p50, p99  time.Duration
}

func (p *probe) window(t testing.TB, from, to time.Time) window {
	t.Helper()
	p.sync(t, to)
	p.mu.Lock()
	defer p.mu.Unlock()
	var lat []time.Duration
	var w window
	for _, s := range p.samples {
		if s.start.Before(from) || !s.start.Before(to) {
			continue
		}
		w.n++
		if !s.ok {
			w.failed++
		}
		lat = append(lat, s.latency)
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		w.p50 = lat[(len(lat)-1)*50/100]
		w.p99 = lat[(len(lat)-1)*99/100]
	}
	return w
}

func (w window) String() string {
	s := fmt.Sprintf("p50 %5.1f ms  p99 %6.1f ms (%d requests", ms(w.p50), ms(w.p99), w.n)
	if w.failed > 0 {
		s += fmt.Sprintf(", %d failed", w.failed)
	}
	return s + ")"
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// idleWindow lets the probe run alone for d and returns its window.
func (p *probe) idleWindow(t testing.TB, d time.Duration) window {
	t.Helper()
	from := time.Now()
	timer := time.NewTimer(d)
	<-timer.C
	return p.window(t, from, time.Now())
}

// probeRate is $CRDVERSION_BENCH_PROBE_RATE, default 20 requests/s.
func probeRate(t *testing.B) int {
	return envInt(t, "CRDVERSION_BENCH_PROBE_RATE", 20)
}

// benchIdentities parses $CRDVERSION_BENCH_IDENTITIES (comma-separated keys
// of apiserver.Identities; default admin,user,serviceaccount).
func benchIdentities(b *testing.B) []string {
	s := os.Getenv("CRDVERSION_BENCH_IDENTITIES")
	if s == "" {
		return []string{"admin", "user", "serviceaccount"}
	}
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f != "admin" && f != "user" && f != "serviceaccount" {
			b.Fatalf("CRDVERSION_BENCH_IDENTITIES=%q: want a comma-separated list of admin, user, serviceaccount", s)
		}
		out = append(out, f)
	}
	return out
}
