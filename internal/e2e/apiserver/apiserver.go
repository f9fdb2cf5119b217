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
	"os"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
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
		// testserver and kube-apiserver report fatal errors through TB.Fatal,
		// which processTB turns into a panic carrying the message.
		if r := recover(); r != nil {
			f, ok := r.(fatal)
			if !ok {
				panic(r)
			}
			err = errors.New(string(f))
		}
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

	instance := kubeapiservertesting.NewDefaultTestServerOptions()
	instance.DisableInvariantChecks = true
	flags := append(append([]string{}, DefaultFlags...), opts.ExtraFlags...)
	ts, err := kubeapiservertesting.StartTestServer(tb, instance, flags, storage)
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver: %w", err)
	}
	tb.Cleanup(ts.TearDownFn)

	dir := opts.Dir
	if dir == "" {
		dir = tb.TempDir()
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := WriteKubeconfig(path, ts.ClientConfig); err != nil {
		return nil, err
	}
	return &Server{
		Config:     ts.ClientConfig,
		Kubeconfig: path,
		Etcd:       ts.EtcdClient,
		EtcdPrefix: ts.EtcdStoragePrefix,
		tb:         tb,
	}, nil
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

// routeKlog sends klog's output (kube-apiserver logs through klog's global
// logger) to w only, errors included.
func routeKlog(w io.Writer) {
	fs := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(w)
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return fmt.Sprintf("%x", time.Now().UnixNano())
	}
	return hex.EncodeToString(b)
}
