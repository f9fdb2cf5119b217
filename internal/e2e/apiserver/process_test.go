package apiserver

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestMain(m *testing.M) {
	if IsServerProcess() {
		// This binary is a test's API server (StartProcess): a failure
		// ends it with its error on stderr, which the test that started
		// it reports, as internal/e2e's TestMain does.
		if err := RunServerProcess(); err != nil {
			panic(err)
		}
		return
	}
	m.Run()
}

// TestStartProcess runs a Restartable server in a process of its own: it is
// used through its kubeconfig and its etcd client, restarted, and then
// ended by a klog.Fatal, which ends its process only and is reported with
// the fatal line.
func TestStartProcess(t *testing.T) {
	s, err := StartProcess(Options{Restartable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	client := kubeconfigClient(t, s.Kubeconfig)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "in-a-process"}}
	created, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.Etcd.Get(ctx, s.EtcdPrefix+"/namespaces/in-a-process", clientv3.WithKeysOnly())
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("the namespace in the process's etcd: %v, %d keys", err, len(resp.Kvs))
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	got, err := client.CoreV1().Namespaces().Get(ctx, "in-a-process", metav1.GetOptions{})
	if err != nil || got.UID != created.UID {
		t.Fatalf("after the restart: %v, UID %s (was %s)", err, got.UID, created.UID)
	}
	if s.ExitErr() != nil {
		t.Fatalf("ExitErr %v while the process runs", s.ExitErr())
	}

	err = s.proc.command("fatal", time.Minute)
	<-s.Exited()
	for _, e := range []error{err, s.ExitErr()} {
		if e == nil || !strings.Contains(e.Error(), "fatal requested by the parent process") || strings.Contains(e.Error(), "goroutine") {
			t.Errorf("after a fatal: %v", e)
		}
	}
	if err := s.Restart(); err == nil || !strings.Contains(err.Error(), "fatal requested") {
		t.Errorf("Restart after the process ended: %v", err)
	}
	t.Log(s.ExitErr())
	s.Stop()
	s.Stop() // a second Stop is harmless
}
