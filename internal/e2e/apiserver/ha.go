package apiserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	"k8s.io/client-go/rest"
	kubeapiserverapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
)

// instanceEnv names the spec file of an API server instance process: a
// test binary started with it set runs one kube-apiserver (RunInstance)
// instead of its tests.
const instanceEnv = "CRDVERSION_APISERVER_INSTANCE"

// HAOptions configures StartHA. The zero value is valid.
type HAOptions struct {
	// Log receives etcd's log lines and the instances' own output. Nil
	// discards them (each instance's output is also kept in Dir).
	Log io.Writer
	// Instances is the number of kube-apiserver instances (default 2).
	Instances int
	// Standby is a number of further instances, configured (address,
	// host name, certificates) but not started: HA.Instances lists them
	// after the running ones, and StartInstance starts one — a scale-out
	// or the new instance of a rolling upgrade.
	Standby int
	// Users are extra static-token users, accepted by every instance.
	Users []TokenUser
	// Audit makes every instance write an audit log (Instance.AuditLog):
	// every request at level Metadata, RequestReceived omitted.
	Audit bool
	// ExtraFlags are passed to every kube-apiserver after the defaults.
	ExtraFlags []string
}

// TokenUser is a static-token user (kube-apiserver --token-auth-file).
type TokenUser struct {
	Token, Name string
	Groups      []string
}

// HA is a control plane of several kube-apiserver instances on one
// embedded etcd, as on every production cluster. Each instance runs in a
// process of its own, in a UTS namespace of its own with the host name
// crdversion-apiserver-<n>, so that each holds an identity lease of its own
// (the lease name derives from the host name), and listens at one secure
// port shared by all on an address of its own, which it advertises: the
// kubernetes Service's endpoints list every instance, as the lease endpoint
// reconciler writes them. That reconciler refuses loopback addresses, so
// the instances live in a network namespace made for them, on a veth pair
// whose other end (in this process's namespace) carries etcd and reaches
// them: 10.203.X.1 here, 10.203.X.<n+1> for instance n, X random. Nothing
// leaves the machine. Starting it needs root (network and UTS namespaces),
// iproute2's ip, and a test binary whose TestMain calls RunInstance.
type HA struct {
	// Config reaches instance 1 (https://10.203.X.2:PORT) as a
	// system:masters user with the static token AdminToken.
	Config *rest.Config
	// Kubeconfig is a kubeconfig file for Config.
	Kubeconfig string
	// Instances are the kube-apiserver instances.
	Instances []*Instance
	// Dir holds the certificates, the token file and the logs.
	Dir string
	// CAFile is the CA of every instance's serving certificate, CAData
	// its PEM.
	CAFile string
	CAData []byte
	// Port is the secure port every instance listens on.
	Port int
	// HostIP is this side of the veth pair (10.203.X.1), where etcd
	// listens and the instances reach this process.
	HostIP string

	tb    *processTB
	log   io.Writer
	netns string
}

// AdminToken is the static token of HA's admin user (system:masters).
const AdminToken = "crdversion-ha-admin"

// Instance is one kube-apiserver process of an HA control plane.
type Instance struct {
	// Address is host:port (10.203.X.<n+1>:PORT).
	Address string
	// Hostname is the host name of its UTS namespace.
	Hostname string
	// ServerName is a DNS name only this instance's serving certificate
	// holds (besides the addresses of every instance).
	ServerName string
	// AuditLog is the path of its audit log (HAOptions.Audit).
	AuditLog string

	args []string
	dir  string
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// instanceSpec is what an instance process is told (in a JSON file named
// by instanceEnv).
type instanceSpec struct {
	Hostname string   `json:"hostname"`
	Args     []string `json:"args"`
}

// StartHA starts an embedded etcd and opts.Instances kube-apiserver
// processes on it, waits until every one is ready and the kubernetes
// Service lists them all, and writes a kubeconfig. About 10 s on a 2-core
// machine. Call Stop to shut everything down (API servers first).
func StartHA(opts HAOptions) (h *HA, err error) {
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	running := opts.Instances
	if running == 0 {
		running = 2
	}
	n := running + opts.Standby
	tb := newProcessTB("crdversion-ha", log)
	routeKlog(log)
	defer func() {
		recoverFatal(recover(), &err)
		if err != nil {
			tb.runCleanups()
			h = nil
		}
	}()
	dir := tb.TempDir()
	h = &HA{Dir: dir, tb: tb, log: log}
	subnet, err := h.makeNetwork(n)
	if err != nil {
		return nil, err
	}
	h.HostIP = subnet + ".1"
	etcdConfig := testserver.NewTestConfig(tb)
	etcdPort, err := freePort(subnet + ".1")
	if err != nil {
		return nil, err
	}
	etcdURL := url.URL{Scheme: "http", Host: net.JoinHostPort(subnet+".1", strconv.Itoa(etcdPort))}
	etcdConfig.ListenClientUrls = []url.URL{etcdURL}
	etcdConfig.AdvertiseClientUrls = []url.URL{etcdURL}
	testserver.RunEtcd(tb, etcdConfig)
	// The secure port: free on this side; the namespace is new, so free
	// there.
	if h.Port, err = freePort(subnet + ".1"); err != nil {
		return nil, err
	}
	port := h.Port
	if err := h.writeFiles(n, subnet, opts); err != nil {
		return nil, err
	}
	prefix := "/" + randomHex(8) + "/registry"
	for i := range n {
		ip := fmt.Sprintf("%s.%d", subnet, i+2)
		in := &Instance{
			Address:    net.JoinHostPort(ip, strconv.Itoa(port)),
			Hostname:   fmt.Sprintf("crdversion-apiserver-%d", i+1),
			ServerName: fmt.Sprintf("apiserver-%d.crdversion.test", i+1),
			dir:        filepath.Join(dir, fmt.Sprintf("instance-%d", i+1)),
		}
		if err := os.MkdirAll(in.dir, 0o700); err != nil {
			return nil, err
		}
		in.args = append(append([]string{}, DefaultFlags...),
			"--etcd-servers="+etcdURL.String(),
			"--etcd-prefix="+prefix,
			"--bind-address="+ip,
			"--advertise-address="+ip,
			"--secure-port="+strconv.Itoa(port),
			"--cert-dir="+in.dir,
			"--tls-cert-file="+filepath.Join(in.dir, "serving.crt"),
			"--tls-private-key-file="+filepath.Join(in.dir, "serving.key"),
			"--token-auth-file="+filepath.Join(dir, "tokens.csv"),
			"--service-account-issuer=https://kubernetes.default.svc",
			"--service-account-key-file="+filepath.Join(dir, "sa.key"),
			"--service-account-signing-key-file="+filepath.Join(dir, "sa.key"),
			"--service-cluster-ip-range=10.0.0.0/24",
			"--endpoint-reconciler-type=lease",
		)
		if opts.Audit {
			in.AuditLog = filepath.Join(in.dir, "audit.log")
			in.args = append(in.args, "--audit-policy-file="+filepath.Join(dir, "audit-policy.yaml"), "--audit-log-path="+in.AuditLog)
		}
		in.args = append(in.args, opts.ExtraFlags...)
		h.Instances = append(h.Instances, in)
	}
	tb.Cleanup(h.stopInstances) // before etcd's cleanup: API servers stop first
	var wg sync.WaitGroup
	errs := make([]error, running)
	for i, in := range h.Instances[:running] {
		wg.Go(func() { errs[i] = h.StartInstance(in) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	h.Config = &rest.Config{
		Host:            "https://" + h.Instances[0].Address,
		BearerToken:     AdminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: h.CAData},
		QPS:             1000,
		Burst:           10000,
	}
	h.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := WriteKubeconfig(h.Kubeconfig, h.Config); err != nil {
		return nil, err
	}
	return h, nil
}

// Stop stops every instance (SIGTERM, then SIGKILL after 5 s), then etcd,
// and removes the files.
func (h *HA) Stop() {
	if h == nil || h.tb == nil {
		return
	}
	h.tb.runCleanups()
}

func (h *HA) stopInstances() {
	var wg sync.WaitGroup
	for _, in := range h.Instances {
		wg.Go(func() { h.StopInstance(in) })
	}
	wg.Wait()
}

// StartInstance starts in's process (again) and waits until it is ready.
func (h *HA) StartInstance(in *Instance) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cmd != nil {
		return fmt.Errorf("instance %s is running", in.Address)
	}
	spec, err := json.Marshal(instanceSpec{Hostname: in.Hostname, Args: in.args})
	if err != nil {
		return err
	}
	specFile := filepath.Join(in.dir, "spec.json")
	if err := os.WriteFile(specFile, spec, 0o600); err != nil {
		return err
	}
	out, err := os.OpenFile(filepath.Join(in.dir, "kube-apiserver.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command("ip", "netns", "exec", h.netns, self)
	cmd.Env = append(os.Environ(), instanceEnv+"="+specFile)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUTS, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		if errors.Is(err, syscall.EPERM) {
			return fmt.Errorf("starting kube-apiserver %s in UTS and network namespaces of its own needs root: %w", in.Hostname, err)
		}
		return fmt.Errorf("starting kube-apiserver %s: %w", in.Hostname, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		out.Close()
		close(done)
	}()
	in.cmd, in.done = cmd, done
	if err := h.waitReady(in, done); err != nil {
		return fmt.Errorf("kube-apiserver %s at %s: %w; the end of its log:\n%s", in.Hostname, in.Address, err, tail(filepath.Join(in.dir, "kube-apiserver.log"), 15))
	}
	return nil
}

// Running are the instances whose process runs (started and not stopped),
// in the order of Instances.
func (h *HA) Running() []*Instance {
	var out []*Instance
	for _, in := range h.Instances {
		in.mu.Lock()
		if in.cmd != nil {
			out = append(out, in)
		}
		in.mu.Unlock()
	}
	return out
}

// StopInstance stops in's process: SIGTERM (kube-apiserver then removes
// its address from the kubernetes Service), SIGKILL after 5 s. Its
// identity lease stays until it expires.
func (h *HA) StopInstance(in *Instance) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cmd == nil {
		return
	}
	_ = in.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-in.done:
	case <-time.After(5 * time.Second):
		_ = in.cmd.Process.Kill()
		<-in.done
	}
	in.cmd, in.done = nil, nil
}

// waitReady polls in's /readyz with the admin token for up to 90 s.
func (h *HA) waitReady(in *Instance, exited <-chan struct{}) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(h.CAData)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(90 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errors.New("the process exited before it was ready")
		default:
		}
		req, _ := http.NewRequest(http.MethodGet, "https://"+in.Address+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+AdminToken)
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("/readyz %d: %.200s", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		select {
		case <-exited:
			return errors.New("the process exited before it was ready")
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("not ready after 90 s: %s", last)
}

// KubeconfigFor writes a kubeconfig like Kubeconfig but with the given
// TLS server name (tls-server-name), returning its path.
func (h *HA) KubeconfigFor(name, serverName string) (string, error) {
	cfg := rest.CopyConfig(h.Config)
	cfg.ServerName = serverName
	path := filepath.Join(h.Dir, name)
	return path, WriteKubeconfig(path, cfg)
}

// IsInstanceProcess reports whether this process was started by StartHA
// to run one kube-apiserver: TestMain must then call RunInstance, before
// anything else, and end the process (non-zero) when it returns an error.
func IsInstanceProcess() bool { return os.Getenv(instanceEnv) != "" }

// RunInstance runs the kube-apiserver of an instance process: it sets the
// host name of its UTS namespace, then runs kube-apiserver's own command
// with the spec's flags until SIGTERM. It returns why the instance could
// not start or stopped with a failure, nil after a clean stop.
func RunInstance() error {
	data, err := os.ReadFile(os.Getenv(instanceEnv))
	if err != nil {
		return err
	}
	var spec instanceSpec
	if err := json.Unmarshal(data, &spec); err != nil {
		return fmt.Errorf("the instance spec %s: %w", os.Getenv(instanceEnv), err)
	}
	if err := syscall.Sethostname([]byte(spec.Hostname)); err != nil {
		return fmt.Errorf("setting the host name %s: %w", spec.Hostname, err)
	}
	cmd := kubeapiserverapp.NewAPIServerCommand()
	cmd.SetArgs(spec.Args)
	return cmd.ExecuteContext(context.Background())
}

// removeStaleNetworks deletes the network namespaces of HA control planes
// whose test process is gone (killed by a test timeout before its
// cleanup ran): they are named crdv-ha-<pid>.
func removeStaleNetworks(run func(...string) error) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		pid, ok := strings.CutPrefix(name, "crdv-ha-")
		if !ok {
			continue
		}
		pid, _, _ = strings.Cut(pid, "-") // crdv-ha-<pid>-<n>
		if _, err := strconv.Atoi(pid); err != nil {
			continue
		}
		if _, err := os.Stat("/proc/" + pid); os.IsNotExist(err) {
			_ = run("netns", "del", name)
		}
	}
}

// freePort finds a TCP port free on ip.
func freePort(ip string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

var (
	networkMu sync.Mutex
	// networks counts the networks made by this process.
	networks int
)

// makeNetwork makes the instances' network namespace and the veth pair
// into it: 10.203.X.1/24 on this side, 10.203.X.2 … 10.203.X.<n+1> on the
// other, X random among subnets no route of this machine covers. It
// returns "10.203.X"; the namespace (and with it the pair) is deleted on
// cleanup.
func (h *HA) makeNetwork(n int) (string, error) {
	// One at a time in this process: each picks a subnet no route covers
	// yet, and names its namespace and links after the process and the
	// number of control planes it started.
	networkMu.Lock()
	defer networkMu.Unlock()
	networks++
	if _, err := exec.LookPath("ip"); err != nil {
		return "", fmt.Errorf("the two-instance control plane needs iproute2's ip (apt-get install iproute2): %w", err)
	}
	run := func(args ...string) error {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	routes, err := exec.Command("ip", "-4", "route", "show", "table", "all").Output()
	if err != nil {
		return "", fmt.Errorf("ip route: %w", err)
	}
	removeStaleNetworks(run)
	id := strconv.Itoa(os.Getpid()) + "x" + strconv.FormatInt(int64(networks), 36)
	var subnet string
	for range 50 {
		b := make([]byte, 1)
		_, _ = rand.Read(b)
		candidate := fmt.Sprintf("10.203.%d", b[0])
		if !strings.Contains(string(routes), candidate+".") {
			subnet = candidate
			break
		}
	}
	if subnet == "" {
		return "", errors.New("no free 10.203.X.0/24 subnet for the instances' network")
	}
	h.netns = "crdv-ha-" + strings.Replace(id, "x", "-", 1)
	if err := run("netns", "add", h.netns); err != nil {
		return "", fmt.Errorf("making a network namespace for the instances (needs root): %w", err)
	}
	h.tb.Cleanup(func() { _ = run("netns", "del", h.netns) })
	outside, inside := "crdvr"+id, "crdvn"+id
	steps := [][]string{
		{"link", "add", outside, "type", "veth", "peer", "name", inside},
		{"link", "set", inside, "netns", h.netns},
		{"addr", "add", subnet + ".1/24", "dev", outside},
		{"link", "set", outside, "up"},
		{"-n", h.netns, "link", "set", "lo", "up"},
		{"-n", h.netns, "link", "set", inside, "up"},
	}
	for i := range n {
		steps = append(steps, []string{"-n", h.netns, "addr", "add", fmt.Sprintf("%s.%d/24", subnet, i+2), "dev", inside})
	}
	for _, s := range steps {
		if err := run(s...); err != nil {
			return "", err
		}
	}
	return subnet, nil
}

// writeFiles writes the CA, each instance's serving certificate (the
// addresses of every instance, localhost, the kubernetes Service's names
// and a name of its own), the service-account key, the token file and
// the audit policy.
func (h *HA) writeFiles(n int, subnet string, opts HAOptions) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "crdversion-ha-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	h.CAData = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	h.CAFile = filepath.Join(h.Dir, "ca.crt")
	files := map[string][]byte{"ca.crt": h.CAData}
	ips := []net.IP{net.ParseIP("127.0.0.1")}
	for i := 1; i <= n; i++ {
		ips = append(ips, net.ParseIP(fmt.Sprintf("%s.%d", subnet, i+1)))
	}
	ips = append(ips, net.ParseIP("10.0.0.1"))
	for i := 1; i <= n; i++ {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(int64(i + 1)),
			Subject:      pkix.Name{CommonName: fmt.Sprintf("crdversion-apiserver-%d", i)},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			IPAddresses:  ips,
			DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", fmt.Sprintf("apiserver-%d.crdversion.test", i)},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return err
		}
		sub := fmt.Sprintf("instance-%d", i)
		files[filepath.Join(sub, "serving.crt")] = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		files[filepath.Join(sub, "serving.key")] = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	saDER, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		return err
	}
	files["sa.key"] = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: saDER})
	var tokens strings.Builder
	fmt.Fprintf(&tokens, "%s,crdversion-admin,crdversion-admin,\"system:masters\"\n", AdminToken)
	for _, u := range opts.Users {
		fmt.Fprintf(&tokens, "%s,%s,%s,\"%s\"\n", u.Token, u.Name, u.Name, strings.Join(u.Groups, ","))
	}
	files["tokens.csv"] = []byte(tokens.String())
	files["audit-policy.yaml"] = []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n")
	for name, data := range files {
		path := filepath.Join(h.Dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// tail is the last n lines of the file at path.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
