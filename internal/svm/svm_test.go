package svm

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
)

func cond(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg}
}

// TestInterpret follows the conditions the Kubernetes 1.37 controllers
// write, in the order they write them (pkg/controller/storageversionmigrator).
func TestInterpret(t *testing.T) {
	runningTrue := cond("Running", metav1.ConditionTrue, "MigrationRunning", "The migration is running")
	runningDone := cond("Running", metav1.ConditionFalse, "MigrationCompleted", "Migration completed")
	succeeded := cond("Succeeded", metav1.ConditionTrue, "StorageVersionMigrationSucceeded", "Migration completed")
	failed := cond("Failed", metav1.ConditionTrue, "StorageVersionMigrationFailed", "1/3 not yet migrated. migration encountered unhandled error: admission webhook denied")
	for _, tc := range []struct {
		name       string
		conditions []metav1.Condition
		want       Status
	}{
		{"created, no controller yet", nil, Status{Phase: Pending}},
		{"taken up", []metav1.Condition{runningTrue}, Status{Phase: Running, Reason: "MigrationRunning", Message: "The migration is running"}},
		{"succeeded, controller not done with the CRD", []metav1.Condition{runningTrue, succeeded},
			Status{Phase: Succeeded, Reason: "StorageVersionMigrationSucceeded", Message: "Migration completed"}},
		{"succeeded and settled", []metav1.Condition{runningDone, succeeded},
			Status{Phase: Succeeded, Settled: true, Reason: "StorageVersionMigrationSucceeded", Message: "Migration completed"}},
		{"succeeded, no Running condition (older controller)", []metav1.Condition{succeeded},
			Status{Phase: Succeeded, Settled: true, Reason: "StorageVersionMigrationSucceeded", Message: "Migration completed"}},
		{"failed, not settled", []metav1.Condition{runningTrue, failed}, Status{Phase: Failed, Reason: failed.Reason, Message: failed.Message}},
		{"failed and settled", []metav1.Condition{runningDone, failed}, Status{Phase: Failed, Settled: true, Reason: failed.Reason, Message: failed.Message}},
		{"failed wins over succeeded", []metav1.Condition{succeeded, failed}, Status{Phase: Failed, Settled: true, Reason: failed.Reason, Message: failed.Message}},
		{"a False terminal condition is not terminal", []metav1.Condition{runningTrue, cond("Succeeded", metav1.ConditionFalse, "", "")},
			Status{Phase: Running, Reason: "MigrationRunning", Message: "The migration is running"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Interpret(tc.conditions); got != tc.want {
				t.Errorf("Interpret = %+v, want %+v", got, tc.want)
			}
		})
	}
	if Running.Terminal() || Pending.Terminal() || !Succeeded.Terminal() || !Failed.Terminal() {
		t.Error("Terminal")
	}
}

func TestChooseVersion(t *testing.T) {
	for _, tc := range []struct {
		served  []string
		want    string
		wantErr string
	}{
		{served: []string{"v1"}, want: "v1"},
		{served: []string{"v1beta1", "v1"}, want: "v1"},
		{served: []string{"v1beta1"}, want: "v1beta1"},
		{served: nil, wantErr: "--engine=server needs the StorageVersionMigration API (storagemigration.k8s.io/v1 or v1beta1), and this cluster does not serve the API group storagemigration.k8s.io; use --engine=client"},
		{served: []string{"v1alpha1"}, wantErr: "and this cluster serves storagemigration.k8s.io only at v1alpha1; use --engine=client"},
	} {
		got, err := ChooseVersion(tc.served)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "\n") {
				t.Errorf("ChooseVersion(%v) = %q, %v; want the error %q on one line", tc.served, got, err, tc.wantErr)
			}
		case err != nil || got != tc.want:
			t.Errorf("ChooseVersion(%v) = %q, %v; want %q", tc.served, got, err, tc.want)
		}
	}
}

func TestNew(t *testing.T) {
	obj := New(crdtest.New("crontabs.stable.example.com").Kind("CronTab").NoneConversion().Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields()).CRD(), "v1")
	if obj.APIVersion != "storagemigration.k8s.io/v1" || obj.Kind != "StorageVersionMigration" || obj.GenerateName != "crdversion-crontabs-" ||
		obj.Name != "" || obj.Spec.Resource != (metav1.GroupResource{Group: "stable.example.com", Resource: "crontabs"}) {
		t.Errorf("New = %+v", obj)
	}
}

func TestPreferredVersionLoss(t *testing.T) {
	for _, tc := range []struct {
		name      string
		crd       *apiextensionsv1.CustomResourceDefinition
		preferred string
		fields    string
	}{
		{"storage is preferred", crdtest.New("crontabs.stable.example.com").Kind("CronTab").NoneConversion().Version("v1", crdtest.Served, crdtest.Fields("a")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("a", "b")).Stored("v1", "v2").CRD(), "", ""},
		{"preferred lacks a field of the storage version", crdtest.New("crontabs.stable.example.com").Kind("CronTab").NoneConversion().Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("a", "b")).Version("v2", crdtest.Served, crdtest.Fields("a")).Stored("v1").CRD(), "v2", ".spec.b"},
		{"preferred lacks fields of a stored version", crdtest.New("crontabs.stable.example.com").Kind("CronTab").NoneConversion().Version("v1beta1", crdtest.Served, crdtest.Fields("a", "old")).Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("a")).Version("v2", crdtest.Served, crdtest.Fields("a")).Stored("v1beta1", "v1").CRD(), "v2", ".spec.old"},
		{"same schemas", crdtest.New("crontabs.stable.example.com").Kind("CronTab").NoneConversion().Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("a")).Version("v2", crdtest.Served, crdtest.Fields("a")).Stored("v1").CRD(), "", ""},
		{"webhook conversion keeps fields", crdtest.New("crontabs.stable.example.com").Kind("CronTab").Webhook(nil).Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("a", "b")).Version("v2", crdtest.Served, crdtest.Fields("a")).Stored("v1").CRD(), "", ""},
		{"unserved higher version is not preferred", crdtest.New("crontabs.stable.example.com").Kind("CronTab").NoneConversion().Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("a", "b")).Version("v2", crdtest.Fields("a")).Stored("v1").CRD(), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, f := PreferredVersionLoss(tc.crd)
			if p != tc.preferred || strings.Join(f, ",") != tc.fields {
				t.Errorf("PreferredVersionLoss = %q %v, want %q %q", p, f, tc.preferred, tc.fields)
			}
		})
	}
}
