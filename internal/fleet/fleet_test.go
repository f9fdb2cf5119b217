package fleet

import (
	"strings"
	"testing"

	"github.com/crdversion/kubectl-crdversion/internal/reach"
)

func TestVerdicts(t *testing.T) {
	migrated := Cluster{Context: "prod-eu", Reach: reach.Reached, StorageVersion: "v1", StoredVersions: []string{"v1"}, Versions: []string{"v1beta1", "v1"}, Served: []string{"v1"}}
	pending := Cluster{Context: "prod-us", Reach: reach.Reached, StorageVersion: "v1", StoredVersions: []string{"v1beta1", "v1"}, Versions: []string{"v1beta1", "v1"}, Served: []string{"v1beta1", "v1"}}
	oldStorage := Cluster{Context: "staging", Reach: reach.Reached, StorageVersion: "v1beta1", StoredVersions: []string{"v1beta1"}, Versions: []string{"v1beta1", "v1"}, Served: []string{"v1beta1", "v1"}, NewerThanStorage: []string{"v1"}}
	lost := Cluster{Context: "lab", Reach: reach.Reached, StorageVersion: "v1", StoredVersions: []string{"v1beta1", "v1"}, Versions: []string{"v1"}}
	servedOnly := Cluster{Context: "dev", Reach: reach.Reached, StorageVersion: "v1", StoredVersions: []string{"v1"}, Versions: []string{"v1beta1", "v1"}, Served: []string{"v1beta1", "v1"}}
	down := Cluster{Context: "edge", Reach: reach.Unreachable, Error: "dial tcp 127.0.0.1:1: connect: connection refused"}
	forbidden := Cluster{Context: "partner", Reach: reach.Forbidden, Error: "customresourcedefinitions is forbidden"}
	absent := Cluster{Context: "new", Reach: reach.NotInstalled}

	for _, tc := range []struct {
		name     string
		clusters []Cluster
		answer   Answer
		blockers []string // "context=answer", in order
		in       string   // text in the first blocker's command or a note
	}{
		{"all migrated", []Cluster{migrated, absent}, Yes, nil, ""},
		{"one pending", []Cluster{migrated, pending}, No, []string{"prod-us=no"}, "kubectl crdversion --context prod-us migrate crontabs.example.com"},
		{"old storage", []Cluster{oldStorage}, No, []string{"staging=no"}, "kubectl crdversion --context staging promote-storage crontabs.example.com v1 && kubectl crdversion --context staging migrate crontabs.example.com"},
		{"stored but removed", []Cluster{lost}, No, []string{"lab=no"}, "add-version crontabs.example.com v1beta1 --preserve-unknown-fields --served=false"},
		{"unreachable is never safe", []Cluster{migrated, down}, Unknown, []string{"edge=unknown"}, "status crontabs.example.com"},
		{"forbidden is never safe", []Cluster{forbidden}, Unknown, []string{"partner=unknown"}, ""},
		{"no wins over unknown", []Cluster{down, pending}, No, []string{"edge=unknown", "prod-us=no"}, ""},
		{"served but migrated: a note", []Cluster{servedOnly}, Yes, nil, "dev still serves v1beta1: clients that use it there break when it leaves the manifest (kubectl crdversion --context dev retire crontabs.example.com v1beta1 --dry-run checks them)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs := Verdicts("crontabs.example.com", tc.clusters, []string{"v1beta1"})
			if len(vs) != 1 {
				t.Fatalf("%d verdicts", len(vs))
			}
			v := vs[0]
			if v.Answer != tc.answer {
				t.Errorf("answer %s, want %s (%+v)", v.Answer, tc.answer, v)
			}
			var got []string
			for _, b := range v.Blockers {
				got = append(got, b.Context+"="+string(b.Answer))
			}
			if strings.Join(got, " ") != strings.Join(tc.blockers, " ") {
				t.Errorf("blockers %v, want %v", got, tc.blockers)
			}
			if tc.in != "" {
				text := strings.Join(v.Notes, "\n")
				if len(v.Blockers) > 0 {
					text += v.Blockers[len(v.Blockers)-1].Command + v.Blockers[0].Command
				}
				if !strings.Contains(text, tc.in) {
					t.Errorf("%q not in %q", tc.in, text)
				}
			}
		})
	}

	// Without a version asked: every version not the storage version everywhere, oldest first.
	vs := Verdicts("c", []Cluster{migrated, pending, down}, nil)
	if len(vs) != 1 || vs[0].Version != "v1beta1" || vs[0].Answer != No {
		t.Errorf("implicit versions: %+v", vs)
	}
	vs = Verdicts("c", []Cluster{oldStorage, migrated}, nil)
	var names []string
	for _, v := range vs {
		names = append(names, v.Version)
	}
	// v1 is not the storage version in staging, but newer than it there:
	// the lifecycle moves towards it, so it is not asked about.
	if strings.Join(names, ",") != "v1beta1" {
		t.Errorf("versions asked implicitly: %v, want v1beta1 only (v1 is newer than staging's storage version)", names)
	}
	// Asked by name, a version newer than the storage version somewhere
	// gets a note saying so, and no command that would retire it.
	vs = Verdicts("c", []Cluster{oldStorage}, []string{"v1"})
	if len(vs) != 1 || len(vs[0].Notes) != 1 || !strings.Contains(vs[0].Notes[0], "v1 is newer than the storage version v1beta1 in staging") || strings.Contains(vs[0].Notes[0], "retire") {
		t.Errorf("v1 asked in staging: %+v", vs)
	}
}
