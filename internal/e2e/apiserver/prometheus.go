package apiserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// PrometheusModule is the Prometheus server the tests build from the Go
// module proxy (needs only Go): its cmd/prometheus, without the service
// discovery plugins (-tags remove_all_sd; the tests scrape static targets)
// and without the web UI's assets, which the HTTP API does not need.
const (
	PrometheusModule  = "github.com/prometheus/prometheus/cmd/prometheus"
	PrometheusVersion = "v0.316.0"
	// PrometheusEnv names a prometheus binary to use instead (any 2.x or
	// 3.x release, for example Debian's /usr/bin/prometheus).
	PrometheusEnv = "CRDVERSION_PROMETHEUS"
)

// PrometheusBinary returns a prometheus binary: $CRDVERSION_PROMETHEUS when
// set, else the one built from PrometheusModule@PrometheusVersion into the
// user cache directory, building it on first use (go install; a few
// minutes with a cold Go build cache, once per machine). log receives the
// build's output.
func PrometheusBinary(log io.Writer) (string, error) {
	if p := os.Getenv(PrometheusEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("$%s: %w", PrometheusEnv, err)
		}
		return p, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "crdversion-e2e", "prometheus-"+PrometheusVersion)
	bin := filepath.Join(dir, "prometheus")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// One build at a time on the machine: test processes wait for it.
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if log == nil {
		log = io.Discard
	}
	start := time.Now()
	cmd := exec.Command("go", "install", "-tags", "remove_all_sd", PrometheusModule+"@"+PrometheusVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=-buildvcs=false", "GOWORK=off")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building Prometheus (go install %s@%s): %w; set $%s to a prometheus binary instead", PrometheusModule, PrometheusVersion, err, PrometheusEnv)
	}
	fmt.Fprintf(log, "built Prometheus %s in %s\n", PrometheusVersion, time.Since(start).Round(time.Second))
	if err := os.Rename(filepath.Join(tmp, "prometheus"), bin); err != nil {
		return "", err
	}
	return bin, nil
}

// PrometheusOptions configures StartPrometheus.
type PrometheusOptions struct {
	// Log receives the server's output (also kept in its directory).
	Log io.Writer
	// ScrapeInterval is the global scrape interval (default 2 s; a
	// kube-apiserver's /metrics is megabytes, and a shorter interval
	// times out on a loaded 2-core machine).
	ScrapeInterval time.Duration
	// Job is the scrape job's name (default "apiserver").
	Job string
	// Targets are host:port of the API server instances to scrape at
	// https://TARGET/metrics.
	Targets []string
	// BearerToken, CAFile and ServerName authenticate the scrapes: a
	// token allowed get on the non-resource URL /metrics, and the CA and
	// TLS server name of the API servers' serving certificates.
	BearerToken, CAFile, ServerName string
	// ListenHost is the address it listens on (default 127.0.0.1): for
	// example HA.HostIP, where the API server instances reach it (through
	// their service proxy).
	ListenHost string
	// ExtraFlags are passed to prometheus after the defaults (for example
	// --query.max-samples=100).
	ExtraFlags []string
}

// Prometheus is a running Prometheus server.
type Prometheus struct {
	// URL is its HTTP address (http://HOST:PORT).
	URL string
	// Host and Port are where it listens.
	Host string
	Port int

	dir     string
	cmd     *exec.Cmd
	done    chan struct{}
	targets int
}

// StartPrometheus starts a Prometheus server on a free loopback port that
// scrapes opts.Targets, and waits until it is ready (/-/ready). Call Stop.
func StartPrometheus(opts PrometheusOptions) (p *Prometheus, err error) {
	bin, err := PrometheusBinary(opts.Log)
	if err != nil {
		return nil, err
	}
	interval := opts.ScrapeInterval
	if interval == 0 {
		interval = 2 * time.Second
	}
	job := opts.Job
	if job == "" {
		job = "apiserver"
	}
	dir, err := os.MkdirTemp("", "crdversion-prometheus-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	quoted := make([]string, len(opts.Targets))
	for i, t := range opts.Targets {
		quoted[i] = strconv.Quote(t)
	}
	config := fmt.Sprintf(`global:
  scrape_interval: %s
  scrape_timeout: %s
scrape_configs:
- job_name: %s
  scheme: https
  metrics_path: /metrics
  authorization:
    credentials: %s
  tls_config:
    ca_file: %s
    server_name: %s
  static_configs:
  - targets: [%s]
  # Only the series the usage checks read are stored: less work for a
  # Prometheus that scrapes every second on a busy test machine.
  metric_relabel_configs:
  - source_labels: [__name__]
    regex: apiserver_request_total|apiserver_longrunning_requests|process_start_time_seconds
    action: keep
`, interval, interval, strconv.Quote(job), strconv.Quote(opts.BearerToken), strconv.Quote(opts.CAFile), strconv.Quote(opts.ServerName), strings.Join(quoted, ", "))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o600); err != nil {
		return nil, err
	}
	host := opts.ListenHost
	if host == "" {
		host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	out, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		return nil, err
	}
	var w io.Writer = out
	if opts.Log != nil {
		w = io.MultiWriter(out, opts.Log)
	}
	cmd := exec.Command(bin, append([]string{
		"--config.file=" + filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr,
	}, opts.ExtraFlags...)...)
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("starting Prometheus: %w", err)
	}
	p = &Prometheus{URL: "http://" + addr, Host: host, Port: ln.Addr().(*net.TCPAddr).Port, dir: dir, cmd: cmd, done: make(chan struct{}), targets: len(opts.Targets)}
	go func() {
		_ = cmd.Wait()
		out.Close()
		close(p.done)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(p.URL + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("prometheus exited before it was ready; its log: %s", filepath.Join(dir, "prometheus.log"))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.Stop()
			return nil, errors.New("prometheus not ready after 60 s")
		}
	}
}

// Stop stops the server (SIGTERM, SIGKILL after 5 s) and removes its data.
func (p *Prometheus) Stop() {
	if p == nil || p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	p.cmd = nil
	os.RemoveAll(p.dir)
}

// WaitScraped waits until each of the server's targets is listed and has
// been scraped successfully at least once (the targets API: health "up"
// and a lastScrape), and returns the newest of their last scrapes: from that
// time on, the server holds a sample of every target. The targets API is
// not a query, so it answers on a server started with
// --query.max-samples=1 too. Errors: ctx's, or a target whose scrape
// failed when ctx ends (its lastError).
func (p *Prometheus) WaitScraped(ctx context.Context) (time.Time, error) {
	client, err := promapi.NewClient(promapi.Config{Address: p.URL})
	if err != nil {
		return time.Time{}, err
	}
	api := promv1.NewAPI(client)
	var newest time.Time
	var last error
	err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		r, err := api.Targets(ctx)
		if err != nil {
			last = err
			return false, nil
		}
		// Targets appear some time after /-/ready: until each is listed,
		// an empty list proves nothing.
		if len(r.Active) < p.targets {
			last = fmt.Errorf("%d of %d targets listed", len(r.Active), p.targets)
			return false, nil
		}
		newest = time.Time{}
		for _, t := range r.Active {
			if t.Health != promv1.HealthGood || t.LastScrape.IsZero() {
				last = fmt.Errorf("target %s: health %q: %s", t.ScrapeURL, t.Health, t.LastError)
				return false, nil
			}
			if t.LastScrape.After(newest) {
				newest = t.LastScrape
			}
		}
		return true, nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("prometheus %s has not scraped every target: %w (last: %v)", p.URL, err, last)
	}
	return newest, nil
}
