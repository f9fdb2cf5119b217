// Package apiserver runs a real kube-apiserver (k8s.io/kubernetes v1.37) and an
// embedded etcd inside the current process, for integration tests and for the
// crdversion-sandbox command. Nothing is downloaded: both servers are linked in.
//
// The server listens on a random loopback port with TLS; the returned
// rest.Config authenticates as a system:masters loopback client. A kubeconfig
// file written from that config works with cli-runtime and with the real
// kubectl binary.
package apiserver

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	goflag "flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
)

// Options configures Start. The zero value is valid.
type Options struct {
	// Log receives the servers' own log lines. Nil discards them.
	Log io.Writer
	// Dir is where the kubeconfig file is written. Empty means a new
	// temporary directory that Stop removes.
	Dir string
	// ExtraFlags are passed to kube-apiserver after the defaults
	// (for example "--authorization-mode=RBAC").
	ExtraFlags []string
	// Restartable makes Restart possible: clients reach the API server
	// through a TCP front on a fixed loopback address, with a serving
	// certificate and an admin token that stay the same across restarts,
	// as they would reach a real control plane behind a load balancer.
	Restartable bool
}

// Server is a running kube-apiserver with its embedded etcd.
type Server struct {
	// Config is a loopback client config (TLS with CA data, bearer token,
	// system:masters). QPS and Burst are raised so tests are not throttled.
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file for Config, with one
	// context named "crdversion-sandbox".
	Kubeconfig string
	// Etcd is a client of the embedded etcd, for tests that read what is
	// stored (for example which version an object is encoded at).
	Etcd *clientv3.Client
	// EtcdPrefix is the key prefix under which the API server stores objects.
	EtcdPrefix string

	tb *processTB

	// Set for a server started by StartProcess only.
	proc *process

	// Set for a Restartable server only.
	front    *front
	storage  *storagebackend.Config
	flags    []string
	mu       sync.Mutex
	teardown func() // stops the current kube-apiserver
}

// DefaultFlags are the kube-apiserver flags Start always uses: RBAC
// authorization like a real cluster, and no ServiceAccount admission (there is
// no controller-manager to create token secrets).
var DefaultFlags = []string{
	"--disable-admission-plugins=ServiceAccount",
	"--authorization-mode=RBAC",
}

// Start starts an embedded etcd and a kube-apiserver on it, waits until the
// API server is healthy and the default namespace exists (about 3 s on a
// 2-core machine), and writes a kubeconfig. Call Stop to shut both down.
func Start(opts Options) (s *Server, err error) {
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	tb := newProcessTB("crdversion-apiserver", log)
	routeKlog(log)
	defer func() {
		recoverFatal(recover(), &err)
		if err != nil {
			tb.runCleanups()
			s = nil
		}
	}()

	etcd := testserver.RunEtcd(tb, nil)
	endpoints := etcd.Endpoints()
	prefix := "/" + randomHex(8) + "/registry"
	storage := storagebackend.NewDefaultConfig(prefix, nil)
	storage.Transport.ServerList = endpoints

	dir := opts.Dir
	if dir == "" {
		dir = tb.TempDir()
	}
	flags := append(append([]string{}, DefaultFlags...), opts.ExtraFlags...)
	if !opts.Restartable {
		// The static-token users of identities.go.
		tokens, err := writeTokenFile(dir, "")
		if err != nil {
			return nil, err
		}
		flags = append(flags, tokens)
		ts, err := startKubeAPIServer(tb, flags, storage)
		if err != nil {
			return nil, err
		}
		tb.Cleanup(ts.TearDownFn)
		s = &Server{Config: ts.ClientConfig, Etcd: ts.EtcdClient, EtcdPrefix: ts.EtcdStoragePrefix, tb: tb}
	} else {
		s, err = startRestartable(tb, dir, flags, storage)
		if err != nil {
			return nil, err
		}
	}
	if err := s.monitorStorage(*storage); err != nil {
		return nil, err
	}
	s.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := WriteKubeconfig(s.Kubeconfig, s.Config); err != nil {
		return nil, err
	}
	return s, nil
}

// recoverFatal turns r, the value recovered from a panic, into *err when it
// is the fatal value processTB panics with (etcd's and kube-apiserver's test
// servers report fatal errors through TB.Fatal); any other panic goes on.
func recoverFatal(r any, err *error) {
	if r == nil {
		return
	}
	f, ok := r.(fatal)
	if !ok {
		panic(r)
	}
	*err = errors.New(string(f))
}

// startKubeAPIServer starts one kube-apiserver on storage and waits until
// it is healthy. The caller stops it with TearDownFn.
func startKubeAPIServer(tb *processTB, flags []string, storage *storagebackend.Config) (ts kubeapiservertesting.TestServer, err error) {
	defer func() { recoverFatal(recover(), &err) }()
	instance := kubeapiservertesting.NewDefaultTestServerOptions()
	instance.DisableInvariantChecks = true
	ts, err = kubeapiservertesting.StartTestServer(tb, instance, flags, storage)
	if err != nil {
		return ts, fmt.Errorf("starting kube-apiserver: %w", err)
	}
	return ts, nil
}

// restartToken is the bearer token of a Restartable server's admin user
// (group system:masters), accepted by every kube-apiserver started for it.
const restartToken = "crdversion-restartable-admin"

// startRestartable starts a kube-apiserver behind a TCP front, with a
// serving certificate and a static token file of its own in dir, so a new
// kube-apiserver on the same etcd serves the same clients.
func startRestartable(tb *processTB, dir string, flags []string, storage *storagebackend.Config) (*Server, error) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"})
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		// kube-apiserver's file names in --cert-dir (its peer proxy reads
		// the CA from there too).
		"apiserver.crt": certPEM,
		"apiserver.key": keyPEM,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	tokens, err := writeTokenFile(dir, restartToken+",crdversion-admin,crdversion-admin,\"system:masters\"\n")
	if err != nil {
		return nil, err
	}
	flags = append(flags, "--cert-dir="+dir, tokens)
	f, err := newFront()
	if err != nil {
		return nil, err
	}
	tb.Cleanup(f.close)
	etcdClient, _, err := kubeapiservertesting.GetEtcdClients(storage.Transport)
	if err != nil {
		return nil, err
	}
	tb.Cleanup(func() { _ = etcdClient.Close() })
	s := &Server{
		Config: &rest.Config{
			Host:            "https://" + f.addr(),
			BearerToken:     restartToken,
			TLSClientConfig: rest.TLSClientConfig{CAData: certPEM},
			QPS:             1000,
			Burst:           10000,
		},
		Etcd:       etcdClient,
		EtcdPrefix: storage.Prefix,
		tb:         tb,
		front:      f,
		storage:    storage,
		flags:      flags,
	}
	tb.Cleanup(s.stopKubeAPIServer)
	if err := s.startKubeAPIServer(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Server) startKubeAPIServer() error {
	ts, err := startKubeAPIServer(s.tb, s.flags, s.storage)
	if err != nil {
		return err
	}
	u, err := url.Parse(ts.ClientConfig.Host)
	if err != nil {
		ts.TearDownFn()
		return err
	}
	s.mu.Lock()
	s.teardown = ts.TearDownFn
	s.mu.Unlock()
	s.front.route(u.Host)
	return nil
}

func (s *Server) stopKubeAPIServer() {
	s.front.cut()
	s.mu.Lock()
	teardown := s.teardown
	s.teardown = nil
	s.mu.Unlock()
	if teardown != nil {
		teardown()
		pointStorageMonitor()
	}
}

// Restart stops the kube-apiserver of a Restartable server and starts a new
// one on the same etcd (the same objects, the same resourceVersions). From
// the moment it is called until the new server is healthy, clients are
// refused (their open connections are closed and new ones are dropped), as
// during the rolling restart of a single-instance control plane. Restart
// takes about as long as Start (3–5 s on a 2-core machine).
func (s *Server) Restart() error {
	if s.proc != nil {
		return s.proc.command("restart", 3*time.Minute)
	}
	if s.front == nil {
		return errors.New("the API server was not started with Options.Restartable")
	}
	s.stopKubeAPIServer()
	return s.startKubeAPIServer()
}

// Stop shuts the API server and etcd down and removes their temporary files.
// It blocks until the API server has stopped serving.
func (s *Server) Stop() {
	if s == nil || s.tb == nil {
		return
	}
	s.tb.runCleanups()
}

// ContextName is the context written into the kubeconfig.
const ContextName = "crdversion-sandbox"

// WriteKubeconfig writes a kubeconfig for cfg (host, CA data, TLS server
// name, bearer token or client certificate) to path, with mode 0600.
func WriteKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[ContextName] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
		TLSServerName:            cfg.ServerName,
	}
	kc.AuthInfos[ContextName] = &clientcmdapi.AuthInfo{
		Token:                 cfg.BearerToken,
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
	}
	kc.Contexts[ContextName] = &clientcmdapi.Context{Cluster: ContextName, AuthInfo: ContextName, Namespace: "default"}
	kc.CurrentContext = ContextName
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return clientcmd.WriteToFile(*kc, path)
}

// klogRouted makes routeKlog act once per process.
var klogRouted sync.Once

// routeKlog sends klog's output (kube-apiserver logs through klog's global
// logger) to w only, errors included. klog's state is global to the
// process and tests may run in parallel: the first Start or StartHA routes
// it, later calls change nothing.
func routeKlog(w io.Writer) {
	klogRouted.Do(func() {
		fs := goflag.NewFlagSet("klog", goflag.ContinueOnError)
		klog.InitFlags(fs)
		_ = fs.Set("logtostderr", "false")
		_ = fs.Set("alsologtostderr", "false")
		_ = fs.Set("stderrthreshold", "FATAL")
		klog.SetOutput(w)
	})
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return fmt.Sprintf("%x", time.Now().UnixNano())
	}
	return hex.EncodeToString(b)
}
