package apiserver

import (
	"context"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestStartStop starts the control plane, uses it through the written
// kubeconfig, stops it and checks that the port and the files are released.
func TestStartStop(t *testing.T) {
	s, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	client := kubeconfigClient(t, s.Kubeconfig)
	if _, err := client.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("reading through the kubeconfig: %v", err)
	}
	groups, err := client.Discovery().ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"apiextensions.k8s.io": false, "rbac.authorization.k8s.io": false, "storagemigration.k8s.io": false}
	for _, g := range groups.Groups {
		if _, ok := want[g.Name]; ok {
			want[g.Name] = true
		}
	}
	for g, found := range want {
		if !found {
			t.Errorf("API group %s is not served", g)
		}
	}

	u, err := url.Parse(s.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	s.Stop()
	if _, err := os.Stat(s.Kubeconfig); !os.IsNotExist(err) {
		t.Errorf("kubeconfig %s left behind after Stop (err %v)", s.Kubeconfig, err)
	}
	if conn, err := net.DialTimeout("tcp", u.Host, time.Second); err == nil {
		conn.Close()
		t.Errorf("the API server still accepts connections on %s after Stop", u.Host)
	}
	s.Stop() // a second Stop is harmless
}

// TestRestart restarts a Restartable server: what was written before is
// read after through the same client and kubeconfig, and clients are
// refused while no kube-apiserver runs.
func TestRestart(t *testing.T) {
	s, err := Start(Options{Restartable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	client := kubeconfigClient(t, s.Kubeconfig)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "before-restart"}}
	created, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	s.stopKubeAPIServer()
	if _, err := client.CoreV1().Namespaces().Get(ctx, "before-restart", metav1.GetOptions{}); err == nil {
		t.Fatal("a request succeeded while no kube-apiserver was running")
	}
	if err := s.startKubeAPIServer(); err != nil {
		t.Fatal(err)
	}
	got, err := client.CoreV1().Namespaces().Get(ctx, "before-restart", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading after the restart: %v", err)
	}
	if got.UID != created.UID {
		t.Errorf("UID %s after the restart, %s before: not the same etcd", got.UID, created.UID)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Namespaces().Get(ctx, "before-restart", metav1.GetOptions{}); err != nil {
		t.Fatalf("reading after Restart: %v", err)
	}
}

// kubeconfigClient is a client built from the kubeconfig file at path, as a
// user's would be.
func kubeconfigClient(t *testing.T, path string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(cfg)
}

// TestMetricsAfterAServerStops: a kube-apiserver started and stopped in
// the process before anyone read /metrics leaves the /metrics of the
// others as fast as before, with the storage size of their etcd (the
// storage size collector is global to the process: storagemonitor.go).
func TestMetricsAfterAServerStops(t *testing.T) {
	a, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	b, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.Stop()
	client := kubernetes.NewForConfigOrDie(a.Config)
	start := time.Now()
	body, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	// A collector left to the stopped server dials its etcd for the 20 s
	// of the dial timeout at every read; a read takes well under a second.
	if took > 10*time.Second {
		t.Errorf("reading /metrics after another server stopped took %s", took.Round(time.Millisecond))
	}
	if !strings.Contains(string(body), `apiserver_storage_size_bytes{storage_cluster_id="etcd-0"}`) {
		t.Error("/metrics lacks the storage size of the running server's etcd")
	}
}
